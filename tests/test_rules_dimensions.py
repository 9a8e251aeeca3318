"""SPEC 3.4: the five dimensions, each independent of the others."""

from __future__ import annotations

import pytest

from tests.builders import Event, RunBuilder, account_of, action


def _dimension(name: str, b: RunBuilder, *events: Event, goal: Event | None = None) -> object:
    goal = goal if goal is not None else b.goal()
    return account_of([goal, *events, b.finalize(None)])["dimensions"][name]


# -- response_completion -----------------------------------------------------------------


def test_response_completion_is_null_without_a_disposition() -> None:
    assert _dimension("response_completion", RunBuilder()) is None


def test_response_completion_is_the_latest_disposition() -> None:
    b = RunBuilder()
    late = b.disposition("contained", at=20)
    early = b.disposition("completed", at=10)
    assert _dimension("response_completion", b, late, early) == "contained"


# -- requested_action_outcome ------------------------------------------------------------


def test_requested_action_outcome_is_not_applicable_without_requested_actions() -> None:
    b = RunBuilder()
    assert _dimension("requested_action_outcome", b, b.tool_finished("act-1", "failed")) == (
        "not_applicable"
    )


@pytest.mark.parametrize(
    ("outcomes", "expected"),
    [
        (("succeeded", "succeeded"), "succeeded"),
        (("succeeded", "failed"), "failed"),
        (("succeeded", "indeterminate"), "indeterminate"),
        (("succeeded", "not_applicable"), "indeterminate"),
        (("succeeded", None), "indeterminate"),
        (("failed", None), "failed"),
    ],
)
def test_requested_action_outcome_over_two_requested_actions(
    outcomes: tuple[str, str | None], expected: str
) -> None:
    b = RunBuilder()
    goal = b.goal(actions=["a1", "a2"])
    finished = [
        b.tool_finished(f"a{i + 1}", outcome) for i, outcome in enumerate(outcomes) if outcome
    ]
    assert _dimension("requested_action_outcome", b, *finished, goal=goal) == expected


def test_requested_action_outcome_is_indeterminate_on_conflicting_outcomes() -> None:
    b = RunBuilder()
    goal = b.goal(actions=["a1"])
    finished = [b.tool_finished("a1", "succeeded"), b.tool_finished("a1", "failed")]
    assert _dimension("requested_action_outcome", b, *finished, goal=goal) == "indeterminate"


@pytest.mark.parametrize("outcome", ["succeeded", "failed"])
def test_no_disposition_cancellation_or_interruption_changes_a_finished_action(
    outcome: str,
) -> None:
    b = RunBuilder()
    events = [
        b.goal(actions=["act-1"]),
        b.tool_started("act-1"),
        b.tool_finished("act-1", outcome),
        b.finalize(None),
        b.disposition("cancelled"),
        b.run_started(),
        b.interrupted("worker lost"),
        b.cancelled("user stopped"),
    ]
    account = account_of(events)
    assert account["workflow_status"] == "cancelled"
    assert account["dimensions"]["response_completion"] == "cancelled"
    assert account["dimensions"]["requested_action_outcome"] == outcome
    assert action(account, "act-1")["outcome"] == outcome


# -- verification ------------------------------------------------------------------------


def _verification(*receipts: tuple[str, str], labels: tuple[str, ...] = ("unit",)) -> object:
    b = RunBuilder()
    events = [b.goal(checks=list(labels)), b.snapshot()]
    events += [b.receipt(label, result) for label, result in receipts]
    events.append(b.finalize())
    return account_of(events)["dimensions"]["verification"]


def test_verification_is_null_when_no_check_is_required() -> None:
    b = RunBuilder()
    assert _dimension("verification", b, b.receipt("lint", "fail")) is None


def test_verification_passes_when_every_required_check_passes() -> None:
    assert _verification(("unit", "pass"), ("e2e", "pass"), labels=("unit", "e2e")) == "pass"


def test_verification_fails_when_any_required_check_is_failing() -> None:
    receipts = (("unit", "pass"), ("e2e", "fail"), ("lint", "indeterminate"))
    assert _verification(*receipts, labels=("unit", "e2e", "lint")) == "fail"


def test_verification_is_indeterminate_otherwise() -> None:
    assert _verification(("unit", "indeterminate")) == "indeterminate"


def test_verification_is_indeterminate_when_a_required_check_is_missing() -> None:
    assert _verification(("unit", "pass"), labels=("unit", "e2e")) == "indeterminate"


def test_non_required_failing_check_does_not_fail_verification() -> None:
    assert _verification(("unit", "pass"), ("lint", "fail")) == "pass"


# -- review ------------------------------------------------------------------------------


def test_review_is_null_without_a_review() -> None:
    assert _dimension("review", RunBuilder()) is None


def test_review_is_the_latest_review() -> None:
    b = RunBuilder()
    late = b.review("revise", at=30)
    early = b.review("pass", at=20)
    assert _dimension("review", b, late, early) == "revise"


# -- durability --------------------------------------------------------------------------


def _durability(*writes: tuple[str, ...], other_effects: bool = False) -> object:
    """Durability for write effects w1, w2…, each with authoritative receipts `observed…`."""
    b = RunBuilder()
    events = [b.goal()]
    for i, observed in enumerate(writes):
        intent_id = f"w{i + 1}"
        events.append(b.effect_intent(intent_id, effect_class="write"))
        events += [b.effect_receipt(intent_id, o) for o in observed]
    if other_effects:
        events += [b.effect_intent("draft", effect_class="external_draft")]
        events += [b.effect_receipt("draft", "failed")]
    events.append(b.finalize(None))
    return account_of(events)["dimensions"]["durability"]


def test_durability_is_null_without_write_effects() -> None:
    assert _durability(other_effects=True) is None


def test_durability_is_confirmed_when_every_write_has_a_present_receipt() -> None:
    assert _durability(("present",), ("present",), other_effects=True) == "confirmed"


@pytest.mark.parametrize("negative", ["failed", "absent"])
def test_durability_failed_when_a_write_has_a_negative_receipt(negative: str) -> None:
    assert _durability(("present",), (negative,)) == "failed"


def test_durability_indeterminate_when_a_write_has_no_receipt() -> None:
    assert _durability(("present",), ()) == "indeterminate"


def test_durability_indeterminate_when_receipts_of_a_write_conflict() -> None:
    assert _durability(("present", "absent"), ("failed",)) == "indeterminate"


def test_durability_ignores_non_authoritative_receipts() -> None:
    b = RunBuilder()
    events = [
        b.effect_intent("w1", effect_class="write"),
        b.effect_receipt("w1", "present", authoritative=False),
    ]
    assert _dimension("durability", b, *events) == "indeterminate"


def test_dimensions_are_independent_of_each_other() -> None:
    b = RunBuilder()
    events = [
        b.goal(actions=["act-1"], checks=["unit"]),
        b.tool_finished("act-1", "failed"),
        b.receipt(result="pass"),
        b.review("pass"),
        b.disposition("completed"),
        b.effect_intent("w1", effect_class="write"),
        b.effect_receipt("w1", "present"),
        b.finalize(None),
    ]
    assert account_of(events)["dimensions"] == {
        "response_completion": "completed",
        "requested_action_outcome": "failed",
        "verification": "pass",
        "review": "pass",
        "durability": "confirmed",
    }
