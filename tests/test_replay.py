"""`outcomes replay`: validation with dead letters, determinism, the summary line."""

from __future__ import annotations

import base64
import gc
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from outcomes.cli.main import main
from outcomes.devtools.workload import MALFORMED_LINES, generate_runs, interleave
from outcomes.reducers.engine import Engine
from outcomes.reducers.limits import Limits
from outcomes.streams.replay import ReplayStats, jsonl_items, replay_items

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "five_file_run.jsonl"

GOOD = {
    "event_id": "e-1",
    "run_id": "run-v",
    "type": "tool.finished",
    "occurred_at": "2026-11-30T10:00:00Z",
    "source": "worker",
    "action_id": "a1",
    "tool": "shell",
    "outcome": "succeeded",
    "error_class": None,
}


def replay_lines(
    tmp_path: Path, lines: list[bytes], *args: str
) -> tuple[list[dict[str, Any]], str]:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    result = CliRunner().invoke(main, ["replay", str(path), *args])
    records = [json.loads(line) for line in result.stdout.splitlines()]
    letters = [r for r in records if r["record"] == "dead_letter"]
    # Any rejected event: its `file:line: reason: message` on stderr, and exit code 1.
    assert result.exit_code == (1 if letters else 0), result.output
    for letter in letters:
        where = f"{letter['origin_file']}:{letter['origin_line']}"
        assert f"{where}: {letter['reason']}: {letter['message']}\n" in result.stderr
    return records, result.stderr


def event(**changes: Any) -> bytes:
    body = {**GOOD, **changes}
    return json.dumps({k: v for k, v in body.items() if v is not ...}).encode()


@pytest.mark.parametrize(
    ("line", "reason", "in_message"),
    [
        (event(extra_field=1), "schema_violation", "unknown field(s) extra_field"),
        (event(tool=7), "schema_violation", "tool: expected a string"),
        (event(outcome="exploded"), "schema_violation", "outcome: 'exploded' is not one of"),
        (event(tool=...), "schema_violation", "tool: missing"),
        (event(type="tool.vanished"), "schema_violation", "unknown event type"),
        (event(occurred_at="2026-11-30 10:00"), "schema_violation", "occurred_at"),
        (event(occurred_at="2026-11-30T10:00:00"), "schema_violation", "occurred_at"),
        (event(event_id="x" * 129), "schema_violation", "event_id: must be 1..128"),
        (event(tool="x" * (64 * 1024 + 1)), "too_large", "tool: string of 65537 bytes"),
        (b"{not json", "undecodable", "not JSON"),
        (b"[1, 2]", "schema_violation", "expected an object"),
    ],
)
def test_each_invalid_line_is_a_dead_letter_and_processing_goes_on(
    tmp_path: Path, line: bytes, reason: str, in_message: str
) -> None:
    finalize = event(event_id="e-2", type="finalize.requested", candidate_snapshot=None,
                     action_id=..., tool=..., outcome=..., error_class=...)  # fmt: skip
    records, stderr = replay_lines(tmp_path, [line, event(), finalize])
    dead = [r for r in records if r["record"] == "dead_letter"]
    assert len(dead) == 1
    letter = dead[0]
    assert letter["reason"] == reason
    assert in_message in letter["message"]
    assert letter["origin_line"] == 1
    assert letter["origin_file"].endswith("events.jsonl")
    assert base64.b64decode(letter["raw"]) == line
    assert letter["dead_letter_id"] == f"file:{letter['origin_file']}:1"
    # The valid events after it were applied: an account exists for the run.
    assert any(r["record"] == "account_revision" for r in records)
    assert "events read 3, applied 2, redelivered 0, rejected 1, revisions 1" in stderr


def test_a_list_over_the_limit_is_too_large(tmp_path: Path) -> None:
    goal = {
        **{k: GOOD[k] for k in ("event_id", "run_id", "occurred_at", "source")},
        "type": "goal.revised",
        "goal_revision": 1,
        "authored_by": "user",
        "deliverables": [f"f{i}" for i in range(Limits().max_list_items + 1)],
        "required_checks": [],
        "requested_effects": [],
        "requested_actions": [],
        "target_revision": None,
    }
    records, _ = replay_lines(tmp_path, [json.dumps(goal).encode()])
    assert [(r["reason"], "deliverables" in r["message"]) for r in records] == [("too_large", True)]


GOAL = {
    **{k: GOOD[k] for k in ("event_id", "run_id", "occurred_at", "source")},
    "type": "goal.revised",
    "goal_revision": 1,
    "authored_by": "user",
    "deliverables": ["src/app.py"],
    "required_checks": [{"label": "unit", "scope": "suite"}],
    "requested_effects": [],
    "requested_actions": [],
    "target_revision": None,
}


@pytest.mark.parametrize(
    ("changes", "reason", "message"),
    [
        ({"deliverables": ["a", 7]}, "schema_violation", "deliverables[1]: expected a string"),
        ({"deliverables": ["x" * (64 * 1024 + 1)]}, "too_large", "deliverables[0]: string of"),
        (
            {"required_checks": [{"label": "u", "scope": "suite"}, {"label": "l", "scope": "x"}]},
            "schema_violation",
            "required_checks[1].scope: 'x' is not one of focused, suite",
        ),
        ({"required_checks": [{"label": "u"}]}, "schema_violation", "required_checks[0].scope"),
        ({"required_checks": [5]}, "schema_violation", "required_checks[0]: expected an object"),
        ({"occurred_at": 1.5}, "schema_violation", "occurred_at: expected an RFC 3339"),
    ],
)
def test_a_violation_inside_a_list_names_the_item(
    tmp_path: Path, changes: dict[str, Any], reason: str, message: str
) -> None:
    records, _ = replay_lines(tmp_path, [json.dumps({**GOAL, **changes}).encode()])
    assert [(r["reason"], r["message"].startswith(message)) for r in records] == [(reason, True)]


def test_an_event_over_the_size_limit_is_too_large_without_being_parsed(tmp_path: Path) -> None:
    huge = b'{"padding": "' + b"x" * (Limits().max_event_bytes + 1) + b'"}'
    records, _ = replay_lines(tmp_path, [huge, event()])
    assert records[0]["record"] == "dead_letter"
    assert records[0]["reason"] == "too_large"
    assert "exceeds 1048576" in records[0]["message"]


def test_the_same_event_id_with_other_content_is_an_event_id_conflict(tmp_path: Path) -> None:
    records, _ = replay_lines(tmp_path, [event(), event(outcome="failed"), event()])
    dead = [r for r in records if r["record"] == "dead_letter"]
    assert [(d["reason"], d["origin_line"], d["event_id"]) for d in dead] == [
        ("event_id_conflict", 2, "e-1")
    ]


def test_the_workload_malformed_lines_all_dead_letter(tmp_path: Path) -> None:
    records, stderr = replay_lines(tmp_path, list(MALFORMED_LINES))
    assert [r["record"] for r in records] == ["dead_letter"] * len(MALFORMED_LINES)
    assert f"rejected {len(MALFORMED_LINES)}" in stderr


def test_replay_output_is_byte_identical_across_runs(tmp_path: Path) -> None:
    events = interleave(list(generate_runs(70, seed=11, padding=2)), seed=11)
    source = tmp_path / "mix.jsonl"
    source.write_text("".join(json.dumps(e) + "\n" for e in events))
    outputs = []
    for attempt in range(2):
        out = tmp_path / f"out-{attempt}.jsonl"
        # A separate process each time: nothing may depend on hash seeds or process state.
        subprocess.run(
            [sys.executable, "-m", "outcomes.cli", "replay", str(source), "--out", str(out)],
            check=True, capture_output=True, env={"PYTHONHASHSEED": str(attempt), "PATH": ""},
            cwd=ROOT,
        )  # fmt: skip
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    kinds = {json.loads(line)["record"] for line in outputs[0].splitlines()}
    assert kinds == {"account_revision", "notification", "provenance_row", "claim_verdict"}


def test_the_sample_tells_the_five_file_story(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["replay", str(SAMPLE)])
    assert result.exit_code == 0
    records = [json.loads(line) for line in result.stdout.splitlines()]
    revisions = [r for r in records if r["record"] == "account_revision"]
    assert [(r["revision"], r["status"]) for r in revisions] == [
        (1, "unresolved"),
        (2, "unresolved"),
        (3, "complete"),
    ]
    notifications = [r for r in records if r["record"] == "notification"]
    assert [n["kind"] for n in notifications] == [
        "account.final",
        "account.superseded",
        "account.superseded",
    ]
    assert "events read 16, applied 15, redelivered 1, rejected 0, revisions 3" in result.stderr
    # The final answer's three contradicted claims settle as the account improves.
    verdicts = [r for r in records if r["record"] == "claim_verdict"]
    assert [(v["settlement"], v["account_revision"], v["verdict"]) for v in verdicts] == [
        (1, 1, "contradicted"),
        (1, 1, "contradicted"),
        (1, 1, "contradicted"),
        (2, 2, "supported"),
        (2, 3, "supported"),
        (2, 3, "supported"),
    ]
    notices = [r for r in records if r["record"] == "claim_notification"]
    assert [(n["revision"], len(n["verdict_ids"])) for n in notices] == [(2, 1), (3, 2)]


def test_replay_leaves_no_reference_cycles_behind(tmp_path: Path) -> None:
    """`outcomes replay` freezes what it has allocated (gc.freeze) instead of letting the
    collector re-scan it; that is only safe if the fold never makes cyclic garbage, which
    only the collector could free. Valid events, redeliveries and dead letters alike."""
    events = interleave(list(generate_runs(30, seed=5, padding=3)), seed=5)
    lines = [json.dumps(e).encode() for e in events]
    lines += [lines[3], event(), event(outcome="failed"), *MALFORMED_LINES]
    source = tmp_path / "mix.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    gc.collect()
    gc.disable()
    try:
        stats = ReplayStats()
        limits = Limits()
        for record in replay_items(jsonl_items(source, limits), Engine(), limits, stats):
            record.to_json_line()
        assert stats.rejected == len(MALFORMED_LINES) + 1
        assert stats.redelivered == 1
        assert gc.collect() == 0
    finally:
        gc.enable()
