"""Producer SDK for agent workers: one typed method per event type.

Each method builds the canonical event (envelope: UUIDv7 `event_id`, `occurred_at`
defaulting to now in UTC, `source`), validates and encodes it with the Avro codec, and
queues it on an idempotent Kafka producer (`enable.idempotence=true`, `acks=all`) keyed by
`run_id`. Sending is asynchronous; failures surface to the caller:

- invalid input raises :class:`outcomes.common.errors.CodecError` at the call, before
  anything is queued, and nothing but CodecError: the arguments reach the codec as given
  (nothing is coerced: a `str` is not a list of strings, a dict is not a list of
  records), the codec checks every field against the event's Avro schema, then the
  pipeline's own validation (`reducers/validate.py`, the rules ingest applies) checks
  the rest: run and event ids of 1..128 characters, `goal_revision >= 1`,
  `tests_executed >= 0`, identifiers without control, format or separator characters,
  text without lone surrogates, the size limits. What the SDK accepts, ingest accepts.
  The message names the event type, the field, what was expected and what was given,
  and the typed method's declared argument type;
- a full send buffer (broker unreachable or slow) raises
  :class:`ProducerBackpressure` after a bounded wait, never blocks forever;
- events the broker did not acknowledge within `message_timeout_ms` are raised by
  :meth:`OutcomesProducer.flush` / :meth:`OutcomesProducer.close` as one
  :class:`DeliveryError` listing their ids (and passed to an optional callback).

:meth:`OutcomesProducer.position` gives, per run, the ids of the events the broker has
acknowledged: what a pre-display check (`GateClient.check_answer(..., position=...)`)
waits for the fold to reach, so the check reads this producer's writes (SPEC 8).
"""

from __future__ import annotations

import inspect
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaException, Producer

from outcomes.common.codec import Codec
from outcomes.common.errors import (
    SCHEMA_VIOLATION,
    CodecError,
    DeliveryError,
    FailedDelivery,
    ProducerBackpressure,
    ProducerClosed,
)
from outcomes.common.settings import Settings
from outcomes.reducers.answers import answer_check_event_id
from outcomes.reducers.answers import text_digest as text_digest  # for `answer_checked`
from outcomes.reducers.catalog import EVENT_TOPICS
from outcomes.reducers.errors import InvalidEvent

# The typed methods and their record types are generated from the Avro schemas (`python
# -m outcomes.schemas.generate`; tests/test_declared_once.py), the enum values too.
from outcomes.reducers.events import (
    AnswerDecision,
    ArtifactChange,
    AuthoredBy,
    CandidateDecision,
    CheckResult,
    CheckScope,
    Completion,
    ReceiptObservation,
    ReceiptOrigin,
    ReviewState,
    ToolOutcome,
    TransitionState,
)
from outcomes.reducers.validate import parse_event
from outcomes.streams.sdk.calls import CALL_OPTIONS as _CALL_OPTIONS
from outcomes.streams.sdk.calls import (
    CallOptions,
    DeliveryCallback,
    DeliveryReport,
    Timestamp,
)
from outcomes.streams.sdk.methods_generated import Artifact, Candidate, EventMethods, RequiredCheck
from outcomes.streams.sdk.uuid7 import uuid7_str

if TYPE_CHECKING:
    from confluent_kafka import KafkaError, Message

# The SDK's public names, its generated record and enum types among them.
__all__ = [
    "POSITION_EVENTS",
    "POSITION_RUNS",
    "AnswerDecision",
    "Artifact",
    "ArtifactChange",
    "AuthoredBy",
    "CallOptions",
    "Candidate",
    "CandidateDecision",
    "CheckResult",
    "CheckScope",
    "Completion",
    "DeliveryCallback",
    "DeliveryReport",
    "OutcomesProducer",
    "ReceiptObservation",
    "ReceiptOrigin",
    "RequiredCheck",
    "ReviewState",
    "Timestamp",
    "ToolOutcome",
    "TransitionState",
    "encode_checked",
    "text_digest",
]

log = logging.getLogger(__name__)
_ERROR_LOG_INTERVAL = 30.0  # seconds between two logs of the same client error
# librdkafka's own log lines (every connection retry): quiet unless the app configures
# logging; the throttled `error_cb` warning above already names the cause.
_librdkafka_log = logging.getLogger(f"{__name__}.librdkafka")
_librdkafka_log.addHandler(logging.NullHandler())

# Bounds of `OutcomesProducer.position`: the acknowledged ids kept per run (the oldest
# are dropped past it; a gate takes at most as many), and the runs kept (the run whose
# last acknowledgement is oldest is dropped past it).
POSITION_EVENTS = 10_000
POSITION_RUNS = 1_000

_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _argument_error(event_type: str, error: CodecError) -> CodecError:
    """The codec's verdict on a typed method's call, with the argument's declared type.

    The codec says `<event type>: <field path>: expected ..., got ...`; when the path
    starts at an argument of the typed method, the message also gives the type that
    method declares for it. Runs on the error path only.
    """
    prefix = f"{event_type}: "
    text = error.message
    name = _FIELD.match(text, len(prefix)) if text.startswith(prefix) else None
    method = event_type.replace(".", "_")
    if error.reason != SCHEMA_VIOLATION or name is None:
        return error
    parameter = inspect.signature(getattr(OutcomesProducer, method)).parameters.get(name[0])
    if parameter is None:
        return error
    annotation = parameter.annotation
    declared = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
    return CodecError(
        error.reason,
        f"{text} (OutcomesProducer.{method}() takes {name[0]}: {declared})",
        run_id=error.run_id,
        event_id=error.event_id,
    )


def encode_checked(codec: Codec, event: Mapping[str, Any]) -> bytes:
    """`event`'s framed Avro bytes, if the pipeline would accept it; else CodecError.

    The codec checks the Avro contract; :func:`parse_event` then applies the rules ingest
    applies to the decoded record (the codec's `event_from_json` gives the same form as
    decoding), so the SDK and ingest cannot drift apart.
    """
    value = codec.event_from_json(event)  # a CodecError naming the field, if it does not fit
    try:
        parse_event(value, codec.limits)
    except InvalidEvent as exc:
        raise CodecError(
            exc.reason,
            f"{value['type']}: {exc.message}",
            run_id=_str_or_none(value.get("run_id")),
            event_id=_str_or_none(value.get("event_id")),
        ) from None
    return codec.encode_event(event)


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class OutcomesProducer(EventMethods):
    """Publishes outcome events to Kafka as Avro. Use as a context manager.

    `source` names the worker in every event's envelope (overridable per call).
    Settings come from the environment (`Settings.load()`) unless given; `bootstrap`
    overrides the brokers. `topics` overrides event type -> topic (tests).
    Bounds: at most `buffer_max_messages` events wait locally; an event is delivered or
    failed within `message_timeout_ms`; a full buffer waits `backpressure_timeout`
    seconds, then raises ProducerBackpressure.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        source: str,
        bootstrap: str | None = None,
        codec: Codec | None = None,
        topics: Mapping[str, str] | None = None,
        buffer_max_messages: int = 10_000,
        message_timeout_ms: int = 10_000,
        backpressure_timeout: float = 5.0,
        on_delivery: DeliveryCallback | None = None,
        config: Mapping[str, str | int | bool] | None = None,
    ) -> None:
        if settings is None:
            settings = Settings.load(bootstrap=bootstrap)
        elif bootstrap is not None:
            settings = replace(settings, bootstrap=bootstrap)
        if not source:
            raise ValueError("source must name the emitting worker")
        self.source = source
        self.settings = settings
        self.codec = codec if codec is not None else Codec(settings)
        self._topics = dict(EVENT_TOPICS) | dict(topics or {})
        self._message_timeout = message_timeout_ms / 1000.0
        self._backpressure_timeout = backpressure_timeout
        self._on_delivery = on_delivery
        self._lock = threading.Lock()
        self._failures: list[FailedDelivery] = []
        self._in_flight: dict[str, str] = {}  # event_id -> topic
        # run_id -> acknowledged event ids, oldest first (`position`); runs by last ack.
        self._acknowledged: OrderedDict[str, OrderedDict[str, None]] = OrderedDict()
        self._closed = False
        self._error_logged: dict[int, float] = {}
        conf: dict[str, Any] = {
            **settings.kafka_config(),
            "enable.idempotence": True,
            "acks": "all",
            "queue.buffering.max.messages": buffer_max_messages,
            "message.timeout.ms": message_timeout_ms,
            "linger.ms": 5,
            # Keys partitioned as Java clients and the worker's run log do (murmur2 of the
            # run id), so the faust engine folds a run where it reads it (docs/stream.md).
            "partitioner": "murmur2_random",
            # An event may be max_event_bytes; leave room for the record batch overhead.
            "message.max.bytes": max(1_000_000, settings.limits.max_event_bytes + 65_536),
            "client.id": f"outcomes-sdk-{source}",
            "error_cb": self._on_client_error,
            "logger": _librdkafka_log,
        }
        conf.update(config or {})
        self._producer = Producer(conf)

    # -- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> OutcomesProducer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is None:
            self.close()
            return
        try:  # the body already failed: still deliver what was queued, keep its error
            self.close()
        except DeliveryError as delivery:
            exc.add_note(f"also, on close: {delivery}")

    def flush(self, timeout: float | None = None) -> None:
        """Wait for queued events; raise DeliveryError for those not delivered.

        The default timeout is the message timeout plus a margin: by then librdkafka has
        settled every event one way or the other. With a shorter `timeout`, events still
        pending are listed too (they may yet be delivered; their ids stay tracked).
        """
        wait = self._message_timeout + 5.0 if timeout is None else timeout
        remaining = self._producer.flush(wait)
        with self._lock:
            failures = self._failures
            self._failures = []
            if remaining:
                failures += [
                    FailedDelivery(e, t, f"still pending after {wait:.1f}s")
                    for e, t in self._in_flight.items()
                ]
        if failures:
            raise DeliveryError(failures)

    def close(self, timeout: float | None = None) -> None:
        """Flush, then release the client; raise DeliveryError for undelivered events.

        With `timeout`, wait at most that long: events still queued then are dropped
        (not sent later) and listed in the DeliveryError, so shutdown is bounded.
        """
        if self._closed:
            return
        self._closed = True
        try:
            self.flush(timeout)
        finally:
            self._producer.purge()  # whatever is still queued was reported as pending
            self._producer.poll(0)  # serve the purge callbacks, then forget them
            with self._lock:
                self._failures.clear()
                self._in_flight.clear()
            release = getattr(self._producer, "close", None)  # newer confluent-kafka only
            if release is not None:
                release()

    # -- publishing --------------------------------------------------------------------

    def publish(
        self, event: Mapping[str, Any], *, on_delivery: DeliveryCallback | None = None
    ) -> str:
        """Validate, encode and queue one canonical JSON event; returns its event_id."""
        if self._closed:
            raise ProducerClosed("this producer is closed")
        data = encode_checked(self.codec, event)
        event_id = str(event["event_id"])
        event_type = str(event["type"])
        topic = self._topics[event_type]
        run_id = str(event["run_id"])
        callback = self._delivery_handler(event_id, run_id, topic, on_delivery)
        key = run_id.encode("utf-8")
        deadline: float | None = None
        with self._lock:
            self._in_flight[event_id] = topic
        while True:
            try:
                self._producer.produce(topic, value=data, key=key, on_delivery=callback)
                break
            except KafkaException as exc:  # refused locally (e.g. message too large)
                with self._lock:
                    self._in_flight.pop(event_id, None)
                raise DeliveryError([FailedDelivery(event_id, topic, str(exc))]) from None
            except BufferError:
                now = time.monotonic()
                deadline = deadline if deadline is not None else now + self._backpressure_timeout
                if now >= deadline:
                    with self._lock:
                        self._in_flight.pop(event_id, None)
                    raise ProducerBackpressure(
                        f"send buffer full for {self._backpressure_timeout:.1f}s "
                        f"(broker {self.settings.bootstrap} unreachable or too slow); "
                        f"event {event_id} was not queued"
                    ) from None
                self._producer.poll(0.05)  # serve delivery callbacks, freeing the buffer
        self._producer.poll(0)
        return event_id

    def _delivery_handler(
        self, event_id: str, run_id: str, topic: str, user_callback: DeliveryCallback | None
    ) -> Callable[[KafkaError | None, Message], None]:
        if user_callback is not None and not callable(user_callback):
            # Checked here, not when librdkafka serves the report in a later call.
            raise TypeError(f"on_delivery must be callable, got {type(user_callback).__name__}")
        callbacks = [c for c in (self._on_delivery, user_callback) if c is not None]

        def delivered(err: KafkaError | None, msg: Message) -> None:
            with self._lock:
                self._in_flight.pop(event_id, None)
                if err is not None:
                    self._failures.append(FailedDelivery(event_id, topic, err.str()))
                else:
                    self._acknowledge(run_id, event_id)
            if callbacks:
                report = DeliveryReport(
                    event_id,
                    topic,
                    msg.partition() if err is None else None,
                    msg.offset() if err is None else None,
                    None if err is None else err.str(),
                )
                for callback in callbacks:
                    callback(report)

        return delivered

    def _acknowledge(self, run_id: str, event_id: str) -> None:
        """File an acknowledged id under its run (the caller holds the lock)."""
        ids = self._acknowledged.get(run_id)
        if ids is None:
            ids = self._acknowledged[run_id] = OrderedDict()
            if len(self._acknowledged) > POSITION_RUNS:
                self._acknowledged.popitem(last=False)
        else:
            self._acknowledged.move_to_end(run_id)
        ids[event_id] = None
        ids.move_to_end(event_id)  # a republished id is acknowledged anew
        if len(ids) > POSITION_EVENTS:
            ids.popitem(last=False)

    def position(self, run_id: str) -> tuple[str, ...]:
        """The ids of this producer's events to `run_id` that the broker acknowledged,
        oldest first: the position to hand a pre-display check
        (`GateClient.check_answer(run_id, text, position=producer.position(run_id))`),
        which then judges an account that holds every one of them (read your writes).

        Only acknowledged events count: call :meth:`flush` first so that the events just
        published are in it. Bounded: the newest `POSITION_EVENTS` (10,000) ids per run
        and the `POSITION_RUNS` (1,000) runs acknowledged most recently are kept; an
        older id is dropped, and a check no longer waits for it. Events of other producers
        are not in it.
        """
        with self._lock:
            ids = self._acknowledged.get(run_id)
            return tuple(ids) if ids is not None else ()

    def _on_client_error(self, err: KafkaError) -> None:
        # Connection errors are retried by librdkafka until message.timeout.ms; the
        # events' fate is reported per event. Log so an operator sees the cause early,
        # once per error code per interval (librdkafka repeats them on every retry).
        now = time.monotonic()
        code = err.code()
        if now - self._error_logged.get(code, -_ERROR_LOG_INTERVAL) >= _ERROR_LOG_INTERVAL:
            self._error_logged[code] = now
            log.warning("kafka client error (%s): %s", self.settings.bootstrap, err.str())

    def _emit(
        self, event_type: str, run_id: str, options: CallOptions, fields: Mapping[str, Any]
    ) -> str:
        """Fill the envelope of one typed method's event (`CallOptions` and their
        defaults) around its own `fields`, then publish it."""
        for name in options:  # what Python says of an argument the signature lacks
            if name not in _CALL_OPTIONS:
                raise TypeError(
                    f"OutcomesProducer.{event_type.replace('.', '_')}() got an unexpected "
                    f"keyword argument {name!r}"
                )
        event_id = options.get("event_id")
        if event_id is None and event_type == "answer.checked":
            event_id = _answer_check_id(run_id, fields)
        occurred_at = options.get("occurred_at")
        source = options.get("source")
        event = {
            "event_id": event_id if event_id is not None else uuid7_str(),
            "run_id": run_id,
            "type": event_type,
            "occurred_at": occurred_at if occurred_at is not None else datetime.now(UTC),
            "source": source if source is not None else self.source,
            **fields,
        }
        try:
            return self.publish(event, on_delivery=options.get("on_delivery"))
        except CodecError as error:
            raise _argument_error(event_type, error) from None


def _answer_check_id(run_id: str, fields: Mapping[str, Any]) -> str | None:
    """`answer.checked`'s default event id: the attempt's own (`answer:<sha256 of run,
    chain, attempt>`), so recording one attempt twice is one event. None (a new id) when
    an argument has the wrong type: the codec then names it."""
    chain, attempt = fields["answer_chain_id"], fields["attempt"]
    if type(run_id) is str and type(chain) is str and type(attempt) is int:
        return answer_check_event_id(run_id, chain, attempt)
    return None
