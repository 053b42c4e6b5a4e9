"""Helpers called by the generated codec (``kwire.protocol.messages``): cold error paths and
the rare element types. Hot paths are inlined by the generator instead."""

from __future__ import annotations

import os
import struct
from collections.abc import Callable

from kwire.errors import DecodeError, EncodeError
from kwire.protocol.primitives import (
    S_INT8 as I8,
)
from kwire.protocol.primitives import (
    S_INT16 as I16,
)
from kwire.protocol.primitives import (
    S_INT32 as I32,
)
from kwire.protocol.primitives import (
    ZERO_UUID,
    make_uuid,
    read_uvarint,
    read_uvarint_cont,
    write_uvarint,
)

__all__ = [
    "flat_struct",
    "pack_flat",
    "READ_ERRORS",
    "WRITE_ERRORS",
    "ZERO_UUID",
    "I8",
    "I16",
    "I32",
    "make_uuid",
    "read_uvarint_cont",
    "write_uvarint",
]

class _ArrayStructs(dict[int, struct.Struct]):
    """Precompiled ``Struct``s for arrays of one fixed-width type, by element count."""

    __slots__ = ("code",)
    # Counts above this are compiled per call instead of cached, so memory stays bounded.
    MAX_CACHED = 4096

    def __init__(self, code: str) -> None:
        super().__init__()
        self.code = code

    def __missing__(self, n: int) -> struct.Struct:
        s = struct.Struct(f">{n}{self.code}")
        if n <= self.MAX_CACHED:
            self[n] = s
        return s


ARRAY_STRUCTS = {code: _ArrayStructs(code) for code in "bhiqHId?"}


# What reading past the end or bad UTF-8 raises inside a generated decoder; turned into DecodeError.
READ_ERRORS = (struct.error, IndexError, UnicodeDecodeError)
# What a badly built message raises inside a generated encoder; turned into EncodeError.
WRITE_ERRORS = (struct.error, AttributeError, TypeError, ValueError, OverflowError)

# Composite Structs of the encoders' one-call fast path, per layout template: at most this many
# element-count combinations are kept per template (past it, a Struct is built for the call).
_FLAT_CACHE_MAX = 256


def _pack_flat_py(out: bytearray, elems: object, names: tuple[str, ...], layout: str, flexible: bool) -> bool:
    """Without the C extension: decline, and the generated loop writes the elements itself."""
    return False


def _load_pack_flat() -> Callable[[bytearray, object, tuple[str, ...], str, bool], bool]:
    if os.environ.get("KWIRE_NO_EXTENSIONS"):
        return _pack_flat_py
    try:
        from kwire.protocol._cdecode import pack_flat as c_pack_flat  # type: ignore[import-not-found]
    except ImportError:  # not built: the Python loops serve
        return _pack_flat_py
    return c_pack_flat  # type: ignore[no-any-return]


# An array of flat structs (fixed-width numbers and arrays of them) in one C call
# (kwire/protocol/_cdecode.c: pack_flat), or False for the generated Python loop to write it.
pack_flat = _load_pack_flat()


def flat_struct(cache: dict[object, struct.Struct], key: object, template: str, counts: tuple[int, ...]) -> struct.Struct:
    """The Struct for ``template`` with ``counts`` filled in (one element count per array).

    Called by a generated encoder's fast path on a cache miss: a struct whose fields are all
    fixed-width numbers and arrays of them is written with one ``pack`` of this Struct (counts and
    elements in wire order), which gives the same bytes as the field-by-field path.
    """
    s = struct.Struct(template.format(*counts))
    if len(cache) < _FLAT_CACHE_MAX:
        cache[key] = s
    return s


def read_fail(exc: BaseException, field: str, pos: int, buf: bytes | memoryview) -> DecodeError:
    if isinstance(exc, UnicodeDecodeError):
        return DecodeError(f"invalid UTF-8 in string: {exc.reason}", offset=pos, field=field)
    if isinstance(exc, IndexError):
        return DecodeError(f"truncated: input ends at byte {len(buf)}", offset=pos, field=field)
    return DecodeError(f"truncated: {len(buf) - pos} bytes left, field needs more", offset=pos, field=field)


def short_err(n: int, pos: int) -> DecodeError:
    return DecodeError(f"length {n} runs past the end of the input", offset=pos)


def count_err(n: int, pos: int) -> DecodeError:
    return DecodeError(f"count {n} is larger than the bytes that remain", offset=pos)


def len_err(n: int, pos: int) -> DecodeError:
    return DecodeError(f"invalid negative length {n}", offset=pos)


def null_err(n: int, pos: int) -> DecodeError:
    return DecodeError("null (length -1) in a non-nullable field" if n == -1 else f"invalid length {n}", offset=pos)


def tag_size_err(tag: int, size: int, pos: int) -> DecodeError:
    return DecodeError(f"tagged field {tag} declared {size} bytes but its value ended elsewhere", offset=pos)


def absent_err(name: str, version: int) -> EncodeError:
    return EncodeError(f"field {name} does not exist in version {version} and is not at its default value", field=name)


def null_enc_err() -> EncodeError:
    return EncodeError("None in a field that is not nullable in this version")


def tags_not_flexible(version: int) -> EncodeError:
    return EncodeError(f"unknown tagged fields cannot be written in non-flexible version {version}")


_FIXED_FORMATS = {"int8": ">b", "int16": ">h", "int32": ">i", "int64": ">q", "uint16": ">H", "uint32": ">I",
                  "float64": ">d", "bool": ">?"}


def write_fail(exc: BaseException, field: str, obj: object = None) -> EncodeError:
    """Turn a low-level error into an EncodeError; for a merged run of fixed-width fields
    ("A..B"), find the field whose value does not fit."""
    if field and ".." in field and obj is not None:
        first, last = field.split("..")
        inside = False
        for f in getattr(obj, "_fields", ()):
            inside = inside or f.name == first
            if not inside:
                continue
            value = getattr(obj, f.attr)
            try:
                if f.kind == "uuid":
                    if len(value.bytes) != 16:
                        raise ValueError("not a UUID")
                else:
                    struct.pack(_FIXED_FORMATS[f.kind], value)
            except (struct.error, AttributeError, TypeError, ValueError) as inner:
                return EncodeError(f"{f.type} value {value!r} does not fit: {inner}", field=f.name)
            if f.name == last:
                break
    return EncodeError(f"{type(exc).__name__}: {exc}", field=field or None)


def write_tagged(out: bytearray, fields: list[tuple[int, bytes | bytearray]]) -> None:
    if len(fields) > 1:
        fields = sorted(fields, key=lambda kv: kv[0])
    write_uvarint(out, len(fields))
    last = -1
    for tag, data in fields:
        if tag <= last:
            raise EncodeError(f"tagged field {tag} appears twice")
        last = tag
        write_uvarint(out, tag)
        write_uvarint(out, len(data))
        out += data


def _read_len(buf: bytes | memoryview, pos: int, compact: bool, short: bool) -> tuple[int, int]:
    if compact:
        n, pos = read_uvarint(buf, pos)
        return n - 1, pos
    if short:
        return I16.unpack_from(buf, pos)[0], pos + 2
    return I32.unpack_from(buf, pos)[0], pos + 4


def _read_blob(buf: bytes | memoryview, pos: int, compact: bool, short: bool) -> tuple[memoryview | bytes | None, int]:
    n, pos = _read_len(buf, pos, compact, short)
    if n < 0:
        if n != -1:
            raise len_err(n, pos)
        return None, pos
    end = pos + n
    if end > len(buf):
        raise short_err(n, pos)
    return buf[pos:end], end


# Array elements are never nullable: a spec's "[]string" has no nullableVersions for its elements,
# and Kafka's generated readers refuse a null element ("non-nullable field ... element was
# serialized as null") before the request is acted on.


def _read_elem_blob(buf: bytes | memoryview, pos: int, compact: bool, short: bool) -> tuple[bytes | memoryview, int]:
    n, start = _read_len(buf, pos, compact, short)
    if n < 0:
        raise null_err(n, pos)
    end = start + n
    if end > len(buf):
        raise short_err(n, start)
    return buf[start:end], end


def read_elem_string(buf: bytes | memoryview, pos: int, compact: bool) -> tuple[str, int]:
    raw, pos = _read_elem_blob(buf, pos, compact, True)
    return str(raw, "utf-8"), pos


def read_elem_bytes(buf: bytes | memoryview, pos: int, compact: bool) -> tuple[bytes, int]:
    raw, pos = _read_elem_blob(buf, pos, compact, False)
    return bytes(raw), pos


read_elem_records = read_elem_bytes


def read_elem_uuid(buf: bytes | memoryview, pos: int, compact: bool) -> tuple[object, int]:
    raw = buf[pos : pos + 16]
    if len(raw) != 16:
        raise short_err(16, pos)
    return make_uuid(bytes(raw)), pos + 16


def _write_blob(out: bytearray, data: bytes | None, compact: bool, short: bool) -> None:
    if data is None:
        if compact:
            out.append(0)
        else:
            out += b"\xff\xff" if short else b"\xff\xff\xff\xff"
        return
    if compact:
        write_uvarint(out, len(data) + 1)
    elif short:
        out += I16.pack(len(data))
    else:
        out += I32.pack(len(data))
    out += data


def write_elem_string(out: bytearray, s: str, compact: bool) -> None:
    if s is None:
        raise EncodeError("an array element cannot be null")
    _write_blob(out, s.encode(), compact, True)


def write_elem_bytes(out: bytearray, b: bytes, compact: bool) -> None:
    if b is None:
        raise EncodeError("an array element cannot be null")
    _write_blob(out, b, compact, False)


write_elem_records = write_elem_bytes


def write_elem_uuid(out: bytearray, u: object, compact: bool) -> None:
    out += u.bytes  # type: ignore[attr-defined]


def read_unknown_tags(buf: bytes | memoryview, pos: int) -> tuple[list[tuple[int, bytes]] | None, int]:
    """Read a tagged-field section none of whose tags the schema knows; keep each as raw bytes."""
    nt, pos = read_uvarint(buf, pos)
    if nt > len(buf) - pos:
        raise count_err(nt, pos)
    out: list[tuple[int, bytes]] = []
    for _ in range(nt):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        end = pos + size
        if end > len(buf):
            raise short_err(size, pos)
        out.append((tag, bytes(buf[pos:end])))
        pos = end
    return (out or None), pos
