"""Process-level tuning shared by the long-running commands."""

from __future__ import annotations

import gc


def tune_gc() -> None:
    """Collect young objects less often.

    The pipeline allocates many short-lived dicts per event while holding large, stable
    run state; with CPython's default threshold (700) the cyclic collector spends a
    large share of the time re-scanning that state. A higher first threshold keeps the
    collector on, with far fewer passes (measured in bench/bench_replay.py).
    """
    gc.set_threshold(50_000, 20, 20)
