"""The events recorder: the worker's run log -> the ClickHouse `events` table, exactly once.

The output topics hold what the pipeline made of a run; the browser also shows what went
in (a run's agent, model and task, and the events an account entry came from). The
worker forwards every valid input event to its run log, keyed and ordered by run
(streams/topics.py), so that topic is what this recorder reads: its own consumer group
(`<sink group>-events`), inside the `outcomes sink` process.

Exactly once, as the sink's writer does it (sinks/writer.py): before each insert it asks
ClickHouse which of the batch's event ids are stored and inserts only the others
(MergeTree's insert deduplication is off here); a partition's offset is committed only
after ClickHouse acknowledged the rows before it. A redelivered batch, a restart after a
crash and a second recorder replaying the log therefore add no row, and the table is
ReplacingMergeTree on (run_id, event_id), so even a racing second copy is one row through
FINAL. Bytes that do not decode to an event of their run become `dead_letters` rows
(recorded_by `sink`) with the codec's reason, and the partition goes on. Events of a run
listed in `purge_log` are dropped, as the writer drops its outputs: a replay of the run
log never brings a purged run back.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from outcomes.common.codec import Codec
from outcomes.common.errors import SCHEMA_VIOLATION, UNDECODABLE, CodecError
from outcomes.common.retry import Backoff, Retrying, retry
from outcomes.common.runtime import consume_ready
from outcomes.common.settings import Settings
from outcomes.reducers.catalog import RUN_LOG_TOPIC
from outcomes.reducers.records import OutputRecord, dead_letter
from outcomes.reducers.timefmt import parse_rfc3339
from outcomes.sinks import clickhouse, schema
from outcomes.sinks.clickhouse import Connection
from outcomes.sinks.exceptions import ClickHouseUnavailable, SinkError
from outcomes.sinks.writer import ClickHouseWriter

log = logging.getLogger(__name__)

GROUP_SUFFIX = "-events"
BATCH_RECORDS = 5_000
BATCH_SECONDS = 0.5
SESSION_TIMEOUT_MS = 10_000
_MAX_IDS_PER_QUERY = 20_000

EventRow = tuple[Any, ...]
"""One row of `events`, in `schema.EVENT_COLUMNS` order without `recorded_at`."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
COLUMNS = tuple(name for name, _ in schema.EVENT_COLUMNS if name != "recorded_at")
_TYPES = tuple(kind for name, kind in schema.EVENT_COLUMNS if name != "recorded_at")


class EventsFailure(SinkError):
    """The events recorder's consumer hit a fatal Kafka error.

    Operators: check the broker and the client's ACLs (it reads the worker's run log);
    nothing uncommitted was lost, so restart `outcomes sink` once Kafka is healthy.
    """


def group_for(sink_group: str) -> str:
    """The recorder's consumer group beside the sink's."""
    return sink_group + GROUP_SUFFIX


def event_row(codec: Codec, message: Message) -> EventRow | OutputRecord:
    """A run-log message as its `events` row, or a dead letter saying why it is none."""
    topic, partition, offset = message.topic(), message.partition(), message.offset()
    raw = message.value()
    key = message.key()
    run_key = key.decode(errors="replace") if key is not None else None

    def letter(reason: str, text: str, event_id: str | None = None) -> OutputRecord:
        return dead_letter(
            reason=reason,
            message=f"events recorder: {text}",
            raw=bytes(raw or b""),
            origin_topic=topic,
            origin_partition=partition,
            origin_offset=offset,
            run_id=run_key,
            event_id=event_id,
        )

    if not raw:
        return letter(UNDECODABLE, "empty (tombstone) run-log record")
    try:
        decoded = codec.decode(raw)
    except CodecError as exc:
        return letter(exc.reason, exc.message, exc.event_id)
    value = decoded.value
    if not decoded.is_event or not isinstance(value, dict):
        return letter(SCHEMA_VIOLATION, f"{decoded.schema_name} is not an input event")
    run_id, event_id = value.get("run_id"), value.get("event_id")
    if not isinstance(run_id, str) or not isinstance(event_id, str):
        return letter(SCHEMA_VIOLATION, "an event without run_id or event_id")
    if run_key != run_id:
        return letter(
            SCHEMA_VIOLATION, f"run-log key {run_key!r} differs from run_id {run_id!r}", event_id
        )
    assert partition is not None and offset is not None
    try:
        return row_of(value, partition, offset)
    except ValueError as exc:
        return letter(SCHEMA_VIOLATION, str(exc), event_id)


def row_of(event: Mapping[str, Any], partition: int, offset: int) -> EventRow:
    """A canonical JSON event's `events` row (it was at `offset` of run-log `partition`).
    Raises ValueError for an `occurred_at` that is not RFC 3339."""
    micros = parse_rfc3339(str(event.get("occurred_at")))
    started = event.get("type") == "run.started"
    return (
        str(event["run_id"]),
        str(event["event_id"]),
        str(event["type"]),
        _EPOCH + timedelta(microseconds=micros),
        str(event.get("source") or ""),
        orjson.dumps(event, option=orjson.OPT_SORT_KEYS).decode(),
        partition,
        offset,
        str(event.get("agent") or "") if started else "",
        str(event.get("model") or "") if started else "",
        str(event.get("task") or "") if started else "",
    )


@dataclass
class EventsStats:
    consumed: int = 0
    inserted: int = 0
    already_present: int = 0
    dead_letters: int = 0
    commits: int = 0

    def summary(self) -> str:
        return (
            f"events: {self.consumed} run-log records consumed, {self.inserted} events "
            f"inserted, {self.already_present} already present, {self.dead_letters} "
            f"-> dead_letters, {self.commits} commits"
        )


@dataclass
class _Batch:
    rows: list[EventRow] = field(default_factory=list)
    letters: list[OutputRecord] = field(default_factory=list)
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    first_at: float = 0.0

    @property
    def size(self) -> int:
        return len(self.rows) + len(self.letters)


class EventStore:
    """The `events` table on one connection: which ids it holds, and inserts."""

    def __init__(self, conn: Connection, retries: int = 3, retry_delay: float = 0.5) -> None:
        self.conn = conn
        self.retries = retries
        self.retry_delay = retry_delay

    def stored(self, rows: Sequence[EventRow]) -> set[str]:
        """The event ids among `rows` already stored (any copy, merged or not)."""
        found: set[str] = set()
        table = self.conn.table(schema.EVENTS_TABLE)
        for start in range(0, len(rows), _MAX_IDS_PER_QUERY):
            chunk = rows[start : start + _MAX_IDS_PER_QUERY]
            result = self.conn.rows(
                f"SELECT event_id FROM {table} "
                "WHERE run_id IN {runs:Array(String)} AND event_id IN {ids:Array(String)}",
                {"runs": sorted({r[0] for r in chunk}), "ids": [r[1] for r in chunk]},
            )
            found.update(str(r[0]) for r in result)
        return found

    def purged_runs(self) -> set[str]:
        """Every run `outcomes purge` removed (its events are never written again)."""
        found = self.conn.rows(f"SELECT DISTINCT run_id FROM {self.conn.table('purge_log')}")
        return {str(r[0]) for r in found}

    def write(self, rows: Sequence[EventRow]) -> tuple[int, int]:
        """Insert the rows whose ids are not stored yet, retrying transient failures;
        returns (inserted, already present or repeated in `rows` or of a purged run).
        Returns once ClickHouse acknowledged."""

        def once() -> tuple[int, int]:
            purged = self.purged_runs() if rows else set()
            unique: dict[str, EventRow] = {}
            for row in rows:
                if row[0] not in purged:
                    unique.setdefault(row[1], row)
            present = self.stored(list(unique.values())) if unique else set()
            fresh = [row for event_id, row in unique.items() if event_id not in present]
            if fresh:
                self.conn.insert(schema.EVENTS_TABLE, fresh, COLUMNS, column_types=_TYPES)
            return len(fresh), len(rows) - len(fresh)

        def warn(attempt: Retrying) -> None:
            log.warning(
                "events: ClickHouse write failed (%s); retry %d in %.1fs",
                attempt.error,
                attempt.attempt,
                attempt.delay,
            )

        result: tuple[int, int] = retry(
            once,
            retry_if=lambda exc: isinstance(exc, ClickHouseUnavailable),
            attempts=self.retries + 1,
            backoff=Backoff(base=self.retry_delay),
            on_retry=warn,
        )
        return result


@dataclass(frozen=True)
class EventsConfig:
    group_id: str = group_for("outcomes-sink")
    topic: str = RUN_LOG_TOPIC
    batch_records: int = BATCH_RECORDS
    batch_seconds: float = BATCH_SECONDS
    until_idle: float | None = None
    poll_seconds: float = 0.2


class EventRecorder:
    """One consumer-group member moving run-log events into the `events` table."""

    def __init__(
        self,
        settings: Settings,
        config: EventsConfig,
        *,
        conn: Connection | None = None,
        codec: Codec | None = None,
    ) -> None:
        self.config = config
        self._own_conn = conn is None
        if conn is None:
            schema.ensure_schema(clickhouse.connect(settings.clickhouse_dsn))
            # A connection of its own: its statements never share a session with the
            # sink's writer (chDB documents separate connections as safe in parallel).
            conn = clickhouse.open_private(settings.clickhouse_dsn)
        self.conn = conn
        self.store = EventStore(conn)
        self.codec = codec or Codec(settings)
        self.stats = EventsStats()
        self._stop = False
        self._failed = False
        self._batch = _Batch()
        self.consumer = Consumer(
            {
                **settings.kafka_config(),
                "group.id": config.group_id,
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": str(SESSION_TIMEOUT_MS),
            },
            logger=log,
        )
        self._warned: set[int] = set()

    def stop(self) -> None:
        """Ask the loop to land the current batch, commit and exit."""
        self._stop = True

    def run(self) -> EventsStats:
        """Consume until stopped (or idle `until_idle` seconds); always land what it holds."""
        self.consumer.subscribe(
            [self.config.topic], on_revoke=self._on_revoke, on_lost=self._on_lost
        )
        last_input = time.monotonic() + SESSION_TIMEOUT_MS / 1000
        try:
            while not self._stop:
                messages = consume_ready(self.consumer, 1000, self.config.poll_seconds)
                now = time.monotonic()
                for message in messages:
                    if self._accept(message, now):
                        last_input = now
                batch = self._batch
                if batch.size and (
                    batch.size >= self.config.batch_records
                    or now - batch.first_at >= self.config.batch_seconds
                ):
                    self._land()
                idle = self.config.until_idle
                if idle is not None and not messages and now - last_input >= idle:
                    break
            self._land()
        except BaseException:
            self._failed = True  # commit nothing more: the next owner redoes the rest
            raise
        finally:
            try:
                self.consumer.close()
            finally:
                if self._own_conn:  # chDB: the engine is freed once no client holds it
                    clickhouse.close(self.conn)
        return self.stats

    def _accept(self, message: Message, now: float) -> bool:
        error = message.error()
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                return False
            if error.fatal():
                raise EventsFailure(f"events recorder: Kafka consumer failed: {error.str()}")
            if error.code() not in self._warned:  # e.g. no run log yet: once per kind
                self._warned.add(error.code())
                log.warning("events recorder: Kafka consumer error (retrying): %s", error.str())
            return False
        topic, partition, offset = message.topic(), message.partition(), message.offset()
        assert topic is not None and partition is not None and offset is not None
        batch = self._batch
        if not batch.size:
            batch.first_at = now
        found = event_row(self.codec, message)
        if isinstance(found, OutputRecord):
            batch.letters.append(found)
            log.warning(
                "events recorder: run-log record %s:%s:%s -> dead_letters (%s)",
                topic,
                partition,
                offset,
                found.body.get("reason"),
            )
        else:
            batch.rows.append(found)
        batch.offsets[(topic, partition)] = offset + 1
        self.stats.consumed += 1
        return True

    def _land(self) -> None:
        """Write the batch (its dead letters too), then commit its offsets."""
        batch = self._batch
        if not batch.size:
            return
        self._batch = _Batch()
        inserted, present = self.store.write(batch.rows)
        if batch.letters:
            ClickHouseWriter.on(self.conn).write(batch.letters)
        self.stats.inserted += inserted
        self.stats.already_present += present
        self.stats.dead_letters += len(batch.letters)
        if self._failed:
            return
        offsets = [TopicPartition(t, p, o) for (t, p), o in batch.offsets.items()]
        try:
            self.consumer.commit(offsets=offsets, asynchronous=False)
            self.stats.commits += 1
        except KafkaException as exc:
            # The rows are stored; whoever re-reads them finds their ids and skips them.
            log.warning("events recorder: offset commit failed (%s); re-read, not duplicated", exc)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if not self._failed:
            self._land()

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        lost = {(tp.topic, tp.partition) for tp in partitions}
        batch = self._batch
        kept = _Batch(first_at=batch.first_at)
        # Rows of lost partitions are another member's now: drop them uncommitted.
        for row in batch.rows:
            if (self.config.topic, row[6]) not in lost:
                kept.rows.append(row)
        for letter in batch.letters:
            origin = (letter.body.get("origin_topic"), letter.body.get("origin_partition"))
            if origin not in lost:
                kept.letters.append(letter)
        kept.offsets = {k: v for k, v in batch.offsets.items() if k not in lost}
        self._batch = kept
