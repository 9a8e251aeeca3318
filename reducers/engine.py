"""The reducer: `fold(state, event) -> (state, outputs)`, and an engine over many runs.

Folding an event adds it to the run's fact set; when the run has an account (SPEC 3.1)
and the account's content changed, it emits the next revision, its notification and any
provenance finding rows. Retrieval and injection events emit their journal rows the
first time they are applied, and so does a check of an answer (`answer.checked`, SPEC 8:
one `answer_check` row, no change to the account); a narrative emits its claim
verdicts, and every later revision settles them again (SPEC 6,
`reducers/claims/verdicts.py`). Redelivery of an event (same id, same content) emits
nothing; the same id with different content is rejected (`event_id_conflict`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from outcomes.reducers import events as ev
from outcomes.reducers.account import assemble
from outcomes.reducers.answers import answer_check_id
from outcomes.reducers.claims.verdicts import NarrativeClaims, claim_notification, settle
from outcomes.reducers.errors import InvalidEvent
from outcomes.reducers.records import OutputRecord
from outcomes.reducers.state import RunState
from outcomes.reducers.timefmt import format_rfc3339

# Account fields grouped under the names the `changes` list uses (SPEC section 3).
CHANGE_SECTIONS: dict[str, tuple[str, ...]] = {
    "status": ("status",),
    "predicates": ("predicates",),
    "checks": ("checks",),
    "effects": ("effects",),
    "artifacts": ("artifacts",),
    "contradictions": ("contradictions",),
    "findings": ("provenance_findings",),
    # Beyond the SPEC's list, so that every revision names what made it.
    "dimensions": ("dimensions",),
    "actions": ("actions",),
    "workflow_status": ("workflow_status",),
    "goal": (
        "goal_revision",
        "ignored_goal_proposals",
        "requirement_policy",
        "requirement_source",
    ),
    "candidate": ("candidate_snapshot",),
}

# Events whose application can never change an account's content.
_INERT = frozenset({ev.RunStarted, ev.NarrativeSubmitted, ev.AnswerChecked})
# Events that emit journal rows of their own.
_JOURNALLED = frozenset({ev.RetrievalEvaluated, ev.InjectionRecorded, ev.AnswerChecked})


# Revision bodies kept per run for narratives to name: the most recent ones. Keeping
# all of them made a long run's memory grow with the square of its length.
REVISIONS_RETAINED = 64


def _verdicts(state: RunState, narrative: ev.NarrativeSubmitted) -> list[OutputRecord]:
    """SPEC 6: judge the narrative against the revision it names if it is still retained,
    else the latest ("what was said then"); if it named an older one, settle it against
    the latest at once ("what is true now"). Later revisions settle it again (`_revise`).
    """
    named = narrative.account_revision
    first_retained = state.revision - len(state.revisions) + 1
    latest: dict[str, Any] | None = state.revisions[-1] if state.revisions else None
    body = latest
    if named is not None and first_retained <= named <= state.revision:
        body = state.revisions[named - first_retained]
    claims = NarrativeClaims.of(narrative)
    state.claims.append(claims)
    outputs = settle(claims, body, body["revision"] if body is not None else None)
    if body is not latest:
        assert latest is not None
        now = settle(claims, latest, latest["revision"])
        if now:
            outputs += now
            outputs.append(claim_notification(latest, now, narrative))
    return outputs


def _resettle(state: RunState, body: dict[str, Any]) -> list[OutputRecord]:
    """Every narrative of the run judged again against a new revision: the verdicts
    that changed, and one notification for them all."""
    revision = body["revision"]
    outputs: list[OutputRecord] = []
    for claims in state.claims:
        outputs += settle(claims, body, revision)
    if outputs:
        outputs.append(claim_notification(body, outputs))
    return outputs


def fold(state: RunState, event: ev.Event) -> tuple[RunState, list[OutputRecord]]:
    """Apply one event to its run's state; return the state and the outputs it caused.

    Raises `InvalidEvent("event_id_conflict")` (leaving the state untouched) when the id
    was applied before with different content.
    """
    if event.run_id != state.run_id:
        raise ValueError(f"event {event.event_id} belongs to {event.run_id}, not {state.run_id}")
    known = state.events.get(event.event_id)
    if known is not None:
        if known == event:
            return state, []
        raise InvalidEvent(
            "event_id_conflict",
            f"event_id {event.event_id} was applied before with different content "
            f"(first: {known.TYPE} at {format_rfc3339(known.occurred_at)})",
        )
    state.add(event)
    kind = type(event)
    outputs = list(_journal_rows(event)) if kind in _JOURNALLED else []
    if kind is ev.NarrativeSubmitted:
        assert isinstance(event, ev.NarrativeSubmitted)
        outputs += _verdicts(state, event)
    if not state.opened or kind in _INERT:
        return state, outputs
    content = assemble(state)
    if content is not None and content != state.last_content:
        outputs += _revise(state, content, event)
    return state, outputs


def _revise(state: RunState, content: dict[str, Any], trigger: ev.Event) -> list[OutputRecord]:
    previous = state.last_content
    state.revision += 1
    revision = state.revision
    supersedes = revision - 1 if revision > 1 else None
    assert state.cutoff is not None
    cutoff = format_rfc3339(state.cutoff)
    revision_id = f"{state.run_id}:{revision}"
    body = {
        "revision_id": revision_id,
        **content,
        "revision": revision,
        "supersedes": supersedes,
        "state_revision": state.state_revision,
        "observation_cutoff": cutoff,
        "trigger_event_id": trigger.event_id,
        "changes": _changes(previous, content),
    }
    state.last_content = content
    state.revisions.append(body)
    if len(state.revisions) > REVISIONS_RETAINED:
        del state.revisions[0]
    outputs = [OutputRecord("account_revision", state.run_id, revision_id, body)]
    if previous is None or _notifiable(previous, content):
        notification = {
            "notification_id": revision_id,
            "run_id": state.run_id,
            "kind": "account.final" if previous is None else "account.superseded",
            "revision": revision,
            "supersedes": supersedes,
            "status": content["status"],
            "previous_status": previous["status"] if previous else None,
            "completion_automation": content["status"] == "complete",
            "observation_cutoff": cutoff,
        }
        outputs.append(OutputRecord("notification", state.run_id, revision_id, notification))
    outputs += _finding_rows(state, previous, content, trigger, revision)
    if state.claims:
        outputs += _resettle(state, body)
    return outputs


def _changes(previous: dict[str, Any] | None, content: dict[str, Any]) -> list[str]:
    if previous is None:
        return []
    changed = []
    for name, keys in _CHANGE_SECTIONS_SORTED:
        for key in keys:
            before, after = previous[key], content[key]
            # A section served from the cache is the very same object: no deep compare.
            if before is not after and before != after:
                changed.append(name)
                break
    return changed


_CHANGE_SECTIONS_SORTED = sorted(CHANGE_SECTIONS.items())


def _required_states(content: dict[str, Any]) -> dict[str, str]:
    return {p["id"]: p["state"] for p in content["predicates"] if p["required"]}


def _unresolved(content: dict[str, Any]) -> set[str]:
    return {e["intent_id"] for e in content["effects"] if e["unresolved"]}


def _notifiable(previous: dict[str, Any], content: dict[str, Any]) -> bool:
    """SPEC section 4: status, a required predicate's state, contradictions or unresolved
    effects changed."""
    return (
        previous["status"] != content["status"]
        or _required_states(previous) != _required_states(content)
        or previous["contradictions"] != content["contradictions"]
        or _unresolved(previous) != _unresolved(content)
    )


def _finding_rows(
    state: RunState,
    previous: dict[str, Any] | None,
    content: dict[str, Any],
    trigger: ev.Event,
    revision: int,
) -> Iterator[OutputRecord]:
    findings_before = previous["provenance_findings"] if previous is not None else []
    if findings_before == content["provenance_findings"]:  # nothing raised or withdrawn
        return
    before = {(f["kind"], f["subject"]): f for f in findings_before}
    after = {(f["kind"], f["subject"]): f for f in content["provenance_findings"]}
    for key in sorted(before.keys() | after.keys()):
        if (key in before) == (key in after):
            continue
        change, finding = ("raised", after[key]) if key in after else ("withdrawn", before[key])
        kind, subject = key
        row_id = f"{state.run_id}:finding:{kind}:{subject}:{revision}"
        yield OutputRecord(
            "provenance_row",
            state.run_id,
            row_id,
            {
                "row_id": row_id,
                "run_id": state.run_id,
                "row_type": "finding",
                "event_id": trigger.event_id,
                "occurred_at": format_rfc3339(trigger.occurred_at),
                "retrieval": None,
                "injection": None,
                "finding": {
                    "kind": kind,
                    "subject": subject,
                    "evidence": finding["evidence"],
                    "change": change,
                    "revision": revision,
                },
            },
        )


def _journal_rows(event: ev.Event) -> Iterator[OutputRecord]:
    """Retrieval and injection receipts and answer checks as journal rows, once per
    applied event."""
    if isinstance(event, ev.AnswerChecked):
        yield answer_check_row(event)
    elif isinstance(event, ev.RetrievalEvaluated):
        for c in event.candidates:
            row_id = f"{event.run_id}:retrieval:{event.retrieval_id}:{c.candidate_id}"
            retrieval = {
                "retrieval_id": event.retrieval_id,
                "job_id": event.job_id,
                "query_hash": event.query_hash,
                "algorithm": event.algorithm,
                "config_hash": event.config_hash,
                "candidate_id": c.candidate_id,
                "source_type": c.source_type,
                "source_event_id": c.source_event_id,
                "rank": c.rank,
                "score": c.score,
                "eligible": c.eligible,
                "decision": c.decision,
                "withhold_reason": c.withhold_reason,
            }
            yield _provenance(event, row_id, "retrieval_candidate", retrieval=retrieval)
    elif isinstance(event, ev.InjectionRecorded):
        row_id = f"{event.run_id}:injection:{event.injection_id}:{event.event_id}"
        injection = {
            "injection_id": event.injection_id,
            "model_call_id": event.model_call_id,
            "retrieval_id": event.retrieval_id,
            "candidate_ids": list(event.candidate_ids),
            "block_hash": event.block_hash,
            "block_bytes": event.block_bytes,
            "location": event.location,
            "range_start": event.range_start,
            "range_end": event.range_end,
            "confirmed": event.confirmed,
            "removed_before_inference": event.removed_before_inference,
        }
        yield _provenance(event, row_id, "context_injection", injection=injection)


def answer_check_row(event: ev.AnswerChecked) -> OutputRecord:
    """The `answer_check` row of one check (docs/records.md): keyed by the answer chain
    and attempt, so the first recorded check of an attempt is the one kept."""
    check_id = answer_check_id(event.run_id, event.answer_chain_id, event.attempt)
    body = {
        "check_id": check_id,
        "run_id": event.run_id,
        "event_id": event.event_id,
        "occurred_at": format_rfc3339(event.occurred_at),
        "source": event.source,
        "answer_chain_id": event.answer_chain_id,
        "attempt": event.attempt,
        "decision": event.decision,
        "account_revision": event.account_revision,
        "text_digest": event.text_digest,
        "supported": event.supported,
        "contradicted": event.contradicted,
        "unverifiable": event.unverifiable,
        "needs_review": event.needs_review,
        "omitted": event.omitted,
    }
    return OutputRecord("answer_check", event.run_id, check_id, body)


def _provenance(
    event: ev.Event,
    row_id: str,
    row_type: str,
    retrieval: dict[str, Any] | None = None,
    injection: dict[str, Any] | None = None,
) -> OutputRecord:
    body = {
        "row_id": row_id,
        "run_id": event.run_id,
        "row_type": row_type,
        "event_id": event.event_id,
        "occurred_at": format_rfc3339(event.occurred_at),
        "retrieval": retrieval,
        "injection": injection,
        "finding": None,
    }
    return OutputRecord("provenance_row", event.run_id, row_id, body)


class Engine:
    """Runs `fold` over many runs, keeping each run's state in memory."""

    def __init__(self) -> None:
        self.runs: dict[str, RunState] = {}

    def state(self, run_id: str) -> RunState:
        state = self.runs.get(run_id)
        if state is None:
            state = self.runs[run_id] = RunState(run_id)
        return state

    def knows(self, event: ev.Event) -> bool:
        """Whether an event with this id was applied to its run before."""
        state = self.runs.get(event.run_id)
        return state is not None and event.event_id in state.events

    def apply(self, event: ev.Event) -> list[OutputRecord]:
        """Fold one event into its run; raises `InvalidEvent` for an id conflict."""
        _, outputs = fold(self.state(event.run_id), event)
        return outputs
