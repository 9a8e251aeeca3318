"""The analysts' example queries on the old layout (one table per row type, migration 10)
and the new one (record tables with views of the old names, migration 13), same rows.

Folds a generated workload until it has made `--revisions` account revisions, writes its
outputs through `ClickHouseWriter` into one database (the new layout), copies every old
table's rows, as its view shows them, into a second database made by migrations 1-10
(the old layout), merges both (`OPTIMIZE … FINAL`, as a settled database is), then runs
every block of docs/analyst-queries.md against each, alternating, as `outcomes query`
runs them (`final = 1`). Prints the median and min wall time per query and layout, and
the load average; asserts only that both layouts give the same answers.

    .venv/bin/python -m outcomes.bench.bench_analyst [--revisions 100000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import tempfile
import time
from pathlib import Path

from outcomes.devtools.workload import generate_runs
from outcomes.reducers.engine import Engine
from outcomes.reducers.records import OutputRecord
from outcomes.reducers.validate import parse_event
from outcomes.sinks import clickhouse, schema
from outcomes.sinks.writer import ClickHouseWriter

QUERIES_DOC = Path(__file__).resolve().parent.parent / "docs" / "analyst-queries.md"
_BLOCK = re.compile(r"```sql\n(-- name: (\w+)\n.*?)```", re.S)


def analyst_queries(path: Path = QUERIES_DOC) -> dict[str, str]:
    """name -> SQL of every block of docs/analyst-queries.md."""
    return {name: sql for sql, name in _BLOCK.findall(path.read_text())}


def workload(revisions: int) -> tuple[list[OutputRecord], int]:
    """Outputs of generated runs folded until they hold `revisions` account revisions."""
    engine = Engine()
    out: list[OutputRecord] = []
    made = 0
    seed = 0
    while made < revisions:
        for run in generate_runs(2_000, seed=seed, padding=1, prefix=f"a{seed}"):
            for event in run:
                for record in engine.apply(parse_event(event)):
                    out.append(record)
                    made += record.kind == "account_revision"
        seed += 1
    return out, made


def old_layout(conn: clickhouse.Connection, version: int = 10) -> None:
    """Make `conn`'s database what migrations 1..`version` made (the old tables)."""
    conn.command(f"CREATE DATABASE IF NOT EXISTS `{conn.database}`")
    conn.command(schema._migrations_table(conn.database))
    for migration in schema.MIGRATIONS:
        if migration.version > version or migration.server_only:
            continue
        for stmt in migration.statements(conn.database):
            conn.command(stmt)
        if migration.then is not None:
            migration.then(conn)


def timed(conn: clickhouse.Connection, sql: str) -> tuple[float, list[tuple[object, ...]]]:
    start = time.perf_counter()
    result = conn.client.query(sql, settings={"final": 1, "readonly": 1})
    return time.perf_counter() - start, [tuple(r) for r in result.result_rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--revisions", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(f"load average at start {os.getloadavg()}")
    records, revisions = workload(args.revisions)
    print(f"{len(records):,} output records, {revisions:,} account revisions")
    with tempfile.TemporaryDirectory(prefix="bench-analyst-") as tmp:
        base = f"chdb://{tmp}/chdb"
        new_dsn, old_dsn = f"{base}?database=new_layout", f"{base}?database=old_layout"
        start = time.perf_counter()
        ClickHouseWriter(new_dsn).write(records)
        print(f"written (new layout) in {time.perf_counter() - start:.1f} s")
        new = clickhouse.connect(new_dsn)
        old = clickhouse.connect(old_dsn)
        old_layout(old)
        for table in schema.LEGACY_TABLES:
            old.command(
                f"INSERT INTO {old.table(table.name)} SELECT * FROM {new.table(table.name)}"
            )
        for conn, tables in ((new, schema.DATA_TABLES), (old, schema.LEGACY_TABLES)):
            for table in tables:
                conn.command(f"OPTIMIZE TABLE {conn.table(table.name)} FINAL")
        layouts = {"old": old_dsn, "new": new_dsn}
        sessions = {}
        for name, dsn in layouts.items():
            private = clickhouse.open_private(dsn)
            private.use_database()
            sessions[name] = private
        queries = analyst_queries()
        print(f"{'query':<30} {'old ms (min)':>16} {'new ms (min)':>16} {'new/old':>8}  rows")
        ratios = []
        for name, sql in queries.items():
            times: dict[str, list[float]] = {"old": [], "new": []}
            answers: dict[str, list[tuple[object, ...]]] = {}
            timed(sessions["old"], sql), timed(sessions["new"], sql)  # warm caches once
            for _ in range(args.repeat):
                for layout in ("old", "new"):
                    seconds, rows = timed(sessions[layout], sql)
                    times[layout].append(seconds)
                    answers[layout] = rows
            assert answers["old"] == answers["new"], f"{name}: the layouts disagree"
            med = {k: statistics.median(v) * 1000 for k, v in times.items()}
            low = {k: min(v) * 1000 for k, v in times.items()}
            ratios.append(med["new"] / med["old"])
            print(
                f"{name:<30} {med['old']:>8.1f} ({low['old']:>5.1f}) {med['new']:>8.1f} "
                f"({low['new']:>5.1f}) {med['new'] / med['old']:>8.2f}  {len(answers['new'])}"
            )
        print(f"geometric mean new/old: {statistics.geometric_mean(ratios):.2f}")
        for private in sessions.values():
            clickhouse.close(private)
        clickhouse.close_all()
    print(f"load average at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
