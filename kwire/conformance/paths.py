"""Where the installed clients live; tools/install_clients.sh writes the same layout."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["repo_root", "clients_dir", "java_lib_dir", "java_classes_dir", "node_modules_dir", "js_driver"]


def repo_root() -> Path:
    """The checkout holding this package (kwire/conformance/paths.py -> ../..)."""
    return Path(__file__).resolve().parents[2]


def clients_dir() -> Path:
    """The clients cache: ``$KWIRE_CLIENTS_DIR`` or ``<repo>/.cache/clients``."""
    env = os.environ.get("KWIRE_CLIENTS_DIR")
    return Path(env) if env else repo_root() / ".cache" / "clients"


def java_lib_dir() -> Path:
    """Directory of kafka-clients and its jars (the override variables win)."""
    jar = os.environ.get("KWIRE_KAFKA_CLIENTS_JAR")
    if jar:
        return Path(jar).parent
    jars = os.environ.get("KWIRE_KAFKA_JARS_DIR")
    if jars:
        return Path(jars)
    return clients_dir() / "java" / "lib"


def java_classes_dir() -> Path:
    """Where the installer compiles KwireJavaClient."""
    return clients_dir() / "java" / "classes"


def node_modules_dir() -> Path:
    """The cached node_modules holding kafkajs and @kafkats/client."""
    return clients_dir() / "js" / "node_modules"


def js_driver() -> Path:
    """The node program shared by the kafkajs and kafkats adapters."""
    return Path(__file__).resolve().parent / "clients" / "js" / "kwire_js_client.cjs"
