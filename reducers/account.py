"""Account assembly: a pure function from a run's set of events to the account's content.

`assemble` returns the content fields of SPEC section 3 in canonical JSON form (the
bookkeeping fields `revision`, `supersedes`, `state_revision`, `observation_cutoff`,
`trigger_event_id` and `changes` are added by the engine). Every "latest" is by
(`occurred_at`, `event_id`), a total order, so the result depends on the set of events
only, never on the order they arrived in.

The account is built from sections (goal, candidate, checks, effects, actions, …). Each
section declares the categories of events it reads; its result is cached in the state
and recomputed only when one of those categories received an event, so a late receipt
re-derives the effects, not the whole account. Index reads use `.get()`: the state's
indexes are defaultdicts and assembly must not add keys to them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import Any, TypeVar

from outcomes.reducers import events as ev
from outcomes.reducers.catalog import ASSEMBLER_VERSION, SCHEMA_VERSION
from outcomes.reducers.state import RunState
from outcomes.reducers.timefmt import format_rfc3339

E = TypeVar("E", bound=ev.Event)
T = TypeVar("T")
Json = dict[str, Any]

PRESENT_CHANGES = frozenset({"added", "modified", "generated", "renamed"})
REMOVED_CHANGES = frozenset({"deleted", "excluded", "quarantined"})
UNRESOLVED_EFFECT_STATES = frozenset(
    {"prepared", "approved", "active", "unknown", "observed", "contradicted"}
)
GOAL_AUTHORITIES = frozenset({"user", "product_rule"})
GOAL_DERIVED_PREFIXES = ("deliverable:", "check:", "effect:", "action:")

SATISFIED, UNSATISFIED, INDETERMINATE = "satisfied", "unsatisfied", "indeterminate"


def latest(items: Iterable[E]) -> E | None:
    """The latest event by (`occurred_at`, `event_id`), or None."""
    return max(items, key=_order, default=None)


# (`occurred_at`, `event_id`) of an event, as a C-level key function.
_order: Callable[[ev.Event], tuple[int, str]] = attrgetter("occurred_at", "event_id")


def _ids(events: Iterable[ev.Event]) -> list[str]:
    return sorted({event.event_id for event in events})


def _evidence(event: ev.Event, value: str) -> Json:
    return {
        "event_id": event.event_id,
        "value": value,
        "occurred_at": format_rfc3339(event.occurred_at),
    }


def _sorted_evidence(items: list[Json]) -> list[Json]:
    return sorted(items, key=itemgetter("occurred_at", "event_id", "value"))


def _predicate(pid: str, state: str, reason: str, evidence: Iterable[ev.Event]) -> Json:
    return {
        "id": pid,
        "required": True,
        "state": state,
        "reason": reason,
        "evidence": _ids(evidence),
    }


def _contradiction(subject: str, kind: str, evidence: list[Json]) -> Json:
    return {"subject": subject, "kind": kind, "evidence": _sorted_evidence(evidence)}


def _section(state: RunState, name: str, reads: tuple[str, ...], build: Callable[[], T]) -> T:
    """`build()`, or its cached result if no event of the categories it reads arrived since."""
    stamper = _STAMPERS.get(name)
    if stamper is None:
        stamper = _STAMPERS[name] = itemgetter(*reads)
    stamp = stamper(state.generations)
    cached = state.cache.get(name)
    if cached is not None and cached[0] == stamp:
        result: T = cached[1]
        return result
    result = build()
    state.cache[name] = (stamp, result)
    return result


# Per section name, the generations of the categories it reads as one C-level getter (a
# tuple, or an int for one category).
_STAMPERS: dict[str, Callable[[dict[str, int]], Any]] = {}


# -- snapshots ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SnapshotView:
    """What the run knows of one snapshot id, over all of its reports."""

    snapshot_id: str
    reports: tuple[ev.WorkspaceSnapshotted, ...]
    sealed: bool
    conflict: bool
    base_revision: str | None
    inventory: dict[str, ev.Artifact]

    @classmethod
    def of(cls, snapshot_id: str, reports: Sequence[ev.WorkspaceSnapshotted]) -> SnapshotView:
        chosen = latest(reports)
        assert chosen is not None
        first = reports[0]
        conflict = any(
            r.base_revision != first.base_revision or set(r.artifacts) != set(first.artifacts)
            for r in reports[1:]
        )
        return cls(
            snapshot_id=snapshot_id,
            reports=tuple(reports),
            sealed=any(r.sealed for r in reports),
            conflict=conflict,
            base_revision=chosen.base_revision,
            inventory={a.path: a for a in chosen.artifacts},
        )


def _views(state: RunState) -> dict[str, SnapshotView]:
    def build() -> dict[str, SnapshotView]:
        return {sid: SnapshotView.of(sid, reports) for sid, reports in state.snapshots.items()}

    return _section(state, "views", ("workspace",), build)


def _variant_value(report: ev.WorkspaceSnapshotted) -> str:
    inventory = sorted((a.path, a.change, a.digest or "") for a in report.artifacts)
    digest = hashlib.sha256(repr(inventory).encode()).hexdigest()[:12]
    return f"base_revision={report.base_revision}; artifacts={len(inventory)}; inventory={digest}"


def _sensitive_difference(a: SnapshotView, b: SnapshotView) -> bool:
    """Whether a verification-sensitive artifact differs (path set or digest)."""
    paths = {p for p, art in a.inventory.items() if art.verification_sensitive}
    paths |= {p for p, art in b.inventory.items() if art.verification_sensitive}
    for path in paths:
        left, right = a.inventory.get(path), b.inventory.get(path)
        if left is None or right is None or left.digest != right.digest:
            return True
    return False


def _snapshot_conflicts(state: RunState) -> list[Json]:
    def build() -> list[Json]:
        return [
            _contradiction(
                f"snapshot:{view.snapshot_id}",
                "snapshot_conflict",
                [_evidence(r, _variant_value(r)) for r in view.reports],
            )
            for _, view in sorted(_views(state).items())
            if view.conflict
        ]

    return _section(state, "snapshot_conflicts", ("workspace",), build)


# -- when an account exists, and what it judges -----------------------------------------


@dataclass(frozen=True, slots=True)
class Candidate:
    """Whether an account exists, and the snapshot it judges."""

    exists: bool
    snapshot: SnapshotView | None


def _candidate(state: RunState) -> Candidate:
    def build() -> Candidate:
        views = _views(state)
        lifecycle = state.lifecycle

        def ready(request: ev.Event) -> bool:
            assert isinstance(request, ev.FinalizeRequested)
            if request.candidate_snapshot is None:
                return True
            view = views.get(request.candidate_snapshot)
            return view is not None and view.sealed

        chosen = latest(r for r in lifecycle.get("finalize.requested", ()) if ready(r))
        if chosen is not None:
            assert isinstance(chosen, ev.FinalizeRequested)
            named = chosen.candidate_snapshot
            return Candidate(True, views[named] if named is not None else None)
        if lifecycle.get("run.cancelled") or lifecycle.get("run.interrupted"):
            newest = latest(r for reports in state.snapshots.values() for r in reports)
            return Candidate(True, views[newest.snapshot_id] if newest else None)
        return Candidate(False, None)

    return _section(state, "candidate", ("lifecycle", "workspace"), build)


# -- goal --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Goal:
    """The goal in force (if any), its predicate, and the ignored model proposals."""

    goal: ev.GoalRevised | None
    predicate: Json
    ignored: list[Json]


def _goal(state: RunState) -> Goal:
    def build() -> Goal:
        authorised = [g for g in state.goals if g.authored_by in GOAL_AUTHORITIES]
        goal = max(
            authorised, key=attrgetter("goal_revision", "occurred_at", "event_id"), default=None
        )
        if goal is None:
            predicate = _predicate("goal.in_force", INDETERMINATE, "missing", ())
        else:
            predicate = _predicate("goal.in_force", SATISFIED, goal.authored_by, (goal,))
        ignored = sorted(
            (
                {"goal_revision": g.goal_revision, "event_id": g.event_id}
                for g in state.goals
                if g.authored_by == "model"
            ),
            key=itemgetter("goal_revision", "event_id"),
        )
        return Goal(goal, predicate, ignored)

    return _section(state, "goal", ("goal",), build)


# -- what the goal requires: stated names and patterns over what the run did ------------------

OBSERVED = "*"
"""The pattern that requires everything of its kind the run did (SPEC 3.2, a goal without
structure): as a required check label, every label the run has a receipt for; as a
requested effect, every effect the run attempted. A run that did nothing of the kind is
required nothing by it."""


def _matches(pattern: str, name: str) -> bool:
    """Whether `name` matches `pattern`, where `*` stands for any text (nothing else is
    special: labels are commands, whose brackets and question marks are literal)."""
    first, *middle, last = pattern.split("*")
    if not name.startswith(first):
        return False
    at = len(first)
    for part in middle:
        found = name.find(part, at)
        if found < 0:
            return False
        at = found + len(part)
    return name.endswith(last) and len(name) - len(last) >= at


def requirement_ids(wanted: str, known: Iterable[str]) -> list[str]:
    """The ids one goal entry requires among the `known` ids (check labels with a receipt,
    effect intents with an event): a name requires itself; a pattern (with `*`) requires
    every known id it matches and, when it matches none, itself (its predicate says
    `missing` or `pending`), except `*` alone, which requires only what the run did."""
    if "*" not in wanted:
        return [wanted]
    matched = [name for name in known if _matches(wanted, name)]
    if matched or wanted == OBSERVED:
        return matched
    return [wanted]


def requirement_policy(goal: ev.GoalRevised | None) -> tuple[str | None, str | None]:
    """(`requirement_policy`, `requirement_source`) of the account: how the goal in force
    states what done requires, and where that goal came from (its `source`).

    `stated`: the goal names its requirements; `observed`: it requires what the run did
    (`*` as a required check or requested effect) and names nothing else; `stated+observed`:
    both. None without a goal in force."""
    if goal is None:
        return None, None
    observed = any(r.label == OBSERVED for r in goal.required_checks) or (
        OBSERVED in goal.requested_effects
    )
    stated = (
        bool(goal.deliverables)
        or any(r.label != OBSERVED for r in goal.required_checks)
        or any(e != OBSERVED for e in goal.requested_effects)
        or bool(goal.requested_actions)
        or goal.target_revision is not None
    )
    if observed:
        return ("stated+observed" if stated else "observed"), goal.source
    return "stated", goal.source


# -- workspace predicates ------------------------------------------------------------------


def _workspace_predicates(state: RunState) -> list[Json]:
    def build() -> list[Json]:
        goal = _goal(state).goal
        cand = _candidate(state).snapshot
        out: list[Json] = []
        reports: tuple[ev.Event, ...] = cand.reports if cand else ()
        if cand is not None:
            if cand.conflict:
                out.append(_predicate("workspace.sealed", INDETERMINATE, "conflict", reports))
            elif cand.sealed:
                out.append(_predicate("workspace.sealed", SATISFIED, "sealed", reports))
            else:
                out.append(_predicate("workspace.sealed", UNSATISFIED, "unsealed", reports))
        if goal is None:
            return out
        if goal.target_revision is not None:
            evidence = (goal, *reports)
            if cand is None or cand.conflict or cand.base_revision is None:
                out.append(_predicate("candidate.target", INDETERMINATE, "unknown", evidence))
            elif cand.base_revision == goal.target_revision:
                out.append(_predicate("candidate.target", SATISFIED, "match", evidence))
            else:
                out.append(_predicate("candidate.target", UNSATISFIED, "mismatch", evidence))
        for path in sorted(set(goal.deliverables)):
            pid = f"deliverable:{path}"
            if cand is not None and cand.conflict:
                out.append(_predicate(pid, INDETERMINATE, "conflict", reports))
                continue
            artifact = cand.inventory.get(path) if cand else None
            if artifact is None:
                out.append(_predicate(pid, UNSATISFIED, "absent", reports))
            elif artifact.change in PRESENT_CHANGES:
                out.append(_predicate(pid, SATISFIED, artifact.change, reports))
            else:
                out.append(_predicate(pid, UNSATISFIED, artifact.change, reports))
        return out

    return _section(state, "workspace_predicates", ("goal", "lifecycle", "workspace"), build)


# -- checks --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Checks:
    """Check predicates, the `checks` list, and check contradictions."""

    predicates: list[Json]
    rows: list[Json]
    contradictions: list[Json]


def _check_state(
    receipt: ev.VerificationReceived, own: SnapshotView | None, cand: SnapshotView | None
) -> str:
    """The state of a receipt against the account's candidate snapshot (SPEC 3.3)."""
    if (
        cand is not None
        and receipt.candidate_snapshot != cand.snapshot_id
        and (own is None or _sensitive_difference(own, cand))
    ):
        return "stale"
    if receipt.result == "indeterminate":
        return "indeterminate"
    if receipt.result == "fail":
        return "failing"
    return "passing" if receipt.tests_executed > 0 else "zero_tests"


def _missing_artifacts(
    receipt: ev.VerificationReceived, own: SnapshotView | None, cand: SnapshotView
) -> list[tuple[str, str]]:
    """Expected artifacts the candidate lacks: (path, what the candidate says of it)."""
    missing: list[tuple[str, str]] = []
    for path in sorted(set(receipt.expected_artifacts)):
        entry = cand.inventory.get(path)
        if entry is not None and entry.change in REMOVED_CHANGES:
            missing.append((path, entry.change))
        elif entry is None and own is not None and path in own.inventory:
            missing.append((path, "absent"))
    return missing


def _artifact_contradiction(
    pid: str,
    receipt: ev.VerificationReceived,
    own: SnapshotView | None,
    cand: SnapshotView,
    missing: list[tuple[str, str]],
) -> Json:
    """`check_pass_artifact_missing`, with the candidate's word on each path and, where
    the candidate is silent, the receipt's own snapshot that listed it."""
    said_by_candidate = latest(cand.reports)
    said_by_own = latest(own.reports) if own else None
    assert said_by_candidate is not None
    evidence = [_evidence(receipt, "pass")]
    for path, said in missing:
        evidence.append(_evidence(said_by_candidate, f"{path}: {said}"))
        if said == "absent" and said_by_own is not None and own is not None:
            evidence.append(_evidence(said_by_own, f"{path}: {own.inventory[path].change}"))
    return _contradiction(pid, "check_pass_artifact_missing", evidence)


def _required_checks(goal: ev.GoalRevised | None, labels: Iterable[str]) -> dict[str, str]:
    """The goal's required checks, label -> scope (`suite` wins over `focused`), with its
    patterns resolved against the labels the run has receipts for (`requirement_ids`)."""
    required: dict[str, str] = {}
    if goal is None:
        return required
    known = sorted(labels)
    for requirement in goal.required_checks:
        for label in requirement_ids(requirement.label, known):
            if required.get(label) != "suite":
                required[label] = requirement.scope
    return required


def _checks(state: RunState) -> Checks:
    def build() -> Checks:
        goal = _goal(state).goal
        cand = _candidate(state).snapshot
        views = _views(state)
        required = _required_checks(goal, state.verifications)
        predicates: list[Json] = []
        rows: list[Json] = []
        contradictions: list[Json] = []
        for label in sorted(set(required) | set(state.verifications)):
            receipt = latest(state.verifications.get(label, ()))
            pid = f"check:{label}"
            if receipt is None:
                rows.append(
                    {
                        "label": label,
                        "state": "missing",
                        "result": None,
                        "scope": None,
                        "tests_executed": None,
                        "candidate_snapshot": None,
                        "check_id": None,
                        "required": True,
                    }
                )
                predicates.append(_predicate(pid, UNSATISFIED, "missing", ()))
                continue
            own = views.get(receipt.candidate_snapshot)
            check_state = _check_state(receipt, own, cand)
            rows.append(
                {
                    "label": label,
                    "state": check_state,
                    "result": receipt.result,
                    "scope": receipt.scope,
                    "tests_executed": receipt.tests_executed,
                    "candidate_snapshot": receipt.candidate_snapshot,
                    "check_id": receipt.check_id,
                    "required": label in required,
                }
            )
            if label not in required:
                continue
            evidence: list[ev.Event] = [receipt]
            if check_state == "stale":
                evidence += [*(own.reports if own else ()), *(cand.reports if cand else ())]
                predicates.append(_predicate(pid, INDETERMINATE, "stale", evidence))
                continue
            missing = (
                _missing_artifacts(receipt, own, cand)
                if check_state == "passing" and cand is not None
                else []
            )
            if missing and cand is not None:
                contradictions.append(_artifact_contradiction(pid, receipt, own, cand, missing))
                evidence += cand.reports
                if own is not None and any(said == "absent" for _, said in missing):
                    evidence += own.reports
                predicates.append(_predicate(pid, INDETERMINATE, "contradiction", evidence))
            elif check_state == "failing":
                predicates.append(_predicate(pid, UNSATISFIED, "failing", evidence))
            elif check_state == "indeterminate":
                predicates.append(_predicate(pid, INDETERMINATE, "indeterminate", evidence))
            elif check_state == "zero_tests":
                predicates.append(_predicate(pid, UNSATISFIED, "zero_tests", evidence))
            elif required[label] == "suite" and receipt.scope == "focused":
                predicates.append(_predicate(pid, UNSATISFIED, "scope_insufficient", evidence))
            else:
                predicates.append(_predicate(pid, SATISFIED, "passing", evidence))
        return Checks(predicates, rows, contradictions)

    return _section(state, "checks", ("goal", "lifecycle", "workspace", "verification"), build)


# -- effects -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Effects:
    """Effect rows, the events that decided each state, contradictions, durability."""

    rows: dict[str, Json]
    deciding: dict[str, list[ev.Event]]
    contradictions: list[Json]
    durability: str | None


def _effects(state: RunState) -> Effects:
    def build() -> Effects:
        rows: dict[str, Json] = {}
        deciding: dict[str, list[ev.Event]] = {}
        contradictions: list[Json] = []
        durability: list[str] = []
        for intent_id in sorted(set(state.intents) | set(state.transitions) | set(state.receipts)):
            intent = latest(state.intents.get(intent_id, ()))
            transition = latest(state.transitions.get(intent_id, ()))
            receipts = state.receipts.get(intent_id, [])
            authoritative = [r for r in receipts if r.authoritative]
            seen = {r.observed for r in authoritative}
            decided_by: list[ev.Event] = [transition] if transition else []
            effect_state: str = transition.state if transition else "prepared"
            if "present" in seen and seen & {"absent", "failed"}:
                effect_state, decided_by, verdict = "contradicted", list(authoritative), "conflict"
                contradictions.append(
                    _contradiction(
                        f"effect:{intent_id}",
                        "effect_receipts_disagree",
                        [_evidence(r, r.observed) for r in authoritative],
                    )
                )
            elif "present" in seen:
                effect_state, verdict = "completed", "present"
                decided_by = [r for r in authoritative if r.observed == "present"]
            elif seen:
                effect_state, decided_by, verdict = "failed", list(authoritative), "negative"
            else:
                verdict = "none"
            effect_class = intent.effect_class if intent else None
            if effect_class == "write":
                durability.append(verdict)
            rows[intent_id] = {
                "intent_id": intent_id,
                "effect_class": effect_class,
                "state": effect_state,
                "receipts": sorted({r.receipt_id for r in receipts}),
                "unresolved": effect_state in UNRESOLVED_EFFECT_STATES,
            }
            deciding[intent_id] = decided_by
        return Effects(rows, deciding, contradictions, _durability(durability))

    return _section(state, "effects", ("effect",), build)


def _durability(verdicts: list[str]) -> str | None:
    """SPEC 3.4 over the write effects' authoritative receipts."""
    if not verdicts:
        return None
    if all(v == "present" for v in verdicts):
        return "confirmed"
    if "negative" in verdicts and "conflict" not in verdicts:
        return "failed"
    return "indeterminate"


def _effect_predicates(state: RunState) -> list[Json]:
    def build() -> list[Json]:
        goal = _goal(state).goal
        effects = _effects(state)
        out = []
        requested: set[str] = set()
        for wanted in goal.requested_effects if goal else ():
            requested.update(requirement_ids(wanted, effects.rows))
        for intent_id in sorted(requested):
            pid = f"effect:{intent_id}"
            row = effects.rows.get(intent_id)
            if row is None:
                out.append(_predicate(pid, INDETERMINATE, "pending", ()))
                continue
            deciding = effects.deciding[intent_id]
            effect_state = row["state"]
            if effect_state == "completed":
                out.append(_predicate(pid, SATISFIED, "completed", deciding))
            elif effect_state in ("denied", "failed", "compensated"):
                out.append(_predicate(pid, UNSATISFIED, effect_state, deciding))
            elif effect_state == "contradicted":
                out.append(_predicate(pid, INDETERMINATE, "contradiction", deciding))
            else:
                out.append(_predicate(pid, INDETERMINATE, "pending", deciding))
        return out

    return _section(state, "effect_predicates", ("goal", "effect"), build)


# -- actions -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Actions:
    """Action rows and the action-outcome contradictions."""

    rows: dict[str, Json]
    contradictions: list[Json]


def _actions(state: RunState) -> Actions:
    def build() -> Actions:
        rows: dict[str, Json] = {}
        contradictions: list[Json] = []
        started_index, finished_index = state.tools_started, state.tools_finished
        for action_id in sorted(started_index.keys() | finished_index.keys()):
            started = started_index.get(action_id, ())
            finished = finished_index.get(action_id, ())
            outcome: str | None
            if len(finished) == 1:  # the common case, without a set
                outcome = finished[0].outcome
            elif len(outcomes := {f.outcome for f in finished}) > 1:
                outcome = "indeterminate"
                contradictions.append(
                    _contradiction(
                        f"action:{action_id}",
                        "action_outcome_conflict",
                        [_evidence(f, f.outcome) for f in finished],
                    )
                )
            else:
                outcome = next(iter(outcomes), None)
            named: ev.ToolStarted | ev.ToolFinished | None
            if len(started) == 1 and len(finished) == 1:  # `latest` of the pair, inline
                first, last = started[0], finished[0]
                named = last if _order(last) > _order(first) else first
            else:
                named = latest((*started, *finished))
            tool = named.tool if named is not None else None
            rows[action_id] = {"action_id": action_id, "tool": tool, "outcome": outcome}
        return Actions(rows, contradictions)

    return _section(state, "actions", ("tool",), build)


@dataclass(frozen=True, slots=True)
class ActionPredicates:
    """Requested-action predicates and the `requested_action_outcome` dimension."""

    predicates: list[Json]
    dimension: str


def _action_predicates(state: RunState) -> ActionPredicates:
    def build() -> ActionPredicates:
        goal = _goal(state).goal
        rows = _actions(state).rows
        predicates = []
        for action_id in sorted(set(goal.requested_actions) if goal else ()):
            pid = f"action:{action_id}"
            outcome = rows[action_id]["outcome"] if action_id in rows else None
            finished = state.tools_finished.get(action_id, ())
            if outcome is None:
                predicates.append(_predicate(pid, INDETERMINATE, "pending", ()))
            elif outcome == "succeeded":
                predicates.append(_predicate(pid, SATISFIED, "succeeded", finished))
            elif outcome in ("failed", "not_applicable"):
                predicates.append(_predicate(pid, UNSATISFIED, outcome, finished))
            else:
                predicates.append(_predicate(pid, INDETERMINATE, "indeterminate", finished))
        reasons = [p["reason"] for p in predicates]
        if not reasons:
            dimension = "not_applicable"
        elif "failed" in reasons:
            dimension = "failed"
        elif all(reason == "succeeded" for reason in reasons):
            dimension = "succeeded"
        else:
            dimension = "indeterminate"
        return ActionPredicates(predicates, dimension)

    return _section(state, "action_predicates", ("goal", "tool"), build)


# -- provenance ----------------------------------------------------------------------------


def _findings(state: RunState) -> list[Json]:
    def build() -> list[Json]:
        out: list[Json] = []

        def finding(kind: str, subject: str, evidence: Iterable[ev.Event]) -> None:
            out.append({"kind": kind, "subject": subject, "evidence": _ids(evidence)})

        for injection_id, records in state.injections.items():
            named = {r.retrieval_id for r in records}
            retrievals = [r for rid in sorted(named) for r in state.retrievals.get(rid, ())]
            if any(rid not in state.retrievals for rid in named):
                finding("retrieval_receipt_not_observed", injection_id, records)
            withheld = {
                c.candidate_id for r in retrievals for c in r.candidates if c.decision == "withheld"
            }
            if withheld & {cid for r in records for cid in r.candidate_ids}:
                finding("withheld_candidate_injected", injection_id, [*records, *retrievals])
            calls = sorted({r.model_call_id for r in records})
            inferences = [i for call in calls for i in state.inferences.get(call, ())]
            if not inferences:
                continue
            first_inference = min(i.occurred_at for i in inferences)
            confirmed = [r for r in records if r.confirmed]
            late = [r for r in confirmed if r.occurred_at > first_inference]
            if late:
                finding("injection_after_inference", injection_id, [*late, *inferences])
            if not confirmed and not any(r.removed_before_inference for r in records):
                finding("unconfirmed_injection_used", injection_id, [*records, *inferences])
        return sorted(out, key=itemgetter("kind", "subject"))

    return _section(state, "findings", ("provenance",), build)


# -- lifecycle -----------------------------------------------------------------------------


def _latest_value(events: Sequence[ev.Event], attribute: str) -> Any:
    chosen = latest(events)
    return getattr(chosen, attribute) if chosen is not None else None


def _lifecycle(state: RunState) -> tuple[str, str | None, str | None]:
    """(workflow_status, response_completion, review)."""

    def build() -> tuple[str, str | None, str | None]:
        lifecycle = state.lifecycle
        if lifecycle.get("run.cancelled"):
            workflow_status = "cancelled"
        elif lifecycle.get("run.interrupted"):
            workflow_status = "interrupted"
        else:
            workflow_status = "finalized"
        return (
            workflow_status,
            _latest_value(lifecycle.get("response.disposition", ()), "completion"),
            _latest_value(lifecycle.get("review.recorded", ()), "state"),
        )

    return _section(state, "lifecycle", ("lifecycle",), build)


# -- status and the whole --------------------------------------------------------------------


def _status(predicates: list[Json]) -> str:
    required = [p for p in predicates if p["required"]]
    if any(p["state"] == INDETERMINATE for p in required):
        return "unresolved"
    unsatisfied = [p for p in required if p["state"] == UNSATISFIED]
    if any(p["reason"] == "denied" for p in unsatisfied):
        return "blocked"
    if unsatisfied:
        goal_satisfied = any(
            p["state"] == SATISFIED and p["id"].startswith(GOAL_DERIVED_PREFIXES) for p in required
        )
        return "partially_complete" if goal_satisfied else "failed"
    return "complete"


def _verification_dimension(predicates: list[Json]) -> str | None:
    if not predicates:
        return None
    if all(p["state"] == SATISFIED for p in predicates):
        return "pass"
    if any(p["reason"] == "failing" for p in predicates):
        return "fail"
    return "indeterminate"


def assemble(state: RunState) -> Json | None:
    """The account content for a run's current events, or None if no account exists yet."""
    candidate = _candidate(state)
    if not candidate.exists:
        return None
    goal = _goal(state)
    checks = _checks(state)
    effects = _effects(state)
    actions = _actions(state)
    action_predicates = _action_predicates(state)
    predicates = sorted(
        [
            goal.predicate,
            *_workspace_predicates(state),
            *checks.predicates,
            *_effect_predicates(state),
            *action_predicates.predicates,
        ],
        key=itemgetter("id"),
    )
    contradictions = sorted(
        [
            *_snapshot_conflicts(state),
            *checks.contradictions,
            *effects.contradictions,
            *actions.contradictions,
        ],
        key=itemgetter("subject", "kind"),
    )
    workflow_status, response_completion, review = _lifecycle(state)
    policy, policy_source = requirement_policy(goal.goal)
    cand = candidate.snapshot
    return {
        "run_id": state.run_id,
        "schema_version": SCHEMA_VERSION,
        "assembler_version": ASSEMBLER_VERSION,
        "goal_revision": goal.goal.goal_revision if goal.goal else None,
        "requirement_policy": policy,
        "requirement_source": policy_source,
        "candidate_snapshot": cand.snapshot_id if cand else None,
        "workflow_status": workflow_status,
        "status": _status(predicates),
        "dimensions": {
            "response_completion": response_completion,
            "requested_action_outcome": action_predicates.dimension,
            "verification": _verification_dimension(checks.predicates),
            "review": review,
            "durability": effects.durability,
        },
        "predicates": predicates,
        "artifacts": _artifacts(state),
        "checks": checks.rows,
        "effects": list(effects.rows.values()),
        "actions": list(actions.rows.values()),
        "contradictions": contradictions,
        "provenance_findings": _findings(state),
        "ignored_goal_proposals": goal.ignored,
    }


def _artifacts(state: RunState) -> list[Json]:
    def build() -> list[Json]:
        cand = _candidate(state).snapshot
        if cand is None:
            return []
        return [
            {
                "path": art.path,
                "change": art.change,
                "digest": art.digest,
                "renamed_from": art.renamed_from,
                "verification_sensitive": art.verification_sensitive,
            }
            for _, art in sorted(cand.inventory.items())
        ]

    return _section(state, "artifacts", ("lifecycle", "workspace"), build)
