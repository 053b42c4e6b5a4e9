"""The ACL authorizer, sans-I/O: Kafka's StandardAuthorizer over ACLs kept by the core.

Theory of operation
-------------------
* ``Authorizer`` is installed always (``core.subsystems.acl``): the ACL APIs answer
  SECURITY_DISABLED until ``authorizer.class.name`` names StandardAuthorizer (AclApis), and
  every check allows everything while none is configured (AuthHelper with no authorizer).
* ``authorize`` follows StandardAuthorizerData.findAclRule/findResult at d79bd502: a super user
  (``super.users``) may do anything; otherwise the ACLs on the resource's exact name (LITERAL),
  on a prefix of it (PREFIXED) and on the wildcard ``*`` (LITERAL) are looked at. An ACL
  matches when its principal is the session's or ``User:*``, its host ``*``, the client's
  address or a CIDR range holding it, and its operation the action's, ALL, or (ALLOW ACLs only)
  one that implies it (READ/WRITE/DELETE/ALTER imply DESCRIBE, ALTER_CONFIGS implies
  DESCRIBE_CONFIGS). DENY wins; then ALLOW; a resource with ACLs for nobody matching is denied;
  a resource without any ACL gets ``allow.everyone.if.no.acl.found`` (default false).
* CreateAcls/DeleteAcls validate as AclControlManager.validateNewAcl/validateFilter; filters
  match as ResourcePatternFilter/AccessControlEntryFilter (MATCH: LITERAL equal or ``*``, or a
  PREFIXED pattern that is a prefix of the name).
* The principal of a connection is ``principal_of(conn)`` (``ConnInfo.principal``: SASL sets
  ``User:<name>``; PLAINTEXT stays ``User:ANONYMOUS``); its host is the peer address.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from kwire.broker.core.configs import STANDARD_AUTHORIZER
from kwire.broker.core.configs import ResourceType as _ConfigResource
from kwire.broker.core.context import ConnView, CoreContext, RequestView, Subsystem
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode

_BROKER_SCOPE = (_ConfigResource.BROKER, "")  # the cluster-wide broker settings in ConfigStore.overrides

__all__ = ["ResourceType", "PatternType", "AclOperation", "AclPermission", "AclBinding", "AclFilter", "Authorizer",
           "principal_of", "host_of", "STANDARD_AUTHORIZER", "SUPPORTED_OPERATIONS", "CLUSTER_NAME",
           "operations_bitfield", "AUTHORIZER_SETTINGS"]

CLUSTER_NAME = "kafka-cluster"  # Resource.CLUSTER_NAME
# StandardAuthorizer's settings, given like any broker setting (they are not KafkaConfig keys).
AUTHORIZER_SETTINGS = frozenset({"super.users", "allow.everyone.if.no.acl.found"})
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"


class ResourceType(IntEnum):
    """org.apache.kafka.common.resource.ResourceType codes."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    """org.apache.kafka.common.resource.PatternType codes (ANY and MATCH in filters only)."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    """org.apache.kafka.common.acl.AclOperation codes."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermission(IntEnum):
    """org.apache.kafka.common.acl.AclPermissionType codes."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


_O = AclOperation
# AclEntry.supportedOperations: what authorized-operations fields are made of.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER, _O.DESCRIBE_CONFIGS,
                         _O.ALTER_CONFIGS),
    ResourceType.GROUP: (_O.READ, _O.DESCRIBE, _O.DELETE, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS),
    ResourceType.CLUSTER: (_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS, _O.IDEMPOTENT_WRITE,
                           _O.ALTER, _O.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (_O.DESCRIBE, _O.WRITE, _O.TWO_PHASE_COMMIT),
    ResourceType.DELEGATION_TOKEN: (_O.DESCRIBE,),
    ResourceType.USER: (_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS),
}
_IMPLIES_DESCRIBE = frozenset({_O.DESCRIBE, _O.READ, _O.WRITE, _O.DELETE, _O.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({_O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS})


def operations_bitfield(ops: Iterable[AclOperation]) -> int:
    """Utils.to32BitField: bit ``op`` set for each operation."""
    return sum(1 << int(op) for op in set(ops))


def principal_of(conn: ConnView) -> str:
    """The session's principal as ``Type:name`` (SASL: ``User:<name>``; PLAINTEXT: ``User:ANONYMOUS``).

    The one place the authorizer reads it: a listener that derives principals differently
    (mTLS) sets ``ConnInfo.principal`` the same way.
    """
    return conn.principal or "User:ANONYMOUS"


def host_of(conn: ConnView) -> str:
    """The client's address without the port (``peer`` is ``host:port``)."""
    peer = conn.peer
    if not peer or peer == "?":
        return ""
    host = peer.rsplit(":", 1)[0] if ":" in peer else peer
    return host.strip("[]")


def _enum(cls: Any, value: int) -> Any:
    try:
        return cls(value)
    except ValueError:
        return cls.UNKNOWN


@dataclass(slots=True, frozen=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermission

    def to_json(self) -> list[Any]:
        return [self.resource_type.name, self.resource_name, self.pattern_type.name, self.principal, self.host,
                self.operation.name, self.permission.name]

    @classmethod
    def from_json(cls, row: list[Any]) -> AclBinding:
        return cls(ResourceType[row[0]], row[1], PatternType[row[2]], row[3], row[4], AclOperation[row[5]],
                   AclPermission[row[6]])

    def validate(self) -> None:
        """AclControlManager.validateNewAcl: INVALID_REQUEST for what a binding cannot be."""
        bad = ErrorCode.INVALID_REQUEST
        if self.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
            raise KafkaError(bad, f"Invalid resourceType {self.resource_type.name}")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise KafkaError(bad, f"Invalid patternType {self.pattern_type.name}")
        if self.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
            raise KafkaError(bad, f"Invalid operation {self.operation.name}")
        if self.permission not in (AclPermission.DENY, AclPermission.ALLOW):
            raise KafkaError(bad, f"Invalid permissionType {self.permission.name}")
        if not self.resource_name:
            raise KafkaError(bad, "Resource name should not be empty")
        if ":" not in self.principal:
            raise KafkaError(bad, f"Could not parse principal from `{self.principal}` (no colon is present "
                                  "separating the principal type from the principal name)")
        _validate_host(self.host)


def _validate_host(host: str) -> None:
    """AclControlManager.validateHostPattern: ``*``, an address or a CIDR range."""
    if host == WILDCARD:
        return
    try:
        if "/" in host:
            ipaddress.ip_network(host, strict=False)
        else:
            ipaddress.ip_address(host)
    except ValueError:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Invalid host pattern {host!r}") from None


def _host_matches(acl_host: str, host: str) -> bool:
    if acl_host in (WILDCARD, host):
        return True
    if "/" not in acl_host or not host:
        return False
    try:  # CidrUtils.isInRange
        return ipaddress.ip_address(host) in ipaddress.ip_network(acl_host, strict=False)
    except ValueError:
        return False


@dataclass(slots=True, frozen=True)
class AclFilter:
    """An AclBindingFilter (DescribeAcls, DeleteAcls): None and ANY match everything."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission: AclPermission

    def validate(self) -> None:
        """AclControlManager.validateFilter: a filter with an UNKNOWN part is refused."""
        if self.resource_type is ResourceType.UNKNOWN or self.pattern_type is PatternType.UNKNOWN:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Unknown patternFilter.")
        if self.operation is AclOperation.UNKNOWN or self.permission is AclPermission.UNKNOWN:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Unknown entryFilter.")

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type is not ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if not self._pattern_matches(acl):
            return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation is not AclOperation.ANY and self.operation != acl.operation:
            return False
        return self.permission is AclPermission.ANY or self.permission == acl.permission

    def _pattern_matches(self, acl: AclBinding) -> bool:
        """ResourcePatternFilter.matches."""
        pt, name = self.pattern_type, self.resource_name
        if pt is PatternType.MATCH:
            if name is None:
                return True
            if acl.pattern_type is PatternType.LITERAL:
                return acl.resource_name in (name, WILDCARD)
            return acl.pattern_type is PatternType.PREFIXED and name.startswith(acl.resource_name)
        if pt is not PatternType.ANY and pt != acl.pattern_type:
            return False
        return name is None or name == acl.resource_name


class Authorizer(Subsystem):
    """The cluster's ACLs and the StandardAuthorizer decisions over them."""

    __slots__ = ("core", "acls")

    def __init__(self, core: CoreContext) -> None:
        self.core = core
        self.acls: dict[AclBinding, None] = {}  # in creation order

    # --- configuration ------------------------------------------------------------------------
    def _setting(self, key: str) -> str | None:
        over = self.core.configs.overrides.get(_BROKER_SCOPE)  # on every request's path: no import here
        if over is not None and key in over:
            return over[key]
        return self.core.config.settings.get(key)

    @property
    def enabled(self) -> bool:
        """Whether an authorizer is configured (``authorizer.class.name``)."""
        # _setting, inline: asked on every request's path
        over = self.core.configs.overrides.get(_BROKER_SCOPE)
        name: str | None = (over["authorizer.class.name"] if over is not None and "authorizer.class.name" in over
                            else self.core.config.settings.get("authorizer.class.name"))
        return bool(name and name.strip())

    def super_users(self) -> set[str]:
        """StandardAuthorizer's ``super.users``: principals separated by ``;``."""
        return {p.strip() for p in (self._setting("super.users") or "").split(";") if p.strip()}

    def allow_if_no_acl(self) -> bool:
        return (self._setting("allow.everyone.if.no.acl.found") or "false").strip().lower() == "true"

    # --- decisions ----------------------------------------------------------------------------
    def authorize(self, principal: str, host: str, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        """May ``principal`` from ``host`` do ``op`` on the literal resource ``rtype:name``?"""
        if not self.enabled or principal in self.super_users():
            return True
        principals = (principal, WILDCARD_PRINCIPAL)
        found_acl = allowed = False
        for acl in self.acls:
            if acl.resource_type != rtype or not _resource_matches(acl, name):
                continue
            found_acl = True
            result = _result(acl, principals, host, op)
            if result is AclPermission.DENY:
                return False
            if result is AclPermission.ALLOW:
                allowed = True
        if allowed:
            return True
        return not found_acl and self.allow_if_no_acl()

    def authorize_by_resource_type(self, principal: str, host: str, op: AclOperation, rtype: ResourceType) -> bool:
        """Authorizer.authorizeByResourceType's default: is ``op`` allowed on some resource of ``rtype``?

        Denied by a DENY on the wildcard; else allowed by an ALLOW whose pattern no DENY covers
        (a literal denied by name, a prefix denied by a shorter or equal denied prefix); else the
        no-ACL default applies when the wildcard resource itself would be allowed.
        """
        if not self.enabled or principal in self.super_users():
            return True
        principals = (principal, WILDCARD_PRINCIPAL)
        deny_literal: set[str] = set()
        deny_prefix: set[str] = set()
        allow: list[AclBinding] = []
        for acl in self.acls:
            if acl.resource_type != rtype or acl.principal not in principals or not _host_matches(acl.host, host):
                continue
            if acl.operation not in (op, AclOperation.ALL):
                continue
            if acl.permission is AclPermission.DENY:
                if acl.pattern_type is PatternType.LITERAL:
                    if acl.resource_name == WILDCARD:
                        return False
                    deny_literal.add(acl.resource_name)
                else:
                    deny_prefix.add(acl.resource_name)
            else:
                allow.append(acl)
        for acl in allow:
            if acl.pattern_type is PatternType.LITERAL and acl.resource_name == WILDCARD:
                return True
            if any(acl.resource_name.startswith(p) for p in deny_prefix):
                continue
            if acl.pattern_type is PatternType.LITERAL and acl.resource_name in deny_literal:
                continue
            return True
        return self.allow_if_no_acl() and self.authorize(principal, host, op, rtype, WILDCARD)

    def allowed(self, ctx: RequestView, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        """``authorize`` for the connection of ``ctx``."""
        return self.authorize(principal_of(ctx.conn), host_of(ctx.conn), op, rtype, name)

    def authorized_operations(self, principal: str, host: str, rtype: ResourceType, name: str) -> int:
        """AuthHelper.authorizedOperations: the bitfield of supported operations allowed on the resource."""
        ops = SUPPORTED_OPERATIONS.get(rtype, ())
        return operations_bitfield(op for op in ops if self.authorize(principal, host, op, rtype, name))

    # --- the ACL APIs -------------------------------------------------------------------------
    def create(self, binding: AclBinding) -> None:
        binding.validate()
        if binding not in self.acls:
            self.acls[binding] = None
            self.core.metadata_changed()

    def describe(self, flt: AclFilter) -> list[AclBinding]:
        flt.validate()
        return [acl for acl in self.acls if flt.matches(acl)]

    def delete(self, flt: AclFilter) -> list[AclBinding]:
        flt.validate()
        gone = [acl for acl in self.acls if flt.matches(acl)]
        for acl in gone:
            del self.acls[acl]
        if gone:
            self.core.metadata_changed()
        return gone

    # --- persistence --------------------------------------------------------------------------
    def snapshot(self) -> list[list[Any]]:
        return [acl.to_json() for acl in self.acls]

    def restore(self, rows: list[list[Any]]) -> None:
        self.acls = {AclBinding.from_json(row): None for row in rows}


def _resource_matches(acl: AclBinding, name: str) -> bool:
    if acl.pattern_type is PatternType.LITERAL:
        return acl.resource_name in (name, WILDCARD)
    return acl.pattern_type is PatternType.PREFIXED and name.startswith(acl.resource_name)


def _result(acl: AclBinding, principals: tuple[str, str], host: str, op: AclOperation) -> AclPermission | None:
    """StandardAuthorizerData.findResult: ALLOW/DENY when the ACL applies to the action, else None."""
    if acl.principal not in principals or not _host_matches(acl.host, host):
        return None
    if acl.operation is not AclOperation.ALL:
        if acl.permission is AclPermission.ALLOW:
            if op is AclOperation.DESCRIBE:
                if acl.operation not in _IMPLIES_DESCRIBE:
                    return None
            elif op is AclOperation.DESCRIBE_CONFIGS:
                if acl.operation not in _IMPLIES_DESCRIBE_CONFIGS:
                    return None
            elif op != acl.operation:
                return None
        elif op != acl.operation:
            return None
    return acl.permission


def binding_from(resource_type: int, resource_name: str, pattern_type: int, principal: str, host: str,
                 operation: int, permission: int) -> AclBinding:
    """A binding from wire values (unknown codes become UNKNOWN and fail validation)."""
    return AclBinding(_enum(ResourceType, resource_type), resource_name, _enum(PatternType, pattern_type), principal,
                      host, _enum(AclOperation, operation), _enum(AclPermission, permission))


def filter_from(resource_type: int, resource_name: str | None, pattern_type: int, principal: str | None,
                host: str | None, operation: int, permission: int) -> AclFilter:
    return AclFilter(_enum(ResourceType, resource_type), resource_name, _enum(PatternType, pattern_type), principal,
                     host, _enum(AclOperation, operation), _enum(AclPermission, permission))
