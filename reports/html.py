"""The report page: one self-contained HTML file per run (docs/reports.md).

No script, no network fetch, no external font or stylesheet: the style sheet is inline
and the page reads the same without it. Headings structure it, tables have captions and
header cells, every state is written in words (colour only repeats them), and what is
unknown is styled apart from what failed. The same records give the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from outcomes.reports.model import RunView
from outcomes.reports.report import claim_maps, timeline
from outcomes.reports.status import (
    NEEDS_REVIEW,
    REVIEW_NOTE,
    VERDICT_COPY,
    Block,
    claim_summary,
    quote,
    status_block,
    verdict_copy,
)

STYLE = """
:root { color-scheme: light; --ok: #1a7f37; --unknown: #4b5563; --unmet: #9a6700;
  --failed: #b42318; --review: #1d4ed8; --ink: #111827; --muted: #4b5563;
  --line: #d1d5db; }
* { box-sizing: border-box; }
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink);
  margin: 0 auto; max-width: 72rem; padding: 1.5rem; background: #fff; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; }
h2 { font-size: 1.25rem; margin: 2rem 0 .5rem; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.05rem; margin: 1.25rem 0 .4rem; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
caption { text-align: left; font-weight: 600; padding: .25rem 0; }
th, td { border: 1px solid var(--line); padding: .3rem .5rem; text-align: left;
  vertical-align: top; }
th { background: #f3f4f6; }
code { font: .92em ui-monospace, "SFMono-Regular", Menlo, monospace; overflow-wrap: anywhere; }
.state { font-weight: 600; white-space: nowrap; }
.state::before { display: inline-block; width: 1.1em; }
.tone-ok .state::before, .state.tone-ok::before { content: "✓"; color: var(--ok); }
.tone-unknown .state::before, .state.tone-unknown::before { content: "?"; color: var(--unknown); }
.tone-unmet .state::before, .state.tone-unmet::before { content: "-"; color: var(--unmet); }
.tone-failed .state::before, .state.tone-failed::before { content: "✗"; color: var(--failed); }
.tone-review .state::before, .state.tone-review::before { content: "?"; color: var(--review); }
.state.tone-ok { color: var(--ok); }
.state.tone-unknown { color: var(--unknown); font-style: italic; }
.state.tone-unmet { color: var(--unmet); }
.state.tone-failed { color: var(--failed); }
.state.tone-review { color: var(--review); }
.banner { border: 2px solid var(--line); border-left-width: .6rem; padding: .75rem 1rem;
  margin: 1rem 0; }
.banner.tone-ok { border-color: var(--ok); }
.banner.tone-unknown { border-color: var(--unknown); border-style: dashed dashed dashed solid; }
.banner.tone-unmet { border-color: var(--unmet); }
.banner.tone-failed { border-color: var(--failed); background: #fef3f2; }
.banner p { margin: .2rem 0; }
.banner .status { font-size: 1.3rem; font-weight: 700; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
blockquote.narrative { margin: .5rem 0; padding: .5rem 1rem; border-left: 4px solid var(--line);
  white-space: pre-wrap; }
mark { background: none; padding: 0 .1em; border-bottom: 3px solid var(--line); }
mark.tone-ok { border-bottom-color: var(--ok); }
mark.tone-unknown { border-bottom: 3px dotted var(--unknown); }
mark.tone-unmet { border-bottom-color: var(--unmet); }
mark.tone-failed { border-bottom: 3px double var(--failed); }
mark.tone-review { border-bottom: 3px dashed var(--review); }
.tag { font-size: .8em; font-weight: 600; border: 1px solid currentColor; border-radius: .3em;
  padding: 0 .3em; margin-left: .2em; white-space: nowrap; }
.tag.tone-ok { color: var(--ok); }
.tag.tone-unknown { color: var(--unknown); }
.tag.tone-unmet { color: var(--unmet); }
.tag.tone-failed { color: var(--failed); }
.tag.tone-review { color: var(--review); }
.muted { color: var(--muted); }
footer { margin-top: 2rem; color: var(--muted); font-size: .9rem; }
"""


def page(view: RunView) -> str:
    """The report page of `view`'s run at its latest revision."""
    b = status_block(view)
    title = f"Run {b['run_id']}: {b['status_label']} (revision {b['revision']})"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # Nothing may load from elsewhere, whatever the page holds.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">",
        f'<meta name="outcomes-revision" content="{_e(b["revision_id"])}">',
        f"<title>{_e(title)}</title>",
        f"<style>{STYLE}</style>",
        "</head>",
        "<body>",
        "<header>",
        f"<h1>Run <code>{_e(b['run_id'])}</code></h1>",
        _banner(b),
        "</header>",
        "<main>",
        *_status(b),
        *_timeline(view),
        *_narratives(view),
        *_evidence(view, b),
        "</main>",
        "<footer>",
        f"<p>Rendered from account revision <code>{_e(b['revision_id'])}</code> "
        f"(state revision <code>{_e(b['state_revision'])}</code>) and its claim verdicts. "
        "What was true then stays as it was; a later revision says what is true now.</p>",
        "</footer>",
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"


def _e(value: Any) -> str:
    return escape("none" if value is None else str(value), quote=True)


def _state(label: str, tone: str) -> str:
    return f'<span class="state tone-{tone}">{_e(label)}</span>'


def _banner(b: Block) -> str:
    return (
        f'<section class="banner tone-{b["tone"]}" aria-label="Status">'
        f'<p class="status" id="status">Status: {_e(b["status_label"])}</p>'
        f"<p>Account time: revision {b['revision']} of {b['latest_revision']}, "
        f"observation cutoff <time>{_e(b['observation_cutoff'])}</time>. "
        "This is what the account knew then.</p>"
        f"<p>Workflow {_e(b['workflow_status'])}; candidate snapshot "
        f"<code>{_e(b['candidate_snapshot'])}</code>.</p>"
        "</section>"
    )


def _table(
    caption: str, header: Sequence[str], rows: Iterable[Sequence[str]], *, id_: str = ""
) -> list[str]:
    """A table; cells are HTML already escaped. The first cell of a row is its header."""
    body = list(rows)
    attrs = f' id="{id_}"' if id_ else ""
    if not body:
        return [f"<p{attrs}><strong>{_e(caption)}:</strong> none.</p>"]
    out = [f"<table{attrs}>", f"<caption>{_e(caption)}</caption>", "<thead><tr>"]
    out += [f'<th scope="col">{_e(h)}</th>' for h in header]
    out.append("</tr></thead><tbody>")
    for row in body:
        cells = [f'<th scope="row">{row[0]}</th>'] + [f"<td>{c}</td>" for c in row[1:]]
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return out


def _status(b: Block) -> list[str]:
    dims = b["dimensions"]
    facts = [
        ("Revision", f"{b['revision']} (supersedes {_e(b['supersedes'])})"),
        ("Observation cutoff", f"<time>{_e(b['observation_cutoff'])}</time>"),
        ("Trigger event", f'<a href="#event-{_e(b["trigger_event_id"])}"><code>'
         f"{_e(b['trigger_event_id'])}</code></a>"),
        ("Goal revision", _e(b["goal_revision"])),
        ("Dimensions", _e(", ".join(f"{k} {'none' if v is None else v}"
                                    for k, v in sorted(dims.items())))),
        ("Assembled by", f"schema {_e(b['schema_version'])}, assembler "
         f"{_e(b['assembler_version'])}"),
    ]  # fmt: skip
    out = ['<section aria-labelledby="h-status">', '<h2 id="h-status">Status block</h2>']
    out.append('<dl class="facts">')
    out += [f"<dt>{_e(k)}</dt><dd>{v}</dd>" for k, v in facts]
    out.append("</dl>")
    why = b["status_label"].split(":")[0].lower()
    out += _table(
        f"Why {why}: the required predicates that decide it",
        ("predicate", "state", "reason", "evidence"),
        (
            (f"<code>{_e(p['id'])}</code>", _state(p["state_label"], p["tone"]), _e(p["reason"]),
             _links(p["evidence"]))
            for p in b["why"]
        ),
    )  # fmt: skip
    out.append('<h3 id="h-open">Open obligations</h3>')
    if b["open"]:
        out.append("<ul>" + "".join(f"<li>{_e(o['text'])}</li>" for o in b["open"]) + "</ul>")
    else:
        out.append("<p>None: the account owes nothing more.</p>")
    out += _table(
        f"Artifacts of the candidate snapshot {b['candidate_snapshot'] or 'none'}",
        ("path", "change", "digest", "verification-sensitive"),
        (
            (f"<code>{_e(a['path'])}</code>", _e(a["change"]), f"<code>{_e(a['digest'])}</code>",
             "yes" if a["verification_sensitive"] else "no")
            for a in b["artifacts"]
        ),
    )  # fmt: skip
    out += _table(
        "Checks",
        ("check", "state", "result", "tests run", "ran on snapshot", "receipt"),
        (
            (f"<code>{_e(c['label'])}</code>", _state(c["state_label"], c["tone"]),
             _e(c["result"]), _e(c["tests_executed"]), _e(c["candidate_snapshot"]),
             f"<code>{_e(c['check_id'])}</code>")
            for c in b["checks"]
        ),
    )  # fmt: skip
    out += _table(
        "External effects",
        ("effect", "class", "state", "receipts"),
        (
            (f"<code>{_e(e['intent_id'])}</code>", _e(e["effect_class"]),
             _state(e["state_label"], e["tone"]),
             ", ".join(f"<code>{_e(r)}</code>" for r in e["receipts"]) or "none")
            for e in b["effects"]
        ),
    )  # fmt: skip
    if b["actions"]:
        out += _table(
            "Actions",
            ("action", "tool", "outcome"),
            (
                (f"<code>{_e(a['action_id'])}</code>", _e(a["tool"]), _e(a["outcome"]))
                for a in b["actions"]
            ),
        )
    out += _table(
        "Contradictions",
        ("subject", "kind", "evidence"),
        (
            (f"<code>{_e(c['subject'])}</code>", _e(c["kind"]),
             "; ".join(f"{_e(x['value'])} ({_links([x['event_id']])}, {_e(x['occurred_at'])})"
                       for x in c["evidence"]))
            for c in b["contradictions"]
        ),
    )  # fmt: skip
    out += _table(
        "Provenance findings",
        ("subject", "kind", "evidence"),
        (
            (f"<code>{_e(f['subject'])}</code>", _e(f["kind"]), _links(f["evidence"]))
            for f in b["provenance_findings"]
        ),
    )
    if b["answers"]:  # SPEC 8: only a run whose answers were checked before display
        out += _table(
            "Answers checked before display",
            ("answer chain", "attempt", "decision", "judged on", "claims", "checked at"),
            (
                (f"<code>{_e(a['answer_chain_id'])}</code>", _e(a["attempt"]),
                 _state(a["decision_label"], a["tone"]),
                 _e("no revision" if a["account_revision"] is None
                    else f"revision {a['account_revision']}"),
                 _e(claim_summary({v: a[v] for v in VERDICT_COPY})),
                 f"<time>{_e(a['occurred_at'])}</time>")
                for a in b["answers"]
            ),
            id_="answers",
        )  # fmt: skip
    out.append("</section>")
    return out


def _links(event_ids: Sequence[str]) -> str:
    if not event_ids:
        return "none"
    return ", ".join(f'<a href="#event-{_e(i)}"><code>{_e(i)}</code></a>' for i in event_ids)


def _timeline(view: RunView) -> list[str]:
    out = ['<section aria-labelledby="h-timeline">', '<h2 id="h-timeline">Revision timeline</h2>']
    out.append('<ol class="timeline">')
    for link in timeline(view):
        item = [
            f'<li id="revision-{link["revision"]}"><h3>Revision {link["revision"]}: '
            f"{_state(link['status_label'], link['tone'])}</h3>",
            f"<p>Triggered by {_links([link['trigger_event_id']])}; observation cutoff "
            f"<time>{_e(link['observation_cutoff'])}</time>"
            + (
                f"; supersedes revision {link['supersedes']}.</p>"
                if link["supersedes"]
                else "; the first revision.</p>"
            ),
        ]
        if link["differences"]:
            item += _table(
                f"What revision {link['revision']} changed",
                ("item", "before", "after"),
                ((_e(d["item"]), _e(d["then"]), _e(d["now"])) for d in link["differences"]),
            )
        out += [*item, "</li>"]
    out += ["</ol>", "</section>"]
    return out


def _narratives(view: RunView) -> list[str]:
    out = ['<section aria-labelledby="h-narratives">', '<h2 id="h-narratives">Narratives</h2>']
    maps = claim_maps(view)
    if not maps:
        out.append("<p>No narrative was submitted for this run.</p>")
    for m in maps:
        nid = m["narrative_id"]
        out.append(
            f"<h3>Narrative <code>{_e(nid)}</code> "
            f'<span class="muted">(event {_links([m["event_id"]])})</span></h3>'
        )
        if "narrative" in view.redacted:
            out.append("<p>The narrative text is redacted from this report.</p>")
        elif m["text"] is None:
            out.append("<p>The narrative text is not in this report's source.</p>")
        else:
            out.append(f'<blockquote class="narrative">{_highlight(m)}</blockquote>')
        out += _table(
            f"Claim map of {nid}",
            ("claim", "kind", "verdict now", "judged on", "first verdict", "the account supports"),
            (_claim_row(c, m["text"] is not None) for c in m["claims"]),
        )
    out += _review(view, maps)
    out.append("</section>")
    return out


def _review(view: RunView, maps: list[dict[str, Any]]) -> list[str]:
    """The current verdicts counted (needs_review apart from contradicted), and the claims
    a person should read, in a table of their own."""
    counts = status_block(view)["claim_counts"]
    if not any(counts.values()):
        return []
    out = [f"<p>Verdicts now: {_e(claim_summary(counts))}.</p>"]
    review = [
        (m, c)
        for m in maps
        for c in m["claims"]
        if c["current"] and c["verdict"] == NEEDS_REVIEW and not c["withdrawn"]
    ]
    if review:
        out.append(f'<p id="review">{_e(REVIEW_NOTE)}</p>')
        out += _table(
            "Claims for review",
            ("claim", "narrative", "kind", "reason"),
            (
                (_said(c, m["text"] is not None), f"<code>{_e(m['narrative_id'])}</code>",
                 _e(c["claim_kind"]), _e(c["reason"]))
                for m, c in review
            ),
        )  # fmt: skip
    return out


def _said(c: dict[str, Any], marked: bool) -> str:
    """A claim's words, linked to its mark in the narrative when it is on the page."""
    if c["span_start"] is None:
        return f"left out: <code>{_e(c['subject'])}</code>"
    if marked and c["current"]:
        return f'<a href="#{_anchor(c["claim_id"])}">{_e(quote(c))}</a>'
    return _e(quote(c))


def _claim_row(c: dict[str, Any], marked: bool) -> Sequence[str]:
    """A claim map row; `marked`: the narrative is on the page, the claim marked in it."""
    words, tone = verdict_copy(c["verdict"])
    if c["withdrawn"]:
        words, tone = f"{words}, withdrawn: no longer owed", "ok"
    said = _said(c, marked)
    on = c["judged_on"]
    where = (
        f'<a href="#revision-{_e(on["revision_id"]).rsplit(":", 1)[-1]}">'
        f"{_e(on['revision_id'])}</a>, {_e(on['subject'] or 'status')}"
        if on["revision_id"]
        else "no account"
    )
    first_words = verdict_copy(c["first_verdict"])[0]
    first = f"{_e(first_words)} at {_e(c['first_judged_on']['revision_id'])}"
    if c["first_supported"] and c["first_supported"] != c["supported"]:
        first += f": {_e(c['first_supported'])}"
    return (
        said,
        _e(c["claim_kind"]),
        _state(words, tone),
        where,
        first,
        _e(c["supported"]) if c["supported"] else "—",
    )


def _anchor(claim_id: str) -> str:
    return "claim-" + "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in claim_id)


def _highlight(m: dict[str, Any]) -> str:
    """The narrative with each claim's span marked by its current verdict, the verdict
    also written after it (colour never carries it alone)."""
    text: str = m["text"]
    spans = sorted(
        (c for c in m["claims"] if c["span_start"] is not None and c["current"]),
        key=lambda c: (c["span_start"], c["span_end"]),
    )
    out, at = [], 0
    for c in spans:
        start, end = c["span_start"], c["span_end"]
        if start < at:  # overlaps a claim already marked: an anchor only, its row says it
            out.append(f'<span id="{_anchor(c["claim_id"])}"></span>')
            continue
        words, tone = verdict_copy(c["verdict"])
        out.append(_e(text[at:start]))
        out.append(
            f'<mark id="{_anchor(c["claim_id"])}" class="tone-{tone}">{_e(text[start:end])}'
            f"</mark>"
            f'<span class="tag tone-{tone}">{_e(words)}</span>'
        )
        at = end
    out.append(_e(text[at:]))
    return "".join(out)


def _evidence(view: RunView, b: Block) -> list[str]:
    out = ['<section aria-labelledby="h-evidence">', '<h2 id="h-evidence">Evidence</h2>']
    out += _table(
        "Evidence behind each predicate",
        ("predicate", "state", "reason", "evidence events"),
        (
            (f"<code>{_e(p['id'])}</code>", _state(p["state_label"], p["tone"]), _e(p["reason"]),
             _links(p["evidence"]))
            for p in b["predicates"]
        ),
    )  # fmt: skip
    cited = sorted(
        {i for p in b["predicates"] for i in p["evidence"]}
        | {x["event_id"] for c in b["contradictions"] for x in c["evidence"]}
        | {i for f in b["provenance_findings"] for i in f["evidence"]}
        | {str(r["trigger_event_id"]) for r in view.revisions}
        | {m["event_id"] for m in claim_maps(view)}
    )
    rows = []
    for event_id in cited:
        event = view.event(event_id)
        kind = _e(event["type"]) if event is not None else "not in this report's source"
        at = _e(event["occurred_at"]) if event is not None else "—"
        rows.append(
            (f'<code id="event-{_e(event_id)}">{_e(event_id)}</code>', kind, at, _detail(event))
        )
    out += _table("Events cited", ("event", "type", "occurred at", "details"), rows)
    out.append("</section>")
    return out


# Event fields worth a reader's eye, by event type; the rest stays in the bundle.
_DETAIL_FIELDS = (
    "label", "result", "tests_executed", "candidate_snapshot", "snapshot_id", "sealed",
    "intent_id", "effect_class", "state", "receipt_id", "observed", "authoritative",
    "action_id", "tool", "outcome", "completion", "narrative_id",
)  # fmt: skip


def _detail(event: Any) -> str:
    if event is None:
        return "—"
    shown = [f"{k} {event[k]}" for k in _DETAIL_FIELDS if event.get(k) is not None]
    return _e(", ".join(shown)) or "—"
