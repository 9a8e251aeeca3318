"""Builders for canonical JSON input events and helpers that fold them through the core.

`RunBuilder` makes event dicts in the canonical JSON form of SPEC section 2, with
auto-incrementing `event_id`s and `occurred_at` timestamps one second apart, and
defaults that make a plain call valid. Every helper takes keyword overrides, `at=`
(seconds after the run's start) to place an event in time explicitly, and `event_id=`.
The builder also remembers what it made, in order, in `events`.

`Replay` folds dicts through `parse_event` and `Engine.apply` and keeps every output;
`fold_events` does it in one call and returns (all outputs, the latest account).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from outcomes.reducers.engine import Engine
from outcomes.reducers.records import OutputRecord
from outcomes.reducers.validate import parse_event

Event = dict[str, Any]
Account = Mapping[str, Any]

START = datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC)
FIVE_FILE_SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "five_file_run.jsonl"


def five_file_events(prefix: str | None = None) -> list[Event]:
    """The five-file sample's events in file order; with `prefix`, under the run
    `<prefix>-five` and event ids `<prefix>-<id>`, so tests on a shared broker never
    meet each other's runs."""
    events = [orjson.loads(x) for x in FIVE_FILE_SAMPLE.read_bytes().splitlines() if x.strip()]
    if prefix is not None:
        for event in events:
            event["run_id"] = f"{prefix}-five"
            event["event_id"] = f"{prefix}-{event['event_id']}"
    return events


def ts(seconds: float) -> str:
    """The canonical timestamp `seconds` after START (what the core writes back out)."""
    return (START + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def artifact(
    path: str,
    change: str = "modified",
    *,
    digest: str | None = None,
    sensitive: bool = True,
    renamed_from: str | None = None,
) -> dict[str, Any]:
    """One snapshot inventory entry; the digest defaults to one derived from the path."""
    return {
        "path": path,
        "change": change,
        "digest": digest if digest is not None else f"sha:{path}",
        "renamed_from": renamed_from,
        "verification_sensitive": sensitive,
    }


def candidate(
    candidate_id: str,
    decision: str = "selected",
    *,
    rank: int = 1,
    score: float = 0.5,
    eligible: bool = True,
    withhold_reason: str | None = None,
) -> dict[str, Any]:
    """One evaluated retrieval candidate."""
    return {
        "candidate_id": candidate_id,
        "source_type": "journal",
        "source_event_id": f"src-{candidate_id}",
        "rank": rank,
        "score": score,
        "eligible": eligible,
        "decision": decision,
        "withhold_reason": withhold_reason
        if withhold_reason is not None or decision == "selected"
        else "policy",
    }


class RunBuilder:
    """Makes the canonical JSON events of one run."""

    def __init__(self, run_id: str = "run-1", *, source: str = "worker-1") -> None:
        self.run_id = run_id
        self.source = source
        self.events: list[Event] = []
        self._count = 0
        self._clock = 0.0

    # -- envelope ---------------------------------------------------------------------------

    def event(
        self,
        type_: str,
        *,
        at: float | None = None,
        event_id: str | None = None,
        **fields: Any,
    ) -> Event:
        """Any event: the envelope plus `fields` (used by every helper below)."""
        self._count += 1
        if at is None:
            self._clock += 1
            at = self._clock
        else:
            self._clock = max(self._clock, at)
        body: Event = {
            "event_id": event_id if event_id is not None else f"{self.run_id}-e{self._count:03d}",
            "run_id": self.run_id,
            "type": type_,
            "occurred_at": ts(at),
            "source": self.source,
            **fields,
        }
        self.events.append(body)
        return body

    # -- goal -------------------------------------------------------------------------------

    def goal(
        self,
        *,
        deliverables: Iterable[str] = (),
        checks: Iterable[str | tuple[str, str]] = (),
        effects: Iterable[str] = (),
        actions: Iterable[str] = (),
        target_revision: str | None = None,
        revision: int = 1,
        authored_by: str = "user",
        **envelope: Any,
    ) -> Event:
        """`goal.revised`; a check given as a bare label requires scope `suite`."""
        required = [
            {"label": c, "scope": "suite"} if isinstance(c, str) else {"label": c[0], "scope": c[1]}
            for c in checks
        ]
        return self.event(
            "goal.revised",
            goal_revision=revision,
            authored_by=authored_by,
            deliverables=list(deliverables),
            required_checks=required,
            requested_effects=list(effects),
            requested_actions=list(actions),
            target_revision=target_revision,
            **envelope,
        )

    # -- tools ------------------------------------------------------------------------------

    def tool_started(
        self, action_id: str = "act-1", *, tool: str = "apply_patch", **envelope: Any
    ) -> Event:
        return self.event("tool.started", action_id=action_id, tool=tool, **envelope)

    def tool_finished(
        self,
        action_id: str = "act-1",
        outcome: str = "succeeded",
        *,
        tool: str = "apply_patch",
        error_class: str | None = None,
        **envelope: Any,
    ) -> Event:
        return self.event(
            "tool.finished",
            action_id=action_id,
            tool=tool,
            outcome=outcome,
            error_class=error_class,
            **envelope,
        )

    # -- effects ----------------------------------------------------------------------------

    def effect_intent(
        self,
        intent_id: str = "fx-1",
        *,
        effect_class: str = "external_draft",
        target: str = "provider:draft",
        consequential: bool = True,
        **envelope: Any,
    ) -> Event:
        return self.event(
            "effect.intent",
            intent_id=intent_id,
            effect_class=effect_class,
            target=target,
            consequential=consequential,
            **envelope,
        )

    def effect_transition(
        self,
        intent_id: str = "fx-1",
        state: str = "active",
        *,
        attempt_id: str | None = "att-1",
        reason: str | None = None,
        **envelope: Any,
    ) -> Event:
        return self.event(
            "effect.transition",
            intent_id=intent_id,
            state=state,
            attempt_id=attempt_id,
            reason=reason,
            **envelope,
        )

    def effect_receipt(
        self,
        intent_id: str = "fx-1",
        observed: str = "present",
        *,
        authoritative: bool = True,
        origin: str = "provider_receipt",
        receipt_id: str | None = None,
        attempt_id: str | None = "att-1",
        **envelope: Any,
    ) -> Event:
        """`effect.receipt`; the receipt id defaults to one unique per call."""
        return self.event(
            "effect.receipt",
            intent_id=intent_id,
            receipt_id=receipt_id if receipt_id is not None else f"rcpt-{self._count + 1}",
            attempt_id=attempt_id,
            origin=origin,
            observed=observed,
            authoritative=authoritative,
            **envelope,
        )

    # -- verification and workspace -----------------------------------------------------------

    def receipt(
        self,
        label: str = "unit",
        result: str = "pass",
        *,
        snapshot: str = "snap-1",
        tests: int = 10,
        scope: str = "suite",
        expected_artifacts: Iterable[str] = (),
        check_id: str | None = None,
        environment: str = "py3.11",
        command: str = "pytest",
        **envelope: Any,
    ) -> Event:
        """`verification.receipt`; the check id defaults to one unique per call."""
        return self.event(
            "verification.receipt",
            check_id=check_id if check_id is not None else f"chk-{self._count + 1}",
            label=label,
            scope=scope,
            result=result,
            tests_executed=tests,
            candidate_snapshot=snapshot,
            environment=environment,
            command=command,
            expected_artifacts=list(expected_artifacts),
            **envelope,
        )

    def snapshot(
        self,
        snapshot_id: str = "snap-1",
        artifacts: Sequence[str | Mapping[str, Any]] = ("src/app.py",),
        *,
        sealed: bool = True,
        base_revision: str | None = "base-1",
        **envelope: Any,
    ) -> Event:
        """`workspace.snapshot`; a bare path is a sensitive `modified` artifact."""
        inventory = [artifact(a) if isinstance(a, str) else dict(a) for a in artifacts]
        return self.event(
            "workspace.snapshot",
            snapshot_id=snapshot_id,
            base_revision=base_revision,
            sealed=sealed,
            artifacts=inventory,
            **envelope,
        )

    # -- lifecycle --------------------------------------------------------------------------

    def run_started(self, *, agent: str = "coder", **envelope: Any) -> Event:
        return self.event("run.started", agent=agent, requested_by="user:ana", **envelope)

    def disposition(self, completion: str = "completed", **envelope: Any) -> Event:
        return self.event("response.disposition", completion=completion, **envelope)

    def review(self, state: str = "pass", **envelope: Any) -> Event:
        return self.event("review.recorded", state=state, **envelope)

    def finalize(self, snapshot: str | None = "snap-1", **envelope: Any) -> Event:
        return self.event("finalize.requested", candidate_snapshot=snapshot, **envelope)

    def cancelled(self, reason: str | None = None, **envelope: Any) -> Event:
        return self.event("run.cancelled", reason=reason, **envelope)

    def interrupted(self, reason: str | None = None, **envelope: Any) -> Event:
        return self.event("run.interrupted", reason=reason, **envelope)

    def inference(self, model_call_id: str = "call-1", **envelope: Any) -> Event:
        return self.event("inference.started", model_call_id=model_call_id, **envelope)

    # -- provenance -------------------------------------------------------------------------

    def retrieval(
        self,
        retrieval_id: str = "ret-1",
        candidates: Sequence[str | Mapping[str, Any]] = ("c1",),
        *,
        job_id: str = "job-1",
        **envelope: Any,
    ) -> Event:
        """`retrieval.evaluated`; a bare candidate id is a `selected` candidate."""
        rows = [
            candidate(c, rank=i + 1) if isinstance(c, str) else dict(c)
            for i, c in enumerate(candidates)
        ]
        return self.event(
            "retrieval.evaluated",
            retrieval_id=retrieval_id,
            job_id=job_id,
            query_hash="qh-1",
            algorithm="bm25",
            config_hash="cfg-1",
            candidates=rows,
            **envelope,
        )

    def injection(
        self,
        injection_id: str = "inj-1",
        *,
        model_call_id: str = "call-1",
        retrieval_id: str = "ret-1",
        candidate_ids: Iterable[str] = ("c1",),
        confirmed: bool = True,
        removed_before_inference: bool = False,
        **envelope: Any,
    ) -> Event:
        return self.event(
            "injection.recorded",
            injection_id=injection_id,
            model_call_id=model_call_id,
            retrieval_id=retrieval_id,
            candidate_ids=list(candidate_ids),
            block_hash="bh-1",
            block_bytes=512,
            location="system",
            range_start=0,
            range_end=512,
            confirmed=confirmed,
            removed_before_inference=removed_before_inference,
            **envelope,
        )

    def narrative(
        self, text: str = "Done.", *, narrative_id: str = "nar-1", **envelope: Any
    ) -> Event:
        return self.event(
            "narrative.submitted",
            narrative_id=narrative_id,
            account_revision=None,
            channel="chat",
            text=text,
            **envelope,
        )


# -- folding -----------------------------------------------------------------------------


def of_kind(outputs: Iterable[OutputRecord], kind: str) -> list[Mapping[str, Any]]:
    """The bodies of the outputs of one kind, in emission order."""
    return [record.body for record in outputs if record.kind == kind]


class Replay:
    """Folds event dicts through the core one at a time, keeping every output."""

    def __init__(self) -> None:
        self.engine = Engine()
        self.outputs: list[OutputRecord] = []

    def apply(self, *events: Mapping[str, Any]) -> list[OutputRecord]:
        """Apply events in order; return the outputs they caused."""
        caused: list[OutputRecord] = []
        for event in events:
            caused += self.engine.apply(parse_event(event))
        self.outputs += caused
        return caused

    @property
    def accounts(self) -> list[Mapping[str, Any]]:
        return of_kind(self.outputs, "account_revision")

    @property
    def notifications(self) -> list[Mapping[str, Any]]:
        return of_kind(self.outputs, "notification")

    @property
    def account(self) -> Mapping[str, Any] | None:
        """The latest account revision, or None when no account exists yet."""
        accounts = self.accounts
        return accounts[-1] if accounts else None


def fold_events(
    events: Iterable[Mapping[str, Any]],
) -> tuple[list[OutputRecord], Mapping[str, Any] | None]:
    """(every output, the latest account revision or None) for events applied in order."""
    replay = Replay()
    replay.apply(*events)
    return replay.outputs, replay.account


def account_of(events: Iterable[Mapping[str, Any]]) -> Account:
    """The latest account revision for events applied in order; fails if there is none."""
    _, account = fold_events(events)
    assert account is not None, "the events made no account revision"
    return account


# -- reading an account ------------------------------------------------------------------


def predicate(account: Account, predicate_id: str) -> Mapping[str, Any]:
    """The predicate with that id; fails if the account has none."""
    found = [p for p in account["predicates"] if p["id"] == predicate_id]
    assert found, f"no predicate {predicate_id}: {[p['id'] for p in account['predicates']]}"
    return found[0]


def verdict(account: Account, predicate_id: str) -> tuple[str, str]:
    """(state, reason) of one predicate."""
    found = predicate(account, predicate_id)
    return found["state"], found["reason"]


def predicate_ids(account: Account) -> list[str]:
    return [p["id"] for p in account["predicates"]]


def row(account: Account, section: str, key: str, value: str) -> Mapping[str, Any]:
    """The row of a list section (`checks`, `effects`, `actions`…) whose `key` is `value`."""
    found = [r for r in account[section] if r[key] == value]
    assert len(found) == 1, f"{section} has {len(found)} rows with {key}={value}"
    return found[0]


def check(account: Account, label: str) -> Mapping[str, Any]:
    return row(account, "checks", "label", label)


def effect(account: Account, intent_id: str) -> Mapping[str, Any]:
    return row(account, "effects", "intent_id", intent_id)


def action(account: Account, action_id: str) -> Mapping[str, Any]:
    return row(account, "actions", "action_id", action_id)


def contradictions(account: Account, kind: str | None = None) -> list[Mapping[str, Any]]:
    return [c for c in account["contradictions"] if kind is None or c["kind"] == kind]


def findings(account: Account, kind: str | None = None) -> list[Mapping[str, Any]]:
    return [f for f in account["provenance_findings"] if kind is None or f["kind"] == kind]
