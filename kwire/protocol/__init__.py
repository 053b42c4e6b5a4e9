"""kwire's Kafka protocol codec, generated from Kafka's JSON message specs.

Message classes live in ``kwire.protocol.messages.<api>`` (one module per API, imported on
first use); ``registry`` says which exist; ``framing`` adds sizes and headers.
"""

from kwire.protocol._message import FieldSpec, Message, Struct
from kwire.protocol.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    FrameBuffer,
    RequestFrame,
    ResponseFrame,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    frame,
    peek_request_header,
)
from kwire.protocol.registry import (
    ApiInfo,
    ApiKey,
    all_apis,
    api_info,
    request_class,
    request_header_version,
    response_class,
    response_header_version,
    schema_class,
)

__all__ = [
    "ApiInfo",
    "ApiKey",
    "DEFAULT_MAX_FRAME_BYTES",
    "FieldSpec",
    "FrameBuffer",
    "Message",
    "RequestFrame",
    "ResponseFrame",
    "Struct",
    "all_apis",
    "api_info",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "frame",
    "peek_request_header",
    "request_class",
    "request_header_version",
    "response_class",
    "response_header_version",
    "schema_class",
]
