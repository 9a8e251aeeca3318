"""Input events (SPEC section 2) as immutable values, one class per event type.

The dataclass annotations are the single description of each event: the validating
parser in `outcomes.reducers.validate` is derived from them. Events are named as facts, in the
past tense, like their wire `type`. `occurred_at` is integer microseconds since the epoch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

Scope = Literal["focused", "suite"]
Author = Literal["user", "product_rule", "model"]
ToolOutcome = Literal["succeeded", "failed", "indeterminate", "not_applicable"]
EffectState = Literal[
    "prepared",
    "denied",
    "approved",
    "active",
    "unknown",
    "observed",
    "completed",
    "contradicted",
    "compensated",
]
ReceiptOrigin = Literal["provider_receipt", "provider_query", "reconciliation", "user_attestation"]
ReceiptObservation = Literal["present", "absent", "failed"]
CheckResult = Literal["pass", "fail", "indeterminate"]
ArtifactChange = Literal[
    "added", "modified", "deleted", "renamed", "generated", "excluded", "quarantined"
]
Completion = Literal["completed", "contained", "cancelled"]
ReviewState = Literal["pass", "fail", "indeterminate", "revise"]
Decision = Literal["selected", "withheld"]
# SPEC 8: what a check of an answer decided; `unchecked` is recorded by a caller that got
# no answer in time (a `stale` answer is recorded as `unchecked` too).
AnswerDecision = Literal["pass", "repair", "contain", "unchecked"]


@dataclass(frozen=True, slots=True)
class Event:
    """The envelope every event carries."""

    TYPE: ClassVar[str] = ""

    event_id: str
    run_id: str
    occurred_at: int
    source: str


# -- nested values -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RequiredCheck:
    label: str
    scope: Scope


@dataclass(frozen=True, slots=True)
class Artifact:
    path: str
    change: ArtifactChange
    digest: str | None
    renamed_from: str | None
    verification_sensitive: bool


@dataclass(frozen=True, slots=True)
class Candidate:
    candidate_id: str
    source_type: str
    source_event_id: str
    rank: int
    score: float
    eligible: bool
    decision: Decision
    withhold_reason: str | None


# -- outcomes.goal.v1 ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GoalRevised(Event):
    TYPE: ClassVar[str] = "goal.revised"

    goal_revision: int
    authored_by: Author
    deliverables: tuple[str, ...]
    required_checks: tuple[RequiredCheck, ...]
    requested_effects: tuple[str, ...]
    requested_actions: tuple[str, ...]
    target_revision: str | None


# -- outcomes.tool.v1 ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolStarted(Event):
    TYPE: ClassVar[str] = "tool.started"

    action_id: str
    tool: str


@dataclass(frozen=True, slots=True)
class ToolFinished(Event):
    TYPE: ClassVar[str] = "tool.finished"

    action_id: str
    tool: str
    outcome: ToolOutcome
    error_class: str | None


# -- outcomes.effect.v1 ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EffectIntended(Event):
    TYPE: ClassVar[str] = "effect.intent"

    intent_id: str
    effect_class: str
    target: str
    consequential: bool


@dataclass(frozen=True, slots=True)
class EffectTransitioned(Event):
    TYPE: ClassVar[str] = "effect.transition"

    intent_id: str
    state: EffectState
    attempt_id: str | None
    reason: str | None


@dataclass(frozen=True, slots=True)
class EffectReceiptObserved(Event):
    TYPE: ClassVar[str] = "effect.receipt"

    intent_id: str
    receipt_id: str
    attempt_id: str | None
    origin: ReceiptOrigin
    observed: ReceiptObservation
    authoritative: bool


# -- outcomes.verification.v1 ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VerificationReceived(Event):
    TYPE: ClassVar[str] = "verification.receipt"

    check_id: str
    label: str
    scope: Scope
    result: CheckResult
    tests_executed: int
    candidate_snapshot: str
    environment: str
    command: str
    expected_artifacts: tuple[str, ...]


# -- outcomes.workspace.v1 -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorkspaceSnapshotted(Event):
    TYPE: ClassVar[str] = "workspace.snapshot"

    snapshot_id: str
    base_revision: str | None
    sealed: bool
    artifacts: tuple[Artifact, ...]


# -- outcomes.lifecycle.v1 -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunStarted(Event):
    TYPE: ClassVar[str] = "run.started"

    agent: str
    requested_by: str
    model: str | None = None  # display and grouping only, never evidence
    task: str | None = None  # the request as worded: display and search only


@dataclass(frozen=True, slots=True)
class ResponseDisposed(Event):
    TYPE: ClassVar[str] = "response.disposition"

    completion: Completion


@dataclass(frozen=True, slots=True)
class ReviewRecorded(Event):
    TYPE: ClassVar[str] = "review.recorded"

    state: ReviewState


@dataclass(frozen=True, slots=True)
class FinalizeRequested(Event):
    TYPE: ClassVar[str] = "finalize.requested"

    candidate_snapshot: str | None


@dataclass(frozen=True, slots=True)
class RunCancelled(Event):
    TYPE: ClassVar[str] = "run.cancelled"

    reason: str | None


@dataclass(frozen=True, slots=True)
class RunInterrupted(Event):
    TYPE: ClassVar[str] = "run.interrupted"

    reason: str | None


@dataclass(frozen=True, slots=True)
class InferenceStarted(Event):
    TYPE: ClassVar[str] = "inference.started"

    model_call_id: str


# -- outcomes.retrieval.v1 / outcomes.injection.v1 -------------------------------------


@dataclass(frozen=True, slots=True)
class RetrievalEvaluated(Event):
    TYPE: ClassVar[str] = "retrieval.evaluated"

    retrieval_id: str
    job_id: str
    query_hash: str
    algorithm: str
    config_hash: str
    candidates: tuple[Candidate, ...]


@dataclass(frozen=True, slots=True)
class InjectionRecorded(Event):
    TYPE: ClassVar[str] = "injection.recorded"

    injection_id: str
    model_call_id: str
    retrieval_id: str
    candidate_ids: tuple[str, ...]
    block_hash: str
    block_bytes: int
    location: str
    range_start: int
    range_end: int
    confirmed: bool
    removed_before_inference: bool


# -- outcomes.narrative.v1 -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NarrativeSubmitted(Event):
    TYPE: ClassVar[str] = "narrative.submitted"

    narrative_id: str
    account_revision: int | None
    channel: str
    text: str


@dataclass(frozen=True, slots=True)
class AnswerChecked(Event):
    """SPEC 8 "Record": one check of a candidate answer before display. It names the
    answer chain and attempt, the decision, the account revision judged and the claims
    by verdict; `text_digest` is the sha256 (hex) of the candidate text, whose words are
    not kept: the text finally shown is the run's `narrative.submitted`."""

    TYPE: ClassVar[str] = "answer.checked"

    answer_chain_id: str
    attempt: int
    decision: AnswerDecision
    account_revision: int | None
    text_digest: str
    supported: int
    contradicted: int
    unverifiable: int
    needs_review: int
    omitted: int


EVENT_CLASSES: dict[str, type[Event]] = {
    cls.TYPE: cls
    for cls in (
        GoalRevised,
        ToolStarted,
        ToolFinished,
        EffectIntended,
        EffectTransitioned,
        EffectReceiptObserved,
        VerificationReceived,
        WorkspaceSnapshotted,
        RunStarted,
        ResponseDisposed,
        ReviewRecorded,
        FinalizeRequested,
        RunCancelled,
        RunInterrupted,
        InferenceStarted,
        RetrievalEvaluated,
        InjectionRecorded,
        NarrativeSubmitted,
        AnswerChecked,
    )
}
