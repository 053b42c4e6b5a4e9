"""``kwire acls``: list, add and remove ACLs on any cluster (CreateAcls/DescribeAcls/DeleteAcls).

    kwire acls -b HOST:PORT list [--principal User:alice] [--resource-type TOPIC] [--name orders]
    kwire acls -b HOST:PORT add --principal User:alice --operation READ --resource-type TOPIC --name orders
    kwire acls -b HOST:PORT remove --principal User:alice --resource-type TOPIC --name orders [--force]

Names are Kafka's enum names (TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER;
LITERAL, PREFIXED, MATCH, ANY; READ, WRITE, ...; ALLOW, DENY). A broker without an authorizer
answers SECURITY_DISABLED, reported as an error. As kafka-acls.sh, ``remove`` asks before it
deletes what the filter matches (every ACL, without filters) unless ``--force`` is given; without a
terminal to ask on, it lists the matches and deletes nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kwire.cli._numbers import TIMEOUT
from kwire.cli._security import add_security_arguments


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap", "-b", required=True, metavar="HOST:PORT[,...]", help="bootstrap servers")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--timeout", type=TIMEOUT, default=10.0, metavar="SECONDS", help="per-request timeout")
    p.add_argument("action", choices=("list", "add", "remove"))
    p.add_argument("--principal", help="e.g. User:alice (list/remove: any when left out)")
    p.add_argument("--host", help="client address or CIDR (add: * when left out)")
    p.add_argument("--resource-type", default=None, help="TOPIC, GROUP, CLUSTER, ... (list/remove: ANY)")
    p.add_argument("--name", help="resource name (CLUSTER: kafka-cluster; list/remove: any)")
    p.add_argument("--pattern", default=None, help="LITERAL (add default), PREFIXED; list/remove: ANY, MATCH")
    p.add_argument("--operation", default=None, help="READ, WRITE, ALL, ... (list/remove: ANY)")
    p.add_argument("--permission", default=None, help="ALLOW (add default) or DENY (list/remove: ANY)")
    p.add_argument("--force", action="store_true", help="remove: do not ask first (kafka-acls.sh --force)")
    add_security_arguments(p)


def _code(enum: type, text: str | None, default: str) -> int:
    from kwire.cli import CliError

    name = (text or default).upper().replace("-", "_")
    try:
        return int(enum[name])  # type: ignore[index]
    except KeyError:
        raise CliError(f"{text!r} is not one of {', '.join(m.name for m in enum)}") from None  # type: ignore[attr-defined]


def run(args: argparse.Namespace) -> int:
    from kwire.broker.core.acl import AclOperation, AclPermission, PatternType, ResourceType
    from kwire.cli import CliError
    from kwire.cli._io import print_table
    from kwire.cli._security import client_security, error_text
    from kwire.client import WireClient
    from kwire.protocol.error_codes import ErrorCode
    from kwire.protocol.messages.create_acls import CreateAclsRequest
    from kwire.protocol.messages.delete_acls import DeleteAclsRequest
    from kwire.protocol.messages.describe_acls import DescribeAclsRequest

    security = client_security(args)

    def fail(code: int, message: str | None) -> None:
        raise CliError(error_text(ErrorCode(code).name, message, security.principal))

    def _listed(lresp: Any) -> list[tuple[str, ...]]:
        if lresp.error_code:
            fail(lresp.error_code, lresp.error_message)
        return [(a.principal, a.host, AclOperation(a.operation).name, AclPermission(a.permission_type).name,
                 ResourceType(r.resource_type).name, r.resource_name, PatternType(r.pattern_type).name)
                for r in lresp.resources for a in r.acls]

    with WireClient(args.bootstrap, client_id="kwire-acls", timeout_s=args.timeout, security=security) as client:
        if args.action == "add":
            if not args.principal or not args.operation or not args.resource_type or not args.name:
                raise CliError("add needs --principal, --operation, --resource-type and --name")
            resp = client.request(CreateAclsRequest(creations=[CreateAclsRequest.AclCreation(
                resource_type=_code(ResourceType, args.resource_type, "ANY"), resource_name=args.name,
                resource_pattern_type=_code(PatternType, args.pattern, "LITERAL"), principal=args.principal,
                host=args.host or "*", operation=_code(AclOperation, args.operation, "ANY"),
                permission_type=_code(AclPermission, args.permission, "ALLOW"))]))
            for r in resp.results:
                if r.error_code:
                    fail(r.error_code, r.error_message)
            print(f"added: {args.principal} {(args.permission or 'ALLOW').upper()} {args.operation.upper()} from host "
                  f"{args.host or '*'} on {args.resource_type.upper()} {args.name} "
                  f"({(args.pattern or 'LITERAL').upper()})")
            return 0
        flt = dict(resource_type_filter=_code(ResourceType, args.resource_type, "ANY"),
                   resource_name_filter=args.name, pattern_type_filter=_code(PatternType, args.pattern, "ANY"),
                   principal_filter=args.principal, host_filter=args.host,
                   operation=_code(AclOperation, args.operation, "ANY"),
                   permission_type=_code(AclPermission, args.permission, "ANY"))
        if args.action == "remove" and not args.force:
            matched = _listed(client.request(DescribeAclsRequest(**flt)))
            if not matched:
                print("removed 0 (no ACL matches)")
                return 0
            print_table(["principal", "host", "operation", "permission", "resource_type", "name", "pattern"],
                        [list(r) for r in matched])
            if not sys.stdin.isatty():
                raise CliError(f"remove would delete the {len(matched)} ACL(s) above; add --force to delete them "
                               f"without being asked")
            answer = input(f"Are you sure you want to remove these {len(matched)} ACL(s)? (y/n) ")
            if answer.strip().lower() not in ("y", "yes"):
                print("removed 0")
                return 0
        if args.action == "remove":
            dresp = client.request(DeleteAclsRequest(filters=[DeleteAclsRequest.DeleteAclsFilter(**flt)]))
            result = dresp.filter_results[0]
            if result.error_code:
                fail(result.error_code, result.error_message)
            rows: list[tuple[str, ...]] = [(m.principal, m.host, AclOperation(m.operation).name, AclPermission(m.permission_type).name,
                     ResourceType(m.resource_type).name, m.resource_name, PatternType(m.pattern_type).name)
                    for m in result.matching_acls]
        else:
            rows = _listed(client.request(DescribeAclsRequest(**flt)))
    header = ["principal", "host", "operation", "permission", "resource_type", "name", "pattern"]
    if args.json:
        json.dump([dict(zip(header, r, strict=True)) for r in rows], sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        if args.action == "remove":
            print(f"removed {len(rows)}")
        print_table(header, [list(r) for r in rows])
    return 0
