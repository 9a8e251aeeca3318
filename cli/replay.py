"""`outcomes replay`: run the reducers in process over JSONL or Avro files of events."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from itertools import chain
from pathlib import Path
from typing import BinaryIO

import click

from outcomes.cli import options
from outcomes.cli.output import OutputUnusable, atomic_output, check_target, usage_failed
from outcomes.common.runtime import tune_gc
from outcomes.common.settings import Settings
from outcomes.common.text import terminal_safe
from outcomes.reducers.catalog import OUTPUT_KINDS
from outcomes.reducers.engine import Engine
from outcomes.reducers.records import OutputRecord
from outcomes.sinks.writer import ClickHouseWriter
from outcomes.streams.replay import (
    EventsRejected,
    ReplayStats,
    file_items,
    replay_items,
    settling_state,
)

# The --help text; the output kinds are the catalog's, so the list cannot fall behind.
_HELP = f"""Fold the events of FILES (in file order) into outcome accounts.

Writes one JSON record per line, each with a `record` field ({", ".join(OUTPUT_KINDS)}).
Files named *.avro are read as Avro container files, others as JSONL (or Avro, if they
start like one). Invalid events become dead letters and processing goes on; each is
also reported as `file:line: reason: message` on standard error (control characters
escaped), and the exit code is then 1. In an Avro file, a block that cannot be read is
skipped up to the next sync marker, and a block whose records disagree with its declared
count is read whole: each is a dead letter naming the byte range, and the exit code is
then 1 too. A summary goes to standard error. --out is written to a temporary file and
renamed once complete; an --out that is one of FILES, or in a missing directory, is
refused (exit 2).
"""


@click.command(help=_HELP)
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
    """`outcomes replay` (its help is `_HELP`)."""
    if out_path is not None:
        try:
            check_target(out_path, files)
        except OutputUnusable as exc:
            raise usage_failed(exc) from None
    tune_gc()
    settings = Settings.load()
    limits = settings.limits
    stats = ReplayStats()
    items = chain.from_iterable(file_items(path, limits) for path in files)
    records = settling_state(replay_items(items, Engine(), limits, stats))
    writer = None
    if clickhouse:
        writer = ClickHouseWriter(clickhouse)
    try:
        _write(records, out_path, writer)
    except OutputUnusable as exc:
        raise usage_failed(exc) from None
    click.echo(stats.summary(), err=True)
    if stats.rejected:
        where = f"in {out_path}" if out_path else "on standard output"
        raise EventsRejected(
            f"{stats.rejected} of {stats.read} event(s) rejected "
            f"(reasons above; dead letters {where})"
        )


def _write(
    records: Iterator[OutputRecord], out_path: Path | None, writer: ClickHouseWriter | None
) -> None:
    with _output(out_path) as out:
        batch: list[OutputRecord] = []
        for record in records:
            out.write(record.to_json_line())
            out.write(b"\n")
            if record.kind == "dead_letter":
                body = record.body
                where = f"{body['origin_file']}:{body['origin_line']}"
                line = f"{where}: {body['reason']}: {body['message']}"
                click.echo(terminal_safe(line), err=True)
            if writer is not None:
                batch.append(record)
                if len(batch) >= 5000:
                    writer.write(batch)
                    batch = []
        if writer is not None:
            writer.write(batch)
            writer.close()


def _output(out_path: Path | None) -> AbstractContextManager[BinaryIO]:
    """Standard output, or `out_path` written whole or not at all (`atomic_output`)."""
    if out_path is None:
        return nullcontext(click.get_binary_stream("stdout"))
    return atomic_output(out_path)
