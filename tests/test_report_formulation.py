"""Supported formulations (reducers/claims/formulation.py): the words a verdict record carries
for a contradicted claim or an omission, built from the account revision it was judged
against."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from outcomes.reducers.claims.checker import Judged, Judgement
from outcomes.reducers.claims.formulation import supported_formulation
from tests.builders import fold_events

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "five_file_run.jsonl"


def account(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "status": "unresolved",
        "candidate_snapshot": "snap-2",
        "predicates": [],
        "checks": [],
        "effects": [],
        "artifacts": [],
        "contradictions": [],
    }
    return {**base, **fields}


def judged(verdict: str, subject: str | None, reason: str, kind: str = "verification") -> Judged:
    return Judged("0", kind, Judgement(verdict, subject, reason), None)  # type: ignore[arg-type]


def check_row(label: str, state: str, **fields: Any) -> dict[str, Any]:
    row = {"label": label, "state": state, "result": "pass", "candidate_snapshot": "snap-1"}
    return {**row, "scope": "suite", "tests_executed": 3, "check_id": "c1", **fields}


def effect_row(intent_id: str, state: str, *receipts: str) -> dict[str, Any]:
    return {
        "intent_id": intent_id,
        "effect_class": "external_draft",
        "state": state,
        "receipts": list(receipts),
        "unresolved": state not in ("completed", "failed", "denied", "compensated"),
    }


def test_the_five_file_run_gets_the_supported_words_the_issue_asks_for() -> None:
    """Replay of the seed's run: every contradicted first verdict carries a formulation,
    every later (supported) settlement carries none."""
    events = [orjson.loads(line) for line in SAMPLE.read_bytes().splitlines() if line.strip()]
    outputs, _ = fold_events(events)
    verdicts = [r.body for r in outputs if r.kind == "claim_verdict"]
    by_id = {v["verdict_id"]: v["supported"] for v in verdicts}
    assert by_id["run-five-files:final-answer:1"] == (
        "the unit check has not passed on the final candidate snap-2: its pass was against snap-1"
    )
    assert by_id["run-five-files:final-answer:2"] == (
        "draft-release-notes (external draft) is not confirmed: its outcome is unknown (no receipt)"
    )
    assert by_id["run-five-files:final-answer:0"] == (
        "the run is not complete: its status is unresolved, because "
        "the unit check has not passed on the final candidate snap-2: its pass was against "
        "snap-1; and draft-release-notes (external draft) is not confirmed: its outcome is "
        "unknown (no receipt)"
    )
    later = [v for v in verdicts if v["settlement"] > 1]
    assert later and all(v["verdict"] == "supported" and v["supported"] is None for v in later)


@pytest.mark.parametrize(
    ("reason", "row", "expected"),
    [
        ("check_failing", check_row("unit", "failing", result="fail", candidate_snapshot="snap-2"),
         "the unit check failed on snap-2"),
        ("check_missing", None, "the unit check has no result for the final candidate snap-2"),
        ("check_zero_tests", check_row("unit", "zero_tests", tests_executed=0),
         "the unit check is not confirmed: it ran zero tests"),
        ("check_scope_insufficient", check_row("unit", "passing", scope="focused"),
         "the unit check is not confirmed: ran with scope focused, which does not meet the "
         "required scope"),
        ("check_indeterminate", check_row("unit", "indeterminate", result="indeterminate"),
         "the unit check is not confirmed: its result was indeterminate"),
    ],
)  # fmt: skip
def test_check_reasons(reason: str, row: dict[str, Any] | None, expected: str) -> None:
    acc = account(checks=[row] if row else [])
    for verdict in ("contradicted", "omitted"):
        assert supported_formulation(judged(verdict, "check:unit", reason), acc) == expected


def test_unknown_is_not_confirmed_and_failure_only_for_failed() -> None:
    """The seed's copy rule: an effect whose outcome is unknown is "not confirmed", never
    failed or almost done; only a failed one reads "failed"."""
    for state in ("prepared", "approved", "active", "unknown", "observed", "contradicted"):
        acc = account(effects=[effect_row("pub", state)])
        words = supported_formulation(judged("omitted", "effect:pub", f"effect_{state}"), acc)
        assert words is not None and "not confirmed" in words
        assert "fail" not in words and "almost" not in words
    acc = account(effects=[effect_row("pub", "failed", "r-9")])
    words = supported_formulation(judged("omitted", "effect:pub", "effect_failed"), acc)
    assert words == "pub (external draft) failed (receipts: r-9)"


def test_a_contradiction_names_its_evidence() -> None:
    acc = account(
        effects=[effect_row("pub", "contradicted", "r-1", "r-2")],
        contradictions=[
            {
                "subject": "effect:pub",
                "kind": "effect_receipts_disagree",
                "evidence": [
                    {"event_id": "e-1", "value": "present", "occurred_at": "x"},
                    {"event_id": "e-2", "value": "absent", "occurred_at": "y"},
                ],
            }
        ],
    )
    words = supported_formulation(judged("omitted", "effect:pub", "effect_receipts_disagree"), acc)
    assert words == (
        "pub (external draft) is not confirmed: its authoritative receipts disagree: "
        "present (e-1), absent (e-2)"
    )


def test_none_for_other_verdicts_and_without_an_account() -> None:
    acc = account(status="complete")
    assert supported_formulation(judged("supported", None, "status_complete"), acc) is None
    assert supported_formulation(judged("unverifiable", None, "no_checks"), acc) is None
    assert supported_formulation(judged("contradicted", None, "status_failed"), None) is None


def test_the_same_verdict_and_account_give_the_same_words() -> None:
    acc = account(checks=[check_row("unit", "stale")], effects=[effect_row("pub", "unknown")])
    one = supported_formulation(judged("contradicted", "check:unit", "check_stale"), acc)
    assert one == supported_formulation(
        judged("contradicted", "check:unit", "check_stale"), dict(acc)
    )
