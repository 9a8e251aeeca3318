"""`outcomes hook claude-code`: a Claude Code hook that publishes the session's events.

Claude Code runs it with the hook's JSON on standard input (SessionStart,
UserPromptSubmit, PostToolUse, PostToolUseFailure, Stop, SessionEnd). Each call appends
the payload to the session's journal, derives the session's events from the whole
journal (the same derivation as `outcomes import`; event ids are deterministic, so what
was derived before is derived again identically), adds the new ones to the session's
spool, and publishes the spool in order. What the broker does not acknowledge stays in
the spool and goes first on the next call. The hook never fails the agent's session:
every problem is one line on standard error and exit status 0.

State lives in `--state-dir` (default `$OUTCOMES_HOOK_DIR`, else
`$XDG_STATE_HOME/outcomes/claude-code`, else `~/.local/state/outcomes/claude-code`), one
folder per session: `journal.jsonl`, `spool.jsonl`, `derived.txt` (ids already spooled).
"""

from __future__ import annotations

import fcntl
import logging
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
import orjson

from outcomes.cli import options
from outcomes.importers.claude_hooks import last_assistant_text, live_trace, run_id_of
from outcomes.importers.derive import derive


def default_state_dir() -> Path:
    if os.environ.get("OUTCOMES_HOOK_DIR"):
        return Path(os.environ["OUTCOMES_HOOK_DIR"])
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "outcomes" / "claude-code"


@click.group()
def hook() -> None:
    """Agent hooks that publish a live session's events (see docs/integrations.md)."""


@hook.command("claude-code")
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the journal and spool of each session live "
    "(default $OUTCOMES_HOOK_DIR or ~/.local/state/outcomes/claude-code).",
)
@click.option(
    "--run-id",
    help="The run id (default claude-code-jsonl:<session_id>, the id `outcomes import` "
    "gives the session's transcript).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=5.0,
    show_default=True,
    help="Seconds to wait for the broker before keeping the events for the next call.",
)
@options.bootstrap
@options.schema_registry
def claude_code(
    state_dir: Path | None,
    run_id: str | None,
    timeout: float,
    bootstrap: str | None,
    schema_registry_url: str | None,
) -> None:
    """Read one Claude Code hook payload on standard input; publish the session's new
    events, and whatever earlier calls could not send, through the producer SDK.

    Always exits 0: a broker that is down, a payload that is not JSON, a full disk are
    reported on standard error, and unsent events wait in the session's spool.
    """
    try:
        message = _handle(
            sys.stdin.buffer.read(),
            state_dir or default_state_dir(),
            run_id,
            timeout,
            bootstrap,
            schema_registry_url,
        )
    except Exception as exc:  # the agent's session must go on whatever happened here
        message = f"outcomes hook: error: {type(exc).__name__}: {exc}"
    if message:
        click.echo(message, err=True)


def _handle(
    raw: bytes,
    state_dir: Path,
    run_id: str | None,
    timeout: float,
    bootstrap: str | None,
    registry: str | None,
) -> str | None:
    try:
        payload = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return f"outcomes hook: error: the hook input is not JSON ({exc})"
    if not isinstance(payload, dict) or not isinstance(payload.get("session_id"), str):
        return "outcomes hook: error: the hook input has no session_id"
    session = payload["session_id"]
    folder = state_dir / _safe(session)
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder / "lock"):
        if payload.get("hook_event_name") == "Stop" and not payload.get("last_assistant_message"):
            text = last_assistant_text(payload.get("transcript_path"))
            if text:
                payload = {**payload, "last_assistant_message": text}
        entry = {"at": time.time_ns() // 1000, "payload": payload}
        with (folder / "journal.jsonl").open("ab") as journal:
            journal.write(orjson.dumps(entry) + b"\n")
        entries = _read_jsonl(folder / "journal.jsonl")
        transcript = str(payload.get("transcript_path") or f"{session}.jsonl")
        events = derive(live_trace(transcript, entries), run_id or run_id_of(session), whole=False)
        derived_path = folder / "derived.txt"
        known = set(derived_path.read_text().split()) if derived_path.exists() else set()
        new = [e for e in events if e["event_id"] not in known]
        spool = _read_jsonl(folder / "spool.jsonl") + new
        if new:  # spooled first, then marked derived: a crash in between repeats, never loses
            _write_jsonl(folder / "spool.jsonl", spool)
            with derived_path.open("a") as out:
                out.writelines(e["event_id"] + "\n" for e in new)
        if not spool:
            return None
        sent, rejected, problem = _publish(spool, timeout, bootstrap, registry)
        if rejected:  # invalid events are kept aside with the reason, never resent
            with (folder / "rejected.jsonl").open("ab") as out:
                out.writelines(
                    orjson.dumps({"reason": why, "event": e}) + b"\n" for e, why in rejected
                )
        gone = sent | {e["event_id"] for e, _ in rejected}
        left = [e for e in spool if e["event_id"] not in gone]
        _write_jsonl(folder / "spool.jsonl", left)
        if rejected and not left:
            return f"outcomes hook: {problem}; see {folder / 'rejected.jsonl'}"
        if left:
            return (
                f"outcomes hook: {problem or 'not acknowledged'}; {len(left)} event(s) kept in "
                f"{folder / 'spool.jsonl'} for the next call"
            )
    return None


def _publish(
    events: list[dict[str, Any]], timeout: float, bootstrap: str | None, registry: str | None
) -> tuple[set[str], list[tuple[dict[str, Any], str]], str | None]:
    """(ids the broker acknowledged, events the codec refused and why, why the others
    were not acknowledged)."""
    from outcomes.common.errors import (  # lazy: confluent-kafka loads only to publish
        CodecError,
        DeliveryError,
        ProducerError,
    )
    from outcomes.common.settings import Settings  # lazy: as above
    from outcomes.streams.sdk.producer import DeliveryReport, OutcomesProducer  # lazy: as above

    settings = Settings.load(bootstrap=bootstrap, schema_registry_url=registry)
    # The SDK logs each connection error; the hook reports once, in its own line.
    logging.getLogger("outcomes.streams.sdk").setLevel(logging.ERROR)
    sent: set[str] = set()
    rejected: list[tuple[dict[str, Any], str]] = []
    problem: str | None = None

    def delivered(report: DeliveryReport) -> None:
        nonlocal problem
        if report.error is None:
            sent.add(report.event_id)
        else:
            problem = f"broker {settings.bootstrap}: {report.error}"

    millis = int(timeout * 1000)
    producer = OutcomesProducer(
        settings,
        source="outcomes-hook",
        message_timeout_ms=millis,
        on_delivery=delivered,
        backpressure_timeout=timeout,
        config={"socket.connection.setup.timeout.ms": max(1000, millis)},
    )
    try:
        for event in events:
            try:
                producer.publish(event)
            except CodecError as exc:
                rejected.append((event, f"{exc.reason}: {exc.message}"))
    except ProducerError as exc:
        problem = str(exc)
    finally:
        try:
            producer.close(timeout=timeout + 1.0)
        except DeliveryError as exc:
            problem = problem or f"broker {settings.bootstrap}: {exc}"
    if rejected:
        problem = f"{len(rejected)} invalid event(s) set aside: {rejected[0][1]}"
    return sent, rejected, problem


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:200] or "session"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One hook call per session at a time (Claude Code runs hooks of parallel tool
    calls concurrently)."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    tmp.replace(path)
