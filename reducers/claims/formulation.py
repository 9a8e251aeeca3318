"""Supported formulations: what the account does support, in words, where a narrative
contradicts it or leaves it out (SPEC 6, seed 001: "replaced a phrase with a safer
supported formulation").

`supported_formulation` turns one verdict (its kind, subject and reason) and the account
revision it was judged against into a plain sentence built only from that revision's
fields: "all tests pass" against a stale check becomes "the unit check has not passed on
the final candidate snap-2: its pass was against snap-1". It is stored in the verdict
record (`supported`), so every consumer shows the same words without deriving them
again. Pure and deterministic: the same verdict and account give the same text.

The copy follows the seed's tone rules: what is not known is "not confirmed", never
"almost done", and nothing is called failed unless the account says it failed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from outcomes.reducers.claims.checker import Account, Judged

Row = Mapping[str, Any]

# How each effect state reads after the effect's name.
_EFFECT_STATE: Mapping[str, str] = {
    "prepared": "is not confirmed: it was prepared and has not started",
    "approved": "is not confirmed: it was approved and has not started",
    "active": "is not confirmed: it is still in progress",
    "unknown": "is not confirmed: its outcome is unknown",
    "observed": "is not confirmed: it was observed, but no authoritative receipt confirms it",
    "contradicted": "is not confirmed: its receipts disagree",
    "completed": "was made: an authoritative receipt confirms it",
    "failed": "failed",
    "denied": "was denied",
    "compensated": "was compensated (rolled back)",
}

_STATUS: Mapping[str, str] = {
    "unresolved": "unresolved",
    "partially_complete": "partially complete",
    "failed": "failed",
    "blocked": "blocked",
}

_CONTRADICTION: Mapping[str, str] = {
    "effect_receipts_disagree": "its authoritative receipts disagree",
    "action_outcome_conflict": "it finished with conflicting outcomes",
    "check_pass_artifact_missing": (
        "it passed, but an artifact it expected is missing from the candidate"
    ),
    "snapshot_conflict": "it was reported with different contents",
}


class _Account:
    """The rows of one account revision the phrases read, by id."""

    def __init__(self, account: Account) -> None:
        self.candidate: str | None = account.get("candidate_snapshot")
        self.status: str | None = account.get("status")
        self.predicates: list[Row] = list(account.get("predicates") or ())
        self.checks = {c["label"]: c for c in account.get("checks") or ()}
        self.effects = {e["intent_id"]: e for e in account.get("effects") or ()}
        self.artifacts = {a["path"]: a for a in account.get("artifacts") or ()}
        self.contradictions: dict[str, list[Row]] = {}
        for c in account.get("contradictions") or ():
            self.contradictions.setdefault(c["subject"], []).append(c)

    def final_candidate(self) -> str:
        return f"the final candidate {self.candidate}" if self.candidate else "the candidate"

    # -- checks ----------------------------------------------------------------------------

    def check(self, label: str, reason: str) -> str:
        row = self.checks.get(label) or {}
        name = f"the {label} check"
        ran_on = row.get("candidate_snapshot")
        if reason == "passing":
            return f"{name} passed on {self.final_candidate()}"
        if reason == "stale":
            result = row.get("result") or "result"
            against = f": its {result} was against {ran_on}" if ran_on else ""
            return f"{name} has not passed on {self.final_candidate()}{against}"
        if reason == "missing":
            return f"{name} has no result for {self.final_candidate()}"
        if reason == "failing":
            return f"{name} failed on {ran_on or self.final_candidate()}"
        if reason == "zero_tests":
            return f"{name} is not confirmed: it ran zero tests"
        if reason == "scope_insufficient":
            scope = row.get("scope")
            ran = f" ran with scope {scope}, which" if scope else ""
            return f"{name} is not confirmed:{ran or ' it'} does not meet the required scope"
        if reason == "contradiction":
            return f"{name} is not confirmed: {self.conflict(f'check:{label}')}"
        if reason == "indeterminate":
            return f"{name} is not confirmed: its result was indeterminate"
        return f"{name} is not confirmed ({reason})"

    # -- effects ---------------------------------------------------------------------------

    def effect_name(self, intent_id: str) -> str:
        effect_class = (self.effects.get(intent_id) or {}).get("effect_class")
        kind = f" ({effect_class.replace('_', ' ')})" if effect_class else ""
        return f"{intent_id}{kind}"

    def receipts(self, intent_id: str) -> str:
        receipts = list((self.effects.get(intent_id) or {}).get("receipts") or ())
        return f" (receipts: {', '.join(receipts)})" if receipts else " (no receipt)"

    def effect(self, intent_id: str, reason: str) -> str:
        """`reason` is a predicate reason (pending, denied…) or an effect state."""
        row = self.effects.get(intent_id)
        name = self.effect_name(intent_id)
        if reason == "contradiction":
            return f"{name} is not confirmed: {self.conflict(f'effect:{intent_id}')}"
        state = reason
        if reason == "pending":
            if row is None:
                return f"{name} is not confirmed: nothing has been recorded for it"
            state = row["state"]
        phrase = _EFFECT_STATE.get(state, f"is {state}")
        return f"{name} {phrase}{self.receipts(intent_id)}"

    def write(self, intent_id: str, state: str) -> str:
        return f"the write {self.effect(intent_id, state)}"

    # -- contradictions, artifacts, predicates ---------------------------------------------

    def conflict(self, subject: str, kind: str | None = None) -> str:
        rows = [c for c in self.contradictions.get(subject, ()) if kind in (None, c["kind"])]
        if not rows:
            return f"its evidence conflicts ({kind})" if kind else "its evidence conflicts"
        parts = []
        for row in rows:
            what = _CONTRADICTION.get(row["kind"], row["kind"].replace("_", " "))
            seen = ", ".join(f"{e['value']} ({e['event_id']})" for e in row.get("evidence") or ())
            parts.append(f"{what}: {seen}" if seen else what)
        return "; ".join(parts)

    def contradiction(self, subject: str, kind: str) -> str:
        family, _, name = subject.partition(":")
        if family == "check":
            who = f"the {name} check"
        elif family == "effect":
            who = self.effect_name(name)
        elif family == "action":
            who = f"the action {name}"
        elif family == "snapshot":
            who = f"the snapshot {name}"
        else:
            who = subject
        return f"{who} is not confirmed: {self.conflict(subject, kind)}"

    def artifact(self, path: str, change: str) -> str:
        return f"{path} is {change} in {self.final_candidate()}"

    def predicate(self, row: Row) -> str:
        """Why one required predicate that is not satisfied holds the status back."""
        pid, reason = row["id"], row["reason"]
        family, _, name = pid.partition(":")
        if family == "check":
            return self.check(name, reason)
        if family == "effect":
            return self.effect(name, reason)
        if family == "deliverable":
            change = reason if reason != "conflict" else "reported with conflicting contents"
            return f"the deliverable {self.artifact(name, change)}"
        if family == "action":
            return f"the requested action {name} is {_action(reason)}"
        if pid == "workspace.sealed":
            return "the candidate snapshot is not sealed"
        if pid == "candidate.target":
            if reason == "mismatch":
                return "the candidate is not based on the target revision"
            return "the candidate is not confirmed to be based on the target revision"
        return f"{pid} is {row['state']} ({reason})"

    def status_held(self, status: str) -> str:
        """A completion claim's correction: the status, and what decides it."""
        held = [
            self.predicate(p)
            for p in self.predicates
            if p.get("required") and p.get("state") != "satisfied"
        ]
        head = f"the run is not complete: its status is {_STATUS.get(status, status)}"
        return f"{head}, because {_and(held)}" if held else head


def _action(reason: str) -> str:
    return {
        "failed": "failed",
        "not_applicable": "not applicable",
        "pending": "not confirmed: it has not finished",
        "indeterminate": "not confirmed: its outcome is indeterminate",
    }.get(reason, reason)


def _and(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return f"{'; '.join(items[:-1])}; and {items[-1]}"


def _prefixed(reason: str, prefix: str) -> str | None:
    return reason[len(prefix) :] if reason.startswith(prefix) else None


def supported_formulation(judged: Judged, account: Account | None) -> str | None:
    """The sentence the account supports in place of a contradicted claim, or the
    obligation an omitted verdict is about; None for any other verdict (`needs_review`
    included: nothing was decided to correct), or with no account."""
    verdict = judged.judgement.verdict
    if account is None or verdict not in ("contradicted", "omitted"):
        return None
    facts = _Account(account)
    reason = judged.judgement.reason
    subject = judged.judgement.subject or ""
    family, _, name = subject.partition(":")
    if reason in _CONTRADICTION:
        return facts.contradiction(subject, reason)
    status = _prefixed(reason, "status_")
    if status is not None:
        return facts.status_held(status)
    if family == "check" and (why := _prefixed(reason, "check_")) is not None:
        return facts.check(name, why)
    if family == "effect":
        if (why := _prefixed(reason, "effect_")) is not None:
            return facts.effect(name, why)
        if (why := _prefixed(reason, "write_")) is not None:
            return facts.write(name, why)
        if reason.startswith("durability_"):
            state = (facts.effects.get(name) or {}).get("state", "unknown")
            return facts.write(name, state)
    if family == "artifact" and (change := _prefixed(reason, "artifact_")) is not None:
        return facts.artifact(name, change)
    if reason.startswith("durability_"):
        return f"the writes are not all confirmed: durability is {reason[len('durability_') :]}"
    return f"{subject or 'the claim'} is not supported by the account ({reason})"


def open_obligations(account: Account) -> list[tuple[str, str]]:
    """(subject, sentence) of what the account still owes the reader, in the same words
    as the verdicts': each required predicate that is not satisfied, then each unresolved
    effect and each contradiction whose subject is not listed yet."""
    facts = _Account(account)
    out: list[tuple[str, str]] = []
    for p in facts.predicates:
        if p.get("required") and p.get("state") != "satisfied":
            out.append((str(p["id"]), facts.predicate(p)))
    listed = {subject for subject, _ in out}
    for intent_id, row in sorted(facts.effects.items()):
        if row.get("unresolved") and f"effect:{intent_id}" not in listed:
            out.append((f"effect:{intent_id}", facts.effect(intent_id, row["state"])))
    listed = {subject for subject, _ in out}
    for subject, rows in sorted(facts.contradictions.items()):
        if subject not in listed:
            out += [(subject, facts.contradiction(subject, r["kind"])) for r in rows]
    return out
