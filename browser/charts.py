"""The fleet's charts: each one a fixed analyst query (shown beside it, ready for
`outcomes query`) and its answer drawn as server-side SVG. No script draws anything; each
chart also carries its numbers as a table for readers who do not see it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from html import escape
from typing import Any

from outcomes.browser.queries import Session

# Colours by meaning, each with 4.5:1 contrast or more on white (WCAG AA for text).
TONES = {
    "complete": "#1a7f37",
    "partially_complete": "#9a6700",
    "unresolved": "#4b5563",
    "blocked": "#8250df",
    "failed": "#b42318",
}
SERIES = ("#1d4ed8", "#b42318", "#9a6700", "#1a7f37", "#8250df", "#4b5563", "#0e7490")


@dataclass(frozen=True)
class Chart:
    """A chart's title, what it shows, the SQL behind it and its drawing."""

    slug: str
    title: str
    about: str
    sql: str
    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    svg: str


@dataclass(frozen=True)
class _Spec:
    slug: str
    title: str
    about: str
    sql: str
    columns: tuple[str, ...]
    draw: Callable[[str, Sequence[tuple[Any, ...]]], str]


def _label(value: Any) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M") if value.hour or value.minute else str(value.date())
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, float):
        return f"{value:.1%}" if 0 <= value <= 1 else f"{value:.2f}"
    return "none" if value is None else str(value)


def stacked_bars(title: str, rows: Sequence[tuple[Any, ...]]) -> str:
    """Bars of (x, series, value) rows, one bar per x, stacked by series, with a legend."""
    xs = list(dict.fromkeys(r[0] for r in rows))
    names = list(dict.fromkeys(str(r[1]) for r in rows))
    colour = {n: TONES.get(n, SERIES[i % len(SERIES)]) for i, n in enumerate(names)}
    totals = {x: sum(float(r[2]) for r in rows if r[0] == x) for x in xs}
    top = max(totals.values(), default=0.0) or 1.0
    width, height, left, bottom, top_pad = 640, 260, 48, 40, 12
    plot_w, plot_h = width - left - 12, height - bottom - top_pad
    step = plot_w / max(len(xs), 1)
    bar = max(min(step * 0.7, 48), 2)
    parts = [_axis(left, top_pad, plot_w, plot_h, top)]
    for i, x in enumerate(xs):
        y: float = top_pad + plot_h
        for r in (r for r in rows if r[0] == x):
            h = float(r[2]) / top * plot_h
            y -= h
            parts.append(
                f'<rect x="{left + i * step + (step - bar) / 2:.1f}" y="{y:.1f}" '
                f'width="{bar:.1f}" height="{h:.1f}" fill="{colour[str(r[1])]}">'
                f"<title>{escape(_label(x))}: {escape(str(r[1]))} {escape(_label(r[2]))}</title>"
                "</rect>"
            )
        if len(xs) <= 12 or i % max(len(xs) // 8, 1) == 0:
            parts.append(
                f'<text x="{left + i * step + step / 2:.1f}" y="{height - bottom + 16}" '
                f'text-anchor="middle" class="tick">{escape(_label(x))}</text>'
            )
    parts.append(_legend(names, colour, left, height - 8))
    return _svg(title, width, height, parts)


def bars(title: str, rows: Sequence[tuple[Any, ...]]) -> str:
    """Horizontal bars of (label, value) rows, the value written at each bar's end."""
    height = 28 * max(len(rows), 1) + 16
    width, left = 640, 220
    top = max((float(r[1]) for r in rows), default=0.0) or 1.0
    parts = []
    for i, r in enumerate(rows):
        w = float(r[1]) / top * (width - left - 80)
        y = 8 + i * 28
        parts.append(
            f'<text x="{left - 8}" y="{y + 17}" text-anchor="end" class="tick">'
            f"{escape(_label(r[0]))}</text>"
            f'<rect x="{left}" y="{y + 4}" width="{w:.1f}" height="18" '
            f'fill="{SERIES[i % len(SERIES)]}"><title>{escape(_label(r[0]))}: '
            f"{escape(_label(r[1]))}</title></rect>"
            f'<text x="{left + w + 6:.1f}" y="{y + 17}" class="value">{escape(_label(r[1]))}</text>'
        )
    if not rows:
        parts.append(f'<text x="{left}" y="28" class="tick">no rows</text>')
    return _svg(title, width, height, parts)


def _axis(left: int, top: int, w: float, h: float, most: float) -> str:
    lines = [
        f'<line x1="{left}" y1="{top + h}" x2="{left + w}" y2="{top + h}" class="axis"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + h}" class="axis"/>',
    ]
    for frac in (0.5, 1.0):
        y = top + h - frac * h
        lines.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">'
            f"{most * frac:g}</text>"
        )
    return "".join(lines)


def _legend(names: Sequence[str], colour: dict[str, str], left: int, y: int) -> str:
    out, x = [], left
    for n in names:
        out.append(
            f'<rect x="{x}" y="{y - 10}" width="10" height="10" fill="{colour[n]}"/>'
            f'<text x="{x + 14}" y="{y}" class="tick">{escape(n)}</text>'
        )
        x += 28 + 8 * len(n)
    return "".join(out)


def _svg(title: str, width: int, height: int, parts: Sequence[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{escape(title)}" class="chart">'
        f"<title>{escape(title)}</title>{''.join(parts)}</svg>"
    )


# The queries: the analysts' views (docs/analyst-queries.md), unqualified names, no
# parameters, so each runs as shown with `outcomes query`.
SPECS: tuple[_Spec, ...] = (
    _Spec(
        "status-over-time",
        "Runs by status over time",
        "Each run counted once, by its current status, in the hour of its latest revision "
        "(event time; the last 48 hours that had any).",
        """SELECT hour, status, runs FROM (
    SELECT toStartOfHour(created_at) AS hour, status, count() AS runs
    FROM current_accounts
    GROUP BY hour, status
)
WHERE hour IN (
    SELECT DISTINCT toStartOfHour(created_at) AS h FROM current_accounts ORDER BY h DESC LIMIT 48
)
ORDER BY hour, status""",
        ("hour", "status", "runs"),
        stacked_bars,
    ),
    _Spec(
        "overclaims-by-kind",
        "Overclaims by claim kind",
        "Claims whose current verdict is contradicted, by what they claim.",
        """SELECT claim_kind, count() AS contradicted
FROM current_claim_verdicts
WHERE verdict = 'contradicted'
GROUP BY claim_kind
ORDER BY contradicted DESC, claim_kind""",
        ("claim_kind", "contradicted"),
        bars,
    ),
    _Spec(
        "overclaims-by-agent",
        "Overclaims per agent and model",
        "Claims whose current verdict is contradicted, by the agent and the model their run "
        "started with (run.started; runs whose input events were not recorded are left out).",
        """SELECT s.agent AS agent, if(s.model = '', '(no model)', s.model) AS model,
       count() AS contradicted
FROM (SELECT run_id FROM current_claim_verdicts WHERE verdict = 'contradicted') AS v
INNER JOIN (
    SELECT run_id, agent, model FROM events
    WHERE type = 'run.started'
      AND run_id IN (SELECT run_id FROM claim_verdicts WHERE verdict = 'contradicted')
) AS s ON v.run_id = s.run_id
GROUP BY agent, model
ORDER BY agent, model""",
        ("agent", "model", "contradicted"),
        stacked_bars,
    ),
    _Spec(
        "answers-contradicted",
        "Share of answers contradicted",
        "Of the narratives with claims: the share holding a contradicted claim when judged "
        "(first settlement) and now (current verdicts).",
        """SELECT at, share FROM (
    SELECT 'when judged' AS at,
           uniqExactIf((run_id, narrative_id), verdict = 'contradicted')
               / greatest(uniqExact(run_id, narrative_id), 1) AS share
    FROM claim_verdicts
    WHERE settlement <= 1
    UNION ALL
    SELECT 'now' AS at,
           uniqExactIf((run_id, narrative_id), verdict = 'contradicted')
               / greatest(uniqExact(run_id, narrative_id), 1) AS share
    FROM current_claim_verdicts
)
ORDER BY at = 'now', at""",
        ("at", "share"),
        bars,
    ),
    _Spec(
        "checks-not-confirmed",
        "Required checks stale, missing or zero-test",
        "Required check predicates of current accounts held back, by reason.",
        """SELECT reason, count() AS checks
FROM predicate_results
WHERE predicate_kind = 'check' AND required AND state != 'satisfied'
  AND (run_id, revision) IN (SELECT run_id, revision FROM current_accounts)
GROUP BY reason
ORDER BY checks DESC, reason""",
        ("reason", "checks"),
        bars,
    ),
    _Spec(
        "supersessions-per-hour",
        "Supersessions per hour",
        "Revisions after a run's first, by the hour of their observation cutoff (the last "
        "48 hours that had any).",
        """SELECT hour, supersessions FROM (
    SELECT toStartOfHour(created_at) AS hour, count() AS supersessions
    FROM account_revisions
    WHERE revision > 1
    GROUP BY hour
    ORDER BY hour DESC
    LIMIT 48
)
ORDER BY hour""",
        ("hour", "supersessions"),
        lambda title, rows: stacked_bars(title, [(r[0], "supersessions", r[1]) for r in rows]),
    ),
)


def fleet(session: Session) -> list[Chart]:
    """Every chart, each from its own query."""
    out = []
    for spec in SPECS:
        rows = session.rows(spec.sql)
        out.append(
            Chart(spec.slug, spec.title, spec.about, spec.sql, spec.columns, rows,
                  spec.draw(spec.title, rows))
        )  # fmt: skip
    return out
