"""`outcomes chaos` without Kafka: the table it prints, and a failed check as the one
error line with exit code 1 (the scenarios themselves run in tests/test_chaos.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

import outcomes.cli.chaos
from outcomes.cli.main import main
from outcomes.devtools.chaos.checker import Check, Report
from outcomes.devtools.chaos.scenarios import SCENARIOS, Outcome, Plan


def _outcome(name: str, lost: tuple[str, ...] = ()) -> Outcome:
    report = Report((Check("accounts", 10, "runs' current accounts", lost=lost),))
    return Outcome(name, 21_142, 3, report, 6.25, 40.0, 7)


def _fake_run_all(
    outcomes: list[Outcome], seen: list[tuple[list[str], Plan]]
) -> Callable[..., list[Outcome]]:
    def run_all(
        names: Sequence[str],
        plan: Plan,
        *,
        port: int,
        workdir: Path | None,
        echo: Callable[[str], None],
        done: Callable[[Outcome], None],
    ) -> list[Outcome]:
        seen.append((list(names), plan))
        for outcome in outcomes:
            done(outcome)
        return outcomes

    return run_all


def test_all_runs_every_scenario_and_prints_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[list[str], Plan]] = []
    monkeypatch.setattr(
        outcomes.cli.chaos, "run_all", _fake_run_all([_outcome("worker-kill")], seen)
    )
    result = CliRunner().invoke(main, ["chaos", "--events", "500", "--repeats", "1"])
    assert result.exit_code == 0, result.output
    assert seen == [(list(SCENARIOS), Plan(500, 1, 0))]
    for header in ("scenario", "faults injected", "duplicated", "longest stall", "verdict"):
        assert header in result.stdout
    row = next(line for line in result.stdout.splitlines() if "worker-kill" in line)
    assert "21,142" in row and "6.2 s" in row and "PASS" in row
    assert "PASS accounts: 10 runs' current accounts" in result.stderr


def test_a_failed_check_is_one_error_line_and_exit_1(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[list[str], Plan]] = []
    failed = _outcome("sink-kill", lost=("run-1", "run-2"))
    monkeypatch.setattr(outcomes.cli.chaos, "run_all", _fake_run_all([failed], seen))
    result = CliRunner().invoke(main, ["chaos", "sink-kill"])
    assert result.exit_code == 1
    assert seen[0][0] == ["sink-kill"]
    assert "FAIL accounts: 10 runs' current accounts; 2 lost [run-1, run-2]" in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "outcomes chaos: error: 1 of 1 scenarios failed: sink-kill"
    )
    assert "FAIL" in next(line for line in result.stdout.splitlines() if "sink-kill" in line)


def test_an_unknown_scenario_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["chaos", "no-such-fault"])
    assert result.exit_code == 2
    assert "no-such-fault" in result.output
