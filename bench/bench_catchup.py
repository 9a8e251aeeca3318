"""Catch-up alone: a new worker group folding the input topics' recent history.

`outcomes bench` ends with this phase over the history it produced itself
(`outcomes.devtools.bench.catch_up`); this script runs it alone over what the dev broker
holds: the input records of the last `--minutes` (all of them with `--minutes 0`), from
each partition's first record at or after that time to its current end. Prints events/s
(worker start-up included) and the worker's peak RSS; asserts nothing.

    .venv/bin/python -m outcomes.bench.bench_catchup [--minutes 30] [--timeout 900]
        [--worker-arg=--cache-runs=2000 ...]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from outcomes.common.settings import Settings
from outcomes.devtools.bench import catch_up
from outcomes.devtools.demo import end_offsets
from outcomes.reducers.catalog import INPUT_TOPICS


def offsets_since(settings: Settings, since_ms: int) -> dict[tuple[str, int], int]:
    """Each input partition's first offset at or after `since_ms` (its end when none;
    its first record when `since_ms` is 0)."""
    ends = end_offsets(settings, list(INPUT_TOPICS))
    probe = Consumer({**settings.kafka_config(), "group.id": "bench-catchup-probe"})
    try:
        if since_ms <= 0:  # each partition's first record still held
            return {
                tp: probe.get_watermark_offsets(TopicPartition(*tp), timeout=30, cached=False)[0]
                for tp in ends
            }
        found = probe.offsets_for_times(
            [TopicPartition(t, p, since_ms) for t, p in ends], timeout=30
        )
    finally:
        probe.close()
    return {
        (tp.topic, tp.partition): tp.offset if tp.offset >= 0 else ends[(tp.topic, tp.partition)]
        for tp in found
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="history to fold (0: all)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds before giving up")
    parser.add_argument(
        "--worker-arg", action="append", default=[], help="extra `outcomes worker` argument"
    )
    args = parser.parse_args(argv)
    settings = Settings.load()
    since = int((time.time() - args.minutes * 60) * 1000) if args.minutes else 0
    start = offsets_since(settings, since)
    end = end_offsets(settings, list(INPUT_TOPICS))
    with tempfile.TemporaryDirectory(prefix="bench-catchup-") as tmp:
        result = catch_up(
            settings, start, end, Path(tmp), timeout=args.timeout, worker_args=args.worker_arg
        )
        log = (Path(tmp) / "catch-up.log").read_text(errors="replace").splitlines()
    print(f"RSS every ~5 s (MiB): {result.rss_samples_mib}")
    print("worker log, last lines:", *log[-6:], sep="\n  ")


if __name__ == "__main__":
    main()
