"""SPEC 6: a `needs_review` verdict is a verdict like the others in the record stream. It
settles (to and from it) as the account changes, with the usual claim notification; it
carries no supported formulation; it is never counted as contradicted; and each claim's
current verdict, `needs_review` included, is the same for every arrival order."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st

from outcomes.reducers.claims.checker import Judged, Judgement, judge_reading, read
from outcomes.reducers.claims.formulation import supported_formulation
from tests.builders import Replay, RunBuilder, of_kind
from tests.review_support import MARKED_TEXTS, REASON, entries, judge_with_review, reviewing
from tests.strategies import RUN_ID, runs_with_narratives
from tests.test_claim_settlement import (
    CURRENT_FIELDS,
    assert_well_formed,
    current_verdicts,
    fold_all,
    unit_run,
    verdicts_against_final_account,
)


def brief(body: Any) -> tuple[Any, ...]:
    return (body["settlement"], body["verdict"], body["subject"], body["reason"])


def test_a_needs_review_verdict_is_recorded_apart_with_no_formulation() -> None:
    b = RunBuilder("run-q")
    replay = Replay()
    with reviewing():
        replay.apply(*unit_run(b, "fail"))
        [claim] = of_kind(replay.apply(b.narrative("All tests pass. [r]")), "claim_verdict")
    assert brief(claim) == (1, "needs_review", None, REASON)
    assert claim["span_text"] == "All tests pass" and claim["supported"] is None
    assert not claim["withdrawn"] and claim["account_revision"] == 1


def test_settling_to_and_from_needs_review_notifies_like_any_change() -> None:
    b = RunBuilder("run-t")
    replay = Replay()
    with reviewing():
        replay.apply(*unit_run(b, "pass"))
        assert entries(replay.accounts[-1]) == 5  # odd: marked claims need review
        [first] = of_kind(replay.apply(b.narrative("Done. [r]")), "claim_verdict")
        assert brief(first) == (1, "needs_review", None, REASON)
        caused = replay.apply(b.tool_started("act-1"))  # one more entry: decided
        [decided] = of_kind(caused, "claim_verdict")
        assert brief(decided) == (2, "supported", None, "status_complete")
        assert decided["supersedes"] == first["verdict_id"]
        [notice] = of_kind(caused, "claim_notification")
        assert notice["verdict_ids"] == [decided["verdict_id"]]
        assert (notice["superseded"], notice["withdrawn"]) == (1, 0)
        caused = replay.apply(b.tool_started("act-2"))  # odd again
        [review] = of_kind(caused, "claim_verdict")
        assert brief(review) == (3, "needs_review", None, REASON)
        assert review["supersedes"] == decided["verdict_id"] and review["supported"] is None
        [notice] = of_kind(caused, "claim_notification")
        assert notice["verdict_ids"] == [review["verdict_id"]]


def test_a_revision_that_keeps_a_needs_review_verdict_records_nothing() -> None:
    b = RunBuilder("run-k")
    replay = Replay()
    with reviewing():
        replay.apply(*unit_run(b, "fail"), b.narrative("All tests pass. [r]"))
        caused = replay.apply(b.receipt("unit", "pass"))  # the status changes, not the count
    assert [r["status"] for r in of_kind(caused, "account_revision")] == ["complete"]
    assert not of_kind(caused, "claim_verdict") and not of_kind(caused, "claim_notification")


def test_the_formulation_is_none_for_needs_review() -> None:
    account = {"status": "failed", "predicates": [], "checks": [], "effects": []}
    judged = Judged("0", "completion", Judgement("needs_review", None, REASON), (0, 4))
    assert supported_formulation(judged, account) is None


@st.composite
def marked_runs(draw: st.DrawFn, texts: tuple[str, ...] = MARKED_TEXTS) -> list[dict[str, Any]]:
    """Runs as `runs_with_narratives`, some of whose narratives are one of `texts`."""
    out = []
    for event in draw(runs_with_narratives()):
        if event["type"] == "narrative.submitted" and draw(st.booleans()):
            event = {**event, "text": draw(st.sampled_from(texts))}
        out.append(event)
    return out


# Texts the claim reader itself sends to review (docs/claims.md): a hedged assertion and a
# status label whose kind its noun does not tell, each beside a claim it does decide.
READER_REVIEWS = (
    "It looks like the job completed. All tests pass.",
    "Status: Created\n\nDone: I saved src/a.py.",
)


def test_the_reader_sends_these_texts_claims_to_review_whatever_the_account() -> None:
    b = RunBuilder("run-r")
    for events in ([], unit_run(b, "fail"), unit_run(b, "pass")):
        replay = Replay()
        replay.apply(*events)
        for text in READER_REVIEWS:
            account = replay.account
            verdicts = [j.judgement.verdict for j in judge_reading(read(text), account)]
            assert verdicts[0] == "needs_review", (text, verdicts)
            assert "needs_review" not in verdicts[1:], (text, verdicts)


def against_final_account(events: list[dict[str, Any]], outputs: Any) -> dict[str, Any]:
    accounts = of_kind(outputs, "account_revision")
    final = accounts[-1] if accounts else None
    expected: dict[str, Any] = {}
    for event in events:
        if event["type"] != "narrative.submitted":
            continue
        text = event["text"]
        for j in judge_with_review(read(text), final):
            span = j.span
            content = {
                "claim_kind": j.kind,
                "verdict": j.judgement.verdict,
                "subject": j.judgement.subject,
                "reason": j.judgement.reason,
                "span_start": span[0] if span else None,
                "span_end": span[1] if span else None,
                "span_text": text[span[0] : span[1]] if span else None,
                "event_id": event["event_id"],
            }
            key = f"{RUN_ID}:{event['narrative_id']}:{j.key}"
            expected[key] = tuple(content[f] for f in CURRENT_FIELDS)
    return expected


@settings(max_examples=300, deadline=None)
@given(events=marked_runs(), data=st.data())
def test_every_arrival_order_settles_on_the_same_current_verdicts_needs_review_included(
    events: list[dict[str, Any]], data: st.DataObject
) -> None:
    shuffled = data.draw(st.permutations(events))
    with reviewing():
        outputs_a, outputs_b = fold_all(events), fold_all(shuffled)
    current = current_verdicts(outputs_a)
    assert current == current_verdicts(outputs_b)
    assert current == against_final_account(events, outputs_a)
    assert_well_formed(outputs_a)
    assert_well_formed(outputs_b)


@settings(max_examples=200, deadline=None)
@given(events=marked_runs(READER_REVIEWS), data=st.data())
def test_every_arrival_order_gives_the_same_current_verdicts_with_the_readers_reviews(
    events: list[dict[str, Any]], data: st.DataObject
) -> None:
    """The same property with the reader's own needs_review verdicts (no stand-in)."""
    shuffled = data.draw(st.permutations(events))
    outputs_a, outputs_b = fold_all(events), fold_all(shuffled)
    current = current_verdicts(outputs_a)
    assert current == current_verdicts(outputs_b)
    assert current == verdicts_against_final_account(events, outputs_a)
    assert_well_formed(outputs_a)
    assert_well_formed(outputs_b)


def _moves(events: list[dict[str, Any]]) -> set[str]:
    """ "into" and "out of", for claims whose verdict settles into or out of needs_review."""
    with reviewing():
        outputs = fold_all(events)
    chains: dict[str, list[str]] = {}
    for body in of_kind(outputs, "claim_verdict"):
        chains.setdefault(body["claim_id"], []).append(body["verdict"])
    moves = set()
    for chain in chains.values():
        for before, after in pairwise(chain):
            if before != after and after == "needs_review":
                moves.add("into")
            if before != after and before == "needs_review":
                moves.add("out of")
    return moves


@pytest.mark.parametrize("move", ["into", "out of"])
def test_the_generated_runs_settle_into_needs_review_and_out_of_it(move: str) -> None:
    """The property above is not vacuous: its runs include claims whose verdict settles
    into needs_review from another verdict, and out of it to another."""
    found = find(
        marked_runs(),
        lambda events: move in _moves(events),
        settings=settings(database=None, max_examples=2000, phases=[Phase.generate]),
    )
    assert move in _moves(found)
