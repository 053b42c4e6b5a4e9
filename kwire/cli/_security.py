"""Client security options shared by the commands that talk to a cluster (``acls``, ``configs``,
``groups``, ``topics``, ``dlq -b``), as Kafka's tools take them: ``--command-config FILE`` (a
properties file: security.protocol, sasl.mechanism, sasl.jaas.config or sasl.username /
sasl.password, ssl.truststore.location or ssl.ca.location, ...) and shorthands that override it.

Without a ``security.protocol``, ``--username`` implies SASL_PLAINTEXT (SASL_SSL with a CA file)
and a CA file alone implies SSL. ``sasl.mechanism`` defaults to PLAIN (Kafka's default, GSSAPI,
is not something kwire's client speaks).
"""

from __future__ import annotations

import argparse
import re

from kwire.client import SASL_MECHANISMS, SECURITY_PROTOCOLS, ClientSecurity

__all__ = ["add_security_arguments", "client_security", "read_properties", "error_text"]

_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')
# Settings the client reads; others (client.id, request.timeout.ms, ...) are Kafka client settings
# with no effect here and are ignored, as the Java tools ignore settings their admin client lacks.
_PEM_STORE_TYPES = ("PEM", "")


def add_security_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("security (as a Kafka client's settings)")
    g.add_argument("--command-config", metavar="FILE",
                   help="client properties: security.protocol, sasl.mechanism, sasl.jaas.config (or sasl.username "
                        "and sasl.password), ssl.truststore.location (PEM) or ssl.ca.location")
    g.add_argument("--security-protocol", choices=SECURITY_PROTOCOLS, type=str.upper,
                   help="PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL")
    g.add_argument("--sasl-mechanism", choices=SASL_MECHANISMS, type=str.upper, help="default: PLAIN")
    g.add_argument("--username", help="SASL user (implies SASL_PLAINTEXT, or SASL_SSL with --ca-file)")
    g.add_argument("--password", help="SASL password")
    g.add_argument("--ca-file", metavar="PEM", help="CA certificate(s) that verify the broker (implies SSL)")


def read_properties(path: str) -> dict[str, str]:
    """A Java properties file: ``key=value`` or ``key: value``, ``#``/``!`` comments, ``\\`` continuation."""
    from kwire.cli import CliError

    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as exc:
        raise CliError(f"--command-config {path}: {exc.strerror or exc}") from None
    out: dict[str, str] = {}
    pending = ""
    for raw in lines:
        line = pending + raw.lstrip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        m = re.match(r"((?:[^=:\s\\]|\\.)+)\s*[=:\s]\s*(.*)$", line)
        if m is None:
            out[line.strip()] = ""
            continue
        out[m.group(1)] = m.group(2).strip()
    return out


def client_security(args: argparse.Namespace) -> ClientSecurity:
    """The options as a ``ClientSecurity``; raises CliError (one line) on a bad combination."""
    from kwire.cli import CliError
    from kwire.errors import WireClientError

    props = read_properties(args.command_config) if getattr(args, "command_config", None) else {}
    protocol = getattr(args, "security_protocol", None) or props.get("security.protocol", "").upper() or None
    mechanism = getattr(args, "sasl_mechanism", None) or props.get("sasl.mechanism", "").upper() or "PLAIN"
    username, password = _jaas_user(props.get("sasl.jaas.config", ""))
    username = getattr(args, "username", None) or props.get("sasl.username") or username
    password = getattr(args, "password", None) or props.get("sasl.password") or password
    ca_file = getattr(args, "ca_file", None) or props.get("ssl.ca.location")
    if not ca_file and props.get("ssl.truststore.location"):
        if props.get("ssl.truststore.type", "").upper() not in _PEM_STORE_TYPES and not _is_pem(
                props["ssl.truststore.location"]):
            raise CliError(f"ssl.truststore.location {props['ssl.truststore.location']}: kwire's client reads PEM "
                           "trust stores only (ssl.truststore.type=PEM); export the CA with keytool -exportcert -rfc")
        ca_file = props["ssl.truststore.location"]
    cert_file = props.get("ssl.certificate.location") or props.get("ssl.keystore.location")
    key_file = props.get("ssl.key.location")
    if protocol is None:
        protocol = ("SASL_SSL" if ca_file else "SASL_PLAINTEXT") if username else ("SSL" if ca_file else "PLAINTEXT")
    if password is not None and username is None:
        raise CliError("--password without --username (or sasl.username / a JAAS username)")
    check_hostname = props.get("ssl.endpoint.identification.algorithm", "https").lower() == "https"
    try:
        return ClientSecurity(protocol=protocol, mechanism=mechanism, username=username, password=password,
                              ca_file=ca_file, cert_file=cert_file, key_file=key_file, check_hostname=check_hostname)
    except WireClientError as exc:
        raise CliError(str(exc)) from None


def _jaas_user(jaas: str) -> tuple[str | None, str | None]:
    opts = {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in _JAAS_OPTION.findall(jaas)}
    return opts.get("username"), opts.get("password")


def _is_pem(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return b"-----BEGIN" in f.read(4096)
    except OSError:
        return False


def error_text(name: str, message: str | None, principal: str | None) -> str:
    """``NAME: message`` (the name once when the message only repeats it), with the principal the
    request ran as on an authorization failure: the first thing to check is who the broker saw."""
    text = f"{name}: {message}" if message and message != name else name
    if name.endswith("AUTHORIZATION_FAILED") and principal:
        text += f" (as principal {principal})"
    return text
