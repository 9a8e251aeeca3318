"""Account assembly: a pure function from a run's set of events to the account's content.

`assemble` returns the content fields of SPEC section 3 in canonical JSON form (the
bookkeeping fields `revision`, `supersedes`, `state_revision`, `observation_cutoff`,
`trigger_event_id` and `changes` are added by the engine). Every "latest" is by
(`occurred_at`, `event_id`), a total order, so the result depends on the set of events
only, never on the order they arrived in.

Index reads use `.get()`: the state's indexes are defaultdicts and assembly must not
add keys to them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from reducers import events as ev
from reducers.catalog import ASSEMBLER_VERSION, SCHEMA_VERSION
from reducers.state import RunState
from reducers.timefmt import format_rfc3339

E = TypeVar("E", bound=ev.Event)

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


def _order(event: ev.Event) -> tuple[int, str]:
    return (event.occurred_at, event.event_id)


def _ids(events: Iterable[ev.Event]) -> list[str]:
    return sorted({event.event_id for event in events})


def _evidence(event: ev.Event, value: str) -> dict[str, Any]:
    return {
        "event_id": event.event_id,
        "value": value,
        "occurred_at": format_rfc3339(event.occurred_at),
    }


def _sorted_evidence(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(items, key=lambda item: (item["occurred_at"], item["event_id"], item["value"]))


def _predicate(pid: str, state: str, reason: str, evidence: Iterable[ev.Event]) -> dict[str, Any]:
    return {
        "id": pid,
        "required": True,
        "state": state,
        "reason": reason,
        "evidence": _ids(evidence),
    }


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
        variants = {(r.base_revision, frozenset(r.artifacts)) for r in reports}
        return cls(
            snapshot_id=snapshot_id,
            reports=tuple(reports),
            sealed=any(r.sealed for r in reports),
            conflict=len(variants) > 1,
            base_revision=chosen.base_revision,
            inventory={a.path: a for a in chosen.artifacts},
        )


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


# -- the assembler -----------------------------------------------------------------------


class _Assembly:
    """One assembly pass over a run's state. Build with `assemble(state)`."""

    def __init__(self, state: RunState) -> None:
        self.s = state
        self.contradictions: list[dict[str, Any]] = []
        self._views: dict[str, SnapshotView] = {}

    def view(self, snapshot_id: str | None) -> SnapshotView | None:
        if snapshot_id is None:
            return None
        if snapshot_id not in self._views:
            reports = self.s.snapshots.get(snapshot_id)
            if not reports:
                return None
            self._views[snapshot_id] = SnapshotView.of(snapshot_id, reports)
        return self._views[snapshot_id]

    # -- when an account exists, and what it judges ---------------------------------------

    def _ready(self, request: ev.Event) -> bool:
        assert isinstance(request, ev.FinalizeRequested)
        if request.candidate_snapshot is None:
            return True
        view = self.view(request.candidate_snapshot)
        return view is not None and view.sealed

    def candidate(self) -> tuple[bool, SnapshotView | None, ev.Event | None]:
        """(account exists, candidate snapshot, the finalize request that named it)."""
        lifecycle = self.s.lifecycle
        ready = latest(r for r in lifecycle.get("finalize.requested", ()) if self._ready(r))
        if ready is not None:
            assert isinstance(ready, ev.FinalizeRequested)
            return True, self.view(ready.candidate_snapshot), ready
        if lifecycle.get("run.cancelled") or lifecycle.get("run.interrupted"):
            newest = latest(r for reports in self.s.snapshots.values() for r in reports)
            return True, (self.view(newest.snapshot_id) if newest else None), None
        return False, None, None

    # -- goal --------------------------------------------------------------------------------

    def goal(self) -> ev.GoalRevised | None:
        authorised = [g for g in self.s.goals if g.authored_by in GOAL_AUTHORITIES]
        return max(
            authorised, key=lambda g: (g.goal_revision, g.occurred_at, g.event_id), default=None
        )

    # -- workspace predicates ----------------------------------------------------------------

    def workspace_predicates(
        self, goal: ev.GoalRevised | None, cand: SnapshotView | None
    ) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
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

    # -- checks ------------------------------------------------------------------------------

    def _check_state(
        self, receipt: ev.VerificationReceived, cand: SnapshotView | None
    ) -> tuple[str, SnapshotView | None]:
        """(state of the deciding receipt against the candidate, the receipt's snapshot)."""
        own = self.view(receipt.candidate_snapshot)
        if (
            cand is not None
            and receipt.candidate_snapshot != cand.snapshot_id
            and (own is None or _sensitive_difference(own, cand))
        ):
            return "stale", own
        if receipt.result == "indeterminate":
            return "indeterminate", own
        if receipt.result == "fail":
            return "failing", own
        return ("passing" if receipt.tests_executed > 0 else "zero_tests"), own

    def _missing_artifacts(
        self, receipt: ev.VerificationReceived, own: SnapshotView | None, cand: SnapshotView
    ) -> list[tuple[str, str]]:
        """Expected artifacts the candidate lacks: (path, what the candidate says)."""
        missing: list[tuple[str, str]] = []
        for path in sorted(set(receipt.expected_artifacts)):
            entry = cand.inventory.get(path)
            if entry is not None and entry.change in REMOVED_CHANGES:
                missing.append((path, entry.change))
            elif entry is None and own is not None and path in own.inventory:
                missing.append((path, "absent"))
        return missing

    def checks(
        self, goal: ev.GoalRevised | None, cand: SnapshotView | None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(check predicates, the `checks` list)."""
        required: dict[str, str] = {}
        for requirement in goal.required_checks if goal else ():
            if required.get(requirement.label) != "suite":
                required[requirement.label] = requirement.scope
        predicates: list[dict[str, Any]] = []
        rows: list[dict[str, Any]] = []
        for label in sorted(set(required) | set(self.s.verifications)):
            receipt = latest(self.s.verifications.get(label, ()))
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
            state, own = self._check_state(receipt, cand)
            rows.append(
                {
                    "label": label,
                    "state": state,
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
            if state == "stale":
                evidence += [*(own.reports if own else ()), *(cand.reports if cand else ())]
                predicates.append(_predicate(pid, INDETERMINATE, "stale", evidence))
                continue
            missing = (
                self._missing_artifacts(receipt, own, cand)
                if (state == "passing" and cand is not None)
                else []
            )
            if missing:
                self._contradict_check(label, receipt, cand, missing)
                evidence += cand.reports if cand else ()
                predicates.append(_predicate(pid, INDETERMINATE, "contradiction", evidence))
            elif state == "failing":
                predicates.append(_predicate(pid, UNSATISFIED, "failing", evidence))
            elif state == "indeterminate":
                predicates.append(_predicate(pid, INDETERMINATE, "indeterminate", evidence))
            elif state == "zero_tests":
                predicates.append(_predicate(pid, UNSATISFIED, "zero_tests", evidence))
            elif required[label] == "suite" and receipt.scope == "focused":
                predicates.append(_predicate(pid, UNSATISFIED, "scope_insufficient", evidence))
            else:
                predicates.append(_predicate(pid, SATISFIED, "passing", evidence))
        return predicates, rows

    def _contradict_check(
        self,
        label: str,
        receipt: ev.VerificationReceived,
        cand: SnapshotView | None,
        missing: list[tuple[str, str]],
    ) -> None:
        chosen = latest(cand.reports) if cand else None
        evidence = [_evidence(receipt, "pass")]
        if chosen is not None:
            evidence += [_evidence(chosen, f"{path}: {said}") for path, said in missing]
        self.contradictions.append(
            {
                "subject": f"check:{label}",
                "kind": "check_pass_artifact_missing",
                "evidence": _sorted_evidence(evidence),
            }
        )

    # -- effects -----------------------------------------------------------------------------

    def effects(self) -> dict[str, tuple[dict[str, Any], list[ev.Event]]]:
        """intent_id -> (effect row, the events that decided its state)."""
        s = self.s
        out: dict[str, tuple[dict[str, Any], list[ev.Event]]] = {}
        for intent_id in sorted(set(s.intents) | set(s.transitions) | set(s.receipts)):
            intent = latest(s.intents.get(intent_id, ()))
            transition = latest(s.transitions.get(intent_id, ()))
            receipts = s.receipts.get(intent_id, [])
            authoritative = [r for r in receipts if r.authoritative]
            seen = {r.observed for r in authoritative}
            deciding: list[ev.Event] = [transition] if transition else []
            state: str = transition.state if transition else "prepared"
            if "present" in seen and seen & {"absent", "failed"}:
                state = "contradicted"
                deciding = list(authoritative)
                self.contradictions.append(
                    {
                        "subject": f"effect:{intent_id}",
                        "kind": "effect_receipts_disagree",
                        "evidence": _sorted_evidence(
                            [_evidence(r, r.observed) for r in authoritative]
                        ),
                    }
                )
            elif "present" in seen:
                state, deciding = "completed", [r for r in authoritative if r.observed == "present"]
            elif seen:
                state, deciding = "failed", list(authoritative)
            row = {
                "intent_id": intent_id,
                "effect_class": intent.effect_class if intent else None,
                "state": state,
                "receipts": sorted({r.receipt_id for r in receipts}),
                "unresolved": state in UNRESOLVED_EFFECT_STATES,
            }
            out[intent_id] = (row, deciding)
        return out

    @staticmethod
    def effect_predicate(
        intent_id: str, effect: tuple[dict[str, Any], list[ev.Event]] | None
    ) -> dict[str, Any]:
        pid = f"effect:{intent_id}"
        if effect is None:
            return _predicate(pid, INDETERMINATE, "pending", ())
        row, deciding = effect
        state = row["state"]
        if state == "completed":
            return _predicate(pid, SATISFIED, "completed", deciding)
        if state in ("denied", "failed", "compensated"):
            return _predicate(pid, UNSATISFIED, state, deciding)
        if state == "contradicted":
            return _predicate(pid, INDETERMINATE, "contradiction", deciding)
        return _predicate(pid, INDETERMINATE, "pending", deciding)

    # -- actions -----------------------------------------------------------------------------

    def actions(self) -> dict[str, tuple[dict[str, Any], list[ev.ToolFinished]]]:
        s = self.s
        out: dict[str, tuple[dict[str, Any], list[ev.ToolFinished]]] = {}
        for action_id in sorted(set(s.tools_started) | set(s.tools_finished)):
            finished = s.tools_finished.get(action_id, [])
            outcomes = {f.outcome for f in finished}
            outcome: str | None
            if len(outcomes) > 1:
                outcome = "indeterminate"
                self.contradictions.append(
                    {
                        "subject": f"action:{action_id}",
                        "kind": "action_outcome_conflict",
                        "evidence": _sorted_evidence([_evidence(f, f.outcome) for f in finished]),
                    }
                )
            else:
                outcome = next(iter(outcomes), None)
            named = latest([*s.tools_started.get(action_id, ()), *finished])
            tool = named.tool if isinstance(named, ev.ToolStarted | ev.ToolFinished) else None
            out[action_id] = ({"action_id": action_id, "tool": tool, "outcome": outcome}, finished)
        return out

    @staticmethod
    def action_predicate(
        action_id: str, action: tuple[dict[str, Any], list[ev.ToolFinished]] | None
    ) -> dict[str, Any]:
        pid = f"action:{action_id}"
        row, finished = action if action else ({"outcome": None}, [])
        outcome = row["outcome"]
        if outcome is None:
            return _predicate(pid, INDETERMINATE, "pending", ())
        if outcome == "succeeded":
            return _predicate(pid, SATISFIED, "succeeded", finished)
        if outcome in ("failed", "not_applicable"):
            return _predicate(pid, UNSATISFIED, outcome, finished)
        return _predicate(pid, INDETERMINATE, "indeterminate", finished)

    # -- snapshots in conflict -----------------------------------------------------------------

    def snapshot_conflicts(self) -> None:
        for snapshot_id in sorted(self.s.snapshots):
            view = self.view(snapshot_id)
            if view is not None and view.conflict:
                self.contradictions.append(
                    {
                        "subject": f"snapshot:{snapshot_id}",
                        "kind": "snapshot_conflict",
                        "evidence": _sorted_evidence(
                            [_evidence(r, _variant_value(r)) for r in view.reports]
                        ),
                    }
                )

    # -- provenance --------------------------------------------------------------------------

    def findings(self) -> list[dict[str, Any]]:
        s = self.s
        out: list[dict[str, Any]] = []

        def finding(kind: str, subject: str, evidence: Iterable[ev.Event]) -> None:
            out.append({"kind": kind, "subject": subject, "evidence": _ids(evidence)})

        for injection_id in sorted(s.injections):
            records = s.injections[injection_id]
            named = {r.retrieval_id for r in records}
            retrievals = [r for rid in sorted(named) for r in s.retrievals.get(rid, ())]
            if any(rid not in s.retrievals for rid in named):
                finding("retrieval_receipt_not_observed", injection_id, records)
            withheld = {
                c.candidate_id for r in retrievals for c in r.candidates if c.decision == "withheld"
            }
            injected = {cid for r in records for cid in r.candidate_ids}
            if withheld & injected:
                finding("withheld_candidate_injected", injection_id, [*records, *retrievals])
            calls = {r.model_call_id for r in records}
            inferences = [i for call in sorted(calls) for i in s.inferences.get(call, ())]
            if not inferences:
                continue
            first_inference = min(i.occurred_at for i in inferences)
            confirmed = [r for r in records if r.confirmed]
            late = [r for r in confirmed if r.occurred_at > first_inference]
            if late:
                finding("injection_after_inference", injection_id, [*late, *inferences])
            if not confirmed and not any(r.removed_before_inference for r in records):
                finding("unconfirmed_injection_used", injection_id, [*records, *inferences])
        return sorted(out, key=lambda f: (f["kind"], f["subject"]))


def _status(predicates: list[dict[str, Any]]) -> str:
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


def _latest_value(events: Sequence[ev.Event], attribute: str) -> Any:
    chosen = latest(events)
    return getattr(chosen, attribute) if chosen is not None else None


def assemble(state: RunState) -> dict[str, Any] | None:
    """The account content for a run's current events, or None if no account exists yet."""
    a = _Assembly(state)
    exists, cand, _request = a.candidate()
    if not exists:
        return None
    goal = a.goal()
    predicates: list[dict[str, Any]] = []
    if goal is None:
        predicates.append(_predicate("goal.in_force", INDETERMINATE, "missing", ()))
    else:
        predicates.append(_predicate("goal.in_force", SATISFIED, goal.authored_by, (goal,)))
    predicates += a.workspace_predicates(goal, cand)
    check_predicates, checks = a.checks(goal, cand)
    predicates += check_predicates
    effects = a.effects()
    actions = a.actions()
    a.snapshot_conflicts()
    requested_actions = sorted(set(goal.requested_actions)) if goal else []
    for intent_id in sorted(set(goal.requested_effects) if goal else ()):
        predicates.append(a.effect_predicate(intent_id, effects.get(intent_id)))
    action_predicates = [a.action_predicate(aid, actions.get(aid)) for aid in requested_actions]
    predicates += action_predicates
    predicates.sort(key=lambda p: p["id"])

    lifecycle = state.lifecycle
    if lifecycle.get("run.cancelled"):
        workflow_status = "cancelled"
    elif lifecycle.get("run.interrupted"):
        workflow_status = "interrupted"
    else:
        workflow_status = "finalized"

    effect_rows = [row for row, _ in effects.values()]
    return {
        "run_id": state.run_id,
        "schema_version": SCHEMA_VERSION,
        "assembler_version": ASSEMBLER_VERSION,
        "goal_revision": goal.goal_revision if goal else None,
        "candidate_snapshot": cand.snapshot_id if cand else None,
        "workflow_status": workflow_status,
        "status": _status(predicates),
        "dimensions": {
            "response_completion": _latest_value(
                lifecycle.get("response.disposition", ()), "completion"
            ),
            "requested_action_outcome": _action_dimension(goal, action_predicates),
            "verification": _verification_dimension(check_predicates),
            "review": _latest_value(lifecycle.get("review.recorded", ()), "state"),
            "durability": _durability(state, effect_rows),
        },
        "predicates": predicates,
        "artifacts": [
            {
                "path": art.path,
                "change": art.change,
                "digest": art.digest,
                "renamed_from": art.renamed_from,
                "verification_sensitive": art.verification_sensitive,
            }
            for _, art in sorted(cand.inventory.items())
        ]
        if cand
        else [],
        "checks": checks,
        "effects": effect_rows,
        "actions": [row for row, _ in actions.values()],
        "contradictions": sorted(a.contradictions, key=lambda c: (c["subject"], c["kind"])),
        "provenance_findings": a.findings(),
        "ignored_goal_proposals": sorted(
            (
                {"goal_revision": g.goal_revision, "event_id": g.event_id}
                for g in state.goals
                if g.authored_by == "model"
            ),
            key=lambda p: (p["goal_revision"], p["event_id"]),
        ),
    }


def _action_dimension(goal: ev.GoalRevised | None, predicates: list[dict[str, Any]]) -> str:
    if goal is None or not goal.requested_actions:
        return "not_applicable"
    reasons = [p["reason"] for p in predicates]
    if "failed" in reasons:
        return "failed"
    if all(reason == "succeeded" for reason in reasons):
        return "succeeded"
    return "indeterminate"


def _verification_dimension(predicates: list[dict[str, Any]]) -> str | None:
    if not predicates:
        return None
    if all(p["state"] == SATISFIED for p in predicates):
        return "pass"
    if any(p["reason"] == "failing" for p in predicates):
        return "fail"
    return "indeterminate"


def _durability(state: RunState, effect_rows: list[dict[str, Any]]) -> str | None:
    writes = [row["intent_id"] for row in effect_rows if row["effect_class"] == "write"]
    if not writes:
        return None
    verdicts = []
    for intent_id in writes:
        seen = {r.observed for r in state.receipts.get(intent_id, ()) if r.authoritative}
        if "present" in seen and seen & {"absent", "failed"}:
            verdicts.append("conflict")
        elif "present" in seen:
            verdicts.append("present")
        elif seen:
            verdicts.append("negative")
        else:
            verdicts.append("none")
    if all(v == "present" for v in verdicts):
        return "confirmed"
    if "negative" in verdicts and "conflict" not in verdicts:
        return "failed"
    return "indeterminate"
