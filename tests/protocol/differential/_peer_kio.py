"""kio (Aiven's generated codec) as a differential peer.

kio has one frozen dataclass per (message, version, struct) under ``kio.schema``; fields carry
their wire type in ``metadata["kafka_type"]`` and their tag in ``metadata["tag"]``. It writes
with ``kio.serial.entity_writer(cls)(io, obj)`` (Python) and reads with
``kio.serial.entity_reader(cls)(buffer, offset) -> (obj, size)`` (Rust).

Known kio behaviours handled here, each narrowly:

* K1 unknown tagged fields: the native reader raises ``KeyError`` on any tag it does not know,
  and the dataclasses have nowhere to keep them, so no unknown tags are generated for kio.
* K2 error codes are decoded into kio's ``ErrorCode`` enum, which raises on codes it does not
  list: error-code fields only take values from that enum.
* K3 ``*Ms`` durations are ``timedelta`` and go through float seconds: int64 durations are kept
  within +-2**47 ms, where that is exact.
* K4 ``*Ms`` timestamps are aware ``datetime``: kio refuses negative timestamps ("Cannot parse
  negative timestamp") and Python's datetime ends at year 9999, so values stay in
  [0, 9999-12-31T23:59:59.999Z], plus -1 which kio reads as ``None`` (all such fields default to -1).
* K5 a zero UUID is ``None`` on kio's side.
* Field names: kio drops the ``_ms`` suffix of durations/timestamps and appends ``_`` to Python
  builtins (``id_``); fields are paired by position and their wire layouts compared.
"""

from __future__ import annotations

import dataclasses
import importlib
import io
from datetime import UTC, datetime, timedelta
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
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader, entity_writer
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    classify_field,
    get_field_tag,
    is_optional,
)
from kio.static.constants import EntityType

from kwire.protocol._message import FieldSpec, Message, Struct
from kwire.protocol.primitives import ZERO_UUID
from kwire.protocol.registry import api_info

__all__ = ["kio_cases", "kio_case"]

PEER = "kio"

# kio's special wire types and the spec type underneath each.
_KIO_TYPES = {"error_code": "int16", "timedelta_i32": "int32", "timedelta_i64": "int64", "datetime_i64": "int64"}
_ERROR_CODES = sorted(int(e.value) for e in ErrorCode)
_ERROR_CODE_SET = frozenset(_ERROR_CODES)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
_TD64_BOUND = 2**47  # K3
_DT_MAX = 253_402_300_799_999  # K4: 9999-12-31T23:59:59.999Z


def _kio_class(path: str) -> Any:
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


def _seq(conv: Any, is_array: bool) -> Any:
    """Lift an element conversion to the whole field value (None passes through)."""
    if is_array:
        return lambda x: None if x is None else tuple(conv(e) for e in x)
    return lambda x: None if x is None else conv(x)


def _seq_back(conv: Any, is_array: bool, none: Any = None) -> Any:
    """The reverse of ``_seq``; ``none`` is what a non-array None stands for (K4, K5)."""
    if is_array:
        return lambda x: None if x is None else [conv(e) for e in x]
    return lambda x: none if x is None else conv(x)


def _scalar_convs(kafka_type: str, optional: bool) -> tuple[Any, Any]:
    """(kwire -> kio, kio -> kwire) for one element of a primitive field."""
    if kafka_type == "error_code":
        return ErrorCode, lambda e: int(e.value)
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return (lambda ms: timedelta(milliseconds=ms)), (lambda td: round(td / _MS))
    if kafka_type == "datetime_i64":
        def dt_to(ms: int) -> Any:
            return None if optional and ms == -1 else _EPOCH + timedelta(milliseconds=ms)
        return dt_to, (lambda dt: round((dt - _EPOCH) / _MS))
    if kafka_type == "uuid":
        return (lambda u: None if optional and u == ZERO_UUID else u), (lambda u: u)
    if kafka_type in ("bytes", "records"):
        return bytes, bytes
    return (lambda x: x), (lambda x: x)


def build_plan(wcls: type[Struct], kcls: Any, version: int, where: str, problems: list[str],
               special: dict[FieldSpec, str]) -> StructPlan:
    """Pair kwire's fields at ``version`` with kio's, noting every wire-layout difference.

    Fields are paired by position (names differ: K-notes above, and spec renames such as
    GenerationId -> GenerationIdOrMemberEpoch); ``special`` collects the fields of kio's own types.
    """
    plan = StructPlan(wcls, kcls, version)
    wf = present_fields(wcls, version)
    kf = dataclasses.fields(kcls)
    if len(wf) != len(kf):
        problems.append(
            f"{where}: kwire has fields {[f.name for f in wf]}, kio has {[k.name for k in kf]}"
        )
        return plan
    for f, k in zip(wf, kf, strict=True):
        at = f"{where}.{f.name}"
        fc = classify_field(k)
        kafka_type = k.metadata.get("kafka_type")
        optional = is_optional(k)
        if fc.is_array != f.is_array:
            problems.append(f"{at}: kwire array={f.is_array}, kio array={fc.is_array}")
            continue
        ktag = get_field_tag(k)
        wtag = tag_in(f, version)
        if ktag != wtag:
            problems.append(f"{at}: kwire tag {wtag}, kio tag {ktag}")
            continue
        if isinstance(fc, EntityField | EntityTupleField):
            if f.kind != "struct":
                problems.append(f"{at}: kwire type {f.type}, kio a struct")
                continue
            # A nullable struct (KIP-893) is an Optional entity; arrays carry nullability themselves.
            if ktag is None and optional != f.nullable_in(version):
                problems.append(f"{at}: kwire nullable={f.nullable_in(version)}, kio nullable={optional}")
                continue
            assert f.struct is not None
            nested = build_plan(f.struct, fc.type_, version, at, problems, special)
            plan.fields.append(FieldPlan(f, k.name, _struct_to(nested, f.is_array), _struct_from(nested, f.is_array)))
            continue
        assert isinstance(kafka_type, str)
        base = _KIO_TYPES.get(kafka_type, kafka_type)
        if base != f.kind:
            problems.append(f"{at}: kwire type {f.kind}, kio type {kafka_type}")
            continue
        # kio marks zero-UUID and -1-timestamp fields Optional; only compare real nullability.
        if kafka_type not in ("uuid", "datetime_i64") and ktag is None and optional != f.nullable_in(version):
            problems.append(f"{at}: kwire nullable={f.nullable_in(version)}, kio nullable={optional}")
            continue
        if kafka_type in _KIO_TYPES:
            special[f] = kafka_type + ("?" if optional else "")
        to, back = _scalar_convs(kafka_type, optional)
        # K4, K5: kio's None stands for a value when the field itself is not nullable.
        none = None if f.nullable_in(version) else {"uuid": ZERO_UUID, "datetime_i64": -1}.get(kafka_type)
        plan.fields.append(FieldPlan(f, k.name, _seq(to, f.is_array), _seq_back(back, f.is_array, none)))
    return plan


def _make(plan: StructPlan, kwargs: dict[str, Any]) -> Any:
    return plan.peer_cls(**kwargs)


def _struct_to(nested: StructPlan, is_array: bool) -> Any:
    return _seq(lambda s: plan_to_peer(s, nested, _make), is_array)


def _struct_from(nested: StructPlan, is_array: bool) -> Any:
    return _seq_back(lambda o: plan_from_peer(o, nested), is_array)


def _domain(special: dict[FieldSpec, str]) -> Any:
    """K2-K4: map a kwire value into what kio can represent."""

    def fix(f: FieldSpec, x: Any, version: int) -> Any:
        kt = special.get(f)
        if kt == "error_code" and x not in _ERROR_CODE_SET:
            return _ERROR_CODES[x % len(_ERROR_CODES)]
        if kt == "timedelta_i64" and not -_TD64_BOUND <= x <= _TD64_BOUND:
            return x % _TD64_BOUND
        if kt == "datetime_i64" and not 0 <= x <= _DT_MAX:
            return x % _DT_MAX
        if kt == "datetime_i64?" and not 0 <= x <= _DT_MAX and x != -1:
            return x % _DT_MAX
        return x

    return fix


def _case(api_key: int, version: int, kind: str, path: str) -> Case:
    info = api_info(api_key)
    wcls: type[Message] = info.request_class if kind == "request" else info.response_class
    kcls = _kio_class(path)
    problems: list[str] = []
    if bool(kcls.__flexible__) != wcls.is_flexible(version):
        problems.append(f"flexible: kwire {wcls.is_flexible(version)}, kio {kcls.__flexible__}")
    special: dict[FieldSpec, str] = {}
    plan = build_plan(wcls, kcls, version, wcls.__name__, problems, special)
    if problems:
        reason = f"kio's schema differs from kwire's at v{version}: " + "; ".join(problems)
        return Case(PEER, api_key, version, kind, wcls, reason)
    writer = entity_writer(kcls)
    reader = entity_reader(kcls)
    fix = _domain(special)

    def to_peer(value: Message) -> Any:
        return plan_to_peer(value, plan, _make)

    def write(obj: Any) -> bytes:
        buf = io.BytesIO()
        writer(buf, obj)
        return buf.getvalue()

    def read(raw: bytes) -> Any:
        return reader(raw, 0)[0]

    def encode(value: Message) -> bytes:
        return write(to_peer(value))

    def decode(raw: bytes) -> Message:
        obj, size = reader(raw, 0)
        assert size == len(raw), f"kio read {size} of {len(raw)} bytes"
        return plan_from_peer(obj, plan)  # type: ignore[return-value]

    def sanitize(value: Message) -> Message:
        return map_fields(value, version, fix, unknown_tags=lambda s, t: None)  # type: ignore[return-value]

    return Case(PEER, api_key, version, kind, wcls, None, encode, decode, sanitize, keeps_unknown_tags=False,
                to_peer=to_peer, write=write, read=read)


def kio_cases() -> list[Case]:
    """Every (api, version, kind) that kio and kwire both have."""
    out = []
    for api_key, name in sorted(api_key_map.items()):
        info = api_info(api_key)
        for version, by_type in sorted(schema_name_map[name].items()):
            if not info.supports(version):
                continue
            if EntityType.request in by_type:
                out.append(_case(api_key, version, "request", by_type[EntityType.request]))
            if EntityType.response in by_type:
                out.append(_case(api_key, version, "response", by_type[EntityType.response]))
    return out


def kio_case(api_key: int, version: int, kind: str) -> Case:
    """The one case for (api, version, kind); KeyError if kio lacks it."""
    by_type = schema_name_map[api_key_map[api_key]][version]
    return _case(api_key, version, kind, by_type[EntityType.request if kind == "request" else EntityType.response])
