"""Client quotas, sans-I/O: the quota entities (DescribeClientQuotas / AlterClientQuotas) and the
broker's quota sensors on the injected clock.

Theory of operation
-------------------
* Quotas are kept per entity, as ClientQuotaControlManager/ClientQuotasImage keep them: a tuple
  of (entity type, name) pairs for ``user``, ``client-id`` or ``ip`` (name None = the default
  entity). User and client-id combine; ip stands alone. Validation follows
  ClientQuotaControlManager.validateEntity/configKeysForEntityType/validateQuotaKeyValue; the
  Describe filter follows ClientQuotasImage.describe/matches.
* A request's quota is found as ClientQuotaManager.DefaultQuotaCallback finds it: the first of
  (user, client-id), (user, default client), (user), (default user, client-id), (default user,
  default client), (default user), (client-id), (default client) that sets the key. The metric
  tags that lookup yields name the sensor, so e.g. a per-user quota is shared by every client id
  of that user.
* Byte-rate quotas (``producer_byte_rate``, ``consumer_byte_rate``) are Kafka's ``Rate`` over a
  ``SampledStat``: ``quota.window.num`` samples of ``quota.window.size.seconds``; the rate is the
  samples' sum over ``Rate.windowSize`` (elapsed since the oldest sample, at least
  samples-1 whole windows). A recording that takes the rate above the bound is a violation, and
  the throttle time is QuotaUtils.throttleTime: ``(rate - bound) / bound * windowSize``.
* ``controller_mutation_rate`` is a ``TokenBucket`` (ControllerMutationQuotaManager): burst =
  samples x window x rate, refilled at the rate per second; a strict quota (CreateTopics v6+,
  CreatePartitions v3+, DeleteTopics v5+) refuses a mutation once the bucket is negative
  (THROTTLING_QUOTA_EXCEEDED) and otherwise records it, so a bucket may go below zero once;
  the throttle time is ``-tokens / rate * 1000``.
* ``request_percentage`` is ClientRequestQuotaManager's: the core's time on a request, in
  nanoseconds from the injected ``BrokerCore.request_timer``, counts as ``nanos x 100 / 1e9``
  percent on the same Rate as the byte rates; the time up to the answer (the handler's first
  pass for a deferred one) is recorded with the quota check, the encoding after it without one
  (Kafka's network-thread time, ``recordNoThrottle``). The throttle time is QuotaUtils'
  ``boundedThrottleTime``: at most one ``quota.window.size.seconds``. WriteTxnMarkers (a
  ClusterAction API), an acks=0 Produce and the requests of a SASL exchange (Kafka's
  authenticator answers those, not KafkaApis) are exempt. Where a byte rate or a controller
  mutation quota also throttles, the answer carries the larger time (KafkaApis' max).
* ``connection_creation_rate`` (ip entities) is enforced where connections are accepted:
  ``kwire.broker.core.connection_quotas``.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass, field
from typing import Any

from kwire.broker.core.context import CoreContext, RequestView, Subsystem
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode

__all__ = ["ClientQuotas", "Entity", "RateSensor", "TokenBucket", "USER", "CLIENT_ID", "IP", "QUOTA_KEYS",
           "IP_QUOTA_KEYS", "parse_entity", "CLIENT_QUOTAS_SETTING", "parse_quota_setting", "java_round",
           "REQUEST_QUOTA_EXEMPT", "NANOS_TO_PERCENT"]

USER, CLIENT_ID, IP = "user", "client-id", "ip"
# ``kwire broker --set kwire.client.quotas='user=alice,client-id=app:producer_byte_rate=1024;...'``:
# the quotas a fresh cluster starts with (Kafka has no broker property for client quotas).
CLIENT_QUOTAS_SETTING = "kwire.client.quotas"
# The responses' shouldClientThrottle overrides at d79bd502: from these versions the client waits
# out ThrottleTimeMs itself (KIP-219); before them it relies on the broker's mute alone. Any other
# API: AbstractResponse.shouldClientThrottle, whether the version's response has ThrottleTimeMs.
CLIENT_THROTTLES_FROM = {0: 6, 1: 8, 2: 3, 3: 6, 8: 4, 9: 4, 10: 2, 11: 3, 12: 2, 13: 2, 14: 2, 15: 2, 16: 2,
                         19: 3, 20: 2, 21: 1, 22: 1, 24: 1, 25: 1, 26: 1, 28: 1, 29: 1, 30: 1, 31: 1, 32: 2,
                         33: 1, 34: 1, 35: 1, 37: 1, 38: 1, 39: 1, 40: 1, 41: 1, 42: 1, 44: 0, 47: 0, 18: 2}
# QuotaConfig.userAndClientQuotaConfigs / ipConfigs: key -> ConfigDef type.
QUOTA_KEYS = {"producer_byte_rate": "LONG", "consumer_byte_rate": "LONG", "request_percentage": "DOUBLE",
              "controller_mutation_rate": "DOUBLE"}
IP_QUOTA_KEYS = {"connection_creation_rate": "INT"}
_INT_MAX, _LONG_MAX = 2**31 - 1, 2**63 - 1
# ClientRequestQuotaManager.NANOS_TO_PERCENTAGE_PER_SECOND
NANOS_TO_PERCENT = 100.0 / 1_000_000_000
# APIs whose time is recorded on the exempt sensor, not the client's (ApiKeys.clusterAction,
# RequestHandlerHelper.sendResponseExemptThrottle): of those kwire serves, WriteTxnMarkers.
REQUEST_QUOTA_EXEMPT = frozenset({27})


def java_round(x: float) -> int:
    """Java's Math.round (half up), which QuotaUtils.throttleTime uses."""
    return math.floor(x + 0.5)

Entity = tuple[tuple[str, str | None], ...]  # sorted by entity type


def parse_entity(text: str) -> Entity:
    """``user=alice,client-id=app`` (``<default>`` or an empty name for the default) as an Entity."""
    out: dict[str, str | None] = {}
    for part in text.split(","):
        etype, _, name = part.partition("=")
        etype = etype.strip()
        if not etype:
            continue
        out[etype] = None if name in ("", "<default>") else name
    return tuple(sorted(out.items()))


def parse_quota_setting(text: str) -> list[tuple[Entity, list[tuple[str, float | None]]]]:
    """``ENTITY:KEY=VALUE,...;ENTITY:...`` (ENTITY as in ``parse_entity``) as AlterClientQuotas entries."""
    out = []
    for item in text.split(";"):
        if not item.strip():
            continue
        entity_text, sep, values = item.rpartition(":")
        if not sep:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"quota {item!r} is not ENTITY:KEY=VALUE")
        ops: list[tuple[str, float | None]] = []
        for kv in values.split(","):
            key, _, value = kv.partition("=")
            try:
                ops.append((key.strip(), float(value)))
            except ValueError:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"quota value {value!r} is not a number") from None
        out.append((parse_entity(entity_text), ops))
    return out


@dataclass(slots=True)
class _Sample:
    start_ms: int
    last_event_ms: int
    value: float = 0.0
    events: int = 0


@dataclass(slots=True)
class RateSensor:
    """Kafka's Rate over a SampledStat (WindowedSum), per second."""

    samples: list[_Sample] = field(default_factory=list)
    current: int = 0

    def _current(self, now: int) -> _Sample:
        if not self.samples:
            self.samples.append(_Sample(now, now))
        return self.samples[self.current]

    def record(self, value: float, now: int, num: int, window_ms: int) -> None:
        sample = self._current(now)
        if now - sample.start_ms >= window_ms:  # Sample.isComplete (no event window)
            self.current = (self.current + 1) % (num + 1)  # one extra overlapping sample
            if self.current >= len(self.samples):
                sample = _Sample(now, now)
                self.samples.append(sample)
            else:
                sample = self.samples[self.current]
                sample.start_ms, sample.last_event_ms, sample.value, sample.events = now, now, 0.0, 0
        sample.value += value
        sample.events += 1
        sample.last_event_ms = now

    def _purge(self, now: int, num: int, window_ms: int) -> None:
        for s in self.samples:
            if now - s.last_event_ms >= num * window_ms:
                s.start_ms, s.last_event_ms, s.value, s.events = now, now, 0.0, 0

    def window_size(self, now: int, num: int, window_ms: int) -> int:
        """Rate.windowSize."""
        self._purge(now, num, window_ms)
        oldest = min((s.start_ms for s in self.samples), default=now)
        elapsed = now - oldest
        full = elapsed // window_ms
        if full < num - 1:
            elapsed += (num - 1 - full) * window_ms
        return max(elapsed, 1)

    def rate(self, now: int, num: int, window_ms: int) -> float:
        """Rate.measure in units per second."""
        self._purge(now, num, window_ms)
        total = sum(s.value for s in self.samples)
        return total / (self.window_size(now, num, window_ms) / 1000)


@dataclass(slots=True)
class TokenBucket:
    """Kafka's TokenBucket stat (per second); starts full."""

    tokens: float = 0.0
    last_update_ms: int = 0

    def _refill(self, rate: float, burst: float, now: int) -> None:
        self.tokens = min(burst, self.tokens + rate * (now - self.last_update_ms) / 1000)
        self.last_update_ms = now

    def measure(self, rate: float, burst: float, now: int) -> float:
        self._refill(rate, burst, now)
        return self.tokens

    def record(self, value: float, rate: float, burst: float, now: int) -> None:
        self._refill(rate, burst, now)
        self.tokens = min(burst, self.tokens - value)


class ClientQuotas(Subsystem):
    """The quota entities of the cluster and the sensors that enforce them."""

    __slots__ = ("core", "entities", "_rates", "_buckets", "request_enabled")

    def __init__(self, core: CoreContext) -> None:
        self.core = core
        self.entities: dict[Entity, dict[str, float]] = {}
        # ClientQuotaManager.quotasEnabled for request_percentage: the core times requests only then
        self.request_enabled = False
        self._rates: dict[tuple[str, str, str], RateSensor] = {}
        self._buckets: dict[tuple[str, str], TokenBucket] = {}
        initial = core.config.settings.get(CLIENT_QUOTAS_SETTING)
        if initial:
            for entity, ops in parse_quota_setting(initial):
                self.alter(entity, ops)

    # --- the admin APIs -----------------------------------------------------------------------
    def alter(self, entity: Entity, ops: list[tuple[str, float | None]], validate_only: bool = False) -> None:
        """AlterClientQuotas for one entity: (key, value) sets, (key, None) removes; raises KafkaError."""
        types = [t for t, _ in entity]
        entity = tuple(sorted(entity, key=lambda p: p[0]))
        if not entity:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity")
        for etype, name in entity:
            if types.count(etype) > 1:
                raise KafkaError(ErrorCode.INVALID_REQUEST,
                                 f"Invalid client quota entity, duplicate entity entry {etype}")
            if etype not in (USER, CLIENT_ID, IP):
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unhandled client quota entity type: {etype}")
            if name is not None and not name:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Empty {etype} not supported")
        keys = self._keys_for(dict(entity))
        for key, value in ops:
            if value is None:
                continue
            d = keys.get(key)
            if d is None:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Invalid configuration key {key}")
            if value <= 0.0:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Quota {key} must be greater than 0")
            if d == "INT" and value > _INT_MAX:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Proposed value for {key} is too large for an INT.")
            if d == "LONG" and value > _LONG_MAX:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Proposed value for {key} is too large for a LONG.")
            if d in ("INT", "LONG") and abs(math.fmod(value, 1.0)) > 1e-6:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"{key} cannot be a fractional value.")
        if validate_only:
            return
        values = dict(self.entities.get(entity, {}))
        for key, value in ops:
            if value is None:
                values.pop(key, None)
            else:
                values[key] = float(value)
        if values:
            self.entities[entity] = values
        else:
            self.entities.pop(entity, None)
        self.request_enabled = self.enabled("request_percentage")
        self.core.metadata_changed()

    @staticmethod
    def _keys_for(entity: dict[str, str | None]) -> dict[str, str]:
        """ClientQuotaControlManager.configKeysForEntityType."""
        if IP in entity:
            if USER in entity or CLIENT_ID in entity:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Invalid quota entity combination, IP entity should"
                                                            "not be combined with User or ClientId")
            ip = entity[IP]
            if ip is not None:
                try:
                    ipaddress.ip_address(ip)
                except ValueError:
                    raise KafkaError(ErrorCode.INVALID_REQUEST,
                                     f"{ip} is not a valid IP or resolvable host.") from None
            return IP_QUOTA_KEYS
        if USER in entity or CLIENT_ID in entity:
            return QUOTA_KEYS
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity")

    def describe(self, components: list[tuple[str, int, str | None]], strict: bool) -> list[tuple[Entity, dict]]:
        """ClientQuotasImage.describe: components are (entity type, match type, match); raises KafkaError."""
        exact: dict[str, str | None] = {}
        typed: set[str] = set()
        for etype, match_type, match in components:
            if not etype:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")
            if etype in exact or etype in typed:
                raise KafkaError(ErrorCode.INVALID_REQUEST,
                                 f"Entity type {etype} cannot appear more than once in the filter.")
            if etype not in (IP, USER, CLIENT_ID):
                raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {etype}")
            if match_type == 0:
                if match is None:
                    raise KafkaError(ErrorCode.INVALID_REQUEST,
                                     "Request specified MATCH_TYPE_EXACT, but set match string to null.")
                exact[etype] = match
            elif match_type == 1:
                if match is not None:
                    raise KafkaError(ErrorCode.INVALID_REQUEST,
                                     "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
                exact[etype] = None
            elif match_type == 2:
                if match is not None:
                    raise KafkaError(ErrorCode.INVALID_REQUEST,
                                     "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
                typed.add(etype)
            else:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown match type {match_type}")
        if (IP in exact or IP in typed) and ({USER, CLIENT_ID} & (set(exact) | typed)):
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Invalid entity filter component combination. IP filter "
                                                        "component should not be used with user or clientId filter "
                                                        "component.")
        out = []
        for entity, values in self.entities.items():
            held = dict(entity)
            if not exact and not typed and strict:
                continue
            if any(t not in held or held[t] != n for t, n in exact.items()):
                continue
            if any(t not in held for t in typed):
                continue
            if strict and len(held) != len(exact) + len(typed):
                continue
            out.append((entity, dict(values)))
        return out

    # --- enforcement --------------------------------------------------------------------------
    def _settings(self, prefix: str) -> tuple[int, int]:
        from kwire.broker.core.configs import ResourceType

        c = self.core.configs
        return (c.get_int(ResourceType.BROKER, "", f"{prefix}quota.window.num"),
                c.get_int(ResourceType.BROKER, "", f"{prefix}quota.window.size.seconds") * 1000)

    def lookup(self, key: str, user: str, client_id: str) -> tuple[float | None, str, str]:
        """(limit, user tag, client-id tag): DefaultQuotaCallback's precedence for ``key``."""
        e = self.entities
        order: list[tuple[Entity, str, str]] = [
            (((CLIENT_ID, client_id), (USER, user)), user, client_id),
            (((CLIENT_ID, None), (USER, user)), user, client_id),
            (((USER, user),), user, ""),
            (((CLIENT_ID, client_id), (USER, None)), user, client_id),
            (((CLIENT_ID, None), (USER, None)), user, client_id),
            (((USER, None),), user, ""),
            (((CLIENT_ID, client_id),), "", client_id),
            (((CLIENT_ID, None),), "", client_id),
        ]
        for entity, utag, ctag in order:
            values = e.get(entity)
            if values is not None and key in values:
                return values[key], utag, ctag
        return None, "", ""

    def enabled(self, key: str) -> bool:
        return any(key in v for v in self.entities.values())

    def record_rate(self, key: str, user: str, client_id: str, value: float, now: int, *,
                    check: bool = True) -> int:
        """ClientQuotaManager.recordAndGetThrottleTimeMs: record ``value`` and return the throttle
        time (``check=False``: recordNoThrottle, always 0). ``request_percentage``'s is bounded by
        one quota window (ClientRequestQuotaManager.throttleTime, QuotaUtils.boundedThrottleTime)."""
        limit, utag, ctag = self.lookup(key, user, client_id)
        if limit is None:
            return 0
        num, window_ms = self._settings("")
        sensor = self._rates.setdefault((key, utag, ctag), RateSensor())
        sensor.record(value, now, num, window_ms)
        if not check:
            return 0
        rate = sensor.rate(now, num, window_ms)
        if rate <= limit:
            return 0
        ms = java_round((rate - limit) / limit * sensor.window_size(now, num, window_ms))
        return min(ms, window_ms) if key == "request_percentage" else ms

    def request_exempt(self, ctx: RequestView, authenticating: bool) -> bool:
        """Whether a request's time stays off its client's request quota (see the module doc)."""
        return authenticating or ctx.api_key in REQUEST_QUOTA_EXEMPT

    def record_request_time(self, ctx: RequestView, nanos: int, *, check: bool) -> int:
        """ClientRequestQuotaManager.maybeRecordAndGetThrottleTimeMs (``check``) or the network
        thread's recordNoThrottle: ``nanos`` of the core's time on the request."""
        from kwire.broker.core.acl import principal_of

        return self.record_rate("request_percentage", principal_of(ctx.conn).partition(":")[2], ctx.client_id or "",
                                max(nanos, 0) * NANOS_TO_PERCENT, ctx.now_ms, check=check)

    def unrecord_rate(self, key: str, user: str, client_id: str, value: float, now: int) -> None:
        """ClientQuotaManager.unrecordQuotaSensor: a throttled fetch sends no data, so it counts nothing."""
        limit, utag, ctag = self.lookup(key, user, client_id)
        sensor = self._rates.get((key, utag, ctag))
        if limit is not None and sensor is not None:
            num, window_ms = self._settings("")
            sensor.record(-value, now, num, window_ms)

    def mutation_throttle(self, user: str, client_id: str, now: int) -> int:
        """The controller-mutation bucket's throttle time now (0: not exceeded)."""
        limit, bucket, burst = self._bucket(user, client_id)
        if bucket is None or limit is None:
            return 0
        tokens = bucket.measure(limit, burst, now)
        return 0 if tokens >= 0 else int(round(-tokens / limit * 1000))

    def record_mutation(self, user: str, client_id: str, permits: float, now: int, strict: bool) -> int:
        """StrictControllerMutationQuota.record (refused: THROTTLING_QUOTA_EXCEEDED, raised) or the
        permissive one (recorded; the throttle time returned)."""
        limit, bucket, burst = self._bucket(user, client_id)
        if bucket is None or limit is None:
            return 0
        if strict:
            throttle = self.mutation_throttle(user, client_id, now)
            if throttle:
                raise KafkaError(ErrorCode.THROTTLING_QUOTA_EXCEEDED, "The throttling quota has been exceeded.")
            bucket.record(permits, limit, burst, now)
            return 0
        bucket.record(permits, limit, burst, now)
        return self.mutation_throttle(user, client_id, now)

    def _bucket(self, user: str, client_id: str) -> tuple[float | None, TokenBucket | None, float]:
        limit, utag, ctag = self.lookup("controller_mutation_rate", user, client_id)
        if limit is None:
            return None, None, 0.0
        num, window_ms = self._settings("controller.")
        return limit, self._buckets.setdefault((utag, ctag), TokenBucket()), num * window_ms / 1000 * limit

    @staticmethod
    def client_throttles(api_key: int, api_version: int) -> bool:
        """Whether the client waits out ThrottleTimeMs itself (KIP-219: the response's
        shouldClientThrottle); an API kwire does not know: it does."""
        since = CLIENT_THROTTLES_FROM.get(api_key)
        if since is not None:
            return api_version >= since
        from kwire.errors import UnknownApiKeyError
        from kwire.protocol.registry import api_info

        try:
            fields = api_info(api_key).response_class._fields
        except UnknownApiKeyError:
            return True
        return any(f.attr == "throttle_time_ms" and f.versions[0] <= api_version <= f.versions[1] for f in fields)

    def throttle_response(self, ctx: RequestView, response: Any, request_ns: int | None = None) -> int:
        """What KafkaApis does before sending: record the produce request's bytes or the fetch
        response's bytes against their quota and ``request_ns`` (the core's time on the request,
        None: exempt or not timed) against request_percentage, and take the largest of those
        throttles and the one a handler put in the response (controller mutations). A throttled
        Fetch or ShareFetch, by either quota, carries no data (FetchContext.getThrottledResponse,
        ShareFetchContext.throttleResponse) and its bytes are unrecorded; an acks=0 produce
        (``response`` None) counts only its bytes."""
        from kwire.broker.core.acl import principal_of
        from kwire.protocol.registry import ApiKey

        user = principal_of(ctx.conn).partition(":")[2]
        client_id = ctx.client_id or ""
        now = ctx.now_ms
        ms = 0
        request_ms = 0
        if request_ns is not None and response is not None:
            request_ms = self.record_request_time(ctx, request_ns, check=True)
        if ctx.api_key == ApiKey.PRODUCE and self.enabled("producer_byte_rate"):
            ms = self.record_rate("producer_byte_rate", user, client_id, ctx.request_size, now)
        elif ctx.api_key in (ApiKey.FETCH, ApiKey.SHARE_FETCH) and response is not None:
            if self.enabled("consumer_byte_rate"):
                from kwire.protocol.framing import encode_response_frame

                # FetchContext.getResponseSize / ShareFetchContext.responseSize: the answer's size
                size = len(encode_response_frame(response, ctx.api_version, correlation_id=ctx.correlation_id))
                ms = self.record_rate("consumer_byte_rate", user, client_id, size, now)
                if max(ms, request_ms) > 0:
                    self.unrecord_rate("consumer_byte_rate", user, client_id, size, now)
            if max(ms, request_ms) > 0:
                # FetchContext.getThrottledResponse / ShareFetchContext.throttleResponse: no data (a
                # ShareFetch's acquired records stay acquired until their locks time out, as in Kafka)
                response.responses = []
                if ctx.api_key == ApiKey.SHARE_FETCH:
                    response.node_endpoints = []
                    response.acquisition_lock_timeout_ms = 0
        ms = max(ms, request_ms)
        if response is not None and hasattr(response, "throttle_time_ms"):
            ms = max(ms, response.throttle_time_ms or 0)
            response.throttle_time_ms = ms
        return ms

    def cap_fetch(self, ctx: RequestView, request: Any) -> None:
        """KafkaApis.handleFetchRequest: a fetch asks for at most ClientQuotaManager.maxValueInQuotaWindow
        (bound x (samples - 1) x window) bytes, and MinBytes no more than that, so that one answer
        alone never exceeds the consumer quota (QUO-3)."""
        if not self.enabled("consumer_byte_rate"):
            return
        from kwire.broker.core.acl import principal_of

        limit, _, _ = self.lookup("consumer_byte_rate", principal_of(ctx.conn).partition(":")[2], ctx.client_id or "")
        if limit is None:
            return
        num, window_ms = self._settings("")
        cap = int(min(limit * (num - 1) * window_ms / 1000, 2**31 - 1))
        request.max_bytes = min(request.max_bytes, cap)
        request.min_bytes = min(request.min_bytes, request.max_bytes)

    def mutation_quota(self, ctx: RequestView, strict_from: int) -> MutationQuota:
        """ControllerMutationQuotaManager.newQuotaFor: strict from ``strict_from`` on, else permissive."""
        from kwire.broker.core.acl import principal_of

        return MutationQuota(self, principal_of(ctx.conn).partition(":")[2], ctx.client_id or "",
                             ctx.api_version >= strict_from, ctx.now_ms)

    # --- persistence --------------------------------------------------------------------------
    def snapshot(self) -> list[dict[str, Any]]:
        return [{"entity": [list(p) for p in entity], "values": values} for entity, values in self.entities.items()]

    def restore(self, rows: list[dict[str, Any]]) -> None:
        self.entities = {tuple((str(t), n) for t, n in row["entity"]): {str(k): float(v)
                                                                       for k, v in row["values"].items()}
                         for row in rows}
        self.request_enabled = self.enabled("request_percentage")


@dataclass(slots=True)
class MutationQuota:
    """One request's controller-mutation quota: ``record(partitions)`` per topic (raises
    THROTTLING_QUOTA_EXCEEDED when strict and exceeded); ``throttle_ms`` for the response."""

    quotas: ClientQuotas
    user: str
    client_id: str
    strict: bool
    now: int
    throttle_ms: int = 0

    def record(self, permits: float) -> None:
        try:
            got = self.quotas.record_mutation(self.user, self.client_id, permits, self.now, self.strict)
        except KafkaError:
            self.throttle_ms = self.quotas.mutation_throttle(self.user, self.client_id, self.now)
            raise
        self.throttle_ms = max(self.throttle_ms, got)
