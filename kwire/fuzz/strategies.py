"""Hypothesis strategies for any generated message at any version, built from ``_fields``.

A drawn value only uses what the version can carry: fields absent in that version keep
their default, nulls appear only where the version allows them, and unknown tagged
fields (tags the version does not define) appear only in flexible versions.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from kwire.protocol._message import FieldSpec, Message, Struct

__all__ = ["message_strategy", "struct_strategy", "value_strategy"]

_INT_BOUNDS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}
MAX_ARRAY = 3
MAX_TEXT = 12
MAX_BYTES = 24


def _scalar(kind: str) -> st.SearchStrategy[Any]:
    if kind in _INT_BOUNDS:
        lo, hi = _INT_BOUNDS[kind]
        return st.integers(lo, hi)
    if kind == "bool":
        return st.booleans()
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "string":
        return st.text(max_size=MAX_TEXT)
    if kind in ("bytes", "records"):
        return st.binary(max_size=MAX_BYTES)
    if kind == "uuid":
        return st.uuids()
    raise ValueError(f"no strategy for kind {kind}")


def value_strategy(f: FieldSpec, version: int, flexible: bool, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values for one field at one version."""
    if f.kind == "struct":
        assert f.struct is not None
        elem = struct_strategy(f.struct, version, flexible, depth + 1)
    else:
        elem = _scalar(f.kind)
    s = st.lists(elem, max_size=MAX_ARRAY if depth < 3 else 1) if f.is_array else elem
    if f.nullable_in(version):
        s = st.none() | s
    return s


def _unknown_tags(cls: type[Struct], version: int) -> st.SearchStrategy[Any]:
    known = {f.tag for f in cls._fields if f.tag is not None and f.present_in(version)}
    # Tags above 127 take a two-byte varint: draw from both sides of that edge.
    tags = st.sampled_from([t for t in (*range(0, 8), 127, 128, 300, 16383, 16384) if t not in known])
    pairs = st.lists(st.tuples(tags, st.binary(max_size=8)), min_size=1, max_size=2, unique_by=lambda p: p[0])
    return st.none() | pairs.map(sorted)


_CACHE: dict[tuple[type[Struct], int, bool, int], st.SearchStrategy[Any]] = {}


def struct_strategy(cls: type[Struct], version: int, flexible: bool, depth: int = 0) -> st.SearchStrategy[Any]:
    """Instances of a generated struct valid at ``version``."""
    key = (cls, version, flexible, depth)
    cached = _CACHE.get(key)
    if cached is None:
        cached = _CACHE[key] = _build_struct_strategy(cls, version, flexible, depth)
    return cached


def _build_struct_strategy(cls: type[Struct], version: int, flexible: bool, depth: int) -> st.SearchStrategy[Any]:
    kwargs: dict[str, st.SearchStrategy[Any]] = {}
    for f in cls._fields:
        if f.present_in(version):
            kwargs[f.attr] = value_strategy(f, version, flexible, depth)
        else:
            kwargs[f.attr] = st.builds(f.make_default)
    if flexible:
        kwargs["unknown_tagged_fields"] = _unknown_tags(cls, version)
    return st.builds(cls, **kwargs)


def message_strategy(cls: type[Message], version: int) -> st.SearchStrategy[Any]:
    """Instances of a generated message valid at ``version`` (unknown tags included)."""
    return struct_strategy(cls, version, cls.is_flexible(version))
