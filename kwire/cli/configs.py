"""``kwire configs``: describe and alter topic, broker, group and client-quota configs (like
``kafka-configs.sh`` and ``rpk``), on kwire or any Kafka cluster.

Speaks kwire's own codec over a plain socket (``kwire.client.WireClient``): DescribeConfigs and
IncrementalAlterConfigs for topics, brokers, the cluster-wide broker default and groups;
DescribeClientQuotas and AlterClientQuotas for user / client-id / ip quotas. A broker's own
resource goes to that broker, as Kafka's Admin sends it. Errors are one line with Kafka's reason
(the response's error message, else the error code's name).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kwire.cli import CliError
from kwire.cli._numbers import NODE_ID, TIMEOUT
from kwire.cli._security import add_security_arguments

if TYPE_CHECKING:
    from kwire.client import WireClient

EXAMPLES = """examples:
  kwire configs -b HOST:PORT --topic orders                         dynamic configs of a topic
  kwire configs -b HOST:PORT --topic orders --all                   every config, with its source
  kwire configs -b HOST:PORT --topic orders --alter --add-config retention.ms=60000,cleanup.policy=[delete,compact]
  kwire configs -b HOST:PORT --group workers --alter --add-config share.record.lock.duration.ms=20000
  kwire configs -b HOST:PORT --broker 1 --alter --delete-config log.cleaner.backoff.ms
  kwire configs -b HOST:PORT --broker-defaults --all --json
  kwire configs -b HOST:PORT --user alice --client app --alter --add-config producer_byte_rate=1048576
  kwire configs -b HOST:PORT --entity-type users                   every user quota
"""

# ConfigResource.Type ids
_TOPIC, _BROKER, _GROUP = 2, 4, 32
_RESOURCE = {"topics": _TOPIC, "brokers": _BROKER, "groups": _GROUP}
_QUOTA_TYPES = {"users": "user", "clients": "client-id", "ips": "ip"}
# DescribeConfigsResponse ConfigSource ids, as Kafka names them
_SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
            4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
            7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG"}
# What kafka-configs.sh --describe shows without --all: the resource's own dynamic source only
# (ConfigCommand.describeConfigContext): a broker id's own values, not the cluster default's.
_TOPIC_DYNAMIC, _BROKER_DYNAMIC, _DEFAULT_DYNAMIC, _GROUP_DYNAMIC = 1, 2, 3, 8
_SET, _DELETE, _APPEND, _SUBTRACT = 0, 1, 2, 3  # IncrementalAlterConfigs OpType
_UNSUPPORTED_VERSION = 35


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.description = ("Describe (the default) or alter the configs of a topic, broker, group or client quota "
                     "entity, on any Kafka cluster.")
    p.epilog = EXAMPLES
    p.add_argument("--bootstrap", "-b", required=True, metavar="HOST:PORT[,...]", help="bootstrap servers")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument("--timeout", type=TIMEOUT, default=10.0, metavar="SECONDS", help="per-request timeout")
    who = p.add_argument_group("entity (one of; --user, --client and --ip combine for quotas)")
    who.add_argument("--topic", metavar="NAME", help="a topic")
    who.add_argument("--broker", metavar="ID", type=NODE_ID, help="a broker, by node id")
    who.add_argument("--broker-defaults", action="store_true", help="the cluster-wide broker default")
    who.add_argument("--group", metavar="NAME", help="a consumer, share or streams group")
    who.add_argument("--user", metavar="NAME", help="a user's quotas")
    who.add_argument("--client", metavar="ID", help="a client id's quotas")
    who.add_argument("--ip", metavar="ADDRESS", help="an IP address's quotas")
    who.add_argument("--user-defaults", action="store_true", help="the default user quotas")
    who.add_argument("--client-defaults", action="store_true", help="the default client-id quotas")
    who.add_argument("--ip-defaults", action="store_true", help="the default IP quotas")
    who.add_argument("--entity-type", choices=[*_RESOURCE, *_QUOTA_TYPES],
                     help="as kafka-configs.sh: topics, brokers, groups, users, clients or ips")
    who.add_argument("--entity-name", metavar="NAME", help="with --entity-type (omitted: every entity of the type)")
    who.add_argument("--entity-default", action="store_true", help="with --entity-type: the default entity")
    p.add_argument("--alter", action="store_true", help="change configs (else describe)")
    p.add_argument("--add-config", metavar="K=V[,K=V]", action="append", default=[],
                   help="set configs; a list value in brackets: k=[a,b]; repeatable")
    p.add_argument("--delete-config", metavar="K[,K]", action="append", default=[],
                   help="remove configs (back to the default); repeatable")
    p.add_argument("--append-config", metavar="K=V[,K=V]", action="append", default=[],
                   help="add items to list configs; repeatable")
    p.add_argument("--subtract-config", metavar="K=V[,K=V]", action="append", default=[],
                   help="remove items from list configs; repeatable")
    p.add_argument("--all", action="store_true", help="describe every config, not only the dynamic ones")
    p.add_argument("--validate-only", action="store_true", help="with --alter: check, change nothing")
    add_security_arguments(p)


@dataclass(slots=True)
class Target:
    """What the command line names: a config resource, or a client-quota entity."""

    kind: str  # topics | brokers | groups | quotas
    name: str | None = None  # resource name; None: every one of the kind
    quota: dict[str, str | None] = field(default_factory=dict)  # quota entity type -> name (None: default)
    every_quota_type: str | None = None  # --entity-type users|clients|ips without a name

    def dynamic_source(self) -> int:
        if self.kind == "topics":
            return _TOPIC_DYNAMIC
        if self.kind == "groups":
            return _GROUP_DYNAMIC
        return _DEFAULT_DYNAMIC if self.name == "" else _BROKER_DYNAMIC

    def heading(self, every: bool) -> str:
        """kafka-configs.sh's line above a resource's configs."""
        if self.kind == "brokers" and self.name == "":
            return "Default configs for brokers in the cluster are:"
        return f"{'All' if every else 'Dynamic'} configs for {self.kind[:-1]} {self.name} are:"

    def done(self, verb: str) -> str:
        """kafka-configs.sh's line after an alter."""
        if self.kind == "quotas":
            return f"{verb} updating config for {self.describe()}."
        if self.kind == "brokers" and self.name == "":
            return f"{verb} updating default config for brokers in the cluster."
        return f"{verb} updating config for {self.kind[:-1]} {self.name}."

    def describe(self) -> str:
        if self.kind == "quotas":
            if self.every_quota_type:
                return f"every {self.every_quota_type} quota entity"
            return ", ".join(f"{t} {'<default>' if n is None else repr(n)}" for t, n in self.quota.items())
        label = {"topics": "topic", "brokers": "broker", "groups": "group"}[self.kind]
        return f"{label} {'<default>' if self.name == '' else repr(self.name)}"


def target_of(args: argparse.Namespace) -> Target:
    """The one entity the options name; two different ones, or none, are an error."""
    picked: list[Target] = []
    if args.topic is not None:
        picked.append(Target("topics", args.topic))
    if args.broker is not None:
        picked.append(Target("brokers", str(args.broker)))
    if args.broker_defaults:
        picked.append(Target("brokers", ""))
    if args.group is not None:
        picked.append(Target("groups", args.group))
    quota: dict[str, str | None] = {}
    for value, default, qtype in ((args.user, args.user_defaults, "user"), (args.client, args.client_defaults,
                                                                             "client-id"),
                                  (args.ip, args.ip_defaults, "ip")):
        if value is not None and default:
            raise CliError(f"--{qtype.split('-')[0]} and --{qtype.split('-')[0]}-defaults name two entities")
        if value is not None or default:
            quota[qtype] = value
    if args.entity_type is not None:
        if args.entity_name is not None and args.entity_default:
            raise CliError("--entity-name and --entity-default name two entities")
        name = "" if args.entity_default else args.entity_name
        if args.entity_type in _RESOURCE:
            if args.entity_type == "brokers" and name not in (None, "") and not name.isdigit():
                raise CliError(f"--entity-name {name!r}: a broker is named by its node id")
            picked.append(Target(args.entity_type, name))
        else:
            qtype = _QUOTA_TYPES[args.entity_type]
            if name is None:
                if quota:
                    raise CliError("--entity-type without a name cannot combine with --user/--client/--ip")
                picked.append(Target("quotas", every_quota_type=qtype))
            else:
                quota[qtype] = name or None
    if quota:
        picked.append(Target("quotas", quota=quota))
    if not picked:
        raise CliError("name an entity: --topic, --broker, --broker-defaults, --group, --user, --client, --ip "
                       "(or --entity-type)")
    if len(picked) > 1:
        raise CliError("name one entity: " + " and ".join(t.describe() for t in picked))
    return picked[0]


def split_configs(items: list[str], *, with_values: bool) -> list[tuple[str, str | None]]:
    """``k=v,k2=[a,b]`` (kafka-configs.sh's form) -> [(k, v), (k2, "a,b")]; names only without values."""
    out: list[tuple[str, str | None]] = []
    for item in items:
        parts, depth, cur = [], 0, ""
        for ch in item:
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
            depth += ch == "["
            depth -= ch == "]"
            cur += ch
        parts.append(cur)
        for part in (x.strip() for x in parts):
            if not part:
                continue
            if not with_values:
                out.append((part, None))
                continue
            key, sep, value = part.partition("=")
            if not sep or not key:
                raise CliError(f"{part!r} is not KEY=VALUE")
            if value.startswith("[") and value.endswith("]"):
                value = value[1:-1]
            out.append((key.strip(), value))
    return out


def run(args: argparse.Namespace) -> int:
    from kwire.client import WireClient
    from kwire.errors import WireClientError

    target = target_of(args)
    ops = [(k, v, _SET) for k, v in split_configs(args.add_config, with_values=True)]
    ops += [(k, v, _DELETE) for k, v in split_configs(args.delete_config, with_values=False)]
    ops += [(k, v, _APPEND) for k, v in split_configs(args.append_config, with_values=True)]
    ops += [(k, v, _SUBTRACT) for k, v in split_configs(args.subtract_config, with_values=True)]
    if ops and not args.alter:
        raise CliError("--add-config/--delete-config/--append-config/--subtract-config need --alter")
    if args.alter and not ops:
        raise CliError("--alter needs --add-config, --delete-config, --append-config or --subtract-config")
    if args.alter and (target.every_quota_type or (target.kind != "quotas" and target.name is None)):
        raise CliError("--alter needs one entity (a name or the default), not every entity of a type")
    from kwire.cli._security import client_security

    with WireClient(args.bootstrap, client_id="kwire-configs", timeout_s=args.timeout,
                    security=client_security(args)) as client:
        try:
            if target.kind == "quotas":
                if args.alter:
                    _alter_quotas(client, target, ops, args.validate_only)
                    return _altered(args, target)
                return _print_quotas(args, _describe_quotas(client, target))
            if args.alter:
                _alter_configs(client, target, ops, args.validate_only)
                return _altered(args, target)
            return _print_configs(args, _describe_configs(client, target, every=args.all))
        except WireClientError as exc:
            raise CliError(str(exc)) from None


# --- configs -------------------------------------------------------------------------------------


def _error(code: int, message: str | None, client: WireClient) -> str:
    from kwire.cli._security import error_text
    from kwire.protocol.error_codes import ErrorCode

    try:
        name = ErrorCode(code).name
    except ValueError:
        name = f"error {code}"
    return error_text(name, message, client.security.principal)


def _names(client: WireClient, target: Target) -> list[str]:
    """The resources a describe covers: the one named, or every topic / group / broker."""
    if target.name is not None:
        if target.kind == "brokers" and target.name and int(target.name) not in client.metadata_nodes():
            raise CliError(f"broker {target.name} is not in the cluster (brokers: "
                           f"{', '.join(map(str, sorted(client.nodes)))})")
        return [target.name]
    if target.kind == "brokers":
        return [str(n) for n in sorted(client.metadata_nodes())]
    if target.kind == "topics":
        from kwire.protocol.messages.metadata import MetadataRequest

        meta = client.request(MetadataRequest(topics=None, allow_auto_topic_creation=False))
        return sorted(t.name for t in meta.topics if t.name and not t.is_internal)
    from kwire.protocol.messages.list_groups import ListGroupsRequest

    groups: set[str] = set()
    for node in sorted(client.metadata_nodes()):
        groups.update(g.group_id for g in client.request(ListGroupsRequest(), node=node).groups)
    return sorted(groups)


def _node(target: Target, name: str) -> int | None:
    """A broker's own resource goes to that broker (Kafka's Admin does the same)."""
    return int(name) if target.kind == "brokers" and name else None


def _describe_configs(client: WireClient, target: Target, *, every: bool) -> list[dict[str, Any]]:
    from kwire.protocol.messages.describe_configs import DescribeConfigsRequest

    rtype = _RESOURCE[target.kind]
    out = []
    names = _names(client, target)
    if not names:
        raise CliError(f"the cluster has no {target.kind}")
    for name in names:
        req = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=rtype, resource_name=name, configuration_keys=None)], include_synonyms=True)
        (res,) = client.request(req, node=_node(target, name)).results
        if res.error_code:
            raise CliError(f"{Target(target.kind, name).describe()}: {_error(res.error_code, res.error_message, client)}")
        configs = [{"name": c.name, "value": c.value, "source": _SOURCES.get(c.config_source, str(c.config_source)),
                    "read_only": c.read_only, "sensitive": c.is_sensitive,
                    "synonyms": [{"name": s.name, "value": s.value, "source": _SOURCES.get(s.source, str(s.source))}
                                 for s in c.synonyms]}
                   for c in sorted(res.configs, key=lambda c: c.name)
                   if every or c.config_source == Target(target.kind, name).dynamic_source()]
        out.append({"entity_type": target.kind, "entity_name": name, "configs": configs})
    return out


def _alter_configs(client: WireClient, target: Target, ops: list[tuple[str, str | None, int]],
                   validate_only: bool) -> None:
    from kwire.protocol.messages.incremental_alter_configs import IncrementalAlterConfigsRequest as Req

    assert target.name is not None
    _names(client, target)  # a broker id must exist
    req = Req(resources=[Req.AlterConfigsResource(
        resource_type=_RESOURCE[target.kind], resource_name=target.name,
        configs=[Req.AlterableConfig(name=k, config_operation=op, value=v) for k, v, op in ops])],
        validate_only=validate_only)
    (res,) = client.request(req, node=_node(target, target.name)).responses
    if res.error_code:
        raise CliError(f"{target.describe()}: {_error(res.error_code, res.error_message, client)}")


def _print_configs(args: argparse.Namespace, resources: list[dict[str, Any]]) -> int:
    from kwire.cli._io import print_table

    if args.json:
        json.dump(resources, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    for i, r in enumerate(resources):
        print(("" if i == 0 else "\n") + Target(r["entity_type"], r["entity_name"]).heading(args.all))
        if not r["configs"]:
            print("  (none)")
            continue
        print_table(["name", "value", "source"],
                    [[c["name"], _shown(c), c["source"]] for c in r["configs"]])
    return 0


def _shown(config: dict[str, Any]) -> object:
    """A config's value cell: kafka-configs.sh prints a null value as ``name=null``; the table says
    ``(null)`` so it cannot be read as the string "null" (``(sensitive)`` when the broker hid it)."""
    if config["value"] is None:
        return "(sensitive)" if config["sensitive"] else "(null)"
    return config["value"]


def _altered(args: argparse.Namespace, target: Target) -> int:
    verb = "Validated" if args.validate_only else "Completed"
    if args.json:
        json.dump({"altered": target.describe(), "validate_only": bool(args.validate_only)}, sys.stdout)
        sys.stdout.write("\n")
    else:
        print(target.done(verb))
    return 0


# --- client quotas -------------------------------------------------------------------------------


def _quota_version(client: WireClient, api_key: int, api: str) -> None:
    """One line when the cluster does not serve the quota APIs (not advertised in ApiVersions)."""
    if client.supported_version(api_key) is None:
        raise CliError(f"the cluster does not serve {api} (UNSUPPORTED_VERSION: not advertised in ApiVersions), "
                       f"so it has no client quotas to show or change here")


def _describe_quotas(client: WireClient, target: Target) -> list[dict[str, Any]]:
    from kwire.protocol.messages.describe_client_quotas import DescribeClientQuotasRequest as Req
    from kwire.protocol.registry import ApiKey

    _quota_version(client, ApiKey.DESCRIBE_CLIENT_QUOTAS, "DescribeClientQuotas")
    if target.every_quota_type:  # MatchType SPECIFIED=0, DEFAULT=1, ANY=2
        components = [Req.ComponentData(entity_type=target.every_quota_type, match_type=2, match=None)]
    else:
        components = [Req.ComponentData(entity_type=t, match_type=0 if n is not None else 1, match=n)
                      for t, n in target.quota.items()]
    resp = client.request(Req(components=components, strict=not target.every_quota_type))
    if resp.error_code:
        _unsupported(resp.error_code, "DescribeClientQuotas")
        raise CliError(f"{target.describe()}: {_error(resp.error_code, resp.error_message, client)}")
    return [{"entity": {e.entity_type: e.entity_name for e in entry.entity},
             "quotas": {v.key: v.value for v in sorted(entry.values, key=lambda v: v.key)}}
            for entry in resp.entries or []]


def _unsupported(code: int, api: str) -> None:
    if code == _UNSUPPORTED_VERSION:
        raise CliError(f"the cluster does not serve {api} (UNSUPPORTED_VERSION)")


def _alter_quotas(client: WireClient, target: Target, ops: list[tuple[str, str | None, int]],
                  validate_only: bool) -> None:
    from kwire.protocol.messages.alter_client_quotas import AlterClientQuotasRequest as Req
    from kwire.protocol.registry import ApiKey

    _quota_version(client, ApiKey.ALTER_CLIENT_QUOTAS, "AlterClientQuotas")
    quota_ops = []
    for key, value, op in ops:
        if op in (_APPEND, _SUBTRACT):
            raise CliError("client quotas are numbers: use --add-config or --delete-config")
        if op == _DELETE:
            quota_ops.append(Req.OpData(key=key, value=0.0, remove=True))
            continue
        try:
            number = float(value or "")
        except ValueError:
            raise CliError(f"{key}={value}: a quota is a number") from None
        quota_ops.append(Req.OpData(key=key, value=number, remove=False))
    req = Req(entries=[Req.EntryData(entity=[Req.EntityData(entity_type=t, entity_name=n)
                                             for t, n in target.quota.items()], ops=quota_ops)],
              validate_only=validate_only)
    for entry in client.request(req).entries:
        if entry.error_code:
            _unsupported(entry.error_code, "AlterClientQuotas")
            raise CliError(f"{target.describe()}: {_error(entry.error_code, entry.error_message, client)}")


def _print_quotas(args: argparse.Namespace, entries: list[dict[str, Any]]) -> int:
    if args.json:
        json.dump(entries, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    if not entries:
        print("(no quotas)")
    for e in entries:
        who = ", ".join(f"{t}={'<default>' if n is None else n}" for t, n in sorted(e["entity"].items()))
        values = ", ".join(f"{k}={int(v) if float(v).is_integer() else v}" for k, v in e["quotas"].items())
        print(f"Quota configs for {who}: {values}")
    return 0
