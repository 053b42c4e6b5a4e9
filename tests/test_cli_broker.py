"""``kwire broker`` as a user runs it: prints the bootstrap servers, logs connections, stops on SIGTERM."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kwire.protocol import decode_response, encode_request
from kwire.protocol.messages.metadata import MetadataRequest
from tests.broker.server.test_wire_edge_cases import TIMEOUT_S


def test_broker_command_serves_and_stops_cleanly_on_sigterm() -> None:
    import socket
    import struct

    proc = subprocess.Popen([sys.executable, "-m", "kwire", "broker", "--port", "0", "--brokers", "2",
                             "--topic", "cli:3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.search(r"bootstrap servers (\S+)", line)
        assert m, line
        servers = m.group(1).split(",")
        assert len(servers) == 2
        host, port = servers[0].split(":")
        with socket.create_connection((host, int(port)), timeout=TIMEOUT_S) as s:
            s.sendall(encode_request(MetadataRequest(topics=None), 12, correlation_id=1))
            size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
            body = decode_response(s.recv(size, socket.MSG_WAITALL), 3, 12).body
            assert [(t.name, len(t.partitions)) for t in body.topics] == [("cli", 3)]
        assert "connection 1 from 127.0.0.1" in proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0
        assert "stopped" in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "kwire", "broker", "--port", "0", "--quiet", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "bootstrap servers" in line, (line, proc.stderr.read() if proc.stderr else "")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        return line + out, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_same_command_restarts_on_its_data_dir(tmp_path: object) -> None:
    """A --topic that the restored data dir already holds with the same partitions is a no-op."""
    data = str(tmp_path) + "/d"  # type: ignore[operator]
    _stop(_start("--data-dir", data, "--topic", "a:2"))
    _stop(_start("--data-dir", data, "--topic", "a:2"))
    proc = _start("--data-dir", data, "--topic", "a:3")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert err.strip().splitlines()[-1] == ("kwire broker: error: --topic a:3: the topic already exists with "
                                            "2 partition(s)")


def test_bad_topic_specs_are_one_line_errors() -> None:
    for spec, msg in [("a:x", "PARTITIONS must be a whole number"), ("a:0", "at least 1"), (":3", "NAME")]:
        proc = _start("--topic", spec)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 2 and len(err.strip().splitlines()) == 1 and msg in err, err
    proc = _start("--topic", "bad name!")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "bad name!" in err and "Traceback" not in err, err


def _launch(*args: str) -> tuple[subprocess.Popen[str], str]:
    import re

    proc = subprocess.Popen([sys.executable, "-m", "kwire", "broker", "--port", "0", "--quiet", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        m = re.search(r"bootstrap servers (\S+)", line)
        if m:
            return proc, m.group(1)


def test_version_and_help() -> None:
    """`kwire --version`; `kwire broker --help` shows defaults and examples."""
    v = subprocess.run([sys.executable, "-m", "kwire", "--version"], capture_output=True, text=True, check=True)
    assert v.stdout.startswith("kwire ")
    h = " ".join(subprocess.run([sys.executable, "-m", "kwire", "broker", "--help"], capture_output=True, text=True,
                                check=True).stdout.split())
    assert "(default: 9092)" in h and "examples:" in h and "--ready-file" in h and "--advertised-host" in h


def test_ready_file_verbose_log_and_advertised_host(tmp_path: Path) -> None:
    """--ready-file holds the address once listening; -v prints a line per request with its errors;
    --advertised-host is what Metadata tells clients."""
    import json

    from kwire.client import WireClient
    from kwire.protocol.messages.metadata import MetadataRequest

    ready = tmp_path / "ready.json"
    proc, bootstrap = _launch("--ready-file", str(ready), "-v", "--advertised-host", "localhost")
    try:
        info = json.loads(ready.read_text())
        assert info["bootstrap"] == bootstrap and info["pid"] == proc.pid
        assert bootstrap.startswith("localhost:")
        with WireClient(bootstrap.replace("localhost", "127.0.0.1")) as c:
            meta = c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="nope")],
                                             allow_auto_topic_creation=False))
        assert [b.host for b in meta.brokers] == ["localhost"]
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "kwire broker: stopped" in err
    lines = [line for line in out.splitlines() if " Metadata v" in line]
    assert lines and "UNKNOWN_TOPIC_OR_PARTITION" in lines[-1] and "client 'kwire'" in lines[-1]


def test_data_dir_restore_summary(tmp_path: Path) -> None:
    """With --data-dir the broker says what it restored (a new one: nothing; --topic is not counted);
    a --data-dir that is a file is a one-line error."""
    proc, _ = _launch("--data-dir", str(tmp_path), "--topic", "t:3")
    assert proc.stdout is not None
    first = proc.stdout.readline()  # the line after the ready line (communicate() would miss it: buffered)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert "nothing to restore, starting afresh" in first
    afile = tmp_path / "a-file"
    afile.write_text("x")
    bad = subprocess.run([sys.executable, "-m", "kwire", "broker", "--data-dir", str(afile)], capture_output=True,
                         text=True, timeout=60, check=False)
    assert bad.returncode != 0 and "is not a directory" in bad.stderr and "Traceback" not in bad.stderr
    proc, _ = _launch("--data-dir", str(tmp_path))
    assert proc.stdout is not None
    out = proc.stdout.readline()
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert "restored 1 topics, 3 partitions" in out


def test_ctrl_c_right_after_start_is_clean() -> None:
    """SIGINT at once after the process starts ends with the same clean message and status 0."""
    proc = subprocess.Popen([sys.executable, "-m", "kwire", "broker", "--port", "0", "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    proc.stdout.readline()  # the ready line: the broker is up
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and err.strip().endswith("kwire broker: stopped"), err


def test_sigusr1_prints_dead_letter_metrics() -> None:
    """SIGUSR1: kwire broker prints KIP-1191's DLQ metrics per share group (and transaction counts)."""
    ck = __import__("pytest").importorskip("confluent_kafka")
    from kwire.client import WireClient
    from kwire.protocol.messages.create_topics import CreateTopicsRequest as CT
    from kwire.protocol.messages.incremental_alter_configs import IncrementalAlterConfigsRequest as IAC

    proc, bootstrap = _launch("--topic", "t:1")
    try:
        with WireClient(bootstrap) as c:
            c.request(CT(topics=[CT.CreatableTopic(name="dlq.g", num_partitions=1, replication_factor=1, configs=[
                CT.CreatableTopicConfig(name="errors.deadletterqueue.group.enable", value="true")])], timeout_ms=5000))
            for key, value in (("share.auto.offset.reset", "earliest"), ("errors.deadletterqueue.topic.name", "dlq.g")):
                c.request(IAC(resources=[IAC.AlterConfigsResource(resource_type=32, resource_name="g", configs=[
                    IAC.AlterableConfig(name=key, config_operation=0, value=value)])]))
        p = ck.Producer({"bootstrap.servers": bootstrap})
        p.produce("t", b"bad")
        assert p.flush(20) == 0
        s = ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": "g", "share.acknowledgement.mode": "explicit",
                              "log_level": 0})
        s.subscribe(["t"])
        got = []
        for _ in range(60):
            got = [m for m in s.poll(0.5) or [] if m.error() is None]
            if got:
                break
        s.acknowledge(got[0], ck.AcknowledgeType.REJECT)
        s.commit_sync()
        s.close()
        proc.send_signal(signal.SIGUSR1)
        assert proc.stdout is not None
        for _ in range(20):
            line = proc.stdout.readline()
            if "dlq group g:" in line:
                break
        assert "records written 1" in line, line
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)


@pytest.mark.rule("SEC-1")
@pytest.mark.rule("SEC-3")
def test_tls_shorthand_lists_every_listener_and_the_ca(tmp_path: Path) -> None:
    """--tls adds an SSL listener beside PLAINTEXT (SASL_SSL beside SASL_PLAINTEXT with --sasl); the ready file
    and the output name every listener and the throwaway CA a client trusts."""
    import json
    import socket
    import ssl

    ready = tmp_path / "ready.json"
    proc, bootstrap = _launch("--tls", "--brokers", "2", "--ready-file", str(ready))
    assert proc.stdout is not None
    out = "".join(proc.stdout.readline() for _ in range(3))  # the lines after the ready line
    try:
        info = json.loads(ready.read_text())
        assert set(info["listeners"]) == {"PLAINTEXT", "SSL"} and info["listeners"]["PLAINTEXT"] == bootstrap
        ctx = ssl.create_default_context(cafile=info["ca_file"])
        host, port = info["listeners"]["SSL"].split(",")[1].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=20) as raw, \
                ctx.wrap_socket(raw, server_hostname="localhost") as s:
            assert s.version() is not None
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert f"listener SSL {info['listeners']['SSL']}" in out and f"TLS CA certificate {info['ca_file']}" in out
    # The throwaway CA's directory (its private keys) goes with the broker.
    assert not Path(info["ca_file"]).parent.exists()
    proc = _start("--tls", "--set", "listeners=PLAINTEXT://:0")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "--tls adds a listener" in err


def test_bad_listener_settings_are_one_line_errors() -> None:
    proc = _start("--set", "listeners=CUSTOM://:0")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode != 0 and "No security protocol defined for listener CUSTOM" in err
    assert "Traceback" not in err, err


def test_verbose_log_collects_error_codes_at_any_depth() -> None:
    """-v names every non-zero ``*ErrorCode`` field: AddPartitionsToTxn v4 answers a partition's
    CONCURRENT_TRANSACTIONS in ResultsByTransaction[].Topics[].ResultsByPartition[].PartitionErrorCode
    (AddPartitionsToTxnResponse.json at d79bd502), with the top-level ErrorCode NONE."""
    from kwire.cli.broker import error_names
    from kwire.protocol.error_codes import ErrorCode
    from kwire.protocol.messages.add_partitions_to_txn import AddPartitionsToTxnResponse as R

    part = R.AddPartitionsToTxnPartitionResult(partition_index=0, partition_error_code=51)
    topic = R.AddPartitionsToTxnTopicResult(name="t", results_by_partition=[part])
    resp = R(error_code=0, results_by_transaction=[R.AddPartitionsToTxnResult(transactional_id="x", topic_results=[topic])])
    assert error_names(resp, lambda c: ErrorCode(c).name) == ["CONCURRENT_TRANSACTIONS"]
    assert error_names(R(), lambda c: ErrorCode(c).name) == []


def test_help_examples_have_one_gap_per_line_and_sasl_names_oauthbearer() -> None:
    """The examples are a command and what it does: no line joined from two (a stray backslash
    continuation once made runs of spaces inside a line)."""
    out = subprocess.run([sys.executable, "-m", "kwire", "broker", "--help"], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    examples = out[out.index("examples:"):].splitlines()[1:]
    assert examples and all(len(re.findall(r"\S {3,}\S", line)) <= 1 for line in examples), examples
    assert "OAUTHBEARER" in out


def test_data_dir_that_cannot_be_made_names_the_option() -> None:
    proc = _start("--data-dir", "/proc/nope/kwire")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and err.strip().splitlines() == [
        "kwire broker: error: --data-dir /proc/nope/kwire: cannot create it (No such file or directory)"], err
