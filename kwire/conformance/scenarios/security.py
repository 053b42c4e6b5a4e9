"""Security scenarios: every client over SSL and SASL_SSL, OAUTHBEARER, KIP-368 re-authentication.

The target must offer TLS listeners (``SecureControl``: kwire's conformance cluster listens on
PLAINTEXT, SSL, SASL_SSL and SASL_PLAINTEXT, with a throwaway CA); a target without them skips. Each client gets
its own settings from ``ClientAdapter.security_config``; a client that cannot connect that way
skips with its reason.

* ``ssl``: produce and consume over the SSL listener, bootstrapping there: every broker the
  client then reaches must be the SSL listener's (Metadata answers with the listener the
  request came in on, SEC-2), else the client would fall back to plaintext ports and fail.
* ``sasl_ssl``: the same over SASL_SSL with SCRAM-SHA-512.
* ``oauthbearer``: over SASL_SSL with an unsecured JWS the client makes itself (SEC-8).
* ``reauth``: a producer over SASL_SSL/PLAIN, where the session lasts ``reauth_ms``, keeps
  sending across several lifetimes; every record must be acknowledged and read back. The
  details say how many re-authentications the broker saw and how many connections it closed for
  an expired session (SEC-11..13): a client that does not re-authenticate is disconnected at
  its first request after the expiry and must reconnect.
"""

from __future__ import annotations

import time
from typing import Any, Protocol, runtime_checkable

from kwire.conformance.clients.base import ClientAdapter, Record, Security
from kwire.conformance.kwire_target import OAUTH_PRINCIPAL
from kwire.conformance.scenarios.base import BrokerControl, ScenarioResult, unique_name
from kwire.conformance.scenarios.failover import failover_records
from kwire.errors import ConformanceError

__all__ = ["OAUTH_PRINCIPAL", "SECURITY_SCENARIOS", "SecureControl"]

RECORDS = 6
REAUTH_BATCHES = 8
REAUTH_BATCH = 4


@runtime_checkable
class SecureControl(Protocol):
    """A target with TLS listeners (kwire's conformance cluster)."""

    def security_endpoint(self, protocol: str) -> str | None:
        """The bootstrap list of the listener speaking ``protocol`` (None: there is none)."""

    @property
    def ca_file(self) -> str | None:
        """The CA that signed the brokers' certificates."""

    @property
    def sasl_user(self) -> tuple[str, str]:
        """A SASL user and its password (PLAIN and SCRAM)."""

    @property
    def reauth_ms(self) -> int:
        """The session lifetime of PLAIN on the SASL_SSL listener (the reauth scenario)."""

    def security_stats(self) -> dict[str, int]:
        """Counters: ``reauthentications`` begun and ``expired_sessions`` closed so far."""

    def wait_for_records(self, topic: str, count: int, timeout_s: float) -> bool:
        """Block until the topic's logs hold at least ``count`` records; False at the timeout."""


def _setup(adapter: ClientAdapter, control: BrokerControl, scenario: str, protocol: str,
           mechanism: str | None) -> tuple[str, dict[str, Any]] | ScenarioResult:
    if not isinstance(control, SecureControl):
        return ScenarioResult.skipped(adapter.name, scenario, f"{control.name} has no TLS listeners")
    bootstrap, ca = control.security_endpoint(protocol), control.ca_file
    if bootstrap is None or ca is None:
        return ScenarioResult.skipped(adapter.name, scenario, f"{control.name} has no {protocol} listener")
    user, password = control.sasl_user
    conf = adapter.security_config(Security(protocol, ca, mechanism,
                                            OAUTH_PRINCIPAL if mechanism == "OAUTHBEARER" else user, password))
    if isinstance(conf, str):
        return ScenarioResult.skipped(adapter.name, scenario, conf)
    return bootstrap, conf


def _records(tag: str, n: int) -> list[Record]:
    return [Record(f"k{i}".encode(), f"{tag}-{i}".encode(), partition=0) for i in range(n)]


def _roundtrip(adapter: ClientAdapter, control: BrokerControl, scenario: str, protocol: str,
               mechanism: str | None) -> ScenarioResult:
    got = _setup(adapter, control, scenario, protocol, mechanism)
    if isinstance(got, ScenarioResult):
        return got
    bootstrap, conf = got
    topic = unique_name(f"kw-{scenario.replace('_', '-')}-{adapter.name}")
    control.create_topic(topic, 1)
    records = _records(scenario, RECORDS)
    adapter.produce(bootstrap, topic, records, config=conf)
    consumed = adapter.consume(bootstrap, topic, group_id=None, count=RECORDS, timeout_s=30, config=conf)
    want = [r.content() for r in records]
    have = [r.content() for r in sorted(consumed, key=lambda r: r.offset or 0)]
    if have != want:
        return ScenarioResult.failed(adapter.name, scenario, f"read back {len(have)} of {len(want)} records over "
                                                             f"{protocol}, or different ones")
    return ScenarioResult.passed(adapter.name, scenario, protocol=protocol, mechanism=mechanism, records=RECORDS)


def ssl_roundtrip(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """Produce and consume over the SSL listener, bootstrapping there (SEC-2, SEC-3)."""
    return _roundtrip(adapter, control, "ssl", "SSL", None)


def sasl_ssl_roundtrip(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """Produce and consume over SASL_SSL with SCRAM-SHA-512 (SEC-3, SEC-7)."""
    return _roundtrip(adapter, control, "sasl_ssl", "SASL_SSL", "SCRAM-SHA-512")


def oauthbearer(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """Produce and consume over SASL_SSL with an unsecured OAUTHBEARER token (SEC-8)."""
    return _roundtrip(adapter, control, "oauthbearer", "SASL_SSL", "OAUTHBEARER")


def reauth(adapter: ClientAdapter, bootstrap: str, control: BrokerControl) -> ScenarioResult:
    """A producer over SASL_SSL/PLAIN across several 3 s session lifetimes (KIP-368, SEC-11..13)."""
    scenario = "reauth"
    got = _setup(adapter, control, scenario, "SASL_SSL", "PLAIN")
    if isinstance(got, ScenarioResult):
        return got
    assert isinstance(control, SecureControl)
    servers, conf = got
    topic = unique_name(f"kw-reauth-{adapter.name}")
    control.create_topic(topic, 1)
    lifetime_s = control.reauth_ms / 1000
    before = control.security_stats()
    producer = None
    sent = 0
    try:
        producer = adapter.start_producer(servers, topic, config=conf, lifetime_s=120)
        # Batches spread over several session lifetimes: each one must get through.
        for i in range(REAUTH_BATCHES):
            producer.send(failover_records(adapter.name, sent, REAUTH_BATCH))  # 128-byte lines kcat streams
            sent += REAUTH_BATCH
            # In the log, as the broker counts (kcat reports no acks and hands lines on only as
            # more arrive): the batches before this one must be through, as in the failover scenario.
            producer.pump_nowait()
            if not control.wait_for_records(topic, sent - REAUTH_BATCH, 60):
                raise ConformanceError(f"{adapter.name}: batch {i} of {REAUTH_BATCHES} not in the log after 60 s "
                                       f"({producer.proc.diagnostics()})")
            time.sleep(lifetime_s / 2)  # wall time: the clients schedule re-authentication on it
        producer.stop(timeout_s=60)
    except ConformanceError as exc:
        return ScenarioResult.failed(adapter.name, scenario, str(exc))
    finally:
        if producer is not None:
            producer.kill()
    consumed = adapter.consume(servers, topic, group_id=None, count=sent, timeout_s=30, config=conf)
    if len({r.offset for r in consumed}) < sent:
        return ScenarioResult.failed(adapter.name, scenario, f"read back {len(consumed)} of {sent} records")
    after = control.security_stats()
    reauths = after["reauthentications"] - before["reauthentications"]
    expired = after["expired_sessions"] - before["expired_sessions"]
    return ScenarioResult.passed(adapter.name, scenario, records=sent, session_lifetime_ms=control.reauth_ms,
                                 reauthentications=reauths, expired_sessions_closed=expired,
                                 reauthenticates=reauths > 0)


SECURITY_SCENARIOS = {"ssl": ssl_roundtrip, "sasl_ssl": sasl_ssl_roundtrip, "oauthbearer": oauthbearer,
                      "reauth": reauth}
