"""A client-version matrix: ``kwire conform --client confluent-kafka==2.12.1 --client
confluent-kafka==2.16.1`` runs each pinned release as its own client row.

Each pinned version gets its own cached environment under the clients cache
(``$KWIRE_CLIENTS_DIR``): ``pip/<distribution>-<version>/`` (``pip install --target``, put first
on the driver's ``PYTHONPATH``) or ``npm/<package>-<version>/node_modules`` (the drivers'
``KWIRE_NODE_MODULES``). The same driver programs run on top, so a row differs from another only
by the client release. A pinned adapter is named ``<client>-<version>`` (a name that is also valid
in topic and group names) and reports the exact version it imported.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

from kwire.conformance import paths
from kwire.conformance.clients.base import ClientAdapter
from kwire.errors import ConformanceError

__all__ = ["PINNABLE", "install_pinned", "pinned_adapter", "pinned_dir"]

# adapter name -> (package manager, package name)
PINNABLE: dict[str, tuple[str, str]] = {
    "confluent_kafka": ("pip", "confluent-kafka"),
    "kafka_python": ("pip", "kafka-python"),
    "aiokafka": ("pip", "aiokafka"),
    "kafkajs": ("npm", "kafkajs"),
    "kafkats": ("npm", "@kafkats/client"),
    "platformatic": ("npm", "@platformatic/kafka"),
}
_VERSION = re.compile(r"^[0-9][0-9A-Za-z.+-]*$")
_INSTALL_TIMEOUT_S = 600.0


def pinned_dir(client: str, version: str) -> Path:
    """Where ``client`` at ``version`` is (or will be) installed."""
    manager, package = _pinnable(client)
    safe = package.replace("@", "").replace("/", "-")
    return paths.clients_dir() / manager / f"{safe}-{version}"


def _pinnable(client: str) -> tuple[str, str]:
    if client not in PINNABLE:
        raise ConformanceError(f"{client} cannot be pinned to a version here; pinnable: {', '.join(PINNABLE)} "
                               f"(the Java client is the kafka-clients jar tools/install_clients.sh extracts)")
    return PINNABLE[client]


def _installed_version(client: str, version: str) -> str | None:
    """The version found in the pinned environment (None: not installed)."""
    manager, package = _pinnable(client)
    root = pinned_dir(client, version)
    if manager == "pip":
        import importlib.metadata

        found = [d for d in importlib.metadata.distributions(path=[str(root)])
                 if (d.metadata["Name"] or "").lower().replace("_", "-") == package]
        return str(found[0].version) if found else None
    pkg = root / "node_modules" / package / "package.json"
    if not pkg.is_file():
        return None
    return str(json.loads(pkg.read_text())["version"])


def install_pinned(client: str, version: str, *, log: Any = None) -> Path:
    """Install ``client`` at exactly ``version`` into its cached environment (once; later calls
    find it there). Uses pip and npm, the ordinary clients of PyPI and the npm registry.

    Raises:
        ConformanceError: the version string is malformed, or the install failed (the tail of
        the installer's output says why).
    """
    if not _VERSION.match(version):
        raise ConformanceError(f"not a version: {version!r}")
    manager, package = _pinnable(client)
    root = pinned_dir(client, version)
    if _installed_version(client, version) == version:
        return root
    root.mkdir(parents=True, exist_ok=True)
    if manager == "pip":
        argv = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                "--upgrade", "--target", str(root), f"{package}=={version}"]
        if client == "aiokafka":  # its one runtime dependency beyond the standard library
            argv.insert(-1, "async-timeout")
    else:
        (root / "package.json").write_text(json.dumps({"name": "kwire-pinned-client", "version": "0.0.0",
                                                       "private": True}))
        argv = ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(root), f"{package}@{version}"]
    if log is not None:
        log(f"installing {package} {version} into {root}")
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_INSTALL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConformanceError(f"cannot install {package} {version}: {exc}") from exc
    got = _installed_version(client, version)
    if done.returncode != 0 or got != version:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-6:])
        raise ConformanceError(f"installing {package} {version} failed (rc={done.returncode}, found {got}): {tail}")
    return root


def pinned_adapter(base: type[ClientAdapter], version: str) -> ClientAdapter:
    """An adapter like ``base`` whose drivers load the client from its pinned environment."""
    manager, package = _pinnable(base.name)
    root = pinned_dir(base.name, version)

    class Pinned(base):  # type: ignore[valid-type, misc]
        name: ClassVar[str] = f"{base.name}-{version}"
        pinned_version: ClassVar[str] = version

        def unavailable_reason(self) -> str | None:
            got = _installed_version(base.name, version)
            if got != version:
                return f"{package} {version} is not installed in {root} (kwire conform installs it)"
            if manager == "npm" and shutil.which("node") is None:
                return "no node on PATH"
            return None

        def argv(self) -> list[str]:
            # The built-in drivers take the client's own name as their argument.
            return [base.name if a == self.name else a for a in super().argv()]

        def env(self) -> dict[str, str] | None:
            env = dict(super().env() or {})
            if manager == "pip":
                env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)
            else:
                env["KWIRE_NODE_MODULES"] = str(root / "node_modules")
            return env

        def share_env(self) -> dict[str, str] | None:
            return self.env()

        def client_version(self) -> str:
            return _installed_version(base.name, version) or "not installed"

    Pinned.__name__ = Pinned.__qualname__ = f"Pinned_{base.__name__}_{version}"
    return Pinned()
