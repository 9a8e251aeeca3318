"""`outcomes sink`: the output topics into ClickHouse, exactly once."""

from __future__ import annotations

import logging

import click

from outcomes.cli import options
from outcomes.common.settings import Settings
from outcomes.sinks import defaults
from outcomes.sinks.consumer import SinkConfig, run_sink


@click.command()
@options.bootstrap
@options.clickhouse
@click.option(
    "--until-idle",
    type=float,
    default=None,
    metavar="SECONDS",
    help="Exit cleanly after this many seconds without input (default: run until SIGTERM).",
)
@click.option("--group-id", default="outcomes-sink", show_default=True, help="Consumer group.")
@click.option(
    "--topic",
    "topics",
    multiple=True,
    metavar="TOPIC",
    help="Consume only these topics (repeatable; default: every output topic, seven).",
)
@click.option(
    "--batch-rows",
    default=defaults.BATCH_RECORDS,
    show_default=True,
    help="Flush once this many records are buffered (all partitions).",
)
@click.option(
    "--batch-seconds",
    default=defaults.BATCH_SECONDS,
    show_default=True,
    help="Flush once the oldest buffered record is this old.",
)
@click.option(
    "--query-port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="On chDB: serve read-only queries on 127.0.0.1 at this port (0: any free port).",
)
@click.option(
    "--no-query-endpoint", is_flag=True, help="On chDB: serve no read-only query endpoint."
)
@click.option(
    "--async-insert",
    is_flag=True,
    help="INSERT with async_insert and wait_for_async_insert (for several sinks writing "
    "one server; each INSERT then waits for the server's flush, docs/clickhouse.md).",
)
def sink(
    bootstrap: str | None,
    clickhouse: str | None,
    until_idle: float | None,
    group_id: str,
    topics: tuple[str, ...],
    batch_rows: int,
    batch_seconds: float,
    query_port: int,
    no_query_endpoint: bool,
    async_insert: bool,
) -> None:
    """Consume every output topic (seven) into ClickHouse, exactly once.

    Offsets are committed only after ClickHouse acknowledged the rows; undecodable
    records land in dead_letters. SIGTERM/SIGINT finish the current batch and exit.
    Exits with one error line (code 1) if no Kafka broker answers within 5 s at start.
    On chDB it serves read-only queries on 127.0.0.1 while it runs, which `outcomes
    query` uses (user analyst; the address and token are in <chdb dir>.live.json).
    """
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    settings = Settings.load(bootstrap=bootstrap, clickhouse=clickhouse)
    config = SinkConfig(
        group_id=group_id,
        topics=topics or SinkConfig.topics,
        batch_records=batch_rows,
        batch_seconds=batch_seconds,
        until_idle=until_idle,
        query_port=None if no_query_endpoint else query_port,
        async_insert=async_insert,
    )
    stats = run_sink(settings, config)
    click.echo(stats.summary(), err=True)
