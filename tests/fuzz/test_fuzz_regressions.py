"""Every input ``kwire fuzz`` ever tripped the broker with (``fixtures/fuzz/``), replayed against a
fresh broker: no traceback, and the connection either closes or keeps answering in order (the
frame's own answer, if it is owed one, then an ApiVersions sent right behind it)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from kwire.conformance.wire_client import WireClient, WireClosed
from kwire.control import Broker, BrokerConfig
from kwire.fuzz.runner import _expects_answer

FIXTURES = sorted((Path(__file__).resolve().parents[2] / "fixtures" / "fuzz").glob("*.json"))


@pytest.mark.parametrize("sidecar", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_fuzz_finding_no_longer_trips_the_broker(sidecar: Path, caplog: pytest.LogCaptureFixture) -> None:
    side = json.loads(sidecar.read_text())
    frame = bytes.fromhex(side["frame"])
    caplog.set_level(logging.ERROR, logger="kwire.broker")
    with Broker(BrokerConfig(log_connections=False)) as broker, WireClient(broker.bootstrap, timeout_s=5) as c:
        broker.create_topic("fuzz", 3)
        c.send_frame(frame)
        after = c.send(18, 3, {"ClientSoftwareName": "regression", "ClientSoftwareVersion": "1"},
                       correlation_id=0x7FFF0000)
        owed = [int.from_bytes(frame[4:8], "big", signed=True)] if _expects_answer(frame) else []
        try:
            answers = [int.from_bytes(c.recv_frame()[:4], "big", signed=True) for _ in range(len(owed) + 1)]
        except WireClosed:
            answers = None  # closing is a legitimate answer to a bad frame
        if answers is not None:
            assert answers == [*owed, after]
    assert not [r for r in caplog.records if r.exc_info], side["provenance"]
