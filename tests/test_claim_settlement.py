"""SPEC 6: a narrative's verdicts settle. The verdicts against the revision it names are
kept; each later revision that changes one records a verdict that supersedes it, with a
claim notification; the current verdict of every claim is the same for every arrival
order (docs/records.md, claim_verdict and claim_notification)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from outcomes.reducers.claims.checker import judge_reading, read
from outcomes.reducers.engine import Engine
from outcomes.reducers.records import OutputRecord
from outcomes.reducers.validate import parse_event
from tests.builders import Replay, RunBuilder, of_kind
from tests.strategies import RUN_ID, run_events, runs_with_narratives

Body = Mapping[str, Any]

# What a claim's current verdict says; ids, settlements and revision numbers depend on
# the arrival order and are left out.
CURRENT_FIELDS = (
    "claim_kind",
    "verdict",
    "subject",
    "reason",
    "span_start",
    "span_end",
    "span_text",
    "event_id",
)


def fold_all(bodies: Iterable[Mapping[str, Any]]) -> list[OutputRecord]:
    engine = Engine()
    outputs: list[OutputRecord] = []
    for body in bodies:
        outputs += engine.apply(parse_event(body))
    return outputs


def latest_settlements(outputs: Iterable[OutputRecord]) -> dict[str, Body]:
    """Per claim_id, its verdict of the highest settlement."""
    latest: dict[str, Body] = {}
    for body in of_kind(outputs, "claim_verdict"):
        known = latest.get(body["claim_id"])
        if known is None or body["settlement"] > known["settlement"]:
            latest[body["claim_id"]] = body
    return latest


def current_verdicts(outputs: Iterable[OutputRecord]) -> dict[str, tuple[Any, ...]]:
    """The current verdict of every claim: its latest settlement, unless withdrawn."""
    return {
        claim: tuple(body[f] for f in CURRENT_FIELDS)
        for claim, body in latest_settlements(outputs).items()
        if not body["withdrawn"]
    }


def verdicts_against_final_account(
    events: Sequence[Mapping[str, Any]], outputs: Sequence[OutputRecord]
) -> dict[str, tuple[Any, ...]]:
    """What every narrative says against the run's last revision (or no account)."""
    accounts = of_kind(outputs, "account_revision")
    final = accounts[-1] if accounts else None
    expected = {}
    for event in events:
        if event["type"] != "narrative.submitted":
            continue
        text = event["text"]
        for judged in judge_reading(read(text), final):
            span = judged.span
            expected[f"{RUN_ID}:{event['narrative_id']}:{judged.key}"] = (
                judged.kind,
                judged.judgement.verdict,
                judged.judgement.subject,
                judged.judgement.reason,
                span[0] if span else None,
                span[1] if span else None,
                text[span[0] : span[1]] if span else None,
                event["event_id"],
            )
    return expected


def assert_well_formed(outputs: Sequence[OutputRecord]) -> None:
    """Ids are unique; each claim's settlements are 1..n, each superseding the one
    before; only omissions are withdrawn; every later settlement is in exactly one claim
    notification, which lists only verdicts already emitted."""
    verdicts = of_kind(outputs, "claim_verdict")
    ids = [v["verdict_id"] for v in verdicts]
    assert len(ids) == len(set(ids))
    chains: dict[str, list[Body]] = {}
    for body in verdicts:
        chains.setdefault(body["claim_id"], []).append(body)
    for claim, chain in chains.items():
        assert [b["settlement"] for b in chain] == list(range(1, len(chain) + 1))
        assert chain[0]["verdict_id"] == claim and chain[0]["supersedes"] is None
        for before, after in pairwise(chain):
            assert after["verdict_id"] == f"{claim}@{after['settlement']}"
            assert after["supersedes"] == before["verdict_id"]
            assert after["withdrawn"] or (
                (after["claim_kind"], after["verdict"], after["subject"], after["reason"])
                != (before["claim_kind"], before["verdict"], before["subject"], before["reason"])
                or before["withdrawn"]
            )
        for body in chain:
            assert not body["withdrawn"] or body["verdict"] == "omitted"
    notified: list[str] = []
    seen: set[str] = set()
    for record in outputs:
        if record.kind == "claim_verdict":
            seen.add(record.id)
        elif record.kind == "claim_notification":
            assert set(record.body["verdict_ids"]) <= seen
            notified += record.body["verdict_ids"]
    assert len(notified) == len(set(notified))
    later = {v["verdict_id"] for v in verdicts if v["settlement"] > 1}
    assert later <= set(notified)


@settings(max_examples=300, deadline=None)
@given(events=runs_with_narratives(), data=st.data())
def test_every_arrival_order_settles_on_the_same_current_verdicts(
    events: list[dict[str, Any]], data: st.DataObject
) -> None:
    shuffled = data.draw(st.permutations(events))
    outputs_a, outputs_b = fold_all(events), fold_all(shuffled)
    current = current_verdicts(outputs_a)
    assert current == current_verdicts(outputs_b)
    # ...and it is what each narrative says against the run's final account.
    assert current == verdicts_against_final_account(events, outputs_a)
    assert_well_formed(outputs_a)
    assert_well_formed(outputs_b)


@settings(max_examples=100, deadline=None)
@given(events=run_events())
def test_a_run_without_narratives_makes_no_verdict_and_no_claim_notification(
    events: list[dict[str, Any]],
) -> None:
    plain = [e for e in events if e["type"] != "narrative.submitted"]
    outputs = fold_all(plain)
    assert not of_kind(outputs, "claim_verdict")
    assert not of_kind(outputs, "claim_notification")


# -- one run at a time ---------------------------------------------------------------------


def unit_run(b: RunBuilder, result: str) -> list[dict[str, Any]]:
    """A run requiring the unit check, finalized with one receipt of `result`."""
    return [b.goal(checks=["unit"]), b.snapshot(), b.receipt("unit", result), b.finalize()]


def brief(body: Body) -> tuple[Any, ...]:
    return (body["settlement"], body["verdict"], body["subject"], body["reason"])


def test_supported_then_contradicted_is_superseded_with_a_notification() -> None:
    b = RunBuilder("run-s")
    replay = Replay()
    replay.apply(*unit_run(b, "pass"))
    [first] = of_kind(replay.apply(b.narrative("All tests pass.")), "claim_verdict")
    assert (first["verdict_id"], first["claim_id"]) == ("run-s:nar-1:0", "run-s:nar-1:0")
    assert brief(first) == (1, "supported", None, "verification_pass")
    assert first["account_revision"] == 1 and first["supersedes"] is None

    caused = replay.apply(b.receipt("unit", "fail"))
    [revision] = of_kind(caused, "account_revision")
    [now] = of_kind(caused, "claim_verdict")
    assert brief(now) == (2, "contradicted", "check:unit", "check_failing")
    assert now["verdict_id"] == "run-s:nar-1:0@2" and now["supersedes"] == "run-s:nar-1:0"
    assert now["account_revision"] == revision["revision"] == 2
    assert (now["span_text"], now["event_id"]) == (first["span_text"], first["event_id"])
    [notice] = of_kind(caused, "claim_notification")
    assert notice == {
        "notification_id": "run-s:2:claims",
        "run_id": "run-s",
        "revision": 2,
        "trigger_event_id": revision["trigger_event_id"],
        "status": revision["status"],
        "observation_cutoff": revision["observation_cutoff"],
        "narrative_ids": ["nar-1"],
        "verdict_ids": ["run-s:nar-1:0@2"],
        "superseded": 1,
        "withdrawn": 0,
    }
    # The account's own notification is untouched by it.
    assert [n["notification_id"] for n in of_kind(caused, "notification")] == ["run-s:2"]


def test_contradicted_then_supported_is_superseded_with_a_notification() -> None:
    b = RunBuilder("run-c")
    replay = Replay()
    replay.apply(*unit_run(b, "fail"))
    [first] = of_kind(replay.apply(b.narrative("All tests pass.")), "claim_verdict")
    assert brief(first) == (1, "contradicted", "check:unit", "check_failing")
    caused = replay.apply(b.receipt("unit", "pass"))
    [now] = of_kind(caused, "claim_verdict")
    assert brief(now) == (2, "supported", None, "verification_pass")
    assert now["supersedes"] == first["verdict_id"]
    [notice] = of_kind(caused, "claim_notification")
    assert notice["verdict_ids"] == [now["verdict_id"]] and notice["superseded"] == 1


def test_an_omission_no_longer_owed_is_withdrawn_and_one_owed_again_comes_back() -> None:
    b = RunBuilder("run-o")
    replay = Replay()
    replay.apply(*unit_run(b, "fail"))
    [omitted] = of_kind(replay.apply(b.narrative("I tidied the module.")), "claim_verdict")
    assert omitted["claim_id"] == "run-o:nar-1:omission:check:unit"
    assert brief(omitted) == (1, "omitted", "check:unit", "check_failing")
    assert omitted["span_start"] is None and not omitted["withdrawn"]

    caused = replay.apply(b.receipt("unit", "pass"))
    [withdrawn] = of_kind(caused, "claim_verdict")
    assert withdrawn["withdrawn"] is True
    assert brief(withdrawn) == (2, "omitted", "check:unit", "check_failing")
    assert withdrawn["supersedes"] == omitted["verdict_id"]
    assert withdrawn["verdict_id"] == "run-o:nar-1:omission:check:unit@2"
    [notice] = of_kind(caused, "claim_notification")
    assert (notice["superseded"], notice["withdrawn"]) == (1, 1)

    caused = replay.apply(b.receipt("unit", "fail"))
    [back] = of_kind(caused, "claim_verdict")
    assert brief(back) == (3, "omitted", "check:unit", "check_failing")
    assert back["supersedes"] == withdrawn["verdict_id"] and not back["withdrawn"]


def test_a_revision_that_changes_no_verdict_records_nothing() -> None:
    b = RunBuilder("run-n")
    replay = Replay()
    replay.apply(*unit_run(b, "pass"), b.narrative("All tests pass."))
    caused = replay.apply(b.tool_started("act-9"))
    assert of_kind(caused, "account_revision")
    assert not of_kind(caused, "claim_verdict")
    assert not of_kind(caused, "claim_notification")


def test_redelivery_emits_nothing() -> None:
    b = RunBuilder("run-r")
    events = [*unit_run(b, "pass"), b.narrative("All tests pass."), b.receipt("unit", "fail")]
    replay = Replay()
    replay.apply(*events)
    assert len(of_kind(replay.outputs, "claim_verdict")) == 2
    for event in events:
        assert replay.apply(dict(event)) == []


def test_a_narrative_before_any_account_settles_when_the_first_revision_comes() -> None:
    b = RunBuilder("run-e")
    replay = Replay()
    replay.apply(b.goal(checks=["unit"]), b.snapshot(), b.receipt("unit", "fail"))
    [early] = of_kind(replay.apply(b.narrative("All tests pass.")), "claim_verdict")
    assert brief(early) == (1, "unverifiable", None, "no_account")
    assert early["account_revision"] is None
    caused = replay.apply(b.finalize())
    [now] = of_kind(caused, "claim_verdict")
    assert brief(now) == (2, "contradicted", "check:unit", "check_failing")
    assert now["account_revision"] == 1
    [notice] = of_kind(caused, "claim_notification")
    assert notice["notification_id"] == "run-e:1:claims"
    assert [n["kind"] for n in of_kind(caused, "notification")] == ["account.final"]


def test_a_narrative_naming_an_older_revision_keeps_then_and_settles_now() -> None:
    b = RunBuilder("run-t")
    replay = Replay()
    replay.apply(*unit_run(b, "fail"), b.receipt("unit", "pass"))
    assert [a["revision"] for a in replay.accounts] == [1, 2]
    narrative = dict(b.narrative("All tests pass."), account_revision=1)
    caused = replay.apply(narrative)
    then, now = of_kind(caused, "claim_verdict")
    assert (then["account_revision"], brief(then)) == (1, brief_of(1, "contradicted"))
    assert (now["account_revision"], now["verdict"], now["supersedes"]) == (
        2,
        "supported",
        then["verdict_id"],
    )
    [notice] = of_kind(caused, "claim_notification")
    assert notice["notification_id"] == f"run-t:2:claims:{narrative['event_id']}"
    assert notice["trigger_event_id"] == narrative["event_id"]
    assert notice["verdict_ids"] == [now["verdict_id"]]


def brief_of(settlement: int, verdict: str) -> tuple[Any, ...]:
    if verdict == "contradicted":
        return (settlement, verdict, "check:unit", "check_failing")
    return (settlement, verdict, None, "verification_pass")


def test_every_narrative_of_the_run_is_settled_by_one_notification() -> None:
    b = RunBuilder("run-m")
    replay = Replay()
    replay.apply(*unit_run(b, "pass"))
    replay.apply(b.narrative("All tests pass.", narrative_id="a"))
    replay.apply(b.narrative("Done.", narrative_id="b"))
    caused = replay.apply(b.receipt("unit", "fail"))
    verdicts = of_kind(caused, "claim_verdict")
    assert {v["narrative_id"] for v in verdicts} == {"a", "b"}
    [notice] = of_kind(caused, "claim_notification")
    assert notice["narrative_ids"] == ["a", "b"]
    assert notice["verdict_ids"] == sorted(v["verdict_id"] for v in verdicts)
