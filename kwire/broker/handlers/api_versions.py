"""ApiVersions — key 18, v0–4 (KIP-35, KIP-511, KIP-584).

Behaviour: lists exactly the versions this broker implements (less any cap set through the
control API); v3+ validates the client software name/version and answers with the supported
and finalized features. A request version the broker does not know is answered by the core
(``BrokerCore._api_versions_unsupported``) in the v0 layout with UNSUPPORTED_VERSION and the
ApiVersions range (KIP-511), so any client can read it.
Version notes: the response header is always v0. Deviations: none.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from kwire.protocol.error_codes import ErrorCode
from kwire.protocol.messages.api_versions import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersionsResponse_ApiVersion,
)
from kwire.protocol.registry import ApiKey

if TYPE_CHECKING:
    from kwire.broker.core.broker_core import BrokerCore, RequestContext

API_KEY = ApiKey.API_VERSIONS
VERSIONS = (0, 4)

_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")  # KIP-511; fullmatch, as Java's matches()

# Produce is advertised from v0 although v0-2 are refused (RB-5: librdkafka compatibility).
_ADVERTISED_MIN: dict[int, int] = {ApiKey.PRODUCE: 0}

# (name, min, max) of the features this broker supports.
SUPPORTED_FEATURES = (
    ("metadata.version", 7, 27),
    ("kraft.version", 0, 1),
    ("group.version", 0, 1),
    ("transaction.version", 0, 2),
    ("share.version", 0, 2),
)


def api_keys(core: BrokerCore) -> list[ApiVersionsResponse_ApiVersion]:
    out = []
    for key in sorted(core.handlers):
        spec = core.handlers[key]
        out.append(ApiVersionsResponse.ApiVersion(api_key=key, min_version=_ADVERTISED_MIN.get(key, spec.min_version),
                                                  max_version=core.max_version(key)))
    return out


def finalized_features(core: BrokerCore) -> dict[str, int]:
    from kwire.broker.core.configs import ResourceType

    feats = {"metadata.version": 27, "kraft.version": 1, "group.version": 1}
    if ApiKey.END_TXN in core.handlers:
        feats["transaction.version"] = core.configs.get_int(ResourceType.BROKER, "", "transaction.version")
    if ApiKey.SHARE_FETCH in core.handlers:
        feats["share.version"] = core.configs.get_int(ResourceType.BROKER, "", "share.version")
    return feats


def handle(ctx: RequestContext, req: ApiVersionsRequest) -> ApiVersionsResponse:
    core = ctx.core
    fin = None
    if ctx.api_version >= 3:
        if not (req.client_software_name and _SOFTWARE.fullmatch(req.client_software_name)
                and req.client_software_version and _SOFTWARE.fullmatch(req.client_software_version)):
            return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST, api_keys=api_keys(core))
        ctx.conn.client_software_name = req.client_software_name
        ctx.conn.client_software_version = req.client_software_version
        fin = finalized_features(core)
    # The answer depends only on the version, the handlers, the version caps and the finalized
    # features: built and encoded once per combination (not per connection or request).
    key = (id(core.handlers), len(core.handlers), tuple(sorted(core.version_caps.items())),
           tuple(fin.items()) if fin is not None else None)
    cached = core.cached_response(ctx, key)
    if isinstance(cached, ApiVersionsResponse):
        return cached
    resp = ApiVersionsResponse(api_keys=api_keys(core))
    if fin is not None:
        resp.supported_features = [ApiVersionsResponse.SupportedFeatureKey(name=n, min_version=lo, max_version=hi)
                                   for n, lo, hi in SUPPORTED_FEATURES]
        resp.finalized_features_epoch = 1
        resp.finalized_features = [ApiVersionsResponse.FinalizedFeatureKey(name=n, max_version_level=v,
                                                                           min_version_level=v)
                                   for n, v in fin.items()]
    return resp


def error_response(ctx: RequestContext, req: ApiVersionsRequest, code: int) -> ApiVersionsResponse:
    return ApiVersionsResponse(error_code=code, api_keys=api_keys(ctx.core))
