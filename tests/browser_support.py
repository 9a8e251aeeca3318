"""Runs for the run browser's tests: the five-file sample and a quiet run, folded and
written into a chDB directory the way the sink writes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from outcomes.sinks import clickhouse
from outcomes.sinks.writer import ClickHouseWriter
from tests.builders import fold_events

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "five_file_run.jsonl"
RUN = "run-five-files"
QUIET = "run-quiet"
TOKEN = "test-token-4f9a"


def sample_events() -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in SAMPLE.read_bytes().splitlines() if line.strip()]


def quiet_events() -> list[dict[str, Any]]:
    """The sample's work up to its finalize, under another run id, with no narrative: a
    run no claim was made about (so never contradicted), finished later than the sample."""
    out = []
    for event in sample_events():
        if event["type"] == "narrative.submitted":
            continue
        text = orjson.dumps(event).decode().replace(RUN, QUIET)
        moved = orjson.loads(text)
        moved["occurred_at"] = moved["occurred_at"].replace("2026-11-30T10", "2026-11-30T11")
        out.append(moved)
        if event["type"] == "finalize.requested":
            break
    return out


def write_runs(directory: Path) -> str:
    """A chDB directory holding both runs' outputs; the DSN. The engine is closed after."""
    clickhouse.close_all()
    dsn = f"chdb://{directory}/chdb"
    records = [*fold_events(sample_events())[0], *fold_events(quiet_events())[0]]
    ClickHouseWriter(dsn).write(records)
    clickhouse.close_all()
    return dsn
