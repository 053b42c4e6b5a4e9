"""A null element inside a string or bytes array is refused by every decoder, as Kafka refuses it.

Kafka's generated readers throw "non-nullable field X element was serialized as null" before a
request is acted on (issue: DeleteTopics ``["victim", null]`` used to delete ``victim``). For every
message and version that has such an array (at any depth outside tagged fields), Hypothesis
draws the rest of the message, one element of the array is replaced by a null on the wire, and
both the C and the pure-Python decoder must raise DecodeError. The encoders refuse a None
element with EncodeError.
"""

from __future__ import annotations

from typing import Any

import pytest

from kwire.errors import DecodeError, EncodeError
from kwire.fuzz.strategies import message_strategy
from kwire.protocol import _codec_support
from kwire.protocol._message import FieldSpec, Message, Struct
from tests.hypothesis_support import run_examples
from tests.protocol.test_roundtrip import CASES

PROBE = "kwire\u2603null-probe"


def _paths(cls: type[Struct], version: int, prefix: tuple[FieldSpec, ...] = ()) -> list[tuple[FieldSpec, ...]]:
    """Paths of untagged fields to every string/bytes array present at ``version``."""
    out = []
    for f in cls._fields:
        if not f.present_in(version) or f.tag is not None:
            continue
        if f.kind == "struct" and f.struct is not None:
            out += _paths(f.struct, version, (*prefix, f))
        elif f.is_array and f.kind in ("string", "bytes"):
            out.append((*prefix, f))
    return out


TARGETS = [(cls, v, path) for cls, v in CASES for path in _paths(cls, v)]


def _plant(msg: Struct, path: tuple[FieldSpec, ...], value: Any) -> None:
    """Make the path exist (one element per array on it) and put ``value`` first in its array."""
    obj: Any = msg
    for f in path[:-1]:
        cur = getattr(obj, f.attr)
        if f.is_array:
            if not cur:
                assert f.struct is not None
                cur = [f.struct()]
                setattr(obj, f.attr, cur)
            obj = cur[0]
        else:
            if cur is None:
                assert f.struct is not None
                cur = f.struct()
                setattr(obj, f.attr, cur)
            obj = cur
    last = path[-1]
    cur = getattr(obj, last.attr) or []
    setattr(obj, last.attr, [value, *cur])


def _wire(value: str, kind: str, compact: bool) -> bytes:
    raw = value.encode()
    if compact:
        out = bytearray()
        _codec_support.write_uvarint(out, len(raw) + 1)
        return bytes(out) + raw
    return len(raw).to_bytes(2 if kind == "string" else 4, "big") + raw


@pytest.mark.parametrize(("cls", "version", "path"), TARGETS,
                         ids=[f"{c.__name__}-v{v}-{'.'.join(f.name for f in p)}" for c, v, p in TARGETS])
def test_a_null_array_element_is_a_decode_error(cls: type[Message], version: int,
                                                path: tuple[FieldSpec, ...]) -> None:
    kind = path[-1].kind
    compact = cls.is_flexible(version) and not path[-1].never_compact
    probe: Any = PROBE if kind == "string" else PROBE.encode()
    planted = _wire(PROBE, kind, compact)
    null = b"\x00" if compact else (b"\xff\xff" if kind == "string" else b"\xff\xff\xff\xff")

    def check(msg: Message) -> None:
        _plant(msg, path, probe)
        raw = msg.encode(version)
        assert raw.count(planted) == 1
        bad = raw.replace(planted, null)
        with pytest.raises(DecodeError, match="non-nullable"):
            cls.decode(bad, version)
        with pytest.raises(EncodeError, match="cannot be null"):
            _plant(msg, path, None)
            msg.encode(version)

    run_examples(check, message_strategy(cls, version).filter(lambda m: PROBE not in repr(m)), max_examples=3)


def test_the_target_list_covers_the_fields_the_issue_found() -> None:
    names = {(c.__name__, ".".join(f.name for f in p)) for c, _, p in TARGETS}
    assert ("DeleteTopicsRequest", "TopicNames") in names
    assert ("FindCoordinatorRequest", "CoordinatorKeys") in names
    assert ("ListGroupsRequest", "StatesFilter") in names
