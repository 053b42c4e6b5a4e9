"""Seed frames and the mutations the fuzzer applies to them.

A *payload* is one request frame without its 4-byte size prefix (header + body). Seeds come
from ``fixtures/`` (golden and recorded frames, earlier fuzz findings) and from every request
message at every version with its default field values, so each API the codec knows is
reached even without a fixture. Mutations work on bytes and know only the request header
layout (api key, version, correlation id): everything past it is attacked blind, which is
what a broken or hostile client does.
"""

from __future__ import annotations

import json
import random
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from kwire.errors import KwireError

__all__ = ["MUTATIONS", "Seed", "default_seeds", "fixture_seeds", "mutate", "payload_of"]

# Values that sit on the edges the decoder checks (sizes, counts, varint widths).
_INTERESTING_32 = (0, 1, -1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, -0x80000000, 0x10000000, 0x7FFFFFFE)
_INTERESTING_8 = (0, 1, 0x7F, 0x80, 0xFF)


@dataclass(slots=True, frozen=True)
class Seed:
    """A request payload to start mutating from, and where it came from."""

    api_key: int
    api_version: int
    payload: bytes
    origin: str


def payload_of(body: object, version: int, correlation_id: int = 1, client_id: str | None = "fuzz") -> bytes:
    """Header + body of a request message."""
    from kwire.protocol import encode_request

    return encode_request(body, version, correlation_id=correlation_id, client_id=client_id, size_prefix=False)


def _payload_from_sidecar(side: dict[str, object], body: bytes) -> bytes | None:
    frame = side.get("frame")
    if isinstance(frame, str):
        return bytes.fromhex(frame)
    from kwire.protocol import request_header_version, schema_class

    key, version = int(side["api_key"]), int(side["api_version"])  # type: ignore[call-overload]
    header = schema_class("RequestHeader")(request_api_key=key, request_api_version=version, correlation_id=1,
                                           client_id="fuzz")
    out = bytearray()
    header.encode_into(out, request_header_version(key, version))
    return bytes(out) + body


def fixture_seeds(root: Path) -> list[Seed]:
    """Every request frame under ``root`` (``<api>/v<N>/<case>.bin`` + ``.json``, and ``fuzz/*.json``)."""
    seeds = []
    for side_path in sorted(root.rglob("*.json")):
        try:
            side = json.loads(side_path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(side, dict) or side.get("kind") not in ("request", "crash", "hang") \
                or "api_key" not in side or "api_version" not in side:
            continue
        bin_path = side_path.with_suffix(".bin")
        body = bin_path.read_bytes() if bin_path.exists() else b""
        try:
            payload = _payload_from_sidecar(side, body)
        except (KwireError, ValueError, KeyError):
            continue
        if payload:
            seeds.append(Seed(int(side["api_key"]), int(side["api_version"]), payload,
                              str(side_path.relative_to(root))))
    return seeds


def default_seeds() -> list[Seed]:
    """Every request message the codec knows, at every version, with default field values."""
    from kwire.protocol import all_apis

    seeds = []
    for info in all_apis():
        if info.versions is None:
            continue  # a message the codec has no request versions for
        for version in range(info.versions[0], info.versions[1] + 1):
            try:
                payload = payload_of(info.request_class(), version)
            except (KwireError, ValueError, TypeError, struct.error):
                continue
            seeds.append(Seed(info.key, version, payload, f"default {info.name} v{version}"))
    return seeds


# --- mutations: (rng, payload, other seeds) -> payload -----------------------------------------

_HEADER = 8  # api key (2), version (2), correlation id (4)
Mutation = Callable[[random.Random, bytes, list[Seed]], bytes]


def _body_pos(rng: random.Random, p: bytes) -> int:
    return rng.randrange(min(_HEADER, len(p)), len(p)) if len(p) > _HEADER else 0


def bit_flip(rng: random.Random, p: bytes, _: list[Seed]) -> bytes:
    b = bytearray(p)
    for _i in range(rng.choice((1, 1, 2, 4))):
        if b:
            i = _body_pos(rng, p)
            b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def interesting_byte(rng: random.Random, p: bytes, _: list[Seed]) -> bytes:
    b = bytearray(p)
    if b:
        b[_body_pos(rng, p)] = rng.choice(_INTERESTING_8)
    return bytes(b)


def lying_count(rng: random.Random, p: bytes, _: list[Seed]) -> bytes:
    """Overwrite 4 bytes (an array count, string or bytes length) with an edge value."""
    if len(p) < _HEADER + 4:
        return p
    i = rng.randrange(_HEADER, len(p) - 3)
    return p[:i] + struct.pack(">i", rng.choice(_INTERESTING_32)) + p[i + 4 :]


def lying_short(rng: random.Random, p: bytes, _: list[Seed]) -> bytes:
    """Overwrite 2 bytes (a string length, an int16 field) with an edge value."""
    if len(p) < _HEADER + 2:
        return p
    i = rng.randrange(_HEADER, len(p) - 1)
    return p[:i] + struct.pack(">h", rng.choice((-1, 0, 1, 0x7FFF, -0x8000))) + p[i + 2 :]


def lying_varint(rng: random.Random, p: bytes, _: list[Seed]) -> bytes:
    """Insert a long or unterminated varint (compact lengths, tagged-field counts)."""
    i = _body_pos(rng, p)
    junk = rng.choice((b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\xff\xff", b"\x80\x80\x80\x80\x80\x01", b"\xfe\xff\x03"))
    return p[:i] + junk + p[i:]


def truncate(rng: random.Random, p: bytes, _: list[Seed]) -> bytes:
    return p[: rng.randrange(0, len(p))] if p else p


def extend(rng: random.Random, p: bytes, _: list[Seed]) -> bytes:
    return p + rng.randbytes(rng.randrange(1, 64))


def delete_range(rng: random.Random, p: bytes, _: list[Seed]) -> bytes:
    if len(p) <= _HEADER + 1:
        return p
    i = rng.randrange(_HEADER, len(p))
    return p[:i] + p[i + rng.randrange(1, 1 + min(32, len(p) - i)) :]


def duplicate_range(rng: random.Random, p: bytes, _: list[Seed]) -> bytes:
    if len(p) <= _HEADER + 1:
        return p
    i = rng.randrange(_HEADER, len(p))
    j = min(len(p), i + rng.randrange(1, 64))
    return p[:j] + p[i:j] * rng.randrange(1, 4) + p[j:]


def version_swap(rng: random.Random, p: bytes, _: list[Seed]) -> bytes:
    if len(p) < 4:
        return p
    v = rng.choice((-1, 0, 1, 2, 3, 4, 5, 7, 9, 11, 12, 13, 15, 17, 100, 0x7FFF))
    return p[:2] + struct.pack(">h", v) + p[4:]


def api_key_swap(rng: random.Random, p: bytes, seeds: list[Seed]) -> bytes:
    if len(p) < 2:
        return p
    k = rng.choice((-1, 0, 1, 3, 8, 10, 11, 18, 19, 22, 32, 60, 68, 78, 79, 1000, 0x7FFF))
    return struct.pack(">h", k) + p[2:]


def random_tagged_fields(rng: random.Random, p: bytes, _: list[Seed]) -> bytes:
    """Append or insert a tagged-field block: count, (tag, size, data)... as unsigned varints."""
    n = rng.randrange(1, 4)
    block = bytearray([n])
    for _i in range(n):
        tag = rng.choice((0, 1, 2, 3, 127, 128, 300, 16384))
        data = rng.randbytes(rng.randrange(0, 6))
        block += _uvarint(tag) + _uvarint(len(data) if rng.random() < 0.8 else len(data) + 50) + data
    i = len(p) if rng.random() < 0.5 else _body_pos(rng, p)
    return p[:i] + bytes(block) + p[i:]


def splice(rng: random.Random, p: bytes, seeds: list[Seed]) -> bytes:
    """The header and front of one seed with the tail of another (same api, other version or case)."""
    if not seeds or len(p) <= _HEADER:
        return p
    other = rng.choice(seeds).payload
    if len(other) <= _HEADER:
        return p
    return p[: rng.randrange(_HEADER, len(p))] + other[rng.randrange(_HEADER, len(other)) :]


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


MUTATIONS: dict[str, Mutation] = {
    "bit_flip": bit_flip,
    "interesting_byte": interesting_byte,
    "lying_count": lying_count,
    "lying_short": lying_short,
    "lying_varint": lying_varint,
    "truncate": truncate,
    "extend": extend,
    "delete_range": delete_range,
    "duplicate_range": duplicate_range,
    "version_swap": version_swap,
    "api_key_swap": api_key_swap,
    "random_tagged_fields": random_tagged_fields,
    "splice": splice,
}


def mutate(rng: random.Random, seed: Seed, seeds: list[Seed]) -> Iterator[tuple[str, bytes]]:
    """One mutated payload (name of the mutations applied, bytes), stacking 1-3 mutations."""
    names = rng.choices(list(MUTATIONS), k=rng.choice((1, 1, 1, 2, 3)))
    p = seed.payload
    for n in names:
        p = MUTATIONS[n](rng, p, seeds)
    yield "+".join(names), p
