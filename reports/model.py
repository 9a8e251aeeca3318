"""One run as the reports read it: its account revisions, claim verdicts, answer checks
and (when given) input events, as the output records carry them (docs/records.md).
Selection only: which revision, which settlement of each claim; no rule of the SPEC is
decided here."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from outcomes.reducers.answers import COUNT_FIELDS, answer_check_id
from outcomes.reports.errors import RevisionNotFound, RunNotFound

Record = Mapping[str, Any]

# The output kinds a run view keeps, by the `record` field of `outcomes replay` lines.
KINDS = ("account_revision", "claim_verdict")
# The output kind of a check of an answer before display (SPEC 8), which a view may hold.
ANSWER_KIND = "answer_check"


@dataclass(frozen=True)
class Narrative:
    """A narrative.submitted event: the text the claims point into."""

    narrative_id: str
    event_id: str
    text: str | None  # None: redacted
    account_revision: int | None
    channel: str | None
    occurred_at: str


@dataclass(frozen=True)
class RunView:
    """A run's records, in a fixed order whatever order they were read in."""

    run_id: str
    revisions: tuple[Record, ...]
    verdicts: tuple[Record, ...]
    events: tuple[Record, ...] = ()
    # What was taken out before rendering (`redact_narratives`), for the reader to see.
    redacted: tuple[str, ...] = ()
    # The run's `answer_check` rows (docs/records.md), when the source has them.
    answers: tuple[Record, ...] = ()

    @classmethod
    def of(
        cls,
        run_id: str,
        revisions: Iterable[Record],
        verdicts: Iterable[Record],
        events: Iterable[Record] = (),
        answers: Iterable[Record] = (),
    ) -> RunView:
        """Keep the run's records (bodies, without a `record` field), sorted; the same
        revision, verdict or answer check read twice (a redelivery) is kept once."""
        by_number = {int(r["revision"]): _body(r) for r in revisions if r["run_id"] == run_id}
        by_id = {str(v["verdict_id"]): _body(v) for v in verdicts if v["run_id"] == run_id}
        seen: dict[str, Record] = {}
        for e in events:
            if e.get("run_id") == run_id:
                seen.setdefault(str(e["event_id"]), e)
        if not by_number:
            raise RunNotFound(f"run {run_id!r} has no account revision in this source")
        checks = {str(a["check_id"]): _body(a) for a in answers if a["run_id"] == run_id}
        return cls(
            run_id,
            tuple(by_number[n] for n in sorted(by_number)),
            tuple(sorted(by_id.values(), key=_verdict_order)),
            tuple(sorted(seen.values(), key=lambda e: (str(e["occurred_at"]), e["event_id"]))),
            answers=tuple(sorted(checks.values(), key=_answer_order)),
        )

    @property
    def latest(self) -> Record:
        return self.revisions[-1]

    def revision(self, number: int) -> Record:
        for body in self.revisions:
            if body["revision"] == number:
                return body
        have = ", ".join(str(r["revision"]) for r in self.revisions)
        raise RevisionNotFound(f"run {self.run_id!r} has no revision {number} (it has {have})")

    def verdicts_at(self, number: int) -> list[Record]:
        """Each claim's verdict as of revision `number`: its highest settlement judged
        against that revision or an earlier one, unless it withdrew an omission. At the
        latest revision this is the claim's current verdict (docs/claims.md)."""
        chosen: dict[str, Record] = {}
        for v in self.verdicts:
            judged = v["account_revision"]
            if judged is not None and judged > number:
                continue
            claim = v.get("claim_id") or v["verdict_id"]
            known = chosen.get(claim)
            if known is None or _settlement(v) > _settlement(known):
                chosen[claim] = v
        kept = [v for v in chosen.values() if not v.get("withdrawn")]
        return sorted(kept, key=_verdict_order)

    def narratives(self) -> list[Narrative]:
        """The run's narratives from its events (none when no events were given)."""
        return [
            Narrative(
                str(e["narrative_id"]),
                str(e["event_id"]),
                e["text"] if e.get("text") is not None else None,
                e.get("account_revision"),
                e.get("channel"),
                str(e["occurred_at"]),
            )
            for e in self.events
            if e.get("type") == "narrative.submitted"
        ]

    def answer_checks(self) -> list[Record]:
        """The run's answers checked before display (SPEC 8), one per attempt of a
        chain, in time order: the `answer_check` rows given, and the `answer.checked`
        events among the events for attempts those rows lack (the same fields)."""
        checks = {str(a["check_id"]): a for a in self.answers}
        for e in self.events:
            if e.get("type") != "answer.checked":
                continue
            check_id = answer_check_id(self.run_id, str(e["answer_chain_id"]), int(e["attempt"]))
            checks.setdefault(check_id, _answer_row(check_id, e))
        return sorted(checks.values(), key=_answer_order)

    def redact_narratives(self) -> RunView:
        """The view without narrative text: each narrative event's `text` and each
        verdict's `span_text` become null, with the SHA-256 of what they held beside
        them (`text_sha256`, `span_text_sha256`) so a holder of the text can match it."""
        events = tuple(
            {**e, "text": None, "text_sha256": _sha256(e["text"])}
            if e.get("type") == "narrative.submitted" and e.get("text") is not None
            else e
            for e in self.events
        )
        verdicts = tuple(
            {**v, "span_text": None, "span_text_sha256": _sha256(v["span_text"])}
            if v.get("span_text") is not None
            else v
            for v in self.verdicts
        )
        return replace(
            self, events=events, verdicts=verdicts, redacted=(*self.redacted, "narrative")
        )

    def event(self, event_id: str) -> Record | None:
        for e in self.events:
            if e["event_id"] == event_id:
                return e
        return None


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _body(record: Record) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != "record"}


def _answer_row(check_id: str, event: Record) -> dict[str, Any]:
    """An `answer.checked` event as its `answer_check` row (docs/records.md)."""
    names = ("answer_chain_id", "attempt", "decision", "account_revision", "text_digest")
    return {
        "check_id": check_id,
        "run_id": event["run_id"],
        "event_id": event["event_id"],
        "occurred_at": event["occurred_at"],
        "source": event.get("source"),
        **{name: event.get(name) for name in names},
        **{name: int(event.get(name) or 0) for name in COUNT_FIELDS},
    }


def _answer_order(row: Record) -> tuple[str, str, int]:
    return (str(row["occurred_at"]), str(row["answer_chain_id"]), int(row["attempt"]))


def _settlement(verdict: Record) -> int:
    return int(verdict.get("settlement") or 1)


def _verdict_order(verdict: Record) -> tuple[str, int, str, int]:
    """Narrative, then claims in text order (omissions after them), then settlement."""
    claim = str(verdict.get("claim_id") or verdict["verdict_id"])
    start = verdict.get("span_start")
    return (
        str(verdict["narrative_id"]),
        start if start is not None else 1 << 40,
        claim,
        _settlement(verdict),
    )
