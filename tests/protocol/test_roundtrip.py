"""Every message at every version survives encode -> decode -> encode (Hypothesis, from schemas)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import kwire.protocol.data as data_pkg
import kwire.protocol.messages as messages_pkg
from kwire.fuzz.strategies import message_strategy
from kwire.protocol._message import Message
from kwire.protocol.registry import all_apis
from tests.hypothesis_support import run_examples


def _all_messages() -> list[tuple[type[Message], int]]:
    out = []
    for pkg in (messages_pkg, data_pkg):
        for info in pkgutil.iter_modules(pkg.__path__):
            mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
            for name in mod.__all__:
                cls = getattr(mod, name)
                if not issubclass(cls, Message) or cls.VALID_VERSIONS is None:
                    continue
                lo, hi = cls.VALID_VERSIONS
                out.extend((cls, v) for v in range(lo, hi + 1))
    return out


CASES = _all_messages()


@pytest.mark.parametrize(("cls", "version"), CASES, ids=[f"{c.__name__}-v{v}" for c, v in CASES])
def test_roundtrip(cls: type[Message], version: int) -> None:
    def check(msg: Message) -> None:
        raw = msg.encode(version)
        back = cls.decode(raw, version)
        assert back == msg
        assert back.encode(version) == raw
        # A memoryview input decodes the same (records stay views of it).
        assert cls.decode(memoryview(raw), version).encode(version) == raw

    run_examples(check, message_strategy(cls, version), max_examples=8)


def test_every_api_key_and_version_in_the_spec_set_is_covered() -> None:
    covered = {(c.__name__, v) for c, v in CASES}
    for info in all_apis():
        if info.removed:
            continue
        for v in range(info.min_version, info.max_version + 1):
            assert (info.request_name, v) in covered
            assert (info.response_name, v) in covered
    names = {c.__name__ for c, _ in CASES}
    assert {"RequestHeader", "ResponseHeader", "EndTxnMarker", "TransactionLogValue"} <= names
    assert ("ShareFetchRequest", 2) in covered and ("ShareAcknowledgeResponse", 2) in covered
