"""The C decoder (kwire/protocol/_cdecode.c) returns what the generated Python decoders return.

For every message at every version: Hypothesis-drawn messages decode to equal values of the
same types (lists, str, bytes, records as slices of the input's type, UUID, bool, float,
unknown tags), from bytes, bytearray and memoryview; truncated, mutated, extended and random
bytes end the same way in both (the same message, or a DecodeError with the same reason,
offset, field, message, api key and version). ``stats()["mismatch"]`` counts the inputs the C
decoder failed but the Python one decoded; it must stay 0. Skipped when the extension is not
built or is disabled (``KWIRE_NO_EXTENSIONS=1``); the suites under tests/protocol run either way.
"""

from __future__ import annotations

import array
import importlib
import os
import pkgutil
import random
import struct
import subprocess
import sys
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import strategies as st

import kwire.protocol.data as data_pkg
import kwire.protocol.messages as messages_pkg
from kwire.errors import DecodeError
from kwire.fuzz.strategies import message_strategy
from kwire.protocol import _message
from kwire.protocol._message import Message, Struct, cdecode_enabled, decode_python
from kwire.protocol.messages.fetch import FetchResponse
from kwire.protocol.messages.metadata import MetadataResponse
from kwire.protocol.messages.produce import ProduceRequest
from kwire.protocol.registry import all_apis
from tests.hypothesis_support import run_examples

pytestmark = pytest.mark.skipif(not cdecode_enabled(), reason="C decoder not built, or KWIRE_NO_EXTENSIONS=1")


def _all_messages() -> list[tuple[type[Message], int]]:
    out = []
    for pkg in (messages_pkg, data_pkg):
        for info in pkgutil.iter_modules(pkg.__path__):
            mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
            for name in mod.__all__:
                cls = getattr(mod, name)
                if issubclass(cls, Message) and cls.VALID_VERSIONS is not None:
                    lo, hi = cls.VALID_VERSIONS
                    out.extend((cls, v) for v in range(lo, hi + 1))
    return out


CASES = _all_messages()


def _stats() -> dict[str, int]:
    return _message._cdecode.stats()  # type: ignore[no-any-return]


def _same(a: Any, b: Any, where: str = "") -> None:
    """Equal values of the same types, all the way down (floats compared bit for bit)."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, Struct):
        for name in (*(f.attr for f in a._fields), "unknown_tagged_fields"):
            _same(getattr(a, name), getattr(b, name), f"{where}.{name}")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float):
        assert struct.pack(">d", a) == struct.pack(">d", b), where
    elif isinstance(a, memoryview):
        assert a.tobytes() == b.tobytes(), where
    else:
        assert a == b, where


def _outcome(fn: Callable[[], Any]) -> tuple[Any, ...]:
    try:
        return ("ok", fn())
    except DecodeError as e:
        return ("DecodeError", e.reason, e.offset, e.field, e.message, e.api_key, e.api_version, str(e))
    except Exception as e:  # other than DecodeError only for inputs the decoders never promise to take
        return (type(e).__name__, str(e))


def _check(cls: type[Message], version: int, buf: Any, *, valid: bool = False) -> None:
    """``cls.decode`` (C) and the Python decoder end the same way on ``buf``."""
    before = _stats()
    got = _outcome(lambda: cls.decode(buf, version))
    after = _stats()
    want = _outcome(lambda: decode_python(cls, buf, version))
    assert after["mismatch"] == before["mismatch"], "C failed where Python decoded"
    assert got[0] == want[0], (got, want)
    if got[0] == "ok":
        _same(got[1], want[1], cls.__name__)
        if valid:
            assert got[1] == want[1]
            assert after["decoded"] == before["decoded"] + 1, "the C decoder did not decode it"
    else:
        assert got == want


@pytest.mark.parametrize(("cls", "version"), CASES, ids=[f"{c.__name__}-v{v}" for c, v in CASES])
def test_c_decoder_matches_python(cls: type[Message], version: int) -> None:
    # A fresh @given per case (tests/hypothesis_support.py says why).
    run_examples(lambda drawn: _c_matches_python(cls, version, *drawn),
                 st.tuples(message_strategy(cls, version), st.randoms(use_true_random=False)), max_examples=3)


def _c_matches_python(cls: type[Message], version: int, msg: Message, rnd: Any) -> None:
    raw = msg.encode(version)
    for buf in (raw, bytearray(raw), memoryview(raw)):
        _check(cls, version, buf, valid=True)
    # decode_from at an offset inside a larger buffer
    pre = bytes(rnd.randrange(256) for _ in range(3))
    c_obj = cls.decode_from(pre + raw + b"\x00", 3, version)
    py_obj = cls._decoders[version](pre + raw + b"\x00", 3)
    _same(c_obj, py_obj)
    # bad input: truncations, single-byte changes, a trailing byte, random bytes
    bad = [raw + b"\x00", bytes(rnd.randrange(256) for _ in range(rnd.randrange(48)))]
    if raw:
        bad += [raw[: rnd.randrange(len(raw))] for _ in range(4)]
        for _ in range(4):
            m = bytearray(raw)
            m[rnd.randrange(len(m))] = rnd.choice((0, 1, 0x7F, 0x80, 0xFF, rnd.randrange(256)))
            bad.append(bytes(m))
    for b in bad:
        _check(cls, version, b)
    _check(cls, version, memoryview(bad[-1]))


def test_every_message_and_version_is_covered() -> None:
    covered = {(c.__name__, v) for c, v in CASES}
    for info in all_apis():
        if info.removed:
            continue
        for v in range(info.min_version, info.max_version + 1):
            assert (info.request_name, v) in covered and (info.response_name, v) in covered
    assert {"RequestHeader", "ResponseHeader", "EndTxnMarker"} <= {c.__name__ for c, _ in CASES}


def _fetch_v16() -> bytes:
    F = FetchResponse
    parts = [F.PartitionData(partition_index=p, records=b"x" * 8) for p in range(3)]  # type: ignore[attr-defined]
    return F(responses=[F.FetchableTopicResponse(topic_id=uuid.UUID(int=5), partitions=parts)]).encode(16)  # type: ignore[attr-defined]


def test_defaults_are_new_objects_per_field_and_per_message() -> None:
    raw = _fetch_v16()
    a, b = FetchResponse.decode(raw, 16), FetchResponse.decode(raw, 16)
    pa, pb = a.responses[0].partitions, b.responses[0].partitions
    # absent tagged structs: a fresh default each time, never shared
    assert pa[0].diverging_epoch == FetchResponse.EpochEndOffset()  # type: ignore[attr-defined]
    assert pa[0].diverging_epoch is not pa[1].diverging_epoch
    assert pa[0].current_leader is not pb[0].current_leader
    pa[0].diverging_epoch.epoch = 9
    assert pa[1].diverging_epoch.epoch == -1 and pb[0].diverging_epoch.epoch == -1
    # fields absent in the version: new lists
    old = MetadataResponse.decode(MetadataResponse(topics=[MetadataResponse.MetadataResponseTopic(  # type: ignore[attr-defined]
        partitions=[MetadataResponse.MetadataResponsePartition()] * 2)]).encode(4), 4)  # type: ignore[attr-defined]
    p0, p1 = old.topics[0].partitions
    assert p0.offline_replicas == [] and p0.offline_replicas is not p1.offline_replicas


def test_records_are_slices_of_the_input() -> None:
    raw = _fetch_v16()
    view = memoryview(raw)
    rec = FetchResponse.decode(view, 16).responses[0].partitions[0].records
    assert type(rec) is memoryview and rec.obj is raw and rec.tobytes() == b"x" * 8
    assert type(FetchResponse.decode(bytearray(raw), 16).responses[0].partitions[0].records) is bytearray
    assert type(FetchResponse.decode(raw, 16).responses[0].partitions[0].records) is bytes


def test_inputs_the_c_decoder_does_not_take_go_to_python() -> None:
    raw = ProduceRequest(transactional_id="t", topic_data=[]).encode(9)
    ProduceRequest.decode(raw, 9)
    fn = ProduceRequest._fast_decoders[9]
    py = ProduceRequest._decoders[9]
    assert type(fn).__name__ == "Decoder" and fn.fallback is py
    odd: list[tuple[Any, Any]] = [
        (raw, True),  # a bool position
        (raw, -1), (raw, len(raw) + 1), (raw, 2**70),
        (memoryview(raw).cast("b"), 0),  # signed bytes
        (memoryview(raw + raw).cast("B", (2, len(raw))), 0),  # two dimensions
        (memoryview(raw * 2)[::2], 0),  # not contiguous
        (array.array("B", raw), 0),
        (type("B", (bytes,), {})(raw), 0),
        ("not bytes", 0),
    ]
    for buf, pos in odd:
        before = _stats()
        assert _outcome(lambda b=buf, p=pos: fn(b, p)) == _outcome(lambda b=buf, p=pos: py(b, p))
        assert _stats()["mismatch"] == before["mismatch"]
    released = memoryview(raw)
    released.release()
    assert _outcome(lambda: fn(released, 0)) == _outcome(lambda: py(released, 0))
    with pytest.raises(TypeError):
        fn(raw)
    assert _outcome(lambda: fn(buf=raw, pos=0)) == _outcome(lambda: py(buf=raw, pos=0))


def test_corrupt_tables_are_rejected_or_decode_safely() -> None:
    """Program() checks every index; a table it accepts never makes the decoder crash."""
    mod = sys.modules[MetadataResponse.__module__]
    types = tuple(getattr(mod, n) for n in mod._CTYPES)
    slots = tuple((*(f.attr for f in t._fields), "unknown_tagged_fields") for t in types)
    Program, Decoder = _message._cdecode.Program, _message._cdecode.Decoder
    raws = [MetadataResponse().encode(12), MetadataResponse(topics=[MetadataResponse.MetadataResponseTopic(  # type: ignore[attr-defined]
        partitions=[MetadataResponse.MetadataResponsePartition(replica_nodes=[1, 2])])]).encode(12)]  # type: ignore[attr-defined]
    rnd = random.Random(7)
    built = 0
    for _ in range(400):
        progs = [list(p) for p in mod._CPROGS]
        defaults = [list(d) for d in mod._CDEFAULTS]
        target = rnd.choice((progs, progs, defaults))
        row = rnd.choice(target)
        row[rnd.randrange(len(row))] = rnd.choice((-1, 0, 1, 2, 5, 13, 14, 15, 200, rnd.randrange(40)))
        try:
            prog = Program(types, slots, tuple(map(tuple, defaults)), mod._CCONSTS, tuple(map(tuple, progs)))
        except (ValueError, TypeError):
            continue
        built += 1
        dec = Decoder(prog, mod._CENTRIES["MetadataResponse"][1][12], MetadataResponse._decoders[12])
        for raw in raws:
            _outcome(lambda r=raw, d=dec: d(r, 0))
    assert built > 0
    with pytest.raises(TypeError, match="slotted layout"):
        Program((MetadataResponse,), (("throttle_time_ms", "unknown_tagged_fields"),), ((0, 0, 0, 0),), (None,), ())
    with pytest.raises(ValueError, match="refer to themselves"):
        Program(types, slots, mod._CDEFAULTS, mod._CCONSTS, ((5, 0, 1, 13, 0, 0, 0, 0, 0),))


def test_no_extensions_env_var_selects_the_python_decoders() -> None:
    code = ("from kwire.protocol._message import cdecode_enabled; from kwire.protocol.messages.fetch import "
            "FetchResponse as F; F.decode(F().encode(16), 16); print(cdecode_enabled(), type(F._fast_decoders[16]).__name__)")
    env = dict(os.environ, KWIRE_NO_EXTENSIONS="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "function"]
