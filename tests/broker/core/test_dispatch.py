"""The core's dispatch seam: handlers come from outside, and a KafkaError escaping one becomes
the whole request's error answer in one place (``BrokerCore._dispatch``)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kwire.broker.config import BrokerConfig
from kwire.broker.core.broker_core import BrokerCore
from kwire.broker.core.dispatch import HandlerSpec
from kwire.broker.core.faults import FaultAction, FaultRule
from kwire.broker.handlers import load_handlers
from kwire.clock import ManualClock
from kwire.errors import KafkaError
from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.describe_cluster import DescribeClusterRequest
from kwire.protocol.messages.list_groups import ListGroupsRequest
from kwire.protocol.registry import ApiKey
from tests.broker.helpers import START_MS, ConnectionClosed, CoreClient


def core_with(api_key: int, handle: Any, **changes: Any) -> BrokerCore:
    """A core whose handler for ``api_key`` is replaced (the registry is injected, so no patching)."""
    handlers = dict(load_handlers())
    handlers[api_key] = dataclasses.replace(handlers[api_key], handle=handle, **changes)
    return BrokerCore(BrokerConfig(), ManualClock(START_MS), handlers=handlers)


def raising(exc: Exception) -> Any:
    def handle(ctx: Any, req: Any) -> Any:
        raise exc

    return handle


def test_the_core_serves_exactly_the_handlers_it_was_given() -> None:
    handlers = {k: v for k, v in load_handlers().items() if k != ApiKey.LIST_GROUPS}
    core = BrokerCore(BrokerConfig(), ManualClock(START_MS), handlers=handlers)
    c = CoreClient(core)
    with pytest.raises(ConnectionClosed, match="unknown or unsupported api key 16"):
        c.send(ListGroupsRequest(), 4)
    assert core.advertised_supports(ApiKey.METADATA, 12) and not core.advertised_supports(ApiKey.LIST_GROUPS, 4)


def test_a_kafka_error_escaping_a_handler_is_answered_with_its_code_through_error_response() -> None:
    core = core_with(ApiKey.LIST_GROUPS, raising(KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "not yet")))
    resp = CoreClient(core).send(ListGroupsRequest(), 4)
    assert resp.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert resp.groups == []


def test_without_an_error_response_function_the_top_level_error_code_carries_it() -> None:
    spec = load_handlers()[ApiKey.DESCRIBE_CLUSTER]
    assert spec.error_response_fn is None  # the generic path is what this test is about
    core = core_with(ApiKey.DESCRIBE_CLUSTER, raising(KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)))
    resp = CoreClient(core).send(DescribeClusterRequest(), 0)
    assert resp.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_a_response_without_an_error_field_closes_the_connection() -> None:
    core = core_with(ApiKey.LIST_GROUPS, raising(KafkaError(ErrorCode.INVALID_REQUEST)),
                     error_response_fn=lambda ctx, req, code: None)
    with pytest.raises(ConnectionClosed, match="INVALID_REQUEST"):
        CoreClient(core).send(ListGroupsRequest(), 4)


def test_any_other_exception_is_still_unknown_server_error() -> None:
    core = core_with(ApiKey.LIST_GROUPS, raising(RuntimeError("handler bug")))
    resp = CoreClient(core).send(ListGroupsRequest(), 4)
    assert resp.error_code == ErrorCode.UNKNOWN_SERVER_ERROR


def test_a_handler_that_deferred_before_raising_gets_the_error_through_its_reply() -> None:
    def handle(ctx: Any, req: Any) -> Any:
        ctx.defer()
        raise KafkaError(ErrorCode.NOT_COORDINATOR)

    core = core_with(ApiKey.LIST_GROUPS, handle)
    c = CoreClient(core)
    assert c.send(ListGroupsRequest(), 4) is None
    [resp] = c.deferred()
    assert resp.error_code == ErrorCode.NOT_COORDINATOR


def test_a_handler_that_answered_through_its_reply_is_not_answered_twice() -> None:
    def handle(ctx: Any, req: Any) -> Any:
        from kwire.protocol.messages.list_groups import ListGroupsResponse

        ctx.defer().send(ListGroupsResponse(error_code=ErrorCode.NONE))
        raise KafkaError(ErrorCode.NOT_COORDINATOR)

    core = core_with(ApiKey.LIST_GROUPS, handle)
    c = CoreClient(core)
    assert c.send(ListGroupsRequest(), 4) is None
    assert [r.error_code for r in c.deferred()] == [ErrorCode.NONE]


def test_a_latency_fault_maps_a_kafka_error_the_same_way() -> None:
    core = core_with(ApiKey.LIST_GROUPS, raising(KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)))
    clock = core.clock
    assert isinstance(clock, ManualClock)
    core.faults.add(FaultRule(FaultAction.LATENCY, api_key=ApiKey.LIST_GROUPS, delay_ms=100))
    c = CoreClient(core)
    assert c.send(ListGroupsRequest(), 4) is None
    clock.advance(100)
    core.fire_due()
    assert [r.error_code for r in c.deferred()] == [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]


def test_handler_spec_lives_in_the_core_and_the_registry_reexports_it() -> None:
    from kwire.broker import handlers

    assert handlers.HandlerSpec is HandlerSpec
    assert all(isinstance(s, HandlerSpec) for s in load_handlers().values())
