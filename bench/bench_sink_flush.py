"""The sink's CPU per flush, in one process, on both of its paths to ClickHouse, and the
pure fold's CPU on the same events for the ratio.

The outputs of a generated workload, as the worker publishes them: the Avro value and
the headers (common/output_headers.py). Flushes of `--flush` records go, alternately
first and second, through

- decoded: `Codec.decode` of each value, `rows_for` (sinks/rows.py), then
  `ClickHouseWriter.write_rows(rows)` (an older worker's records, or `--tree`'s);
- headers: reading each record's headers into an `Encoded` (what the sink buffers),
  then `ClickHouseWriter.write_rows({}, encoded)`: the read-back and one
  `INSERT … SELECT` per table over the records' JSON (sinks/json_insert.py);

each into a database of its own in one chDB directory. Prints CPU (this process, all
threads: chDB's work included) per flush and per event of the workload for each stage,
the pure fold's CPU per event (validating and folding the same events, `Engine.apply`),
each path's ratio to it, and the worker's cost of making the headers; asserts nothing.

`--tree DIR` imports the project from an older checkout (before the `outcomes.` import
name, e.g. `git archive 4d916a7 | tar -x -C DIR`) for the decoded path, and skips the
headers path, which that tree does not have.

    .venv/bin/python -m outcomes.bench.bench_sink_flush [--runs 2000] [--flush 1000] [--tree DIR]
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import tempfile
import time
from collections.abc import Callable
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
    headers_mod = None if args.tree else importlib.import_module("outcomes.common.output_headers")
    print(f"tree {args.tree or 'this checkout'}; load average {os.getloadavg()}")
    engine = engine_mod.Engine()
    codec = codec_mod.Codec()
    raw_events = [
        event
        for run in workload.generate_runs(args.runs, seed=11, padding=2, prefix="flush")
        for event in run
    ]
    events = len(raw_events)
    t0 = time.process_time()
    outputs = [
        record for event in raw_events for record in engine.apply(validate.parse_event(event))
    ]
    fold = time.process_time() - t0
    framed = [codec.encode_output(record) for record in outputs]
    published: list[list[tuple[str, bytes]]] = []
    making = 0.0
    if headers_mod is not None:
        t0 = time.process_time()
        published = [headers_mod.output_headers(record) for record in outputs]
        making = time.process_time() - t0

    # The workload's objects stay for the whole run: out of the collector's way, so its
    # passes over them do not land in whichever stage happens to trigger them.
    gc.collect()
    gc.freeze()

    def decoded_path(chunk: range, writer: Any) -> tuple[float, float, float]:
        t0 = time.process_time()
        decoded = []
        for i in chunk:
            value = codec.decode(framed[i])
            decoded.append(records_mod.OutputRecord(value.kind, "", "", value.value))
        t1 = time.process_time()
        pending: dict[str, list[Any]] = {}
        for record in decoded:
            for table, row in rows_mod.rows_for(record):
                pending.setdefault(table, []).append(row)
        t2 = time.process_time()
        writer.write_rows(pending)
        return t1 - t0, t2 - t1, time.process_time() - t2

    def headers_path(chunk: range, writer: Any) -> tuple[float, float, float]:
        assert headers_mod is not None
        read, encoded_cls = headers_mod.read_output_headers, writer_mod.Encoded
        t0 = time.process_time()
        encoded: dict[str, list[Any]] = {}
        for i in chunk:
            found = read(published[i])
            assert found is not None
            kind, record_id, body = found
            encoded.setdefault(kind, []).append(encoded_cls(outputs[i].key, record_id, body))
        t1 = time.process_time()
        writer.write_rows({}, encoded)
        return t1 - t0, 0.0, time.process_time() - t1

    with tempfile.TemporaryDirectory(prefix="bench-flush-") as tmp:
        paths: dict[str, tuple[Callable[[range, Any], tuple[float, float, float]], Any]] = {
            "decoded": (decoded_path, writer_mod.ClickHouseWriter(f"chdb://{tmp}/chdb")),
        }
        if headers_mod is not None:
            # A second database of the same engine (chDB: one engine per process).
            headed = writer_mod.ClickHouseWriter(f"chdb://{tmp}/chdb?database=headers")
            paths["headers"] = (headers_path, headed)
        totals = {name: [0.0, 0.0, 0.0] for name in paths}
        flushes = 0
        for start in range(0, len(framed), args.flush):
            chunk = range(start, min(start + args.flush, len(framed)))
            order = list(paths) if flushes % 2 == 0 else list(reversed(paths))
            for name in order:
                run, writer = paths[name]
                for slot, seconds in enumerate(run(chunk, writer)):
                    totals[name][slot] += seconds
            flushes += 1
        ch.close_all()
    print(
        f"{events:,} events, {len(framed):,} output records, {flushes} flushes of "
        f"{args.flush} records per path (alternated)"
    )
    print(f"  pure fold (validate + Engine.apply) {fold / events * 1e6:7.2f} us/event")
    if headers_mod is not None:
        print(f"  worker: making the headers          {making / events * 1e6:7.2f} us/event")
    stages = {"decoded": ("decode", "rows", "write"), "headers": ("buffer", "", "write")}
    for name, spent in totals.items():
        print(f"path {name}:")
        for stage, seconds in zip(stages[name], spent, strict=True):
            if stage:
                print(
                    f"  {stage:<7} {seconds / flushes * 1000:7.1f} ms/flush  "
                    f"{seconds / events * 1e6:6.2f} us/event"
                )
        total = sum(spent)
        print(
            f"  total   {total / flushes * 1000:7.1f} ms/flush  {total / events * 1e6:6.2f} "
            f"us/event = {total / fold:.2f} x the pure fold"
        )


if __name__ == "__main__":
    main()
