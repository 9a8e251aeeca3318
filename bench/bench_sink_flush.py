"""The sink's CPU per flush, in one process: decode the output records, make their rows,
write them through `ClickHouseWriter.write_rows` in flushes of `--flush` records.

For comparing two layouts of the tables on the same records, run it once per source
tree: `--tree DIR` imports the project from an older checkout (before the `outcomes.`
import name, e.g. `git archive 4d916a7 | tar -x -C DIR`), which writes the ten tables
of that release; without it, this checkout. Alternate the two, several times: the host
is shared. Prints CPU ms per flush (this process, all threads: chDB's work included),
parts written per flush and µs per event of the workload for each stage; asserts
nothing.

    .venv/bin/python -m outcomes.bench.bench_sink_flush [--runs 2000] [--flush 1000] [--tree DIR]
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--flush", type=int, default=1000, help="records per flush")
    parser.add_argument("--tree", default=None, help="an older checkout to import from")
    args = parser.parse_args()
    prefix = "outcomes."
    if args.tree:
        sys.path.insert(0, args.tree)
        prefix = ""

    def mod(name: str) -> Any:
        return importlib.import_module(prefix + name)

    codec_mod, workload, engine_mod = (
        mod("common.codec"),
        mod("devtools.workload"),
        mod("reducers.engine"),
    )
    validate, records_mod = mod("reducers.validate"), mod("reducers.records")
    rows_mod, writer_mod, ch = mod("sinks.rows"), mod("sinks.writer"), mod("sinks.clickhouse")
    print(f"tree {args.tree or 'this checkout'}; load average {os.getloadavg()}")
    engine = engine_mod.Engine()
    codec = codec_mod.Codec()
    events = 0
    framed: list[bytes] = []
    for run in workload.generate_runs(args.runs, seed=11, padding=2, prefix="flush"):
        for event in run:
            events += 1
            for record in engine.apply(validate.parse_event(event)):
                framed.append(codec.encode_output(record))
    with tempfile.TemporaryDirectory(prefix="bench-flush-") as tmp:
        writer = writer_mod.ClickHouseWriter(f"chdb://{tmp}/chdb")
        decode = rows = write = 0.0
        flushes = parts = 0
        for start in range(0, len(framed), args.flush):
            chunk = framed[start : start + args.flush]
            t0 = time.process_time()
            decoded = []
            for raw in chunk:
                value = codec.decode(raw)
                decoded.append(records_mod.OutputRecord(value.kind, "", "", value.value))
            t1 = time.process_time()
            pending: dict[str, list[Any]] = {}
            for record in decoded:
                for table, row in rows_mod.rows_for(record):
                    pending.setdefault(table, []).append(row)
            t2 = time.process_time()
            writer.write_rows(pending)
            t3 = time.process_time()
            decode, rows, write = decode + t1 - t0, rows + t2 - t1, write + t3 - t2
            flushes += 1
            parts += len(pending)
        ch.close_all()
    print(
        f"{events:,} events, {len(framed):,} output records, {flushes} flushes of "
        f"{args.flush} records, {parts / flushes:.1f} tables (parts) per flush"
    )
    for name, seconds in (("decode", decode), ("rows", rows), ("write", write)):
        print(
            f"  {name:<7} {seconds / flushes * 1000:7.1f} ms/flush  "
            f"{seconds / events * 1e6:6.2f} us/event"
        )
    total = decode + rows + write
    print(f"  total   {total / flushes * 1000:7.1f} ms/flush  {total / events * 1e6:6.2f} us/event")


if __name__ == "__main__":
    main()
