"""Records by reference: responses that carry stored batches without copying them.

A fetch answer is mostly record batches the broker already holds. Joining them into one
buffer, then into the encoded message, then into the frame copies every byte three times, and
for fresh multi-megabyte buffers the page faults cost more than the copies. A ``RecordChain``
stands for the concatenation of its parts. Encoding one into a ``SpliceBuffer`` notes where it
belongs instead of copying it, and ``FramePieces`` hands the socket the message as a list of
buffers for one ``sendmsg``. Encoding a chain into a plain bytearray copies it, as bytes would.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["Buffer", "RecordChain", "SpliceBuffer", "FramePieces", "splice", "as_bytes"]

Buffer = bytes | bytearray | memoryview


class RecordChain:
    """The records field value made of ``parts`` (whole batches), in order."""

    __slots__ = ("parts", "size")

    def __init__(self, parts: Iterable[Buffer] = (), size: int | None = None) -> None:
        self.parts: list[Buffer] = list(parts)
        # ``size``: the parts' total when the caller already counted it.
        self.size = sum(len(p) for p in self.parts) if size is None else size

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        return b"".join(self.parts)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RecordChain):
            return self.size == other.size and bytes(self) == bytes(other)
        if isinstance(other, (bytes, bytearray, memoryview)):
            return self.size == len(other) and bytes(self) == bytes(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RecordChain({len(self.parts)} parts, {self.size} bytes)"


class SpliceBuffer(bytearray):
    """An encoder's output that records where chains go instead of copying them."""

    __slots__ = ("splices",)

    def __init__(self, initial: bytes = b"") -> None:
        super().__init__(initial)
        self.splices: list[tuple[int, list[Buffer]]] = []


def splice(out: bytearray, chain: RecordChain) -> None:
    """Called by generated encoders for a records field holding a chain."""
    if not chain.parts:
        return  # nothing to place (a fetch with nothing new): the frame stays one buffer
    if type(out) is SpliceBuffer:
        out.splices.append((len(out), chain.parts))
    else:
        for p in chain.parts:
            out += p


class FramePieces:
    """One encoded frame as buffers to send in order (the spliced parts are not copied)."""

    __slots__ = ("pieces", "size")

    def __init__(self, buf: SpliceBuffer) -> None:
        view = memoryview(buf)
        pieces: list[Buffer] = []
        prev = 0
        size = len(buf)
        for pos, parts in buf.splices:
            if pos > prev:
                pieces.append(view[prev:pos])
            pieces.extend(parts)
            size += sum(len(p) for p in parts)
            prev = pos
        if prev < len(buf):
            pieces.append(view[prev:])
        self.pieces = pieces
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        return b"".join(self.pieces)

    def __repr__(self) -> str:
        return f"FramePieces({len(self.pieces)} pieces, {self.size} bytes)"


def as_bytes(data: bytes | FramePieces) -> bytes:
    """The frame as one bytes object (for recording, tests and other slow paths)."""
    return data if isinstance(data, bytes) else bytes(data)
