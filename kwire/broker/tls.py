"""TLS for the SSL and SASL_SSL listeners: server contexts from Kafka's ssl.* settings, a
throwaway CA for tests and ``kwire broker --tls``, and the peer certificate's distinguished name.

Kafka's settings, read per listener (``listener.name.<l>.`` first): ``ssl.keystore.type`` must be
PEM here (``ssl.keystore.location``: one PEM file with the private key and the certificate chain,
or ``ssl.keystore.key`` / ``ssl.keystore.certificate.chain`` inline), ``ssl.truststore.type``
PEM with ``ssl.truststore.location`` (or ``ssl.truststore.certificates``), ``ssl.client.auth``
(required | requested | none), ``ssl.enabled.protocols``. JKS and PKCS12 stores are Java
formats the standard library cannot read: they are refused with the reason.
"""

from __future__ import annotations

import os
import shutil
import ssl
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kwire.errors import ConfigError

__all__ = ["ThrowawayCA", "server_context", "peer_distinguished_name", "client_context"]

# SslConfigs / BrokerSecurityConfigs.SSL_CLIENT_AUTH_CONFIG values
_CLIENT_AUTH = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3,
              "TLSv1.1": ssl.TLSVersion.TLSv1_1, "TLSv1": ssl.TLSVersion.TLSv1}


@dataclass(slots=True)
class ThrowawayCA:
    """A CA and a broker certificate made on demand (trustme), written as PEM files in ``directory``.

    ``ca_file``: what a client trusts; ``keystore``: the broker's key and chain (ssl.keystore.location);
    ``client_keystore(name)`` makes a client certificate for mTLS (subject CN=name).
    """

    directory: Path
    ca_file: Path
    keystore: Path
    _ca: object
    owned: bool = False  # the directory was made for this CA (a temporary one): ``remove`` deletes it

    @classmethod
    def create(cls, directory: str | os.PathLike[str] | None = None,
               hosts: tuple[str, ...] = ("localhost", "127.0.0.1", "::1")) -> ThrowawayCA:
        try:
            import trustme
        except ImportError:  # pragma: no cover - a dependency of kwire
            raise ConfigError("a throwaway CA needs the trustme package (pip install trustme)") from None
        owned = directory is None
        d = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="kwire-tls-"))
        d.mkdir(parents=True, exist_ok=True)
        ca = trustme.CA(organization_name="kwire throwaway CA")
        cert = ca.issue_cert(*dict.fromkeys(hosts), common_name="kwire-broker")
        ca_file = d / "ca.pem"
        ca.cert_pem.write_to_path(str(ca_file))
        keystore = d / "broker.pem"
        cert.private_key_and_cert_chain_pem.write_to_path(str(keystore))
        return cls(d, ca_file, keystore, ca, owned)

    def remove(self) -> None:
        """Delete the temporary directory of a CA made without one (its private keys included);
        a directory the caller named is left as it is."""
        if self.owned:
            shutil.rmtree(self.directory, ignore_errors=True)

    def client_keystore(self, name: str, *, organization: str | None = None,
                        not_after: object | None = None) -> Path:
        """A client certificate with subject ``CN=name[,O=organization]`` (key and chain in one PEM)."""
        import trustme

        ca: trustme.CA = self._ca  # type: ignore[assignment]
        kwargs: dict[str, object] = {"common_name": name}
        if organization is not None:
            kwargs["organization_name"] = organization
        if not_after is not None:
            kwargs["not_after"] = not_after
        cert = ca.issue_cert(f"{name}.client.kwire", **kwargs)  # type: ignore[arg-type]
        path = self.directory / f"client-{name}.pem"
        cert.private_key_and_cert_chain_pem.write_to_path(str(path))
        return path


def _pem_setting(get: Callable[[str], str | None], kind: str) -> None:
    t = (get(f"ssl.{kind}.type") or "JKS").upper()
    if t != "PEM":
        raise ConfigError(f"ssl.{kind}.type={t}: kwire reads PEM stores only (ssl.{kind}.type=PEM)")


def server_context(get: Callable[[str], str | None], listener: str) -> ssl.SSLContext:
    """The server SSLContext of one listener from its settings (``get`` reads a listener-scoped key)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    location = get("ssl.keystore.location")
    inline_key, inline_chain = get("ssl.keystore.key"), get("ssl.keystore.certificate.chain")
    if location is None and not (inline_key and inline_chain):
        raise ConfigError(f"listener {listener} uses TLS but ssl.keystore.location is not set")
    _pem_setting(get, "keystore")
    try:
        if location is not None:
            ctx.load_cert_chain(location, password=get("ssl.key.password"))
        else:
            with tempfile.NamedTemporaryFile("w", suffix=".pem", delete=False) as f:
                f.write(f"{inline_key}\n{inline_chain}\n")
            try:
                ctx.load_cert_chain(f.name, password=get("ssl.key.password"))
            finally:
                os.unlink(f.name)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"listener {listener}: cannot load the keystore {location or '(inline)'}: {exc}") from None
    trust, trust_inline = get("ssl.truststore.location"), get("ssl.truststore.certificates")
    if trust is not None or trust_inline:
        _pem_setting(get, "truststore")
        try:
            if trust is not None:
                ctx.load_verify_locations(cafile=trust)
            else:
                ctx.load_verify_locations(cadata=trust_inline)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"listener {listener}: cannot load the truststore {trust or '(inline)'}: {exc}") from None
    auth = (get("ssl.client.auth") or "none").lower()
    if auth not in _CLIENT_AUTH:
        raise ConfigError(f"ssl.client.auth: {auth!r} is not one of required, requested, none")
    if auth != "none" and trust is None and not trust_inline:
        raise ConfigError(f"listener {listener}: ssl.client.auth={auth} needs ssl.truststore.location")
    ctx.verify_mode = _CLIENT_AUTH[auth]
    protocols = [p.strip() for p in (get("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3").split(",") if p.strip()]
    versions = [_PROTOCOLS[p] for p in protocols if p in _PROTOCOLS]
    if not versions:
        raise ConfigError(f"ssl.enabled.protocols: none of {protocols} is a TLS version kwire knows")
    ctx.minimum_version, ctx.maximum_version = min(versions), max(versions)
    return ctx


def client_context(ca_file: str | os.PathLike[str], keystore: str | os.PathLike[str] | None = None) -> ssl.SSLContext:
    """A client context trusting ``ca_file`` (and presenting ``keystore``): for tests and tools."""
    ctx = ssl.create_default_context(cafile=str(ca_file))
    if keystore is not None:
        ctx.load_cert_chain(str(keystore))
    return ctx


def peer_distinguished_name(der: bytes) -> str:
    """The subject of a DER certificate as RFC 2253 text, what Java's X500Principal.getName()
    gives Kafka's DefaultKafkaPrincipalBuilder (most specific RDN first: ``CN=alice,O=acme``)."""
    from cryptography import x509

    return x509.load_der_x509_certificate(der).subject.rfc4514_string()
