"""The ClickHouse checker: after a scenario, what analysts read against what was sent.

`Inputs` is what the broker acknowledged: the valid events (duplicates included, in the
order they were acknowledged), the positions of the poison records, and the runs purged
on purpose. `read_snapshot` reads what ClickHouse holds for the scenario's runs (its
run-id prefix); `check` compares the two, rule by rule:

- accounts: every run's current account (its highest revision, through FINAL) equals
  replay's final account for the run's events (`outcomes.reducers.engine.Engine` over the acked
  events, the fields that depend on arrival order left out); no run is missing, none
  is there that nobody sent.
- revisions: each run's revisions are 1..n with no gap, each superseding the one before.
- physical copies: per table, the rows counted without FINAL equal the rows counted
  with FINAL (every row stored once physically; ReplacingMergeTree would hide a second
  copy behind FINAL, so this is the only place a duplicated insert shows).
- notifications: exactly the notifications the stored revision sequence calls for: one
  `account.final` for revision 1 and one `account.superseded` per supersession that
  changed a status, a required predicate, the contradictions or the unresolved effects
  (the reducer's own rule), each with its revision's status and its predecessor's.
- dead letters: each poison record has exactly one dead letter (by its topic, partition
  and offset), stored once; no other dead letter names a run of the scenario.
- purged runs: no row of any table belongs to a purged run.

Each check gives a one-line verdict and the exact ids lost, extra or different.

chDB hosts one engine per process and a scenario's database lives in its own directory,
so `snapshot_of` reads it in a fresh child process (`read_snapshot` there); a caller
checking several scenarios in one process never holds two engines.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from outcomes.devtools.harness import content, replay_expectation
from outcomes.reducers.engine import _notifiable  # the reducer's own rule for a supersession notice
from outcomes.sinks import schema
from outcomes.sinks.clickhouse import require_database

Event = dict[str, Any]
Position = tuple[str, int, int]
"""(topic, partition, offset) of a record the broker acknowledged."""

SHOWN = 10
"""Ids named per list in a verdict line (the full lists stay in the `Check`)."""


@dataclass(frozen=True)
class Inputs:
    """What the broker acknowledged for one scenario, and what was purged on purpose."""

    prefix: str
    events: tuple[Event, ...]
    poison: frozenset[Position] = frozenset()
    purged: frozenset[str] = frozenset()


@dataclass(frozen=True)
class DeadLetterRow:
    row_id: str
    origin: Position | None
    run_id: str | None
    copies: int


@dataclass(frozen=True)
class Snapshot:
    """What ClickHouse holds for a scenario's runs (plain values: it crosses processes)."""

    counts: dict[str, tuple[int, int]]
    """table -> (rows without FINAL, rows with FINAL)."""
    repeated: dict[str, list[str]]
    """table -> row ids stored more than once physically."""
    accounts: dict[str, dict[int, tuple[int | None, str]]]
    """run -> revision -> (supersedes, the account as stored, JSON)."""
    notifications: dict[tuple[str, int], tuple[str, int | None, str, str | None]]
    """(run, revision) -> (kind, supersedes, status, previous status)."""
    dead_letters: list[DeadLetterRow]
    purged: frozenset[str]
    purged_rows: dict[str, list[str]]
    """table -> the purged runs it still has rows of."""


_FINAL = {"final": 1}


def _scoped(table: schema.Table) -> str:
    return "startsWith(run_id, {prefix:String})" if table.has_run_id else "1"


def read_snapshot(dsn: str, prefix: str) -> Snapshot:
    """Read a scenario's rows (runs under `prefix`; every dead letter) from ClickHouse."""
    conn = require_database(dsn)
    # Opening the directory would let merges run again; a merge would hide a duplicate.
    conn.command("SYSTEM STOP MERGES")
    params = {"prefix": prefix}
    counts: dict[str, tuple[int, int]] = {}
    repeated: dict[str, list[str]] = {}
    for table in schema.DATA_TABLES:
        name, where = conn.table(table.name), _scoped(table)
        physical = conn.rows(f"SELECT count() FROM {name} WHERE {where}", params)[0][0]
        final = conn.rows(f"SELECT count() FROM {name} FINAL WHERE {where}", params)[0][0]
        counts[table.name] = (int(physical), int(final))
        if physical != final:
            found = conn.rows(
                f"SELECT row_id FROM {name} WHERE {where} GROUP BY row_id "
                "HAVING count() > 1 ORDER BY row_id",
                params,
            )
            repeated[table.name] = [str(r[0]) for r in found]
    accounts: dict[str, dict[int, tuple[int | None, str]]] = {}
    # account_revisions and notifications are views (migration 13): `final = 1` reaches
    # the table inside them, where `FROM view FINAL` would not.
    for run_id, revision, supersedes, account in conn.rows(
        f"SELECT run_id, revision, supersedes, account "
        f"FROM {conn.table('account_revisions')} WHERE {_scoped(schema.ACCOUNT_REVISIONS)}",
        params,
        settings=_FINAL,
    ):
        accounts.setdefault(run_id, {})[int(revision)] = (supersedes, account)
    notifications = {
        (run_id, int(revision)): (kind, supersedes, status, previous)
        for run_id, revision, kind, supersedes, status, previous in conn.rows(
            "SELECT run_id, revision, kind, supersedes, status, previous_status "
            f"FROM {conn.table('notifications')} WHERE {_scoped(schema.NOTIFICATIONS)}",
            params,
            settings=_FINAL,
        )
    }
    dead_letters = [
        DeadLetterRow(
            row_id,
            None if topic is None else (topic, int(partition), int(offset)),
            run_id,
            int(copies),
        )
        for row_id, topic, partition, offset, run_id, copies in conn.rows(
            "SELECT row_id, any(origin_topic), any(origin_partition), any(origin_offset), "
            f"any(run_id), count() FROM {conn.table('dead_letters')} GROUP BY row_id"
        )
    ]
    purged = frozenset(
        str(r[0]) for r in conn.rows(f"SELECT DISTINCT run_id FROM {conn.table('purge_log')}")
    )
    purged_rows: dict[str, list[str]] = {}
    if purged:
        runs = {"runs": sorted(purged)}
        for table in schema.DATA_TABLES:
            found = conn.rows(
                f"SELECT DISTINCT run_id FROM {conn.table(table.name)} "
                "WHERE run_id IN {runs:Array(String)}",
                runs,
            )
            if found:
                purged_rows[table.name] = sorted(str(r[0]) for r in found)
    return Snapshot(counts, repeated, accounts, notifications, dead_letters, purged, purged_rows)


def snapshot_of(dsn: str, prefix: str) -> Snapshot:
    """`read_snapshot` in a child process of its own (one chDB engine per process)."""
    with tempfile.TemporaryDirectory(prefix="chaos-snapshot-") as tmp:
        out = Path(tmp) / "snapshot.pickle"
        done = subprocess.run(
            [sys.executable, "-m", "outcomes.devtools.chaos.snapshot", dsn, prefix, str(out)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"reading {dsn} failed: {done.stderr.strip()[-2000:]}")
        snapshot = pickle.loads(out.read_bytes())  # written just now by our own child
        assert isinstance(snapshot, Snapshot)
        return snapshot


# ---------------------------------------------------------------------------------------
# The checks.


@dataclass(frozen=True)
class Check:
    """One rule's verdict: how many items it looked at and the ids that break it."""

    name: str
    checked: int
    what: str
    lost: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    different: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not (self.lost or self.extra or self.different)

    def line(self) -> str:
        """`PASS accounts: 2000 runs ...` or `FAIL accounts: 2 lost [...]; ...`."""
        if self.ok:
            return f"PASS {self.name}: {self.checked} {self.what}"
        parts = [
            f"{len(ids)} {label} {_shown(ids)}"
            for label, ids in (
                ("lost", self.lost),
                ("extra", self.extra),
                ("different", self.different),
            )
            if ids
        ]
        return f"FAIL {self.name}: {self.checked} {self.what}; " + "; ".join(parts)


def _shown(ids: Sequence[str]) -> str:
    more = f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
    return "[" + ", ".join(ids[:SHOWN]) + more + "]"


@dataclass(frozen=True)
class Report:
    """Every check's verdict for one scenario."""

    checks: tuple[Check, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def lost(self) -> int:
        """Ids the inputs call for that ClickHouse lacks."""
        return sum(len(c.lost) for c in self.checks)

    @property
    def duplicated(self) -> int:
        """Ids ClickHouse holds beyond what the inputs call for: extra physical copies,
        extra dead letters, rows of runs nobody sent or that were purged."""
        return sum(len(c.extra) for c in self.checks)

    @property
    def differing(self) -> int:
        """Ids present on both sides with different contents."""
        return sum(len(c.different) for c in self.checks)

    def lines(self) -> list[str]:
        return [c.line() for c in self.checks]

    def __str__(self) -> str:
        return "\n".join(self.lines())


def check(inputs: Inputs, snapshot: Snapshot) -> Report:
    """Compare what ClickHouse holds (`snapshot`) with what the broker acknowledged."""
    return Report(
        (
            check_accounts(inputs, snapshot),
            check_revisions(snapshot),
            check_copies(snapshot),
            check_notifications(snapshot),
            check_dead_letters(inputs, snapshot),
            check_purged(inputs, snapshot),
        )
    )


def check_accounts(inputs: Inputs, snapshot: Snapshot) -> Check:
    """Each run's current account equals replay's final account for the run's events."""
    finals = {
        run: final
        for run, final in replay_expectation(inputs.events).finals.items()
        if run not in inputs.purged
    }
    stored = {run: revs for run, revs in snapshot.accounts.items() if run not in inputs.purged}
    lost = sorted(set(finals) - set(stored))
    extra = sorted(set(stored) - set(finals))
    different = []
    for run in sorted(set(finals) & set(stored)):
        revisions = stored[run]
        current = orjson.loads(revisions[max(revisions)][1])
        if content(current) != finals[run]:
            different.append(run)
    return Check(
        "accounts",
        len(finals),
        "runs' current accounts equal replay's final accounts",
        tuple(lost),
        tuple(extra),
        tuple(different),
    )


def check_revisions(snapshot: Snapshot) -> Check:
    """Revisions 1..n per run, no gap, each superseding the one before."""
    different = []
    for run, revisions in sorted(snapshot.accounts.items()):
        numbers = sorted(revisions)
        chain = all(revisions[n][0] == (n - 1 if n > 1 else None) for n in numbers)
        if numbers != list(range(1, len(numbers) + 1)) or not chain:
            different.append(f"{run}:{numbers}")
    total = sum(len(r) for r in snapshot.accounts.values())
    return Check(
        "revisions",
        len(snapshot.accounts),
        f"runs ({total} revisions) numbered 1..n without a gap",
        different=tuple(different),
    )


def check_copies(snapshot: Snapshot) -> Check:
    """count() without FINAL equals count() with FINAL, per table."""
    extra = [
        f"{table}:{row_id}" for table, ids in sorted(snapshot.repeated.items()) for row_id in ids
    ]
    # A table whose counts differ must have a repeated row id; say so if it has none.
    different = [
        f"{table}({physical} rows, {final} with FINAL)"
        for table, (physical, final) in sorted(snapshot.counts.items())
        if physical != final and not snapshot.repeated.get(table)
    ]
    rows = sum(final for _, final in snapshot.counts.values())
    return Check(
        "physical copies",
        rows,
        f"rows in {len(snapshot.counts)} tables, each stored once (count = count FINAL)",
        extra=tuple(extra),
        different=tuple(different),
    )


def expected_notifications(
    revisions: Mapping[int, tuple[int | None, str]],
) -> dict[int, tuple[str, int | None, str, str | None]]:
    """The notifications a run's stored revision sequence calls for, by revision."""
    bodies = {n: orjson.loads(account) for n, (_, account) in revisions.items()}
    wanted: dict[int, tuple[str, int | None, str, str | None]] = {}
    for n in sorted(bodies):
        body = bodies[n]
        if n == 1:
            wanted[n] = ("account.final", None, body["status"], None)
        elif n - 1 in bodies and _notifiable(bodies[n - 1], body):
            previous = bodies[n - 1]["status"]
            wanted[n] = ("account.superseded", n - 1, body["status"], previous)
    return wanted


def check_notifications(snapshot: Snapshot) -> Check:
    """One notification per supersession the reducer's rule calls for, and no other."""
    lost, extra, different = [], [], []
    wanted = {run: expected_notifications(revs) for run, revs in snapshot.accounts.items()}
    for run, notices in sorted(wanted.items()):
        for n, notice in sorted(notices.items()):
            got = snapshot.notifications.get((run, n))
            if got is None:
                lost.append(f"{run}:{n}")
            elif got != notice:
                different.append(f"{run}:{n}")
    for run, n in sorted(snapshot.notifications):
        if n not in wanted.get(run, {}):
            extra.append(f"{run}:{n}")
    expected = sum(len(notices) for notices in wanted.values())
    return Check(
        "notifications",
        expected,
        "notifications, one per first revision and per notifiable supersession",
        tuple(lost),
        tuple(extra),
        tuple(different),
    )


def check_dead_letters(inputs: Inputs, snapshot: Snapshot) -> Check:
    """Exactly one dead letter, stored once, per poison record; none other for the runs."""
    by_origin: dict[Position, list[DeadLetterRow]] = {}
    for row in snapshot.dead_letters:
        if row.origin is not None:
            by_origin.setdefault(row.origin, []).append(row)
    lost, extra = [], []
    for origin in sorted(inputs.poison):
        rows = by_origin.get(origin, [])
        if not rows:
            lost.append(_position(origin))
        copies = sum(r.copies for r in rows)
        if copies > 1:
            extra += [f"{_position(origin)}#{i}" for i in range(2, copies + 1)]
    for row in snapshot.dead_letters:
        ours = row.run_id is not None and row.run_id.startswith(inputs.prefix)
        if ours and (row.origin is None or row.origin not in inputs.poison):
            extra.append(row.row_id)
    return Check(
        "dead letters",
        len(inputs.poison),
        "poison records with exactly one dead letter",
        tuple(lost),
        tuple(extra),
    )


def _position(origin: Position) -> str:
    topic, partition, offset = origin
    return f"{topic}:{partition}:{offset}"


def check_purged(inputs: Inputs, snapshot: Snapshot) -> Check:
    """No table holds a row of a purged run (and every purge asked for is logged)."""
    extra = [
        f"{table}:{run}" for table, runs in sorted(snapshot.purged_rows.items()) for run in runs
    ]
    lost = sorted(inputs.purged - snapshot.purged)
    return Check(
        "purged runs",
        len(snapshot.purged),
        "purged runs without a row in any table",
        lost=tuple(f"purge_log:{run}" for run in lost),
        extra=tuple(extra),
    )


def positions(records: Iterable[tuple[str, int, int]]) -> frozenset[Position]:
    """Acknowledged positions as the checker keys them."""
    return frozenset((t, int(p), int(o)) for t, p, o in records)
