"""The batch engine of `outcomes worker`: the two stages on confluent-kafka batches.

faust-streaming moves every record through its own machinery (aiokafka fetcher, stream
iteration, sensors, one `send` per record through its producer buffer), which cost
0.5-1 ms of CPU per event here, against ~50 µs for decoding, folding and encoding it
(docs/benchmarks.md). This engine does the same stages with one consumer and one
producer, both librdkafka, in one poll loop:

- One consumer in group `app_id` reads the input topics and the app's run log. An input
  record is validated and forwarded to the run log (or dead-lettered); a run-log record
  is folded by the `RunFolder` of its partition, and its outputs are produced at once.
- Each run-log partition has a `PartitionStore` (streams/store.py): a local rocksdict
  plus the changelog partition of the same number. Appends go to the changelog as they
  happen and to the local database at each commit.
- A commit waits for every produced record's acknowledgement (forwards, outputs,
  changelog), then writes the local stores, then commits the consumed offsets. A crash
  anywhere redoes records after the last commit: the run log has the same order, so the
  fold reproduces the same outputs byte for byte (or, for a record the store already
  applied, re-emits that record's first outputs; a later duplicate of an event emits
  nothing; streams/runfold.py). Nothing relies on Kafka transactions.
- A newly assigned run-log partition is restored from its changelog, from the local
  checkpoint to the end, before any of its records is folded.
"""

from __future__ import annotations

import hashlib
import json
import logging
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from rocksdict import WriteBatch
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from outcomes.common import door
from outcomes.common.codec import Codec
from outcomes.common.door import Component, DoorServer
from outcomes.common.output_headers import output_headers
from outcomes.common.runtime import consume_ready, freeze_survivors
from outcomes.common.settings import Settings
from outcomes.reducers.answers import answer_checked_event
from outcomes.reducers.catalog import EVENT_TOPICS, INPUT_TOPICS, OUTPUT_TOPICS, run_log_topic
from outcomes.reducers.events import Event
from outcomes.reducers.gate import GateResult
from outcomes.reducers.records import OutputRecord
from outcomes.reducers.state import RunState
from outcomes.streams.gate import CheckRequest, GateDesk
from outcomes.streams.gate_door import GateHost, gate_component, gate_token
from outcomes.streams.gate_members import Owners, client_id, group_owners, partition_of
from outcomes.streams.ingest import ingest_record
from outcomes.streams.merge import Partition, TimestampMerge
from outcomes.streams.runfold import FoldStats, Origin, RunFolder
from outcomes.streams.store import PartitionStore
from outcomes.streams.topics import TopicsError, read_range
from outcomes.streams.worker_common import (
    WorkerError,
    WorkerOptions,
    changelog_topic,
    ensure_internal_topics,
)

log = logging.getLogger("outcomes.worker")

# A progress line warns when at least this share of the events folded since the last
# one had to rebuild their run from the store, and runs were evicted meanwhile.
REBUILD_WARNING = 0.25

_MAX_RECORD = 8 * 1024 * 1024 + 64 * 1024  # largest output (streams/topics.py), framed
_HANDOFF_LIMIT = 200_000  # validated events kept for the fold stage to pick up
# (run, chain, attempt) of the checks recorded lately: asking the same attempt again is
# not a second record (its event id is the same; another content would be a conflict).
_RECORDED_CHECKS = 100_000

# How long the merge holds a record young enough that another partition's earlier one
# may still be on its way (streams/merge.py). Each run's events are also put in event-time
# order within a release (`in_event_time`), so 50 ms does: at 3,000 events/s live, 0.02,
# 0.05 and 0.1 s all gave 1.57 revisions per run, and `outcomes bench` at half load gave
# the worker's part of the latency p50 0.092 / p99 0.237 s against 0.149 / 0.42 at 0.1 s.
MERGE_GRACE = 0.05

# A validated input on its way to the run log: (occurred_at, arrival, event, raw bytes).
_Forward = tuple[int, int, Event, bytes]


def _event_time(item: _Forward) -> tuple[int, int]:
    return item[0], item[1]


def in_event_time(forward: list[_Forward]) -> list[_Forward]:
    """The same items, each run's in event-time order (`occurred_at`, then arrival), in
    the places its items held: the interleaving of runs is kept as it was released."""
    places: dict[str, list[int]] = {}
    for index, (_, _, event, _) in enumerate(forward):
        places.setdefault(event.run_id, []).append(index)
    ordered = list(forward)
    for indexes in places.values():
        if len(indexes) > 1:
            items = sorted((forward[i] for i in indexes), key=_event_time)
            for index, item in zip(indexes, items, strict=True):
                ordered[index] = item
    return ordered


def restore(stores: dict[int, PartitionStore], config: dict[str, Any], topic: str) -> int:
    """Bring each store up to its changelog partition's current end, reading from the
    store's checkpoint; returns how many records that read. Writing a key again with
    the value it has changes nothing, so reading from an older checkpoint is harmless
    (and a restore cut short starts again from the checkpoints it had)."""
    starts: dict[tuple[str, int], int] = {}
    ends: dict[tuple[str, int], int] = {}
    probe = Consumer({**config, "group.id": f"{topic}-restore", "enable.auto.commit": False})
    try:
        for partition, store in stores.items():
            low, high = probe.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=30, cached=False
            )
            starts[(topic, partition)] = max(store.checkpoint, low)
            ends[(topic, partition)] = high
    finally:
        probe.close()
    read = 0
    big = {"fetch.message.max.bytes": _MAX_RECORD}
    try:
        for records in read_range(config, starts, ends, consumer_conf=big):
            batches: dict[int, WriteBatch] = {}
            for msg in records:
                key, value = msg.key(), msg.value()
                if key is not None and value is not None:
                    batch = batches.get(msg.partition())
                    if batch is None:
                        batch = batches[msg.partition()] = WriteBatch(raw_mode=True)
                    batch.put(key, value)
                    read += 1
            for partition, batch in batches.items():
                stores[partition].db.write(batch)
    except TopicsError as exc:
        raise WorkerError(f"restoring {topic}: {exc}") from exc
    for (_, partition), end in ends.items():
        if end > starts[(topic, partition)]:
            stores[partition].set_checkpoint(end)
    return read


@dataclass
class Counters:
    """What the worker moved; read by the web page and the log lines."""

    forwarded: int = 0
    folded: int = 0
    dead_letters: int = 0
    outputs: int = 0
    commits: int = 0
    restored: int = 0
    lag: dict[str, int] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    last_input: float = field(default_factory=time.monotonic)

    def idle_for(self) -> float:
        return time.monotonic() - self.last_input


class BatchWorker:
    """One worker process: a consumer, a producer, a store and a folder per run-log
    partition it owns."""

    def __init__(self, settings: Settings, options: WorkerOptions) -> None:
        self.settings = settings
        self.options = options
        self.codec = Codec(settings)
        self.run_log = run_log_topic(options.app_id)
        self.changelog = changelog_topic(options.app_id)
        self.datadir = settings.state_dir / "worker" / options.app_id
        self.counters = Counters()
        self.fold_stats = FoldStats()  # of every folder this worker has had
        self._reported = (0, 0, 0)  # (folded, rebuilt, evicted runs) at the last progress line
        self.stores: dict[int, PartitionStore] = {}
        self.folders: dict[int, RunFolder] = {}
        self.offsets: dict[tuple[str, int], int] = {}  # next offset to commit
        self.handoff: dict[bytes, Event] = {}  # raw run-log value -> its validated event
        self.merge = TimestampMerge(
            self._high_watermark, position=self._position, grace=MERGE_GRACE
        )
        # The pre-display gate (SPEC 8): checks queued by the door's threads, answered by
        # this loop between batches (streams/gate.py); the door's URL is in the client.id,
        # where any worker of the group finds a run's owner (streams/gate_members.py).
        self.gate = GateDesk(record=self._record_check)
        self.recorded_checks: dict[tuple[str, str, int], None] = {}  # oldest first
        self.door_url = f"http://127.0.0.1:{options.web_port}" if options.web_enabled else None
        self.run_log_partitions: int | None = None
        self.failure: str | None = None
        self.healthy = True  # False once stopping on an error: commit nothing more
        self.assigned_once = False
        self.stopping: str | None = None
        base = settings.kafka_config()
        self.base_config: dict[str, Any] = dict(base)
        self.producer = Producer(
            {
                **base,
                "enable.idempotence": True,  # acks=all, ordered, no duplicates on retry
                "linger.ms": 5,
                "batch.num.messages": 10_000,
                "queue.buffering.max.messages": 1_000_000,
                "queue.buffering.max.kbytes": 1024 * 1024,
                "compression.type": "lz4",
                "message.max.bytes": _MAX_RECORD,
                "partitioner": "murmur2_random",  # Java's and faust's: same partitions
                "delivery.report.only.error": True,
                "on_delivery": self._delivered,
            }
        )
        self.consumer = Consumer(
            {
                **base,
                **({"client.id": client_id(self.door_url)} if self.door_url else {}),
                "group.id": options.app_id,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": int(options.session_timeout * 1000),
                "heartbeat.interval.ms": max(500, int(options.session_timeout * 1000) // 5),
                # Each partition fetched in pieces of 256 KiB (librdkafka grows the piece
                # for a larger record, up to fetch.max.bytes) and at most 16 MiB queued:
                # on a backlog, 8 MiB pieces (~28,000 records of one partition) pushed the
                # merge past its 200,000-record limit, which released everything out of
                # order and folded runs finalize-first (issue #36, catch-up).
                "fetch.message.max.bytes": 256 * 1024,
                "queued.max.messages.kbytes": 16 * 1024,
                # A fetch returns at 64 KiB or after 20 ms: under a steady trickle a fetch
                # per few records cost as much CPU in librdkafka as the fold itself (at
                # 2,700 events/s the worker took 52% of a core with fetch.min.bytes 1,
                # 26% with 64 KiB).
                "fetch.wait.max.ms": 20,
                "fetch.min.bytes": 64 * 1024,
                "statistics.interval.ms": 5_000,
                "stats_cb": self._statistics,
                "error_cb": self._client_error,
            }
        )

    # -- Kafka callbacks -------------------------------------------------------------

    def _delivered(self, error: KafkaError | None, msg: Message) -> None:
        if error is not None and self.failure is None:  # only errors are reported
            self.failure = f"delivery to {msg.topic()} failed: {error}"

    def _client_error(self, error: KafkaError) -> None:
        if error.fatal():
            self.failure = f"fatal Kafka error: {error}"
        else:  # librdkafka retries these itself (a broker restarting, a timeout)
            log.warning("kafka: %s", error)

    def _statistics(self, text: str) -> None:
        stats = json.loads(text)
        lag: dict[str, int] = {}
        for topic, body in stats.get("topics", {}).items():
            for partition, p in body.get("partitions", {}).items():
                if partition != "-1" and p.get("consumer_lag", -1) >= 0:
                    lag[f"{topic}[{partition}]"] = int(p["consumer_lag"])
        self.counters.lag = lag

    def _high_watermark(self, tp: Partition) -> int | None:
        """The input partition's end as the last fetch response gave it (no request)."""
        try:
            _, high = self.consumer.get_watermark_offsets(TopicPartition(*tp), cached=True)
        except KafkaException:
            return None
        return int(high) if high >= 0 else None

    def _position(self, tp: Partition) -> int | None:
        """The consumer's position in an input partition (past any transaction marker)."""
        try:
            (where,) = self.consumer.position([TopicPartition(*tp)])
        except KafkaException:
            return None
        return int(where.offset) if where.offset >= 0 else None

    def _assigned(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        inputs = [tp for tp in partitions if tp.topic != self.run_log]
        committed = consumer.committed(inputs, timeout=30) if inputs else []
        self.merge.assign({(tp.topic, tp.partition): tp.offset for tp in committed})
        mine = sorted(tp.partition for tp in partitions if tp.topic == self.run_log)
        began = time.monotonic()
        fresh: dict[int, PartitionStore] = {}
        for partition in mine:
            path = self.datadir / f"run-events-{partition}"
            fresh[partition] = store = PartitionStore(path, partition, self.options)
            store.append_hook = self._append_changelog
        read = restore(fresh, self.base_config, self.changelog)
        self.counters.restored += read
        if read:
            seconds = time.monotonic() - began
            log.info("restored partitions=%s records=%d seconds=%.2f", mine, read, seconds)
        for partition, store in fresh.items():
            self.stores[partition] = store
            self.folders[partition] = RunFolder(
                store,
                self.codec.decode_event_fast,
                self.settings.limits,
                cache_runs=max(1, self.options.cache_runs // max(1, self.options.partitions)),
                stats=self.fold_stats,
            )
        self.assigned_once = True
        self.counters.last_input = time.monotonic()
        log.info("partitions assigned: %d (run log %s)", len(partitions), mine)

    def _revoked(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if self.healthy:
            self.commit()
        self.merge.clear()  # not forwarded, not committed: the next owner reads them
        self._drop(partitions, clean=self.healthy)
        self.counters.last_input = time.monotonic()
        log.info("partitions revoked: %d", len(partitions))

    def _lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # Someone else may own them already: commit nothing for them, keep nothing.
        for tp in partitions:
            self.offsets.pop((tp.topic, tp.partition), None)
        self.merge.clear()
        self._drop(partitions, clean=False)
        log.warning("partitions lost: %d", len(partitions))

    def _drop(self, partitions: list[TopicPartition], clean: bool) -> None:
        for tp in partitions:
            if tp.topic != self.run_log:
                continue
            store = self.stores.pop(tp.partition, None)
            self.folders.pop(tp.partition, None)
            if store is None:
                continue
            if clean:
                store.close(self._changelog_end(tp.partition))
            else:
                store.pending.clear()
                store.db.close()
        self.handoff.clear()

    def _changelog_end(self, partition: int) -> int | None:
        """The changelog partition's end (all our appends are acknowledged when asked)."""
        try:
            _, high = self.consumer.get_watermark_offsets(
                TopicPartition(self.changelog, partition), timeout=10, cached=False
            )
        except KafkaException as exc:
            log.warning("changelog end of partition %d unknown: %s", partition, exc)
            return None
        return int(high)

    # -- the stages ------------------------------------------------------------------

    def _produce(
        self,
        topic: str,
        key: bytes,
        value: bytes,
        partition: int = -1,
        headers: list[tuple[str, str | bytes | None]] | None = None,
    ) -> None:
        while True:
            try:
                self.producer.produce(topic, value, key, partition, headers=headers)
                return
            except BufferError:  # the local queue is full: let deliveries drain it
                self.producer.poll(0.05)

    def _append_changelog(self, key: bytes, value: bytes, partition: int) -> None:
        self._produce(self.changelog, key, value, partition)

    def _publish(self, records: list[OutputRecord]) -> None:
        # Each output carries its canonical JSON in headers: the sink hands it to
        # ClickHouse without decoding the Avro value (common/output_headers.py).
        for record in records:
            value = self.codec.encode_output(record)
            self._produce(
                OUTPUT_TOPICS[record.kind],
                record.key.encode(),
                value,
                headers=[*output_headers(record)],
            )
        self.counters.outputs += len(records)

    def _ingest(
        self, msg: Message, topic: str, partition: int, offset: int, forward: list[_Forward]
    ) -> None:
        """Validate one input record: a dead letter is published now; a valid event is
        appended to `forward`, for `_release` to send to the run log in event-time order."""
        raw = msg.value()
        result = ingest_record(self.codec, self.settings, raw, topic, partition, offset)
        if isinstance(result, OutputRecord):
            self.counters.dead_letters += 1
            self._publish([result])
            return
        assert raw is not None  # an empty record is a dead letter
        forward.append((result.occurred_at, len(forward), result, raw))

    def _fold(self, msg: Message, partition: int, offset: int) -> None:
        folder = self.folders.get(partition)
        if folder is None:
            raise WorkerError(f"run-log partition {partition} has no store (not assigned?)")
        raw = msg.value() or b""
        key = msg.key()
        run_id = key.decode(errors="replace") if key is not None else ""
        records = folder.process(
            run_id, raw, Origin(self.run_log, partition, offset), self.handoff.pop(raw, None)
        )
        self.counters.folded += 1
        self._publish(records)

    def _handle(self, messages: list[Message]) -> None:
        run_log = self.run_log
        offsets = self.offsets
        for msg in messages:
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                if error.fatal():
                    raise WorkerError(f"consumer: {error}")
                log.warning("consumer: %s", error)
                continue
            topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
            assert topic is not None and partition is not None and offset is not None
            if topic == run_log:
                self._fold(msg, partition, offset)
                offsets[(topic, partition)] = offset + 1
            else:
                self.merge.add(msg, topic, partition, offset)

    def _release(self) -> int:
        """Forward the input records the merge lets go, each run's in the order its events
        happened (`in_event_time`); returns how many were released.

        The merge orders by Kafka timestamp, head by head: its ties (milliseconds) are
        broken by topic name, and a partition written by several producers holds
        timestamps out of order. Either way a run's events reached the run log out of
        order, and every event folded after a run's finalize makes a revision of its
        own: in a live burst of 2,000 runs (4 producers), 1,989 runs had events out of
        order and the worker made 3.6 revisions per run against 1.6 in event-time order.
        The offsets committed stay a processed prefix: a commit waits for every forward
        of the release.
        """
        offsets = self.offsets
        forward: list[_Forward] = []
        released = 0
        # A gate check waits for its position: young records go without their grace.
        for msg in self.merge.release(hurry=len(self.gate) > 0):
            topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
            self._ingest(msg, topic, partition, offset, forward)
            offsets[(topic, partition)] = offset + 1
            released += 1
        handoff, run_log = self.handoff, self.run_log
        if len(handoff) + len(forward) > _HANDOFF_LIMIT:
            handoff.clear()  # folded elsewhere (another worker owns the run): decode there
        for _, _, event, raw in in_event_time(forward):
            handoff[raw] = event
            self._produce(run_log, event.run_id.encode(), raw)
        self.counters.forwarded += len(forward)
        return released

    # -- commits and the loop --------------------------------------------------------

    def commit(self) -> None:
        """Wait for every produced record's ack, persist the stores, commit offsets.
        A failed delivery stops the worker before anything it caused is committed."""
        while self.producer.flush(10.0) > 0:
            log.warning("waiting for Kafka to acknowledge %d records", len(self.producer))
        if self.failure is not None:
            raise WorkerError(f"{self.failure}; the records after the last commit are redone")
        for store in self.stores.values():
            store.persist()
        if not self.offsets:
            return
        offsets = [TopicPartition(t, p, o) for (t, p), o in self.offsets.items()]
        self.offsets.clear()
        try:
            self.consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:  # a rebalance under way: these records are redone
            log.warning("commit failed (the records will be redone): %s", exc)
            return
        self.counters.commits += 1

    def _signalled(self, signum: int, frame: FrameType | None) -> None:
        if self.stopping is None:
            self.stopping = signal.Signals(signum).name
            log.warning("Signal received: %s; stopping after the current batch", self.stopping)

    def run(self) -> int:
        options = self.options
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._signalled)
        # How many partitions the run log has (a run's partition for the gate), asked of
        # a client of its own before the consumer starts: a blocking call on the consumer
        # inside its rebalance callback let librdkafka fire a callback with no call state,
        # and confluent-kafka aborted the process (CallState_get: cs != NULL).
        metadata = AdminClient(self.base_config).list_topics(self.run_log, timeout=30)
        self.run_log_partitions = len(metadata.topics[self.run_log].partitions)
        self.consumer.subscribe(
            [*INPUT_TOPICS, self.run_log],
            on_assign=self._assigned,
            on_revoke=self._revoked,
            on_lost=self._lost,
        )
        commit_every = options.commit_seconds()
        last_commit = last_report = time.monotonic()
        pending = 0
        try:
            while self.stopping is None:
                # Records held by the merge are due within its grace: look again soon.
                wait = 0.02 if self.merge.buffered or len(self.gate) else 0.1
                messages = consume_ready(self.consumer, options.batch_records, wait)
                now = time.monotonic()
                if messages:
                    self._handle(messages)
                    pending += len(messages)
                    self.merge.note_activity()
                if self.merge.buffered:
                    self._release()
                if messages:
                    now = self.counters.last_input = time.monotonic()  # idle from here
                self.producer.poll(0)
                if len(self.gate):
                    self.gate.serve(self.gate_state)
                if pending and (now - last_commit >= commit_every or pending >= 50_000):
                    self.commit()
                    last_commit, pending = time.monotonic(), 0
                if now - last_report >= 10.0:
                    self._report()
                    last_report = now
                if self._idle():
                    c = self.counters
                    log.warning(
                        "idle for %.1fs: stopping (forwarded %d, folded %d, dead letters %d)",
                        options.until_idle,
                        c.forwarded,
                        c.folded,
                        c.dead_letters,
                    )
                    break
            self.commit()
        except BaseException:
            self.healthy = False  # what was not committed is redone by the next owner
            raise
        finally:
            self.consumer.close()  # revokes: a last commit, unless failing
            self._drop([TopicPartition(self.run_log, p) for p in list(self.stores)], self.healthy)
            self.producer.flush(30.0)
        self._report()
        return 0

    def _idle(self) -> bool:
        """`--until-idle` has passed without input. Not before the group first assigned
        this worker partitions (a restart waits out the dead member's session), unless
        that takes longer than a session timeout could explain."""
        idle = self.options.until_idle
        if idle is None or self.counters.idle_for() < idle or self.merge.buffered:
            return False
        waited = time.monotonic() - self.counters.started
        return self.assigned_once or waited > idle + 3 * self.options.session_timeout

    def _report(self) -> None:
        c, stats = self.counters, self.fold_stats
        log.info(
            "progress forwarded=%d folded=%d dead_letters=%d outputs=%d commits=%d "
            "lag=%d cached_runs=%d rebuilt_runs=%d merge_buffered=%d older_rules=%d unreadable=%d",
            c.forwarded,
            c.folded,
            c.dead_letters,
            c.outputs,
            c.commits,
            sum(c.lag.values()),
            sum(len(f.cache) for f in self.folders.values()),
            stats.rebuilt_runs,
            self.merge.buffered,
            stats.older_rules,
            stats.unreadable,
        )
        counts = (c.folded, stats.rebuilt_runs, stats.evicted_runs)
        folded, rebuilds, evictions = (a - b for a, b in zip(counts, self._reported, strict=True))
        self._reported = counts
        if evictions and folded and rebuilds >= REBUILD_WARNING * folded:
            log.warning(
                "the run cache is thrashing: %d of the last %d events found their run evicted "
                "and re-folded it from the store. More runs are in flight than --cache-runs "
                "(%d, split over %d partitions) holds; raise it (docs/stream.md)",
                rebuilds,
                folded,
                self.options.cache_runs,
                self.options.partitions,
            )

    # -- the gate (SPEC 8) -------------------------------------------------------------

    def _record_check(self, request: CheckRequest, result: GateResult) -> None:
        """Every check this worker judged is an `answer.checked` event of its run (SPEC 8),
        published to its input topic like any other event: through ingest and the run
        log into the account's record and ClickHouse. A chain without an id is named by
        its text's digest."""
        chain = request.chain_id or f"text-{hashlib.sha256(request.text.encode()).hexdigest()[:32]}"
        key = (request.run_id, chain, request.attempt)
        if key in self.recorded_checks:
            return  # the same attempt asked again: its first check is the record
        self.recorded_checks[key] = None
        if len(self.recorded_checks) > _RECORDED_CHECKS:
            self.recorded_checks.pop(next(iter(self.recorded_checks)))
        event = answer_checked_event(
            run_id=request.run_id,
            answer_chain_id=chain,
            attempt=request.attempt,
            decision=result.decision,
            text=request.text,
            counts=result.counts(),
            account_revision=result.revision,
            occurred_at=time.time_ns() // 1000,
            source=f"outcomes-gate@{self.options.app_id}",
        )
        self._produce(
            EVENT_TOPICS["answer.checked"],
            request.run_id.encode(),
            self.codec.encode_event(event),
        )

    def run_partition(self, run_id: str) -> int | None:
        """The run-log partition of a run (None before the first assignment told how
        many partitions the run log has)."""
        count = self.run_log_partitions
        return partition_of(run_id, count) if count else None

    def owns(self, run_id: str) -> bool:
        """Whether this worker holds the run's state (read from the door's threads)."""
        partition = self.run_partition(run_id)
        return partition is not None and partition in self.folders

    def gate_state(self, run_id: str) -> RunState | None:
        """The run's state for a check, from the loop's own thread."""
        partition = self.run_partition(run_id)
        folder = self.folders.get(partition) if partition is not None else None
        return folder.state_of(run_id) if folder is not None else None

    def stats(self) -> dict[str, Any]:
        """The `/outcomes/stats` page (read from the web thread; plain counters)."""
        c = self.counters
        folders = list(self.folders.values())
        return {
            "engine": "batch",
            "forwarded": c.forwarded,
            "folded": c.folded,
            "replayed": self.fold_stats.replayed,
            "dead_letters": c.dead_letters,
            "outputs": c.outputs,
            "commits": c.commits,
            "applied": self.fold_stats.applied,
            "redelivered": self.fold_stats.redelivered,
            "rejected": self.fold_stats.rejected,
            "rebuilt_runs": self.fold_stats.rebuilt_runs,
            "older_rules": self.fold_stats.older_rules,
            "unreadable": self.fold_stats.unreadable,
            "restored_records": c.restored,
            "merge_buffered": self.merge.buffered,
            "cached_runs": sum(len(f.cache) for f in folders),
            "consumer_lag": sum(c.lag.values()),
            "idle_seconds": round(c.idle_for(), 3),
        }


# -- the web endpoint ----------------------------------------------------------------


class WorkerMetrics(Collector):
    """A prometheus-client collector of the worker's counters, merge and consumer lag.

    It reads the plain counters when `/metrics` is scraped: nothing is counted per
    message beyond those integers.
    """

    COUNTERS = (
        ("forwarded", "input events forwarded to the run log"),
        ("folded", "run-log records folded"),
        ("dead_letters", "records refused to the dead-letter topic"),
        ("outputs", "output records produced"),
        ("commits", "offset commits"),
        ("restored", "changelog records read to restore stores"),
    )

    def __init__(self, worker: BatchWorker) -> None:
        self.worker = worker

    def collect(self) -> Iterator[Metric]:
        c = self.worker.counters
        for name, help_text in self.COUNTERS:
            yield CounterMetricFamily(
                f"outcomes_worker_{name}_total", help_text, value=getattr(c, name)
            )
        yield GaugeMetricFamily(
            "outcomes_worker_merge_buffered",
            "input records waiting in the timestamp merge",
            value=self.worker.merge.buffered,
        )
        lag = GaugeMetricFamily(
            "outcomes_worker_consumer_lag",
            "records behind the end, per partition",
            labels=("topic", "partition"),
        )
        for where, behind in sorted(c.lag.items()):
            topic, _, partition = where.rstrip("]").partition("[")
            lag.add_metric((topic, partition), behind)
        yield lag


def metrics_registry(worker: BatchWorker) -> CollectorRegistry:
    """A registry of the worker's metrics alone (no process or platform collectors)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(WorkerMetrics(worker))
    return registry


def web_component(worker: BatchWorker) -> Component:
    """`GET /outcomes/stats` (JSON) and `GET /metrics` (Prometheus text format 0.0.4),
    mounted behind the HTTP door; anything else is a one-line JSON refusal."""
    registry = metrics_registry(worker)

    def stats(request: Request) -> Response:
        return Response(json.dumps(worker.stats()), media_type="application/json")

    def metrics(request: Request) -> Response:
        return Response(
            generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_PLAIN_0_0_4}
        )

    routes = [
        Route("/outcomes/stats", stats, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
    ]
    return Component(routes, name="worker-web")


def gate_host(worker: BatchWorker) -> GateHost:
    """The gate's view of this worker: its desk, the token checks present, whether it
    owns a run, and the door of the member that does (from the group's description)."""
    admin: list[AdminClient] = []

    def describe() -> dict[int, str]:
        if not admin:
            admin.append(AdminClient(worker.base_config))
        return group_owners(admin[0], worker.options.app_id, worker.run_log)

    owners = Owners(describe)

    def owner_url(run_id: str) -> str | None:
        partition = worker.run_partition(run_id)
        return owners.owner(partition) if partition is not None else None

    return GateHost(
        desk=worker.gate,
        token=gate_token(worker.settings.state_dir, worker.options.app_id),
        owns=worker.owns,
        owner_url=owner_url,
        forget_owners=owners.forget,
    )


def serve_web(worker: BatchWorker, port: int) -> DoorServer:
    """The worker's web endpoint (`web_component`) and the gate (`gate_component`) on
    127.0.0.1, on a thread; call `stop()` on the answer to end it."""
    asgi = door.app(web_component(worker), gate_component(gate_host(worker)))
    return DoorServer(asgi, "127.0.0.1", port, name="web").start()


def run_batch_worker(settings: Settings, options: WorkerOptions, loglevel: str = "info") -> int:
    """Run the batch engine until idle or signalled; returns the exit code."""
    logging.basicConfig(
        level=getattr(logging, loglevel.upper()),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    freeze_survivors()
    ensure_internal_topics(settings, options, changelog=True)
    worker = BatchWorker(settings, options)
    server = serve_web(worker, options.web_port) if options.web_enabled else None
    log.warning(
        "worker app_id=%s engine=batch bootstrap=%s web=%s",
        options.app_id,
        settings.bootstrap,
        f"http://127.0.0.1:{options.web_port}" if server else "off",
    )
    try:
        return worker.run()
    finally:
        if server is not None:
            server.stop()
