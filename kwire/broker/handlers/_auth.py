"""The handlers' side of the authorizer: one-line checks against ``core.subsystems.acl``.

Which operation and error each API uses is ``kwire.broker.core.acl_rules`` (read from
KafkaApis at d79bd502); these helpers only ask the authorizer. Without an authorizer
configured every check passes, as AuthHelper does with no authorizer.
"""

from __future__ import annotations

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
    return acl is None or acl.authorize(principal_of(ctx.conn), host_of(ctx.conn), op, rtype, name)


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
