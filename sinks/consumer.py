"""`outcomes sink`: every output topic (seven) -> ClickHouse, committing only what landed.

Records are buffered per (topic, partition). Once `batch_records` records are buffered
in all, or the oldest is `batch_seconds` old, every buffered partition is written in one
call on a writer thread while consuming goes on; a partition's offset is committed only
after ClickHouse acknowledged its rows (sinks/writer.py makes the re-insert after a
crash or rebalance a no-op).

A record the worker published with its headers (common/output_headers.py) is buffered
as it came: its key, id and canonical JSON, which the writer hands to ClickHouse without
decoding. Any other record is decoded from its Avro value into rows here. Bytes that do
not decode, or decode to something that is not a valid output record, become
`dead_letters` rows (recorded_by `sink`) and never stall the partition.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from outcomes.common.broker import check_broker
from outcomes.common.codec import Codec
from outcomes.common.errors import SCHEMA_VIOLATION, UNDECODABLE, CodecError
from outcomes.common.output_headers import read_output_headers
from outcomes.common.runtime import consume_ready
from outcomes.common.settings import Settings
from outcomes.reducers.catalog import OUTPUT_KINDS, OUTPUT_TOPICS
from outcomes.reducers.records import OutputRecord, dead_letter
from outcomes.sinks import clickhouse, defaults
from outcomes.sinks.exceptions import MalformedRecord, SinkError, UnknownRecordKind
from outcomes.sinks.json_insert import TABLE_OF_KIND
from outcomes.sinks.live import LiveServer
from outcomes.sinks.rows import Row, rows_for, sink_dead_letter_rows
from outcomes.sinks.writer import ClickHouseWriter, Encoded, WriteReport

log = logging.getLogger(__name__)

# The body field that holds each output kind's deterministic id (docs/records.md).
ID_FIELDS: Mapping[str, str] = {
    "account_revision": "revision_id",
    "notification": "notification_id",
    "provenance_row": "row_id",
    "claim_verdict": "verdict_id",
    "claim_notification": "notification_id",
    "dead_letter": "dead_letter_id",
    "answer_check": "check_id",
}


SESSION_TIMEOUT_MS = 10_000


class KafkaFailure(SinkError):
    """The Kafka consumer hit a fatal error (authentication, unknown group, broker gone).

    Operators: check `outcomes dev status` / OUTCOMES_BOOTSTRAP and the client's ACLs;
    nothing uncommitted was lost, so restart the sink once Kafka is healthy.
    """


@dataclass(frozen=True)
class SinkConfig:
    """How the sink consumes and batches."""

    group_id: str = "outcomes-sink"
    batch_records: int = defaults.BATCH_RECORDS
    batch_seconds: float = defaults.BATCH_SECONDS
    until_idle: float | None = None
    poll_seconds: float = 0.2
    topics: tuple[str, ...] = tuple(OUTPUT_TOPICS.values())
    # On chDB, `run_sink` serves read-only queries on 127.0.0.1 at this port (0: any
    # free one; the address is written next to the chDB directory). None: no endpoint.
    query_port: int | None = 0
    # INSERT with async_insert = 1 and wait_for_async_insert = 1 (ClickHouseWriter).
    async_insert: bool = False


@dataclass
class SinkStats:
    """Counts for the final summary line."""

    consumed: int = 0
    dead_letters: int = 0
    flushes: int = 0
    commits: int = 0
    written: WriteReport = field(default_factory=WriteReport)

    def summary(self) -> str:
        present = sum(self.written.already_present.values())
        return (
            f"sink: {self.consumed} records consumed, {self.written.rows_inserted} rows "
            f"inserted, {present} already present, {self.dead_letters} undecodable "
            f"-> dead_letters, {self.flushes} flushes, {self.commits} commits"
        )


@dataclass
class _Buffer:
    rows: dict[str, list[Row]] = field(default_factory=dict)
    encoded: dict[str, list[Encoded]] = field(default_factory=dict)
    records: int = 0
    first_at: float = 0.0
    next_offset: int = -1

    def add(self, table_rows: list[tuple[str, Row]], offset: int, now: float) -> None:
        if self.records == 0:
            self.first_at = now
        for table, row in table_rows:
            self.rows.setdefault(table, []).append(row)
        self.records += 1
        self.next_offset = offset + 1

    def add_encoded(self, kind: str, record: Encoded, offset: int, now: float) -> None:
        if self.records == 0:
            self.first_at = now
        self.encoded.setdefault(kind, []).append(record)
        self.records += 1
        self.next_offset = offset + 1


class RowWriter(Protocol):
    """What the sink writes through (`ClickHouseWriter`): idempotent, and returns only
    once every row and encoded record (by output kind) given is stored."""

    def write_rows(
        self,
        rows: Mapping[str, Sequence[Row]],
        encoded: Mapping[str, Sequence[Encoded]] | None = None,
    ) -> WriteReport: ...


@dataclass
class _Write:
    """A write under way on the writer thread, and the offsets it lets us commit."""

    future: Future[WriteReport]
    offsets: list[TopicPartition]
    started: float


# Buffered records, in batches, beyond which the loop waits for the write under way.
_MAX_BUFFERED_BATCHES = 4


def to_output_record(codec: Codec, message: Message) -> tuple[OutputRecord, bool]:
    """Decode one output-topic message: (record, False), or (dead letter, True) if unusable."""
    topic, partition, offset = message.topic(), message.partition(), message.offset()
    raw = message.value()

    def letter(
        reason: str, text: str, run_id: str | None = None, event_id: str | None = None
    ) -> tuple[OutputRecord, bool]:
        record = dead_letter(
            reason=reason,
            message=text,
            raw=raw or b"",
            origin_topic=topic,
            origin_partition=partition,
            origin_offset=offset,
            run_id=run_id,
            event_id=event_id,
        )
        return record, True

    if raw is None:
        return letter(UNDECODABLE, "empty (tombstone) message")
    try:
        decoded = codec.decode(raw)
    except CodecError as exc:
        return letter(exc.reason, exc.message, run_id=exc.run_id, event_id=exc.event_id)
    if decoded.kind not in OUTPUT_KINDS:
        return letter(
            SCHEMA_VIOLATION, f"{decoded.schema_name} is not an output record (topic {topic})"
        )
    body = decoded.value
    record_id = body.get(ID_FIELDS[decoded.kind]) if isinstance(body, dict) else None
    if not isinstance(record_id, str):
        return letter(SCHEMA_VIOLATION, f"{decoded.kind} without {ID_FIELDS[decoded.kind]}")
    return OutputRecord(decoded.kind, str(body.get("run_id") or ""), record_id, body), False


def table_rows(codec: Codec, message: Message) -> tuple[list[tuple[str, Row]], bool]:
    """A message's rows, and whether the sink had to dead-letter it."""
    record, dead_lettered = to_output_record(codec, message)
    if dead_lettered:
        return sink_dead_letter_rows(record), True
    try:
        return rows_for(record), False
    except (MalformedRecord, UnknownRecordKind) as exc:
        letter = dead_letter(
            reason=SCHEMA_VIOLATION,
            message=str(exc),
            raw=bytes(message.value() or b""),
            origin_topic=message.topic(),
            origin_partition=message.partition(),
            origin_offset=message.offset(),
            run_id=record.key or None,
        )
        return sink_dead_letter_rows(letter), True


class Sink:
    """One consumer-group member moving output records into ClickHouse."""

    def __init__(
        self,
        settings: Settings,
        config: SinkConfig,
        *,
        writer: RowWriter | None = None,
        codec: Codec | None = None,
    ) -> None:
        self.config = config
        self.writer: RowWriter = writer or ClickHouseWriter(
            settings.clickhouse_dsn, async_insert=config.async_insert
        )
        self.codec = codec or Codec(settings)
        self.stats = SinkStats()
        self._stop = False
        self._last_input = 0.0
        self._buffers: dict[tuple[str, int], _Buffer] = {}
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sink-writer")
        self._writing: _Write | None = None
        self._failed = False
        conf: dict[str, Any] = {
            **settings.kafka_config(),
            "group.id": config.group_id,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "cooperative-sticky",
            # A sink killed without leaving the group holds its partitions until this
            # expires; 10 s (not librdkafka's 45 s) lets a restarted sink resume soon.
            "session.timeout.ms": str(SESSION_TIMEOUT_MS),
        }
        self.consumer = Consumer(conf, logger=log)

    def stop(self) -> None:
        """Ask the loop to finish the current batch, commit and exit."""
        self._stop = True

    def run_on_writer(self, call: Callable[[], Any]) -> Future[Any]:
        """Run `call` on the writer thread, after the write under way (if any) and before
        the next: the live query endpoint's reads never overlap a write on chDB.
        Raises RuntimeError once the sink has stopped."""
        return self._pool.submit(call)

    def run(self) -> SinkStats:
        """Consume until stopped or idle for `until_idle` seconds; always flush on exit."""
        self.consumer.subscribe(
            list(self.config.topics),
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )
        # Idle time counts from the last input or assignment. Before the first
        # assignment, allow for a dead predecessor's session to expire as well.
        self._last_input = time.monotonic() + SESSION_TIMEOUT_MS / 1000
        try:
            while not self._stop:
                # While a write is under way, look often: its offsets are committed as
                # soon as it lands.
                wait = 0.02 if self._writing is not None else self.config.poll_seconds
                messages = consume_ready(self.consumer, 1000, wait)
                now = time.monotonic()
                for message in messages:
                    if self._accept(message, now):
                        self._last_input = now
                self._pump()
                idle = self.config.until_idle
                if idle is not None and not messages and now - self._last_input >= idle:
                    log.info("no input for %.1fs: exiting", idle)
                    break
            self._flush_now()
        except BaseException:
            self._failed = True  # commit nothing more; the next owner redoes the rest
            raise
        finally:
            try:
                self.consumer.close()
            finally:
                self._pool.shutdown(wait=True)
        return self.stats

    def _accept(self, message: Message, now: float) -> bool:
        error = message.error()
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                return False
            if error.fatal():
                raise KafkaFailure(f"Kafka consumer failed: {error.str()}")
            log.warning("Kafka consumer error (retrying): %s", error.str())
            return False
        topic, partition, offset = message.topic(), message.partition(), message.offset()
        assert topic is not None and partition is not None and offset is not None
        headed = read_output_headers(message.headers())
        if headed is not None and headed[0] in TABLE_OF_KIND:
            kind, record_id, body = headed
            key = message.key()
            record = Encoded(key.decode(errors="replace") if key else "", record_id, body)
            buffer = self._buffers.get((topic, partition))
            if buffer is None:
                buffer = self._buffers[(topic, partition)] = _Buffer()
            buffer.add_encoded(kind, record, offset, now)
            self.stats.consumed += 1
            return True
        rows, dead_lettered = table_rows(self.codec, message)
        if dead_lettered:
            self.stats.dead_letters += 1
            log.warning(
                "undecodable record %s:%s:%s -> dead_letters",
                message.topic(),
                message.partition(),
                message.offset(),
            )
        self._buffers.setdefault((topic, partition), _Buffer()).add(rows, offset, now)
        self.stats.consumed += 1
        return True

    # -- flushing ----------------------------------------------------------------------
    #
    # One write at a time runs on a writer thread (chDB and the HTTP driver release the
    # GIL while ClickHouse works), so consuming and decoding go on meanwhile. Its
    # offsets are committed from this thread once it has landed, in order, since the
    # next write starts only after that.

    def _pump(self) -> None:
        """Commit a finished write; start the next one when the buffers are due."""
        writing = self._writing
        if writing is not None:
            limit = _MAX_BUFFERED_BATCHES * max(1, self.config.batch_records)
            if not writing.future.done() and self._buffered() < limit:
                return
            self._finish_write()  # done, or too much is waiting behind it
        held = [key for key, buf in self._buffers.items() if buf.records]
        if not held:
            return
        buffers = [self._buffers[key] for key in held]
        oldest = min(buf.first_at for buf in buffers)
        if (
            sum(buf.records for buf in buffers) < self.config.batch_records
            and time.monotonic() - oldest < self.config.batch_seconds
        ):
            return
        self._start_write(held)

    def _flush_now(self, only: set[tuple[str, int]] | None = None) -> None:
        """Land every buffered record (of the partitions in `only`) before returning."""
        self._finish_write()
        held = [
            key
            for key, buf in self._buffers.items()
            if buf.records and (only is None or key in only)
        ]
        if held:
            self._start_write(held)
            self._finish_write()

    def _buffered(self) -> int:
        return sum(buf.records for buf in self._buffers.values())

    def _start_write(self, keys: list[tuple[str, int]]) -> None:
        """Hand the partitions' buffered rows to the writer thread (one write in all:
        each write pays a fixed cost per table, a read-back query and an insert)."""
        assert self._writing is None
        combined: dict[str, list[Row]] = {}
        encoded: dict[str, list[Encoded]] = {}
        for key in keys:
            for table, rows in self._buffers[key].rows.items():
                combined.setdefault(table, []).extend(rows)
            for kind, records in self._buffers[key].encoded.items():
                encoded.setdefault(kind, []).extend(records)
        offsets = [TopicPartition(t, p, self._buffers[(t, p)].next_offset) for t, p in keys]
        for key in keys:
            del self._buffers[key]
        future = self._pool.submit(self.writer.write_rows, combined, encoded)
        self._writing = _Write(future, offsets, time.monotonic())

    def _finish_write(self, lost: set[tuple[str, int]] | None = None) -> None:
        """Wait for the write under way, then commit its offsets (not those of `lost`
        partitions, which belong to another member now)."""
        writing, self._writing = self._writing, None
        if writing is None:
            return
        # Raises after the writer's retries: then nothing is committed, and a restart
        # redoes these records (the writer drops the rows that did land).
        report = writing.future.result()
        self.stats.written.add(report)
        self.stats.flushes += 1
        offsets = [tp for tp in writing.offsets if (tp.topic, tp.partition) not in (lost or ())]
        if not offsets or self._failed:
            return
        try:
            self.consumer.commit(offsets=offsets, asynchronous=False)
            self.stats.commits += 1
            log.info(
                "flushed %d partition(s): %d rows stored in %.0f ms; offsets committed",
                len(offsets),
                report.rows_inserted,
                (time.monotonic() - writing.started) * 1000,
            )
        except KafkaException as exc:
            # The rows are stored; the next owner re-reads them and the writer drops them.
            log.warning("offset commit failed (%s); records will be re-read, not duplicated", exc)

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._last_input = max(self._last_input, time.monotonic())

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if self._failed:
            return
        self._flush_now(only={(tp.topic, tp.partition) for tp in partitions})

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        lost = {(tp.topic, tp.partition) for tp in partitions}
        if not self._failed:
            self._finish_write(lost=lost)
        for key in lost:
            dropped = self._buffers.pop(key, None)
            if dropped is not None and dropped.records:
                log.warning(
                    "partition %s:%s lost: %d buffered records will be re-read by its new owner",
                    key[0],
                    key[1],
                    dropped.records,
                )


def run_sink(settings: Settings, config: SinkConfig) -> SinkStats:
    """Run the sink in this process with SIGTERM/SIGINT meaning "finish and exit".

    Fails fast (`BrokerUnreachable`, within `BROKER_CHECK_SECONDS`) if no broker answers.
    """
    check_broker(settings)
    sink = Sink(settings, config)
    endpoint = _start_endpoint(settings, config, sink)

    def _graceful(signum: int, frame: FrameType | None) -> None:
        log.info("signal %d: finishing the current batch", signum)
        sink.stop()

    previous = {s: signal.signal(s, _graceful) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        return sink.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if endpoint is not None:
            endpoint.stop()


def _start_endpoint(settings: Settings, config: SinkConfig, sink: Sink) -> LiveServer | None:
    """On chDB, the read-only query endpoint analysts reach while this sink holds the
    directory (sinks/live.py); a server needs none."""
    target = clickhouse.parse_dsn(settings.clickhouse_dsn)
    if not target.embedded or config.query_port is None:
        return None
    assert target.path is not None
    server = LiveServer(
        target.path, target.database, submit=sink.run_on_writer, port=config.query_port
    )
    return server.start()
