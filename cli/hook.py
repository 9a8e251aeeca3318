"""`outcomes hook claude-code`: a Claude Code hook that publishes the session's events.

Claude Code runs it with the hook's JSON on standard input (SessionStart,
UserPromptSubmit, PostToolUse, PostToolUseFailure, Stop, SessionEnd). Each call appends
the payload to the session's journal, maps the payloads not mapped yet into steps (each
payload is mapped once; the steps are kept in `steps.jsonl`), derives the session's
events from those steps (the same derivation as `outcomes import`; event ids are
deterministic, so what was derived before is derived again identically), adds the new
ones to the session's spool, and publishes the spool in order. What the broker does not
acknowledge stays in the spool and goes first on the next call. The hook never fails the
agent's session: every problem is one line on standard error and exit status 0.

Bounds, so that no input holds a call past Claude Code's hook timeout: a payload of at
most 32 MiB is read; of a tool's output, the first and last 128 Ki characters are kept
(`claude_hooks.kept_output`: every call derives from all the steps kept); a Stop reads
the transcript for the last assistant message only if it is a regular file (opened
without blocking, at most 256 MiB), and a transcript it cannot read (whatever value it
holds) leaves the text out, never the Stop; a call waits at most `--lock-wait` seconds
for another call of the same session, and if that is not enough its payload is already
journaled and is mapped by the next call.

State lives in `--state-dir` (default `$OUTCOMES_HOOK_DIR`, else
`$XDG_STATE_HOME/outcomes/claude-code`, else `~/.local/state/outcomes/claude-code`), one
folder per session, named by :func:`session_folder` (a readable prefix of the session id
and a hash of all of it: an id such as `..` or `a/b` stays inside the state dir, and two
ids never share a folder): `journal.jsonl`, `steps.jsonl` and `mapped.json` (the payloads
mapped so far), `spool.jsonl`, `derived.txt` (ids already spooled).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
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

from outcomes.cli import hook_gate, options
from outcomes.cli.hook_gate import DEFAULT_GATE_BUDGET, GateConfig
from outcomes.cli.hook_install import install_command
from outcomes.importers.base import obj
from outcomes.importers.claude_hooks import (
    assemble,
    last_assistant_text,
    run_id_of,
    step_from_json,
    step_json,
    steps_of,
)
from outcomes.importers.derive import derive
from outcomes.importers.policy import PolicyError, with_policy
from outcomes.importers.trace import Finish, Started, Step

# The largest hook payload read (Claude Code's payloads carry a tool's whole response).
MAX_PAYLOAD_BYTES = 32 * 1024 * 1024
# How long a call waits for another call of the same session (Claude Code's hook timeout
# is 30 s by default).
LOCK_WAIT_SECONDS = 10.0


def default_state_dir() -> Path:
    if os.environ.get("OUTCOMES_HOOK_DIR"):
        return Path(os.environ["OUTCOMES_HOOK_DIR"])
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "outcomes" / "claude-code"


@click.group()
def hook() -> None:
    """Agent hooks that publish a live session's events (see docs/integrations.md)."""


hook.add_command(install_command)


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
@click.option(
    "--lock-wait",
    type=click.FloatRange(min=0.0),
    default=LOCK_WAIT_SECONDS,
    show_default=True,
    help="Seconds to wait for another call of the same session; past it the payload is "
    "journaled and its events go with the next call.",
)
@click.option(
    "--policy",
    "policy_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A requirement policy (TOML). Default: the workspace's .outcomes/policy.toml when "
    "it holds one, else every check the session ran (in its last state) and every effect "
    "it attempted.",
)
@options.setting_option(
    "gate_url",
    help="Check the final message at each Stop against the run's account at this worker "
    "door (the pre-display gate); without it or OUTCOMES_GATE_URL, no check",
    default="none",
)
@click.option(
    "--gate-budget",
    type=click.FloatRange(min=0.1, max=25.0),
    default=DEFAULT_GATE_BUDGET,
    show_default=True,
    help="Seconds a Stop's check may take; past it the answer is shown unchecked.",
)
@options.bootstrap
@options.schema_registry
def claude_code(
    state_dir: Path | None,
    run_id: str | None,
    timeout: float,
    lock_wait: float,
    policy_path: Path | None,
    gate_url: str | None,
    gate_budget: float,
    bootstrap: str | None,
    schema_registry_url: str | None,
) -> None:
    """Read one Claude Code hook payload on standard input; publish the session's new
    events, and whatever earlier calls could not send, through the producer SDK.

    Always exits 0: a broker that is down, a payload that is not JSON, a full disk are
    reported on standard error, and unsent events wait in the session's spool. With a
    gate, a Stop whose answer the run's account contradicts is blocked once, with the
    contradictions and the facts as the reason (see docs/integrations.md).
    """
    reply: list[dict[str, Any]] = []
    gate: GateConfig | None = None
    try:
        gate = _gate_config(gate_url, gate_budget)
    except Exception as exc:  # a bad gate setting costs the check, never the events
        click.echo(f"outcomes hook: the gate is not asked: {type(exc).__name__}: {exc}", err=True)
    try:
        message = _handle(
            sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1),
            state_dir or default_state_dir(),
            run_id,
            timeout,
            bootstrap,
            schema_registry_url,
            lock_wait,
            policy_path,
            gate,
            reply,
        )
    except Exception as exc:  # the agent's session must go on whatever happened here
        message = f"outcomes hook: error: {type(exc).__name__}: {exc}"
    if message:
        click.echo(message, err=True)
    if reply:
        click.echo(orjson.dumps(reply[-1]).decode())


def _gate_config(url: str | None, budget: float) -> GateConfig | None:
    """The gate the Stop asks: the flag, else OUTCOMES_GATE_URL, else none. Its token is
    OUTCOMES_GATE_TOKEN, else the default worker's own (in its state folder)."""
    url = url or os.environ.get("OUTCOMES_GATE_URL") or None
    if url is None:
        return None
    from outcomes.common.settings import Settings  # lazy: as the producer (below)
    from outcomes.reducers.catalog import DEFAULT_APP_ID  # lazy: only with a gate
    from outcomes.streams.gate_door import read_token  # lazy: starlette only with a gate

    settings = Settings.load(gate_url=url)
    token = settings.gate_token or read_token(settings.state_dir, DEFAULT_APP_ID)
    return GateConfig(settings.gate_url, token, budget)


def _handle(
    raw: bytes,
    state_dir: Path,
    run_id: str | None,
    timeout: float,
    bootstrap: str | None,
    registry: str | None,
    lock_wait: float = LOCK_WAIT_SECONDS,
    policy_path: Path | None = None,
    gate: GateConfig | None = None,
    reply: list[dict[str, Any]] | None = None,
) -> str | None:
    """The line for standard error, or None; with a `gate`, a Stop's answer is checked
    and what Claude Code is told (a block, a system message) goes to `reply`."""
    if len(raw) > MAX_PAYLOAD_BYTES:
        return f"outcomes hook: error: the hook input is larger than {MAX_PAYLOAD_BYTES} bytes"
    try:
        payload = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return f"outcomes hook: error: the hook input is not JSON ({exc})"
    if not isinstance(payload, dict) or not isinstance(payload.get("session_id"), str):
        return "outcomes hook: error: the hook input has no session_id"
    session = payload["session_id"]
    folder = _folder(state_dir, session)
    notes: list[str] = []
    if payload.get("hook_event_name") == "Stop" and not payload.get("last_assistant_message"):
        text, why = last_assistant_text(payload.get("transcript_path"))
        if text:
            payload = {**payload, "last_assistant_message": text}
        if why:
            notes.append(f"no last assistant message from the {why}")
    entry = {"at": time.time_ns() // 1000, "payload": payload}
    _append(folder / "journal.jsonl", orjson.dumps(entry) + b"\n")
    try:
        with _locked(folder / "lock", lock_wait):
            problem = _publish_session(
                folder, session, payload, run_id, timeout, bootstrap, registry, notes,
                policy_path, gate, reply,
            )  # fmt: skip
    except LockBusy:
        problem = (
            f"another call of the session held it for {lock_wait:g} s; the payload is "
            "journaled and its events go with the next call"
        )
    lines = [*notes, *([problem] if problem else [])]
    return "outcomes hook: " + "; ".join(lines) if lines else None


def _publish_session(
    folder: Path,
    session: str,
    payload: dict[str, Any],
    run_id: str | None,
    timeout: float,
    bootstrap: str | None,
    registry: str | None,
    notes: list[str],
    policy_path: Path | None = None,
    gate: GateConfig | None = None,
    reply: list[dict[str, Any]] | None = None,
) -> str | None:
    """Map the new payloads, derive, spool the new events and publish the spool; what to
    say about it, or None. With a `gate`, a Stop's narrative is held back, the final
    message checked (`hook_gate`), and the narrative published unless the gate asked
    for a repair; what the hook prints for Claude Code goes to `reply`."""
    transcript = str(payload.get("transcript_path") or f"{session}.jsonl")
    run = run_id or run_id_of(session)
    events = _derived(folder, transcript, run, notes, policy_path)
    derived_path = folder / "derived.txt"
    known = set(derived_path.read_text().split()) if derived_path.exists() else set()
    new = [e for e in events if e["event_id"] not in known]
    event_name = payload.get("hook_event_name")
    text = payload.get("last_assistant_message")
    gating = gate is not None and event_name == "Stop" and isinstance(text, str) and text.strip()
    if gate is not None and event_name in ("SessionStart", "UserPromptSubmit"):
        hook_gate.new_answer(folder)
    held_path = folder / "held.jsonl"
    # A narrative held by a call that did not live to decide goes out now, unchecked.
    stray = _read_jsonl(held_path)
    narratives = [e for e in new if e["type"] == "narrative.submitted"]
    held = narratives[-1:] if gating else []
    if held:  # kept aside first, then marked derived: a crash in between never loses it
        _write_jsonl(held_path, stray + held)
    spool = _read_jsonl(folder / "spool.jsonl") + stray + [e for e in new if e not in held]
    if new or stray:  # spooled first, then marked derived: a crash in between repeats
        _write_jsonl(folder / "spool.jsonl", spool)
        with derived_path.open("a") as out:
            out.writelines(e["event_id"] + "\n" for e in new)
    if held:
        _write_jsonl(held_path, held)  # the stray ones are in the spool now
    elif stray:
        held_path.unlink(missing_ok=True)
    problem = _send(folder, spool, timeout, bootstrap, registry) if spool else None
    if not held or gate is None:
        return problem
    left = _read_jsonl(folder / "spool.jsonl")
    published = folder / "published.txt"
    position = published.read_text().split() if published.exists() else []
    gated = hook_gate.check_at_stop(
        folder, run, held[0]["text"], bool(payload.get("stop_hook_active")), position, gate,
        not left,
    )  # fmt: skip
    if gated.note:
        notes.append(gated.note)
    if gated.stdout is not None and reply is not None:
        reply.append(gated.stdout)
    if gated.publish:
        record = (
            [hook_gate.unchecked_record(run, gated, held[0]["text"])]
            if gated.decision == "unchecked"
            else []
        )
        spool = left + held + record
        _write_jsonl(folder / "spool.jsonl", spool)
        held_path.unlink(missing_ok=True)
        if not left:  # the broker took everything a moment ago: the narrative goes now
            problem = _send(folder, spool, timeout, bootstrap, registry)
    else:  # the repaired answer replaces this one: its narrative is never published
        held_path.unlink(missing_ok=True)
    return problem


def _send(
    folder: Path,
    spool: list[dict[str, Any]],
    timeout: float,
    bootstrap: str | None,
    registry: str | None,
) -> str | None:
    """Publish the spool; keep what was not acknowledged in it, set the invalid aside,
    add the acknowledged ids to `published.txt`; what to say about it, or None."""
    sent, rejected, problem = _publish(spool, timeout, bootstrap, registry)
    if rejected:  # invalid events are kept aside with the reason, never resent
        with (folder / "rejected.jsonl").open("ab") as out:
            out.writelines(orjson.dumps({"reason": why, "event": e}) + b"\n" for e, why in rejected)
    gone = sent | {e["event_id"] for e, _ in rejected}
    left = [e for e in spool if e["event_id"] not in gone]
    _write_jsonl(folder / "spool.jsonl", left)
    if sent:
        with (folder / "published.txt").open("a") as out:
            out.writelines(e["event_id"] + "\n" for e in spool if e["event_id"] in sent)
    if rejected and not left:
        return f"{problem}; see {folder / 'rejected.jsonl'}"
    if left:
        return (
            f"{problem or 'not acknowledged'}; {len(left)} event(s) kept in "
            f"{folder / 'spool.jsonl'} for the next call"
        )
    return None


def _derived(
    folder: Path, transcript: str, run_id: str, notes: list[str], policy_path: Path | None = None
) -> list[dict[str, Any]]:
    """The session's events: the payloads journaled since the last call are mapped (each
    once; what was mapped is kept), then the events derived from all the steps. A payload
    whose steps the derivation fails on keeps only its start or stop, so one bad value
    never leaves the session unfinished."""
    mark = _read_json(folder / "mapped.json")
    offset, count = int(mark.get("offset") or 0), int(mark.get("entries") or 0)
    root = mark.get("root") if isinstance(mark.get("root"), str) else None
    rows, offset, count, root = _map_new(folder / "journal.jsonl", offset, count, root, notes)
    mapped = _mapped_steps(folder / "steps.jsonl")
    added = [[step_from_json(s) for s in row["steps"]] for row in rows]
    try:
        events = derive(assemble(transcript, mapped + added, root), run_id, whole=False)
    except Exception as exc:  # a value the derivation fails on: drop the new payloads' steps
        numbers = ", ".join(str(row["n"]) for row in rows)
        notes.append(f"payload(s) {numbers} not derived ({type(exc).__name__}: {str(exc)[:200]})")
        added = [[s for s in steps if isinstance(s, Started | Finish)] for steps in added]
        rows = [
            {"n": r["n"], "steps": [step_json(s) for s in a]}
            for r, a in zip(rows, added, strict=True)
        ]
        events = derive(assemble(transcript, mapped + added, root), run_id, whole=False)
    try:
        events = with_policy(events, policy_path, root)
    except PolicyError as exc:  # the session goes on under the default policy
        notes.append(f"policy not applied ({exc}); the default is in force")
    if rows:  # kept, then marked mapped: a crash in between maps them again, never loses
        with (folder / "steps.jsonl").open("ab") as out:
            out.writelines(orjson.dumps(row) + b"\n" for row in rows)
    _write_json(folder / "mapped.json", {"offset": offset, "entries": count, "root": root})
    return events


def _map_new(
    journal: Path, offset: int, count: int, root: str | None, notes: list[str]
) -> tuple[list[dict[str, Any]], int, int, str | None]:
    """The journal's complete lines from `offset` mapped to steps: rows {"n": payload
    number, "steps": [...]}, the offset after them, the payloads counted, the root."""
    with journal.open("rb") as handle:
        handle.seek(offset)
        chunk = handle.read()
    complete = chunk[: chunk.rfind(b"\n") + 1]  # a line still being appended waits
    rows = []
    for line in complete.splitlines():
        if not line.strip():
            continue
        number = count
        count += 1
        try:
            entry = orjson.loads(line)
            payload = obj(entry.get("payload")) if isinstance(entry, dict) else {}
            if root is None and isinstance(payload.get("cwd"), str):
                root = payload["cwd"]
            steps = steps_of(number, int(entry.get("at") or 0), payload)
        except Exception as exc:  # one payload that cannot be mapped costs only itself
            notes.append(f"payload {number} not mapped ({type(exc).__name__}: {str(exc)[:200]})")
            steps = []
        rows.append({"n": number, "steps": [step_json(s) for s in steps]})
    return rows, offset + len(complete), count, root


def _mapped_steps(path: Path) -> list[list[Step]]:
    """The steps kept for each payload mapped by earlier calls, in payload order (a row
    written twice by a call that crashed before marking it counts once)."""
    seen: dict[int, list[Step]] = {}
    for row in _read_jsonl(path):
        seen.setdefault(int(row["n"]), [step_from_json(s) for s in row["steps"]])
    return [seen[n] for n in sorted(seen)]


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


def session_folder(session: str) -> str:
    """The folder name of a session: its id's letters, digits, `-` and `_` (others as `_`,
    at most 64), then 16 hex digits of the id's SHA-256. Never `.` or `..`, never a path,
    and two ids get two folders (`col/1` and `col_1` share only the prefix)."""
    prefix = "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "_" for c in session)
    digest = hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{prefix[:64] or 'session'}-{digest}"


def _folder(state_dir: Path, session: str) -> Path:
    """The session's folder, created. A session whose folder an earlier version named by
    the id alone keeps it (taken over by renaming) when that name was unambiguous: the
    id held only letters, digits, `-`, `_` and `.`, and is not dots alone."""
    folder = state_dir / session_folder(session)
    if not folder.is_dir():
        state_dir.mkdir(parents=True, exist_ok=True)
        old = state_dir / session
        plain = all(c.isalnum() or c in "-_." for c in session) and session.strip(".")
        if plain and len(session) <= 200 and old.is_dir() and not old.is_symlink():
            with contextlib.suppress(OSError):  # another call took it over first
                old.rename(folder)
        folder.mkdir(exist_ok=True)
    return folder


class LockBusy(Exception):
    """Another hook call of the same session held its lock past the wait (internal)."""


@contextmanager
def _locked(path: Path, wait: float) -> Iterator[None]:
    """One hook call per session at a time (Claude Code runs hooks of parallel tool
    calls concurrently), waiting at most `wait` seconds (then LockBusy)."""
    deadline = time.monotonic() + wait
    with path.open("a") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockBusy from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _append(path: Path, line: bytes) -> None:
    """`line` at the end of `path` in one write (O_APPEND: calls that append at once do
    not interleave)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        written = os.write(fd, line)
        while written < len(line):
            written += os.write(fd, line[written:])
    finally:
        os.close(fd)


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    value = orjson.loads(path.read_bytes())
    return value if isinstance(value, dict) else {}


def _write_json(path: Path, value: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(orjson.dumps(value))
    tmp.replace(path)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    tmp.replace(path)
