"""SPEC 3.2: every predicate and every reason code of its table."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import RunBuilder, account_of, artifact, predicate, predicate_ids, verdict

# -- workspace.sealed --------------------------------------------------------------------


def test_workspace_sealed_is_satisfied_by_a_sealed_candidate() -> None:
    b = RunBuilder()
    snap = b.snapshot(sealed=True)
    account = account_of([b.goal(), snap, b.finalize("snap-1")])
    assert verdict(account, "workspace.sealed") == ("satisfied", "sealed")
    assert predicate(account, "workspace.sealed")["required"] is True
    assert predicate(account, "workspace.sealed")["evidence"] == [snap["event_id"]]


def test_workspace_sealed_is_unsatisfied_for_an_unsealed_candidate_on_cancel() -> None:
    b = RunBuilder()
    account = account_of([b.goal(), b.snapshot(sealed=False), b.cancelled()])
    assert account["candidate_snapshot"] == "snap-1"
    assert verdict(account, "workspace.sealed") == ("unsatisfied", "unsealed")


def test_workspace_sealed_is_indeterminate_when_the_candidate_conflicts() -> None:
    b = RunBuilder()
    events = [
        b.goal(),
        b.snapshot(artifacts=["a.py"]),
        b.snapshot(artifacts=["b.py"]),
        b.finalize("snap-1"),
    ]
    assert verdict(account_of(events), "workspace.sealed") == ("indeterminate", "conflict")


def test_workspace_sealed_is_absent_without_a_candidate_snapshot() -> None:
    b = RunBuilder()
    account = account_of([b.goal(), b.finalize(None)])
    assert account["candidate_snapshot"] is None
    assert "workspace.sealed" not in predicate_ids(account)


# -- candidate.target --------------------------------------------------------------------


def test_candidate_target_matches_the_goal_target_revision() -> None:
    b = RunBuilder()
    events = [b.goal(target_revision="abc"), b.snapshot(base_revision="abc"), b.finalize()]
    assert verdict(account_of(events), "candidate.target") == ("satisfied", "match")


def test_candidate_target_mismatch_is_unsatisfied() -> None:
    b = RunBuilder()
    events = [b.goal(target_revision="abc"), b.snapshot(base_revision="def"), b.finalize()]
    assert verdict(account_of(events), "candidate.target") == ("unsatisfied", "mismatch")


def test_candidate_target_is_unknown_when_the_snapshot_has_no_base_revision() -> None:
    b = RunBuilder()
    events = [b.goal(target_revision="abc"), b.snapshot(base_revision=None), b.finalize()]
    assert verdict(account_of(events), "candidate.target") == ("indeterminate", "unknown")


def test_candidate_target_is_unknown_without_a_candidate() -> None:
    b = RunBuilder()
    events = [b.goal(target_revision="abc"), b.finalize(None)]
    assert verdict(account_of(events), "candidate.target") == ("indeterminate", "unknown")


def test_candidate_target_is_unknown_when_the_candidate_conflicts() -> None:
    b = RunBuilder()
    events = [
        b.goal(target_revision="abc"),
        b.snapshot(base_revision="abc"),
        b.snapshot(base_revision="zzz"),
        b.finalize(),
    ]
    assert verdict(account_of(events), "candidate.target") == ("indeterminate", "unknown")


def test_candidate_target_is_only_required_when_the_goal_names_a_target() -> None:
    b = RunBuilder()
    account = account_of([b.goal(target_revision=None), b.snapshot(), b.finalize()])
    assert "candidate.target" not in predicate_ids(account)


# -- deliverable:<path> ------------------------------------------------------------------


@pytest.mark.parametrize("change", ["added", "modified", "generated", "renamed"])
def test_deliverable_present_in_the_candidate_is_satisfied(change: str) -> None:
    b = RunBuilder()
    renamed_from = "old/out.py" if change == "renamed" else None
    events = [
        b.goal(deliverables=["out.py"]),
        b.snapshot(artifacts=[artifact("out.py", change, renamed_from=renamed_from)]),
        b.finalize(),
    ]
    assert verdict(account_of(events), "deliverable:out.py") == ("satisfied", change)


@pytest.mark.parametrize("change", ["deleted", "excluded", "quarantined"])
def test_deliverable_removed_from_the_candidate_is_unsatisfied(change: str) -> None:
    b = RunBuilder()
    events = [
        b.goal(deliverables=["out.py"]),
        b.snapshot(artifacts=[artifact("out.py", change)]),
        b.finalize(),
    ]
    assert verdict(account_of(events), "deliverable:out.py") == ("unsatisfied", change)


def test_deliverable_not_listed_by_the_candidate_is_absent() -> None:
    b = RunBuilder()
    events = [b.goal(deliverables=["out.py"]), b.snapshot(artifacts=["other.py"]), b.finalize()]
    assert verdict(account_of(events), "deliverable:out.py") == ("unsatisfied", "absent")


def test_deliverable_without_a_candidate_is_absent() -> None:
    b = RunBuilder()
    events = [b.goal(deliverables=["out.py"]), b.finalize(None)]
    assert verdict(account_of(events), "deliverable:out.py") == ("unsatisfied", "absent")


def test_deliverable_of_a_conflicting_candidate_is_indeterminate() -> None:
    b = RunBuilder()
    events = [
        b.goal(deliverables=["out.py"]),
        b.snapshot(artifacts=["out.py"]),
        b.snapshot(artifacts=["out.py", "extra.py"]),
        b.finalize(),
    ]
    assert verdict(account_of(events), "deliverable:out.py") == ("indeterminate", "conflict")


# -- check:<label> -----------------------------------------------------------------------


def _check_run(receipt: dict[str, Any] | None = None, required: str = "suite") -> tuple[str, str]:
    """(state, reason) of `check:unit` on a sealed candidate `snap-1`, given one receipt."""
    b = RunBuilder()
    events = [b.goal(checks=[("unit", required)]), b.snapshot(), b.finalize()]
    if receipt is not None:
        events.append(b.receipt(**receipt))
    return verdict(account_of(events), "check:unit")


def test_check_passing() -> None:
    assert _check_run({"result": "pass", "tests": 3}) == ("satisfied", "passing")


def test_check_missing_when_no_receipt_exists() -> None:
    assert _check_run() == ("unsatisfied", "missing")


def test_check_failing() -> None:
    assert _check_run({"result": "fail"}) == ("unsatisfied", "failing")


def test_check_zero_tests_is_not_a_pass() -> None:
    assert _check_run({"result": "pass", "tests": 0}) == ("unsatisfied", "zero_tests")


def test_check_focused_receipt_never_satisfies_a_suite_requirement() -> None:
    assert _check_run({"scope": "focused"}) == ("unsatisfied", "scope_insufficient")


def test_check_suite_receipt_satisfies_a_focused_requirement() -> None:
    assert _check_run({"scope": "suite"}, required="focused") == ("satisfied", "passing")


def test_check_stale_when_the_receipt_snapshot_was_never_reported() -> None:
    assert _check_run({"snapshot": "snap-unknown"}) == ("indeterminate", "stale")


def test_check_indeterminate_result() -> None:
    assert _check_run({"result": "indeterminate"}) == ("indeterminate", "indeterminate")


def test_check_contradiction_when_a_pass_expects_a_deleted_artifact() -> None:
    b = RunBuilder()
    events = [
        b.goal(checks=["unit"]),
        b.snapshot(artifacts=[artifact("out.py", "deleted")]),
        b.finalize(),
        b.receipt(expected_artifacts=["out.py"]),
    ]
    assert verdict(account_of(events), "check:unit") == ("indeterminate", "contradiction")


# -- effect:<intent_id> ------------------------------------------------------------------


def _effect_verdict(*steps: tuple[str, dict[str, Any]]) -> tuple[str, str]:
    """(state, reason) of `effect:fx-1` after an intent and `(builder helper, kwargs)` steps."""
    b = RunBuilder()
    events = [b.goal(effects=["fx-1"]), b.effect_intent("fx-1")]
    for helper, kwargs in steps:
        events.append(getattr(b, helper)("fx-1", **kwargs))
    events.append(b.finalize(None))
    return verdict(account_of(events), "effect:fx-1")


def test_effect_completed_is_satisfied() -> None:
    assert _effect_verdict(("effect_transition", {"state": "completed"})) == (
        "satisfied",
        "completed",
    )


def test_effect_denied_is_unsatisfied_denied() -> None:
    step = ("effect_transition", {"state": "denied", "reason": "policy"})
    assert _effect_verdict(step) == ("unsatisfied", "denied")


def test_effect_failed_receipt_is_unsatisfied_failed() -> None:
    assert _effect_verdict(("effect_receipt", {"observed": "failed"})) == (
        "unsatisfied",
        "failed",
    )


def test_effect_compensated_is_unsatisfied_compensated() -> None:
    assert _effect_verdict(("effect_transition", {"state": "compensated"})) == (
        "unsatisfied",
        "compensated",
    )


def test_effect_disagreeing_receipts_are_indeterminate_contradiction() -> None:
    steps = (
        ("effect_receipt", {"observed": "present"}),
        ("effect_receipt", {"observed": "absent"}),
    )
    assert _effect_verdict(*steps) == ("indeterminate", "contradiction")


@pytest.mark.parametrize("state", ["prepared", "approved", "active", "unknown", "observed"])
def test_effect_in_flight_is_indeterminate_pending(state: str) -> None:
    assert _effect_verdict(("effect_transition", {"state": state})) == ("indeterminate", "pending")


def test_effect_with_only_an_intent_is_pending() -> None:
    assert _effect_verdict() == ("indeterminate", "pending")


def test_requested_effect_with_no_event_at_all_is_pending() -> None:
    b = RunBuilder()
    account = account_of([b.goal(effects=["fx-never"]), b.finalize(None)])
    assert verdict(account, "effect:fx-never") == ("indeterminate", "pending")
    assert predicate(account, "effect:fx-never")["evidence"] == []


# -- action:<action_id> ------------------------------------------------------------------


def _action_verdict(*outcomes: str, started: bool = True) -> tuple[str, str]:
    b = RunBuilder()
    events = [b.goal(actions=["act-1"])]
    if started:
        events.append(b.tool_started("act-1"))
    events += [b.tool_finished("act-1", outcome) for outcome in outcomes]
    events.append(b.finalize(None))
    return verdict(account_of(events), "action:act-1")


def test_action_succeeded_is_satisfied() -> None:
    assert _action_verdict("succeeded") == ("satisfied", "succeeded")


def test_action_failed_is_unsatisfied() -> None:
    assert _action_verdict("failed") == ("unsatisfied", "failed")


def test_action_not_applicable_is_unsatisfied() -> None:
    assert _action_verdict("not_applicable") == ("unsatisfied", "not_applicable")


def test_action_indeterminate_outcome_is_indeterminate() -> None:
    assert _action_verdict("indeterminate") == ("indeterminate", "indeterminate")


def test_action_with_conflicting_outcomes_is_indeterminate() -> None:
    assert _action_verdict("succeeded", "failed") == ("indeterminate", "indeterminate")


def test_action_started_but_not_finished_is_pending() -> None:
    assert _action_verdict() == ("indeterminate", "pending")


def test_requested_action_with_no_event_at_all_is_pending() -> None:
    assert _action_verdict(started=False) == ("indeterminate", "pending")
