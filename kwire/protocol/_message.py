"""Base classes of the generated messages, and the JSON form of any message.

Generated classes (``kwire.protocol.messages``) subclass ``Struct`` (nested structures) or
``Message`` (a top-level request, response, header or data schema). Per-version codec
functions are attached by the generator as ``_decoders``/``_encoders``; ``_fields``
describes every field for the cold paths (JSON form, Hypothesis strategies, docs).

Decoding goes through the optional C decoder (``_cdecode.c``) when it is built and not
disabled by ``KWIRE_NO_EXTENSIONS=1``: it runs the layouts the generator also writes as data
(``_CPROGS`` in each module) and returns what the generated Python decoder returns. Those Python
functions stay the reference: they serve without the extension, and on any input the C decoder
does not decode they run instead, so errors are theirs exactly. ``decode_python`` bypasses C.
"""

from __future__ import annotations

import builtins
import os
import sys
import uuid
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from kwire.errors import DecodeError, EncodeError, UnsupportedVersionError

__all__ = ["FieldSpec", "Struct", "Message", "INF_VERSION", "in_range", "cdecode_enabled", "decode_python"]

INF_VERSION = 0x7FFF

T = TypeVar("T", bound="Struct")
M = TypeVar("M", bound="Message")

VersionRange = tuple[int, int] | None


def in_range(r: VersionRange, v: int) -> bool:
    return r is not None and r[0] <= v <= r[1]


@dataclass(slots=True, frozen=True)
class FieldSpec:
    """One field of a schema, as data (read by the cold paths only)."""

    attr: str
    name: str
    type: str  # spec type, e.g. "int32", "[]FetchTopic", "uuid"
    kind: str  # element kind: a primitive type name, or "struct"
    is_array: bool
    versions: VersionRange
    nullable: VersionRange
    tagged: VersionRange
    tag: int | None
    default: Any  # the default value; for arrays and structs see ``make_default``
    ignorable: bool
    never_compact: bool  # "flexibleVersions": "none" on the field (RequestHeader.ClientId)
    struct: builtins.type[Struct] | None = None

    def present_in(self, version: int) -> bool:
        if self.tagged is not None:
            return in_range(self.tagged, version)
        return in_range(self.versions, version)

    def nullable_in(self, version: int) -> bool:
        return in_range(self.nullable, version)

    def make_default(self) -> Any:
        if self.default is None:
            return None
        if self.is_array:
            return []
        if self.kind == "struct":
            assert self.struct is not None
            return self.struct()
        return self.default


class Struct:
    """A generated structure: slotted dataclass fields plus ``unknown_tagged_fields``."""

    __slots__ = ()
    _fields: ClassVar[tuple[FieldSpec, ...]] = ()
    _schema_name: ClassVar[str] = ""

    def to_json(self, version: int | None = None) -> dict[str, Any]:
        """The JSON form: spec field names, bytes as hex, uuids as strings.

        With ``version``, only the fields present in that version are listed.
        """
        out: dict[str, Any] = {}
        for f in self._fields:
            if version is not None and not f.present_in(version):
                continue
            out[f.name] = _value_to_json(f, getattr(self, f.attr), version)
        unknown = getattr(self, "unknown_tagged_fields", None)
        if unknown:
            out["_unknown_tagged_fields"] = {str(tag): bytes(data).hex() for tag, data in unknown}
        return out

    @classmethod
    def from_json(cls: type[T], data: dict[str, Any], version: int | None = None) -> T:
        """Build from the JSON form; absent keys take the field default."""
        if not isinstance(data, dict):
            raise EncodeError(f"expected an object, got {type(data).__name__}", message=cls._schema_name)
        known = {f.name: f for f in cls._fields}
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            if key == "_unknown_tagged_fields":
                try:
                    kwargs["unknown_tagged_fields"] = [
                        (int(tag), bytes.fromhex(hx)) for tag, hx in sorted(value.items(), key=lambda kv: int(kv[0]))
                    ]
                except (AttributeError, ValueError) as exc:
                    raise EncodeError(f"bad _unknown_tagged_fields: {exc}", message=cls._schema_name) from None
                continue
            f = known.get(key)
            if f is None:
                raise EncodeError(f"unknown field {key!r}", message=cls._schema_name)
            kwargs[f.attr] = _value_from_json(f, value, version, cls._schema_name)
        return cls(**kwargs)


class Message(Struct):
    """A top-level schema: a request, response, header or data record."""

    __slots__ = ()
    API_KEY: ClassVar[int | None] = None
    MESSAGE_TYPE: ClassVar[str] = ""
    VALID_VERSIONS: ClassVar[tuple[int, int] | None] = None
    FLEXIBLE_VERSIONS: ClassVar[tuple[int, int] | None] = None
    LATEST_VERSION_UNSTABLE: ClassVar[bool] = False
    _decoders: ClassVar[dict[int, Any]] = {}
    _encoders: ClassVar[dict[int, Any]] = {}
    # version -> the decoder in use (C or Python), per class; filled on first use by _bind_decoder.
    # This base dict stays empty: each class gets its own.
    _fast_decoders: ClassVar[dict[int, Any]] = {}

    @classmethod
    def is_flexible(cls, version: int) -> bool:
        return in_range(cls.FLEXIBLE_VERSIONS, version)

    @classmethod
    def decode(cls: type[M], buf: bytes | bytearray | memoryview, version: int) -> M:
        """Decode one whole message; trailing bytes are an error."""
        fn = cls._fast_decoders.get(version) or _bind_decoder(cls, version)
        try:
            obj, pos = fn(buf, 0)
        except DecodeError as exc:
            _annotate(exc, cls, version)
            raise
        if pos != len(buf):
            raise _trailing(cls, version, buf, pos)
        return obj  # type: ignore[no-any-return]

    @classmethod
    def decode_from(cls: type[M], buf: bytes | bytearray | memoryview, pos: int, version: int) -> tuple[M, int]:
        """Decode a message starting at ``pos``; returns (message, end position)."""
        fn = cls._fast_decoders.get(version) or _bind_decoder(cls, version)
        try:
            return fn(buf, pos)  # type: ignore[no-any-return]
        except DecodeError as exc:
            _annotate(exc, cls, version)
            raise

    def encode(self, version: int) -> bytes:
        out = bytearray()
        self.encode_into(out, version)
        return bytes(out)

    def encode_into(self, out: bytearray, version: int) -> None:
        fn = self._encoders.get(version)
        if fn is None:
            raise UnsupportedVersionError(self.API_KEY if self.API_KEY is not None else -1, version, self._schema_name)
        try:
            fn(out, self)
        except EncodeError as exc:
            exc.message = self._schema_name
            exc.api_version = version
            raise


def _annotate(exc: DecodeError, cls: type[Message], version: int) -> None:
    exc.message = cls._schema_name
    exc.api_key = cls.API_KEY
    exc.api_version = version


def _trailing(cls: type[Message], version: int, buf: bytes | bytearray | memoryview, pos: int) -> DecodeError:
    return DecodeError(
        f"{len(buf) - pos} trailing bytes after the message",
        offset=pos,
        message=cls._schema_name,
        api_key=cls.API_KEY,
        api_version=version,
    )


def decode_python(cls: type[M], buf: bytes | bytearray | memoryview, version: int) -> M:
    """``cls.decode(buf, version)`` by the generated Python decoder alone (the reference)."""
    fn = cls._decoders.get(version)
    if fn is None:
        raise UnsupportedVersionError(cls.API_KEY if cls.API_KEY is not None else -1, version, cls._schema_name)
    try:
        obj, pos = fn(buf, 0)
    except DecodeError as exc:
        _annotate(exc, cls, version)
        raise
    if pos != len(buf):
        raise _trailing(cls, version, buf, pos)
    return obj  # type: ignore[no-any-return]


# --- the optional C decoder ------------------------------------------------------------------------

_cdecode: Any = None  # the extension module, imported on the first decode (keeps import light)
_cdecode_state = "off" if os.environ.get("KWIRE_NO_EXTENSIONS") else "unloaded"
_programs: dict[str, Any] = {}  # generated module name -> its compiled _cdecode.Program


def cdecode_enabled() -> bool:
    """Whether decoding uses the C decoder (built, and not disabled by ``KWIRE_NO_EXTENSIONS=1``)."""
    return _load_cdecode() is not None


def _load_cdecode() -> Any:
    global _cdecode, _cdecode_state
    if _cdecode_state == "unloaded":
        try:
            from kwire.protocol import _cdecode as mod  # type: ignore[attr-defined]
        except ImportError:  # no compiler at install time: the generated Python decoders serve
            mod = None
        _cdecode, _cdecode_state = mod, ("on" if mod is not None else "off")
    return _cdecode


def _program(module_name: str) -> Any:
    """The compiled decode tables of one generated module (built on its first decode)."""
    prog = _programs.get(module_name)
    if prog is None:
        mod = sys.modules[module_name]
        types = tuple(getattr(mod, name) for name in mod._CTYPES)
        slots = tuple((*(f.attr for f in t._fields), "unknown_tagged_fields") for t in types)
        prog = _programs[module_name] = _cdecode.Program(types, slots, mod._CDEFAULTS, mod._CCONSTS, mod._CPROGS)
    return prog


def _bind_decoder(cls: type[Message], version: int) -> Any:
    """Pick the decoder of ``cls`` at ``version`` once: C when available, else the generated one."""
    fn = cls._decoders.get(version)
    if fn is None:
        raise UnsupportedVersionError(cls.API_KEY if cls.API_KEY is not None else -1, version, cls._schema_name)
    # Only a generated class itself: a subclass made elsewhere keeps the Python path.
    if "_decoders" in cls.__dict__ and _load_cdecode() is not None:
        entry = getattr(sys.modules[cls.__module__], "_CENTRIES", {}).get(cls.__name__)
        if entry is not None:
            first, progs = entry
            fn = _cdecode.Decoder(_program(cls.__module__), progs[version - first], fn)
    own = cls.__dict__.get("_fast_decoders")
    if own is None:
        own = {}
        setattr(cls, "_fast_decoders", own)  # noqa: B010 (a ClassVar set on this class only)
    own[version] = fn
    return fn


def _value_to_json(f: FieldSpec, value: Any, version: int | None) -> Any:
    if value is None:
        return None
    if f.is_array:
        return [_scalar_to_json(f, v, version) for v in value]
    return _scalar_to_json(f, value, version)


def _scalar_to_json(f: FieldSpec, value: Any, version: int | None) -> Any:
    kind = f.kind
    if kind == "struct":
        return value.to_json(version)
    if kind in ("bytes", "records"):
        return bytes(value).hex()
    if kind == "uuid":
        return str(value)
    return value


def _value_from_json(f: FieldSpec, value: Any, version: int | None, where: str) -> Any:
    if value is None:
        return None
    if f.is_array:
        if not isinstance(value, list):
            raise EncodeError(f"expected a list, got {type(value).__name__}", field=f.name, message=where)
        return [_scalar_from_json(f, v, version, where) for v in value]
    return _scalar_from_json(f, value, version, where)


_INT_KINDS = {"int8", "int16", "int32", "int64", "uint16", "uint32"}


def _scalar_from_json(f: FieldSpec, value: Any, version: int | None, where: str) -> Any:
    kind = f.kind
    try:
        if kind == "struct":
            assert f.struct is not None
            return f.struct.from_json(value, version)
        if kind in ("bytes", "records"):
            return bytes.fromhex(value)
        if kind == "uuid":
            return uuid.UUID(value)
        if kind in _INT_KINDS:
            if isinstance(value, bool) or not isinstance(value, int):
                raise EncodeError(f"expected an integer, got {value!r}", field=f.name, message=where)
            return value
        if kind == "bool":
            if not isinstance(value, bool):
                raise EncodeError(f"expected true/false, got {value!r}", field=f.name, message=where)
            return value
        if kind == "float64":
            return float(value)
        if kind == "string":
            if not isinstance(value, str):
                raise EncodeError(f"expected a string, got {value!r}", field=f.name, message=where)
            return value
    except (TypeError, ValueError, AttributeError) as exc:
        raise EncodeError(f"bad value {value!r}: {exc}", field=f.name, message=where) from None
    raise EncodeError(f"unknown kind {kind}", field=f.name, message=where)
