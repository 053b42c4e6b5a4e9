"""Client-behaviour checks over ``wire_exchanges`` rows: what any captured client did wrong.

| id | severity | rule |
| --- | --- | --- |
| CR-1 | error | a request's version is inside the range the broker advertised in ApiVersions (ApiVersions itself exempt, KIP-511); ranges from answers by the same broker, else any broker in the capture |
| CR-2 | error | correlation ids are unique per connection |
| WIRE-1 | error | every request decodes with Kafka's schemas for its api key and version |
| WIRE-2 | warning | every request but Produce (acks=0 gets no answer) is answered before the capture ends |
| WIRE-3 | warning | every response answers a request seen on its connection |

CR-1 and CR-2 carry the ids of docs/client-rules.md (the broker-side conformance suite), so a
capture of a real cluster and a kwire conformance run speak of the same rules. Checks are plain
functions: the plain job calls them on all rows; the Spark job collects the (few) advertised
ranges on the driver, runs ``check_row`` per partition, and finds CR-2 with a group-by.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["advertised_ranges", "check_row", "duplicate_correlation_ids", "check_rows", "violation"]

Ranges = dict[int, tuple[int, int]]
_API_VERSIONS, _PRODUCE = 18, 0


def violation(rule: str, severity: str, row: dict[str, Any], detail: str) -> dict[str, Any]:
    return {"rule_id": rule, "severity": severity, "source": row["source"], "conn_id": row["conn_id"],
            "correlation_id": row["correlation_id"], "api_key": row["api_key"], "api_version": row["api_version"],
            "detail": detail}


def advertised_ranges(rows: Iterable[dict[str, Any]]) -> dict[str, Ranges]:
    """Per broker address, the ranges its ApiVersions answers advertised (the last answer wins);
    key ``"*"`` holds the union over all brokers, for connections that never asked."""
    out: dict[str, Ranges] = {}
    union: Ranges = {}
    for r in sorted((r for r in rows if r.get("advertised_versions")), key=lambda r: (r["response_ts_ns"] or 0)):
        ranges = {int(k): (v[0], v[1]) for k, v in json.loads(r["advertised_versions"]).items()}
        out[r["server"]] = ranges
        for k, (lo, hi) in ranges.items():
            old = union.get(k)
            union[k] = (min(lo, old[0]), max(hi, old[1])) if old else (lo, hi)
    if union:
        out["*"] = union
    return out


def check_row(row: dict[str, Any], advertised: dict[str, Ranges]) -> Iterator[dict[str, Any]]:
    """The per-exchange rules (everything but CR-2) for one row."""
    key, version, status = row["api_key"], row["api_version"], row["decode_status"]
    if status == "unpaired_response":
        yield violation("WIRE-3", "warning", row, "a response whose request was not seen on this connection")
        return
    if status in ("malformed", "unknown_api", "unsupported_version") and not (row["decode_error"] or "").startswith(
            "response:"):
        yield violation("WIRE-1", "error", row, f"{status}: {row['decode_error']}")
    if status == "no_response" and key != _PRODUCE:
        yield violation("WIRE-2", "warning", row, "no response before the capture ended")
    ranges = advertised.get(row["server"]) or advertised.get("*")
    if ranges and key is not None and key != _API_VERSIONS:
        rng = ranges.get(key)
        if rng is None:
            yield violation("CR-1", "error", row, f"api key {key} was not advertised by the broker")
        elif not rng[0] <= version <= rng[1]:
            yield violation("CR-1", "error", row, f"version {version} outside the advertised {rng[0]}..{rng[1]}")


def duplicate_correlation_ids(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """CR-2: one violation per (connection, correlation id) used by more than one request."""
    seen: Counter[tuple[str, str, int]] = Counter()
    first: dict[tuple[str, str, int], dict[str, Any]] = {}
    for r in rows:
        if r["api_key"] is None:
            continue
        k = (r["source"], r["conn_id"], r["correlation_id"])
        seen[k] += 1
        if k not in first or (r["request_offset"] or 0) < (first[k]["request_offset"] or 0):
            first[k] = r
    return [violation("CR-2", "error", first[k], f"correlation id used by {n} requests on this connection")
            for k, n in seen.items() if n > 1]


def check_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every rule over every row (the plain path)."""
    advertised = advertised_ranges(rows)
    out = [v for r in rows for v in check_row(r, advertised)]
    out.extend(duplicate_correlation_ids(rows))
    return out
