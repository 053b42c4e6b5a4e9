"""The handlers' side of the authorizer: one-line checks against ``core.subsystems.acl``.

Which operation and error each API uses is ``kwire.broker.core.acl_rules`` (read from
KafkaApis at d79bd502); these helpers only ask the authorizer. Without an authorizer
configured every check passes, as AuthHelper does with no authorizer.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeVar

from kwire.broker.core.acl import AclOperation, ResourceType, host_of, principal_of
from kwire.protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import RequestContext

__all__ = ["allowed", "topic_denied", "authorize_topic", "authorized_operations", "AclOperation", "ResourceType",
           "enabled"]

T = TypeVar("T")


def enabled(ctx: RequestContext) -> bool:
    """Whether an authorizer is configured (AuthHelper's ``authorizer.isDefined``)."""
    acl = ctx.core.subsystems.acl
    return acl is not None and acl.enabled


def allowed(ctx: RequestContext, op: AclOperation, rtype: ResourceType, name: str) -> bool:
    """AuthHelper.authorize for the request's session."""
    acl = ctx.core.subsystems.acl
    # no authorizer configured: everything is allowed (checked first: it is on every request's path)
    return acl is None or not acl.enabled or acl.authorize(principal_of(ctx.conn), host_of(ctx.conn), op, rtype,
                                                           name)


def topic_denied(ctx: RequestContext, op: AclOperation, name: str | None) -> bool:
    """``op`` on the topic is denied (a topic without a name yet is not checked here)."""
    return name is not None and not allowed(ctx, op, ResourceType.TOPIC, name)


def authorize_topic(ctx: RequestContext, op: AclOperation, name: str | None, topic: T | None,
                    code: int) -> tuple[T | None, int]:
    """``resolve_topic``'s answer, or (None, TOPIC_AUTHORIZATION_FAILED) when ``op`` is denied.

    ``name`` is the name the request gave, else the resolved topic's name; the check comes
    before existence, so an unauthorized client cannot tell whether a topic exists.
    """
    if name is None and topic is not None:
        name = getattr(topic, "name", None)
    if topic_denied(ctx, op, name):
        return None, ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return topic, code


def authorized_operations(ctx: RequestContext, rtype: ResourceType, name: str) -> int:
    """AuthHelper.authorizedOperations: the bitfield of the resource type's operations allowed."""
    acl = ctx.core.subsystems.acl
    if acl is None:
        from kwire.broker.core.acl import SUPPORTED_OPERATIONS, operations_bitfield

        return operations_bitfield(SUPPORTED_OPERATIONS[rtype])
    return acl.authorized_operations(principal_of(ctx.conn), host_of(ctx.conn), rtype, name)


def group_operations(ctx: RequestContext, group_id: str, include: bool) -> int:
    """A described group's authorized operations (-2^31 when not asked for)."""
    from kwire.broker.handlers._common import NO_AUTHORIZED_OPERATIONS

    return authorized_operations(ctx, ResourceType.GROUP, group_id) if include else NO_AUTHORIZED_OPERATIONS


def group_denied(ctx: RequestContext, op: AclOperation, group_id: str) -> bool:
    return not allowed(ctx, op, ResourceType.GROUP, group_id)


def any_topic_undescribable(ctx: RequestContext, names: Iterable[str]) -> bool:
    """ConsumerGroupDescribe/ShareGroupDescribe with an authorizer: a group naming a topic the
    principal may not describe is answered TOPIC_AUTHORIZATION_FAILED."""
    return enabled(ctx) and any(topic_denied(ctx, AclOperation.DESCRIBE, n) for n in names)


DESCRIBED_TOPIC_DENIED = "The group has described topic(s) that the client is not authorized to describe."


def coordinator_key_denied(ctx: RequestContext, key_type: int, key: str) -> int:
    """KafkaApis.getCoordinator: the error a FindCoordinator key gets (0: allowed).

    A share key needs CLUSTER_ACTION, and its denial fails the whole request (authorizeClusterOperation throws).
    """
    from kwire.broker.core.acl import CLUSTER_NAME
    from kwire.errors import KafkaError

    if key_type == 0 and not allowed(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, key):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    if key_type == 1 and not allowed(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if key_type == 2 and not allowed(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
        raise KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    return ErrorCode.NONE


def may_list_group(ctx: RequestContext, group_id: str) -> bool:
    """ListGroups: every group with DESCRIBE on the cluster, else those it may describe."""
    from kwire.broker.core.acl import CLUSTER_NAME

    return (allowed(ctx, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME)
            or allowed(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id))


def require_topic(ctx: RequestContext, name: str, *ops: AclOperation) -> None:
    """Raise TOPIC_AUTHORIZATION_FAILED unless every one of ``ops`` is allowed on the topic (ControllerApis)."""
    from kwire.errors import KafkaError

    for op in ops:
        if topic_denied(ctx, op, name):
            raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")


def may_create_topic(ctx: RequestContext, name: str) -> bool:
    """CREATE on the cluster, else on the topic (ControllerApis.createTopics, Metadata auto-creation)."""
    from kwire.broker.core.acl import CLUSTER_NAME

    return (allowed(ctx, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
            or allowed(ctx, AclOperation.CREATE, ResourceType.TOPIC, name))


def require_config_resource(ctx: RequestContext, config_type: str, name: str, op: AclOperation) -> None:
    """ConfigHelper / handle(Incremental)AlterConfigsRequest: a TOPIC, GROUP or BROKER (the cluster)
    config resource needs DESCRIBE_CONFIGS / ALTER_CONFIGS, checked before the resource exists."""
    from kwire.broker.core.acl import CLUSTER_NAME
    from kwire.errors import KafkaError

    if config_type == "TOPIC":
        rtype, rname, code = ResourceType.TOPIC, name, ErrorCode.TOPIC_AUTHORIZATION_FAILED
    elif config_type == "GROUP":
        rtype, rname, code = ResourceType.GROUP, name, ErrorCode.GROUP_AUTHORIZATION_FAILED
    else:
        rtype, rname, code = ResourceType.CLUSTER, CLUSTER_NAME, ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    if not allowed(ctx, op, rtype, rname):
        raise KafkaError(code)
