"""Fixtures for the real-client conformance tests.

``rdkafka_mock`` is librdkafka's mock cluster in a child process (the harness's first
stand-in broker); kwire's own cluster is the ``kwire_target`` fixture of
``test_clients_against_kwire.py``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

from kwire.conformance.rdkafka_mock import RdkafkaMockProcess


@pytest.fixture(scope="module")
def rdkafka_mock() -> Iterator[RdkafkaMockProcess]:
    """A one-broker librdkafka mock behind the ApiVersions fix-up proxy."""
    if importlib.util.find_spec("confluent_kafka") is None:
        pytest.skip("confluent-kafka is not installed (run tools/install_clients.sh python)")
    with RdkafkaMockProcess() as mock:
        yield mock
