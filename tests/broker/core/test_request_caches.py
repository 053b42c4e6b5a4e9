"""What the per-request caches (issue 24) must never change: an answer or a setting resolved
once is resolved again as soon as what it depends on changes.

Kafka computes these per request (ApiVersionsResponse via ``ApiVersionManager.apiVersionResponse``,
``LogConfig`` from the topic's config in ``UnifiedLog``, ``ShareGroupConfig`` per group); kwire
caches them for speed, so each test changes the input after a cached use and checks the output.
"""

from __future__ import annotations

from kwire.broker.core.configs import ResourceType
from kwire.broker.core.share_coordinator import share_coordinator
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.api_versions import ApiVersionsRequest
from kwire.protocol.registry import ApiKey
from tests.broker.helpers import CoreClient, make_core


def _versions(resp: object) -> dict[int, tuple[int, int]]:
    return {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}  # type: ignore[attr-defined]


def test_api_versions_answer_follows_caps_features_and_correlation_ids() -> None:
    """ApiVersionsResponse (ApiVersionManager): a cap set through the control API and a finalized
    feature changed by config show in the next answer, cached or not; each answer carries its
    own correlation id (checked by CoreClient.send)."""
    core, _ = make_core()
    c = CoreClient(core)
    req = ApiVersionsRequest(client_software_name="kwire-test", client_software_version="1.0")
    first = c.send(req, 3)
    again = c.send(req, 3)  # from the cache
    assert _versions(first) == _versions(again)
    assert _versions(again)[ApiKey.PRODUCE][1] == 13
    core.version_caps[ApiKey.PRODUCE] = 9
    assert _versions(c.send(req, 3))[ApiKey.PRODUCE] == (0, 9)
    del core.version_caps[ApiKey.PRODUCE]
    assert _versions(c.send(req, 3))[ApiKey.PRODUCE] == (0, 13)
    fin = {f.name: f.max_version_level for f in c.send(req, 3).finalized_features}
    assert fin["transaction.version"] == 2
    core.configs.set(ResourceType.BROKER, "", "transaction.version", "1")
    fin = {f.name: f.max_version_level for f in c.send(req, 3).finalized_features}
    assert fin["transaction.version"] == 1
    # v0-v2 have no features: a separate answer per version, not v3's
    assert c.send(ApiVersionsRequest(), 2).finalized_features == []


def test_api_versions_bad_software_name_is_not_answered_from_the_cache() -> None:
    """KIP-511: an invalid ClientSoftwareName is INVALID_REQUEST even after valid requests were cached."""
    core, _ = make_core()
    c = CoreClient(core)
    ok = ApiVersionsRequest(client_software_name="kwire-test", client_software_version="1.0")
    assert c.send(ok, 3).error_code == ErrorCode.NONE
    assert c.send(ok, 3).error_code == ErrorCode.NONE
    bad = ApiVersionsRequest(client_software_name="-bad name", client_software_version="1.0")
    assert c.send(bad, 3).error_code == ErrorCode.INVALID_REQUEST
    assert c.conn.client_software_name == "kwire-test"


def test_log_config_follows_topic_and_broker_overrides() -> None:
    """LogConfig (UnifiedLog's config): a topic override and a broker default changed after an
    append's lookup apply to the next one."""
    core, _ = make_core()
    core.create_topic("t", 1)
    assert core.log_config("t").max_message_bytes == 1048588
    core.configs.set(ResourceType.TOPIC, "t", "max.message.bytes", "2000")
    assert core.log_config("t").max_message_bytes == 2000
    core.configs.set(ResourceType.TOPIC, "t", "max.message.bytes", None)
    assert core.log_config("t").max_message_bytes == 1048588
    core.configs.set(ResourceType.BROKER, "", "message.max.bytes", "3000")
    assert core.log_config("t").max_message_bytes == 3000
    core.configs.set(ResourceType.TOPIC, "t", "cleanup.policy", "compact")
    assert core.log_config("t").compacted


def test_share_config_follows_group_and_broker_overrides() -> None:
    """ShareGroupConfig: a group's share.record.lock.duration.ms, then the broker's
    group.share.record.lock.duration.ms, apply to the next lookup after a cached one."""
    core, _ = make_core()
    coord = share_coordinator(core)
    assert coord.config("g").record_lock_duration_ms == 30000
    core.configs.set(ResourceType.BROKER, "", "group.share.record.lock.duration.ms", "20000")
    assert coord.config("g").record_lock_duration_ms == 20000
    core.configs.set(ResourceType.GROUP, "g", "share.record.lock.duration.ms", "15000")
    assert coord.config("g").record_lock_duration_ms == 15000
    assert coord.config("other").record_lock_duration_ms == 20000
