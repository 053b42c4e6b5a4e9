"""FrameBuffer: whole frames out however the bytes arrive, large frames assembled in a buffer of
their own (fed, or received straight into ``receive_buffer()``), payloads writable."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kwire.errors import FrameTooLargeError
from kwire.protocol.framing import FrameBuffer

BIG = FrameBuffer._DIRECT_AT


def _frames(sizes: list[int]) -> tuple[list[bytes], bytes]:
    payloads = [bytes((i + j) % 251 for j in range(n)) for i, n in enumerate(sizes)]
    return payloads, b"".join(struct.pack(">i", len(p)) + p for p in payloads)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0, 1, 9, 300, BIG - 1, BIG, BIG + 17, 3 * BIG]), min_size=1, max_size=6),
       st.lists(st.integers(1, 2 * BIG), min_size=1, max_size=40), st.booleans())
def test_every_split_yields_the_same_frames(sizes: list[int], cuts: list[int], direct: bool) -> None:
    payloads, stream = _frames(sizes)
    fb = FrameBuffer()
    got: list[bytearray] = []
    pos = 0
    i = 0
    while pos < len(stream):
        n = cuts[i % len(cuts)]
        i += 1
        into = fb.receive_buffer() if direct else None
        if into is not None:
            # What the server does with recv_into: fill part of the frame's own buffer.
            k = min(n, len(into), len(stream) - pos)
            into[:k] = stream[pos : pos + k]
            into.release()
            fb.received(k)
        else:
            k = min(n, len(stream) - pos)
            fb.feed(stream[pos : pos + k])
        pos += k
        got += fb.frames()
    assert got == payloads
    assert all(isinstance(p, bytearray) for p in got)
    assert fb.pending == 0 and fb.receive_buffer() is None


def test_a_large_frame_gets_its_own_buffer_and_that_buffer_is_the_payload() -> None:
    payloads, stream = _frames([5 * BIG])
    fb = FrameBuffer()
    fb.feed(stream[:1000])
    assert fb.next_frame() is None and fb.pending == 1000
    pos = 1000
    own = None
    while (into := fb.receive_buffer()) is not None:
        k = len(into)
        into[:] = stream[pos : pos + k]
        own = into.obj
        into.release()
        fb.received(k)
        pos += k
    assert pos == len(stream)
    frame = fb.next_frame()
    assert frame is own and frame == payloads[0]


def test_a_size_prefix_alone_pins_no_more_than_the_direct_threshold() -> None:
    """Issue 12.3: 14 bytes claiming 100 MiB used to allocate (and zero) 100 MiB at once."""
    fb = FrameBuffer()
    fb.feed(struct.pack(">i", 100 * 1024 * 1024) + b"0123456789")
    assert fb.next_frame() is None
    assert fb.allocated <= BIG
    into = fb.receive_buffer()
    assert into is not None and len(into) <= BIG
    into.release()


def test_the_frame_buffer_grows_with_what_arrives_at_most_doubling() -> None:
    size = 64 * BIG
    fb = FrameBuffer()
    fb.feed(struct.pack(">i", size))
    assert fb.next_frame() is None
    received = 0
    for chunk in (10, BIG, 3 * BIG, 7 * BIG):
        fb.feed(b"x" * chunk)
        received += chunk
        assert fb.allocated <= max(BIG, 2 * received)
    assert fb.next_frame() is None
    fb.feed(b"y" * (size - received))
    frame = fb.next_frame()
    assert frame is not None and len(frame) == size and frame[-1:] == b"y"


def test_received_cannot_claim_more_than_the_frame_holds() -> None:
    fb = FrameBuffer()
    fb.feed(struct.pack(">i", BIG) + b"x")
    assert fb.next_frame() is None
    with pytest.raises(ValueError):
        fb.received(BIG)
    with pytest.raises(ValueError):
        FrameBuffer().received(1)


def test_the_size_limit_holds_for_large_frames_before_any_allocation() -> None:
    fb = FrameBuffer(max_frame_bytes=BIG)
    fb.feed(struct.pack(">i", BIG + 1))
    with pytest.raises(FrameTooLargeError):
        fb.next_frame()
    assert fb.receive_buffer() is None
