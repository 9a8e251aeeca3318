"""Claim verdict records (SPEC section 6): a narrative's judgements as output records."""

from __future__ import annotations

from reducers.claims import Account, Judged, judge_reading, read
from reducers.events import NarrativeSubmitted
from reducers.records import OutputRecord


def _record(
    narrative: NarrativeSubmitted, revision: int | None, index: int, judged: Judged
) -> OutputRecord:
    verdict_id = f"{narrative.run_id}:{narrative.narrative_id}:{index}"
    span = judged.span
    body = {
        "verdict_id": verdict_id,
        "run_id": narrative.run_id,
        "narrative_id": narrative.narrative_id,
        "event_id": narrative.event_id,
        "account_revision": revision,
        "claim_kind": judged.kind,
        "verdict": judged.judgement.verdict,
        "subject": judged.judgement.subject,
        "span_start": span[0] if span else None,
        "span_end": span[1] if span else None,
        "span_text": narrative.text[span[0] : span[1]] if span else None,
        "reason": judged.judgement.reason,
    }
    return OutputRecord("claim_verdict", narrative.run_id, verdict_id, body)


def check_narrative(
    narrative: NarrativeSubmitted, account: Account | None, revision: int | None
) -> list[OutputRecord]:
    """The `claim_verdict` records for one narrative against one account revision.

    `account` is the canonical body of the revision checked (None if the run has none
    yet) and `revision` its number (taken from the account when None). Claims come
    first, in text order, then omissions by subject; the verdict id's index counts both.
    """
    if revision is None and account is not None:
        revision = account.get("revision")
    judged = judge_reading(read(narrative.text), account)
    return [_record(narrative, revision, index, j) for index, j in enumerate(judged)]
