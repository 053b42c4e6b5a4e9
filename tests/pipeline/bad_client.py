"""A capture of a misbehaving client, built frame by frame with kwire's codec and TcpFlow."""

from __future__ import annotations

from pathlib import Path

from kwire.capture import PcapngWriter, TcpFlow
from kwire.protocol import encode_request, encode_response
from kwire.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kwire.protocol.messages.metadata import MetadataRequest, MetadataResponse


def write_bad_client_capture(path: Path) -> Path:
    """One connection: ApiVersions advertising Metadata 0..5 only, then
    Metadata v12 (CR-1), two requests with correlation id 7 (CR-2), a request whose body is cut
    (WIRE-1), a Metadata without an answer (WIRE-2) and an answer nobody asked for (WIRE-3)."""
    flow = TcpFlow("10.0.0.5:41000", "10.0.0.9:9092")
    ts = 1_763_900_000_000_000_000
    pkts = flow.handshake(ts)

    def send(data: bytes, from_client: bool) -> None:
        nonlocal ts
        ts += 1_000_000
        pkts.extend(flow.send(from_client, data, ts))

    adv = ApiVersionsResponse(error_code=0, api_keys=[ApiVersionsResponse.ApiVersion(api_key=3, min_version=0, max_version=5),
                                                      ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=4)])
    send(encode_request(ApiVersionsRequest(client_software_name="bad", client_software_version="0.1"), 3,
                        correlation_id=1, client_id="bad-client"), True)
    send(encode_response(adv, 3, correlation_id=1), False)
    for corr, version in ((2, 12), (7, 4), (7, 4)):
        send(encode_request(MetadataRequest(topics=[]), version, correlation_id=corr, client_id="bad-client"), True)
        send(encode_response(MetadataResponse(), version, correlation_id=corr), False)
    cut = encode_request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")]), 4,
                         correlation_id=8, client_id="bad-client")
    body_cut = cut[:-3]
    send(len(body_cut[4:]).to_bytes(4, "big") + body_cut[4:], True)
    send(encode_response(MetadataResponse(), 4, correlation_id=8), False)
    send(encode_request(MetadataRequest(topics=[]), 4, correlation_id=9, client_id="bad-client"), True)
    send(encode_response(MetadataResponse(), 4, correlation_id=99), False)
    with PcapngWriter(path) as w:
        for t, frame in pkts:
            w.write_packet(t, frame)
    return path
