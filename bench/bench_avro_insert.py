"""Decoding where ClickHouse is: what the sink's Python decode costs per output record,
beside ClickHouse parsing the same Avro bytes itself (issue 28, item 2).

The outputs of a generated workload (the bench mix) are encoded as the worker does
(`Codec.encode_output`: single-object encoding, a 10-byte header and the Avro body).
Per record kind, timed in this process (CPU time, best of `--repeat`):

- python: `Codec.decode` + `rows_for` of every record (what the sink does before its
  INSERT, which then serializes the rows in the driver);
- clickhouse: the bodies, headers cut off, concatenated into one Avro object container
  block with the kind's writer schema, then `INSERT INTO <scratch table> SELECT * FROM
  format(Avro, <container>)` in chDB: ClickHouse parses every record into columns of
  the schema's shape (records as Tuples, arrays as Arrays) and writes one part.

Prints µs per record for both and the bytes; asserts nothing.

    .venv/bin/python -m outcomes.bench.bench_avro_insert [--runs 2000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import tempfile
import time
from collections import defaultdict
from typing import Any

import fastavro

from outcomes.common.codec import Codec
from outcomes.devtools.workload import generate_runs
from outcomes.reducers.engine import Engine
from outcomes.reducers.records import OutputRecord
from outcomes.reducers.validate import parse_event
from outcomes.schemas import OUTPUT_SCHEMAS, schema_json
from outcomes.sinks import clickhouse
from outcomes.sinks.rows import rows_for

HEADER = 10  # C3 01 + 8-byte fingerprint


def _long(value: int) -> bytes:
    """An Avro long (zigzag varint)."""
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def container(schema: dict[str, Any], bodies: list[bytes]) -> bytes:
    """An Avro object container of one block holding `bodies` (Avro binary, no framing):
    the header fastavro writes for the schema, then the block by hand, byte for byte."""
    head = io.BytesIO()
    fastavro.writer(head, fastavro.parse_schema(schema), [], sync_marker=b"s" * 16)
    block = b"".join(bodies)
    return head.getvalue() + _long(len(bodies)) + _long(len(block)) + block + b"s" * 16


def workload(runs: int) -> list[OutputRecord]:
    engine = Engine()
    out: list[OutputRecord] = []
    for run in generate_runs(runs, seed=7, padding=1, prefix="avro"):
        for event in run:
            out += engine.apply(parse_event(event))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load average at start {os.getloadavg()}")
    codec = Codec()
    by_kind: dict[str, list[bytes]] = defaultdict(list)
    for record in workload(args.runs):
        by_kind[record.kind].append(codec.encode_output(record))
    with tempfile.TemporaryDirectory(prefix="bench-avro-") as tmp:
        conn = clickhouse.connect(f"chdb://{tmp}/chdb")
        conn.command("CREATE DATABASE IF NOT EXISTS scratch")
        print(f"{'kind':<20} {'records':>8} {'bytes':>7} {'python us':>10} {'clickhouse us':>14}")
        for kind, framed in sorted(by_kind.items()):
            schema = schema_json(OUTPUT_SCHEMAS[kind])
            data = container(schema, [f[HEADER:] for f in framed])
            path = f"{tmp}/{kind}.avro"
            with open(path, "wb") as handle:
                handle.write(data)
            table = f"scratch.`{kind}`"
            conn.command(
                f"CREATE TABLE {table} ENGINE = MergeTree ORDER BY tuple() EMPTY AS "
                f"SELECT * FROM file('{path}', 'Avro')"
            )
            py, ch = [], []
            for _ in range(args.repeat):
                start = time.process_time()
                for raw in framed:
                    decoded = codec.decode(raw)
                    rows_for(OutputRecord(kind, "", "", decoded.value))
                py.append(time.process_time() - start)
                start = time.process_time()
                conn.command(f"INSERT INTO {table} SELECT * FROM file('{path}', 'Avro')")
                ch.append(time.process_time() - start)
            stored = conn.rows(f"SELECT count() FROM {table}")[0][0]
            assert stored == args.repeat * len(framed), (kind, stored)
            n = len(framed)
            print(
                f"{kind:<20} {n:>8,} {len(data) // n:>7} {min(py) / n * 1e6:>10.1f} "
                f"{min(ch) / n * 1e6:>14.1f}"
            )
        columns = conn.rows(
            "SELECT name, type FROM system.columns WHERE database = 'scratch' "
            "AND table = 'account_revision' ORDER BY position LIMIT 8"
        )
        print("account_revision as ClickHouse reads the schema (first columns):")
        print(json.dumps([[str(n), str(t)[:70]] for n, t in columns], indent=1))
        clickhouse.close_all()
    print(f"load average at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
