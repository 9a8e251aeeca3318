"""Rows per second into chDB for account revisions, for several batch sizes.

Prints figures, asserts nothing. Each batch size writes into its own database on one
temporary chDB path (one engine per process). Measured through the real write path:
ClickHouseWriter.write_rows, i.e. the read-back of stored row ids plus the insert with
its deduplication token. A second figure covers the whole record path (rows_for for
every table an account feeds: predicates, effects, contradictions).

    .venv/bin/python bench/bench_clickhouse.py [--rows 60000] [--json-kb 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from reducers.records import OutputRecord
from sinks import clickhouse, samples, schema
from sinks.rows import Row, rows_for
from sinks.writer import ClickHouseWriter

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


def bench(dsn_base: str, rows: list[Row], batch: int, attempt: int) -> float:
    """rows/s for inserting `rows` into account_revisions in batches of `batch`."""
    writer = ClickHouseWriter(f"{dsn_base}?database=bench_{batch}_{attempt}")
    start = time.perf_counter()
    for i in range(0, len(rows), batch):
        writer.write_rows({"account_revisions": rows[i : i + batch]})
    elapsed = time.perf_counter() - start
    stored = writer.conn.rows(f"SELECT count() FROM {writer.conn.table('account_revisions')}")[0][0]
    assert stored == len(rows), "every row must land once"  # sanity, not a benchmark assertion
    return len(rows) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=60_000)
    parser.add_argument("--json-kb", type=float, default=3.0)
    parser.add_argument("--repeat", type=int, default=3, help="runs per batch size")
    args = parser.parse_args()

    records = make_accounts(args.rows, args.json_kb)
    t0 = time.perf_counter()
    all_rows = [rows_for(r) for r in records]
    map_rate = len(records) / (time.perf_counter() - t0)
    account_rows = [row for rs in all_rows for t, row in rs if t == "account_revisions"]
    size = statistics.mean(len(row[-1]) for row in account_rows[:1000])
    print(f"{len(account_rows):,} account revisions, mean account JSON {size / 1024:.1f} KiB")
    print(f"record -> rows mapping: {map_rate:,.0f} records/s (all tables)")
    print(f"host: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")

    with tempfile.TemporaryDirectory(prefix="bench-chdb-") as tmp:
        base = f"chdb://{Path(tmp) / 'chdb'}"
        bench(base, account_rows[:5000], 5000, 99)  # warm the engine up
        results = {}
        for batch in BATCH_SIZES:
            rates = [bench(base, account_rows, batch, n) for n in range(args.repeat)]
            results[batch] = max(rates)
            print(
                f"batch {batch:>6,}: best {max(rates):>10,.0f}  median "
                f"{statistics.median(rates):>10,.0f} account rows/s"
            )
        best = max(results, key=lambda b: results[b])
        print(f"best batch size: {best:,} ({results[best]:,.0f} rows/s; target >= 50,000)")

        # The same rows and batch size with the plain insert only (no read-back, no
        # token): what the exactly-once read-back costs.
        conn = ClickHouseWriter(f"{base}?database=bench_plain").conn
        cols = schema.ACCOUNT_REVISIONS.column_names
        start = time.perf_counter()
        for i in range(0, len(account_rows), best):
            conn.insert("account_revisions", account_rows[i : i + best], cols)
        plain = len(account_rows) / (time.perf_counter() - start)
        print(
            f"insert only, batch {best:,}: {plain:,.0f} rows/s (read-back share of the cost: "
            f"{max(0.0, 1 - results[best] / plain):.0%})"
        )

        writer = ClickHouseWriter(f"{base}?database=bench_records")
        start = time.perf_counter()
        report = writer.write(records)
        elapsed = time.perf_counter() - start
        print(
            f"full record path (rows_for + all tables, batch_rows={writer.batch_rows:,}): "
            f"{len(records) / elapsed:,.0f} records/s, {report.rows_inserted / elapsed:,.0f} rows/s"
        )
        again = time.perf_counter()
        writer.write(records)
        print(
            f"replay of the same records (all dropped by read-back): "
            f"{len(records) / (time.perf_counter() - again):,.0f} records/s"
        )
        clickhouse.close_all()


if __name__ == "__main__":
    main()
