"""Process-level tuning shared by the long-running commands."""

from __future__ import annotations

import gc
from typing import Any


def tune_gc() -> None:
    """Collect young objects less often.

    The pipeline allocates many short-lived dicts per event while holding large, stable
    run state; with CPython's default threshold (700) the cyclic collector spends a
    large share of the time re-scanning that state. A higher first threshold keeps the
    collector on, with far fewer passes (measured in bench/bench_replay.py).
    """
    gc.set_threshold(50_000, 20, 20)


def freeze_survivors() -> None:
    """For a long-running process: `tune_gc`, and whatever survives a young collection is
    moved out of the collector's view (`gc.freeze`).

    Run state is long-lived and, while it grows, generation-1 collections scanned all of
    it that had piled up since the last one. Measured in the worker at 4,500 events/s
    (gc callbacks timing each collection): pauses of up to 348 ms, one every ~20 s while
    its cache filled, in the latency of every event held up meanwhile. Survivors of a
    young collection are nearly all run state, freed by reference counting when evicted,
    frozen or not; frozen, they are never scanned again. With this the worker made no
    generation-1 collection after start-up, and its young ones took 15 ms on average.

    What this gives up: a reference cycle that becomes garbage only after surviving a
    young collection is never collected. The worker made none in its steady state (the
    callbacks counted no cyclic garbage in older generations after start-up); the fold
    makes no cycles.
    """
    tune_gc()

    def freeze(phase: str, info: dict[str, Any]) -> None:
        if phase == "stop":
            gc.freeze()

    gc.callbacks.append(freeze)


def consume_ready(consumer: Any, max_messages: int, timeout: float) -> list[Any]:
    """Up to `max_messages` records: waits at most `timeout` for the first one, then takes
    only what is already fetched.

    `Consumer.consume(n, timeout)` returns when it has n records or when the timeout
    expires, so under a light load every call waited out its whole timeout: measured on
    the dev broker, `consume(1000, timeout=0.5)` with a record every 50 ms returned ten
    records every 500 ms (p50 latency 298 ms); this pattern, 2 ms.
    """
    messages: list[Any] = consumer.consume(1, timeout=timeout)
    if messages and max_messages > 1:
        messages += consumer.consume(max_messages - 1, timeout=0)
    return messages
