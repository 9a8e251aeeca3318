"""The OTLP/HTTP trace receiver: export requests in, canonical events out to a sink.

`Receiver.handle` is the whole protocol without sockets (decode, map, publish, answer);
`component` mounts it behind the HTTP door (outcomes.common.door: limits, time limits,
one-line refusals) and `make_server` serves it. The sink is anything with the producer SDK's
`publish` and `flush` (the command passes an `OutcomesProducer`).

Delivery: a request is answered 200 only once the broker has acknowledged every event
of it. When it has not (broker down, send buffer full), the answer is 503 with
`Retry-After`, which OTLP exporters retry; the retry publishes the same event ids, which
the pipeline drops as redeliveries. Requests are published one at a time, so a delivery
failure is always the answering request's own.
"""

from __future__ import annotations

import hmac
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from outcomes.common import door
from outcomes.common.errors import CodecError, ProducerError
from outcomes.importers.otlp import Rejection, SpanView, map_span, spans
from outcomes.importers.otlp_http import (
    CONTENT_TYPES,
    DEFAULT_MAX_BODY_BYTES,
    JSON,
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
BODY_SECONDS = 30.0
"""A request body must arrive within this (slower senders get 408)."""
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
        """The answer to `POST /v1/traces` with `body`. Decoding and mapping run outside
        the lock (a slow request does not hold up the ones behind it); publishing holds
        it, so a delivery failure is the answering request's own."""
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
        mapped = [] if self._closed else self._map(decoded.request)
        with self._lock:
            self.counters.requests += 1
            if self._closed:
                self.counters.undelivered_requests += 1
                line = "the receiver is stopping; retry"
                retry = (("Retry-After", str(RETRY_AFTER_SECONDS)),)
                return refusal(503, line, decoded.encoding, retry)
            return self._publish(mapped, decoded.encoding)

    def close(self) -> None:
        """Stop publishing: wait for the request being published, if any; later ones are
        answered 503 (call before closing the sink)."""
        with self._lock:
            self._closed = True

    def _map(self, request: Any) -> list[tuple[SpanView, list[dict[str, Any]] | str]]:
        """Each span with its events, or the reason it cannot be mapped."""
        mapped: list[tuple[SpanView, list[dict[str, Any]] | str]] = []
        for span in spans(request):
            outcome = map_span(span)
            if isinstance(outcome, list):
                outcome = _invalid(outcome, self.limits) or outcome
            mapped.append((span, outcome))
        return mapped

    def _publish(
        self, mapped: list[tuple[SpanView, list[dict[str, Any]] | str]], encoding: Encoding
    ) -> Answer:
        rejections: list[Rejection] = []
        published = 0
        try:
            for span, outcome in mapped:
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
        self.counters.spans += len(mapped)
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


def _encoding_for(request: Request) -> Encoding:
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return "json" if media == JSON else "protobuf"


def _refuse(request: Request, refused: door.Refusal) -> Response:
    """A refusal as OTLP/HTTP says: a google.rpc.Status in the request's encoding
    (protobuf unless it sent JSON), with the status and its headers."""
    encoding = _encoding_for(request)
    answer = refusal(refused.status, refused.message, encoding, tuple(refused.headers.items()))
    return _response(answer)


def _response(answer: Answer) -> Response:
    headers = {"Content-Type": answer.content_type, **dict(answer.headers)}
    return Response(answer.body, answer.status, headers)


def component(
    receiver: Receiver, *, token: str | None = None, body_seconds: float = BODY_SECONDS
) -> door.Component:
    """`POST /v1/traces` behind the HTTP door. With `token`, a request must carry
    `Authorization: Bearer <token>` (401 before its body is read)."""
    limits = door.Limits(max_body_bytes=receiver.max_body_bytes, body_seconds=body_seconds)
    expected = f"Bearer {token}".encode() if token else None

    async def traces(request: Request) -> Response:
        if expected is not None and not hmac.compare_digest(
            request.headers.get("authorization", "").encode(), expected
        ):
            raise door.Refusal(
                401, "a bearer token is required (Authorization: Bearer <token>)",
                {"WWW-Authenticate": "Bearer"},
            )  # fmt: skip
        body = await door.read_body(request, limits)
        answer = await run_in_threadpool(
            receiver.handle,
            body,
            request.headers.get("content-type"),
            request.headers.get("content-encoding"),
        )
        return _response(answer)

    async def not_allowed(request: Request) -> Response:
        raise door.Refusal(405, f"only POST {TRACES_PATH} is served", {"Allow": "POST"})

    routes = [
        Route(TRACES_PATH, traces, methods=["POST"]),
        Route(TRACES_PATH, not_allowed, methods=["GET", "HEAD", "PUT", "DELETE", "PATCH"]),
    ]
    return door.Component(routes, refuse=_refuse, name="otlp")


def make_server(
    receiver: Receiver,
    host: str = "127.0.0.1",
    port: int = 4318,
    *,
    token: str | None = None,
    header_seconds: float = door.HEADER_SECONDS,
    body_seconds: float = BODY_SECONDS,
) -> door.DoorServer:
    """The receiver behind the HTTP door, not yet bound (port 0: any free port); call
    `start()` to bind and serve on a thread, `stop()` to end."""
    asgi = door.app(component(receiver, token=token, body_seconds=body_seconds))
    return door.DoorServer(asgi, host, port, name="otlp", header_seconds=header_seconds)


__all__ = ["PROTOBUF", "Answer", "EventSink", "Receiver", "component", "make_server"]
