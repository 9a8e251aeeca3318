"""`outcomes import`: recorded agent runs (transcripts, event lists, trajectories,
histories) as canonical events, on standard output or to Kafka."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from pathlib import Path
from typing import TextIO

import click
import orjson

from outcomes.cli import options
from outcomes.importers.derive import derive
from outcomes.importers.registry import FORMATS, read_trace
from outcomes.importers.trace import Trace, TraceUnreadable


def _run_id(trace: Trace, path: Path, given: str | None, count: int, index: int) -> str:
    if given:
        return given if count == 1 else f"{given}-{index + 1}"
    stem = path.name.split(".")[0] or "run"
    return f"{trace.format}:{stem}"[:128]


@click.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    help="The trace format (found from each file's content when not given).",
)
@click.option(
    "--run-id",
    help="The run id of the events (with several files: ID-1, ID-2, …). "
    "Default: <format>:<file name>.",
)
@click.option(
    "--out",
    "out_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the JSONL events here instead of standard output.",
)
@click.option(
    "--produce", is_flag=True, help="Publish the events to Kafka instead of writing them."
)
@options.bootstrap
@options.schema_registry
def import_(
    files: tuple[Path, ...],
    fmt: str | None,
    run_id: str | None,
    out_path: Path | None,
    produce: bool,
    bootstrap: str | None,
    schema_registry_url: str | None,
) -> None:
    """Turn recorded agent runs in FILES into the SPEC's canonical events.

    Formats: claude-code-jsonl (Claude Code transcripts), openhands-events (agent-sdk
    event lists, v0 output.jsonl), mini-swe-agent (.traj.json), gemini-cli (chat
    recordings and stream-json), aider-history (.aider.chat.history.md). Each file is
    one run. Only what the trace shows is derived: checks from the runner's summary or
    exit status (else indeterminate), workspace snapshots from edits and file
    operations, effects with the state their output settles (else unknown), the last
    assistant message as the narrative. A file that cannot be read is one error line and
    exit 1; a record that cannot be mapped is reported with its position on standard
    error (the rest is still imported).
    """
    if run_id is not None and not 0 < len(run_id) <= 120:
        raise click.BadParameter("a run id has 1 to 120 characters", param_hint="--run-id")
    traces = []
    for index, path in enumerate(files):
        try:
            trace = read_trace(path, fmt)
        except TraceUnreadable as exc:
            click.echo(f"outcomes import: error: {exc}", err=True)
            sys.exit(1)
        for skipped in trace.skipped:
            click.echo(f"{path}: {skipped.where}: not mapped: {skipped.reason}", err=True)
        traces.append((trace, _run_id(trace, path, run_id, len(files), index)))
    events = [e for trace, rid in traces for e in derive(trace, rid)]
    if produce:
        _produce(events, bootstrap, schema_registry_url)
        return
    with _output(out_path) as out:
        for event in events:
            out.write(orjson.dumps(event).decode() + "\n")
    click.echo(f"imported {len(events)} event(s) from {len(files)} file(s)", err=True)


def _output(path: Path | None) -> nullcontext[TextIO] | TextIO:
    return path.open("w", encoding="utf-8") if path else nullcontext(sys.stdout)


def _produce(events: list[dict[str, object]], bootstrap: str | None, registry: str | None) -> None:
    # lazy: confluent-kafka loads only for --produce
    from outcomes.common.errors import DeliveryError
    from outcomes.common.settings import Settings  # lazy: as above
    from outcomes.streams.sdk.producer import OutcomesProducer  # lazy: as above

    settings = Settings.load(bootstrap=bootstrap, schema_registry_url=registry)
    producer = OutcomesProducer(settings, source="outcomes-import")
    try:
        for event in events:
            producer.publish(event)
    finally:
        try:
            producer.close()
        except DeliveryError as exc:
            click.echo(f"outcomes import: error: {exc}", err=True)
            sys.exit(1)
    click.echo(f"produced {len(events)} event(s) to {settings.bootstrap}", err=True)
