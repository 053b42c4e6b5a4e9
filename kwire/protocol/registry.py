"""Which APIs exist, at which versions, and which classes encode them.

The index is data (``kwire.protocol._index``, generated); message modules are imported on
first use, so looking up an API costs nothing until its codec is needed.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from typing import Any

from kwire.errors import UnknownApiKeyError, UnknownErrorCodeError, UnsupportedVersionError
from kwire.protocol._index import API_INDEX, SCHEMA_INDEX, ApiKey

__all__ = [
    "resolve_api_key",
    "resolve_error_code",
    "ApiKey",
    "ApiInfo",
    "api_info",
    "all_apis",
    "request_class",
    "response_class",
    "schema_class",
    "request_header_version",
    "response_header_version",
]


@dataclass(slots=True, frozen=True)
class ApiInfo:
    """One API key: its name, versions and the module of its generated codec."""

    key: int
    name: str
    module: str
    request_name: str
    response_name: str
    versions: tuple[int, int] | None  # None: removed upstream ("validVersions": "none")
    first_flexible: int | None
    latest_version_unstable: bool
    listeners: tuple[str, ...]

    @property
    def min_version(self) -> int:
        return self.versions[0] if self.versions else -1

    @property
    def max_version(self) -> int:
        return self.versions[1] if self.versions else -1

    @property
    def removed(self) -> bool:
        return self.versions is None

    def supports(self, version: int) -> bool:
        return self.versions is not None and self.versions[0] <= version <= self.versions[1]

    def is_flexible(self, version: int) -> bool:
        return self.first_flexible is not None and version >= self.first_flexible

    @property
    def request_class(self) -> Any:
        return _load("messages", self.module, self.request_name)

    @property
    def response_class(self) -> Any:
        return _load("messages", self.module, self.response_name)

    def check_version(self, version: int) -> None:
        if not self.supports(version):
            raise UnsupportedVersionError(self.key, version, self.name)


@cache
def _load(package: str, module: str, name: str) -> Any:
    mod = importlib.import_module(f"kwire.protocol.{package}.{module}")
    return getattr(mod, name)


@cache
def _norm(name: str) -> str:
    return name.replace("_", "").replace("-", "").replace(" ", "").lower()


def resolve_api_key(value: int | str) -> int:
    """An API key from its number, ``ApiKey`` member or name (``"Produce"``, ``"PRODUCE"``,
    ``"share_fetch"``: case and separators ignored). Raises UnknownApiKeyError otherwise."""
    if isinstance(value, str):
        wanted = _norm(value)
        for info in all_apis():
            if _norm(info.name) == wanted:
                return info.key
        if wanted.isdigit():
            return resolve_api_key(int(wanted))
        raise UnknownApiKeyError(-1, f"no Kafka API is named {value!r} (see `kwire apis`)")
    if isinstance(value, bool) or not isinstance(value, int):
        raise UnknownApiKeyError(-1, f"an API key is an int, an ApiKey or a name, not {value!r}")
    api_info(value)  # raises UnknownApiKeyError for a key the spec set lacks
    return int(value)


def resolve_error_code(value: int | str) -> int:
    """A Kafka error code from its number, ``ErrorCode`` member or name
    (``"NOT_LEADER_OR_FOLLOWER"``, case and separators ignored). Raises UnknownErrorCodeError."""
    from kwire.protocol.error_codes import ErrorCode

    if isinstance(value, str):
        wanted = _norm(value)
        for code in ErrorCode:
            if _norm(code.name) == wanted:
                return int(code)
        raise UnknownErrorCodeError(f"no Kafka error code is named {value!r}")
    if isinstance(value, bool) or not isinstance(value, int):
        raise UnknownErrorCodeError(f"an error code is an int, an ErrorCode or a name, not {value!r}")
    try:
        return int(ErrorCode(value))
    except ValueError:
        raise UnknownErrorCodeError(f"{value} is not a Kafka error code") from None


def api_info(api_key: int) -> ApiInfo:
    row = API_INDEX.get(api_key)
    if row is None:
        raise UnknownApiKeyError(api_key)
    name, module, req, resp, versions, flex, unstable, listeners = row
    return ApiInfo(api_key, name, module, req, resp, versions, flex, unstable, listeners)


def all_apis() -> list[ApiInfo]:
    return [api_info(k) for k in sorted(API_INDEX)]


def request_class(api_key: int) -> Any:
    return api_info(api_key).request_class


def response_class(api_key: int) -> Any:
    return api_info(api_key).response_class


def schema_class(name: str) -> Any:
    """Any generated schema by its spec name (``RequestHeader``, ``EndTxnMarker``, ...)."""
    try:
        package, module = SCHEMA_INDEX[name]
    except KeyError:
        raise KeyError(f"no schema named {name!r}") from None
    return _load(package, module, name)


# ControlledShutdown v0 used request header v0 (no client id); it was removed in Kafka 4.0.
_CONTROLLED_SHUTDOWN = 7


def request_header_version(api_key: int, api_version: int) -> int:
    """RequestHeader version for a request: 2 for flexible versions, else 1."""
    info = api_info(api_key)
    if api_key == _CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 2 if info.is_flexible(api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """ResponseHeader version: 1 for flexible versions, else 0.

    ApiVersions responses always use v0, so that a client that sent a version the broker
    does not know can still read the error (KIP-511).
    """
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if api_info(api_key).is_flexible(api_version) else 0
