"""The Claude Code Stop hook and the pre-display gate end to end (SPEC 8): the payload
sequence of a real Claude Code session of the corpus in `../shared/agent-traces` (read
where it is; SessionStart, UserPromptSubmit, PostToolUse… as Claude Code sends them) goes
through `outcomes hook claude-code` to the real broker, an `outcomes worker` folds it and
serves the gate on its door. At the Stop, a final message the account contradicts is
blocked once, with the contradiction beside the account's fact; the Stop that follows
(`stop_hook_active`) goes through, contained, and its narrative reaches the worker's fold.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from outcomes.cli import hook as hook_cli
from outcomes.devtools.harness import Harness, KafkaConfig, Progress, wait_for
from outcomes.streams.sdk.gate import GateClient
from tests import test_hook_claude_code
from tests.conftest import require

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent
# A session whose account leaves a service start unknown (no receipt).
TRANSCRIPT = ROOT.parent / "shared" / "agent-traces" / "traces" / "cc-graph-monitor-session.jsonl"
TOKEN = "hook-gate-stream-token"
OVERCLAIM = "I committed and pushed the change; the monitor is deployed."


def hook(
    payload: dict[str, Any], state: Path, bootstrap: str, gate: str
) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", "outcomes.cli", "hook", "claude-code",
               "--state-dir", str(state), "--bootstrap", bootstrap, "--timeout", "5",
               "--gate-url", gate, "--gate-budget", "10"]  # fmt: skip
    env = {**os.environ, "OUTCOMES_GATE_TOKEN": TOKEN}
    return subprocess.run(command, input=orjson.dumps(payload), capture_output=True, cwd=ROOT,
                          env=env, timeout=120, check=False)  # fmt: skip


def test_the_stop_is_blocked_once_then_goes_through_contained(
    kafka_bootstrap: str,
    kafka_config: KafkaConfig,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    require(TRANSCRIPT.exists(), f"the Claude Code transcript {TRANSCRIPT} is missing")
    monkeypatch.setattr(test_hook_claude_code, "TRANSCRIPT", TRANSCRIPT)
    with Harness(kafka_config, kafka_bootstrap, tmp_path, "hookgate") as harness:
        worker = harness.worker("a", web=True)
        worker.env = {"OUTCOMES_GATE_TOKEN": TOKEN}
        worker.start()
        gate = f"http://127.0.0.1:{worker.web_port}"
        session = f"{harness.prefix}-session"
        run = f"claude-code-jsonl:{session}"
        state = tmp_path / "hook-state"
        *steps, stop, _end = test_hook_claude_code.payloads(session)
        for payload in steps:
            done = hook(payload, state, kafka_bootstrap, gate)
            assert done.returncode == 0 and done.stderr == b"", done.stderr
        progress = Progress(kafka_config, harness.app_id)
        try:  # the worker has joined its group and folded the session so far
            wait_for(progress.done, 120, "the worker to fold the hook's events", 0.5)
        finally:
            progress.close()

        first = hook({**stop, "last_assistant_message": OVERCLAIM}, state, kafka_bootstrap, gate)
        assert first.returncode == 0 and first.stderr == b"", first.stderr
        said = orjson.loads(first.stdout)
        assert said["decision"] == "block"
        assert "is contradicted" in said["reason"] and "unknown" in said["reason"], said
        assert "<outcome-account" in said["reason"]

        again = {**stop, "stop_hook_active": True, "last_assistant_message": OVERCLAIM}
        second = hook(again, state, kafka_bootstrap, gate)
        assert second.returncode == 0 and second.stderr == b"", second.stderr
        through = orjson.loads(second.stdout)
        assert "decision" not in through
        assert "could not be confirmed" in through["systemMessage"]

        folder = state / hook_cli.session_folder(session)
        decisions = [orjson.loads(x)["decision"] for x in (folder / "checks.jsonl").open("rb")]
        assert decisions == ["repair", "contain"]
        assert not (folder / "spool.jsonl").read_bytes()  # everything acknowledged
        published = (folder / "published.txt").read_text().split()
        derived = (folder / "derived.txt").read_text().split()
        # Every derived event went out but one: the blocked answer's narrative.
        assert len(set(derived) - set(published)) == 1 and len(published) == len(derived) - 1
        # The shown answer's narrative went last, and the worker's fold holds it: a check
        # at its position is not stale.
        client = GateClient(gate, token=TOKEN, budget=10.0)
        assert client.check_answer(run, "Done.", position=published[-1:]).decision != "stale"
        assert worker.alive(), worker.tail()
