"""The authorizer's decisions: StandardAuthorizerData.findAclRule/findResult at d79bd502, and
AclControlManager's validation and filters (ACL-2, ACL-11, ACL-13)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kwire.broker.core.acl import (
    STANDARD_AUTHORIZER,
    AclBinding,
    AclOperation,
    AclPermission,
    Authorizer,
    PatternType,
    ResourceType,
    filter_from,
)
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from tests.broker.helpers import make_core

Op, R, P = AclOperation, ResourceType, PatternType
ALICE = "User:alice"


def acl(name: str, op: AclOperation, *, principal: str = ALICE, rtype: ResourceType = R.TOPIC,
        pattern: PatternType = P.LITERAL, deny: bool = False, host: str = "*") -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, AclPermission.DENY if deny else AclPermission.ALLOW)


def authorizer(*acls: AclBinding, **settings: str) -> Authorizer:
    core, _ = make_core(settings={"authorizer.class.name": STANDARD_AUTHORIZER, **settings})
    auth = core.subsystems.acl
    assert auth is not None
    for a in acls:
        auth.create(a)
    return auth


def may(auth: Authorizer, op: AclOperation, name: str, *, principal: str = ALICE, rtype: ResourceType = R.TOPIC,
        host: str = "10.0.0.1") -> bool:
    return auth.authorize(principal, host, op, rtype, name)


@pytest.mark.rule("ACL-2")
def test_literal_prefixed_and_wildcard_patterns_match_as_standard_authorizer() -> None:
    auth = authorizer(acl("orders", Op.READ), acl("pay.", Op.WRITE, pattern=P.PREFIXED), acl("*", Op.DESCRIBE,
                                                                                              rtype=R.GROUP))
    assert may(auth, Op.READ, "orders")
    assert not may(auth, Op.READ, "orders2")  # literal is the whole name
    assert may(auth, Op.WRITE, "pay.in") and not may(auth, Op.WRITE, "pa")
    assert may(auth, Op.DESCRIBE, "any-group", rtype=R.GROUP)
    assert not may(auth, Op.READ, "orders", principal="User:bob")


@pytest.mark.rule("ACL-2")
def test_deny_wins_and_implied_operations_come_from_allow_acls_only() -> None:
    auth = authorizer(acl("t", Op.ALL), acl("t", Op.WRITE, principal="User:*", deny=True),
                      acl("u", Op.READ), acl("u", Op.ALTER_CONFIGS), acl("v", Op.READ, deny=True), acl("v", Op.DESCRIBE))
    assert may(auth, Op.READ, "t") and not may(auth, Op.WRITE, "t")  # DENY for everyone beats ALLOW ALL
    assert may(auth, Op.DESCRIBE, "u")  # READ implies DESCRIBE
    assert may(auth, Op.DESCRIBE_CONFIGS, "u")  # ALTER_CONFIGS implies DESCRIBE_CONFIGS
    assert not may(auth, Op.WRITE, "u")
    assert may(auth, Op.DESCRIBE, "v") and not may(auth, Op.READ, "v")  # a DENY READ does not deny DESCRIBE


@pytest.mark.rule("ACL-2")
def test_hosts_super_users_and_the_no_acl_default() -> None:
    auth = authorizer(acl("t", Op.READ, host="10.0.0.1"), acl("c", Op.READ, host="192.168.0.0/16"),
                      **{"super.users": "User:admin;User:ops"})
    assert may(auth, Op.READ, "t") and not may(auth, Op.READ, "t", host="10.0.0.2")
    assert may(auth, Op.READ, "c", host="192.168.4.5") and not may(auth, Op.READ, "c")
    assert may(auth, Op.DELETE, "anything", principal="User:ops")
    assert not may(auth, Op.READ, "no-acls")  # allow.everyone.if.no.acl.found defaults to false
    open_auth = authorizer(acl("t", Op.READ), **{"allow.everyone.if.no.acl.found": "true"})
    assert may(open_auth, Op.READ, "no-acls", principal="User:bob")
    assert not may(open_auth, Op.READ, "t", principal="User:bob")  # the topic has ACLs, none for bob


def test_settings_given_as_broker_settings() -> None:
    auth = authorizer(**{"super.users": "User:root"})
    assert auth.super_users() == {"User:root"}
    core, _ = make_core()
    assert core.subsystems.acl is not None and not core.subsystems.acl.enabled
    assert core.subsystems.acl.authorize(ALICE, "", Op.WRITE, R.TOPIC, "t")  # no authorizer: everything


@pytest.mark.rule("ACL-10")
def test_authorize_by_resource_type_as_the_authorizer_interface_default() -> None:
    """Authorizer.authorizeByResourceType: InitProducerId's idempotent fallback."""
    assert not authorizer().authorize_by_resource_type(ALICE, "h", Op.WRITE, R.TOPIC)
    assert authorizer(acl("x", Op.WRITE)).authorize_by_resource_type(ALICE, "h", Op.WRITE, R.TOPIC)
    denied_prefix = authorizer(acl("x.a", Op.WRITE), acl("x.", Op.WRITE, pattern=P.PREFIXED, deny=True))
    assert not denied_prefix.authorize_by_resource_type(ALICE, "h", Op.WRITE, R.TOPIC)
    wildcard_deny = authorizer(acl("y", Op.WRITE), acl("*", Op.WRITE, deny=True))
    assert not wildcard_deny.authorize_by_resource_type(ALICE, "h", Op.WRITE, R.TOPIC)


@pytest.mark.rule("ACL-13")
def test_validation_and_filters_as_acl_control_manager() -> None:
    auth = authorizer()
    for bad in (acl("t", Op.ANY), acl("t", Op.READ, pattern=P.MATCH), acl("", Op.READ),
                acl("t", Op.READ, principal="alice"), acl("t", Op.READ, host="not-an-ip")):
        with pytest.raises(KafkaError) as e:
            auth.create(bad)
        assert e.value.code == ErrorCode.INVALID_REQUEST
    auth.create(acl("pay.", Op.WRITE, pattern=P.PREFIXED))
    auth.create(acl("pay.in", Op.READ))
    auth.create(acl("*", Op.READ))
    auth.create(acl("other", Op.READ))
    match = filter_from(R.TOPIC, "pay.in", P.MATCH, None, None, Op.ANY, AclPermission.ANY)
    assert {a.resource_name for a in auth.describe(match)} == {"pay.", "pay.in", "*"}
    literal = filter_from(R.ANY, None, P.LITERAL, ALICE, None, Op.READ, AclPermission.ALLOW)
    assert {a.resource_name for a in auth.describe(literal)} == {"pay.in", "*", "other"}
    with pytest.raises(KafkaError):
        auth.describe(filter_from(R.TOPIC, None, P.UNKNOWN, None, None, Op.ANY, AclPermission.ANY))
    gone = auth.delete(match)
    assert len(gone) == 3 and [a.resource_name for a in auth.acls] == ["other"]


@pytest.mark.rule("ACL-11")
def test_acls_persist_in_the_data_dir(tmp_path: Path) -> None:
    settings = {"authorizer.class.name": STANDARD_AUTHORIZER}
    core, _ = make_core(settings=settings, data_dir=str(tmp_path))
    assert core.subsystems.acl is not None
    core.subsystems.acl.create(acl("pay.", Op.WRITE, pattern=P.PREFIXED))
    core.subsystems.acl.create(acl("t", Op.READ, deny=True, host="10.0.0.1"))
    core.close()
    again, _ = make_core(settings=settings, data_dir=str(tmp_path))
    assert again.subsystems.acl is not None
    assert list(again.subsystems.acl.acls) == list(core.subsystems.acl.acls)
    again.subsystems.acl.delete(filter_from(R.ANY, None, P.ANY, None, None, Op.ANY, AclPermission.ANY))
    again.close()
    third, _ = make_core(settings=settings, data_dir=str(tmp_path))
    assert third.subsystems.acl is not None and not third.subsystems.acl.acls
    third.close()
