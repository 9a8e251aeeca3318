"""The status block of one account revision (seed 001, "a compact deterministic status
block" and "a minimal fallback renderer directly from validated state"), and "then and
now" for an earlier revision beside the latest.

`status_block` arranges one revision's fields into a block (a dict, which is also the
JSON form); `render` writes it as text or Markdown. Everything shown is a field of the
revision or of its verdicts, or a sentence `reducers/claims/formulation.py` builds from them: no
rule of the SPEC is decided here. The copy follows the seed: what is not known is "not
confirmed", never "almost done", and only what failed is marked failed. The same input
always gives the same bytes.

In Markdown, data renders as itself (`common/text.py`): ids are code spans
(`markdown_code`), every other data value (cells, titles, facts, obligations) is
literal text (`markdown_text`), so narrative HTML, a link or a `|` in the data is shown,
never interpreted. Text output is the data as it is (the CLI escapes it for terminals).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from outcomes.common.text import markdown_code, markdown_text
from outcomes.reducers.claims.formulation import open_obligations
from outcomes.reports.model import Record, RunView

FORMATS = ("text", "markdown", "json")
Block = dict[str, Any]

# Tones: how a state reads. "failed" is the only failure styling; "unknown" is not one,
# nor is "review": a claim the rules could not decide, which a person should read.
OK, UNKNOWN, UNMET, FAILED, REVIEW = "ok", "unknown", "unmet", "failed", "review"

STATUS_COPY: Mapping[str, tuple[str, str]] = {
    "complete": ("Complete", OK),
    "partially_complete": ("Partially complete", UNMET),
    "unresolved": ("Unresolved: not confirmed", UNKNOWN),
    "blocked": ("Blocked", UNMET),
    "failed": ("Failed", FAILED),
}
PREDICATE_COPY: Mapping[str, tuple[str, str]] = {
    "satisfied": ("met", OK),
    "indeterminate": ("not confirmed", UNKNOWN),
    "unsatisfied": ("not met", UNMET),
}
CHECK_COPY: Mapping[str, tuple[str, str]] = {
    "passing": ("passing", OK),
    "failing": ("failing", FAILED),
    "stale": ("not confirmed: stale", UNKNOWN),
    "indeterminate": ("not confirmed: indeterminate", UNKNOWN),
    "missing": ("missing: no result", UNMET),
    "zero_tests": ("not confirmed: zero tests", UNMET),
}
EFFECT_COPY: Mapping[str, tuple[str, str]] = {
    "completed": ("completed", OK),
    "failed": ("failed", FAILED),
    "denied": ("denied", UNMET),
    "compensated": ("compensated (rolled back)", UNMET),
}
VERDICT_COPY: Mapping[str, tuple[str, str]] = {
    "supported": ("supported", OK),
    "contradicted": ("contradicted", FAILED),
    "omitted": ("left out", UNMET),
    "unverifiable": ("not confirmed: unverifiable", UNKNOWN),
    "needs_review": ("needs review", REVIEW),
}
# The verdict a person must read: shown in a section of its own, never as contradicted.
NEEDS_REVIEW = "needs_review"
# What a check of an answer before display decided (SPEC 8). An unchecked answer is shown
# as such, never as passed.
ANSWER_COPY: Mapping[str, tuple[str, str]] = {
    "pass": ("passed", OK),
    "repair": ("sent back for repair", UNMET),
    "contain": ("contained: shown from the account", FAILED),
    "unchecked": ("shown unchecked: not confirmed", UNKNOWN),
}


def _copy(table: Mapping[str, tuple[str, str]], state: str | None) -> tuple[str, str]:
    if state is None:
        return ("none", UNKNOWN)
    return table.get(state, (f"not confirmed: {state}", UNKNOWN))


def verdict_copy(verdict: str) -> tuple[str, str]:
    """A claim verdict's (words, tone), as every report shows it."""
    return _copy(VERDICT_COPY, verdict)


def _effect_copy(state: str) -> tuple[str, str]:
    return EFFECT_COPY.get(state, (f"not confirmed: {state}", UNKNOWN))


# -- the block -------------------------------------------------------------------------------

_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[tuple[int, int | str], ...], str]:
    """Sorts ids as people read them: `message-2` before `message-10` (each run of digits
    compares as a number), the text itself breaking ties (`act-01`, `act-1`)."""
    parts = tuple(
        (1, int(part)) if part.isdigit() else (0, part) for part in _DIGITS.split(text) if part
    )
    return parts, text


def _by_id(predicates: Sequence[Record]) -> list[Record]:
    """Predicates in natural order of their ids (`action:message-2` before `-10`)."""
    return sorted(predicates, key=lambda p: natural_key(str(p["id"])))


def status_block(view: RunView, number: int | None = None) -> Block:
    """The block of revision `number` (default: the latest) of `view`'s run."""
    body = view.revision(number) if number is not None else view.latest
    n = int(body["revision"])
    claims = [_claim(v) for v in view.verdicts_at(n)]
    status_label, status_tone = _copy(STATUS_COPY, body["status"])
    required = [p for p in body["predicates"] if p["required"]]
    held = [p for p in required if p["state"] != "satisfied"]
    return {
        "run_id": view.run_id,
        "revision": n,
        "latest_revision": int(view.latest["revision"]),
        "supersedes": body["supersedes"],
        "revision_id": body["revision_id"],
        "status": body["status"],
        "status_label": status_label,
        "tone": status_tone,
        "workflow_status": body["workflow_status"],
        "observation_cutoff": body["observation_cutoff"],
        "trigger_event_id": body["trigger_event_id"],
        "state_revision": body["state_revision"],
        "schema_version": body["schema_version"],
        "assembler_version": body["assembler_version"],
        "goal_revision": body["goal_revision"],
        "candidate_snapshot": body["candidate_snapshot"],
        "dimensions": dict(body["dimensions"]),
        # The predicates that decide the status: those holding it back, else all.
        "why": [_predicate(p) for p in _by_id(held or required)],
        "predicates": [_predicate(p) for p in _by_id(body["predicates"])],
        "artifacts": [dict(a) for a in body["artifacts"]],
        "checks": [_check(c) for c in body["checks"]],
        "effects": [_effect(e) for e in body["effects"]],
        # The account lists actions by id as text (message-10 before message-2).
        "actions": sorted(
            (dict(a) for a in body["actions"]), key=lambda a: natural_key(str(a["action_id"]))
        ),
        "contradictions": [dict(c) for c in body["contradictions"]],
        "provenance_findings": [dict(f) for f in body["provenance_findings"]],
        "open": [{"subject": s, "text": t} for s, t in open_obligations(body)],
        "claims": claims,
        # Current claims by verdict: needs_review counted apart from contradicted.
        "claim_counts": {
            verdict: sum(1 for c in claims if c["verdict"] == verdict) for verdict in VERDICT_COPY
        },
        "chain": [_link(r) for r in view.revisions],
        # SPEC 8: the run's answers checked before display, whatever revision is shown.
        "answers": [_answer(a) for a in view.answer_checks()],
    }


def _answer(a: Record) -> dict[str, Any]:
    label, tone = _copy(ANSWER_COPY, a["decision"])
    return {**dict(a), "decision_label": label, "tone": tone}


def _predicate(p: Record) -> dict[str, Any]:
    label, tone = _copy(PREDICATE_COPY, p["state"])
    return {
        "id": p["id"],
        "required": p["required"],
        "state": p["state"],
        "state_label": label,
        "tone": tone,
        "reason": p["reason"],
        "evidence": list(p["evidence"]),
    }


def _check(c: Record) -> dict[str, Any]:
    label, tone = _copy(CHECK_COPY, c["state"])
    return {**c, "state_label": label, "tone": tone}


def _effect(e: Record) -> dict[str, Any]:
    label, tone = _effect_copy(e["state"])
    return {**e, "receipts": list(e["receipts"]), "state_label": label, "tone": tone}


def _claim(v: Record) -> dict[str, Any]:
    label, tone = verdict_copy(v["verdict"])
    return {
        "verdict_id": v["verdict_id"],
        "claim_id": v.get("claim_id") or v["verdict_id"],
        "narrative_id": v["narrative_id"],
        "event_id": v["event_id"],
        "settlement": int(v.get("settlement") or 1),
        "account_revision": v["account_revision"],
        "claim_kind": v["claim_kind"],
        "verdict": v["verdict"],
        "state_label": label,
        "tone": tone,
        "subject": v["subject"],
        "reason": v["reason"],
        "span_start": v["span_start"],
        "span_end": v["span_end"],
        "span_text": v["span_text"],
        "supported": v.get("supported"),
    }


def _link(r: Record) -> dict[str, Any]:
    label, tone = _copy(STATUS_COPY, r["status"])
    return {
        "revision": r["revision"],
        "supersedes": r["supersedes"],
        "status": r["status"],
        "state_label": label,
        "tone": tone,
        "changes": list(r["changes"]),
        "trigger_event_id": r["trigger_event_id"],
        "observation_cutoff": r["observation_cutoff"],
    }


# -- then and now ----------------------------------------------------------------------------


def then_and_now(view: RunView, number: int) -> Block:
    """Revision `number` ("what was true then") beside the latest ("what is true now"),
    with what differs between them, item by item."""
    then, now = status_block(view, number), status_block(view)
    return {
        "run_id": view.run_id,
        "then": then,
        "now": now,
        "differences": differences(then, now),
    }


def differences(then: Block, now: Block) -> list[dict[str, Any]]:
    """(item, then, now) for every shown field that differs: status, each predicate,
    check and effect state, the candidate, and each claim's verdict."""
    out: list[dict[str, Any]] = []

    def compare(item: str, a: Any, b: Any) -> None:
        if a != b:
            out.append({"item": item, "then": a, "now": b})

    compare("status", then["status_label"], now["status_label"])
    compare("candidate snapshot", then["candidate_snapshot"], now["candidate_snapshot"])
    for key, rows, name in (
        ("id", "predicates", "predicate"),
        ("label", "checks", "check"),
        ("intent_id", "effects", "effect"),
    ):
        a = {r[key]: _shown(r) for r in then[rows]}
        b = {r[key]: _shown(r) for r in now[rows]}
        for k in sorted(a.keys() | b.keys(), key=lambda k: natural_key(str(k))):
            compare(f"{name} {k}", a.get(k, "absent"), b.get(k, "absent"))
    then_claims = {c["claim_id"]: c for c in then["claims"]}
    now_claims = {c["claim_id"]: c for c in now["claims"]}
    for k in sorted(then_claims.keys() | now_claims.keys()):
        claim = then_claims.get(k) or now_claims[k]
        was = _shown(then_claims[k]) if k in then_claims else "absent"
        is_ = _shown(now_claims[k]) if k in now_claims else "absent"
        compare(f"{claim['narrative_id']} {quote(claim)}", was, is_)
    a_paths = {r["path"]: r["change"] for r in then["artifacts"]}
    b_paths = {r["path"]: r["change"] for r in now["artifacts"]}
    for path in sorted(a_paths.keys() | b_paths.keys()):
        compare(f"artifact {path}", a_paths.get(path, "absent"), b_paths.get(path, "absent"))
    return out


def _shown(row: Mapping[str, Any]) -> str:
    receipts = row.get("receipts")
    if receipts:
        return f"{row['state_label']} (receipts: {', '.join(receipts)})"
    return str(row["state_label"])


# -- rendering -------------------------------------------------------------------------------


def render(doc: Block, fmt: str) -> str:
    """`doc` (a block, or then-and-now) as text, Markdown or JSON; ends with a newline."""
    if fmt == "json":
        return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2).decode() + "\n"
    if fmt not in ("text", "markdown"):
        raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")
    md = fmt == "markdown"
    lines = _then_and_now_lines(doc, md) if "then" in doc else _block_lines(doc, md)
    return "\n".join(lines).rstrip("\n") + "\n"


def _then_and_now_lines(doc: Block, md: bool) -> list[str]:
    then, now = doc["then"], doc["now"]
    title = f"Run {_text(doc['run_id'], md)}: then (revision {then['revision']}) and now"
    title += f" (revision {now['revision']})"
    lines = [f"# {title}" if md else title, ""]
    lines += _heading("What differs", md)
    diffs = doc["differences"]
    if not diffs:
        lines.append("nothing shown differs")
    elif md:
        lines += ["| item | then | now |", "|---|---|---|"]
        lines += [
            f"| {_text(d['item'], md)} | {_text(d['then'], md)} | {_text(d['now'], md)} |"
            for d in diffs
        ]
    else:
        lines += [f"  {d['item']}: {d['then']} -> {d['now']}" for d in diffs]
    lines.append("")
    for label, block in (("Then: what was true", then), ("Now: what is true", now)):
        head = f"{label} at revision {block['revision']}"
        lines += [f"## {head}" if md else f"== {head} ==", ""]
        lines += _block_lines(block, md, level=3)
    return lines


def _heading(text: str, md: bool, level: int = 2) -> list[str]:
    return [f"{'#' * level} {text}", ""] if md else [text, "-" * len(text)]


def _md(value: Any) -> str:
    """A Markdown table cell: already literal (`_text`, `_code`), or None."""
    return "—" if value is None else str(value)


def _code(value: Any, md: bool) -> str:
    """An id: a code span in Markdown."""
    if value is None:
        return "none"
    return markdown_code(str(value)) if md else str(value)


def _text(value: Any, md: bool) -> str:
    """A data value as literal Markdown text (None as "—"), or as it is in text."""
    if not md:
        return str(value)
    return "—" if value is None else markdown_text(str(value))


def _state(row: Mapping[str, Any], md: bool) -> str:
    """A state in words (the words carry it, not a colour); bold in Markdown if failed."""
    label = _text(row["state_label"], md)  # "not confirmed: <state>" for an unknown one
    return f"**{label}**" if md and row["tone"] == FAILED else label


def _block_lines(b: Block, md: bool, level: int = 1) -> list[str]:
    h = 2 if level == 1 else level
    title = f"Run {_text(b['run_id'], md)}: revision {b['revision']} of {b['latest_revision']}"
    lines: list[str] = [f"{'#' * level} {title}" if md else title, ""] if level == 1 else []
    status = f"Status: {_text(b['status_label'], md)}"
    lines.append(f"**{status}** ({_code(b['status'], md)})" if md else f"{status} ({b['status']})")
    if md:
        lines.append("")
    lines += _facts(b, md)
    lines.append("")

    lines += _heading(f"Why {_text(b['status_label'].split(':')[0].lower(), md)}", md, h)
    lines += _rows(
        md,
        ("predicate", "state", "reason", "evidence"),
        [
            (_code(p["id"], md), _state(p, md), _text(p["reason"], md),
             _text(", ".join(p["evidence"]) or "none", md))
            for p in b["why"]
        ],
    )  # fmt: skip
    lines += _section(md, h, "Open obligations", [o["text"] for o in b["open"]], "none")
    snapshot = _text(b["candidate_snapshot"] or "none", md)
    lines += _heading(f"Candidate {snapshot}: artifacts", md, h)
    lines += _rows(
        md,
        ("path", "change", "digest", "verification-sensitive"),
        [
            (_code(a["path"], md), _text(a["change"], md), _text(a["digest"] or "none", md),
             "yes" if a["verification_sensitive"] else "no")
            for a in b["artifacts"]
        ],
    )  # fmt: skip
    lines += _heading("Checks", md, h)
    lines += _rows(
        md,
        ("check", "state", "result", "tests", "ran on", "receipt"),
        [
            (_code(c["label"], md), _state(c, md),
             _text(c["result"] or "none", md), _num(c["tests_executed"]),
             _text(c["candidate_snapshot"] or "none", md), _text(c["check_id"] or "none", md))
            for c in b["checks"]
        ],
    )  # fmt: skip
    lines += _heading("External effects", md, h)
    lines += _rows(
        md,
        ("effect", "class", "state", "receipts"),
        [
            (_code(e["intent_id"], md), _text(e["effect_class"] or "none", md),
             _state(e, md), _text(", ".join(e["receipts"]) or "none", md))
            for e in b["effects"]
        ],
    )  # fmt: skip
    if b["actions"]:
        lines += _heading("Actions", md, h)
        lines += _rows(
            md,
            ("action", "tool", "outcome"),
            [
                (_code(a["action_id"], md), _text(a["tool"], md), _text(a["outcome"], md))
                for a in b["actions"]
            ],
        )
    if b["contradictions"]:
        lines += _heading("Contradictions", md, h)
        lines += _rows(
            md,
            ("subject", "kind", "evidence"),
            [
                (_code(c["subject"], md), _text(c["kind"], md),
                 _text("; ".join(f"{e['value']} ({e['event_id']}, {e['occurred_at']})"
                                 for e in c["evidence"]), md))
                for c in b["contradictions"]
            ],
        )  # fmt: skip
    if b["provenance_findings"]:
        lines += _heading("Provenance findings", md, h)
        lines += _rows(
            md,
            ("kind", "subject", "evidence"),
            [
                (
                    _text(f["kind"], md),
                    _code(f["subject"], md),
                    _text(", ".join(f["evidence"]) or "none", md),
                )
                for f in b["provenance_findings"]
            ],
        )
    if b["claims"]:
        decided = [c for c in b["claims"] if c["verdict"] != NEEDS_REVIEW]
        review = [c for c in b["claims"] if c["verdict"] == NEEDS_REVIEW]
        lines += _heading("Narrative claims", md, h)
        lines += [f"Verdicts: {claim_summary(b['claim_counts'])}.", ""]
        lines += _rows(
            md,
            ("narrative", "claim", "verdict", "the account supports"),
            [
                (_text(c["narrative_id"], md), _text(quote(c), md), _state(c, md),
                 _text(c["supported"] or "—", md))
                for c in decided
            ],
        )  # fmt: skip
        if review:
            lines += _heading("Claims for review", md, h)
            lines += [REVIEW_NOTE, ""]
            lines += _rows(
                md,
                ("narrative", "claim", "kind", "reason"),
                [
                    (
                        _text(c["narrative_id"], md),
                        _text(quote(c), md),
                        _text(c["claim_kind"], md),
                        _text(c["reason"], md),
                    )
                    for c in review
                ],
            )
    if b.get("answers"):
        lines += _heading("Answers checked before display", md, h)
        lines += _rows(
            md,
            ("answer chain", "attempt", "decision", "judged on", "claims", "checked at"),
            [
                (_code(a["answer_chain_id"], md), str(a["attempt"]), _state(_decision(a), md),
                 _text(_judged(a), md), _text(claim_summary({v: a[v] for v in VERDICT_COPY}), md),
                 _text(a["occurred_at"], md))
                for a in b["answers"]
            ],
        )  # fmt: skip
    lines += _heading("Revisions", md, h)
    lines += _rows(
        md,
        ("revision", "status", "changed", "trigger", "observation cutoff"),
        [
            (("▶ " if r["revision"] == b["revision"] else "") + str(r["revision"]),
             _text(r["state_label"], md), _text(", ".join(r["changes"]) or "—", md),
             _text(r["trigger_event_id"], md), _text(r["observation_cutoff"], md))
            for r in b["chain"]
        ],
    )  # fmt: skip
    return lines


REVIEW_NOTE = (
    "The rules could not decide these; a person should read them. "
    "They are neither supported nor contradicted."
)


def claim_summary(counts: Mapping[str, int]) -> str:
    """How many claims have each verdict that occurs, in the copy's order ("1 supported,
    1 contradicted, 1 needs review")."""
    shown = [f"{n} {VERDICT_COPY[v][0]}" for v, n in counts.items() if n and v in VERDICT_COPY]
    return ", ".join(shown) or "none"


def _facts(b: Block, md: bool) -> list[str]:
    dims = b["dimensions"]
    pairs = [
        ("Account time", f"revision {b['revision']}, observation cutoff {b['observation_cutoff']}"),
        ("Workflow", b["workflow_status"]),
        ("Candidate snapshot", b["candidate_snapshot"] or "none"),
        ("Goal revision", _num(b["goal_revision"])),
        ("Trigger event", b["trigger_event_id"]),
        ("Supersedes", _num(b["supersedes"])),
        (
            "Dimensions",
            ", ".join(f"{k} {'none' if v is None else v}" for k, v in sorted(dims.items())),
        ),
        ("Assembled by", f"schema {b['schema_version']}, assembler {b['assembler_version']}"),
        ("State revision", b["state_revision"]),
    ]
    if md:
        return [f"- {k}: {markdown_text(str(v))}" for k, v in pairs]
    width = max(len(k) for k, _ in pairs)
    return [f"  {k.ljust(width)}  {v}" for k, v in pairs]


def _decision(answer: Mapping[str, Any]) -> dict[str, Any]:
    return {"state_label": answer["decision_label"], "tone": answer["tone"]}


def _judged(answer: Mapping[str, Any]) -> str:
    revision = answer["account_revision"]
    return "no revision" if revision is None else f"revision {revision}"


def _num(value: Any) -> str:
    return "none" if value is None else str(value)


def quote(claim: Mapping[str, Any]) -> str:
    """A claim as the reader finds it: its words, or where they were (redacted)."""
    if claim["span_start"] is None:
        return f"(left out: {claim['subject']})"
    if claim["span_text"] is None:
        return f"(characters {claim['span_start']}-{claim['span_end']}, text redacted)"
    return f"“{claim['span_text']}”"


def _section(md: bool, level: int, title: str, items: Sequence[str], empty: str) -> list[str]:
    lines = _heading(title, md, level)
    if not items:
        return [*lines, empty, ""]
    return [*lines, *(f"- {markdown_text(i)}" if md else f"  - {i}" for i in items), ""]


def _rows(md: bool, header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table, or aligned text columns; 'none' for no rows."""
    if not rows:
        return ["none", ""]
    if md:
        out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
        return [*out, ""]
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    out = ["  " + "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    for row in rows:
        cells = (str(c).ljust(w) for c, w in zip(row, widths, strict=True))
        out.append("  " + "  ".join(cells).rstrip())
    return [*out, ""]
