"""`outcomes replay`: run the reducers in process over JSONL or Avro files of events."""

from __future__ import annotations

from contextlib import nullcontext
from itertools import chain
from pathlib import Path

import click

from cli import options
from common.runtime import tune_gc
from common.settings import Settings
from reducers.engine import Engine
from reducers.records import OutputRecord
from sinks.writer import ClickHouseWriter
from streams.replay import ReplayStats, file_items, replay_items, settling_state


@click.command()
@click.argument(
    "files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option(
    "--out",
    "out_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the JSONL records here instead of standard output.",
)
@options.setting_option(
    "clickhouse",
    help="Also sink every record into ClickHouse (chdb:///path or http://host:8123).",
    default="no sink",
    from_env=False,
)
def replay(files: tuple[Path, ...], out_path: Path | None, clickhouse: str | None) -> None:
    """Fold the events of FILES (in file order) into outcome accounts.

    Writes one JSON record per line, each with a `record` field (account_revision,
    notification, provenance_row, claim_verdict, dead_letter). Invalid events become
    dead letters and processing goes on. A summary goes to standard error.
    """
    tune_gc()
    settings = Settings.load()
    limits = settings.limits
    stats = ReplayStats()
    items = chain.from_iterable(file_items(path, limits) for path in files)
    records = settling_state(replay_items(items, Engine(), limits, stats))
    writer = None
    if clickhouse:
        writer = ClickHouseWriter(clickhouse)
    stdout = click.get_binary_stream("stdout")
    with out_path.open("wb") if out_path else nullcontext(stdout) as out:
        batch: list[OutputRecord] = []
        for record in records:
            out.write(record.to_json_line())
            out.write(b"\n")
            if writer is not None:
                batch.append(record)
                if len(batch) >= 5000:
                    writer.write(batch)
                    batch = []
        if writer is not None:
            writer.write(batch)
            writer.close()
    click.echo(stats.summary(), err=True)
