"""What the browser reads, and how: fixed, parameterised SELECTs in a read-only session.

Nothing here takes SQL from a page. A page's filters become typed query parameters
(`{status:Array(String)}`, `{q:String}`, …) of statements written in this module; the
session they run in is the analysts' (sinks/query.py): its limits and `readonly = 1` are
set before any statement arrives (on chDB as `SET`s on the browser's own connection, on a
server with every request), and every table is read as FINAL. A chDB directory a running
sink holds is read through that sink's query endpoint, which decides each statement
again on its own engine (sinks/guard.py), so every statement here is one an analyst may
run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from outcomes.reports.model import RunView
from outcomes.sinks import clickhouse, schema
from outcomes.sinks.query import session_settings, set_statements
from outcomes.sinks.runs import (
    _ANSWER_COLUMNS,
    _VERDICT_COLUMNS,
    _answer,
    _answer_column,
    _verdict,
)

STATUSES = ("complete", "partially_complete", "unresolved", "blocked", "failed")
DIMENSIONS = (
    "response_completion",
    "requested_action_outcome",
    "verification",
    "review",
    "durability",
)
CONTRADICTED = ("now", "ever")
"""`now`: a current claim verdict is contradicted or the current account holds a
contradiction between receipts; `ever`: any settlement or revision did."""
PAGE_SIZE = 50
FULL_SCAN = 40_000
"""Past this many newest revisions scanned for a page's runs, the page groups them all."""
SCAN_EXTRA = 100
"""Revisions scanned beyond two per run the page needs, at first."""
MAX_SEARCH = 200
MAX_CHOICES = 200
"""Agents and models offered as filter choices (the most common first)."""
CHOICES_SECONDS = 30.0
"""How long the filter choices are reused: a new agent or model shows within this."""
MAX_RUN_EVENTS = 5_000
"""Events of one run read for its page (what its evidence names, and the rest in order)."""

# The statement kinds of a page's SQL shown to analysts use the views' names; the
# browser's own reads go to the record table behind them (its Nested columns hold each
# revision's predicates, contradictions and effects).
_ROWS = "account_revision_rows"
# The input events (sinks/events.py): run.started's agent, model and task, and the
# events account entries name.
_EVENTS = schema.EVENTS_TABLE


class Session:
    """One read-only connection of the browser, used by one statement at a time.

    chDB runs one engine per process: the browser opens its own connection (session) on
    it, so `SET readonly = 1` there binds only the browser's statements.
    """

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        conn = clickhouse.require_database(dsn, live=True)
        if not conn.live:
            # A chDB made by an older version is migrated first (the events table), as
            # `outcomes show` does; a server must have been migrated by its operator.
            schema.ensure_schema(conn)
        self.live = conn.live
        self._conn = clickhouse.open_private(dsn)
        self._settings: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.choices: tuple[float, Choices] | None = None  # (when read, what)
        settings = session_settings(final=True)
        if self._conn.live:
            # The sink's endpoint limits its own sessions; only `final` travels.
            self._settings = {"final": 1}
        elif self._conn.target.embedded:
            for statement in set_statements(settings):
                self._conn.client.command(statement)
        else:
            self._settings = settings
        self._conn.use_database()  # the charts' SQL names the views unqualified
        self.database = self._conn.database

    def table(self, name: str) -> str:
        return self._conn.table(name)

    def rows(self, sql: str, parameters: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """The rows of one SELECT; a refusal or failure is `ClickHouseUnavailable`, one
        line."""
        with self._lock:
            return self._conn.rows(sql, parameters, self._settings)

    def close(self) -> None:
        clickhouse.close(self._conn)


# -- the runs table --------------------------------------------------------------------------


@dataclass(frozen=True)
class RunFilter:
    """One view of the runs table, as its URL says it (every field a query parameter)."""

    status: tuple[str, ...] = ()
    agent: tuple[str, ...] = ()
    model: tuple[str, ...] = ()
    contradicted: str | None = None
    superseded_last_hour: bool = False
    since: datetime | None = None
    until: datetime | None = None
    q: str = ""
    page: int = 1

    @property
    def offset(self) -> int:
        return (self.page - 1) * PAGE_SIZE

    def params(self) -> list[tuple[str, str]]:
        """The query parameters that give this view (for links: the same view, another
        page)."""
        out: list[tuple[str, str]] = [("status", s) for s in self.status]
        out += [("agent", a) for a in self.agent]
        out += [("model", m) for m in self.model]
        if self.contradicted:
            out.append(("contradicted", self.contradicted))
        if self.superseded_last_hour:
            out.append(("superseded", "1h"))
        if self.since is not None:
            out.append(("since", _stamp(self.since)))
        if self.until is not None:
            out.append(("until", _stamp(self.until)))
        if self.q:
            out.append(("q", self.q))
        return out


def _stamp(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M") if value.second == 0 else value.isoformat()


@dataclass(frozen=True)
class RunRow:
    """One line of the runs table."""

    run_id: str
    status: str
    dimensions: dict[str, str | None]
    revisions: int
    latest: int
    last_change: datetime
    goal: tuple[str, ...] = ()
    contradicted: int = 0
    omitted: int = 0
    needs_review: int = 0
    receipt_contradictions: int = 0
    effects_unknown: int = 0
    agent: str = ""
    model: str = ""
    task: str = ""


@dataclass(frozen=True)
class RunsPage:
    rows: list[RunRow]
    more: bool
    filters: RunFilter
    sql: str = field(repr=False, default="")


def runs_page(session: Session, f: RunFilter, now: datetime | None = None) -> RunsPage:
    """The runs of one view, newest change first, one page: which runs in one statement
    over every run's revisions (only what the filters need), their columns in a second
    one over the page's runs alone."""
    rows_table = session.table(_ROWS)
    having: list[str] = []
    # Runs some revision of which passes a weaker test: each filter's superset, read
    # without grouping (a run whose latest status is S had a revision with status S), so
    # grouping every run is grouping these only.
    some: list[str] = []
    params: dict[str, Any] = {"limit": PAGE_SIZE + 1, "offset": f.offset}
    events = session.table(_EVENTS)

    def started(cond: str) -> str:
        """The runs whose run.started event passes `cond` (a run's agent, model, task)."""
        return f"run_id IN (SELECT run_id FROM {events} WHERE type = 'run.started' AND {cond})"

    # Conditions on run.started alone: the same for a revision as for its run.
    starts: list[str] = []
    if f.agent:
        starts.append(started("agent IN {agent:Array(String)}"))
        params["agent"] = list(f.agent)
    if f.model:
        starts.append(started("model IN {model:Array(String)}"))
        params["model"] = list(f.model)
    having += starts
    if f.status:
        having.append("current_status IN {status:Array(String)}")
        some.append("status IN {status:Array(String)}")
        params["status"] = list(f.status)
    if f.since is not None:
        having.append("last_change >= {since:DateTime64(6, 'UTC')}")
        some.append("created_at >= {since:DateTime64(6, 'UTC')}")
        params["since"] = f.since
    if f.until is not None:
        having.append("last_change < {until:DateTime64(6, 'UTC')}")
        params["until"] = f.until
    if f.superseded_last_hour:
        clock = now or datetime.now(UTC)
        having.append(
            "latest > 1 AND maxIf(created_at, revision > 1) >= {hour_ago:DateTime64(6, 'UTC')}"
        )
        some.append("revision > 1 AND created_at >= {hour_ago:DateTime64(6, 'UTC')}")
        params["hour_ago"] = clock - timedelta(hours=1)
    if f.contradicted == "now":
        having.append(
            "(argMax(length(`contradictions.subject`), revision) > 0 OR run_id IN "
            f"(SELECT run_id FROM {session.table('current_claim_verdicts')} "
            "WHERE verdict = 'contradicted'))"
        )
    elif f.contradicted == "ever":
        having.append(
            "(max(length(`contradictions.subject`)) > 0 OR run_id IN "
            f"(SELECT run_id FROM {session.table('claim_verdicts')} "
            "WHERE verdict = 'contradicted'))"
        )
    if f.q:
        # The run id, the goal in force as the account states it, or the task as its
        # requester worded it (run.started).
        task = started("positionCaseInsensitive(task, {q:String}) > 0")
        having.append(
            "(positionCaseInsensitive(run_id, {q:String}) > 0 OR arrayExists("
            "p -> positionCaseInsensitive(p, {q:String}) > 0, "
            f"argMax(`predicates.predicate_id`, revision)) OR {task})"
        )
        some.append(
            "positionCaseInsensitive(run_id, {q:String}) > 0 OR arrayExists("
            "p -> positionCaseInsensitive(p, {q:String}) > 0, `predicates.predicate_id`) "
            f"OR {task}"
        )
        params["q"] = f.q

    def statement(where: str) -> str:
        return (
            "SELECT run_id, argMax(status, revision) AS current_status, max(revision) AS "
            f"latest, max(created_at) AS last_change\nFROM {rows_table}\n{where}GROUP BY run_id\n"
            + (f"HAVING {' AND '.join(having)}\n" if having else "")
            + "ORDER BY last_change DESC, run_id DESC\n"
            "LIMIT {limit:UInt32} OFFSET {offset:UInt32}"
        )

    # Newest first without grouping every run: the runs of the newest `scan` revisions
    # are the candidates. The page is right when the oldest revision scanned is older
    # than the page's last run's last change (every revision at or after that change
    # was scanned, so no run that belongs on the page was left out); else scan more,
    # and past `FULL_SCAN` revisions group them all.
    scan = 2 * (f.offset + PAGE_SIZE + 1) + SCAN_EXTRA
    while scan <= FULL_SCAN:
        newest = session.rows(
            f"SELECT run_id, created_at FROM {rows_table} "
            "ORDER BY created_at DESC LIMIT {scan:UInt32}",
            {"scan": scan},
        )
        # PREWHERE: FINAL turns off moving the key's filter there by itself; reading
        # only the candidates' rows of the granules the key finds is several times less.
        sql = statement("PREWHERE run_id IN {candidates:Array(String)}\n")
        candidates = list(dict.fromkeys(str(r[0]) for r in newest))
        found = session.rows(sql, {**params, "candidates": candidates})
        if len(newest) < scan:  # every revision was scanned
            break
        if len(found) > PAGE_SIZE and newest[-1][1] < found[-1][3]:
            break
        scan *= 4
    else:
        sql = statement(
            "".join(
                f"{'WHERE' if i == 0 else '  AND'} {cond}\n"
                for i, cond in enumerate(
                    [
                        *starts,
                        *(f"run_id IN (SELECT run_id FROM {rows_table} WHERE {c})" for c in some),
                    ]
                )
            )
        )
        found = session.rows(sql, params)
    more = len(found) > PAGE_SIZE
    ids = [str(r[0]) for r in found[:PAGE_SIZE]]
    return RunsPage(run_rows(session, ids), more, f, sql)


def run_rows(session: Session, ids: Sequence[str]) -> list[RunRow]:
    """The runs table's columns of `ids`, in that order."""
    if not ids:
        return []
    dims = ", ".join(f"argMax({d}, revision)" for d in DIMENSIONS)
    details = session.rows(
        f"SELECT run_id, argMax(status, revision), {dims}, count(), max(revision), "
        "max(created_at), argMax(`predicates.predicate_id`, revision), "
        "argMax(length(`contradictions.subject`), revision), "
        "argMax(countEqual(`effects.state`, 'unknown'), revision)\n"
        f"FROM {session.table(_ROWS)}\nPREWHERE run_id IN {{ids:Array(String)}}\nGROUP BY run_id",
        {"ids": list(ids)},
    )
    claims = {
        str(r[0]): (int(r[1]), int(r[2]), int(r[3]))
        for r in session.rows(
            # current_claim_verdicts' rule (a claim's latest settlement, unless it
            # withdrew an omission), on the page's runs only: the view would settle
            # every claim of every run before its LIMIT BY let the filter apply.
            "SELECT run_id, countIf(verdict = 'contradicted'), countIf(verdict = 'omitted'), "
            "countIf(verdict = 'needs_review')\nFROM (\n"
            "    SELECT run_id, argMax(verdict, greatest(settlement, 1)) AS verdict,\n"
            "           argMax(withdrawn, greatest(settlement, 1)) AS gone\n"
            f"    FROM {session.table('claim_verdicts')}\n"
            "    WHERE run_id IN {ids:Array(String)}\n"
            "    GROUP BY run_id, if(claim_id = '', row_id, claim_id)\n"
            ")\nWHERE NOT gone\nGROUP BY run_id",
            {"ids": list(ids)},
        )
    }
    starts = {
        str(r[0]): (str(r[1]), str(r[2]), str(r[3]))
        for r in session.rows(
            f"SELECT run_id, agent, model, task FROM {session.table(_EVENTS)}\n"
            "PREWHERE run_id IN {ids:Array(String)} WHERE type = 'run.started'",
            {"ids": list(ids)},
        )
    }
    by_id: dict[str, RunRow] = {}
    for r in details:
        run_id = str(r[0])
        c, o, n = claims.get(run_id, (0, 0, 0))
        agent, model, task = starts.get(run_id, ("", "", ""))
        by_id[run_id] = RunRow(
            run_id=run_id,
            status=str(r[1]),
            dimensions=dict(zip(DIMENSIONS, r[2:7], strict=True)),
            revisions=int(r[7]),
            latest=int(r[8]),
            last_change=r[9],
            goal=goal_of(r[10]),
            contradicted=c,
            omitted=o,
            needs_review=n,
            receipt_contradictions=int(r[11]),
            effects_unknown=int(r[12]),
            agent=agent,
            model=model,
            task=task,
        )
    return [by_id[i] for i in ids if i in by_id]


_GOAL_FAMILIES = ("deliverable:", "check:", "effect:", "action:")


def goal_of(predicate_ids: Sequence[str]) -> tuple[str, ...]:
    """The goal in force as its account states it: the predicates its goal required
    (deliverables, checks, effects, actions), not the run-wide ones."""
    return tuple(p for p in predicate_ids if p.startswith(_GOAL_FAMILIES))


# -- one run ---------------------------------------------------------------------------------


def read_view(session: Session, run_id: str) -> RunView:
    """The run's revisions and claim verdicts as `outcomes show` reads them
    (sinks/runs.py), in the browser's read-only session. `RunNotFound` if it has none."""
    revisions = session.rows(
        f"SELECT account FROM {session.table(_ROWS)} WHERE run_id = {{run:String}} "
        "ORDER BY revision",
        {"run": run_id},
    )
    verdicts = session.rows(
        f"SELECT {', '.join(_VERDICT_COLUMNS)} FROM {session.table('claim_verdicts')} "
        "WHERE run_id = {run:String} ORDER BY narrative_id, claim_id, settlement, row_id",
        {"run": run_id},
    )
    answers = session.rows(
        f"SELECT {', '.join(_answer_column(c) for c in _ANSWER_COLUMNS)} "
        f"FROM {session.table(schema.ANSWER_CHECKS.name)} "
        "WHERE run_id = {run:String} ORDER BY answer_chain_id, attempt, row_id",
        {"run": run_id},
    )
    return RunView.of(
        run_id,
        [orjson.loads(r[0]) for r in revisions],
        [_verdict(r) for r in verdicts],
        run_events(session, run_id),
        [_answer(r) for r in answers],
    )


def run_events(session: Session, run_id: str) -> list[dict[str, Any]]:
    """The run's input events as their producers sent them (canonical JSON), in the
    order they happened (sinks/events.py records them from the worker's run log)."""
    found = session.rows(
        f"SELECT event FROM {session.table(_EVENTS)} WHERE run_id = {{run:String}} "
        "ORDER BY occurred_at, log_partition, log_offset LIMIT {most:UInt32}",
        {"run": run_id, "most": MAX_RUN_EVENTS},
    )
    return [orjson.loads(r[0]) for r in found]


@dataclass(frozen=True)
class Choices:
    """The agents and models runs started with, the most common first (filter choices)."""

    agents: list[str]
    models: list[str]


def choices(session: Session, clock: Callable[[], float] = time.monotonic) -> Choices:
    """The filter choices, read again at most every `CHOICES_SECONDS` (grouping every
    run's start on each page would cost the first page tens of milliseconds at 100,000
    runs)."""
    cached = session.choices
    if cached is not None and clock() - cached[0] < CHOICES_SECONDS:
        return cached[1]

    def common(column: str) -> list[str]:
        # `column` is one of two names written here, never input.
        found = session.rows(
            f"SELECT {column}, count() AS n FROM {session.table(_EVENTS)} "
            f"WHERE type = 'run.started' AND {column} != '' "
            f"GROUP BY {column} ORDER BY n DESC, {column} LIMIT {{most:UInt32}}",
            {"most": MAX_CHOICES},
        )
        return [str(r[0]) for r in found]

    found = Choices(common("agent"), common("model"))
    session.choices = (clock(), found)
    return found


def latest_revision(session: Session, run_id: str) -> int:
    """The run's newest revision number (0: none yet)."""
    found = session.rows(
        f"SELECT max(revision) FROM {session.table(_ROWS)} WHERE run_id = {{run:String}}",
        {"run": run_id},
    )
    return int(found[0][0] or 0) if found else 0
