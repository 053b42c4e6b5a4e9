"""Request handlers, one module per API, named after it; this registry is the one list that
both ApiVersions and dispatch read.

Each handler module defines ``API_KEY``, ``VERSIONS = (min, max)``, ``handle(ctx, request)``
returning the response (or None when deferred / acks=0), and optionally
``error_response(ctx, request, code)``: the whole request answered with one error code (fault
injection, a ``KafkaError`` escaping ``handle``). ``load_handlers()`` builds the registry that
``BrokerCore(..., handlers=...)`` receives; the core itself never imports this package.
"""

from __future__ import annotations

import importlib

from kwire.broker.core.dispatch import HandlerSpec

__all__ = ["HandlerSpec", "HANDLERS", "load_handlers", "HANDLER_MODULES"]

# The modules that make up the broker's API surface (module name == API name in snake case).
HANDLER_MODULES = (
    "produce",
    "fetch",
    "list_offsets",
    "metadata",
    "offset_commit",
    "offset_fetch",
    "find_coordinator",
    "join_group",
    "heartbeat",
    "leave_group",
    "sync_group",
    "describe_groups",
    "list_groups",
    "sasl_handshake",
    "api_versions",
    "create_topics",
    "delete_topics",
    "delete_records",
    "init_producer_id",
    "offset_for_leader_epoch",
    "describe_configs",
    "alter_configs",
    "sasl_authenticate",
    "create_partitions",
    "delete_groups",
    "incremental_alter_configs",
    "offset_delete",
    "describe_user_scram_credentials",
    "alter_user_scram_credentials",
    "describe_cluster",
    "describe_topic_partitions",
    "consumer_group_heartbeat",
    "consumer_group_describe",
    "share_group_heartbeat",
    "share_group_describe",
    "share_fetch",
    "share_acknowledge",
    "describe_share_group_offsets",
    "alter_share_group_offsets",
    "delete_share_group_offsets",
    "add_partitions_to_txn",
    "add_offsets_to_txn",
    "end_txn",
    "write_txn_markers",
    "txn_offset_commit",
    "describe_transactions",
    "list_transactions",
    "describe_producers",
    "describe_acls",
    "create_acls",
    "delete_acls",
    "describe_client_quotas",
    "alter_client_quotas",
)


HANDLERS: dict[int, HandlerSpec] = {}


def load_handlers() -> dict[int, HandlerSpec]:
    """Import every handler module that exists and register it (once)."""
    if HANDLERS:
        return HANDLERS
    from kwire.protocol.registry import api_info

    for name in HANDLER_MODULES:
        try:
            mod = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__name__}.{name}":
                continue  # not written yet
            raise
        key = int(mod.API_KEY)
        lo, hi = mod.VERSIONS
        info = api_info(key)
        if info.versions is None or lo < info.min_version or hi > info.max_version or lo > hi:
            raise RuntimeError(f"handler {name}: versions {lo}-{hi} outside the codec's {info.versions}")
        if key in HANDLERS:
            raise RuntimeError(f"api key {key} registered twice ({HANDLERS[key].module} and {name})")
        HANDLERS[key] = HandlerSpec(key, info.name, lo, hi, name, mod.handle, getattr(mod, "error_response", None))
    return HANDLERS
