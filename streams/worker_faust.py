"""The faust-streaming engine of `outcomes worker` (`--engine faust`).

One stage for records whose input partition is their run's run-log partition (what a
producer keying by `run_id` with Kafka's murmur2 partitioner, as Java clients and this
worker do, gives every record): one agent consumes the input topics, decodes and
validates each record, folds it with `RunFolder` and publishes the outputs, keyed by
`run_id` (invalid records -> the dead-letter topic with topic, partition, offset and
reason). Each run's applied events are stored in a changelog-backed rocksdict table,
written from inside the stream iteration, so each key lands in the changelog partition
of the record being processed: the run's run-log partition, as in the batch engine.

A record on any other partition (a producer with another partitioner, input topics with
another partition count than the run log) takes the two-stage path: it is forwarded to
the run log, keyed by `run_id`, and a second agent folds it from there into the same
table, so a run's state always lives in one partition, whatever the producers did.

Both paths are at-least-once (faust's `exactly_once` mode has open loss and duplicate
bugs, so correctness never depends on it; see docs/stream.md): every send is attached to
the offset of the record that caused it, and at each commit the table's changelog
writes are acknowledged before any attached output is published, so a published
revision is always the fold of stored events, and a crash only causes reprocessing.

The batch engine (streams/worker_batch.py) runs the two stages on confluent-kafka
batches; faust's per-message path costs far more per event (docs/benchmarks.md).
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import faust
from aiokafka.helpers import create_ssl_context
from confluent_kafka.admin import AdminClient
from faust.sensors.prometheus import setup_prometheus_sensors

from outcomes.common.codec import Codec
from outcomes.common.output_headers import output_headers
from outcomes.common.runtime import tune_gc
from outcomes.common.settings import Settings
from outcomes.reducers.catalog import INPUT_TOPICS, OUTPUT_TOPICS, run_log_topic
from outcomes.reducers.records import OutputRecord
from outcomes.streams.gate_members import partition_of
from outcomes.streams.ingest import ingest_record
from outcomes.streams.runfold import Origin, RunFolder
from outcomes.streams.store import TableEventStore
from outcomes.streams.worker_common import WorkerOptions, ensure_internal_topics

log = logging.getLogger("outcomes.worker")


def build_app(settings: Settings, options: WorkerOptions, single_stage: bool = True) -> Any:
    """The faust app with its topics, tables and agents (not started).

    `single_stage`: fold records on their run's run-log partition where they are read
    (False: forward every record to the run log first, the two-stage path)."""
    codec = Codec(settings)
    datadir = state_dir(settings, options)
    datadir.mkdir(parents=True, exist_ok=True)
    app = faust.App(
        options.app_id,
        broker=[f"kafka://{server}" for server in settings.bootstrap.split(",")],
        broker_credentials=_credentials(settings),
        store="rocksdb://",  # faust-streaming's RocksDB store, on the rocksdict driver (below)
        datadir=str(datadir),
        processing_guarantee="at_least_once",
        topic_partitions=options.partitions,
        topic_replication_factor=options.replication,
        topic_allow_declare=True,
        consumer_auto_offset_reset="earliest",
        broker_commit_interval=options.commit_seconds(),
        broker_commit_every=options.commit_every,
        table_standby_replicas=options.standby_replicas,
        web_enabled=options.web_enabled,
        web_port=options.web_port,
        web_bind="127.0.0.1",
        producer_acks=-1,
        producer_max_request_size=8 * 1024 * 1024,
        stream_wait_empty=False,
        # Every send from an agent is attached to the offset of the record that caused
        # it: faust publishes attached messages before committing that offset, waits for
        # their acknowledgement, and crashes rather than commit when one fails.
        stream_publish_on_commit=True,
    )
    rocksdb = {
        "driver": "rocksdict",
        "block_cache_size": options.rocksdb_cache_mib * 1024 * 1024,
        "block_cache_compressed_size": 0,
        "write_buffer_size": options.rocksdb_write_buffer_mib * 1024 * 1024,
        "max_write_buffer_number": 2,
    }
    inputs = app.topic(*INPUT_TOPICS, key_serializer="raw", value_serializer="raw")
    run_log = app.topic(
        run_log_topic(options.app_id),
        partitions=options.partitions,
        key_serializer="raw",
        value_serializer="raw",
    )
    outputs = {
        kind: app.topic(name, key_serializer="raw", value_serializer="raw")
        for kind, name in OUTPUT_TOPICS.items()
    }
    changelog_configs = {"max.message.bytes": str(settings.limits.max_event_bytes + 64 * 1024)}
    events_table = app.Table(
        "run-events",
        key_type=bytes,  # bytes types make faust use the raw serializer
        value_type=bytes,
        partitions=options.partitions,
        options=rocksdb,
        extra_topic_configs=changelog_configs,
    )
    folder = RunFolder(
        TableEventStore(events_table),
        codec.decode_event_fast,
        settings.limits,
        cache_runs=options.cache_runs,
    )
    activity = _Activity()

    async def publish(records: list[OutputRecord]) -> None:
        # Each output carries its canonical JSON in headers, as the batch engine's: the
        # sink hands it to ClickHouse without decoding the Avro value.
        for record in records:
            await outputs[record.kind].send(
                key=record.key.encode(),
                value=codec.encode_output(record),
                headers=output_headers(record),
            )

    partitions = options.partitions

    @app.agent(inputs)
    async def fold_inputs(stream: Any) -> None:
        async for event in stream.events():
            message = event.message
            activity.touch()
            raw = event.value
            result = ingest_record(
                codec, settings, raw, message.topic, message.partition, message.offset
            )
            if isinstance(result, OutputRecord):
                activity.dead_letters += 1
                await publish([result])
                continue
            run_id = result.run_id
            if single_stage and message.partition == partition_of(run_id, partitions):
                origin = Origin(message.topic, message.partition, message.offset)
                records = folder.process(run_id, bytes(raw), origin, parsed=result)
                activity.folded += 1
                await publish(records)
                continue
            activity.forwarded += 1
            await run_log.send(key=run_id.encode(), value=raw)

    @app.agent(run_log)
    async def fold_runs(stream: Any) -> None:
        async for event in stream.events():
            message = event.message
            activity.touch()
            run_id = event.key.decode() if isinstance(event.key, bytes) else str(event.key)
            origin = Origin(message.topic, message.partition, message.offset)
            records = folder.process(run_id, bytes(event.value), origin)
            activity.folded += 1
            await publish(records)

    @app.on_partitions_revoked.connect
    async def forget_runs(sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        # Another worker may own these runs next and append to their stores.
        folder.clear_cache()

    @app.on_partitions_assigned.connect
    async def on_assigned(sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        folder.clear_cache()
        activity.touch()
        activity.assigned = True
        log.info("partitions assigned: %d", len(args[0]) if args else 0)

    @app.task
    async def widen_producer_buffer() -> None:
        # Table writes queue in faust's ProducerBuffer; at its default of 100 pending
        # messages the stream stops to flush ("producer buffer full"), one message at a
        # time. A larger buffer keeps the stream moving; commits still flush it all.
        app.producer.buffer.max_messages = options.producer_buffer

    if options.until_idle is not None:
        idle = options.until_idle

        @app.timer(interval=min(1.0, idle / 2))
        async def stop_when_idle() -> None:
            # Waiting for a first assignment (the group waits out a killed member's
            # session), a rebalance or a table's recovery is not idleness: input may be
            # queued for this worker. A minute past `idle` with no assignment ever, stop.
            waiting = app.rebalancing or app.in_recovery or not activity.assigned
            if activity.idle_for() >= (idle + 60.0 if waiting else idle):
                log.info(
                    "idle for %.1fs: stopping (forwarded %d, folded %d, dead letters %d)",
                    idle,
                    activity.forwarded,
                    activity.folded,
                    activity.dead_letters,
                )
                os.kill(os.getpid(), signal.SIGTERM)

    @app.page("/outcomes/stats")
    async def stats_page(web: Any, request: Any) -> Any:
        stats = folder.stats
        return web.json(
            {
                "forwarded": activity.forwarded,
                "folded": activity.folded,
                "dead_letters": activity.dead_letters,
                "applied": stats.applied,
                "redelivered": stats.redelivered,
                "rejected": stats.rejected,
                "rebuilt_runs": stats.rebuilt_runs,
                "older_rules": stats.older_rules,
                "unreadable": stats.unreadable,
                "cached_runs": len(folder.cache),
                "idle_seconds": round(activity.idle_for(), 3),
            }
        )

    setup_prometheus_sensors(app, name_prefix=options.app_id)
    return app


class _Activity:
    """When the worker last saw input, and how much it moved."""

    def __init__(self) -> None:
        self.last = time.monotonic()
        self.assigned = False  # whether the group ever gave this worker partitions
        self.forwarded = 0
        self.folded = 0
        self.dead_letters = 0

    def touch(self) -> None:
        self.last = time.monotonic()

    def idle_for(self) -> float:
        return time.monotonic() - self.last


def _credentials(settings: Settings) -> Any:
    if settings.security_protocol == "PLAINTEXT":
        return None
    ssl_context = None
    if settings.security_protocol in ("SSL", "SASL_SSL"):
        ssl_context = create_ssl_context(
            cafile=settings.ssl_cafile, certfile=settings.ssl_certfile, keyfile=settings.ssl_keyfile
        )
    if settings.sasl_mechanism is None:
        return faust.SSLCredentials(ssl_context)
    return faust.SASLCredentials(
        username=settings.sasl_username,
        password=settings.sasl_password,
        mechanism=settings.sasl_mechanism,
        ssl_context=ssl_context,
    )


def input_partitions_match(settings: Settings, options: WorkerOptions) -> bool:
    """Whether every input topic has the run log's partition count, so that an input
    record's partition number can be its run's run-log (and changelog) partition; else
    every record takes the two-stage path (faust refuses to write a table from a
    stream whose topic has another partition count)."""
    config: dict[str, str | int | float | bool] = dict(settings.kafka_config())
    metadata = AdminClient(config).list_topics(timeout=30)
    counts = {
        topic: len(metadata.topics[topic].partitions) if topic in metadata.topics else None
        for topic in INPUT_TOPICS
    }
    differing = {t: n for t, n in counts.items() if n != options.partitions}
    if differing:
        log.warning(
            "input topics without %d partitions (%s): every record goes through the run log",
            options.partitions,
            ", ".join(f"{t}={n}" for t, n in sorted(differing.items())),
        )
    return not differing


def store_before_outputs(app: Any) -> None:
    """Make each commit acknowledge the table's changelog writes before it publishes the
    outputs attached to the committed offsets.

    faust publishes attached sends first and flushes its producer (changelog writes
    included) after. In one stage that order could publish a revision whose event never
    reached the changelog; a crash then re-reads the input, maybe interleaved with
    another topic's records in another order, and the refold could give the published
    revision number another content. Flushed first, every published output is the fold
    of stored events, which a restart rebuilds and re-emits byte for byte.
    """
    consumer = app.consumer
    handle_attached = consumer._handle_attached

    async def flushed_then_attached(commit_offsets: Any) -> None:
        producer = app.producer
        while producer.buffer.size:  # a flush gives up after 0.1 s without a send
            await producer.buffer.flush()
        await producer.flush()  # and aiokafka's: every changelog write acknowledged
        await handle_attached(commit_offsets)

    consumer._handle_attached = flushed_then_attached


def state_dir(settings: Settings, options: WorkerOptions) -> Path:
    """Where faust keeps this app id's local table data."""
    return settings.state_dir / "worker" / options.app_id


class LocalTables:
    """Local table data that is never ahead of the changelog when a worker starts.

    faust writes a table's local RocksDB at once and its changelog record soon after;
    after a crash the local data can hold events the changelog never received. Kept, a
    restarted worker folds on top of them, and the changelog, which another worker
    restores the run from, gets a hole (seen: a SIGKILL mid-load left runs whose stored
    event 5 was only local). So a marker file says a worker is running on this state
    dir; found at start, the last one did not stop cleanly, and the local data goes:
    faust restores it from the changelog, which holds every event whose outputs were
    published (`store_before_outputs`). A clean stop (exit 0) removes the marker, and
    the next start keeps the local data (faust reads only the changelog's tail).
    """

    def __init__(self, datadir: Path) -> None:
        self.datadir = datadir
        self.marker = datadir.parent / f"{datadir.name}.running"

    def open(self) -> None:
        if self.marker.exists():
            log.warning(
                "the last worker on %s did not stop cleanly: its local table data is "
                "dropped and restored from the changelog",
                self.datadir,
            )
            shutil.rmtree(self.datadir, ignore_errors=False)
        self.datadir.mkdir(parents=True, exist_ok=True)
        self.marker.touch()

    def close(self, code: int) -> None:
        if code == 0:
            self.marker.unlink(missing_ok=True)


def commit_everything_on_stop(consumer: Any) -> None:
    """Make the consumer's stop commit what was processed, even mid-commit.

    faust's `Consumer.commit()` returns without committing while another commit is in
    flight; with frequent commits one nearly always is, so the commit on stop did
    nothing and a restart redid up to a commit cycle (duplicates, never loss). Wait for
    in-flight commits to end first, then stop (which commits).
    """
    stop = consumer.on_stop

    async def on_stop() -> None:
        while await consumer.maybe_wait_for_commit_to_finish():
            pass  # that commit may not cover the latest acks: wait, then commit on stop
        await stop()

    consumer.on_stop = on_stop


def run_faust_worker(settings: Settings, options: WorkerOptions, loglevel: str = "info") -> int:
    """Start the worker and block until it stops; returns the process exit code."""
    tune_gc()
    # aiokafka logs every frame at DEBUG; even filtered out, building those records cost
    # about a tenth of the worker's time. Keep it at WARNING unless debugging.
    level = getattr(logging, loglevel.upper())
    logging.getLogger("aiokafka").setLevel(max(level, logging.WARNING))
    ensure_internal_topics(settings, options, changelog=False)
    tables = LocalTables(state_dir(settings, options))
    tables.open()
    app = build_app(settings, options, single_stage=input_partitions_match(settings, options))
    store_before_outputs(app)
    commit_everything_on_stop(app.consumer)
    worker = faust.Worker(app, loglevel=loglevel, quiet=True, redirect_stdouts=False)
    code = 0
    try:
        worker.execute_from_commandline()
    except SystemExit as exc:
        code = int(exc.code or 0)
    tables.close(code)
    return code
