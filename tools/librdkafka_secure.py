"""Run librdkafka's own broker tests against kwire over SSL, SASL_SSL or SASL_PLAINTEXT.

The companion of the peer suite's ``run_against.sh`` (which speaks PLAINTEXT only): per test
number a fresh ``kwire broker --brokers 3`` from this checkout, listening on one listener of the
given protocol, and a test.conf the test-runner reads (``security.protocol``, ``ssl.ca.location``,
the client key and certificate, ``sasl.mechanisms``, ``sasl.username``/``sasl.password``, or
OAUTHBEARER's unsecured JWT). The runner must be built with SSL (``./configure --enable-ssl
--disable-gssapi --disable-curl``: PLAIN, SCRAM and unsecured OAUTHBEARER are built in).

A throwaway CA (trustme) signs the broker's and the client's certificates; the client's key is
also written in the forms test 0097 (ssl_verify) reads from trivup's ``SSL_*`` variables
(PKCS#12 with the CA, DER, PEM; password ``SSL_password``).

Usage:
  python tools/librdkafka_secure.py --rdk-src /tmp/rdkssl/rdk-src --security SASL_SSL \\
      --mechanism SCRAM-SHA-512 [--client-auth required] [--set KEY=VALUE ...] 0001 0081
One line per test: ``NNNN pass|fail|skip|timeout SECONDS reason``, then a summary line; logs
(test-runner and broker) and the test.conf under ``--logdir``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# As librdkafka's CI (trivup) sets its brokers up: PLAIN/SCRAM user testuser (not a super user),
# OAUTHBEARER's unsecured token for principal admin with scope requiredScope, super.users=User:admin,
# allow.everyone.if.no.acl.found=true (so the ACLs a test adds for testuser restrict it) and
# connections.max.reauth.ms=10000 (tests/interactive_broker_version.py --max-reauth-ms).
USER, PASSWORD = "testuser", "testpass"
KEY_PASSWORD = "kwire-client-key"
OAUTH_JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
              'unsecuredValidatorRequiredScope="requiredScope";')
# librdkafka's trivup "default" scenario, as run_against.sh sets it
DEFAULT_SETS = ("num.partitions=4", "default.replication.factor=3", "group.share.min.record.lock.duration.ms=1000")


@dataclass(slots=True)
class Certs:
    ca: Path
    broker: Path
    client_cert: Path
    client_key: Path
    env: dict[str, str]


def make_certs(d: Path) -> Certs:
    """CA, broker keystore, client certificate and trivup's SSL_* files for test 0097."""
    import trustme
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509 import load_pem_x509_certificate

    d.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA(organization_name="kwire librdkafka suite CA")
    ca_pem = d / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_pem))
    broker = d / "broker.pem"
    ca.issue_cert("localhost", "127.0.0.1", "::1", common_name="kwire-broker") \
        .private_key_and_cert_chain_pem.write_to_path(str(broker))
    leaf = ca.issue_cert("client.kwire", common_name="client")
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), None)
    cert = load_pem_x509_certificate(leaf.cert_chain_pems[0].bytes())
    ca_cert = load_pem_x509_certificate(ca.cert_pem.bytes())
    pw = KEY_PASSWORD.encode()
    files = {
        "client.pem": cert.public_bytes(serialization.Encoding.PEM),
        "client.der": cert.public_bytes(serialization.Encoding.DER),
        "client.key": key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.BestAvailableEncryption(pw)),
        "client.key.der": key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()),
        "ca.der": ca_cert.public_bytes(serialization.Encoding.DER),
        "client.p12": pkcs12.serialize_key_and_certificates(
            b"client", key, cert, [ca_cert], serialization.BestAvailableEncryption(pw)),  # type: ignore[arg-type]
    }
    for name, data in files.items():
        (d / name).write_bytes(data)
    env = {"SSL_pkcs": "client.p12", "SSL_pub_der": "client.der", "SSL_pub_pem": "client.pem",
           "SSL_priv_der": "client.key.der", "SSL_priv_pem": "client.key", "SSL_ca_der": "ca.der",
           "SSL_all_cas_pem": "ca.pem"}
    env = {k: str(d / v) for k, v in env.items()}
    env["SSL_password"] = KEY_PASSWORD
    return Certs(ca_pem, broker, d / "client.pem", d / "client.key", env)


def broker_args(a: argparse.Namespace, certs: Certs, ready: Path) -> list[str]:
    sets = list(DEFAULT_SETS) + [f"listeners={a.security}://127.0.0.1:{a.port}"]
    if "SSL" in a.security:
        sets += ["ssl.keystore.type=PEM", f"ssl.keystore.location={certs.broker}",
                 "ssl.truststore.type=PEM", f"ssl.truststore.location={certs.ca}",
                 f"ssl.client.auth={a.client_auth}"]
    if "SASL" in a.security:
        sets += [f"listener.name.{a.security.lower()}.oauthbearer.sasl.jaas.config={OAUTH_JAAS}",
                 f"connections.max.reauth.ms={a.reauth_ms}"]
    if a.acls:
        sets += ["authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                 "super.users=User:admin", "allow.everyone.if.no.acl.found=true"]
    sets += a.set
    cmd = [sys.executable, "-m", "kwire", "broker", "--brokers", "3", "--ready-file", str(ready)]
    cmd += ["-v"] if a.verbose else ["--quiet"]
    if "SASL" in a.security:
        cmd += ["--sasl", f"{USER}:{PASSWORD}"]
    for s in sets:
        cmd += ["--set", s]
    return cmd


def client_conf(a: argparse.Namespace, certs: Certs) -> list[str]:
    lines = [f"bootstrap.servers=127.0.0.1:{a.port}", f"security.protocol={a.security.lower()}"]
    if "SSL" in a.security:
        lines += [f"ssl.ca.location={certs.ca}", f"ssl.certificate.location={certs.client_cert}",
                  f"ssl.key.location={certs.client_key}", f"ssl.key.password={KEY_PASSWORD}"]
    if "SASL" in a.security:
        lines.append(f"sasl.mechanisms={a.mechanism}")
        if a.mechanism == "OAUTHBEARER":
            lines += ["enable.sasl.oauthbearer.unsecure.jwt=true",
                      "sasl.oauthbearer.config=scope=requiredScope principal=admin"]
        else:
            lines += [f"sasl.username={USER}", f"sasl.password={PASSWORD}"]
    if a.timeout_multiplier:
        lines.append(f"test.timeout.multiplier={a.timeout_multiplier}")
    return lines + list(a.client_set)


def verdict(log_text: str, rc: int) -> tuple[str, str]:
    """pass / fail / skip / timeout and a reason, read as run_against.sh reads the runner's log."""
    log = re.sub(r"\x1b\[[0-9;]*[mK]|\x1b\(B", "", log_text)
    st: dict[str, str] = {}
    for m in re.finditer(r"=+ Test (\S+) (PASSED|FAILED|SKIPPED) =+", log):
        st[m.group(1)] = m.group(2)
    summ: dict[str, tuple[str, str]] = {}
    for m in re.finditer(r"^\|\s*(\d{4}\S*)\s*\|\s*(\w+)\s*\|\s*[\d.]+s\s*\|\s*(.*)$", log, re.M):
        summ[m.group(1)] = (m.group(2), m.group(3).strip())
        st.setdefault(m.group(1), m.group(2))
    fails = re.findall(r'### Test "([^"]+)" failed at ([^:]+:\d+):[^\n]*###\n([^\n]*)', log)
    all_skips = re.findall(r"SKIPPING TEST: ([^\n]*)", log)
    skips = [s for s in all_skips if not s.startswith(("Filtered due to", "requires test scenario"))] or all_skips
    sub_skips = re.findall(r"SUB-TEST SKIPPED: ([^\n]*)|SKIP: ([^\n]*)", log)

    def short(s: str) -> str:
        return re.sub(r"\s+", " ", s)[:240]

    if rc in (124, -signal.SIGKILL, -signal.SIGTERM):
        why = f"{fails[0][0]}: {fails[0][2]}" if fails else "no failure message before timeout"
        return "timeout", short("runner killed after the per-test timeout; " + why)
    if fails or any(v in ("FAILED", "RUNNING") for v in st.values()):
        if fails:
            n, where, msg = fails[0]
            return "fail", short(f"{n} @{where}: {msg}")
        bad = [k for k, v in st.items() if v in ("FAILED", "RUNNING")]
        return "fail", short(f"{bad[0]}: " + summ.get(bad[0], ("", ""))[1])
    if any(v == "PASSED" for v in st.values()):
        sk = [k for k, v in st.items() if v == "SKIPPED"]
        note = ("some tests skipped: " + ",".join(sk)) if sk else ""
        if sub_skips and not note:
            note = f"{len(sub_skips)} sub-test(s) skipped"
        return "pass", short(note)
    if st or skips:
        return "skip", short(skips[0] if skips else "all subtests skipped")
    if rc != 0:
        tail = [ln for ln in log.strip().splitlines() if ln.strip()][-1:] or [""]
        return "fail", short(f"runner exit {rc}: {tail[0]}")
    return "skip", "no matching broker test"


def stop(p: subprocess.Popen[bytes]) -> None:
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def run_one(a: argparse.Namespace, certs: Certs, test: str, logdir: Path) -> tuple[str, str, float]:
    ready = logdir / f"{test}.ready.json"
    ready.unlink(missing_ok=True)
    with open(logdir / f"{test}.broker.log", "wb") as blog:
        broker = subprocess.Popen(broker_args(a, certs, ready), cwd=ROOT, stdout=blog, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            if broker.poll() is not None or time.monotonic() > deadline:
                return "fail", f"kwire did not start (see {test}.broker.log)", 0.0
            time.sleep(0.1)
        conf = logdir / f"{test}.conf"
        conf.write_text("\n".join(client_conf(a, certs)) + "\n")
        env = dict(os.environ, RDKAFKA_TEST_CONF=str(conf), TESTS=test,
                   TEST_KAFKA_VERSION=a.kafka_version,
                   LD_LIBRARY_PATH=f"{a.rdk_src}/src:{a.rdk_src}/src-cpp", **certs.env)
        env["SSL_client_auth"] = a.client_auth
        flags = ["-p1", "-s", "default"] + ([] if a.with_local else ["-L"])
        t0 = time.monotonic()
        with open(logdir / f"{test}.log", "wb") as tlog:
            runner = subprocess.Popen(["./test-runner", *flags], cwd=a.rdk_src / "tests", env=env,
                                      stdout=tlog, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                rc = runner.wait(a.timeout)
            except subprocess.TimeoutExpired:
                os.killpg(runner.pid, signal.SIGKILL)
                runner.wait()
                rc = 124
        secs = time.monotonic() - t0
        res, why = verdict((logdir / f"{test}.log").read_text(errors="replace"), rc)
        return res, why, secs
    finally:
        stop(broker)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("tests", nargs="+", help="4-digit test numbers")
    p.add_argument("--rdk-src", type=Path, required=True, help="librdkafka source built with --enable-ssl")
    p.add_argument("--security", choices=("SSL", "SASL_SSL", "SASL_PLAINTEXT"), default="SASL_SSL")
    p.add_argument("--mechanism", default="SCRAM-SHA-512",
                   choices=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"))
    p.add_argument("--client-auth", default="none", choices=("required", "requested", "none"),
                   help="the broker's ssl.client.auth (0097 expects required)")
    p.add_argument("--acls", action="store_true",
                   help="StandardAuthorizer, super.users=User:admin, allow.everyone.if.no.acl.found=true (as trivup)")
    p.add_argument("--reauth-ms", type=int, default=10000, help="connections.max.reauth.ms on SASL listeners")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="more broker settings")
    p.add_argument("--client-set", action="append", default=[], metavar="KEY=VALUE",
                   help="more test.conf lines (client properties, e.g. debug=security)")
    p.add_argument("--port", type=int, default=39292)
    p.add_argument("--timeout", type=float, default=600, help="seconds per test number")
    p.add_argument("--timeout-multiplier", default="", help="test.timeout.multiplier")
    p.add_argument("--kafka-version", default="4.2.0.0", help="TEST_KAFKA_VERSION (enables KIP-848/share tests)")
    p.add_argument("-v", "--verbose", action="store_true", help="kwire broker -v: a line per request in the broker log")
    p.add_argument("--with-local", action="store_true", help="also run the number's local (no broker) tests")
    p.add_argument("--logdir", type=Path, default=None)
    p.add_argument("--results", type=Path, default=None, help="append NNNN<TAB>result<TAB>secs<TAB>reason lines")
    a = p.parse_args()
    a.rdk_src = a.rdk_src.resolve()
    stamp = datetime.datetime.now().strftime("%H%M%S")
    logdir = (a.logdir or Path(f"/tmp/rdk-secure-logs/{a.security.lower()}-{stamp}")).resolve()
    logdir.mkdir(parents=True, exist_ok=True)
    certs = make_certs(logdir / "certs")
    (logdir / "certs" / "env.json").write_text(json.dumps(certs.env, indent=1))
    counts: dict[str, int] = {}
    label = a.security + (f"/{a.mechanism}" if "SASL" in a.security else "")
    for t in a.tests:
        res, why, secs = run_one(a, certs, t, logdir)
        counts[res] = counts.get(res, 0) + 1
        print(f"{t} {res} {secs:.0f} {why}".rstrip(), flush=True)
        if a.results is not None:
            with open(a.results, "a") as f:
                f.write(f"{t}\t{label}\t{res}\t{secs:.0f}\t{why}\n")
    print(f"SUMMARY {label} tests={len(a.tests)} " + " ".join(f"{k}={v}" for k, v in sorted(counts.items()))
          + f" (logs: {logdir})")
    return 0 if not counts.get("fail") and not counts.get("timeout") else 1


if __name__ == "__main__":
    raise SystemExit(main())
