"""Per-run state: the set of applied events, indexed by the subject each one is about.

State is a set of facts. Adding an event is the only operation; nothing in it is ever
rewritten, so arrival order and redelivery cannot change what the account is built from.
For O(1) cost per event the store is extended in place by its owner (the engine); every
value it holds is immutable, and accounts built from it are new objects.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from reducers import events as ev

_DIGEST_MODULUS = 1 << 256

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
}
CATEGORIES = tuple(dict.fromkeys(CATEGORY_OF.values()))
OPENERS = frozenset({"finalize.requested", "run.cancelled", "run.interrupted"})


def _event_id_hash(event_id: str) -> int:
    return int.from_bytes(hashlib.sha256(event_id.encode("utf-8")).digest(), "big")


@dataclass(slots=True)
class RunState:
    """Every event applied to one run, plus the bookkeeping of the revisions made so far."""

    run_id: str
    events: dict[str, ev.Event] = field(default_factory=dict)
    # Order-independent digest of the set of applied event ids: a sum of hashes.
    id_digest: int = 0
    cutoff: int | None = None

    goals: list[ev.GoalRevised] = field(default_factory=list)
    tools_started: dict[str, list[ev.ToolStarted]] = field(
        default_factory=lambda: defaultdict(list)
    )
    tools_finished: dict[str, list[ev.ToolFinished]] = field(
        default_factory=lambda: defaultdict(list)
    )
    intents: dict[str, list[ev.EffectIntended]] = field(default_factory=lambda: defaultdict(list))
    transitions: dict[str, list[ev.EffectTransitioned]] = field(
        default_factory=lambda: defaultdict(list)
    )
    receipts: dict[str, list[ev.EffectReceiptObserved]] = field(
        default_factory=lambda: defaultdict(list)
    )
    verifications: dict[str, list[ev.VerificationReceived]] = field(
        default_factory=lambda: defaultdict(list)
    )
    snapshots: dict[str, list[ev.WorkspaceSnapshotted]] = field(
        default_factory=lambda: defaultdict(list)
    )
    lifecycle: dict[str, list[ev.Event]] = field(default_factory=lambda: defaultdict(list))
    inferences: dict[str, list[ev.InferenceStarted]] = field(
        default_factory=lambda: defaultdict(list)
    )
    retrievals: dict[str, list[ev.RetrievalEvaluated]] = field(
        default_factory=lambda: defaultdict(list)
    )
    injections: dict[str, list[ev.InjectionRecorded]] = field(
        default_factory=lambda: defaultdict(list)
    )
    narratives: list[ev.NarrativeSubmitted] = field(default_factory=list)

    # Whether a finalize request, cancellation or interruption was ever applied.
    opened: bool = False
    # A counter per category of event, bumped on every add: the assembler recomputes a
    # section of the account only when a category it reads has moved on.
    generations: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    # Derived data only (section results of the last assembly); never a source of truth.
    cache: dict[str, tuple[tuple[int, ...], Any]] = field(default_factory=dict)

    # Revision bookkeeping: what the last revision said, to decide whether to make another.
    revision: int = 0
    last_content: dict[str, Any] | None = None
    # The body of every revision made, by number - 1: narratives name the one they explain.
    revisions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def state_revision(self) -> str:
        return f"{self.id_digest:064x}"

    def add(self, event: ev.Event) -> None:
        """Record a new event (the caller has checked that its id is new)."""
        self.events[event.event_id] = event
        self.id_digest = (self.id_digest + _event_id_hash(event.event_id)) % _DIGEST_MODULUS
        if self.cutoff is None or event.occurred_at > self.cutoff:
            self.cutoff = event.occurred_at
        _INDEXERS[type(event)](self, event)
        category = CATEGORY_OF[event.TYPE]
        self.generations[category] += 1
        if event.TYPE in OPENERS:
            self.opened = True


def _lifecycle(state: RunState, event: ev.Event) -> None:
    state.lifecycle[event.TYPE].append(event)


def _index_inference(state: RunState, event: ev.Event) -> None:
    assert isinstance(event, ev.InferenceStarted)
    state.inferences[event.model_call_id].append(event)
    _lifecycle(state, event)


def _keyed(attribute: str, key: str) -> Any:
    def index(state: RunState, event: ev.Event) -> None:
        getattr(state, attribute)[getattr(event, key)].append(event)

    return index


def _listed(attribute: str) -> Any:
    def index(state: RunState, event: ev.Event) -> None:
        getattr(state, attribute).append(event)

    return index


_INDEXERS: dict[type[ev.Event], Any] = {
    ev.GoalRevised: _listed("goals"),
    ev.ToolStarted: _keyed("tools_started", "action_id"),
    ev.ToolFinished: _keyed("tools_finished", "action_id"),
    ev.EffectIntended: _keyed("intents", "intent_id"),
    ev.EffectTransitioned: _keyed("transitions", "intent_id"),
    ev.EffectReceiptObserved: _keyed("receipts", "intent_id"),
    ev.VerificationReceived: _keyed("verifications", "label"),
    ev.WorkspaceSnapshotted: _keyed("snapshots", "snapshot_id"),
    ev.RunStarted: _lifecycle,
    ev.ResponseDisposed: _lifecycle,
    ev.ReviewRecorded: _lifecycle,
    ev.FinalizeRequested: _lifecycle,
    ev.RunCancelled: _lifecycle,
    ev.RunInterrupted: _lifecycle,
    ev.InferenceStarted: _index_inference,
    ev.RetrievalEvaluated: _keyed("retrievals", "retrieval_id"),
    ev.InjectionRecorded: _keyed("injections", "injection_id"),
    ev.NarrativeSubmitted: _listed("narratives"),
}
