"""OTLP/HTTP for traces: request bodies in, response bodies out (no sockets here).

The OTLP specification's rules (opentelemetry-proto, "OTLP/HTTP"):
- `POST /v1/traces` with `Content-Type: application/x-protobuf` (binary protobuf) or
  `application/json` (the protobuf JSON mapping, with trace and span ids as hex strings
  rather than base64, and unknown fields ignored); `Content-Encoding: gzip` or none.
- Success, full or partial, is 200 with an `ExportTraceServiceResponse` in the request's
  encoding; `partial_success` counts the rejected spans and says why in one message.
- A body that cannot be decoded is 400; another content type 415. Every 4xx/5xx body is
  a `google.rpc.Status` in the request's encoding (protobuf when it is not known).
"""

from __future__ import annotations

import base64
import zlib
from dataclasses import dataclass
from typing import Any, Literal

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

Encoding = Literal["protobuf", "json"]

TRACES_PATH = "/v1/traces"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
CONTENT_TYPES: dict[Encoding, str] = {"protobuf": PROTOBUF, "json": JSON}
DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024
"""Largest request body accepted, after decompression (an exporter's batch is far less)."""

# google.rpc.Code values the bodies carry beside the HTTP status.
_RPC_CODES = {400: 3, 413: 8, 415: 3, 404: 5, 405: 12, 500: 13, 503: 14}
# Fields of the OTLP JSON encoding that hold ids as hex (the protobuf JSON mapping would
# read base64 there).
_HEX_FIELDS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")


class OtlpHttpError(Exception):
    """A request refused: its HTTP status and one line saying why."""

    def __init__(self, status: int, message: str, encoding: Encoding = "protobuf") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.encoding = encoding


@dataclass(frozen=True, slots=True)
class Decoded:
    request: ExportTraceServiceRequest
    encoding: Encoding


def encoding_of(content_type: str | None) -> Encoding:
    """The encoding a Content-Type names; OtlpHttpError 415 for any other."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media == PROTOBUF:
        return "protobuf"
    if media == JSON:
        return "json"
    shown = media or "none"
    raise OtlpHttpError(
        415, f"unsupported Content-Type {shown}: send {PROTOBUF} or {JSON}", "protobuf"
    )


def decode_request(
    body: bytes,
    content_type: str | None,
    content_encoding: str | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> Decoded:
    """The export request a POST body holds; OtlpHttpError (400, 413, 415) if none."""
    encoding = encoding_of(content_type)
    data = _decompress(body, content_encoding, max_bytes, encoding)
    if encoding == "protobuf":
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(data)
        except DecodeError as exc:
            raise OtlpHttpError(
                400, f"undecodable protobuf ExportTraceServiceRequest: {exc}"
            ) from None
        return Decoded(request, encoding)
    return Decoded(parse_json(data), encoding)


def parse_json(data: bytes) -> ExportTraceServiceRequest:
    """An OTLP/JSON export request (ids in hex, unknown fields ignored)."""
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise OtlpHttpError(400, f"invalid JSON: {exc}", "json") from None
    if not isinstance(document, dict):
        raise OtlpHttpError(400, "the JSON body is not an object", "json")
    try:
        _hex_ids_to_base64(document)
        request = ExportTraceServiceRequest()
        json_format.ParseDict(document, request, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError) as exc:
        line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise OtlpHttpError(
            400, f"not an OTLP/JSON ExportTraceServiceRequest: {line}", "json"
        ) from None
    return request


def _hex_ids_to_base64(node: Any, path: str = "$") -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _HEX_FIELDS and isinstance(value, str):
                try:
                    node[key] = base64.b64encode(bytes.fromhex(value)).decode("ascii")
                except ValueError:
                    raise ValueError(f"{path}.{key} is not a hex string: {value[:40]!r}") from None
            else:
                _hex_ids_to_base64(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            _hex_ids_to_base64(item, f"{path}[{index}]")


def _decompress(body: bytes, content_encoding: str | None, limit: int, enc: Encoding) -> bytes:
    coding = (content_encoding or "identity").strip().lower()
    if coding == "identity":
        if len(body) > limit:
            raise OtlpHttpError(413, f"request body over {limit} bytes", enc)
        return body
    if coding != "gzip":
        raise OtlpHttpError(415, f"unsupported Content-Encoding {coding}: send gzip or none", enc)
    inflater = zlib.decompressobj(wbits=31)  # gzip framing
    try:
        data = inflater.decompress(body, limit + 1)
        if len(data) > limit or inflater.unconsumed_tail:
            raise OtlpHttpError(413, f"request body over {limit} bytes once decompressed", enc)
        data += inflater.flush()
    except zlib.error as exc:
        raise OtlpHttpError(400, f"invalid gzip body: {exc}", enc) from None
    if not inflater.eof:
        raise OtlpHttpError(400, "invalid gzip body: truncated", enc)
    return data


def encode_response(rejected: int, message: str, encoding: Encoding) -> bytes:
    """An ExportTraceServiceResponse; `partial_success` only when spans were rejected."""
    response = ExportTraceServiceResponse()
    if rejected or message:
        response.partial_success.CopyFrom(
            ExportTracePartialSuccess(rejected_spans=rejected, error_message=message)
        )
    return _encode(response, encoding)


def encode_status(status: int, message: str, encoding: Encoding) -> bytes:
    """The body of a 4xx/5xx answer: a google.rpc.Status."""
    return _encode(Status(code=_RPC_CODES.get(status, 2), message=message), encoding)


def _encode(message: ExportTraceServiceResponse | Status, encoding: Encoding) -> bytes:
    if encoding == "protobuf":
        return message.SerializeToString()
    return orjson.dumps(json_format.MessageToDict(message))
