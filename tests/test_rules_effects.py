"""SPEC 3.5: an effect's state, receipts overruling transitions, the `unresolved` flag."""

from __future__ import annotations

import pytest

from tests.builders import (
    Event,
    RunBuilder,
    account_of,
    contradictions,
    effect,
    predicate,
    verdict,
)


def _effect_row(b: RunBuilder, *steps: Event) -> dict[str, object]:
    account = account_of(
        [b.goal(effects=["fx-1"]), b.effect_intent("fx-1"), *steps, b.finalize(None)]
    )
    return dict(effect(account, "fx-1"))


def test_effect_without_transitions_is_prepared_and_unresolved() -> None:
    row = _effect_row(RunBuilder())
    assert (row["state"], row["unresolved"], row["effect_class"]) == (
        "prepared",
        True,
        "external_draft",
    )


def test_latest_transition_by_occurred_at_decides() -> None:
    b = RunBuilder()
    late = b.effect_transition(state="unknown", at=20)
    early = b.effect_transition(state="active", at=10)
    assert _effect_row(b, late, early)["state"] == "unknown"


def test_authoritative_present_receipt_overrules_the_transition() -> None:
    b = RunBuilder()
    receipt = b.effect_receipt(observed="present", receipt_id="rcpt-77")
    row = _effect_row(b, b.effect_transition(state="unknown"), receipt)
    assert (row["state"], row["unresolved"], row["receipts"]) == ("completed", False, ["rcpt-77"])


@pytest.mark.parametrize("observed", ["failed", "absent"])
def test_authoritative_negative_receipt_makes_the_effect_failed(observed: str) -> None:
    b = RunBuilder()
    row = _effect_row(
        b, b.effect_transition(state="completed"), b.effect_receipt(observed=observed)
    )
    assert (row["state"], row["unresolved"]) == ("failed", False)


def test_authoritative_receipts_that_disagree_make_a_contradiction() -> None:
    b = RunBuilder()
    present = b.effect_receipt(observed="present", receipt_id="r-1")
    absent = b.effect_receipt(observed="absent", receipt_id="r-2", origin="reconciliation")
    events = [b.goal(effects=["fx-1"]), b.effect_intent("fx-1"), present, absent, b.finalize(None)]
    account = account_of(events)
    row = effect(account, "fx-1")
    assert (row["state"], row["unresolved"], row["receipts"]) == (
        "contradicted",
        True,
        ["r-1", "r-2"],
    )
    assert verdict(account, "effect:fx-1") == ("indeterminate", "contradiction")
    assert contradictions(account) == [
        {
            "subject": "effect:fx-1",
            "kind": "effect_receipts_disagree",
            "evidence": [
                {
                    "event_id": present["event_id"],
                    "value": "present",
                    "occurred_at": present["occurred_at"],
                },
                {
                    "event_id": absent["event_id"],
                    "value": "absent",
                    "occurred_at": absent["occurred_at"],
                },
            ],
        }
    ]


def test_non_authoritative_receipts_are_kept_but_never_decide() -> None:
    b = RunBuilder()
    account = account_of(
        [
            b.goal(effects=["fx-1"]),
            b.effect_intent("fx-1"),
            b.effect_transition(state="unknown"),
            b.effect_receipt(observed="present", authoritative=False, receipt_id="r-soft"),
            b.effect_receipt(observed="failed", authoritative=False, receipt_id="r-soft-2"),
            b.finalize(None),
        ]
    )
    row = effect(account, "fx-1")
    assert (row["state"], row["receipts"]) == ("unknown", ["r-soft", "r-soft-2"])
    assert verdict(account, "effect:fx-1") == ("indeterminate", "pending")
    assert contradictions(account) == []


def test_non_authoritative_receipt_does_not_contradict_an_authoritative_one() -> None:
    b = RunBuilder()
    hard = b.effect_receipt(observed="present", receipt_id="r-hard")
    soft = b.effect_receipt(observed="absent", authoritative=False, receipt_id="r-soft")
    row = _effect_row(b, hard, soft)
    assert (row["state"], row["receipts"]) == ("completed", ["r-hard", "r-soft"])


def test_denied_transition_evidence_is_the_transition() -> None:
    b = RunBuilder()
    denied = b.effect_transition(state="denied", reason="needs approval")
    account = account_of(
        [b.goal(effects=["fx-1"]), b.effect_intent("fx-1"), denied, b.finalize(None)]
    )
    assert verdict(account, "effect:fx-1") == ("unsatisfied", "denied")
    assert predicate(account, "effect:fx-1")["evidence"] == [denied["event_id"]]


@pytest.mark.parametrize(
    ("state", "unresolved"),
    [
        ("prepared", True),
        ("approved", True),
        ("active", True),
        ("unknown", True),
        ("observed", True),
        ("contradicted", True),
        ("denied", False),
        ("completed", False),
        ("compensated", False),
    ],
)
def test_unresolved_flag_follows_the_state(state: str, unresolved: bool) -> None:
    b = RunBuilder()
    row = _effect_row(b, b.effect_transition(state=state))
    assert (row["state"], row["unresolved"]) == (state, unresolved)


def test_effect_known_only_from_a_receipt_has_no_class() -> None:
    b = RunBuilder()
    account = account_of([b.goal(), b.effect_receipt("fx-9", "present"), b.finalize(None)])
    row = effect(account, "fx-9")
    assert (row["effect_class"], row["state"], row["unresolved"]) == (None, "completed", False)
