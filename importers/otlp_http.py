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
MAX_JSON_DEPTH = 100
"""Deepest nesting of JSON objects and arrays read (protobuf's own recursion limit for
the binary encoding; an OTLP request with nested attribute values needs far less)."""

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
    if _deeper_than(document, MAX_JSON_DEPTH):
        raise OtlpHttpError(400, f"the JSON body nests deeper than {MAX_JSON_DEPTH} levels", "json")
    try:
        _hex_ids_to_base64(document)
        request = ExportTraceServiceRequest()
        json_format.ParseDict(document, request, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
        line = str(exc).splitlines()[0][:500] if str(exc) else type(exc).__name__
        raise OtlpHttpError(
            400, f"not an OTLP/JSON ExportTraceServiceRequest: {line}", "json"
        ) from None
    return request


def _deeper_than(document: Any, limit: int) -> bool:
    """Whether objects and arrays nest more than `limit` levels (read without recursion)."""
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _hex_ids_to_base64(document: Any) -> None:
    """The OTLP JSON encoding's hex ids as the base64 the protobuf JSON mapping reads."""
    stack: list[tuple[Any, str]] = [(document, "$")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key in _HEX_FIELDS and isinstance(value, str):
                    try:
                        node[key] = base64.b64encode(bytes.fromhex(value)).decode("ascii")
                    except ValueError:
                        raise ValueError(
                            f"{path}.{key} is not a hex string: {value[:40]!r}"
                        ) from None
                elif isinstance(value, dict | list):
                    stack.append((value, f"{path}.{key}"))
        elif isinstance(node, list):
            stack.extend(
                (item, f"{path}[{index}]")
                for index, item in enumerate(node)
                if isinstance(item, dict | list)
            )


def _decompress(body: bytes, content_encoding: str | None, limit: int, enc: Encoding) -> bytes:
    """The body, gunzipped when it says gzip: every member of a multi-member stream
    (RFC 1952), no more than `limit` bytes in all (413 past it, however small the body)."""
    coding = (content_encoding or "identity").strip().lower()
    if coding == "identity":
        if len(body) > limit:
            raise OtlpHttpError(413, f"request body over {limit} bytes", enc)
        return body
    if coding != "gzip":
        raise OtlpHttpError(415, f"unsupported Content-Encoding {coding}: send gzip or none", enc)
    out = bytearray()
    rest = body
    try:
        while True:
            inflater = zlib.decompressobj(wbits=31)  # gzip framing, one member
            out += inflater.decompress(rest, limit + 1 - len(out))
            if not inflater.unconsumed_tail:
                out += inflater.flush()
            if len(out) > limit or inflater.unconsumed_tail:
                raise OtlpHttpError(413, f"request body over {limit} bytes once decompressed", enc)
            if not inflater.eof:
                raise OtlpHttpError(400, "invalid gzip body: truncated", enc)
            rest = inflater.unused_data
            if not rest:
                return bytes(out)
    except zlib.error as exc:
        raise OtlpHttpError(400, f"invalid gzip body: {exc}", enc) from None


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
