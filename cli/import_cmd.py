"""`outcomes import`: recorded agent runs (transcripts, event lists, trajectories,
histories) as canonical events, on standard output or to Kafka."""

from __future__ import annotations

import dataclasses
import sys
import unicodedata
from collections import Counter
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, BinaryIO

import click
import orjson

from outcomes.cli import options
from outcomes.cli.output import OutputUnusable, atomic_output, check_target, usage_failed
from outcomes.common.files import NotReadable, read_regular
from outcomes.importers.derive import derive
from outcomes.importers.policy import PolicyError, with_policy
from outcomes.importers.registry import FORMATS, IMPORTERS, detect_file
from outcomes.importers.trace import Message, ToolCall, Trace, TraceUnreadable
from outcomes.reducers.errors import InvalidEvent
from outcomes.reducers.timefmt import MAX_MICROS, MIN_MICROS
from outcomes.reducers.validate import IDENTIFIER_REFUSED_CATEGORIES, event_parser

# Largest trace file read (a FIFO, a device or a larger file is refused: one line, exit 1).
MAX_TRACE_BYTES = 512 * 1024 * 1024
# Past this share of tool steps the reader could not read, a file is refused: its account
# would judge the final message against a run missing a tenth of what it did.
MAX_UNREAD_SHARE = 0.10
# Times later than this before the end of year 9999 are read as undated (`_dated`).
_ROOM_MICROS = 86_400 * 1_000_000


class TooManyUnread(TraceUnreadable):
    """Too large a share of a trace's tool steps could not be read.

    Operators: check the agent version that wrote the trace against the formats listed
    by `outcomes import --help`; `--max-unread-share` accepts more on purpose.
    """


def _safe_name(text: str) -> str:
    """`text` with every character an identifier may not hold (validate.py: control,
    format, separator) replaced by `_`: a file name with a newline still makes valid ids."""
    if text.isprintable():
        return text
    refused = IDENTIFIER_REFUSED_CATEGORIES
    return "".join("_" if unicodedata.category(c) in refused else c for c in text)


def _run_id(trace: Trace, path: Path, given: str | None, count: int, index: int) -> str:
    if given:
        return given if count == 1 else f"{given}-{index + 1}"
    stem = _safe_name(path.name.split(".")[0]) or "run"
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
    help="Write the JSONL events here instead of standard output (written whole or not "
    "at all; never one of FILES).",
)
@click.option(
    "--max-unread-share",
    type=click.FloatRange(0.0, 1.0),
    default=MAX_UNREAD_SHARE,
    show_default=True,
    help="Refuse a file when more than this share of its tool steps could not be read.",
)
@click.option(
    "--policy",
    "policy_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A requirement policy (TOML): the checks, deliverables and effects done requires. "
    "Default: the workspace's .outcomes/policy.toml when the trace's workspace holds one, "
    "else every check the run ran (in its last state) and every effect it attempted.",
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
    max_unread_share: float,
    policy_path: Path | None,
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
    assistant message as the narrative (a long one cut, which standard error says).
    Only regular files are read, up to 512 MiB each.

    A file that cannot be read is one error line and exit 1, and so is one where more
    than --max-unread-share (10%) of the tool steps could not be read ("12 of 40 tool
    steps not read: 12 tool_calls message"). Below that share, a record that cannot be
    mapped, or a time out of range, is reported with its position on standard error and
    the rest is still imported. An event that would not validate is reported and left
    out, and the exit code is then 1. --out is written whole or not at all; an --out that
    is one of FILES, or in a missing directory, is refused (exit 2).
    """
    if run_id is not None:
        if not 0 < len(run_id) <= 120:
            raise click.BadParameter("a run id has 1 to 120 characters", param_hint="--run-id")
        if _safe_name(run_id) != run_id:
            raise click.BadParameter(
                "a run id holds no control, format or separator character", param_hint="--run-id"
            )
    if out_path is not None:
        try:
            check_target(out_path, files)
        except OutputUnusable as exc:
            raise usage_failed(exc) from None
    traces = []
    for index, path in enumerate(files):
        try:
            trace, notes = _read(path, fmt, max_unread_share)
        except TraceUnreadable as exc:
            click.echo(f"outcomes import: error: {_one_line(str(exc))}", err=True)
            sys.exit(1)
        for note in notes:
            click.echo(note, err=True)
        traces.append((path, trace, _run_id(trace, path, run_id, len(files), index)))
    events, invalid = _events(traces, policy_path)
    if produce:
        _produce(events, bootstrap, schema_registry_url)
    else:
        try:
            with _output(out_path) as out:
                out.writelines(orjson.dumps(event) + b"\n" for event in events)
        except OutputUnusable as exc:
            raise usage_failed(exc) from None
        click.echo(f"imported {len(events)} event(s) from {len(files)} file(s)", err=True)
    if invalid:
        click.echo(f"outcomes import: error: {invalid} invalid event(s) left out", err=True)
        sys.exit(1)


def _one_line(text: str) -> str:
    return " | ".join(line.strip() for line in text.splitlines() if line.strip())


def _read(path: Path, fmt: str | None, max_unread: float) -> tuple[Trace, list[str]]:
    """The trace of `path` and the lines to report about it (records not mapped, times
    out of range); TraceUnreadable when it cannot be read or too much of it is unread."""
    # A file of no known format is refused from its two ends, before it is read whole.
    importer = IMPORTERS[fmt] if fmt is not None else detect_file(path)
    text = _text(path)
    try:
        trace = importer.read(path, text)
    except TraceUnreadable:
        raise
    except (RecursionError, ValueError, OverflowError, TypeError, MemoryError) as exc:
        # A reader that fails on a value instead of reporting the record: the file, one line.
        why = f"{type(exc).__name__}: {str(exc)[:200]}"
        raise TraceUnreadable(f"{path}: cannot be read as {importer.name} ({why})") from None
    trace, undated = _dated(trace)
    _check_unread(path, trace, max_unread)
    notes = [f"{path}: {s.where}: not mapped: {s.reason}" for s in trace.skipped]
    notes += [f"{path}: {where}: time out of range, read as undated" for where in undated]
    shown = str(path)
    if _safe_name(shown) != shown:
        trace = dataclasses.replace(trace, path=_safe_name(trace.path))
    return trace, [_safe_name(note) for note in notes]


def _text(path: Path) -> str:
    try:
        data = read_regular(path, MAX_TRACE_BYTES)
    except FileNotFoundError:
        raise TraceUnreadable(f"{path}: no such file") from None
    except NotReadable as exc:
        raise TraceUnreadable(str(exc)) from None
    except OSError as exc:
        raise TraceUnreadable(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceUnreadable(
            f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None


def _check_unread(path: Path, trace: Trace, max_share: float) -> None:
    """TooManyUnread when more than `max_share` of the trace's tool steps (read or not)
    could not be read."""
    unread = [s for s in trace.skipped if s.tool_step]
    if not unread:
        return
    read = sum(1 for s in trace.steps if isinstance(s, ToolCall))
    total = read + len(unread)
    if len(unread) <= max_share * total:
        return
    kinds = Counter(s.kind or "tool step" for s in unread)
    listed = ", ".join(f"{n} {kind}" for kind, n in kinds.most_common())
    raise TooManyUnread(f"{path}: {len(unread)} of {total} tool steps not read: {listed}")


def _dated(trace: Trace) -> tuple[Trace, list[str]]:
    """`trace` with every time the events cannot carry made undated, and where each was.

    The derivation dates an event without a time one microsecond after the one before,
    so a time is kept only with room after it: one day before the end of year 9999 (far
    more microseconds than any trace has events)."""
    latest = MAX_MICROS - _ROOM_MICROS

    def fits(at: int | None) -> bool:
        return at is None or MIN_MICROS <= at <= latest

    undated: list[str] = []
    steps = []
    for step in trace.steps:
        changes: dict[str, Any] = {}
        for name in ("at", "finished_at"):
            if not fits(getattr(step, name, None)):
                changes[name] = None
        if changes:
            undated.append(step.where)
            step = dataclasses.replace(step, **changes)
        steps.append(step)
    started = trace.started_at
    if not fits(started):
        undated.append("start")
        started = None
    if not undated:
        return trace, []
    return dataclasses.replace(trace, steps=tuple(steps), started_at=started), undated


def _events(
    traces: list[tuple[Path, Trace, str]], policy_path: Path | None
) -> tuple[list[dict[str, Any]], int]:
    """The events of every trace that validate, and how many did not (each reported),
    under the requirement policy in force (importers/policy.py)."""
    parse = event_parser()
    kept: list[dict[str, Any]] = []
    invalid = 0
    for path, trace, rid in traces:
        try:
            derived = with_policy(derive(trace, rid), policy_path, trace.root)
        except PolicyError as exc:
            click.echo(f"outcomes import: error: {_one_line(str(exc))}", err=True)
            sys.exit(1)
        except (RecursionError, ValueError, OverflowError) as exc:
            why = f"{type(exc).__name__}: {str(exc)[:200]}"
            click.echo(f"outcomes import: error: {path}: cannot be imported ({why})", err=True)
            sys.exit(1)
        _say_cut(path, trace, derived)
        for event in derived:
            try:
                parse(event)
            except InvalidEvent as exc:
                invalid += 1
                where = f"{path}: event {event.get('event_id')} ({event.get('type')})"
                click.echo(_safe_name(f"{where}: invalid: {exc.reason}: {exc.message}"), err=True)
                continue
            kept.append(event)
    return kept, invalid


def _say_cut(path: Path, trace: Trace, events: list[dict[str, Any]]) -> None:
    """One line for each narrative that holds only the start of the message it was made
    from (the derivation cuts a long final message)."""
    texts = {e["text"] for e in events if e.get("type") == "narrative.submitted"}
    for step in trace.steps:
        if not isinstance(step, Message):
            continue
        for text in texts:
            if len(step.text) > len(text) and step.text.startswith(text):
                line = (
                    f"{path}: {step.where}: the final message has {len(step.text)} "
                    f"characters; the narrative holds its first {len(text)}"
                )
                click.echo(_safe_name(line), err=True)


def _output(path: Path | None) -> AbstractContextManager[BinaryIO]:
    if path is None:
        return nullcontext(click.get_binary_stream("stdout"))
    return atomic_output(path)


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
