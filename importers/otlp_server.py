"""The OTLP/HTTP trace receiver: export requests in, canonical events out to a sink.

`Receiver.handle` is the whole protocol without sockets (decode, map, publish, answer);
`serve` puts it behind `http.server`. The sink is anything with the producer SDK's
`publish` and `flush` (the command passes an `OutcomesProducer`).

Delivery: a request is answered 200 only once the broker has acknowledged every event
of it. When it has not (broker down, send buffer full), the answer is 503 with
`Retry-After`, which OTLP exporters retry; the retry publishes the same event ids, which
the pipeline drops as redeliveries. Requests are published one at a time, so a delivery
failure is always the answering request's own.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from outcomes.common.errors import CodecError, ProducerError
from outcomes.importers.otlp import Rejection, map_span, spans
from outcomes.importers.otlp_http import (
    CONTENT_TYPES,
    DEFAULT_MAX_BODY_BYTES,
    PROTOBUF,
    TRACES_PATH,
    Encoding,
    OtlpHttpError,
    decode_request,
    encode_response,
    encode_status,
)
from outcomes.reducers.errors import InvalidEvent
from outcomes.reducers.limits import Limits
from outcomes.reducers.validate import parse_event

RETRY_AFTER_SECONDS = 5
_MESSAGE_REJECTIONS = 5  # distinct reasons named in a partial_success message


class EventSink(Protocol):
    """Where mapped events go: the producer SDK's two calls."""

    def publish(self, event: Mapping[str, Any]) -> str: ...

    def flush(self, timeout: float | None = None) -> None: ...


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    content_type: str
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class Counters:
    """What the receiver did since it started (printed when it stops)."""

    requests: int = 0
    spans: int = 0
    events: int = 0
    rejected_spans: int = 0
    refused_requests: int = 0
    undelivered_requests: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    def line(self) -> str:
        return (
            f"{self.requests} request(s), {self.spans} span(s): {self.events} event(s) "
            f"published, {self.rejected_spans} span(s) rejected, {self.refused_requests} "
            f"request(s) refused, {self.undelivered_requests} not delivered (503)"
        )


class Receiver:
    """One OTLP/HTTP export request at a time: decode, map, publish, answer."""

    def __init__(
        self,
        sink: EventSink,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        flush_timeout: float | None = None,
        limits: Limits | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.sink = sink
        self.limits = limits if limits is not None else Limits()
        self.max_body_bytes = max_body_bytes
        self.flush_timeout = flush_timeout
        self.log = log if log is not None else _stderr
        self.counters = Counters()
        self._lock = threading.Lock()
        self._closed = False

    def handle(self, body: bytes, content_type: str | None, content_encoding: str | None) -> Answer:
        """The answer to `POST /v1/traces` with `body`."""
        try:
            decoded = decode_request(
                body, content_type, content_encoding, max_bytes=self.max_body_bytes
            )
        except OtlpHttpError as exc:
            with self._lock:
                self.counters.requests += 1
                self.counters.refused_requests += 1
            self.log(f"otlp: {exc.status}: {exc.message}")
            return refusal(exc.status, exc.message, exc.encoding)
        with self._lock:
            self.counters.requests += 1
            if self._closed:
                self.counters.undelivered_requests += 1
                line = "the receiver is stopping; retry"
                retry = (("Retry-After", str(RETRY_AFTER_SECONDS)),)
                return refusal(503, line, decoded.encoding, retry)
            return self._publish(decoded.request, decoded.encoding)

    def close(self) -> None:
        """Stop publishing: wait for the request being published, if any; later ones are
        answered 503 (call before closing the sink)."""
        with self._lock:
            self._closed = True

    def _publish(self, request: Any, encoding: Encoding) -> Answer:
        rejections: list[Rejection] = []
        published = 0
        total = 0
        try:
            for span in spans(request):
                total += 1
                outcome = map_span(span)
                if isinstance(outcome, list):
                    outcome = _invalid(outcome, self.limits) or outcome
                if isinstance(outcome, str):
                    rejections.append(Rejection(span.trace_id, span.span_id, span.name, outcome))
                    continue
                try:
                    for event in outcome:
                        self.sink.publish(event)
                        published += 1
                except CodecError as exc:  # the codec's own limits (configured) refused it
                    reason = f"its {event['type']} event does not encode ({exc.reason}): {exc}"
                    rejections.append(Rejection(span.trace_id, span.span_id, span.name, reason))
            self.sink.flush(self.flush_timeout)
        except ProducerError as exc:
            self.counters.undelivered_requests += 1
            line = f"the broker did not take this request's events ({exc}); retry"
            self.log(f"otlp: 503: {line}")
            return refusal(503, line, encoding, (("Retry-After", str(RETRY_AFTER_SECONDS)),))
        self.counters.spans += total
        self.counters.events += published
        self.counters.rejected_spans += len(rejections)
        for rejection in rejections:
            self.counters.reasons[rejection.reason] = (
                self.counters.reasons.get(rejection.reason, 0) + 1
            )
        message = rejection_message(rejections)
        if message:
            self.log(f"otlp: {message}")
        return Answer(
            200, CONTENT_TYPES[encoding], encode_response(len(rejections), message, encoding)
        )


def _invalid(events: list[dict[str, Any]], limits: Limits) -> str | None:
    """Why the span's events do not fit the contract (too large, mostly), or None; a span
    is published whole or not at all."""
    for event in events:
        try:
            parse_event(event, limits)
        except InvalidEvent as exc:
            return f"its {event['type']} event is invalid ({exc.reason}): {exc}"
    return None


def rejection_message(rejections: list[Rejection]) -> str:
    """One line: how many spans were rejected, for which reasons, naming an example."""
    if not rejections:
        return ""
    by_reason: dict[str, list[Rejection]] = {}
    for rejection in rejections:
        by_reason.setdefault(rejection.reason, []).append(rejection)
    parts = []
    for reason, group in list(by_reason.items())[:_MESSAGE_REJECTIONS]:
        first = group[0]
        parts.append(
            f"{len(group)} x {reason} (e.g. span {first.span_id} {first.name[:100]!r} "
            f"of trace {first.trace_id})"
        )
    more = len(by_reason) - _MESSAGE_REJECTIONS
    tail = f"; and {more} other reason(s)" if more > 0 else ""
    return f"{len(rejections)} span(s) not mapped: " + "; ".join(parts) + tail


def refusal(
    status: int, message: str, encoding: Encoding, headers: tuple[tuple[str, str], ...] = ()
) -> Answer:
    return Answer(
        status, CONTENT_TYPES[encoding], encode_status(status, message, encoding), headers
    )


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# -- HTTP ------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as exporters reuse their connection
    server: _Server

    def do_POST(self) -> None:
        if self.path.split("?", 1)[0] != TRACES_PATH:
            self._drain()
            self._answer(
                refusal(404, f"no such endpoint {self.path}: POST {TRACES_PATH}", "protobuf")
            )
            return
        length = self.headers.get("Content-Length")
        if length is None or not length.strip().isdigit():
            self.close_connection = True
            self._answer(refusal(411, "a Content-Length header is required", "protobuf"))
            return
        size = int(length)
        limit = self.server.receiver.max_body_bytes
        if size > limit:
            self.close_connection = True
            self._answer(refusal(413, f"request body over {limit} bytes", "protobuf"))
            return
        body = self.rfile.read(size)
        try:
            answer = self.server.receiver.handle(
                body, self.headers.get("Content-Type"), self.headers.get("Content-Encoding")
            )
        except Exception as exc:  # a bug: answer it, keep serving, and show the traceback
            traceback.print_exc(file=sys.stderr)
            line = f"internal error: {type(exc).__name__}: {exc}".splitlines()[0][:500]
            answer = refusal(500, line, "protobuf")
        self._answer(answer)

    def do_GET(self) -> None:
        self._not_allowed()

    def do_PUT(self) -> None:
        self._not_allowed()

    def do_DELETE(self) -> None:
        self._not_allowed()

    def _not_allowed(self) -> None:
        self._drain()
        answer = refusal(405, f"only POST {TRACES_PATH} is served", "protobuf")
        self._answer(Answer(answer.status, answer.content_type, answer.body, (("Allow", "POST"),)))

    def _drain(self) -> None:
        length = self.headers.get("Content-Length")
        if length and length.strip().isdigit() and int(length) <= 1 << 20:
            self.rfile.read(int(length))
        else:
            self.close_connection = True

    def _answer(self, answer: Answer) -> None:
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(answer.body)))
        for name, value in answer.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(answer.body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the receiver logs what matters (refusals, rejections) itself."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], receiver: Receiver) -> None:
        super().__init__(address, _Handler)
        self.receiver = receiver


def make_server(receiver: Receiver, host: str = "127.0.0.1", port: int = 4318) -> _Server:
    """An HTTP server for `receiver`, bound (port 0: any free port); call
    `serve_forever()`, and `shutdown()` from another thread to stop it."""
    return _Server((host, port), receiver)


__all__ = ["PROTOBUF", "Answer", "EventSink", "Receiver", "make_server"]
