"""Codec throughput on one core: encode and decode records/s for a realistic event mix.

Side by side in one run: fastavro's schemaless writer and reader alone (no framing, no
checks), the codec's generated ones alone (`common/codec/fast.py`, which the codec uses
in fastavro's place), and the codec's paths (`encode_event`, `decode_event_fast`,
canonical `decode`). Schemas are parsed and code generated once, before timing. Prints
figures; asserts nothing.

    .venv/bin/python bench/bench_codec.py [--events 20000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import fastavro

from outcomes.common.codec import Codec, current_schemas
from outcomes.devtools.workload import generate_runs, interleave
from outcomes.reducers.records import OutputRecord
from outcomes.schemas import EVENT_SCHEMAS
from outcomes.streams.runfold import Origin, RunFolder
from outcomes.streams.store import MemoryEventStore

# Share of each event type in a typical run (tool and lifecycle traffic dominates).
MIX: dict[str, int] = {
    "tool.started": 20,
    "tool.finished": 20,
    "inference.started": 10,
    "effect.intent": 4,
    "effect.transition": 6,
    "effect.receipt": 4,
    "verification.receipt": 5,
    "workspace.snapshot": 4,
    "retrieval.evaluated": 4,
    "injection.recorded": 4,
    "goal.revised": 3,
    "run.started": 3,
    "response.disposition": 2,
    "review.recorded": 2,
    "finalize.requested": 3,
    "run.cancelled": 1,
    "run.interrupted": 1,
    "narrative.submitted": 4,
}


def make_event(rng: random.Random, event_type: str, n: int) -> dict[str, Any]:
    """A plausible event of `event_type` (sizes like real agent traffic)."""
    run = f"run-{rng.randrange(10_000):05d}"
    base = {
        "event_id": f"01a2{n:028x}",
        "run_id": run,
        "type": event_type,
        "occurred_at": f"2026-11-30T10:{n // 60 % 60:02d}:{n % 60:02d}.{n % 999_999:06d}Z",
        "source": "agent-worker-7",
    }
    action = f"act-{rng.randrange(100)}"
    payloads: dict[str, dict[str, Any]] = {
        "tool.started": {"action_id": action, "tool": "shell"},
        "tool.finished": {
            "action_id": action,
            "tool": "shell",
            "outcome": rng.choice(["succeeded", "failed"]),
            "error_class": None,
        },
        "inference.started": {"model_call_id": f"call-{n}"},
        "effect.intent": {
            "intent_id": f"int-{n % 50}",
            "effect_class": "write",
            "target": "s3://bucket/reports/report.md",
            "consequential": True,
        },
        "effect.transition": {
            "intent_id": f"int-{n % 50}",
            "state": "active",
            "attempt_id": "att-1",
            "reason": None,
        },
        "effect.receipt": {
            "intent_id": f"int-{n % 50}",
            "receipt_id": f"rcpt-{n}",
            "attempt_id": "att-1",
            "origin": "provider_receipt",
            "observed": "present",
            "authoritative": True,
        },
        "verification.receipt": {
            "check_id": f"chk-{n}",
            "label": "unit",
            "scope": "suite",
            "result": "pass",
            "tests_executed": 412,
            "candidate_snapshot": "snap-3",
            "environment": "py3.11-linux",
            "command": "pytest -q tests/",
            "expected_artifacts": ["src/app.py", "tests/test_app.py"],
        },
        "workspace.snapshot": {
            "snapshot_id": f"snap-{n % 7}",
            "base_revision": "9f3c2e1",
            "sealed": rng.random() < 0.5,
            "artifacts": [
                {
                    "path": f"src/module_{i}.py",
                    "change": "modified",
                    "digest": f"sha256:{i:064x}",
                    "renamed_from": None,
                    "verification_sensitive": i % 2 == 0,
                }
                for i in range(6)
            ],
        },
        "retrieval.evaluated": {
            "retrieval_id": f"ret-{n}",
            "job_id": "job-1",
            "query_hash": "q" * 16,
            "algorithm": "bm25+rerank",
            "config_hash": "c" * 16,
            "candidates": [
                {
                    "candidate_id": f"cand-{i}",
                    "source_type": "memory",
                    "source_event_id": f"ev-{i}",
                    "rank": i,
                    "score": 1.0 / (i + 1),
                    "eligible": True,
                    "decision": "selected" if i < 3 else "withheld",
                    "withhold_reason": None if i < 3 else "budget",
                }
                for i in range(5)
            ],
        },
        "injection.recorded": {
            "injection_id": f"inj-{n}",
            "model_call_id": f"call-{n}",
            "retrieval_id": f"ret-{n}",
            "candidate_ids": ["cand-0", "cand-1", "cand-2"],
            "block_hash": "b" * 16,
            "block_bytes": 2048,
            "location": "system",
            "range_start": 0,
            "range_end": 2048,
            "confirmed": True,
            "removed_before_inference": False,
        },
        "goal.revised": {
            "goal_revision": 1,
            "authored_by": "user",
            "deliverables": ["report.md", "src/app.py"],
            "required_checks": [{"label": "unit", "scope": "suite"}],
            "requested_effects": ["int-1"],
            "requested_actions": [action],
            "target_revision": "9f3c2e1",
        },
        "run.started": {"agent": "coder", "requested_by": "user:ada"},
        "response.disposition": {"completion": "completed"},
        "review.recorded": {"state": "pass"},
        "finalize.requested": {"candidate_snapshot": "snap-3"},
        "run.cancelled": {"reason": None},
        "run.interrupted": {"reason": "worker restarted"},
        "narrative.submitted": {
            "narrative_id": f"nar-{n}",
            "account_revision": None,
            "channel": "chat",
            "text": "Done. All tests pass and the report is saved in report.md. " * 4,
        },
    }
    return {**base, **payloads[event_type]}


def workload(count: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    types = rng.choices(list(MIX), weights=list(MIX.values()), k=count)
    return [make_event(rng, t, n) for n, t in enumerate(types)]


def rate(label: str, items: int, fn: Callable[[], object], rounds: int) -> float:
    """Best of `rounds` timed runs, in items per second."""
    best = float("inf")
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    per_second = items / best
    print(f"  {label:<46} {per_second:>12,.0f} /s   {1e6 / per_second:6.2f} us each")
    return per_second


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    codec = Codec()
    events = workload(args.events)
    schemas = current_schemas()
    records = [schemas[EVENT_SCHEMAS[e["type"]]] for e in events]
    avro_values = [codec.event_from_json(e) for e in events]
    framed = [codec.encode_event(e) for e in events]
    bodies = [f[10:] for f in framed]
    size = sum(map(len, framed)) / len(framed)
    print(f"codec benchmark: {args.events:,} events, {len(MIX)} types, mean {size:.0f} B framed")

    def fastavro_encode() -> None:
        for record, value in zip(records, avro_values, strict=True):
            out = io.BytesIO()
            fastavro.schemaless_writer(out, record.parsed, value)

    def generated_encode() -> None:
        for record, value in zip(records, avro_values, strict=True):
            record.write(value)

    def fastavro_decode() -> None:
        for record, body in zip(records, bodies, strict=True):
            fastavro.schemaless_reader(io.BytesIO(body), record.parsed, None)

    def generated_decode() -> None:
        for record, body in zip(records, bodies, strict=True):
            record.read(body, 0)

    def encode() -> None:
        for event in events:
            codec.encode_event(event)

    def decode_fast() -> None:
        for data in framed:
            codec.decode_event_fast(data)

    def decode_canonical() -> None:
        for data in framed:
            codec.decode(data)

    def decode_or_dead_letter() -> None:
        for data in framed:
            codec.decode_or_dead_letter(data, "outcomes.tool.v1", 0, 0)

    n = len(events)
    print("encode")
    rate("fastavro schemaless_writer alone", n, fastavro_encode, args.rounds)
    rate("generated writer alone", n, generated_encode, args.rounds)
    rate("codec.encode_event (validate + frame)", n, encode, args.rounds)
    print("decode")
    rate("fastavro schemaless_reader alone", n, fastavro_decode, args.rounds)
    rate("generated reader alone", n, generated_decode, args.rounds)
    fast = rate("codec.decode_event_fast (hot path)", n, decode_fast, args.rounds)
    rate("codec.decode_or_dead_letter", n, decode_or_dead_letter, args.rounds)
    rate("codec.decode (canonical JSON)", n, decode_canonical, args.rounds)
    target = 200_000
    verdict = "meets" if fast >= target else "below"
    print(f"hot path {verdict} the {target:,}/s target on one core")
    revisions_section(codec, args.rounds)


def revisions_section(codec: Codec, rounds: int) -> None:
    """The same for account revisions, the worker's largest output records."""
    folder = RunFolder(MemoryEventStore(), codec.decode_event_fast)
    revisions: list[OutputRecord] = []
    for event in interleave(list(generate_runs(2_000, 7, 4, "codec"))):
        raw = codec.encode_event(event)
        for record in folder.process(event["run_id"], raw, Origin("bench", 0, 0)):
            if record.kind == "account_revision":
                revisions.append(record)
    schema = current_schemas()["io.outcomes.v1.AccountRevision"]
    values = [schema.to_avro(r.body) for r in revisions]
    framed = [codec.encode_output(r) for r in revisions]
    size = sum(map(len, framed)) / len(framed)
    print(
        f"account revisions: {len(revisions):,} from 2,000 generated runs, mean {size:.0f} B framed"
    )

    def fastavro_encode() -> None:
        for value in values:
            fastavro.schemaless_writer(io.BytesIO(), schema.parsed, value)

    def generated_encode() -> None:
        for value in values:
            schema.write(value)

    def encode_output() -> None:
        for record in revisions:
            codec.encode_output(record)

    def fastavro_decode() -> None:
        for data in framed:
            fastavro.schemaless_reader(io.BytesIO(data[10:]), schema.parsed, None)

    def generated_decode() -> None:
        for data in framed:
            schema.read(data, 10)

    def decode() -> None:
        for data in framed:
            codec.decode(data)

    n = len(revisions)
    rate("fastavro schemaless_writer alone", n, fastavro_encode, rounds)
    rate("generated writer alone", n, generated_encode, rounds)
    rate("codec.encode_output (convert + write + frame)", n, encode_output, rounds)
    rate("fastavro schemaless_reader alone", n, fastavro_decode, rounds)
    rate("generated reader alone", n, generated_decode, rounds)
    rate("codec.decode (read + canonical JSON)", n, decode, rounds)


if __name__ == "__main__":
    main()
