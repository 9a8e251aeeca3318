"""`outcomes sink`: the output topics into ClickHouse, exactly once."""

from __future__ import annotations

import logging
import os
import signal
import threading

import click

from outcomes.cli import options
from outcomes.common.broker import check_broker
from outcomes.common.settings import Settings
from outcomes.reducers.catalog import RUN_LOG_TOPIC
from outcomes.sinks import defaults
from outcomes.sinks.consumer import SinkConfig, run_sink
from outcomes.sinks.events import EventRecorder, EventsConfig, group_for


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
@click.option(
    "--no-events",
    is_flag=True,
    help="Do not record the input events (the worker's run log) in the events table.",
)
@click.option(
    "--run-log",
    default=None,
    metavar="TOPIC",
    help=f"The worker's run log the events come from (default: {RUN_LOG_TOPIC}; with "
    "--topic, events are recorded only when this is given).",
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
    no_events: bool,
    run_log: str | None,
) -> None:
    """Consume every output topic (seven) into ClickHouse, exactly once.

    Offsets are committed only after ClickHouse acknowledged the rows; undecodable
    records land in dead_letters. SIGTERM/SIGINT finish the current batch and exit.
    Exits with one error line (code 1) if no Kafka broker answers within 5 s at start.
    On chDB it serves read-only queries on 127.0.0.1 while it runs, which `outcomes
    query` uses (user analyst; the address and token are in <chdb dir>.live.json).

    In the same process, unless --no-events, it records every input event of the
    worker's run log in the `events` table (group <group-id>-events, exactly once),
    which the run browser shows.
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
    recorder: EventRecorder | None = None
    failure: list[BaseException] = []
    if not no_events and (run_log is not None or not topics):
        check_broker(settings)  # one error line when no broker answers, before any client
        recorder = EventRecorder(
            settings,
            EventsConfig(
                group_id=group_for(group_id),
                topic=run_log or RUN_LOG_TOPIC,
                until_idle=until_idle,
            ),
        )
        thread = threading.Thread(
            target=_record, args=(recorder, failure), name="events-recorder", daemon=True
        )
        thread.start()
    try:
        stats = run_sink(settings, config)
    except BaseException:
        if recorder is not None:
            recorder.stop()
            thread.join()
        raise
    if recorder is not None:
        if until_idle is not None:  # the recorder stops on its own idle: let it catch up
            thread.join(timeout=until_idle + 60)
        recorder.stop()
        thread.join()
    click.echo(stats.summary(), err=True)
    if recorder is not None:
        click.echo(recorder.stats.summary(), err=True)
    if failure:
        raise click.ClickException(f"events recorder stopped: {failure[0]}")


def _record(recorder: EventRecorder, failure: list[BaseException]) -> None:
    """The recorder's thread: a failure stops the sink as SIGTERM does (it finishes its
    batch), and the command then exits with the recorder's error line."""
    try:
        recorder.run()
    except Exception as exc:
        logging.getLogger(__name__).exception("events recorder failed")
        failure.append(exc)
        os.kill(os.getpid(), signal.SIGTERM)
