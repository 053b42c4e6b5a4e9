"""What both peer adapters share: the case record, field plans, and walks over kwire values.

A *plan* pairs each field a kwire struct has at one version with the peer's field at the same
position, with the two value conversions between them. Building the plan also compares the two
wire layouts (type, array, nullability, tag, flexibility); any difference becomes a precise skip
reason instead of a failing test, because the peers are generated from older or newer specs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kwire.protocol._message import FieldSpec, Message, Struct, in_range

__all__ = [
    "Case",
    "FieldPlan",
    "StructPlan",
    "kwire_layout_name",
    "present_fields",
    "tag_in",
    "strip_unknown_tags",
    "map_fields",
    "plan_to_peer",
    "plan_from_peer",
    "lengthen",
    "at_defaults",
]

Convert = Callable[[Any], Any]
S = TypeVar("S", bound=Struct)


def present_fields(cls: type[Struct], version: int) -> list[FieldSpec]:
    """kwire's fields of ``cls`` that exist at ``version``, in spec order."""
    return [f for f in cls._fields if f.present_in(version)]


def tag_in(f: FieldSpec, version: int) -> int | None:
    """The tag of ``f`` if it is a tagged field at ``version``."""
    return f.tag if in_range(f.tagged, version) else None


def kwire_layout_name(f: FieldSpec) -> str:
    return f"{f.name}:{'[]' if f.is_array else ''}{f.kind}"


@dataclass(slots=True)
class FieldPlan:
    """One kwire field and its peer counterpart at one version.

    The conversions take the whole field value: a scalar, a struct, a list of them, or None.
    """

    spec: FieldSpec
    peer_name: str
    to_peer: Convert
    from_peer: Convert


@dataclass(slots=True)
class StructPlan:
    """All fields of one kwire struct at one version, paired with a peer struct."""

    kwire_cls: type[Struct]
    peer_cls: Any
    version: int
    fields: list[FieldPlan] = field(default_factory=list)


@dataclass(slots=True)
class Case:
    """One (peer, api, version, kind) cell of the differential matrix."""

    peer: str
    api_key: int
    version: int
    kind: str  # "request" | "response"
    kwire_cls: type[Message]
    skip_reason: str | None
    # Filled for runnable cases by the adapter:
    encode: Callable[[Message], bytes] | None = None
    decode: Callable[[bytes], Message] | None = None
    sanitize: Callable[[Message], Message] | None = None
    keeps_unknown_tags: bool = False  # the peer's decoder returns unknown tagged fields
    # The peer's own steps, for benchmarks: kwire value -> peer object, peer object -> bytes
    # (its public encoder), bytes -> peer object (its public decoder).
    to_peer: Callable[[Message], Any] | None = None
    write: Callable[[Any], bytes] | None = None
    read: Callable[[bytes], Any] | None = None

    @property
    def id(self) -> str:
        return f"{self.peer}-{self.kwire_cls.__name__}-v{self.version}"


def map_fields(value: S, version: int, fn: Callable[[FieldSpec, Any, int], Any],
               *, unknown_tags: Callable[[Struct, bool], Any] | None = None, in_tagged: bool = False) -> S:
    """A copy of ``value`` with ``fn(spec, scalar, depth)`` applied to every present scalar field.

    ``unknown_tags(struct, inside_a_tagged_field)`` returns the new ``unknown_tagged_fields``.
    """
    cls = type(value)
    kwargs: dict[str, Any] = {}
    for f in cls._fields:
        x = getattr(value, f.attr)
        if not f.present_in(version) or x is None:
            kwargs[f.attr] = x
            continue
        tagged = in_tagged or tag_in(f, version) is not None
        if f.kind == "struct":
            if f.is_array:
                kwargs[f.attr] = [map_fields(e, version, fn, unknown_tags=unknown_tags, in_tagged=tagged) for e in x]
            else:
                kwargs[f.attr] = map_fields(x, version, fn, unknown_tags=unknown_tags, in_tagged=tagged)
        elif f.is_array:
            kwargs[f.attr] = [fn(f, e, version) for e in x]
        else:
            kwargs[f.attr] = fn(f, x, version)
    u = value.unknown_tagged_fields  # type: ignore[attr-defined]
    kwargs["unknown_tagged_fields"] = unknown_tags(value, in_tagged) if unknown_tags else u
    return cls(**kwargs)


def plan_to_peer(value: Struct, plan: StructPlan, make: Callable[[StructPlan, dict[str, Any]], Any]) -> Any:
    """The peer object for kwire ``value``; ``make(plan, kwargs)`` builds it."""
    return make(plan, {fp.peer_name: fp.to_peer(getattr(value, fp.spec.attr)) for fp in plan.fields})


def plan_from_peer(obj: Any, plan: StructPlan, unknown: Callable[[Any], Any] | None = None) -> Struct:
    """The kwire struct for peer object ``obj``; fields absent at the version keep their defaults."""
    kwargs = {fp.spec.attr: fp.from_peer(getattr(obj, fp.peer_name)) for fp in plan.fields}
    if unknown is not None:
        kwargs["unknown_tagged_fields"] = unknown(obj)
    return plan.kwire_cls(**kwargs)


def _keep(f: FieldSpec, x: Any, version: int) -> Any:
    return x


def strip_unknown_tags(value: S, version: int) -> S:
    """``value`` without any unknown tagged fields, at any depth."""
    return map_fields(value, version, _keep, unknown_tags=lambda s, t: None)


LONG = 130  # past 127: compact lengths and counts take a two-byte varint


def _long_scalar(f: FieldSpec, x: Any) -> Any:
    if f.kind == "string" and x is not None:
        unit = x or "ü"
        return (unit * (LONG // len(unit) + 1))[: max(LONG, len(x))]
    if f.kind in ("bytes", "records") and x is not None:
        unit = bytes(x) or b"\x01"
        return (unit * (2 * LONG // len(unit) + 1))[: max(2 * LONG, len(unit))]
    return x


def lengthen(value: S, version: int, *, arrays: bool = True) -> S:
    """``value`` with every string and bytes field, and (once, at the outermost level) every
    non-empty array, made longer than 127 so that their lengths need multi-byte varints."""
    cls = type(value)
    kwargs: dict[str, Any] = {}
    for f in cls._fields:
        x = getattr(value, f.attr)
        if not f.present_in(version) or x is None:
            kwargs[f.attr] = x
            continue
        if f.is_array:
            elems = [lengthen(e, version, arrays=False) if f.kind == "struct" else _long_scalar(f, e) for e in x]
            if arrays and elems:
                elems = [elems[i % len(elems)] for i in range(LONG)]
            kwargs[f.attr] = elems
        elif f.kind == "struct":
            kwargs[f.attr] = lengthen(x, version, arrays=arrays)
        else:
            kwargs[f.attr] = _long_scalar(f, x)
    kwargs["unknown_tagged_fields"] = value.unknown_tagged_fields  # type: ignore[attr-defined]
    return cls(**kwargs)


def _default_scalar(f: FieldSpec, x: Any, version: int) -> Any:
    if f.is_array:  # an element of a primitive array: arrays keep their contents
        return x
    d = f.make_default()
    return x if d is None and not f.nullable_in(version) else d


def at_defaults(value: S, version: int) -> S:
    """``value`` with every scalar field at its default, keeping the shape of arrays.

    Tagged fields at their default must not be written, at any depth.
    """
    return map_fields(value, version, _default_scalar)
