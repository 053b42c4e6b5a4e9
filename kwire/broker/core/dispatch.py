"""What the core dispatches to: one ``HandlerSpec`` per API key.

The specs are made outside the core (``kwire.broker.handlers.load_handlers()`` imports one
module per API) and handed to ``BrokerCore(..., handlers=...)``, so the core never imports a
handler module; both ApiVersions and dispatch read the same mapping.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["HandlerSpec", "EncodedBody", "top_level_error"]


@dataclass(slots=True, frozen=True)
class HandlerSpec:
    """One API: its key, name, implemented version range, handler and error answer."""

    api_key: int
    name: str
    min_version: int
    max_version: int
    module: str
    handle: Callable[[Any, Any], Any]
    error_response_fn: Callable[[Any, Any, int], Any] | None

    def error_response(self, ctx: Any, request: Any, code: int) -> Any:
        """The whole request answered with ``code`` (fault injection, a ``KafkaError`` escaping
        the handler, UNKNOWN_SERVER_ERROR); None when the response has nowhere to put it."""
        if self.error_response_fn is not None:
            return self.error_response_fn(ctx, request, code)
        return top_level_error(ctx, code)


class EncodedBody:
    """A response body a handler encoded itself, for the request's version (a hot path's answer,
    byte for byte what the generated encoder writes for the same response object).

    The core encodes it like any response (``encode_into``). A handler returns one only when
    nothing would look at the response object: no recording, no client quotas (which set the
    throttle time on it) and no fault rules.
    """

    __slots__ = ("body",)

    def __init__(self, body: bytes | bytearray) -> None:
        self.body = body

    def encode_into(self, out: bytearray, version: int) -> None:
        out += self.body


def top_level_error(ctx: Any, code: int) -> Any:
    """Generic error answer: the response class with its top-level ErrorCode set, if it has one."""
    from kwire.protocol.registry import response_class

    cls = response_class(ctx.api_key)
    names = {f.attr for f in cls._fields if f.present_in(ctx.api_version)}
    if "error_code" not in names:
        return None
    return cls(error_code=code)
