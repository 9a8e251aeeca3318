"""The Claude Code Stop hook asks the pre-display gate (cli/hook_gate.py, SPEC 8).

In process: a real door with a gate, whose desk a thread serves over the states the
reducers fold (as the worker's loop would), and in place of the broker a stand-in that
acknowledges each event and hands it to that fold, so the hook's position is read back
from the account it checks against. The payloads are written here in the form Claude
Code documents (session_id, transcript_path, cwd, hook_event_name; tool_name,
tool_input, tool_use_id, tool_response; last_assistant_message and stop_hook_active at
a Stop). The broker stopped (an unreachable bootstrap) is the real producer's timeout.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from outcomes.cli import hook as hook_cli
from tests.gate_support import GateWorker

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "hook-gate-token"
SESSION = "gate-session-1"
RUN = f"claude-code-jsonl:{SESSION}"
BASE = {"session_id": SESSION, "transcript_path": "/nowhere/s.jsonl", "cwd": "/w"}
SESSION_PAYLOADS: list[dict[str, Any]] = [
    {"hook_event_name": "SessionStart", "source": "startup"},
    {"hook_event_name": "UserPromptSubmit", "prompt": "Fix the failing test in calc.py"},
    {
        "hook_event_name": "PostToolUse",
        "tool_name": "Edit",
        "tool_use_id": "toolu_1",
        "tool_input": {"file_path": "/w/calc.py", "old_string": "a - b", "new_string": "a + b"},
        "tool_response": {"filePath": "/w/calc.py"},
    },
    {
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_use_id": "toolu_2",
        "tool_input": {"command": "python -m pytest -q"},
        "tool_response": {
            "stdout": "F..\nFAILED test_calc.py::test_sub\n1 failed, 2 passed in 0.05s",
            "stderr": "",
            "interrupted": False,
        },
    },
]
FALSE = "I fixed calc.py and all tests pass."
TRUE = "I changed calc.py, but the pytest check still fails."


class Broker:
    """Stands in for the broker: acknowledges every event and (unless `folds` is off)
    hands it to the worker's fold, as the real pipeline would."""

    def __init__(self, worker: GateWorker) -> None:
        self.worker = worker
        self.folds = True
        self.published: list[dict[str, Any]] = []

    def publish(
        self, events: list[dict[str, Any]], timeout: float, bootstrap: str | None, reg: str | None
    ) -> tuple[set[str], list[tuple[dict[str, Any], str]], str | None]:
        self.published += events
        if self.folds:
            self.worker.replay.apply(*events)
        return {e["event_id"] for e in events}, [], None

    def narratives(self) -> list[str]:
        return [e["text"] for e in self.published if e["type"] == "narrative.submitted"]


@pytest.fixture
def worker() -> Iterator[GateWorker]:
    w = GateWorker(TOKEN)
    try:
        yield w
    finally:
        w.close()


@pytest.fixture
def broker(worker: GateWorker, monkeypatch: pytest.MonkeyPatch) -> Broker:
    b = Broker(worker)
    monkeypatch.setattr(hook_cli, "_publish", b.publish)
    monkeypatch.setenv("OUTCOMES_GATE_TOKEN", TOKEN)
    monkeypatch.delenv("OUTCOMES_GATE_URL", raising=False)
    return b


def run_hook(state: Path, payload: dict[str, Any], *args: str) -> Any:
    data = orjson.dumps({**BASE, **payload})
    return CliRunner().invoke(hook_cli.claude_code, ["--state-dir", str(state), *args], input=data)


def session(state: Path, gate: str, *extra: str) -> None:
    for payload in SESSION_PAYLOADS:
        result = run_hook(state, payload, "--gate-url", gate, *extra)
        assert result.exit_code == 0 and result.stdout == "" and result.stderr == "", result


def stop(state: Path, gate: str, text: str, active: bool = False, *extra: str) -> Any:
    payload = {"hook_event_name": "Stop", "stop_hook_active": active,
               "last_assistant_message": text}  # fmt: skip
    result = run_hook(state, payload, "--gate-url", gate, *extra)
    assert result.exit_code == 0, result
    return result


def checks(state: Path) -> list[dict[str, Any]]:
    path = state / hook_cli.session_folder(SESSION) / "checks.jsonl"
    return [orjson.loads(x) for x in path.read_bytes().splitlines()]


def test_a_contradicted_answer_blocks_once_then_a_true_repair_passes(
    tmp_path: Path, worker: GateWorker, broker: Broker
) -> None:
    session(tmp_path, worker.url)
    blocked = stop(tmp_path, worker.url, FALSE)
    said = orjson.loads(blocked.stdout)
    assert said["decision"] == "block"
    reason = said["reason"]
    assert '"all tests pass" is contradicted: the pytest -q check failed' in reason, reason
    assert "<outcome-account" in reason  # the state block the repair may use
    assert broker.narratives() == []  # the contradicted answer is not the run's narrative
    finalized = [e for e in broker.published if e["type"] == "finalize.requested"]
    assert len(finalized) == 1  # the rest of the Stop went out before the check
    passed = stop(tmp_path, worker.url, TRUE, True)
    assert "decision" not in (orjson.loads(passed.stdout) if passed.stdout else {})
    assert broker.narratives() == [TRUE]
    assert [(c["decision"], c["attempt"]) for c in checks(tmp_path)] == [
        ("repair", 1),
        ("pass", 2),
    ]
    assert len({c["chain_id"] for c in checks(tmp_path)}) == 1


def test_a_repaired_answer_that_still_contradicts_is_let_through_and_contained(
    tmp_path: Path, worker: GateWorker, broker: Broker
) -> None:
    session(tmp_path, worker.url)
    assert orjson.loads(stop(tmp_path, worker.url, FALSE).stdout)["decision"] == "block"
    again = stop(tmp_path, worker.url, FALSE + " Sorry for the confusion.")  # not active
    said = orjson.loads(again.stdout)
    assert "decision" not in said and "could not be confirmed" in said["systemMessage"]
    assert broker.narratives() == [FALSE + " Sorry for the confusion."]  # what was shown
    assert [c["decision"] for c in checks(tmp_path)] == ["repair", "contain"]
    # The chain is over: the next answer (a new prompt) may be blocked again.
    run_hook(tmp_path, {"hook_event_name": "UserPromptSubmit", "prompt": "and now?"},
             "--gate-url", worker.url)  # fmt: skip
    assert orjson.loads(stop(tmp_path, worker.url, FALSE).stdout)["decision"] == "block"


def test_stop_hook_active_is_never_blocked(
    tmp_path: Path, worker: GateWorker, broker: Broker
) -> None:
    session(tmp_path, worker.url)
    through = stop(tmp_path, worker.url, FALSE, True)
    said = orjson.loads(through.stdout)
    assert "decision" not in said and "systemMessage" in said
    assert broker.narratives() == [FALSE]
    assert [(c["decision"], c["attempt"]) for c in checks(tmp_path)] == [("contain", 2)]


def test_a_true_answer_passes_at_once(tmp_path: Path, worker: GateWorker, broker: Broker) -> None:
    session(tmp_path, worker.url)
    result = stop(tmp_path, worker.url, TRUE)
    assert "decision" not in (orjson.loads(result.stdout) if result.stdout else {})
    assert result.stderr == ""
    assert broker.narratives() == [TRUE]
    assert [c["decision"] for c in checks(tmp_path)] == ["pass"]


def test_no_gate_listening_fails_open_within_the_budget(
    tmp_path: Path, worker: GateWorker, broker: Broker
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, never listening: refused
        nobody = f"http://127.0.0.1:{sock.getsockname()[1]}"
        session(tmp_path, nobody)
        started = time.monotonic()
        result = stop(tmp_path, nobody, FALSE, False, "--gate-budget", "1")
        took = time.monotonic() - started
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert "shown unchecked" in line and "no answer from the gate" in line
    assert took < 1.0 + 2.0  # the budget, plus the publishing the stand-in makes instant
    assert broker.narratives() == [FALSE]
    assert [c["decision"] for c in checks(tmp_path)] == ["unchecked"]
    (record,) = [e for e in broker.published if e["type"] == "answer.checked"]
    assert record["decision"] == "unchecked" and record["answer_chain_id"].endswith(":unchecked")
    assert record["supported"] == record["contradicted"] == 0


def test_an_account_that_does_not_reach_the_position_is_stale_and_fails_open(
    tmp_path: Path, worker: GateWorker, broker: Broker
) -> None:
    session(tmp_path, worker.url)
    broker.folds = False  # acknowledged, but the worker's fold never gets there
    started = time.monotonic()
    result = stop(tmp_path, worker.url, FALSE, False, "--gate-budget", "1")
    took = time.monotonic() - started
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert "shown unchecked" in line and "events published" in line, line
    assert took < 1.0 + 2.0
    assert broker.narratives() == [FALSE]


def test_without_a_gate_the_stop_is_as_before(tmp_path: Path, broker: Broker) -> None:
    for payload in SESSION_PAYLOADS:
        assert run_hook(tmp_path, payload).stderr == ""
    result = run_hook(tmp_path, {"hook_event_name": "Stop", "last_assistant_message": FALSE})
    assert result.exit_code == 0 and result.stdout == "" and result.stderr == ""
    assert broker.narratives() == [FALSE]
    assert not (tmp_path / hook_cli.session_folder(SESSION) / "checks.jsonl").exists()


def test_with_the_broker_stopped_the_hook_exits_0_within_its_budget(
    tmp_path: Path, worker: GateWorker
) -> None:
    """The real producer against an unreachable bootstrap: the events stay in the spool,
    the gate is not asked (the account cannot hold them), the stop goes through."""
    command = [sys.executable, "-m", "outcomes.cli", "hook", "claude-code",
               "--state-dir", str(tmp_path), "--bootstrap", "127.0.0.1:1", "--timeout", "1",
               "--gate-url", worker.url, "--gate-budget", "1"]  # fmt: skip
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OUTCOMES_GATE_TOKEN": TOKEN}
    payload = {**BASE, "hook_event_name": "Stop", "last_assistant_message": FALSE}
    started = time.monotonic()
    done = subprocess.run(command, input=orjson.dumps(payload), capture_output=True, cwd=ROOT,
                          env=env, timeout=60, check=False)  # fmt: skip
    took = time.monotonic() - started
    assert done.returncode == 0 and done.stdout == b""
    (line,) = done.stderr.decode().splitlines()
    assert "shown unchecked" in line and "kept in" in line, line
    # The producer's 1 s and its close (2 s at most), the interpreter's start: inside
    # Claude Code's 30 s hook timeout even on a loaded machine.
    assert took < 25, took
    spool = tmp_path / hook_cli.session_folder(SESSION) / "spool.jsonl"
    kinds = [orjson.loads(x)["type"] for x in spool.read_bytes().splitlines()]
    assert "narrative.submitted" in kinds  # it goes with the next call, unchecked


def test_a_narrative_held_by_a_call_that_died_goes_out_with_the_next_call(
    tmp_path: Path, worker: GateWorker, broker: Broker
) -> None:
    session(tmp_path, worker.url)
    folder = tmp_path / hook_cli.session_folder(SESSION)
    orphan = {**broker.published[-1], "event_id": "held-by-a-dead-call"}
    (folder / "held.jsonl").write_bytes(orjson.dumps(orphan) + b"\n")
    result = run_hook(tmp_path, {"hook_event_name": "SessionEnd", "reason": "other"},
                      "--gate-url", worker.url)  # fmt: skip
    assert result.exit_code == 0 and result.stderr == ""
    ids = [e["event_id"] for e in broker.published]
    assert ids.count("held-by-a-dead-call") == 1  # published once, unchecked
    assert not (folder / "held.jsonl").exists()


def test_a_long_answer_is_checked_as_the_narrative_holds_it(
    tmp_path: Path, worker: GateWorker, broker: Broker
) -> None:
    session(tmp_path, worker.url)
    long = TRUE + " " + "x" * 70_000  # past the gate's 60,000 characters
    result = stop(tmp_path, worker.url, long)
    assert result.stderr == "", result.stderr  # checked, not refused
    (narrative,) = broker.narratives()
    assert narrative == long[:60_000]
    assert [c["decision"] for c in checks(tmp_path)] == ["pass"]
