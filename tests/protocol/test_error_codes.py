"""Kafka error codes as data, checked against two independent tables."""

from __future__ import annotations

import pytest

from kwire.protocol.error_codes import ERROR_INFO, ErrorCode, error_info


def test_codes_used_by_the_broker_semantics_exist_with_their_retriability() -> None:
    # Retriability per broker-semantics.md section 0.
    assert ErrorCode.INVALID_RECORD_STATE == 121 and not error_info(121).retriable
    assert ErrorCode.SHARE_SESSION_NOT_FOUND == 122 and error_info(122).retriable
    assert ErrorCode.SHARE_SESSION_LIMIT_REACHED == 133 and error_info(133).retriable
    assert ErrorCode.CONCURRENT_TRANSACTIONS == 51 and error_info(51).retriable
    assert ErrorCode.PRODUCER_FENCED == 90 and not error_info(90).retriable
    assert ErrorCode.UNKNOWN_SERVER_ERROR == -1
    assert error_info(9999).name == "UNKNOWN_CODE_9999"


@pytest.mark.differential
def test_names_and_codes_match_kio() -> None:
    from kio.schema.errors import ErrorCode as KioErrorCode

    assert {e.value: e.name.upper() for e in KioErrorCode} == {c: i.name for c, i in ERROR_INFO.items()}
