"""tools/librdkafka_secure.py: the certificates it makes for librdkafka's test-runner work against
kwire's TLS listener with ``ssl.client.auth=required``, and its verdicts read the runner's log as
the peer suite's run_against.sh does."""

from __future__ import annotations

import argparse
import ssl
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import librdkafka_secure as tool  # noqa: E402

from kwire.broker.tls import server_context  # noqa: E402


def handshake(server: ssl.SSLObject, client: ssl.SSLObject, s_in: ssl.MemoryBIO, s_out: ssl.MemoryBIO,
              c_in: ssl.MemoryBIO, c_out: ssl.MemoryBIO) -> None:
    """Drive both ends over memory BIOs until both handshakes are done (errors propagate)."""
    done = {"c": False, "s": False}
    for _ in range(20):
        for name, end in (("c", client), ("s", server)):
            if not done[name]:
                try:
                    end.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
            s_in.write(c_out.read())
            c_in.write(s_out.read())
        if all(done.values()):
            return
    raise AssertionError("handshake did not finish")


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tool.Certs:
    return tool.make_certs(tmp_path_factory.mktemp("certs"))


def test_client_certificate_is_accepted_by_kwire_mtls_listener(certs: tool.Certs) -> None:
    settings = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs.broker),
                "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs.ca),
                "ssl.client.auth": "required"}
    sctx = server_context(settings.get, "SSL")
    cctx = ssl.create_default_context(cafile=str(certs.ca))
    cctx.load_cert_chain(str(certs.client_cert), str(certs.client_key), password=tool.KEY_PASSWORD)
    s_in, s_out, c_in, c_out = (ssl.MemoryBIO() for _ in range(4))
    server = sctx.wrap_bio(s_in, s_out, server_side=True)
    client = cctx.wrap_bio(c_in, c_out, server_hostname="localhost")
    handshake(server, client, s_in, s_out, c_in, c_out)
    assert server.getpeercert(binary_form=True)  # the client presented its certificate


def test_a_client_without_certificate_is_refused_under_required(certs: tool.Certs) -> None:
    settings = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs.broker),
                "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs.ca),
                "ssl.client.auth": "required", "ssl.enabled.protocols": "TLSv1.2"}
    sctx = server_context(settings.get, "SSL")
    cctx = ssl.create_default_context(cafile=str(certs.ca))
    s_in, s_out, c_in, c_out = (ssl.MemoryBIO() for _ in range(4))
    server = sctx.wrap_bio(s_in, s_out, server_side=True)
    client = cctx.wrap_bio(c_in, c_out, server_hostname="localhost")
    with pytest.raises(ssl.SSLError):
        handshake(server, client, s_in, s_out, c_in, c_out)


def test_trivup_ssl_files_for_test_0097(certs: tool.Certs) -> None:
    """0097 reads trivup's SSL_* files: a PKCS#12 keystore holding the key, the certificate and the
    CA (it reads the CA from it too), DER and PEM forms, all under SSL_password."""
    from cryptography.hazmat.primitives.serialization import (
        load_der_private_key,
        load_pem_private_key,
        pkcs12,
    )
    from cryptography.x509 import load_der_x509_certificate, load_pem_x509_certificate

    env = certs.env
    assert env["SSL_password"] == tool.KEY_PASSWORD
    key, cert, cas = pkcs12.load_key_and_certificates(Path(env["SSL_pkcs"]).read_bytes(), tool.KEY_PASSWORD.encode())
    ca = load_pem_x509_certificate(Path(env["SSL_all_cas_pem"]).read_bytes())
    assert key is not None and cert is not None and cas == [ca]
    assert load_der_x509_certificate(Path(env["SSL_pub_der"]).read_bytes()) == cert
    assert load_der_x509_certificate(Path(env["SSL_ca_der"]).read_bytes()) == ca
    with pytest.raises(TypeError):  # the PEM key is encrypted, as trivup's is
        load_pem_private_key(Path(env["SSL_priv_pem"]).read_bytes(), None)
    assert load_pem_private_key(Path(env["SSL_priv_pem"]).read_bytes(), tool.KEY_PASSWORD.encode())
    assert load_der_private_key(Path(env["SSL_priv_der"]).read_bytes(), None)


def ns(**kw: object) -> argparse.Namespace:
    base: dict[str, object] = {"security": "SASL_SSL", "mechanism": "SCRAM-SHA-512", "port": 39292,
                               "client_auth": "none", "acls": True, "set": [], "reauth_ms": 10000,
                               "timeout_multiplier": "2", "verbose": False, "client_set": []}
    base.update(kw)
    return argparse.Namespace(**base)


def test_client_conf_and_broker_args_match(certs: tool.Certs, tmp_path: Path) -> None:
    a = ns()
    conf = tool.client_conf(a, certs)
    assert "security.protocol=sasl_ssl" in conf and f"ssl.ca.location={certs.ca}" in conf
    assert "sasl.mechanisms=SCRAM-SHA-512" in conf and "sasl.username=testuser" in conf
    args = tool.broker_args(a, certs, tmp_path / "ready.json")
    assert args[args.index("--sasl") + 1] == "testuser:testpass"
    sets = [args[i + 1] for i, v in enumerate(args) if v == "--set"]
    assert "listeners=SASL_SSL://127.0.0.1:39292" in sets
    assert "allow.everyone.if.no.acl.found=true" in sets and "super.users=User:admin" in sets
    oauth = tool.client_conf(ns(mechanism="OAUTHBEARER"), certs)
    assert "sasl.oauthbearer.config=scope=requiredScope principal=admin" in oauth
    plain = tool.client_conf(ns(security="SSL"), certs)
    assert not any(line.startswith("sasl.") for line in plain)


PASSED = """\
[0001_multiobj               /  1.623s] ================= Test 0001_multiobj PASSED =================
============== ALL TESTS PASSED ==============
| <MAIN>                                   |     PASSED |   2.005s |
| 0001_multiobj                            |     PASSED |   1.623s |
"""
FAILED = """\
[0097_ssl_verify             /  8.099s] TEST FAILURE
### Test "0097_ssl_verify" failed at testcpp.h:77:() at Thu Nov 26 10:36:58 2026: ###
Expected _SSL or _ALL_BROKERS_DOWN error codes, got: Local: Broker transport failure
| 0097_ssl_verify                          |     FAILED |   8.099s |
| 0097_ssl_verify_local                    |     PASSED |   0.161s |
"""
SKIPPED = """\
[0126_oauthbearer_oidc       /  0.000s] SKIPPING TEST: Filtered due to ...
[0126_oauthbearer_oidc       /  0.000s] SKIPPING TEST: Test requires OIDC (VALID_OIDC_URL)
"""
SUBSKIP = PASSED + "[0001 / 1.0s] [ do_x:1: y: SKIP: needs OAUTHBEARER ]\n"


@pytest.mark.parametrize(("log", "rc", "want"), [
    (PASSED, 0, ("pass", "")),
    (SUBSKIP, 0, ("pass", "1 sub-test(s) skipped")),
    (FAILED, 1, ("fail", "0097_ssl_verify @testcpp.h:77: Expected _SSL or _ALL_BROKERS_DOWN error codes, got: "
                         "Local: Broker transport failure")),
    (SKIPPED, 0, ("skip", "Test requires OIDC (VALID_OIDC_URL)")),
    (FAILED, 124, ("timeout", "runner killed after the per-test timeout; 0097_ssl_verify: Expected _SSL or "
                              "_ALL_BROKERS_DOWN error codes, got: Local: Broker transport failure")),
    ("", 1, ("fail", "runner exit 1: ")),
])
def test_verdict(log: str, rc: int, want: tuple[str, str]) -> None:
    assert tool.verdict(log, rc) == want
