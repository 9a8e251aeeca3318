"""`outcomes worker`: run the stream pipeline (`outcomes.streams.worker.run_worker`).

The options become a `WorkerOptions` (streams/worker_common.py); the worker itself, its
two engines and what they share live in `streams/` (docs/stream.md).
"""

from __future__ import annotations

from pathlib import Path

import click

from outcomes.cli import options
from outcomes.common.settings import Settings
from outcomes.reducers.catalog import RUN_LOG_TOPIC
from outcomes.streams.topics import TOPICS
from outcomes.streams.worker import run_worker
from outcomes.streams.worker_common import Engine, WorkerOptions


@click.command()
@options.bootstrap
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
@options.state_dir
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
    same --app-id split the partitions between them. Exits with one error line (code 1)
    if no Kafka broker answers within 5 s at start.
    """
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
