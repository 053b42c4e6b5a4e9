"""Connection limits, sans-I/O: SocketServer's ConnectionQuotas on the broker clock.

Theory of operation
-------------------
The trio edge asks this class what to do with each accepted TCP connection and does it; every
decision and count lives here, every wait is on the broker clock (``core.deadlines``), so a
manual clock drives it in tests. The steps follow ``ConnectionQuotas.inc`` at d79bd502:

1. ``waitForConnectionSlot`` (``acceptor_throttle_until``, ``slot_available``): the connection is
   recorded on the broker-wide ``max.connection.creation.rate`` sensor and on its listener's
   (``listener.name.<l>.max.connection.creation.rate``, else the broker value, as
   ``valuesWithPrefixOverride`` gives it); over either rate, or with no slot free under
   ``max.connections`` (broker-wide and per listener), the listener's acceptor accepts nothing
   more until the throttle time has passed and a slot is free. The edge serializes a listener's
   connections through this step, as Kafka's one acceptor thread per listener does.
2. ``recordIpConnectionMaybeThrottle`` (``admit``): an ip with a ``connection_creation_rate``
   quota (its own, else the default ip entity's) over that rate is throttled: the connection is
   un-recorded from every sensor and kept open, unread, until the throttle time has passed, then
   closed (Acceptor's ``DelayedCloseSocket``); it never counts as a connection.
3. The connection counts (per ip, per listener, in total); past ``max.connections.per.ip`` (or
   the ip's entry in ``max.connections.per.ip.overrides``) it is closed at once
   (TooManyConnectionsException).

Each rate is Kafka's Rate over ``quota.window.num`` samples of ``quota.window.size.seconds``
(``RateSensor``), a violation throttles for ``QuotaUtils.boundedThrottleTime``: at most one
quota window.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from kwire.broker.core.configs import ResourceType, normal_ip, parse_ip_overrides
from kwire.broker.core.context import CoreContext
from kwire.broker.core.quotas import IP, RateSensor, java_round

if TYPE_CHECKING:
    from kwire.broker.core.subsystems import Subsystems

__all__ = ["Admission", "ConnectionHost", "ConnectionQuotas", "parse_ip_overrides"]

_INT_MAX = 2**31 - 1


@dataclass(slots=True, frozen=True)
class Admission:
    """``admit``'s answer: ``serve``, ``throttle`` (keep unread, close at ``close_at_ms``) or
    ``refuse`` (close now); ``reason`` is the broker log's line."""

    kind: str
    close_at_ms: int = 0
    reason: str = ""


class ConnectionHost(CoreContext, Protocol):
    """What the connection limits read of the broker (``BrokerCore`` implements it)."""

    @property
    def subsystems(self) -> Subsystems: ...
    @property
    def resolve_host(self) -> Callable[[str], str] | None: ...

    def listener_setting(self, listener: str, key: str, mechanism: str | None = None) -> str | None: ...


@dataclass(slots=True)
class ConnectionQuotas:
    """The broker's connection counts and connection-rate sensors (one per broker process, as a
    Kafka broker has one SocketServer)."""

    core: ConnectionHost
    per_ip: dict[str, int] = field(default_factory=dict)
    per_listener: dict[str, int] = field(default_factory=dict)
    total: int = 0
    _broker_rate: RateSensor = field(default_factory=RateSensor)
    _listener_rates: dict[str, RateSensor] = field(default_factory=dict)
    _ip_rates: dict[str, RateSensor] = field(default_factory=dict)
    _overrides: tuple[str, dict[str, int]] = ("", {})
    throttled_ips: int = 0  # connections closed unread for their ip's connection_creation_rate
    refused_per_ip: int = 0  # connections closed for max.connections.per.ip

    # --- settings -----------------------------------------------------------------------------
    def _int(self, key: str, listener: str | None = None) -> int:
        if listener is not None:
            raw = self.core.listener_setting(listener, key)
            if raw is not None:
                return int(raw)
        return self.core.configs.get_int(ResourceType.BROKER, "", key)

    def _window(self) -> tuple[int, int]:
        c = self.core.configs
        return (c.get_int(ResourceType.BROKER, "", "quota.window.num"),
                c.get_int(ResourceType.BROKER, "", "quota.window.size.seconds") * 1000)

    def max_per_ip(self, ip: str) -> int:
        """ConnectionQuotas.maxConnectionsPerIpForIp: the override for the address, else the default."""
        raw = self.core.configs.get(ResourceType.BROKER, "", "max.connections.per.ip.overrides") or ""
        if raw != self._overrides[0]:
            self._overrides = (raw, parse_ip_overrides(raw, self.core.resolve_host))
        return self._overrides[1].get(normal_ip(ip), self._int("max.connections.per.ip"))

    def ip_rate(self, ip: str) -> int:
        """ConnectionQuotas.connectionRateForIp: the ip entity's connection_creation_rate, else the
        default ip entity's, else no limit (QuotaConfig.IP_CONNECTION_RATE_DEFAULT, Int.MaxValue)."""
        quotas = self.core.subsystems.quotas
        if quotas is None:
            return _INT_MAX
        for entity in (((IP, normal_ip(ip)),), ((IP, None),)):
            value = quotas.entities.get(entity, {}).get("connection_creation_rate")
            if value is not None:
                return int(value)
        return _INT_MAX

    # --- the acceptor's steps -----------------------------------------------------------------
    def _record(self, sensor: RateSensor, limit: int, now: int) -> int:
        """ConnectionQuotas.recordAndGetThrottleTimeMs: record one connection, the bounded throttle."""
        num, window_ms = self._window()
        sensor.record(1.0, now, num, window_ms)
        rate = sensor.rate(now, num, window_ms)
        if rate <= limit:
            return 0
        return min(java_round((rate - limit) / limit * sensor.window_size(now, num, window_ms)), window_ms)

    def acceptor_throttle_until(self, listener: str) -> int:
        """recordConnectionAndGetThrottleTimeMs: the broker time before which the listener accepts
        no further connection (now when neither the broker's nor the listener's rate is exceeded)."""
        now = self.core.clock.now_ms()
        broker_ms = self._record(self._broker_rate, self._int("max.connection.creation.rate"), now)
        sensor = self._listener_rates.setdefault(listener, RateSensor())
        listener_ms = self._record(sensor, self._int("max.connection.creation.rate", listener), now)
        return now + max(broker_ms, listener_ms)

    def slot_available(self, listener: str) -> bool:
        """ConnectionQuotas.connectionSlotAvailable: under the listener's and the broker's max.connections."""
        if self.per_listener.get(listener, 0) >= self._int("max.connections", listener):
            return False
        return self.total < self._int("max.connections")

    def admit(self, listener: str, ip: str) -> Admission:
        """The rest of ConnectionQuotas.inc once a slot is free: the ip's connection rate, then
        the count and max.connections.per.ip. A ``serve`` must be ``release``d when it closes."""
        now = self.core.clock.now_ms()
        limit = self.ip_rate(ip)
        if limit != _INT_MAX:
            sensor = self._ip_rates.setdefault(normal_ip(ip), RateSensor())
            throttle = self._record(sensor, limit, now)
            if throttle > 0:
                num, window_ms = self._window()
                # un-record it everywhere: a throttled connection is not a connection (updateListenerMetrics)
                for s in (sensor, self._broker_rate, self._listener_rates.setdefault(listener, RateSensor())):
                    s.record(-1.0, now, num, window_ms)
                self.throttled_ips += 1
                return Admission("throttle", now + throttle,
                                 f"connection_creation_rate of {ip} ({limit}/s) exceeded: closed unread after "
                                 f"{throttle} ms")
        count = self.per_ip.get(ip, 0)
        most = self.max_per_ip(ip)
        if count >= most:
            self.refused_per_ip += 1
            return Admission("refuse", now, f"{ip} already has the configured maximum of {most} connections "
                                            f"(max.connections.per.ip)")
        self.per_ip[ip] = count + 1
        self.per_listener[listener] = self.per_listener.get(listener, 0) + 1
        self.total += 1
        return Admission("serve")

    def release(self, listener: str, ip: str) -> None:
        """ConnectionQuotas.dec: a served connection closed."""
        left = self.per_ip.get(ip, 0) - 1
        if left > 0:
            self.per_ip[ip] = left
        else:
            self.per_ip.pop(ip, None)
        self.per_listener[listener] = max(0, self.per_listener.get(listener, 0) - 1)
        self.total = max(0, self.total - 1)
