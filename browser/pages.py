"""What each page shows, as data for its template: the runs table's filters read from a
URL, and one run's status block, narrative, evidence and revisions, built from the
reports' own blocks (reports/status.py, reports/report.py). Pure: no I/O, no clock."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
from starlette.datastructures import QueryParams

from outcomes.browser.queries import (
    CONTRADICTED,
    MAX_CHOICES,
    MAX_SEARCH,
    STATUSES,
    RunFilter,
)
from outcomes.common.door import Refusal
from outcomes.reducers.answers import COUNT_FIELDS as _COUNTS
from outcomes.reports.model import RunView
from outcomes.reports.report import timeline
from outcomes.reports.status import (
    STATUS_COPY,
    Block,
    claim_summary,
    differences,
    status_block,
    verdict_copy,
)

MAX_PAGE = 100_000
MAX_FIELD_CHARS = 2_000
"""An event field's text on a page is cut here (the whole event: `outcomes export --events`)."""
_ENVELOPE = ("event_id", "run_id", "type", "occurred_at", "source")


def status_words(status: str) -> tuple[str, str]:
    """A status's (words, tone), as the reports write it."""
    return STATUS_COPY.get(status, (f"not confirmed: {status}", "unknown"))


def verdict_words(verdict: str) -> tuple[str, str]:
    return verdict_copy(verdict)


def when(value: Any) -> str:
    """A timestamp as the pages print it (UTC, to the second)."""
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value.strftime("%Y-%m-%d %H:%M:%S UTC")
    return "none" if value is None else str(value)


# -- the URL -----------------------------------------------------------------------------------


def run_filter(params: QueryParams) -> RunFilter:
    """The runs table's view from its query parameters; a value no view has is refused
    (400), so a URL always means one thing."""
    status = tuple(dict.fromkeys(v for v in params.getlist("status") if v))
    unknown = [s for s in status if s not in STATUSES]
    if unknown:
        raise Refusal(400, f"status must be among {', '.join(STATUSES)}; got {unknown[0]!r}")
    agent = _choices(params, "agent")
    model = _choices(params, "model")
    contradicted = params.get("contradicted") or None
    if contradicted is not None and contradicted not in CONTRADICTED:
        raise Refusal(400, f"contradicted must be {' or '.join(CONTRADICTED)}")
    superseded = params.get("superseded") or None
    if superseded not in (None, "1h"):
        raise Refusal(400, "superseded takes one value: 1h (superseded in the last hour)")
    q = " ".join(params.get("q", "").split())
    if len(q) > MAX_SEARCH:
        raise Refusal(400, f"search text over {MAX_SEARCH} characters")
    return RunFilter(
        status=status,
        agent=agent,
        model=model,
        contradicted=contradicted,
        superseded_last_hour=superseded == "1h",
        since=_time(params, "since"),
        until=_time(params, "until"),
        q=q,
        page=positive(params, "page", most=MAX_PAGE) or 1,
    )


def _choices(params: QueryParams, name: str) -> tuple[str, ...]:
    """An agent or model filter: any names (each one of what runs started with, or no
    run matches), bounded like the search text."""
    values = tuple(dict.fromkeys(v.strip() for v in params.getlist(name) if v.strip()))
    if len(values) > MAX_CHOICES or any(len(v) > MAX_SEARCH for v in values):
        raise Refusal(400, f"{name}: at most {MAX_CHOICES} names of {MAX_SEARCH} characters")
    return values


def _time(params: Mapping[str, str], name: str) -> datetime | None:
    raw = params.get(name) or ""
    if not raw:
        return None
    try:
        value = datetime.fromisoformat(raw)
    except ValueError:
        raise Refusal(400, f"{name} must be a date or date and time (2026-11-30T10:00)") from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def positive(params: Mapping[str, str], name: str, most: int = 1 << 31) -> int | None:
    """An integer parameter of 1 or more, or None when absent."""
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    if not raw.isdigit() or not 1 <= int(raw) <= most:
        raise Refusal(400, f"{name} must be a whole number from 1 to {most}")
    return int(raw)


def wait_for(params: Mapping[str, str]) -> tuple[str, int] | None:
    """`wait=<run id>:<revision>`: the revision a live page was told of."""
    raw = params.get("wait")
    if not raw:
        return None
    run_id, _, number = raw.rpartition(":")
    if not run_id or not number.isdigit():
        raise Refusal(400, "wait must be <run id>:<revision>")
    return run_id, int(number)


# -- one run -----------------------------------------------------------------------------------


def run_page(view: RunView, number: int | None) -> dict[str, Any]:
    """One run at revision `number` (default: the latest): the status block, each
    narrative with its claims in place, each claim's evidence, the revision timeline."""
    block = status_block(view, number)
    blocks: dict[int, Block] = {block["revision"]: block}

    def at(revision: int | None) -> Block:
        if revision is None:
            return block
        if revision not in blocks:
            blocks[revision] = status_block(view, revision)
        return blocks[revision]

    index = EventIndex(view.events)
    narratives: dict[str, list[dict[str, Any]]] = {}
    for claim in block["claims"]:
        judged = at(claim["account_revision"])
        narratives.setdefault(claim["narrative_id"], []).append(
            {
                **claim,
                "anchor": anchor(claim["claim_id"]),
                "evidence": evidence(judged, claim, index),
            }
        )
    return {
        "cards": index.cards,
        "event_list": [index.cards[str(e["event_id"])] for e in view.events],
        "answers": answers(block["answers"]),
        "view": view,
        "b": block,
        "summary": claim_summary(block["claim_counts"]),
        "narratives": [
            {"narrative_id": n, "pieces": pieces(claims), "claims": claims}
            for n, claims in sorted(narratives.items())
        ],
        "timeline": timeline(view),
        "latest": int(view.latest["revision"]),
    }


def anchor(claim_id: str) -> str:
    return "claim-" + "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in claim_id)


def pieces(claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A narrative as ClickHouse keeps it: each claim's words at its place, and between
    them how many characters the text held there (the sink stores the claims' spans,
    not the whole text)."""
    spans = sorted(
        (c for c in claims if c["span_start"] is not None),
        key=lambda c: (c["span_start"], c["span_end"]),
    )
    out: list[dict[str, Any]] = []
    at = 0
    for c in spans:
        if c["span_start"] < at:
            continue  # overlaps a claim already placed: its card still lists it
        if c["span_start"] > at:
            out.append({"gap": c["span_start"] - at})
        out.append({"claim": c})
        at = c["span_end"]
    return out


class EventIndex:
    """A run's input events as the pages show them, and which of them an account entry
    came from: a check's receipt by its check id, an effect's intent and receipts."""

    def __init__(self, events: Iterable[Mapping[str, Any]]) -> None:
        self.cards: dict[str, dict[str, Any]] = {}
        self._by: dict[tuple[str, str], list[str]] = {}
        for e in events:
            event_id = str(e["event_id"])
            self.cards.setdefault(event_id, event_card(e))
            for name in ("check_id", "intent_id", "receipt_id"):
                value = e.get(name)
                if isinstance(value, str) and value:
                    self._by.setdefault((name, value), []).append(event_id)

    def having(self, name: str, values: Iterable[str | None]) -> list[str]:
        """Ids of the events whose field `name` holds one of `values`."""
        return [i for v in values if v for i in self._by.get((name, v), ())]


def event_card(event: Mapping[str, Any]) -> dict[str, Any]:
    """One event as a page shows it: its envelope, then each field it carries (nested
    values as compact JSON, long ones cut)."""
    fields: list[tuple[str, str]] = []
    for name, value in event.items():
        if name in _ENVELOPE or value is None or value == [] or value == {}:
            continue
        text = value if isinstance(value, str) else orjson.dumps(value).decode()
        if len(text) > MAX_FIELD_CHARS:
            text = text[:MAX_FIELD_CHARS] + f"… ({len(text):,} characters)"
        fields.append((name, text))
    event_id = str(event["event_id"])
    return {
        "event_id": event_id,
        "anchor": "event-" + "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in event_id),
        "type": str(event.get("type")),
        "occurred_at": str(event.get("occurred_at")),
        "source": str(event.get("source") or ""),
        "fields": fields,
    }


def answers(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The answers checked before display, each with its attempt's place in its chain (an
    attempt after the first is a repair of the one before)."""
    out: list[dict[str, Any]] = []
    for a in rows:
        counts = [(v, int(a.get(v) or 0)) for v in _COUNTS]
        out.append({**a, "counts": [(v, n) for v, n in counts if n], "repair": a["attempt"] > 1})
    return out


def evidence(
    block: Block, claim: Mapping[str, Any], index: EventIndex | None = None
) -> dict[str, Any]:
    """The account entries a claim was judged against (in the revision it names) and the
    events they came from. A claim about the run's status is judged on the predicates
    that decide it."""
    subject = claim["subject"]
    family, _, key = (subject or "").partition(":")
    entries: dict[str, list[dict[str, Any]]] = {
        "checks": [],
        "effects": [],
        "artifacts": [],
        "actions": [],
    }
    if family == "check":
        entries["checks"] = [c for c in block["checks"] if c["label"] == key]
    elif family == "effect":
        entries["effects"] = [e for e in block["effects"] if e["intent_id"] == key]
    elif family == "artifact":
        entries["artifacts"] = [a for a in block["artifacts"] if a["path"] == key]
    elif family == "action":
        entries["actions"] = [a for a in block["actions"] if a["action_id"] == key]
    named = {subject, f"deliverable:{key}"} if subject else set()
    predicates = (
        [p for p in block["predicates"] if p["id"] in named] if subject else list(block["why"])
    )
    contradictions = [c for c in block["contradictions"] if subject and c["subject"] == subject]
    index = index or EventIndex(())
    entry_events = index.having("check_id", [c["check_id"] for c in entries["checks"]])
    for e in entries["effects"]:
        entry_events += index.having("intent_id", [e["intent_id"]])
        entry_events += index.having("receipt_id", e["receipts"])
    events = sorted(
        {e for p in predicates for e in p["evidence"]}
        | {x["event_id"] for c in contradictions for x in c["evidence"]}
        | set(entry_events)
    )
    return {
        "revision": block["revision"],
        "revision_id": block["revision_id"],
        "subject": subject,
        "entries": entries,
        "predicates": predicates,
        "contradictions": contradictions,
        "events": events,
        "event_cards": sorted(
            (index.cards[e] for e in events if e in index.cards),
            key=lambda c: (c["occurred_at"], c["event_id"]),
        ),
        "narrative_event": claim["event_id"],
        "trigger_event": block["trigger_event_id"],
    }


def compare_page(view: RunView, a: int, b: int) -> dict[str, Any]:
    """Revisions `a` ("then") and `b` ("now") side by side, and what differs."""
    then, now = status_block(view, a), status_block(view, b)
    return {
        "view": view,
        "then": then,
        "now": now,
        "differences": differences(then, now),
        "numbers": [int(r["revision"]) for r in view.revisions],
    }
