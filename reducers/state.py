"""Per-run state: the set of applied events, indexed by the subject each one is about.

State is a set of facts. Adding an event is the only operation; nothing in it is ever
rewritten, so arrival order and redelivery cannot change what the account is built from.
For O(1) cost per event the store is extended in place by its owner (the engine); every
value it holds is immutable, and accounts built from it are new objects.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from hashlib import sha256
from typing import TYPE_CHECKING, Any

from outcomes.reducers import events as ev

if TYPE_CHECKING:
    from outcomes.reducers.claims.verdicts import NarrativeClaims

_DIGEST_MASK = (1 << 256) - 1  # the digest is a sum of sha256 values modulo 2**256

# Which part of the account each event type can change.
CATEGORY_OF: dict[str, str] = {
    "goal.revised": "goal",
    "tool.started": "tool",
    "tool.finished": "tool",
    "effect.intent": "effect",
    "effect.transition": "effect",
    "effect.receipt": "effect",
    "verification.receipt": "verification",
    "workspace.snapshot": "workspace",
    "run.started": "inert",
    "response.disposition": "lifecycle",
    "review.recorded": "lifecycle",
    "finalize.requested": "lifecycle",
    "run.cancelled": "lifecycle",
    "run.interrupted": "lifecycle",
    "inference.started": "provenance",
    "retrieval.evaluated": "provenance",
    "injection.recorded": "provenance",
    "narrative.submitted": "inert",
    "answer.checked": "inert",
}
CATEGORIES = tuple(dict.fromkeys(CATEGORY_OF.values()))
OPENERS = frozenset({"finalize.requested", "run.cancelled", "run.interrupted"})


def _new_index() -> defaultdict[str, list[Any]]:
    """A subject -> events index; a subject's list is created on its first event."""
    return defaultdict(list)


@dataclass(slots=True)
class RunState:
    """Every event applied to one run, plus the bookkeeping of the revisions made so far."""

    run_id: str
    events: dict[str, ev.Event] = field(default_factory=dict)
    # Order-independent digest of the set of applied event ids: a sum of hashes.
    id_digest: int = 0
    cutoff: int | None = None

    goals: list[ev.GoalRevised] = field(default_factory=list)
    tools_started: dict[str, list[ev.ToolStarted]] = field(default_factory=_new_index)
    tools_finished: dict[str, list[ev.ToolFinished]] = field(default_factory=_new_index)
    intents: dict[str, list[ev.EffectIntended]] = field(default_factory=_new_index)
    transitions: dict[str, list[ev.EffectTransitioned]] = field(default_factory=_new_index)
    receipts: dict[str, list[ev.EffectReceiptObserved]] = field(default_factory=_new_index)
    verifications: dict[str, list[ev.VerificationReceived]] = field(default_factory=_new_index)
    snapshots: dict[str, list[ev.WorkspaceSnapshotted]] = field(default_factory=_new_index)
    lifecycle: dict[str, list[ev.Event]] = field(default_factory=_new_index)
    inferences: dict[str, list[ev.InferenceStarted]] = field(default_factory=_new_index)
    retrievals: dict[str, list[ev.RetrievalEvaluated]] = field(default_factory=_new_index)
    injections: dict[str, list[ev.InjectionRecorded]] = field(default_factory=_new_index)
    narratives: list[ev.NarrativeSubmitted] = field(default_factory=list)
    answer_checks: list[ev.AnswerChecked] = field(default_factory=list)

    # Whether a finalize request, cancellation or interruption was ever applied.
    opened: bool = False
    # A counter per category of event, bumped on every add: the assembler recomputes a
    # section of the account only when a category it reads has moved on.
    generations: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    # Derived data only (section results of the last assembly); never a source of truth.
    # Keyed by section: (the generations it read: a tuple, or an int for one category,
    # result).
    cache: dict[str, tuple[tuple[int, ...] | int, Any]] = field(default_factory=dict)

    # Revision bookkeeping: what the last revision said, to decide whether to make another.
    revision: int = 0
    last_content: dict[str, Any] | None = None
    # Bodies of the most recent revisions (the last is number `revision`): narratives
    # name the one they explain. Bounded by outcomes.reducers.engine.REVISIONS_RETAINED.
    revisions: list[dict[str, Any]] = field(default_factory=list)
    # Every narrative applied, in order, with its reading and its latest verdicts: each
    # new revision settles them again (outcomes.reducers.claims.verdicts). Empty for most runs.
    claims: list[NarrativeClaims] = field(default_factory=list)

    @property
    def state_revision(self) -> str:
        return f"{self.id_digest:064x}"

    def add(self, event: ev.Event) -> None:
        """Record a new event (the caller has checked that its id is new)."""
        event_id = event.event_id
        self.events[event_id] = event
        digest = sha256(event_id.encode("utf-8")).digest()
        self.id_digest = (self.id_digest + int.from_bytes(digest, "big")) & _DIGEST_MASK
        occurred_at = event.occurred_at
        cutoff = self.cutoff
        if cutoff is None or occurred_at > cutoff:
            self.cutoff = occurred_at
        file, category, opens = _FILING[event.TYPE]
        file(self, event)
        self.generations[category] += 1
        if opens:
            self.opened = True


def _file_inference(state: RunState, event: ev.InferenceStarted) -> None:
    state.inferences[event.model_call_id].append(event)
    state.lifecycle[event.TYPE].append(event)


# One small function per event type: where the event is filed in the state.
_INDEXERS: dict[str, Callable[[RunState, Any], None]] = {
    "goal.revised": lambda s, e: s.goals.append(e),
    "tool.started": lambda s, e: s.tools_started[e.action_id].append(e),
    "tool.finished": lambda s, e: s.tools_finished[e.action_id].append(e),
    "effect.intent": lambda s, e: s.intents[e.intent_id].append(e),
    "effect.transition": lambda s, e: s.transitions[e.intent_id].append(e),
    "effect.receipt": lambda s, e: s.receipts[e.intent_id].append(e),
    "verification.receipt": lambda s, e: s.verifications[e.label].append(e),
    "workspace.snapshot": lambda s, e: s.snapshots[e.snapshot_id].append(e),
    "run.started": lambda s, e: s.lifecycle[e.TYPE].append(e),
    "response.disposition": lambda s, e: s.lifecycle[e.TYPE].append(e),
    "review.recorded": lambda s, e: s.lifecycle[e.TYPE].append(e),
    "finalize.requested": lambda s, e: s.lifecycle[e.TYPE].append(e),
    "run.cancelled": lambda s, e: s.lifecycle[e.TYPE].append(e),
    "run.interrupted": lambda s, e: s.lifecycle[e.TYPE].append(e),
    "inference.started": lambda s, e: _file_inference(s, e),
    "retrieval.evaluated": lambda s, e: s.retrievals[e.retrieval_id].append(e),
    "injection.recorded": lambda s, e: s.injections[e.injection_id].append(e),
    "narrative.submitted": lambda s, e: s.narratives.append(e),
    "answer.checked": lambda s, e: s.answer_checks.append(e),
}

# Per event type, in one lookup: where it is filed, its category, whether it opens the
# account.
_FILING: dict[str, tuple[Callable[[RunState, Any], None], str, bool]] = {
    kind: (_INDEXERS[kind], CATEGORY_OF[kind], kind in OPENERS) for kind in CATEGORY_OF
}
