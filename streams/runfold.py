"""The fold stage: run-log records in, output records out, with state behind a small store.

The run log (`outcomes.run-log.v1`, keyed by `run_id`) is the durable, totally ordered
record of each run: the worker folds it in partition order, so a run's revisions are a
deterministic function of it. State per run is the ordered list of the events that were
applied (redeliveries are not stored), kept in an `EventStore` (streams/store.py): in
memory for tests, changelog-backed rocksdict stores or faust tables in the worker. A
bounded cache holds recently used runs; a run that is not cached is rebuilt by folding
its stored events again (outputs discarded), which reproduces the same revision counter
and last account exactly.

At-least-once delivery means a run-log record can be processed twice: after a crash the
store may already hold an event whose outputs never reached Kafka. So a redelivered
event does not emit nothing: it re-emits exactly the outputs its first application
produced (recomputed from the stored prefix before it). Those are byte-identical to the
first ones, which the sinks drop by id. Nothing is lost, and a revision number never
names two different contents.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from outcomes.reducers.engine import fold
from outcomes.reducers.errors import InvalidEvent
from outcomes.reducers.events import Event
from outcomes.reducers.limits import Limits
from outcomes.reducers.records import OutputRecord, dead_letter
from outcomes.reducers.state import RunState
from outcomes.reducers.timefmt import format_rfc3339
from outcomes.reducers.validate import parse_event
from outcomes.streams.store import EventStore

Decoder = Callable[[bytes], Any]


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a run-log record was read (for dead letters)."""

    topic: str
    partition: int
    offset: int


@dataclass
class FoldStats:
    """Counters for logs and metrics."""

    applied: int = 0
    redelivered: int = 0
    rejected: int = 0
    rebuilt_runs: int = 0
    rebuilt_events: int = 0
    evicted_runs: int = 0  # dropped from the cache to make room


class RunFolder:
    """Folds run-log records into outputs, one run's state at a time."""

    def __init__(
        self,
        store: EventStore,
        decode: Decoder,
        limits: Limits | None = None,
        cache_runs: int = 10_000,
        stats: FoldStats | None = None,
    ) -> None:
        self.store = store
        self.decode = decode
        self.limits = limits or Limits()
        self.cache_runs = cache_runs
        self.cache: OrderedDict[str, RunState] = OrderedDict()
        # Shared by a worker's folders, so that its counts outlive a revoked partition.
        self.stats = stats if stats is not None else FoldStats()

    def clear_cache(self) -> None:
        """Forget cached runs (their stores may change hands, e.g. on a rebalance)."""
        self.cache.clear()

    def process(
        self, run_id: str, raw: bytes, origin: Origin, parsed: Event | None = None
    ) -> list[OutputRecord]:
        """Fold one run-log record; return the outputs to publish (possibly none).

        `parsed` is the event `raw` decodes to, when the caller already has it (the
        worker's ingest stage validated these very bytes); otherwise `raw` is decoded.
        Invalid records become dead letters naming the run-log position. An unexpected
        error leaves the cache without this run, so it is rebuilt from the store.
        """
        try:
            event = self._parse(run_id, raw) if parsed is None else self._check(run_id, parsed)
        except InvalidEvent as exc:
            self.stats.rejected += 1
            return [self._dead_letter(exc, raw, origin, run_id, None)]
        state = self._state(run_id)
        try:
            known = state.events.get(event.event_id)
            if known is not None:
                if known != event:
                    raise InvalidEvent(
                        "event_id_conflict",
                        f"event_id {event.event_id} was applied before with different content "
                        f"(first: {known.TYPE} at {format_rfc3339(known.occurred_at)})",
                    )
                self.stats.redelivered += 1
                return self._outputs_of(run_id, state, event.event_id)
            seq = len(state.events)
            _, outputs = fold(state, event)
            self.store.append(run_id, seq, raw)
        except InvalidEvent as exc:
            self.stats.rejected += 1
            return [self._dead_letter(exc, raw, origin, run_id, event.event_id)]
        except BaseException:
            self.cache.pop(run_id, None)
            raise
        self.stats.applied += 1
        return outputs

    def _parse(self, run_id: str, raw: bytes) -> Event:
        try:
            value = self.decode(raw)
        except InvalidEvent:
            raise
        except Exception as exc:  # the codec's own error type, or a bug: a dead letter
            reason = getattr(exc, "reason", "undecodable")
            raise InvalidEvent(str(reason), f"run-log record undecodable: {exc}") from None
        return self._check(run_id, parse_event(value, self.limits))

    @staticmethod
    def _check(run_id: str, event: Event) -> Event:
        if event.run_id != run_id:
            raise InvalidEvent(
                "schema_violation", f"run-log key {run_id!r} differs from run_id {event.run_id!r}"
            )
        return event

    def _state(self, run_id: str) -> RunState:
        state = self.cache.get(run_id)
        if state is not None:
            self.cache.move_to_end(run_id)
            return state
        state = self._rebuild(run_id, self.store.count(run_id))
        self.cache[run_id] = state
        if len(self.cache) > self.cache_runs:
            self.cache.popitem(last=False)
            self.stats.evicted_runs += 1
        return state

    def _rebuild(self, run_id: str, upto: int) -> RunState:
        """The run's state after its first `upto` stored events."""
        state = RunState(run_id)
        for seq in range(upto):
            fold(state, parse_event(self.decode(self.store.get(run_id, seq)), self.limits))
        if upto:
            self.stats.rebuilt_runs += 1
            self.stats.rebuilt_events += upto
        return state

    def _outputs_of(self, run_id: str, state: RunState, event_id: str) -> list[OutputRecord]:
        """The outputs the stored event's first application produced, recomputed."""
        seq = next(i for i, known in enumerate(state.events) if known == event_id)
        before = self._rebuild(run_id, seq)
        _, outputs = fold(before, state.events[event_id])
        return outputs

    @staticmethod
    def _dead_letter(
        exc: InvalidEvent, raw: bytes, origin: Origin, run_id: str | None, event_id: str | None
    ) -> OutputRecord:
        return dead_letter(
            reason=exc.reason,
            message=exc.message,
            raw=raw,
            origin_topic=origin.topic,
            origin_partition=origin.partition,
            origin_offset=origin.offset,
            run_id=run_id,
            event_id=event_id,
        )
