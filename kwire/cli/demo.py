"""``kwire demo``: start a kwire cluster and run a real Kafka client against it.

Produces keyed records with headers through confluent-kafka (librdkafka) with idempotence and
compression on, while the broker injects a NOT_LEADER_OR_FOLLOWER that the client must ride
out, then consumes them back in a consumer group, and prints what crossed the wire.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from kwire.cli._numbers import BROKERS, COUNT


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--brokers", type=BROKERS, default=3)
    p.add_argument("--records", type=COUNT, default=12)
    p.add_argument("--compression", default="lz4", choices=["none", "gzip", "snappy", "lz4", "zstd"])


def run(args: argparse.Namespace) -> int:
    from kwire.cli import CliError

    try:
        from confluent_kafka import Consumer, Producer
    except ImportError:
        raise CliError("the demo drives confluent-kafka: pip install confluent-kafka (tools/run.sh does)") from None
    from kwire.control import Broker, BrokerConfig
    from kwire.protocol.error_codes import ErrorCode
    from kwire.protocol.registry import api_info

    config = BrokerConfig(brokers=args.brokers, log_connections=False,
                          settings={"group.initial.rebalance.delay.ms": "0"})
    with Broker(config) as broker:
        print(f"kwire: {args.brokers} brokers at {broker.bootstrap}")
        broker.create_topic("demo", partitions=3)
        broker.start_recording()
        broker.inject_error(api_key=0, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER, topic="demo", partition=0,
                            times=1)
        print("kwire: injected one NOT_LEADER_OR_FOLLOWER on demo-0; the producer must retry")
        producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True,
                             "compression.type": args.compression, "linger.ms": 5})
        for i in range(args.records):
            producer.produce("demo", key=f"key-{i % 4}".encode(), value=f"record {i}".encode(),
                             headers=[("source", b"kwire-demo")])
        if producer.flush(30) != 0:
            raise CliError("the producer did not deliver every record")
        print(f"produced {args.records} records ({args.compression}, idempotent)")
        del producer  # closes its connections now, not after the brokers stop (no reconnect noise)
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "demo-group",
                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
        consumer.subscribe(["demo"])
        got: list[Any] = []
        deadline = time.monotonic() + 60
        while len(got) < args.records and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            got.append(msg)
            headers = {h[0]: (h[1] or b"").decode() for h in msg.headers() or []}  # type: ignore[union-attr]
            print(f"  demo-{msg.partition()} @{msg.offset()}: {bytes(msg.key() or b'').decode()} = "
                  f"{bytes(msg.value() or b'').decode()} {headers}")
        if len(got) != args.records:
            consumer.close()
            raise CliError(f"consumed {len(got)} of {args.records} records")
        consumer.commit(asynchronous=False)
        consumer.close()
        print(f"consumed {len(got)} records in group demo-group and committed offsets")
        seen: dict[str, int] = {}
        for ex in broker.recorded():
            name = f"{api_info(ex.api_key).name} v{ex.api_version}"
            seen[name] = seen.get(name, 0) + 1
        print("requests the broker answered: " + ", ".join(f"{k} x{v}" for k, v in sorted(seen.items())))
    return 0
