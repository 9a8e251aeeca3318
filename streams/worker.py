"""`outcomes worker`: the pure reducers as a stream on Kafka, in two stages.

1. ingest: input topics -> decode and validate -> the run log, keyed by `run_id`
   (invalid records -> the dead-letter topic with topic, partition, offset and reason).
2. fold: the run log -> `RunFolder` -> output topics, keyed by `run_id`, with each run's
   applied events in a changelog-backed rocksdict store.

Both at-least-once: an input's offset is committed only after what it caused was
acknowledged, and outputs have deterministic ids, so a record processed twice re-emits
identical outputs (docs/stream.md). Two engines run these stages:

- `batch` (default, streams/worker_batch.py): confluent-kafka batches, one poll loop;
- `faust` (streams/worker_faust.py): a faust-streaming app with two agents and a table.

They share everything but the Kafka plumbing (this module, `RunFolder`, the codec), and
one app id's run log and changelog are laid out the same way by both (murmur2 keys).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import click

from common.codec import Codec
from common.settings import Settings
from reducers.catalog import DEFAULT_APP_ID, run_log_topic
from reducers.errors import InvalidEvent, OutcomesError
from reducers.events import Event
from reducers.records import OutputRecord, dead_letter
from reducers.validate import parse_event

Engine = Literal["batch", "faust"]


@dataclass(frozen=True)
class WorkerOptions:
    """Worker knobs beyond the shared Settings (each has a CLI flag)."""

    app_id: str = DEFAULT_APP_ID
    engine: Engine = "batch"
    partitions: int = 6
    replication: int = 1
    until_idle: float | None = None
    web_port: int = 6066
    web_enabled: bool = True
    cache_runs: int = 10_000
    rocksdb_cache_mib: int = 16
    rocksdb_write_buffer_mib: int = 8
    # faust: attached sends go out at commit time, so commits pace the pipeline (0.2 s).
    # batch: sends go out at once; a commit waits for their acks (0.5 s).
    commit_interval: float | None = None
    commit_every: int = 2_000
    standby_replicas: int = 0
    producer_buffer: int = 10_000
    batch_records: int = 5_000
    session_timeout: float = 10.0

    def commit_seconds(self) -> float:
        if self.commit_interval is not None:
            return self.commit_interval
        return 0.2 if self.engine == "faust" else 0.5


class WorkerError(OutcomesError):
    """The worker could not start or go on. Operators: read the message; check the broker
    and flags. Nothing uncommitted is lost: a restart redoes it."""


def store_key(run_id: str, seq: int) -> bytes:
    r"""`<run_id>\x1f<seq>`: the key of a run's event number `seq` in the run-events store
    and its changelog, for both engines (the ASCII unit separator cannot appear in a
    valid run_id)."""
    return f"{run_id}\x1f{seq}".encode()


def changelog_topic(app_id: str) -> str:
    """The run-events store's changelog (faust's name for a table's, so both engines of
    one app id share it)."""
    return f"{app_id}-run-events-changelog"


def ingest_record(
    codec: Codec, settings: Settings, raw: bytes | None, topic: str, partition: int, offset: int
) -> Event | OutputRecord:
    """Stage 1 for one input record: the validated event, or a dead letter naming where
    the record was read and why it was refused."""
    decoded = codec.decode_or_dead_letter(raw or b"", topic, partition, offset)
    if isinstance(decoded, OutputRecord):
        return decoded
    try:
        return parse_event(decoded, settings.limits)
    except InvalidEvent as exc:
        return dead_letter(
            reason=exc.reason,
            message=exc.message,
            raw=bytes(raw or b""),
            origin_topic=topic,
            origin_partition=partition,
            origin_offset=offset,
            run_id=decoded.get("run_id"),
            event_id=decoded.get("event_id"),
        )


def ensure_internal_topics(settings: Settings, options: WorkerOptions, changelog: bool) -> None:
    """Create this app id's run log (and, for the batch engine, the store's changelog) if
    missing, like the declared run log (streams/topics.py).

    Done before the worker starts: a forward to a missing topic must never be the first
    thing to find out. faust declares its changelog itself.
    """
    from reducers.catalog import RUN_LOG_TOPIC
    from streams.topics import TOPICS, ensure_topics

    declared = next(spec for spec in TOPICS if spec.name == RUN_LOG_TOPIC)
    specs = [replace(declared, name=run_log_topic(options.app_id), partitions=options.partitions)]
    if changelog:
        specs.append(
            replace(
                declared,
                name=changelog_topic(options.app_id),
                partitions=options.partitions,
                cleanup_policy="compact",  # keys are unique (run, position): nothing goes
                why="run-events store changelog",
            )
        )
    report = ensure_topics(settings.kafka_config(), tuple(specs))
    if report.drift:
        raise WorkerError(f"internal topics differ from their declaration: {report.drift}")


def run_worker(settings: Settings, options: WorkerOptions, loglevel: str = "info") -> int:
    """Start the worker on its engine and block until it stops; returns the exit code."""
    if options.engine == "faust":
        from streams.worker_faust import run_faust_worker

        return run_faust_worker(settings, options, loglevel)
    from streams.worker_batch import run_batch_worker

    return run_batch_worker(settings, options, loglevel)


@click.command()
@click.option(
    "--bootstrap", metavar="SERVERS", help="Kafka bootstrap servers [OUTCOMES_BOOTSTRAP]."
)
@click.option(
    "--until-idle",
    type=float,
    metavar="SECONDS",
    help="Exit cleanly after this many seconds without input (backfills, tests).",
)
@click.option(
    "--engine",
    type=click.Choice(["batch", "faust"]),
    default="batch",
    show_default=True,
    help="batch: confluent-kafka batches (fast); faust: the faust-streaming app.",
)
@click.option(
    "--app-id",
    default="outcomes-worker",
    show_default=True,
    help="Consumer group and table namespace; one id shares the load.",
)
@click.option(
    "--partitions",
    type=int,
    default=None,
    help="Partitions of the run log and tables [default: topic table].",
)
@click.option(
    "--replication",
    type=int,
    default=1,
    show_default=True,
    help="Replication factor of the tables' changelog topics.",
)
@click.option(
    "--web-port",
    type=int,
    default=6066,
    show_default=True,
    help="Port of the stats and Prometheus /metrics endpoint (127.0.0.1).",
)
@click.option("--no-web", is_flag=True, help="Do not serve the web endpoint.")
@click.option(
    "--cache-runs",
    type=int,
    default=10_000,
    show_default=True,
    help="Runs kept in memory; others are rebuilt from the tables on use.",
)
@click.option(
    "--rocksdb-cache-mib",
    type=int,
    default=16,
    show_default=True,
    help="RocksDB block cache per table partition.",
)
@click.option(
    "--rocksdb-write-buffer-mib",
    type=int,
    default=8,
    show_default=True,
    help="RocksDB write buffer per table partition.",
)
@click.option(
    "--batch-records",
    type=int,
    default=5_000,
    show_default=True,
    help="batch engine: most records taken from Kafka per poll.",
)
@click.option(
    "--session-timeout",
    type=float,
    default=10.0,
    show_default=True,
    help="batch engine: seconds before the group gives a silent worker's partitions away.",
)
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where table files live [OUTCOMES_STATE_DIR].",
)
@click.option(
    "--loglevel",
    default="warning",
    show_default=True,
    type=click.Choice(["debug", "info", "warning", "error"]),
)
def worker(
    bootstrap: str | None,
    until_idle: float | None,
    engine: Engine,
    app_id: str,
    partitions: int | None,
    replication: int,
    web_port: int,
    no_web: bool,
    cache_runs: int,
    rocksdb_cache_mib: int,
    rocksdb_write_buffer_mib: int,
    batch_records: int,
    session_timeout: float,
    state_dir: Path | None,
    loglevel: str,
) -> None:
    """Run the stream pipeline: input topics -> run log -> outcome accounts.

    Stops gracefully on SIGTERM (commits what it has processed). Several workers with the
    same --app-id split the partitions between them.
    """
    from reducers.catalog import RUN_LOG_TOPIC
    from streams.topics import TOPICS

    settings = Settings.load(bootstrap=bootstrap, state_dir=state_dir)
    run_log = next(spec for spec in TOPICS if spec.name == RUN_LOG_TOPIC)  # its partitions
    options = WorkerOptions(
        app_id=app_id,
        engine=engine,
        partitions=partitions or run_log.partitions,
        replication=replication,
        until_idle=until_idle,
        web_port=web_port,
        web_enabled=not no_web,
        cache_runs=cache_runs,
        rocksdb_cache_mib=rocksdb_cache_mib,
        rocksdb_write_buffer_mib=rocksdb_write_buffer_mib,
        batch_records=batch_records,
        session_timeout=session_timeout,
    )
    raise SystemExit(run_worker(settings, options, loglevel))
