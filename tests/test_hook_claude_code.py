"""`outcomes hook claude-code` with Claude Code hook payloads as Claude Code documents
them (session_id, transcript_path, cwd, hook_event_name; tool_name, tool_input,
tool_use_id, tool_response for PostToolUse, error for PostToolUseFailure; prompt;
stop_hook_active), built from the tool calls and results of a real Claude Code transcript
of the corpus in `../shared/agent-traces` (read where it is, not copied).

End to end: the hook publishes through the producer SDK to the real broker, the worker
folds, the sink writes chDB, and the account read back from ClickHouse says what the
transcript importer's account says (checks, artifacts, effects). With the broker down the
hook says so in one line, exits 0 and keeps the events in its spool; the next call with
the broker up sends them first.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

from outcomes.cli import hook as hook_cli
from outcomes.devtools.harness import (
    Harness,
    KafkaConfig,
    Progress,
    finish,
    free_port,
    wait_for,
)
from tests.cli_support import outcomes
from tests.conftest import require
from tests.sink_support import sunk

ROOT = Path(__file__).resolve().parent.parent
TRANSCRIPT = ROOT.parent / "shared" / "agent-traces" / "traces" / "cc-coverage-test-fix.jsonl"


def payloads(session_id: str) -> list[dict[str, Any]]:
    """The hook inputs Claude Code sends for the transcript's session, in order."""
    require(TRANSCRIPT.exists(), f"the Claude Code transcript {TRANSCRIPT} is missing")
    rows = [json.loads(line) for line in TRANSCRIPT.read_text().splitlines() if line.strip()]
    cwd = next(r["cwd"] for r in rows if "cwd" in r)
    base = {"session_id": session_id, "transcript_path": str(TRANSCRIPT), "cwd": cwd,
            "permission_mode": "default"}  # fmt: skip
    out: list[dict[str, Any]] = [{**base, "hook_event_name": "SessionStart", "source": "startup"}]
    calls: dict[str, dict[str, Any]] = {}
    for row in rows:
        content = (row.get("message") or {}).get("content")
        if row.get("type") == "user" and isinstance(content, str) and not row.get("isMeta"):
            out.append({**base, "hook_event_name": "UserPromptSubmit", "prompt": content})
        if not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_use":
                calls[block["id"]] = block
            elif block.get("type") == "tool_result" and block["tool_use_id"] in calls:
                use = calls[block["tool_use_id"]]
                common = {**base, "tool_name": use["name"], "tool_input": use["input"],
                          "tool_use_id": use["id"]}  # fmt: skip
                if block.get("is_error"):
                    out.append({**common, "hook_event_name": "PostToolUseFailure",
                                "error": block["content"], "is_interrupt": False})  # fmt: skip
                else:
                    out.append({**common, "hook_event_name": "PostToolUse",
                                "tool_response": row.get("toolUseResult")})  # fmt: skip
    out.append({**base, "hook_event_name": "Stop", "stop_hook_active": False})
    out.append({**base, "hook_event_name": "SessionEnd", "reason": "other"})
    return out


def hook(
    payload: dict[str, Any] | bytes, state: Path, bootstrap: str
) -> subprocess.CompletedProcess[str]:
    data = payload if isinstance(payload, bytes) else orjson.dumps(payload)
    return subprocess.run(
        [sys.executable, "-m", "outcomes.cli", "hook", "claude-code", "--state-dir", str(state),
         "--bootstrap", bootstrap, "--timeout", "2"],
        input=data.decode(), capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip


def spool(state: Path, session: str) -> list[dict[str, Any]]:
    path = state / hook_cli.session_folder(session) / "spool.jsonl"
    return [orjson.loads(x) for x in path.read_bytes().splitlines()] if path.exists() else []


def test_broker_down_the_hook_exits_0_and_spools(tmp_path: Path) -> None:
    session = f"hook-spool-{uuid.uuid4().hex[:8]}"
    dead = f"127.0.0.1:{free_port()}"
    sent = payloads(session)[:4]
    # SessionStart alone sends nothing: run.started waits for the first prompt (its task).
    first = hook(sent[0], tmp_path, dead)
    assert first.returncode == 0 and first.stderr.strip() == "", first.stderr
    counts = []
    for payload in sent[1:]:
        proc = hook(payload, tmp_path, dead)
        assert proc.returncode == 0
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "kept in" in lines[0] and dead in lines[0], proc.stderr
        counts.append(len(spool(tmp_path, session)))
    assert counts == sorted(counts) and counts[0] >= 1  # nothing lost, nothing sent
    kinds = [e["type"] for e in spool(tmp_path, session)]
    assert kinds[:3] == ["run.started", "goal.revised", "tool.started"]
    # Input that is not a hook payload is a line, never a failure of the session.
    for junk in (b"not json", b'{"hook_event_name": "Stop"}'):
        proc = hook(junk, tmp_path, dead)
        assert proc.returncode == 0 and proc.stderr.count("\n") == 1, proc.stderr


def account_of(show: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert show.returncode == 0, show.stderr
    data: dict[str, Any] = orjson.loads(show.stdout)
    return data


def summary(account: dict[str, Any]) -> dict[str, Any]:
    return {
        "checks": sorted((c["label"], c["result"], c["tests_executed"]) for c in account["checks"]),
        "artifacts": sorted((a["path"], a["change"]) for a in account["artifacts"]),
        "effects": sorted((e["effect_class"], e["state"]) for e in account["effects"]),
    }


def test_hook_payloads_reach_clickhouse_through_kafka_the_worker_and_the_sink(
    kafka_bootstrap: str, kafka_config: KafkaConfig, tmp_path: Path
) -> None:
    with Harness(kafka_config, kafka_bootstrap, tmp_path, "hook") as harness:
        session = f"{harness.prefix}-session"
        run = f"claude-code-jsonl:{session}"
        state = tmp_path / "hook-state"
        sent = payloads(session)
        worker = harness.worker()
        worker.start()
        # The first calls find the broker down: their events wait in the spool ...
        dead = f"127.0.0.1:{free_port()}"
        for number, payload in enumerate(sent[:3]):
            proc = hook(payload, state, dead)
            # SessionStart sends nothing yet (run.started waits for the first prompt).
            assert proc.returncode == 0 and ("kept in" in proc.stderr) == (number > 0), proc.stderr
        waiting = len(spool(state, session))
        assert waiting >= 3
        # ... and go first on the next call, which reaches the broker.
        for payload in sent[3:]:
            proc = hook(payload, state, kafka_bootstrap)
            assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        assert spool(state, session) == []
        progress = Progress(kafka_config, harness.app_id)
        try:
            wait_for(progress.done, 120, "the worker to fold the hook's events", 0.5)
        finally:
            progress.close()
        finish([worker], kafka_config, timeout=180)
        dsn = f"chdb://{tmp_path}/chdb"
        with sunk(kafka_config, kafka_bootstrap, harness.marks, dsn, "hook"):
            live = account_of(outcomes("show", run, "--clickhouse", dsn, "--format", "json"))

        # The importer's account of the same session's transcript.
        events = tmp_path / "imported.jsonl"
        imported = outcomes("import", str(TRANSCRIPT), "--run-id", run, "--out", str(events))
        assert imported.returncode == 0, imported.stderr
        replayed = tmp_path / "replay.jsonl"
        assert outcomes("replay", str(events), "--out", str(replayed)).returncode == 0
        reference = account_of(outcomes("show", run, "--from", str(replayed), "--format", "json"))

        got = summary(live)
        assert got == summary(reference)
        assert ("pytest tests/test_math_utils.py -v", "pass", 2) in got["checks"]
        assert ("src/math_utils.py", "modified") in got["artifacts"]
        assert ("write", "completed") in got["effects"]  # the commit, its line the receipt


def test_payloads_read_as_the_transcript_reads_its_tool_calls() -> None:
    from outcomes.importers.claude_hooks import live_trace
    from outcomes.importers.derive import derive

    base = {"session_id": "s", "transcript_path": "/nowhere/s.jsonl", "cwd": "/w"}
    entries = [
        {"at": 1, "payload": {**base, "hook_event_name": "UserPromptSubmit", "prompt": "Ship it."}},
        {"at": 2, "payload": {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                              "tool_use_id": "t1", "tool_input": {"command": "pytest -q"},
                              "tool_response": {"stdout": "3 passed in 0.1s", "stderr": ""}}},
        {"at": 3, "payload": {**base, "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
                              "tool_use_id": "t2", "tool_input": {"command": "git push"},
                              "error": "Exit code 1\n ! [rejected]  main -> main (fetch first)"}},
        {"at": 4, "payload": {**base, "hook_event_name": "PostToolUse",
                              "tool_name": "mcp__github__create_pull_request", "tool_use_id": "t3",
                              "tool_input": {"owner": "o", "repo": "r"},
                              "tool_response": [{"type": "text",
                                                 "text": '{"html_url": "https://example.test/p/1"}'}]}},
        {"at": 5, "payload": {**base, "hook_event_name": "Stop",
                              "last_assistant_message": "Shipped."}},
        {"at": 6, "payload": {**base, "hook_event_name": "SessionEnd", "reason": "other"}},
    ]  # fmt: skip
    events = derive(live_trace("/nowhere/s.jsonl", entries), "r", whole=False)
    receipts = [
        (e["label"], e["result"], e["tests_executed"])
        for e in events
        if e["type"] == "verification.receipt"
    ]
    assert receipts == [("pytest -q", "pass", 3)]
    finished = {e["action_id"]: e["outcome"] for e in events if e["type"] == "tool.finished"}
    assert finished == {"t1": "succeeded", "t2": "failed", "t3": "succeeded"}
    intents = {e["intent_id"]: e["effect_class"] for e in events if e["type"] == "effect.intent"}
    assert sorted(intents.values()) == ["git_push", "pull_request"]
    assert [e["text"] for e in events if e["type"] == "narrative.submitted"] == ["Shipped."]
    assert [e["type"] for e in events].count("finalize.requested") == 1  # SessionEnd adds none
    # a longer journal repeats the earlier events exactly (the hook sends only new ones)
    shorter = derive(live_trace("/nowhere/s.jsonl", entries[:3]), "r", whole=False)
    assert shorter == events[: len(shorter)]


# ---------------------------------------------------------- issue 34: hook state and bounds
# In process, with publishing replaced by a broker that acknowledges nothing: what is
# checked is the state the hook keeps, which does not depend on the broker.

BASE = {"transcript_path": "/nowhere/s.jsonl", "cwd": "/w"}


@pytest.fixture
def no_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    def publish(
        events: list[dict[str, Any]], timeout: float, bootstrap: str | None, registry: str | None
    ) -> tuple[set[str], list[tuple[dict[str, Any], str]], str | None]:
        return set(), [], "broker down"

    monkeypatch.setattr(hook_cli, "_publish", publish)


def call(
    state: Path, session: str, event: str, lock_wait: float = 5.0, **fields: Any
) -> str | None:
    payload = {**BASE, "session_id": session, "hook_event_name": event, **fields}
    return hook_cli._handle(orjson.dumps(payload), state, None, 1.0, None, None, lock_wait)


def folder(state: Path, session: str) -> Path:
    return state / hook_cli.session_folder(session)


def spooled(state: Path, session: str) -> list[dict[str, Any]]:
    path = folder(state, session) / "spool.jsonl"
    return [orjson.loads(x) for x in path.read_bytes().splitlines()] if path.exists() else []


@pytest.mark.usefixtures("no_broker")
def test_a_session_id_never_leaves_the_state_dir(tmp_path: Path) -> None:
    state = tmp_path / "state"
    for session in ("..", ".", "../../x", "/abs/path", "a/../../b", "\n", ""):
        call(state, session, "UserPromptSubmit", prompt="hello")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state"]
    names = [p.name for p in state.iterdir()]
    assert len(names) == 7 and all("/" not in n and n.strip(".") for n in names)


@pytest.mark.usefixtures("no_broker")
def test_ids_that_print_alike_get_their_own_folders_and_goals(tmp_path: Path) -> None:
    call(tmp_path, "col/1", "UserPromptSubmit", prompt="Goal of col/1")
    call(tmp_path, "col_1", "UserPromptSubmit", prompt="Goal of col_1")
    assert folder(tmp_path, "col/1") != folder(tmp_path, "col_1")
    for session in ("col/1", "col_1"):
        journal = (folder(tmp_path, session) / "journal.jsonl").read_bytes().splitlines()
        assert [orjson.loads(x)["payload"]["prompt"] for x in journal] == [f"Goal of {session}"]
        runs = {e["run_id"] for e in spooled(tmp_path, session)}
        assert runs == {f"claude-code-jsonl:{session}"}


@pytest.mark.timeout(60)
@pytest.mark.usefixtures("no_broker")
def test_a_fifo_transcript_does_not_hang_the_stop(tmp_path: Path) -> None:
    fifo = tmp_path / "transcript.jsonl"
    os.mkfifo(fifo)
    state = tmp_path / "state"
    call(state, "s", "UserPromptSubmit", prompt="Do it.")
    message = call(state, "s", "Stop", transcript_path=str(fifo))
    assert message is not None and "not a regular file (a FIFO)" in message
    types = [e["type"] for e in spooled(state, "s")]
    assert "finalize.requested" in types


@pytest.mark.usefixtures("no_broker")
def test_a_transcript_the_reader_fails_on_still_finalises(tmp_path: Path) -> None:
    transcript = tmp_path / "deep.jsonl"
    deep = "[" * 100_000 + "]" * 100_000
    transcript.write_text(f'{{"type": "user", "message": {{"content": {deep}}}}}\n')
    state = tmp_path / "state"
    call(state, "s", "UserPromptSubmit", prompt="Do it.")
    call(state, "s", "Stop", transcript_path=str(transcript))
    types = [e["type"] for e in spooled(state, "s")]
    assert "finalize.requested" in types


@pytest.mark.usefixtures("no_broker")
def test_a_payload_the_derivation_fails_on_keeps_the_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from outcomes.importers.trace import Message

    real = hook_cli.derive

    def derive(trace: Any, run_id: str, *, whole: bool = True) -> list[dict[str, Any]]:
        if any(isinstance(s, Message) and s.text == "poison" for s in trace.steps):
            raise OverflowError("date value out of range")
        return real(trace, run_id, whole=whole)

    monkeypatch.setattr(hook_cli, "derive", derive)
    call(tmp_path, "s", "UserPromptSubmit", prompt="Do it.")
    message = call(tmp_path, "s", "Stop", last_assistant_message="poison")
    assert message is not None and "payload(s) 1 not derived (OverflowError" in message
    types = [e["type"] for e in spooled(tmp_path, "s")]
    assert "finalize.requested" in types
    # and the session goes on: a later payload is mapped and derived as usual
    call(tmp_path, "s", "SessionEnd", reason="other")
    assert [e["type"] for e in spooled(tmp_path, "s")].count("finalize.requested") == 1


@pytest.mark.usefixtures("no_broker")
def test_each_payload_is_mapped_once_and_the_events_are_the_whole_journals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from outcomes.importers.claude_hooks import live_trace
    from outcomes.importers.derive import derive

    mapped: list[int] = []
    real = hook_cli.steps_of

    def steps_of(number: int, at: int, payload: dict[str, Any]) -> Any:
        mapped.append(number)
        return real(number, at, payload)

    monkeypatch.setattr(hook_cli, "steps_of", steps_of)
    sent = [
        ("SessionStart", {"source": "startup"}),
        ("UserPromptSubmit", {"prompt": "Run the tests."}),
        ("PostToolUse", {"tool_name": "Bash", "tool_use_id": "t1",
                         "tool_input": {"command": "echo '" + "x" * 100_000 + "' && pytest -q"},
                         "tool_response": {"stdout": "3 passed in 0.1s", "stderr": ""}}),
        ("PostToolUse", {"tool_name": "Bash", "tool_use_id": "t2",
                         "tool_input": {"command": "ls"}, "tool_response": {"stdout": "a"}}),
        ("Stop", {"last_assistant_message": "Tests pass."}),
        ("SessionEnd", {"reason": "other"}),
    ]  # fmt: skip
    for event, fields in sent:
        call(tmp_path, "s", event, **fields)
    assert mapped == list(range(len(sent)))  # each payload once, across six calls
    journal = (folder(tmp_path, "s") / "journal.jsonl").read_bytes().splitlines()
    entries = [orjson.loads(x) for x in journal]
    whole = derive(live_trace("/nowhere/s.jsonl", entries), "claude-code-jsonl:s", whole=False)
    assert spooled(tmp_path, "s") == whole


@pytest.mark.usefixtures("no_broker")
def test_a_busy_session_lock_is_waited_on_for_a_bounded_time(tmp_path: Path) -> None:
    call(tmp_path, "s", "UserPromptSubmit", prompt="Do it.")
    with (folder(tmp_path, "s") / "lock").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        started = time.monotonic()
        message = call(tmp_path, "s", "Stop", lock_wait=0.3, last_assistant_message="Done.")
        waited = time.monotonic() - started
        fcntl.flock(held, fcntl.LOCK_UN)
    assert message is not None and "journaled" in message
    assert waited < 5  # bounded by --lock-wait, not by the other call
    assert "finalize.requested" not in [e["type"] for e in spooled(tmp_path, "s")]
    call(tmp_path, "s", "SessionEnd", reason="other")  # maps the Stop journaled above
    texts = [e.get("text") for e in spooled(tmp_path, "s") if e["type"] == "narrative.submitted"]
    assert texts == ["Done."]


def test_a_payload_past_the_cap_is_one_line(tmp_path: Path) -> None:
    message = hook_cli._handle(
        b" " * (hook_cli.MAX_PAYLOAD_BYTES + 1), tmp_path, None, 1, None, None
    )
    assert message == (
        f"outcomes hook: error: the hook input is larger than {hook_cli.MAX_PAYLOAD_BYTES} bytes"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.usefixtures("no_broker")
def test_a_huge_tool_output_is_kept_as_its_start_and_end(tmp_path: Path) -> None:
    from outcomes.importers.claude_hooks import MAX_OUTPUT_CHARS

    lines = "".join(f"tests/test_a.py::test_{i} PASSED\n" for i in range(200_000))
    stdout = lines + "===== 200000 passed in 9.10s ====="
    assert len(stdout) > 10 * MAX_OUTPUT_CHARS
    call(tmp_path, "s", "UserPromptSubmit", prompt="Run the tests.")
    response = {"stdout": stdout, "stderr": ""}
    tool = {"tool_name": "Bash", "tool_use_id": "t1", "tool_input": {"command": "pytest -v"}}
    call(tmp_path, "s", "PostToolUse", tool_response=response, **tool)
    (row,) = [
        orjson.loads(x)
        for x in (folder(tmp_path, "s") / "steps.jsonl").read_bytes().splitlines()
        if orjson.loads(x)["steps"] and orjson.loads(x)["steps"][0]["step"] == "ToolCall"
    ]
    kept = row["steps"][0]["output"]
    assert len(kept) < MAX_OUTPUT_CHARS + 100
    assert kept.startswith(stdout[:1000]) and kept.endswith(stdout[-1000:])
    assert f"[{len(stdout) - MAX_OUTPUT_CHARS} characters left out by the hook]" in kept
    receipts = [e for e in spooled(tmp_path, "s") if e["type"] == "verification.receipt"]
    assert [(r["result"], r["tests_executed"]) for r in receipts] == [("pass", 200_000)]
