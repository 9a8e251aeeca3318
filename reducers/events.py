"""Input events (SPEC section 2) as immutable values, one class per event type.

The Avro schemas (schemas/*.avsc) are the single description of each event: the
dataclasses, the records they hold and the enums are generated from them into
`outcomes.reducers.events_generated` (`python -m outcomes.schemas.generate`) and exported
here, and the validating parser in `outcomes.reducers.validate` is derived from the
dataclasses. Events are named as facts, in the past tense, like their wire `type`.
`occurred_at` is integer microseconds since the epoch. A field added to a schema after v1
takes the schema's default (`RunStarted.model`: None), so code that builds an event without
it still runs.
"""

from __future__ import annotations

from outcomes.reducers.events_generated import (
    EVENT_CLASSES,
    AnswerChecked,
    AnswerDecision,
    Artifact,
    ArtifactChange,
    AuthoredBy,
    Candidate,
    CandidateDecision,
    CheckResult,
    CheckScope,
    Completion,
    EffectIntended,
    EffectReceiptObserved,
    EffectTransitioned,
    Event,
    FinalizeRequested,
    GoalRevised,
    InferenceStarted,
    InjectionRecorded,
    NarrativeSubmitted,
    ReceiptObservation,
    ReceiptOrigin,
    RequiredCheck,
    ResponseDisposed,
    RetrievalEvaluated,
    ReviewRecorded,
    ReviewState,
    RunCancelled,
    RunInterrupted,
    RunStarted,
    ToolFinished,
    ToolOutcome,
    ToolStarted,
    TransitionState,
    VerificationReceived,
    WorkspaceSnapshotted,
)

# The core's short names for the schemas' enums.
Scope = CheckScope
Author = AuthoredBy
Decision = CandidateDecision
EffectState = TransitionState  # what an effect.transition may move an effect to

__all__ = [
    "EVENT_CLASSES",
    "AnswerChecked",
    "AnswerDecision",
    "Artifact",
    "ArtifactChange",
    "Author",
    "AuthoredBy",
    "Candidate",
    "CandidateDecision",
    "CheckResult",
    "CheckScope",
    "Completion",
    "Decision",
    "EffectIntended",
    "EffectReceiptObserved",
    "EffectState",
    "EffectTransitioned",
    "Event",
    "FinalizeRequested",
    "GoalRevised",
    "InferenceStarted",
    "InjectionRecorded",
    "NarrativeSubmitted",
    "ReceiptObservation",
    "ReceiptOrigin",
    "RequiredCheck",
    "ResponseDisposed",
    "RetrievalEvaluated",
    "ReviewRecorded",
    "ReviewState",
    "RunCancelled",
    "RunInterrupted",
    "RunStarted",
    "Scope",
    "ToolFinished",
    "ToolOutcome",
    "ToolStarted",
    "TransitionState",
    "VerificationReceived",
    "WorkspaceSnapshotted",
]
