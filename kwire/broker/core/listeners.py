"""Listeners as Kafka names them, sans-I/O: what each broker listens on and what it advertises.

Theory of operation
-------------------
* ``listeners``, ``listener.security.protocol.map`` and ``advertised.listeners`` are read from
  the broker's start-up settings exactly as server.properties writes them
  (``SASL_SSL://:9093,PLAINTEXT://127.0.0.1:9092``); ``parse_listeners`` turns them into
  ``Listener`` rows (SEC-1). Without ``listeners`` there is one, named after its protocol:
  ``SASL_PLAINTEXT`` when ``BrokerConfig.sasl`` is set, else ``PLAINTEXT``, on ``BrokerConfig.port``.
* With several brokers, broker ``i`` (0-based) listens on every listener's port plus
  ``i * len(listeners)`` (one listener: consecutive ports, as before); port 0 is any free port.
* A connection knows the listener it came in on; Metadata, FindCoordinator, DescribeCluster
  and the KIP-951 node endpoints answer with that listener's advertised address (SEC-2).
* Settings Kafka scopes to one listener (``listener.name.<name>.<key>``, and
  ``listener.name.<name>.<mechanism>.<key>`` for SASL) win over the plain key (``setting``).
* ``PrincipalMapper`` is Kafka's SslPrincipalMapper (``ssl.principal.mapping.rules``): the mTLS
  principal from the certificate subject's distinguished name (SEC-6).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from kwire.errors import ConfigError

__all__ = ["SecurityProtocol", "Listener", "parse_listeners", "listener_setting", "PrincipalMapper",
           "DEFAULT_PROTOCOL_MAP"]


class SecurityProtocol(StrEnum):
    """org.apache.kafka.common.security.auth.SecurityProtocol."""

    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


# SocketServerConfigs.LISTENER_SECURITY_PROTOCOL_MAP_DEFAULT at d79bd502
DEFAULT_PROTOCOL_MAP = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
# SocketServerConfigs.LISTENER_SECURITY_PROTOCOL_MAP_CONFIG / Endpoint parsing (CoreUtils.listenerListToEndPoints)
_ENDPOINT = re.compile(r"^(?P<name>[a-zA-Z][\w]*)://(?P<host>\[[0-9a-fA-F:.]*\]|[^:/]*):(?P<port>-?\d+)$")


@dataclass(slots=True, frozen=True)
class Listener:
    """One listener: its name, protocol, bind host and first broker's port, and what it advertises."""

    name: str
    protocol: SecurityProtocol
    host: str  # "" = the broker's --host
    port: int  # the first broker's port; 0 = any free port
    advertised_host: str | None = None
    advertised_port: int | None = None  # None or 0: the port bound


def _protocol_map(text: str) -> dict[str, SecurityProtocol]:
    out: dict[str, SecurityProtocol] = {}
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        name, sep, proto = item.partition(":")
        if not sep:
            raise ConfigError(f"listener.security.protocol.map: {item!r} is not NAME:PROTOCOL")
        try:
            out[name.strip().upper()] = SecurityProtocol(proto.strip().upper())
        except ValueError:
            raise ConfigError(f"listener.security.protocol.map: unknown security protocol {proto!r} "
                              f"(one of {', '.join(p.value for p in SecurityProtocol)})") from None
    return out


def _endpoints(key: str, text: str) -> list[tuple[str, str, int]]:
    out = []
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        m = _ENDPOINT.match(item)
        if m is None:
            raise ConfigError(f"{key}: unable to parse {item!r} to a broker endpoint (NAME://HOST:PORT)")
        host = m["host"][1:-1] if m["host"].startswith("[") else m["host"]
        out.append((m["name"].upper(), host, int(m["port"])))
    names = [n for n, _, _ in out]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ConfigError(f"{key}: each listener must have a different name, {', '.join(sorted(dup))} is repeated")
    return out


def parse_listeners(settings: Mapping[str, str], *, default_port: int, sasl: bool,
                    advertised_host: str | None = None) -> list[Listener]:
    """The listeners of the broker settings (SocketServerConfigs / KafkaConfig.listeners at d79bd502)."""
    pmap = _protocol_map(settings.get("listener.security.protocol.map", DEFAULT_PROTOCOL_MAP))
    text = settings.get("listeners")
    if text is None:
        name = "SASL_PLAINTEXT" if sasl else "PLAINTEXT"
        eps = [(name, "", default_port)]
    else:
        eps = _endpoints("listeners", text)
        if not eps:
            raise ConfigError("listeners: at least one listener is needed")
    ports = [p for _, _, p in eps if p]
    if len(set(ports)) != len(ports):
        raise ConfigError(f"listeners: each listener must have a different port: {text}")
    adv = {n: (h, p) for n, h, p in _endpoints("advertised.listeners", settings.get("advertised.listeners", ""))}
    out = []
    for name, host, port in eps:
        proto = pmap.get(name)
        if proto is None:
            raise ConfigError(f"No security protocol defined for listener {name} (listener.security.protocol.map)")
        if port < 0 or port > 65535:
            raise ConfigError(f"listeners: port {port} of {name} is out of range")
        a = adv.pop(name, None)
        out.append(Listener(name, proto, host, port, a[0] if a and a[0] else advertised_host,
                            a[1] if a else None))
    if adv:
        raise ConfigError(f"advertised.listeners: {', '.join(sorted(adv))} is not a listener name of listeners")
    return out


def listener_setting(get: Callable[[str], str | None], listener: str, key: str,
                     mechanism: str | None = None) -> str | None:
    """A setting as Kafka reads it for one listener: ``listener.name.<l>.<mech>.<key>``, then
    ``listener.name.<l>.<key>``, then ``<key>`` (ListenerName.configPrefix / saslMechanismConfigPrefix)."""
    prefix = f"listener.name.{listener.lower()}."
    if mechanism is not None:
        v = get(f"{prefix}{mechanism.lower()}.{key}")
        if v is not None:
            return v
    v = get(prefix + key)
    return v if v is not None else get(key)


# --- SslPrincipalMapper -------------------------------------------------------------------------

# SslPrincipalMapper.RULE_PATTERN at d79bd502 (Java's regex, the same in Python's re here)
_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_RULE_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_RULE_PARSER = re.compile(_RULE)
_BACKREF = re.compile(r"\$(\d+)")


def _java_replacement(text: str, groups: int) -> str:
    """A Java replaceAll replacement as a Python one: ``\\c`` is a literal c, ``$n`` a group; a
    reference beyond the groups is cut to a valid prefix or kept literal (SslPrincipalMapper's
    escapeLiteralBackReferences)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            out.append(text[i + 1].replace("\\", "\\\\"))
            i += 2
            continue
        m = _BACKREF.match(text, i) if ch == "$" else None
        if m is None:
            out.append("\\\\" if ch == "\\" else ch)
            i += 1
            continue
        digits = m.group(1)
        idx = int(digits)
        if not digits.startswith("0"):
            while idx > groups and idx >= 10:
                idx //= 10
        if idx > groups:
            out.append("$" + digits)
        else:
            used = len(str(idx)) if not digits.startswith("0") else 1
            out.append(f"\\g<{idx}>" + digits[used:])
        i = m.end()
    return "".join(out)


@dataclass(slots=True, frozen=True)
class _Rule:
    default: bool
    pattern: re.Pattern[str] | None = None
    replacement: str = ""
    lower: bool = False
    upper: bool = False

    def apply(self, dn: str) -> str | None:
        if self.default:
            return dn
        assert self.pattern is not None
        if self.pattern.fullmatch(dn) is None:
            return None
        out = self.pattern.sub(_java_replacement(self.replacement, self.pattern.groups), dn)
        return out.lower() if self.lower else out.upper() if self.upper else out

    def __str__(self) -> str:
        if self.default:
            return "DEFAULT"
        assert self.pattern is not None
        return f"RULE:{self.pattern.pattern}/{self.replacement}" + ("/L" if self.lower else "/U" if self.upper else "")


class PrincipalMapper:
    """``ssl.principal.mapping.rules``: RULE:pattern/replacement/[LU] and DEFAULT, comma-separated."""

    def __init__(self, rules: str | None) -> None:
        text = "DEFAULT" if rules is None else rules
        parts = [m.group(1) for m in _RULE_SPLITTER.finditer(text.strip())]
        self.rules: list[_Rule] = []
        for rule in parts:
            m = _RULE_PARSER.match(rule)
            if m is None:
                raise ConfigError(f"ssl.principal.mapping.rules: Invalid rule: {rule}")
            if m.end() != len(rule):
                raise ConfigError(f"ssl.principal.mapping.rules: Invalid rule: `{rule}`, unmatched substring: "
                                  f"`{rule[m.end():]}`")
            if m.group(1) is not None:
                self.rules.append(_Rule(True))
            elif m.group(2) is not None:
                try:
                    pattern = re.compile(m.group(2))
                except re.error as exc:
                    raise ConfigError(f"ssl.principal.mapping.rules: Invalid rule: {rule} ({exc})") from None
                self.rules.append(_Rule(False, pattern, m.group(4), m.group(6) == "L", m.group(6) == "U"))
            # an empty rule is ignored, as Kafka ignores it

    def name(self, distinguished_name: str) -> str:
        """SslPrincipalMapper.getName: the first rule that applies; none → ``ConfigError`` (NoMatchingRule)."""
        for r in self.rules:
            out = r.apply(distinguished_name)
            if out is not None:
                return out
        raise ConfigError(f"No rules apply to {distinguished_name}, rules [{', '.join(map(str, self.rules))}]")
