"""``kwire replay``: recorded requests replayed against a fresh broker give the recorded answers
(varying fields aside); a changed answer is reported and fails the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kwire.cli import main
from kwire.cli.replay import diff_values
from kwire.conformance.wire_client import WireClient
from kwire.control import Broker, BrokerConfig
from kwire.recording import export_exchanges
from kwire.records import BatchBuilder


def _record(root: Path) -> None:
    with Broker(BrokerConfig(log_connections=False, settings={"auto.create.topics.enable": "true"})) as b:
        b.start_recording()
        with WireClient(b.bootstrap).connect() as c:
            c.request(18, 3, {"ClientSoftwareName": "replay-test", "ClientSoftwareVersion": "1"})
            # Metadata creates the topic, so a fresh broker sees the same sequence of events.
            c.request(3, 9, {"Topics": [{"Name": "r"}], "AllowAutoTopicCreation": True})
            init = c.request(22, 4, {"TransactionalId": None, "TransactionTimeoutMs": 60000,
                                     "ProducerId": -1, "ProducerEpoch": -1})
            batch = BatchBuilder(producer_id=init.producer_id, producer_epoch=init.producer_epoch, base_sequence=0)
            batch.append(b"v", key=b"k", timestamp_ms=1_700_000_000_000)
            c.request(0, 9, {"TransactionalId": None, "Acks": -1, "TimeoutMs": 5000, "TopicData": [
                {"Name": "r", "PartitionData": [{"Index": 0, "Records": batch.build().hex()}]}]})
        export_exchanges(b.recorded(), root)


def test_replay_of_a_recording_matches_and_a_changed_answer_is_reported(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _record(tmp_path)
    assert main(["replay", str(tmp_path), "--show-same"]) == 0
    out = capsys.readouterr().out
    assert out.count(": same") == 4 and "4 requests against a fresh kwire broker, 0 answers differ" in out
    [produce] = list(tmp_path.glob("produce/v9/*-response.json"))
    side = json.loads(produce.read_text())
    side["value"]["Responses"][0]["PartitionResponses"][0]["BaseOffset"] = 41
    produce.write_text(json.dumps(side))
    assert main(["replay", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "Responses[0].PartitionResponses[0].BaseOffset: recorded 41, replayed 0" in out
    assert "1 answers differ" in out


def test_diff_ignores_fields_that_vary_between_runs() -> None:
    a = {"ThrottleTimeMs": 5, "MemberId": "m-1", "ErrorCode": 0, "Brokers": [{"Host": "h", "Port": 1, "NodeId": 1}]}
    b = {"ThrottleTimeMs": 0, "MemberId": "m-2", "ErrorCode": 0, "Brokers": [{"Host": "x", "Port": 2, "NodeId": 1}]}
    assert diff_values(a, b) == []
    b["Brokers"][0]["NodeId"] = 2
    assert diff_values(a, b) == ["Brokers[0].NodeId: recorded 1, replayed 2"]
