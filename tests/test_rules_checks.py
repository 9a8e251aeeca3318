"""SPEC 3.3: which receipt decides a check, staleness, reason precedence, the `checks` list."""

from __future__ import annotations

from typing import Any

from tests.builders import (
    RunBuilder,
    account_of,
    artifact,
    check,
    contradictions,
    predicate,
    predicate_ids,
    verdict,
)


def test_latest_receipt_decides_and_a_rerun_is_not_a_contradiction() -> None:
    b = RunBuilder()
    first = b.receipt(result="fail")
    rerun = b.receipt(result="pass")
    account = account_of([b.goal(checks=["unit"]), b.snapshot(), first, rerun, b.finalize()])
    assert verdict(account, "check:unit") == ("satisfied", "passing")
    assert check(account, "unit")["check_id"] == rerun["check_id"]
    assert predicate(account, "check:unit")["evidence"] == [rerun["event_id"]]
    assert account["contradictions"] == []


def test_latest_is_by_occurred_at_not_by_arrival() -> None:
    b = RunBuilder()
    late_pass = b.receipt(result="pass", at=20)
    early_fail = b.receipt(result="fail", at=10)
    events = [b.goal(checks=["unit"]), b.snapshot(at=1), late_pass, early_fail, b.finalize(at=30)]
    assert verdict(account_of(events), "check:unit") == ("satisfied", "passing")


def test_same_occurred_at_is_ordered_by_event_id() -> None:
    b = RunBuilder()
    fail = b.receipt(result="fail", at=10, event_id="r-b")
    passed = b.receipt(result="pass", at=10, event_id="r-a")
    events = [b.goal(checks=["unit"]), b.snapshot(at=1), fail, passed, b.finalize(at=30)]
    assert verdict(account_of(events), "check:unit") == ("unsatisfied", "failing")


def test_stale_when_a_sensitive_artifact_digest_differs() -> None:
    b = RunBuilder()
    events = [
        b.goal(checks=["unit"]),
        b.snapshot("snap-1", [artifact("cfg.toml", digest="d1")]),
        b.receipt(snapshot="snap-1"),
        b.snapshot("snap-2", [artifact("cfg.toml", digest="d2")]),
        b.finalize("snap-2"),
    ]
    account = account_of(events)
    assert verdict(account, "check:unit") == ("indeterminate", "stale")
    assert check(account, "unit")["state"] == "stale"


def test_stale_when_a_sensitive_artifact_is_added_to_the_candidate() -> None:
    b = RunBuilder()
    events = [
        b.goal(checks=["unit"]),
        b.snapshot("snap-1", ["src/app.py"]),
        b.receipt(snapshot="snap-1"),
        b.snapshot("snap-2", ["src/app.py", artifact("config/retry.toml", sensitive=True)]),
        b.finalize("snap-2"),
    ]
    assert verdict(account_of(events), "check:unit") == ("indeterminate", "stale")


def test_stale_when_a_sensitive_artifact_of_the_receipt_snapshot_is_gone() -> None:
    b = RunBuilder()
    events = [
        b.goal(checks=["unit"]),
        b.snapshot("snap-1", ["src/app.py", artifact("src/gone.py", sensitive=True)]),
        b.receipt(snapshot="snap-1"),
        b.snapshot("snap-2", ["src/app.py"]),
        b.finalize("snap-2"),
    ]
    assert verdict(account_of(events), "check:unit") == ("indeterminate", "stale")


def test_not_stale_when_only_non_sensitive_artifacts_differ() -> None:
    b = RunBuilder()
    events = [
        b.goal(checks=["unit"]),
        b.snapshot("snap-1", ["src/app.py", artifact("README.md", digest="r1", sensitive=False)]),
        b.receipt(snapshot="snap-1", result="pass"),
        b.snapshot(
            "snap-2",
            [
                "src/app.py",
                artifact("README.md", digest="r2", sensitive=False),
                artifact("CHANGELOG.md", sensitive=False),
            ],
        ),
        b.finalize("snap-2"),
    ]
    account = account_of(events)
    assert verdict(account, "check:unit") == ("satisfied", "passing")
    assert check(account, "unit")["state"] == "passing"


def test_eligible_receipt_on_another_snapshot_is_judged_as_on_the_candidate() -> None:
    b = RunBuilder()
    events = [
        b.goal(checks=["unit"]),
        b.snapshot("snap-1", ["src/app.py"]),
        b.receipt(snapshot="snap-1", result="fail"),
        b.snapshot("snap-2", ["src/app.py", artifact("notes.txt", sensitive=False)]),
        b.finalize("snap-2"),
    ]
    assert verdict(account_of(events), "check:unit") == ("unsatisfied", "failing")


def test_stale_when_the_receipt_snapshot_was_never_reported() -> None:
    b = RunBuilder()
    events = [
        b.goal(checks=["unit"]),
        b.snapshot("snap-2"),
        b.receipt(snapshot="snap-ghost"),
        b.finalize("snap-2"),
    ]
    account = account_of(events)
    assert verdict(account, "check:unit") == ("indeterminate", "stale")
    assert check(account, "unit")["candidate_snapshot"] == "snap-ghost"


def test_without_a_candidate_snapshot_a_receipt_is_never_stale() -> None:
    b = RunBuilder()
    events = [b.goal(checks=["unit"]), b.receipt(snapshot="snap-ghost"), b.finalize(None)]
    account = account_of(events)
    assert verdict(account, "check:unit") == ("satisfied", "passing")
    assert check(account, "unit")["state"] == "passing"


# -- reason precedence: missing, stale, contradiction, failing, indeterminate, zero_tests,
#    scope_insufficient, passing -----------------------------------------------------------


def _stale_run(**receipt: Any) -> tuple[str, str]:
    """`check:unit` for a receipt on snap-1 when the candidate snap-2 changed a sensitive file."""
    b = RunBuilder()
    events = [
        b.goal(checks=["unit"]),
        b.snapshot("snap-1", [artifact("cfg.toml", digest="d1")]),
        b.receipt(snapshot="snap-1", **receipt),
        b.snapshot("snap-2", [artifact("cfg.toml", digest="d2")]),
        b.finalize("snap-2"),
    ]
    return verdict(account_of(events), "check:unit")


def test_stale_beats_failing() -> None:
    assert _stale_run(result="fail") == ("indeterminate", "stale")


def test_stale_beats_zero_tests() -> None:
    assert _stale_run(result="pass", tests=0) == ("indeterminate", "stale")


def test_stale_beats_scope_insufficient() -> None:
    assert _stale_run(scope="focused") == ("indeterminate", "stale")


def test_stale_beats_contradiction() -> None:
    b = RunBuilder()
    events = [
        b.goal(checks=["unit"]),
        b.snapshot("snap-1", [artifact("out.py", "added", digest="d1")]),
        b.receipt(snapshot="snap-1", expected_artifacts=["out.py"]),
        b.snapshot("snap-2", [artifact("out.py", "deleted", digest=None)]),
        b.finalize("snap-2"),
    ]
    account = account_of(events)
    assert verdict(account, "check:unit") == ("indeterminate", "stale")
    assert contradictions(account, "check_pass_artifact_missing") == []


def test_contradiction_beats_scope_insufficient() -> None:
    b = RunBuilder()
    events = [
        b.goal(checks=[("unit", "suite")]),
        b.snapshot(artifacts=[artifact("out.py", "excluded")]),
        b.receipt(scope="focused", expected_artifacts=["out.py"]),
        b.finalize(),
    ]
    assert verdict(account_of(events), "check:unit") == ("indeterminate", "contradiction")


def test_zero_tests_beats_scope_insufficient() -> None:
    b = RunBuilder()
    events = [
        b.goal(checks=[("unit", "suite")]),
        b.snapshot(),
        b.receipt(scope="focused", tests=0),
        b.finalize(),
    ]
    assert verdict(account_of(events), "check:unit") == ("unsatisfied", "zero_tests")


def test_failing_focused_receipt_is_failing_not_scope_insufficient() -> None:
    b = RunBuilder()
    events = [
        b.goal(checks=[("unit", "suite")]),
        b.snapshot(),
        b.receipt(scope="focused", result="fail"),
        b.finalize(),
    ]
    assert verdict(account_of(events), "check:unit") == ("unsatisfied", "failing")


def test_indeterminate_focused_receipt_is_indeterminate_not_scope_insufficient() -> None:
    b = RunBuilder()
    events = [
        b.goal(checks=[("unit", "suite")]),
        b.snapshot(),
        b.receipt(scope="focused", result="indeterminate"),
        b.finalize(),
    ]
    assert verdict(account_of(events), "check:unit") == ("indeterminate", "indeterminate")


# -- the checks list --------------------------------------------------------------------


def test_checks_lists_non_required_labels_and_they_never_change_the_status() -> None:
    b = RunBuilder()
    events = [
        b.goal(checks=["unit"]),
        b.snapshot(),
        b.receipt("unit", "pass"),
        b.receipt("lint", "fail"),
        b.finalize(),
    ]
    account = account_of(events)
    lint = check(account, "lint")
    assert (lint["state"], lint["result"], lint["required"]) == ("failing", "fail", False)
    assert "check:lint" not in predicate_ids(account)
    assert account["status"] == "complete"


def test_checks_lists_a_required_label_without_receipt_as_missing() -> None:
    b = RunBuilder()
    account = account_of([b.goal(checks=["unit", "e2e"]), b.snapshot(), b.finalize()])
    assert check(account, "e2e") == {
        "label": "e2e",
        "state": "missing",
        "result": None,
        "scope": None,
        "tests_executed": None,
        "candidate_snapshot": None,
        "check_id": None,
        "required": True,
    }
    assert verdict(account, "check:e2e") == ("unsatisfied", "missing")
    assert [c["label"] for c in account["checks"]] == ["e2e", "unit"]


def test_checks_row_carries_the_deciding_receipt() -> None:
    b = RunBuilder()
    receipt = b.receipt("unit", "pass", tests=42, scope="suite")
    account = account_of([b.goal(checks=["unit"]), b.snapshot(), receipt, b.finalize()])
    row = check(account, "unit")
    assert row["check_id"] == receipt["check_id"]
    assert (row["state"], row["result"], row["tests_executed"]) == ("passing", "pass", 42)
    assert (row["candidate_snapshot"], row["scope"], row["required"]) == ("snap-1", "suite", True)


def test_zero_tests_row_state_is_zero_tests() -> None:
    b = RunBuilder()
    receipt = b.receipt(tests=0)
    account = account_of([b.goal(checks=["unit"]), b.snapshot(), receipt, b.finalize()])
    assert check(account, "unit")["state"] == "zero_tests"
