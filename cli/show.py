"""`outcomes show`: the status block of one run, from ClickHouse or a replay output file.

Also where `outcomes export` gets a run from (`load_view`): the same two sources.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from itertools import chain
from pathlib import Path
from typing import Any

import click
import orjson

from outcomes.cli import options
from outcomes.common.settings import Settings
from outcomes.common.text import terminal_safe, terminal_safe_value
from outcomes.reports.errors import UnreadableSource
from outcomes.reports.model import KINDS, RunView
from outcomes.reports.status import FORMATS, render, status_block, then_and_now
from outcomes.sinks.runs import read_run
from outcomes.streams.replay import file_items


def source_options(func: Any) -> Any:
    """--clickhouse and --from, shared by show and export."""
    func = click.option(
        "--from",
        "from_file",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="Read the run from this `outcomes replay` output (JSONL) instead of ClickHouse.",
    )(func)
    return options.clickhouse(func)


def load_view(
    run_id: str,
    clickhouse: str | None,
    from_file: Path | None,
    events: Sequence[Path] = (),
) -> RunView:
    """The run from a replay output file, else from ClickHouse (the configured DSN);
    with the run's input events from `events` (JSONL or Avro files), if any."""
    if from_file is not None and clickhouse:
        raise click.UsageError("give either --from FILE or --clickhouse DSN, not both")
    if from_file is not None:
        revisions, verdicts, answers = _replay_output(from_file)
    else:
        dsn = Settings.load(clickhouse=clickhouse).clickhouse_dsn
        records = read_run(dsn, run_id)
        revisions, verdicts, answers = records.revisions, records.verdicts, records.answers
    return RunView.of(run_id, revisions, verdicts, _events(events), answers)


Records = list[dict[str, Any]]


def _replay_output(path: Path) -> tuple[Records, Records, Records]:
    """The revisions, claim verdicts and answer checks (SPEC 8) of a replay's output."""
    revisions: Records = []
    verdicts: Records = []
    answers: Records = []
    for number, record in _jsonl(path):
        kind = record.get("record")
        if kind is None:
            raise UnreadableSource(
                f"{path}:{number}: no `record` field: is this `outcomes replay` output?"
            )
        if kind == KINDS[0]:
            revisions.append(record)
        elif kind == KINDS[1]:
            verdicts.append(record)
        elif kind == "answer_check":
            answers.append(record)
    return revisions, verdicts, answers


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        lines = path.read_bytes().splitlines()
    except OSError as exc:
        raise UnreadableSource(f"cannot read {path}: {exc.strerror or exc}") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise UnreadableSource(f"{path}:{number}: not JSON ({exc})") from exc
        if not isinstance(value, dict):
            raise UnreadableSource(f"{path}:{number}: not a JSON object")
        yield number, value


def _events(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """The valid items of event files (rejected lines never reached an account)."""
    limits = Settings.load().limits
    items = chain.from_iterable(file_items(path, limits) for path in paths)
    return [i.value for i in items if i.error is None and isinstance(i.value, dict)]


def printable(view: RunView) -> RunView:
    """`view` with every string of its records made terminal_safe (`common/text.py`).

    The text renderers lay data out in lines of their own: a newline in a status reason
    would print as a line that is not the account's, an ESC sequence would recolour the
    terminal. Escaping the data before rendering (not the rendered text) keeps the
    renderer's own line breaks and escapes only what came from the records.
    """
    return replace(
        view,
        run_id=terminal_safe(view.run_id),
        revisions=tuple(terminal_safe_value(r) for r in view.revisions),
        verdicts=tuple(terminal_safe_value(v) for v in view.verdicts),
        events=tuple(terminal_safe_value(e) for e in view.events),
    )


@click.command()
@click.argument("run_id")
@click.option(
    "--revision",
    type=click.IntRange(min=1),
    help="Show this revision (what was true then) beside the latest (what is true now).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help="text, markdown or json.",
)
@source_options
def show(
    run_id: str, revision: int | None, fmt: str, clickhouse: str | None, from_file: Path | None
) -> None:
    """The status block of RUN_ID's current account, rendered from its records alone.

    Status and the predicates that decide it, open obligations, the candidate's
    artifacts, checks, external effects and receipts, contradictions, provenance
    findings, the narrative's claims with their verdicts and what the account supports
    instead, the account time and cutoff, and the revision chain. What is not known
    reads "not confirmed". The same records always give the same bytes. In the text
    and Markdown formats, control, format and separator characters of the data (a run
    id, a reason, a label) are printed as escapes such as \\x1b or \\u202e.

    \b
        outcomes show run-five-files --from outputs.jsonl
        outcomes show run-five-files --revision 1 --format markdown
    """
    view = load_view(run_id, clickhouse, from_file)
    if fmt != "json":  # JSON escapes what it must itself; its strings stay the data
        view = printable(view)
    latest = int(view.latest["revision"])
    if revision is not None and revision != latest:
        doc = then_and_now(view, revision)
    else:
        doc = status_block(view, revision)
    sys.stdout.write(render(doc, fmt))
