"""The gate's latency as a caller sees it (`outcomes bench`, issue 35's target).

While the bench's worker folds its half-load phase, `GateProbe` plays an agent runtime
on a thread: it publishes a run's events (the five-file sample, renamed) and waits for
the broker's acknowledgement, then at once asks the gate about an answer with those
events as its position, so each figure includes the read-your-writes wait (ingest, the
run log, the fold) as well as the check itself. Then the next run, until stopped.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import orjson

from outcomes.common.codec import Codec
from outcomes.common.settings import Settings
from outcomes.devtools.harness import produce_acknowledged, producer
from outcomes.reducers.catalog import EVENT_TOPICS
from outcomes.streams.sdk.gate import GateClient, GateRefused, GateUnavailable

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "five_file_run.jsonl"
ANSWER = "All five files changed, tests pass, and the release-notes draft was sent."
PAUSE_SECONDS = 0.1  # between two probes: a runtime's answers are not back to back


def _sample() -> list[dict[str, Any]]:
    events = [orjson.loads(x) for x in SAMPLE.read_bytes().splitlines() if x.strip()]
    last = next(i for i, e in enumerate(events) if e["type"] == "finalize.requested")
    return events[: last + 1]


class GateProbe(threading.Thread):
    """Publish a run, check an answer about it at once; repeat until `stop()`."""

    def __init__(self, settings: Settings, url: str, token: str | None, prefix: str) -> None:
        super().__init__(name="gate-probe", daemon=True)
        self.settings = settings
        self.client = GateClient(url, token=token, budget=5.0)
        self.prefix = prefix
        self.latencies: list[float] = []
        self.decisions: dict[str, int] = {}
        self.failures: list[str] = []
        self._stop_event = threading.Event()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(30)

    def run(self) -> None:
        codec = Codec(self.settings)
        client = producer(self.settings.kafka_config())
        sample = _sample()
        n = 0
        while not self._stop_event.is_set():
            run_id = f"{self.prefix}-{n}"
            events = [
                {**e, "run_id": run_id, "event_id": f"{run_id}-{e['event_id']}"} for e in sample
            ]
            records = [(EVENT_TOPICS[e["type"]], run_id, codec.encode_event(e)) for e in events]
            placed, errors = produce_acknowledged(client, records, flush_timeout=30)
            if errors or any(p is None for p in placed):
                self.failures.append(f"publishing {run_id}: {errors[:1]}")
                continue
            began = time.monotonic()
            try:
                checked = self.client.check_answer(
                    run_id, ANSWER, position=[e["event_id"] for e in events]
                )
            except (GateUnavailable, GateRefused) as exc:
                self.failures.append(f"{run_id}: {exc}")
            else:
                self.decisions[checked.decision] = self.decisions.get(checked.decision, 0) + 1
                if checked.decision != "stale":
                    self.latencies.append(time.monotonic() - began)
            n += 1
            self._stop_event.wait(PAUSE_SECONDS)
