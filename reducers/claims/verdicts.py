"""Claim verdict records (SPEC section 6): a narrative's judgements as output records, and
how they settle as the run's account changes.

A narrative is read once (`checker.read`); the reading is judged again against
every later revision of its run. Each claim of the text, and each omission, has a stable
key (`Judged.key`) and so a stable `claim_id`, `<run_id>:<narrative_id>:<key>`. Its first
verdict is settlement 1, with `verdict_id` = the claim id ("what was said then"); a later
judgement that changes its (kind, verdict, subject, reason) records settlement n + 1, id
`<claim_id>@<n + 1>`, which supersedes settlement n ("what is true now"). An omission
that is no longer owed gets a settlement that withdraws it (`withdrawn: true`, its last
verdict repeated); one that comes back supersedes the withdrawal. A judgement that
changes nothing records nothing. So the latest settlement of every claim is the verdict
against the run's latest revision, whatever order the events came in; the ids and the
revision numbers depend on that order, as revision numbers do.

A `needs_review` verdict (a candidate the reader could not decide, SPEC 6) is recorded
and settled like any other: a claim moves into or out of it with a new settlement and the
claim notification that lists it, it has no supported formulation, and nothing here or
downstream counts it as `contradicted` (docs/claims.md, "Claims for review").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from outcomes.reducers.claims.checker import Account, Judged, Reading, judge_reading, read
from outcomes.reducers.claims.formulation import supported_formulation
from outcomes.reducers.events import NarrativeSubmitted
from outcomes.reducers.records import OutputRecord


@dataclass(frozen=True, slots=True)
class Settled:
    """The latest verdict recorded for one claim of a narrative."""

    verdict_id: str
    settlement: int
    judged: Judged
    withdrawn: bool = False
    supported: str | None = None


@dataclass(slots=True)
class NarrativeClaims:
    """One narrative, its reading (made once, when it is applied) and the latest verdict
    recorded for each claim key. The engine keeps one per narrative in `RunState.claims`
    and updates `latest` as it records verdicts; nothing else changes it."""

    narrative: NarrativeSubmitted
    reading: Reading
    latest: dict[str, Settled] = field(default_factory=dict)

    @classmethod
    def of(cls, narrative: NarrativeSubmitted) -> NarrativeClaims:
        return cls(narrative, read(narrative.text))


def _verdict_fields(
    narrative: NarrativeSubmitted, revision: int | None, judged: Judged, supported: str | None
) -> dict[str, Any]:
    """A verdict's content: everything but its id and settlement bookkeeping."""
    span = judged.span
    judgement = judged.judgement
    return {
        "run_id": narrative.run_id,
        "narrative_id": narrative.narrative_id,
        "event_id": narrative.event_id,
        "account_revision": revision,
        "claim_kind": judged.kind,
        "verdict": judgement.verdict,
        "subject": judgement.subject,
        "span_start": span[0] if span else None,
        "span_end": span[1] if span else None,
        "span_text": narrative.text[span[0] : span[1]] if span else None,
        "reason": judgement.reason,
        "supported": supported,
    }


def claim_id(narrative: NarrativeSubmitted, key: str) -> str:
    return f"{narrative.run_id}:{narrative.narrative_id}:{key}"


def _unchanged(previous: Settled, judged: Judged) -> bool:
    return (
        not previous.withdrawn
        and previous.judged.kind == judged.kind
        and previous.judged.judgement == judged.judgement
    )


def _record(
    claims: NarrativeClaims,
    judged: Judged,
    revision: int | None,
    withdrawn: bool,
    supported: str | None,
) -> OutputRecord:
    """Record the next settlement of `judged.key` and remember it as the latest."""
    narrative = claims.narrative
    cid = claim_id(narrative, judged.key)
    previous = claims.latest.get(judged.key)
    settlement = previous.settlement + 1 if previous is not None else 1
    verdict_id = cid if settlement == 1 else f"{cid}@{settlement}"
    claims.latest[judged.key] = Settled(verdict_id, settlement, judged, withdrawn, supported)
    body = {
        "verdict_id": verdict_id,
        "claim_id": cid,
        "settlement": settlement,
        "supersedes": previous.verdict_id if previous is not None else None,
        "withdrawn": withdrawn,
        **_verdict_fields(narrative, revision, judged, supported),
    }
    return OutputRecord("claim_verdict", narrative.run_id, verdict_id, body)


def settle(
    claims: NarrativeClaims, account: Account | None, revision: int | None
) -> list[OutputRecord]:
    """Judge the narrative's reading against `account` (revision number `revision`; None:
    the run has no account yet) and record what changed since its latest verdicts: first
    verdicts, superseding verdicts, then withdrawn omissions (by key). Nothing when nothing
    changed."""
    out: list[OutputRecord] = []
    latest = claims.latest
    judged = judge_reading(claims.reading, account)
    for j in judged:
        previous = latest.get(j.key)
        if previous is None or not _unchanged(previous, j):
            supported = supported_formulation(j, account)
            out.append(_record(claims, j, revision, withdrawn=False, supported=supported))
    if len(latest) > len(judged):
        present = {j.key for j in judged}
        for key in sorted(k for k, s in latest.items() if not s.withdrawn and k not in present):
            gone = latest[key]
            out.append(_record(claims, gone.judged, revision, True, gone.supported))
    return out


def claim_notification(
    revision: Mapping[str, Any],
    verdicts: Sequence[OutputRecord],
    narrative: NarrativeSubmitted | None = None,
) -> OutputRecord:
    """The notice that `verdicts`, judged against account revision `revision` (its
    body), changed what earlier verdicts said. One per revision that changes verdicts,
    id `<run_id>:<revision>:claims`, triggered by the revision's trigger event; and one
    when `narrative`, naming an older revision, is settled against the latest as soon as
    it is applied: id `<run_id>:<revision>:claims:<event_id>`, triggered by it."""
    run_id = revision["run_id"]
    number = revision["revision"]
    notification_id = f"{run_id}:{number}:claims"
    trigger_event_id = revision["trigger_event_id"]
    if narrative is not None:
        trigger_event_id = narrative.event_id
        notification_id += f":{trigger_event_id}"
    bodies = [v.body for v in verdicts]
    body = {
        "notification_id": notification_id,
        "run_id": run_id,
        "revision": number,
        "trigger_event_id": trigger_event_id,
        "status": revision["status"],
        "observation_cutoff": revision["observation_cutoff"],
        "narrative_ids": sorted({b["narrative_id"] for b in bodies}),
        "verdict_ids": sorted(b["verdict_id"] for b in bodies),
        "superseded": sum(1 for b in bodies if b["supersedes"] is not None),
        "withdrawn": sum(1 for b in bodies if b["withdrawn"]),
    }
    return OutputRecord("claim_notification", run_id, notification_id, body)
