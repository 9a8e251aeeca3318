"""The run browser's answer times on chDB: the runs table's first page, a few filtered
views, a run's page and the fleet, each a whole HTTP answer of `outcomes ui`'s server
(queries, templates, the door), over a database of `--runs` generated runs (the
workload's scenarios, folded by the reducers, written by the sink's writer, their input
events by the events recorder's store, merged as a settled database is).

Prints p50 and p95 per view and the load average; asserts nothing (the target, 300 ms
at p95 on 100,000 runs, is read from the output, docs/browser.md).

    .venv/bin/python -m outcomes.bench.bench_browser [--runs 100000] [--repeat 40]
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import statistics
import tempfile
import time
from collections.abc import Iterator

from outcomes.browser.app import COOKIE
from outcomes.browser.server import start
from outcomes.devtools.workload import generate_runs
from outcomes.reducers.engine import Engine
from outcomes.reducers.records import OutputRecord
from outcomes.reducers.validate import parse_event
from outcomes.sinks import clickhouse, schema
from outcomes.sinks.events import EventRow, EventStore, row_of
from outcomes.sinks.writer import ClickHouseWriter

BATCH = 2_000


def batches(runs: int) -> Iterator[tuple[list[OutputRecord], list[str], list[EventRow]]]:
    """Outputs of `runs` generated runs, `BATCH` runs at a time, with their run ids and
    their input events' rows (as the run log would have held them: one partition)."""
    seed = 0
    left = runs
    while left > 0:
        engine = Engine()  # a batch's runs are its own: the engine's state stays small
        out: list[OutputRecord] = []
        ids: list[str] = []
        events: list[EventRow] = []
        for run in generate_runs(min(BATCH, left), seed=seed, prefix=f"b{seed}"):
            ids.append(run[0]["run_id"])
            for event in run:
                out.extend(engine.apply(parse_event(event)))
                events.append(row_of(event, 0, len(events)))
        yield out, ids, events
        left -= BATCH
        seed += 1


def load(dsn: str, runs: int) -> None:
    """Write `runs` generated runs' outputs, then merge every table (a settled database)."""
    writer = ClickHouseWriter(dsn)
    store = EventStore(writer.conn)
    start = time.perf_counter()
    written = revisions = 0
    for records, batch_ids, events in batches(runs):
        writer.write(records)
        store.write(events)
        written += len(batch_ids)
        revisions += sum(r.kind == "account_revision" for r in records)
        if written % 10_000 == 0:
            print(f"  {written:,} runs written ({time.perf_counter() - start:.0f} s)", flush=True)
    print(f"{written:,} runs, {revisions:,} revisions in {time.perf_counter() - start:.0f} s")
    conn = clickhouse.connect(dsn)
    for name in [*(t.name for t in schema.DATA_TABLES), schema.EVENTS_TABLE]:
        conn.command(f"OPTIMIZE TABLE {conn.table(name)} FINAL")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=40)
    parser.add_argument(
        "--dir", help="Keep the loaded database here and reuse it on the next run (default: "
        "a temporary directory, loaded each time)."
    )  # fmt: skip
    args = parser.parse_args()
    print(f"load average at start {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="bench-browser-") as tmp:
        dsn = f"chdb://{args.dir or tmp}/chdb"
        conn = clickhouse.connect(dsn)
        if not conn.database_exists():
            load(dsn, args.runs)
        ids = [str(r[0]) for r in conn.rows(
            f"SELECT DISTINCT run_id FROM {conn.table('account_revision_rows')}"
        )]  # fmt: skip
        print(f"{len(ids):,} runs in the database")
        running = start(dsn, token="bench", live=False)
        client = http.client.HTTPConnection(*running.server.address, timeout=60)
        cookie = {"Cookie": f"{COOKIE}=bench"}

        def get(path: str) -> int:
            client.request("GET", path, headers=cookie)
            response = client.getresponse()
            response.read()
            return response.status

        rng = random.Random(7)
        views = {
            "runs, first page": lambda: "/runs",
            "runs, page 20": lambda: "/runs?page=20",
            "runs, contradicted now": lambda: "/runs?contradicted=now",
            "runs, status failed + search": lambda: "/runs?status=failed&q=b1-",
            "runs, agent + model": lambda: "/runs?agent=coder&model=model-b-medium",
            "runs, task search": lambda: "/runs?q=release+notes",
            "a run's page": lambda: f"/runs/{rng.choice(ids)}",
            "fleet (6 charts)": lambda: "/fleet",
        }
        print(f"{'view':<32} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}  n")
        for name, url in views.items():
            get(url())  # warm
            times = []
            for _ in range(args.repeat if "fleet" not in name else max(args.repeat // 4, 3)):
                begin = time.perf_counter()
                status = get(url())
                times.append((time.perf_counter() - begin) * 1000)
                assert status == 200, (name, status)
            print(
                f"{name:<32} {statistics.median(times):>8.1f} {percentile(times, 0.95):>8.1f} "
                f"{max(times):>8.1f}  {len(times)}"
            )
        client.close()
        running.stop()
        clickhouse.close_all()
    print(f"load average at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
