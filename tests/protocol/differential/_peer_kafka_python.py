"""kafka-python 3.x (``kafka.protocol``) as a differential peer.

kafka-python loads Kafka's JSON schemas at run time (``kafka/protocol/schemas/resources``) and
``exec``-compiles flat encoders and decoders per version. Message classes subclass
``ApiMessage``; a class's ``_struct`` is a ``StructField`` whose fields mirror the JSON, nested
structs get ``DataContainer`` classes, and values are plain attributes with snake_case names.

Known kafka-python behaviours handled here, each narrowly:

* P1 unknown tagged fields are decoded (kept as ``unknown_tags['_N']``) but never written: kwire's
  bytes with unknown tags are checked on kafka-python's decoder, and the byte comparison uses
  the same value without them.
* P2 ``ApiVersionsResponse.decode`` re-reads the body as v0 when ErrorCode is non-zero (the
  KIP-511 fallback a client needs): the compiled per-version decoder is called instead, which
  is what ``ApiMessage.decode`` runs for every other message.
* P3 a struct inside a tagged field is read and written with an empty tag section: no unknown
  tags are generated below a tagged field; a message whose tagged struct has known tagged
  fields of its own would be skipped with that reason (none has).
* P4 a tagged struct field defaults to ``None`` on kafka-python's side, and anything else is
  written, so a kwire value equal to the struct's default is passed as "not set".
* P5 a zero UUID is ``None`` (also its default, so a tagged UUID at zero must be passed as
  ``None`` to stay unwritten); ``MetadataResponse`` AuthorizedOperations are patched to a set
  of bit numbers (``bitfield``; INT32_MIN, "omitted", is ``None``).
"""

from __future__ import annotations

import importlib
import pkgutil
import warnings
from collections.abc import Iterator
from typing import Any

from _peer_common import (
    Case,
    FieldPlan,
    StructPlan,
    map_fields,
    plan_from_peer,
    plan_to_peer,
    present_fields,
    tag_in,
)

from kwire.protocol._message import FieldSpec, Message, Struct
from kwire.protocol.primitives import ZERO_UUID
from kwire.protocol.registry import api_info

with warnings.catch_warnings():
    # kafka-python reads its schemas with importlib.resources.read_text (deprecated in 3.11).
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.protocol as kp_pkg
    from kafka.protocol.api_message import ApiMessage
    from kafka.protocol.schemas.fields.base import BaseField

__all__ = ["kafka_python_cases", "kafka_python_case"]

PEER = "kafka-python"
_INT32_MIN = -(2**31)


def _api_classes() -> list[Any]:
    """Every request/response class kafka-python defines (its ``old`` hand-written codec aside)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for m in pkgutil.walk_packages(kp_pkg.__path__, "kafka.protocol."):
            if ".old" not in m.name and "generate_stubs" not in m.name:
                importlib.import_module(m.name)

    def subclasses(c: type) -> Iterator[type]:
        s: type
        for s in c.__subclasses__():
            yield s
            yield from subclasses(s)

    found = {c.__name__: c for c in subclasses(ApiMessage) if getattr(c, "_class_version", None) is None}
    return [found[n] for n in sorted(found)]


def _children(fld: Any) -> tuple[Any, ...]:
    """The fields of a struct or struct-array field, in spec order."""
    return tuple(fld.array_of._fields if fld.is_struct_array() else fld._fields)


def _elem_type(fld: Any) -> str:
    t = fld.array_of._type_str if fld.is_array() else fld._type_str
    return str(t)


def _lift(conv: Any, is_array: bool, none: Any = None) -> Any:
    if is_array:
        return lambda x: None if x is None else [conv(e) for e in x]
    return lambda x: none if x is None else conv(x)


def _bits_to_set(x: int) -> set[int] | None:
    return None if x == _INT32_MIN else {b for b in range(32) if (x >> b) & 1}


def _set_to_bits(s: set[int]) -> int:
    v = sum(1 << b for b in s)
    return v - 2**32 if v >= 2**31 else v


def _scalar_convs(kp_type: str) -> tuple[Any, Any]:
    if kp_type == "bitfield":
        return _bits_to_set, _set_to_bits
    if kp_type in ("bytes", "records"):
        return bytes, bytes
    if kp_type == "uuid":  # P5
        return (lambda u: None if u == ZERO_UUID else u), (lambda u: u)
    return (lambda x: x), (lambda x: x)


def build_plan(wcls: type[Struct], kfields: tuple[Any, ...], data_class: Any, version: int, where: str,
               problems: list[str], in_tagged: bool = False) -> StructPlan:
    """Pair kwire's fields at ``version`` with kafka-python's, noting every wire-layout difference."""
    plan = StructPlan(wcls, data_class, version)
    wf = present_fields(wcls, version)
    kf = [k for k in kfields if k.for_version_q(version)]
    if len(wf) != len(kf):
        problems.append(f"{where}: kwire has fields {[f.name for f in wf]}, kafka-python has {[k._name for k in kf]}")
        return plan
    for f, k in zip(wf, kf, strict=True):
        at = f"{where}.{f.name}"
        ktag = k.tag if k.tagged_field_q(version) else None
        wtag = tag_in(f, version)
        if ktag != wtag:
            problems.append(f"{at}: kwire tag {wtag}, kafka-python tag {ktag}")
            continue
        if in_tagged and wtag is not None:
            problems.append(f"{at}: a tagged field inside a tagged struct, which kafka-python cannot write (P3)")
            continue
        if bool(k.is_array()) != f.is_array:
            problems.append(f"{at}: kwire array={f.is_array}, kafka-python array={k.is_array()}")
            continue
        if k.nullable_for_version_q(version) != f.nullable_in(version):
            problems.append(f"{at}: kwire nullable={f.nullable_in(version)}, "
                            f"kafka-python nullable={k.nullable_for_version_q(version)}")
            continue
        if k.is_struct() or k.is_struct_array():
            if f.kind != "struct":
                problems.append(f"{at}: kwire type {f.type}, kafka-python a struct")
                continue
            assert f.struct is not None
            nested = build_plan(f.struct, _children(k), k.data_class, version, at, problems,
                                in_tagged or wtag is not None)
            to = _lift(lambda s, n=nested: plan_to_peer(s, n, _make), f.is_array)
            back = _lift(lambda o, n=nested: plan_from_peer(o, n, _unknown), f.is_array)
            if wtag is not None and not f.is_array:
                to, back = _tagged_struct(f, to, back)  # P4
            plan.fields.append(FieldPlan(f, k.name, to, back))
            continue
        kp_type = _elem_type(k)
        base = "int32" if kp_type == "bitfield" else kp_type
        if base != f.kind:
            problems.append(f"{at}: kwire type {f.kind}, kafka-python type {kp_type}")
            continue
        to, back = _scalar_convs(kp_type)
        # P5: None stands for a zero UUID and for INT32_MIN authorized operations.
        none = None if f.nullable_in(version) else {"uuid": ZERO_UUID, "bitfield": _INT32_MIN}.get(kp_type)
        plan.fields.append(FieldPlan(f, k.name, _lift(to, f.is_array), _lift(back, f.is_array, none)))
    return plan


def _tagged_struct(f: FieldSpec, to: Any, back: Any) -> tuple[Any, Any]:
    """P4: a tagged struct at its default is "not set" (None) for kafka-python."""
    default = f.make_default()

    def to_kp(x: Any) -> Any:
        return None if x == default else to(x)

    def from_kp(y: Any) -> Any:
        return f.make_default() if y is None else back(y)

    return to_kp, from_kp


def _make(plan: StructPlan, kwargs: dict[str, Any]) -> Any:
    return plan.peer_cls(**kwargs)


def _unknown(obj: Any) -> list[tuple[int, bytes]] | None:
    u = obj.unknown_tags
    if not u:
        return None
    return sorted((int(name[1:]), bytes(data)) for name, data in u.items())


def _strip_below_tagged(s: Struct, in_tagged: bool) -> Any:
    """P3: no unknown tags inside a tagged field's struct."""
    return None if in_tagged else s.unknown_tagged_fields  # type: ignore[attr-defined]


def _keep(f: FieldSpec, x: Any, version: int) -> Any:
    return x


def _case(kcls: Any, wcls: type[Message], api_key: int, version: int, kind: str) -> Case:
    problems: list[str] = []
    flexible = bool(kcls.flexible_version_q(version))
    if flexible != wcls.is_flexible(version):
        problems.append(f"flexible: kwire {wcls.is_flexible(version)}, kafka-python {flexible}")
    plan = build_plan(wcls, tuple(kcls._struct._fields), None, version, wcls.__name__, problems)
    if problems:
        reason = f"kafka-python's schema differs from kwire's at v{version}: " + "; ".join(problems)
        return Case(PEER, api_key, version, kind, wcls, reason)
    # The compiled per-version decoder returns the end position too (ApiMessage.decode drops it).
    decoder = kcls._struct.compiled_decode_from(version, compact=flexible, tagged=flexible, data_class=kcls)

    def make_top(p: StructPlan, kwargs: dict[str, Any]) -> Any:
        return kcls(version=version, **kwargs)

    def to_peer(value: Message) -> Any:
        return plan_to_peer(value, plan, make_top)

    def write(obj: Any) -> bytes:
        return bytes(obj.encode(version=version))

    def read(raw: bytes) -> Any:
        return kcls.decode(raw, version=version)

    def encode(value: Message) -> bytes:
        return write(to_peer(value))

    def decode(raw: bytes) -> Message:
        obj, pos = decoder(memoryview(raw), 0)
        assert pos == len(raw), f"kafka-python read {pos} of {len(raw)} bytes"
        return plan_from_peer(obj, plan, _unknown)  # type: ignore[return-value]

    def sanitize(value: Message) -> Message:
        return map_fields(value, version, _keep, unknown_tags=_strip_below_tagged)  # type: ignore[return-value]

    return Case(PEER, api_key, version, kind, wcls, None, encode, decode, sanitize, keeps_unknown_tags=True,
                to_peer=to_peer, write=write, read=read)


def kafka_python_cases() -> list[Case]:
    """Every (api, version, kind) that kafka-python and kwire both have."""
    out = []
    for kcls in _api_classes():
        api_key = int(kcls.API_KEY)
        info = api_info(api_key)
        kind = str(kcls.type)
        wcls = info.request_class if kind == "request" else info.response_class
        lo, hi = BaseField.parse_versions(kcls._json["validVersions"])
        for version in range(lo, hi + 1):
            if info.supports(version):
                out.append(_case(kcls, wcls, api_key, version, kind))
    return sorted(out, key=lambda c: (c.api_key, c.kind, c.version))


def kafka_python_case(api_key: int, version: int, kind: str) -> Case:
    """The one case for (api, version, kind); StopIteration if kafka-python lacks it."""
    kcls = next(k for k in _api_classes() if (int(k.API_KEY), str(k.type)) == (api_key, kind))
    info = api_info(api_key)
    return _case(kcls, info.request_class if kind == "request" else info.response_class, api_key, version, kind)
