"""What the core dispatches to: one ``HandlerSpec`` per API key.

The specs are made outside the core (``kwire.broker.handlers.load_handlers()`` imports one
module per API) and handed to ``BrokerCore(..., handlers=...)``, so the core never imports a
handler module; both ApiVersions and dispatch read the same mapping.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["HandlerSpec", "top_level_error"]


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


def top_level_error(ctx: Any, code: int) -> Any:
    """Generic error answer: the response class with its top-level ErrorCode set, if it has one."""
    from kwire.protocol.registry import response_class

    cls = response_class(ctx.api_key)
    names = {f.attr for f in cls._fields if f.present_in(ctx.api_version)}
    if "error_code" not in names:
        return None
    return cls(error_code=code)
