"""Rows per second into chDB for account revisions, for several batch sizes.

Prints figures, asserts nothing. Each run writes into its own database on one
temporary chDB path (one engine per process). Measured through the real write path:
ClickHouseWriter.write_rows, i.e. the purge check, the read-back of stored row ids and
the insert with its deduplication token. Side by side, at the same batch sizes: the
plain insert alone (no read-back, no token), so the ratio is what exactly-once costs.
Then the whole record path (rows_for for every table an account feeds) and a replay
of it. The batch size is chosen by median, not best run: the host is shared, and the
1-minute load average is printed with every line. Rows per CPU-second (this process,
all threads) are less sensitive to other processes on the host than rows per second.

    .venv/bin/python -m outcomes.bench.bench_clickhouse [--rows 60000] [--json-kb 3] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from outcomes.devtools import samples
from outcomes.reducers.records import OutputRecord
from outcomes.sinks import clickhouse, schema
from outcomes.sinks.rows import Row, rows_for
from outcomes.sinks.writer import ClickHouseWriter

BATCH_SIZES = (1_000, 5_000, 10_000, 20_000, 50_000)


def make_accounts(count: int, json_kb: float) -> list[OutputRecord]:
    """Account revisions of realistic size: ~json_kb KiB of canonical JSON each."""
    padding = max(0, int((json_kb * 1024 - 1500) / 150))
    records = []
    for i in range(count):
        preds = [
            samples.predicate("check:unit", "satisfied", "passing", f"e{i}-1"),
            samples.predicate("deliverable:src/app.py", "satisfied", "modified", f"e{i}-2"),
            samples.predicate("workspace.sealed", "satisfied", "sealed", f"e{i}-3"),
        ]
        effects = [samples.effect("upload", "upload", "completed", f"r{i}")]
        records.append(
            samples.account(
                f"bench-{i:07d}",
                1 + i % 3,
                status="complete",
                minute=i % 60,
                predicates=preds,
                effects=effects,
                padding=padding,
            )
        )
    return records


def bench(dsn_base: str, rows: list[Row], batch: int, attempt: int) -> tuple[float, float]:
    """(rows per second, rows per CPU-second) through the exactly-once path."""
    writer = ClickHouseWriter(f"{dsn_base}?database=bench_{batch}_{attempt}")
    start, cpu = time.perf_counter(), time.process_time()
    for i in range(0, len(rows), batch):
        writer.write_rows({"account_revision_rows": rows[i : i + batch]})
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    stored = writer.conn.rows(f"SELECT count() FROM {writer.conn.table('account_revisions')}")[0][0]
    assert stored == len(rows), "every row must land once"  # sanity, not a benchmark assertion
    drop(writer.conn)
    return len(rows) / elapsed, len(rows) / cpu


def bench_plain(dsn_base: str, rows: list[Row], batch: int, attempt: int) -> tuple[float, float]:
    """The same for the plain insert alone: no purge check, no read-back, no token."""
    conn = ClickHouseWriter(f"{dsn_base}?database=plain_{batch}_{attempt}").conn
    table = schema.ACCOUNT_REVISION_ROWS
    cols, types = table.column_names, table.column_types
    start, cpu = time.perf_counter(), time.process_time()
    for i in range(0, len(rows), batch):
        conn.insert(table.name, rows[i : i + batch], cols, column_types=types)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    drop(conn)
    return len(rows) / elapsed, len(rows) / cpu


def drop(conn: clickhouse.Connection) -> None:
    """Drop a measured database, so its background merges do not slow the next run."""
    conn.command(f"DROP DATABASE `{conn.database}` SYNC")


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=60_000)
    parser.add_argument("--json-kb", type=float, default=3.0)
    parser.add_argument("--repeat", type=int, default=5, help="runs per batch size and path")
    args = parser.parse_args()

    records = make_accounts(args.rows, args.json_kb)
    t0 = time.perf_counter()
    all_rows = [rows_for(r) for r in records]
    map_rate = len(records) / (time.perf_counter() - t0)
    account_rows = [row for rs in all_rows for t, row in rs if t == "account_revision_rows"]
    size = statistics.mean(len(row[-1]) for row in account_rows[:1000])
    print(f"{len(account_rows):,} account revisions, mean account JSON {size / 1024:.1f} KiB")
    print(f"record -> rows mapping: {map_rate:,.0f} records/s (all tables)")
    print(f"host: {os.cpu_count()} CPUs, {load()}; {args.repeat} runs per figure")

    with tempfile.TemporaryDirectory(prefix="bench-chdb-") as tmp:
        base = f"chdb://{Path(tmp) / 'chdb'}"
        bench(base, account_rows[:5000], 5000, 99)  # warm the engine up
        print(
            f"{'batch':>7} | {'exactly-once rows/s: min':>24} {'median':>8} {'max':>8} | "
            f"{'insert only: median':>19} | {'ratio':>5} | per CPU-second: exactly-once, insert"
        )
        medians: dict[int, float] = {}
        for batch in BATCH_SIZES:
            full: list[tuple[float, float]] = []
            plain: list[tuple[float, float]] = []
            for n in range(args.repeat):  # interleaved, so load changes hit both alike
                full.append(bench(base, account_rows, batch, n))
                plain.append(bench_plain(base, account_rows, batch, n))
            walls = [wall for wall, _ in full]
            medians[batch] = statistics.median(walls)
            plain_median = statistics.median(wall for wall, _ in plain)
            cpu_full = statistics.median(cpu for _, cpu in full)
            cpu_plain = statistics.median(cpu for _, cpu in plain)
            print(
                f"{batch:>7,} | {min(walls):>24,.0f} {medians[batch]:>8,.0f} {max(walls):>8,.0f} | "
                f"{plain_median:>19,.0f} | {medians[batch] / plain_median:>5.0%} | "
                f"{cpu_full:>8,.0f} {cpu_plain:>8,.0f}   ({load()})"
            )
        best = max(medians, key=lambda b: medians[b])
        print(
            f"best batch size by median: {best:,} ({medians[best]:,.0f} account rows/s; "
            f"target >= 50,000) ({load()})"
        )

        writer = ClickHouseWriter(f"{base}?database=bench_records")
        start = time.perf_counter()
        report = writer.write(records)
        elapsed = time.perf_counter() - start
        print(
            f"full record path (rows_for + all tables, batch_rows={writer.batch_rows:,}): "
            f"{len(records) / elapsed:,.0f} records/s, {report.rows_inserted / elapsed:,.0f} rows/s"
            f" ({load()})"
        )
        again = time.perf_counter()
        writer.write(records)
        print(
            f"replay of the same records (all dropped by read-back): "
            f"{len(records) / (time.perf_counter() - again):,.0f} records/s ({load()})"
        )
        clickhouse.close_all()


if __name__ == "__main__":
    main()
