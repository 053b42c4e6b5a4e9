"""The encoders' fast paths for flat structs (integers and integer arrays): the one-call C
writer of a whole array (``_cdecode.pack_flat``) and the generated one-``pack`` Python path give
the bytes, or the EncodeError, of the field-by-field path, whatever the values (Kafka's
MetadataResponsePartition layout, clients/src/main/resources/common/message/MetadataResponse.json)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kwire.errors import EncodeError
from kwire.protocol import _codec_support
from kwire.protocol.messages import metadata as meta_mod
from kwire.protocol.messages.metadata import MetadataResponse

M = MetadataResponse
ints = st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([2**31, -(2**31) - 1, 2**40, True]),
                 st.just(None), st.just("1"))
arrays = st.one_of(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=3),
                   st.lists(st.integers(0, 5), min_size=126, max_size=130),
                   st.lists(ints, max_size=3), st.just(None), st.tuples(st.integers(0, 9)))
partitions = st.builds(
    M.MetadataResponsePartition,  # type: ignore[attr-defined]
    error_code=st.one_of(st.integers(-(2**15), 2**15 - 1), st.just(2**15)), partition_index=ints,
    leader_id=st.integers(-1, 5), leader_epoch=ints, replica_nodes=arrays, isr_nodes=arrays,
    offline_replicas=arrays,
    unknown_tagged_fields=st.one_of(st.none(), st.just([]), st.just([(5, b"x")])),
)


def _outcome(msg: Any, version: int) -> object:
    try:
        return msg.encode(version)
    except EncodeError as exc:
        return type(exc).__name__, str(exc)


def _without_fast_paths(msg: Any, version: int, monkeypatch: pytest.MonkeyPatch) -> object:
    with monkeypatch.context() as m:
        m.setattr(meta_mod, "_pack_flat", _codec_support._pack_flat_py)
        m.setattr(meta_mod, "_FL3", _NeverCached())
        m.setattr(meta_mod, "_FL0", _NeverCached())
        return _outcome(msg, version)


class _NeverCached(dict):  # type: ignore[type-arg]
    """A Struct cache that is always empty and refuses entries: forces the fast path's miss."""

    def __setitem__(self, key: object, value: object) -> None:
        pass


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(partitions, max_size=4), version=st.sampled_from([0, 5, 9, 12]))
def test_fast_paths_write_what_the_field_by_field_path_writes(parts: list, version: int) -> None:
    msg = M(throttle_time_ms=0, brokers=[], cluster_id="c", controller_id=1, topics=[
        M.MetadataResponseTopic(error_code=0, name="t", partitions=parts)])  # type: ignore[attr-defined]
    with pytest.MonkeyPatch.context() as mp:
        assert _outcome(msg, version) == _without_fast_paths(msg, version, mp)


def test_pack_flat_takes_back_what_it_wrote_when_an_element_is_not_flat() -> None:
    pack_flat = _codec_support.pack_flat
    if pack_flat is _codec_support._pack_flat_py:
        pytest.skip("C extension not built")
    good = M.MetadataResponsePartition(partition_index=1, replica_nodes=[1, 2])  # type: ignore[attr-defined]
    bad = M.MetadataResponsePartition(partition_index=2**31, replica_nodes=[1])  # type: ignore[attr-defined]
    names = ("error_code", "partition_index", "leader_id", "replica_nodes")
    out = bytearray(b"head")
    assert pack_flat(out, [good, good], names, "hii[i", True) is True
    assert bytes(out[4:]) == (b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x00\x00\x00" + b"\x03"
                              + b"\x00\x00\x00\x01\x00\x00\x00\x02" + b"\x00") * 2
    before = bytes(out)
    assert pack_flat(out, [good, bad], names, "hii[i", True) is False
    assert bytes(out) == before
    assert pack_flat(out, (good,), names, "hii[i", True) is False  # only lists are taken
    with pytest.raises(ValueError):
        pack_flat(out, [good], names, "hi", True)  # a layout that does not match the names
