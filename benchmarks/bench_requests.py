"""Per-request cost: kwire against a bare trio server answering the same frames, in the same run.

    python benchmarks/bench_requests.py [--seq 2000] [--pipelined 20000] [--repeat 3]

The floor is a bare trio server (this script with ``--bare-server``, its own process like kwire's):
it reads size-prefixed frames and answers each with the bytes kwire answered to the same request
(recorded first against kwire, looked up by api key, version and request length, the correlation
id patched in). Both run as ``python -m ...`` processes on this machine; the client is one plain
blocking socket in this process, the same code for both, so the difference is what kwire adds
between reading a request and writing its answer: decoding, checks, state, encoding. After
the recording pass both servers are up at once and every request kind is measured on one,
then the other, so a change in the machine's load falls on both alike.

Measured per request:
- sequential: round trips one at a time (median µs), and kwire's added µs over the bare server;
- pipelined: a burst of N requests written by one thread while another reads the answers (req/s),
  for the requests that can repeat unchanged (stateless or idempotent on the broker).

Requests: ApiVersions v3, Metadata v12 (no topics; 10 topics), Heartbeat v4 (a stable classic
group member), Produce v11 acks=1 of 1 record and of 250 records (27 KB), Fetch v17 with nothing
new (MaxWaitMs 0), EndTxn v5 with 4 partitions (TV2: each iteration writes one record to each of
4 partitions first, untimed), ShareFetch v2 of one batch and ShareAcknowledge v2 of it (each
iteration produces one batch first, untimed). Writes benchmarks/results/requests.json and
requests.md.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import re
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_SIZE = struct.Struct(">i")
_CORR = struct.Struct(">i")
TOPICS = [f"meta-{i}" for i in range(10)]


# --- the bare server ---------------------------------------------------------------------------
def bare_server(table_path: str) -> None:
    """Answer every frame from the recorded table; print the port, then serve until killed."""
    import trio

    with open(table_path, "rb") as f:
        table: dict[tuple[int, int, int], bytes] = pickle.load(f)
    by_api: dict[tuple[int, int], bytes] = {(k[0], k[1]): v for k, v in table.items()}

    async def serve(stream: trio.SocketStream) -> None:
        buf = bytearray()
        while True:
            data = await stream.receive_some(262144)
            if not data:
                return
            buf += data
            out = bytearray()
            pos = 0
            while len(buf) - pos >= 4:
                (size,) = _SIZE.unpack_from(buf, pos)
                if len(buf) - pos - 4 < size:
                    break
                api_key, version, corr = struct.unpack_from(">hhi", buf, pos + 4)
                answer = table.get((api_key, version, size)) or by_api[(api_key, version)]
                start = len(out)
                out += answer
                _CORR.pack_into(out, start + 4, corr)
                pos += 4 + size
            del buf[:pos]
            if out:
                await stream.send_all(out)

    async def main() -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        print(f"port {listeners[0].socket.getsockname()[1]}", flush=True)
        await trio.serve_listeners(serve, listeners)

    trio.run(main)


# --- a client on a plain socket ----------------------------------------------------------------
class Conn:
    """One blocking connection; ``call`` sends a payload (header + body) and returns the answer."""

    def __init__(self, port: int, record: dict[tuple[int, int, int], bytes] | None = None) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.corr = 1
        # While recording against kwire: the last answer to each (api key, version, length), the
        # one the bare server replays (the last is the steady state: a share fetch that acquired).
        self.record = record

    def close(self) -> None:
        self.sock.close()

    def call(self, payload: bytearray) -> bytes:
        self.corr += 1
        _CORR.pack_into(payload, 4, self.corr)
        self.sock.sendall(_SIZE.pack(len(payload)) + payload)
        answer = self.read_frame()
        if self.record is not None:
            api_key, version = struct.unpack_from(">hh", payload, 0)
            self.record[(api_key, version, len(payload))] = _SIZE.pack(len(answer)) + answer
        return answer

    def timed(self, payload: bytearray) -> tuple[float, bytes]:
        t0 = time.perf_counter()
        answer = self.call(payload)
        return time.perf_counter() - t0, answer

    def read_frame(self) -> bytes:
        head = self._exact(4)
        return self._exact(_SIZE.unpack(head)[0])

    def _exact(self, n: int) -> bytes:
        view = bytearray(n)
        got = 0
        while got < n:
            k = self.sock.recv_into(memoryview(view)[got:])
            if not k:
                raise ConnectionError("closed")
            got += k
        return bytes(view)

    def burst(self, payload: bytearray, n: int) -> float:
        """Write ``n`` copies (fresh correlation ids) from a thread, read ``n`` answers; seconds."""
        frames = bytearray()
        for _ in range(n):
            self.corr += 1
            _CORR.pack_into(payload, 4, self.corr)
            frames += _SIZE.pack(len(payload)) + payload
        t0 = time.perf_counter()
        writer = threading.Thread(target=self.sock.sendall, args=(bytes(frames),))
        writer.start()
        for _ in range(n):
            self.read_frame()
        writer.join()
        return time.perf_counter() - t0


def encode(api_key: int, version: int, body: dict[str, Any]) -> bytearray:
    from kwire.protocol import encode_request, request_class

    msg = request_class(api_key).from_json(body, version)
    return bytearray(encode_request(msg, version, correlation_id=1, client_id="bench", size_prefix=False))


def decode(api_key: int, version: int, frame: bytes) -> Any:
    from kwire.protocol import decode_response

    return decode_response(frame, api_key, version).body


def batch(n: int, size: int, *, pid: int = -1, epoch: int = -1, seq: int = -1, txn: bool = False) -> bytes:
    from kwire.records.batch import BatchBuilder

    b = BatchBuilder(0, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=txn)
    for i in range(n):
        b.append(b"v" * size, key=b"k%d" % i, timestamp_ms=1_700_000_000_000 + i)
    return b.build()


def produce_body(topic: str, parts: dict[int, bytes], acks: int = 1, txn_id: str | None = None) -> dict[str, Any]:
    return {"TransactionalId": txn_id, "Acks": acks, "TimeoutMs": 30000,
            "TopicData": [{"Name": topic, "PartitionData": [{"Index": p, "Records": b.hex()}
                                                           for p, b in parts.items()]}]}


# --- the requests ------------------------------------------------------------------------------
@dataclass(slots=True)
class Case:
    """One request kind: ``payload`` repeats unchanged when ``step`` is None; otherwise ``step(conn)``
    runs one iteration (untimed set-up included) and returns the timed request's round trip."""

    name: str
    payload: bytearray | None = None
    step: Callable[[Conn], float] | None = None
    pipelined: bool = True
    notes: list[str] = field(default_factory=list)


def stateless_cases() -> list[Case]:
    one = produce_body("bench", {0: batch(1, 100)})
    many = produce_body("bench", {0: batch(250, 100)})
    return [
        Case("ApiVersions v3", encode(18, 3, {"ClientSoftwareName": "bench", "ClientSoftwareVersion": "1"})),
        Case("Metadata v12, no topics", encode(3, 12, {"Topics": [], "AllowAutoTopicCreation": False})),
        Case("Metadata v12, 10 topics", encode(3, 12, {"Topics": [{"Name": t, "TopicId": "00000000-0000-0000-0000-000000000000"} for t in TOPICS],
                                                       "AllowAutoTopicCreation": False})),
        Case("Produce v11, 1 record, acks=1", encode(0, 11, one)),
        Case("Produce v11, 250 records (27 KB), acks=1", encode(0, 11, many)),
    ]


def fetch_payload(topic_id: str, offset: int) -> bytearray:
    return encode(1, 17, {"ReplicaId": -1, "MaxWaitMs": 0, "MinBytes": 1, "MaxBytes": 52428800,
                          "IsolationLevel": 0, "SessionId": 0, "SessionEpoch": -1,
                          "Topics": [{"TopicId": topic_id, "Partitions": [
                              {"Partition": 0, "CurrentLeaderEpoch": -1, "FetchOffset": offset,
                               "LastFetchedEpoch": -1, "LogStartOffset": -1, "PartitionMaxBytes": 1048576}]}],
                          "ForgottenTopicsData": [], "RackId": ""})


def join_group(conn: Conn, group: str) -> tuple[str, int]:
    """A classic member, joined and synced: (member id, generation)."""
    body = {"GroupId": group, "SessionTimeoutMs": 45000, "RebalanceTimeoutMs": 60000, "MemberId": "",
            "GroupInstanceId": None, "ProtocolType": "consumer",
            "Protocols": [{"Name": "range", "Metadata": ""}], "Reason": None}
    ans = decode(11, 9, conn.call(encode(11, 9, body)))
    if ans.error_code == 79:  # MEMBER_ID_REQUIRED: join again with the id given
        body["MemberId"] = ans.member_id
        ans = decode(11, 9, conn.call(encode(11, 9, body)))
    assert ans.error_code == 0, ans
    sync = {"GroupId": group, "GenerationId": ans.generation_id, "MemberId": ans.member_id,
            "GroupInstanceId": None, "ProtocolType": "consumer", "ProtocolName": "range",
            "Assignments": [{"MemberId": ans.member_id, "Assignment": ""}]}
    s = decode(14, 5, conn.call(encode(14, 5, sync)))
    assert s.error_code == 0, s
    return ans.member_id, ans.generation_id


def heartbeat_payload(group: str, member: str, generation: int) -> bytearray:
    return encode(12, 4, {"GroupId": group, "GenerationId": generation, "MemberId": member,
                          "GroupInstanceId": None})


class TxnLoop:
    """EndTxn v5 (TV2) with 4 partitions: each iteration produces one record to each partition
    (implicitly added under TV2; retried on CONCURRENT_TRANSACTIONS while the previous
    transaction's markers are written), then times the EndTxn round trip."""

    def __init__(self, conn: Conn, txn_id: str) -> None:
        self.txn_id = txn_id
        ans = decode(22, 5, conn.call(encode(22, 5, {"TransactionalId": txn_id, "TransactionTimeoutMs": 60000,
                                                     "ProducerId": -1, "ProducerEpoch": -1})))
        assert ans.error_code == 0, ans
        self.pid, self.epoch = ans.producer_id, ans.producer_epoch

    def __call__(self, conn: Conn) -> float:
        parts = {p: batch(1, 100, pid=self.pid, epoch=self.epoch, seq=0, txn=True) for p in range(4)}
        payload = encode(0, 12, produce_body("txn", parts, acks=-1, txn_id=self.txn_id))
        for _ in range(1000):
            answer = conn.call(payload)
            errors = {p.error_code for t in decode(0, 12, answer).responses for p in t.partition_responses}
            if errors == {0}:
                break
            assert errors <= {51}, errors  # CONCURRENT_TRANSACTIONS: the markers are not written yet
        end = encode(26, 5, {"TransactionalId": self.txn_id, "ProducerId": self.pid,
                             "ProducerEpoch": self.epoch, "Committed": True})
        dt, answer = conn.timed(end)
        ans = decode(26, 5, answer)
        assert ans.error_code == 0, ans
        self.epoch = ans.producer_epoch  # TV2 bumps the epoch on every end
        return dt


class ShareLoop:
    """ShareFetch v2 of one batch and ShareAcknowledge v2 of it: each iteration produces one
    10-record batch (untimed), fetches it (timed) and accepts it (timed)."""

    def __init__(self, conn: Conn, topic_id: str, group: str) -> None:
        self.conn = conn
        self.topic_id = topic_id
        self.group = group
        self.member = str(uuid.uuid4())
        self.epoch = 0
        self.fetch_times: list[float] = []
        self.ack_times: list[float] = []
        hb = {"GroupId": group, "MemberId": self.member, "MemberEpoch": 0, "RackId": None,
              "SubscribedTopicNames": ["share"]}
        ans = decode(76, 1, conn.call(encode(76, 1, hb)))
        assert ans.error_code == 0, ans
        self.produce = encode(0, 11, produce_body("share", {0: batch(10, 100)}))
        self._fetch(0)  # opens the session; the share partition starts at the log end (ST-6: latest)

    def _fetch(self, max_wait: int) -> tuple[float, Any]:
        body = {"GroupId": self.group, "MemberId": self.member, "ShareSessionEpoch": self.epoch,
                "MaxWaitMs": max_wait, "MinBytes": 1, "MaxBytes": 1048576, "MaxRecords": 500,
                "BatchSize": 500, "ShareAcquireMode": 0, "IsRenewAck": False,
                "Topics": [{"TopicId": self.topic_id, "Partitions": [
                    {"PartitionIndex": 0, "AcknowledgementBatches": []}]}], "ForgottenTopicsData": []}
        dt, answer = self.conn.timed(encode(78, 2, body))
        self.epoch += 1
        return dt, decode(78, 2, answer)

    def __call__(self, conn: Conn) -> float:
        conn.call(self.produce)
        for _ in range(200):  # the first fetches of a new group may acquire nothing (HB-6, ST-6)
            dt, ans = self._fetch(0)
            assert ans.error_code == 0, ans
            acquired = [a for t in ans.responses for p in t.partitions for a in p.acquired_records]
            if acquired:
                break
        else:
            raise AssertionError("ShareFetch never acquired the batch")
        self.fetch_times.append(dt)
        ack = {"GroupId": self.group, "MemberId": self.member, "ShareSessionEpoch": self.epoch,
               "IsRenewAck": False,
               "Topics": [{"TopicId": self.topic_id, "Partitions": [
                   {"PartitionIndex": 0, "AcknowledgementBatches": [
                       {"FirstOffset": a.first_offset, "LastOffset": a.last_offset, "AcknowledgeTypes": [1]}
                       for a in acquired]}]}]}
        dt, answer = conn.timed(encode(79, 2, ack))
        self.epoch += 1
        res = decode(79, 2, answer)
        assert res.error_code == 0 and all(p.error_code == 0 for t in res.responses for p in t.partitions), res
        self.ack_times.append(dt)
        return dt


# --- the targets, side by side ------------------------------------------------------------------
Figures = dict[str, dict[str, dict[str, float | None]]]  # target -> request -> figure -> value


def measure(targets: dict[str, Conn], recording: bool, topic_ids: dict[str, str], seq: int, burst: int) -> Figures:
    """Sequential median µs and pipelined req/s of every case on every target, the targets taking
    turns case by case (so a change of machine load hits both alike). Names made per run (group,
    transactional id) keep their length, so the bare server's table still matches."""
    out: Figures = {t: {} for t in targets}

    def repeatable(name: str, payloads: dict[str, bytearray]) -> None:
        for t, conn in targets.items():
            samples = [conn.timed(payloads[t])[0] for _ in range(seq)]
            out[t][name] = {"seq_us": statistics.median(samples) * 1e6,
                            "pipelined_rps": None if recording else burst / conn.burst(payloads[t], burst)}

    for case in stateless_cases():
        assert case.payload is not None
        repeatable(case.name, {t: case.payload for t in targets})
    # A Fetch at the log end: the high-water mark read from the answer to a fetch at 0.
    first = next(iter(targets.values()))
    hw = decode(1, 17, first.call(fetch_payload(topic_ids["fetch"], 0))).responses[0].partitions[0].high_watermark
    repeatable("Fetch v17, nothing new (MaxWaitMs 0)", {t: fetch_payload(topic_ids["fetch"], hw) for t in targets})
    hb = {}
    for t, conn in targets.items():
        group = f"bench-hb-{uuid.uuid4().hex[:8]}"
        member, generation = join_group(conn, group)
        hb[t] = heartbeat_payload(group, member, generation)
    repeatable("Heartbeat v4", hb)
    n = max(50, seq // 10)
    for t, conn in targets.items():
        txn = TxnLoop(conn, f"bench-txn-{uuid.uuid4().hex[:8]}")
        samples = [txn(conn) for _ in range(n)]
        out[t]["EndTxn v5, 4 partitions"] = {"seq_us": statistics.median(samples) * 1e6, "pipelined_rps": None}
    for t, conn in targets.items():
        share = ShareLoop(conn, topic_ids["share"], f"bench-share-{uuid.uuid4().hex[:8]}")
        for _ in range(n):
            share(conn)
        out[t]["ShareFetch v2, one batch"] = {"seq_us": statistics.median(share.fetch_times) * 1e6,
                                              "pipelined_rps": None}
        out[t]["ShareAcknowledge v2, one batch"] = {"seq_us": statistics.median(share.ack_times) * 1e6,
                                                    "pipelined_rps": None}
    return out


def start(cmd: list[str], pattern: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.search(pattern, line)
    if not m:
        proc.kill()
        raise RuntimeError(f"{cmd[:4]} did not start: {line!r}")
    return proc, int(m.group(1))


def kwire_topic_ids(port: int) -> dict[str, str]:
    from kwire.client import WireClient

    with WireClient(f"127.0.0.1:{port}") as c:
        from kwire.protocol.messages.metadata import MetadataRequest

        md = c.request(MetadataRequest(topics=None, allow_auto_topic_creation=False))
        return {t.name: str(t.topic_id) for t in md.topics}


def run_once(seq: int, burst: int) -> Figures:
    """kwire alone first (warm-up, and the answers the bare server replays), then both servers up
    at once, measured in turns."""
    topics = ["bench:1", "fetch:1", "txn:4", "share:1", *(f"{t}:1" for t in TOPICS)]
    args = [a for t in topics for a in ("--topic", t)]
    kw, kport = start([sys.executable, "-m", "kwire", "broker", "--port", "0", "--quiet",
                       "--set", "group.initial.rebalance.delay.ms=0", *args], r"bootstrap servers \S+:(\d+)")
    record: dict[tuple[int, int, int], bytes] = {}
    try:
        topic_ids = kwire_topic_ids(kport)
        rec = Conn(kport, record)
        measure({"kwire": rec}, True, topic_ids, max(20, seq // 20), burst)
        rec.close()
        with tempfile.NamedTemporaryFile(suffix=".pickle", delete=False) as f:
            pickle.dump(record, f)
        try:
            bare, bport = start([sys.executable, __file__, "--bare-server", f.name], r"port (\d+)")
            conns = {"kwire": Conn(kport), "bare": Conn(bport)}
            try:
                return measure(conns, False, topic_ids, seq, burst)
            finally:
                for c in conns.values():
                    c.close()
                bare.terminate()
                bare.wait(30)
        finally:
            os.unlink(f.name)
    finally:
        kw.terminate()
        kw.wait(30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seq", type=int, default=2000, help="sequential round trips per request kind")
    ap.add_argument("--pipelined", type=int, default=20000, help="requests per pipelined burst")
    ap.add_argument("--repeat", type=int, default=3, help="runs; the median of each figure is reported")
    ap.add_argument("--bare-server", metavar="TABLE", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    a = ap.parse_args()
    if a.bare_server:
        bare_server(a.bare_server)
        return
    load_start = os.getloadavg()[0]
    runs = [run_once(a.seq, a.pipelined) for _ in range(a.repeat)]
    names = list(runs[0]["kwire"])

    def med(target: str, name: str, key: str) -> float | None:
        vals = [r[target][name][key] for r in runs]
        return None if vals[0] is None else statistics.median(v for v in vals if v is not None)

    rows = []
    for name in names:
        ks, bs = med("kwire", name, "seq_us"), med("bare", name, "seq_us")
        kp, bp = med("kwire", name, "pipelined_rps"), med("bare", name, "pipelined_rps")
        assert ks is not None and bs is not None
        rows.append({"request": name, "kwire_us": ks, "bare_us": bs, "added_us": ks - bs, "ratio": ks / bs,
                     "kwire_rps": kp, "bare_rps": bp,
                     "runs_kwire_us": [r["kwire"][name]["seq_us"] for r in runs]})
    result = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                          "load_start": load_start, "load": os.getloadavg()[0]},
              "seq": a.seq, "pipelined": a.pipelined, "repeat": a.repeat, "rows": rows}
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "requests.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# Per-request cost: kwire against a bare trio server", "",
             f"One connection, Python client on a plain socket; sequential: median of {a.seq} round trips "
             f"(stateful requests: of {max(50, a.seq // 10)}); pipelined: bursts of {a.pipelined}; median of "
             f"{a.repeat} runs; kwire and the bare server up at once, measured in turns case by case. Load average "
             f"{result['machine']['load_start']:.1f} at the start, {result['machine']['load']:.1f} at the end, on "
             f"{result['machine']['cpus']} CPUs.", "",
             "| request | kwire µs | bare µs | kwire adds µs | ratio | kwire req/s pipelined | bare req/s pipelined |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        kp = f"{r['kwire_rps']:,.0f}" if r["kwire_rps"] else "-"
        bp = f"{r['bare_rps']:,.0f}" if r["bare_rps"] else "-"
        lines.append(f"| {r['request']} | {r['kwire_us']:.1f} | {r['bare_us']:.1f} | {r['added_us']:.1f} | "
                     f"{r['ratio']:.2f}x | {kp} | {bp} |")
    lines += ["", "Stateful requests (EndTxn, ShareFetch, ShareAcknowledge) are sequential only: each needs "
              "the previous one's effect (a new transaction, an acquired batch)."]
    (a.out / "requests.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
