"""`outcomes import --policy` and `outcomes hook claude-code --policy` (SPEC 3.2): a
requirement policy file becomes the goal's second revision; a bad one is one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson

from tests.cli_support import outcomes
from tests.test_import_formats import mini_swe_agent


def test_import_policy_is_the_goals_second_revision(tmp_path: Path) -> None:
    trace = tmp_path / "run.traj.json"
    trace.write_text(mini_swe_agent())
    policy = tmp_path / "policy.toml"
    policy.write_text('checks = ["npm run lint"]\ndeliverables = ["CHANGELOG.md"]\n')
    proc = outcomes("import", str(trace), "--policy", str(policy))
    assert proc.returncode == 0, proc.stderr
    goals = [e for e in map(orjson.loads, proc.stdout.splitlines()) if e["type"] == "goal.revised"]
    assert [g["authored_by"] for g in goals] == ["user", "product_rule"]
    assert [c["label"] for c in goals[1]["required_checks"]] == ["npm run lint"]
    assert goals[1]["deliverables"] == ["CHANGELOG.md"]


def test_import_without_a_policy_requires_what_the_run_did(tmp_path: Path) -> None:
    trace = tmp_path / "run.traj.json"
    trace.write_text(mini_swe_agent())
    proc = outcomes("import", str(trace))
    goals = [e for e in map(orjson.loads, proc.stdout.splitlines()) if e["type"] == "goal.revised"]
    assert len(goals) == 1 and [c["label"] for c in goals[0]["required_checks"]] == ["*"]


def test_a_bad_policy_is_one_line_and_exit_1(tmp_path: Path) -> None:
    trace = tmp_path / "run.traj.json"
    trace.write_text(mini_swe_agent())
    policy = tmp_path / "policy.toml"
    policy.write_text("checks = 3\n")
    proc = outcomes("import", str(trace), "--policy", str(policy))
    assert proc.returncode == 1 and proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("outcomes import: error:") and "checks" in line


def test_the_hook_keeps_going_under_the_default_when_its_policy_is_bad(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("nonsense = [\n")
    payload = {
        "session_id": "s-1",
        # A first prompt (a SessionStart alone sends nothing: run.started waits for it).
        "hook_event_name": "UserPromptSubmit",
        "prompt": "Fix the parser",
        "cwd": str(tmp_path),
        "transcript_path": str(tmp_path / "none.jsonl"),
    }
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "outcomes"),
            "hook",
            "claude-code",
            "--state-dir",
            str(tmp_path / "state"),
            "--policy",
            str(policy),
            "--bootstrap",
            "127.0.0.1:1",
            "--timeout",
            "0.5",
        ],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert "policy not applied" in done.stderr and "default is in force" in done.stderr
    (spool,) = (tmp_path / "state").glob("*/spool.jsonl")
    assert spool.read_text().strip()  # the session's events wait for the broker
