"""The fold stage: run-log records in, output records out, with state behind a small store.

The run log (`outcomes.run-log.v1`, keyed by `run_id`) is the durable, totally ordered
record of each run: the worker folds it in partition order, so a run's revisions are a
deterministic function of it. State per run is the ordered list of the events that were
applied (redeliveries are not stored), kept in an `EventStore` (streams/store.py): in
memory for tests, changelog-backed rocksdict stores or faust tables in the worker. A
bounded cache holds recently used runs; a run that is not cached is rebuilt by folding
its stored events again (outputs discarded), which reproduces the same revision counter
and last account exactly.

An event whose `event_id` the run already applied comes back in two ways, told apart by
the run-log position each stored event was applied at (`store.Applied`):

- the same run-log record, read again after a restart (its partition, at an offset up
  to the one the event was applied at). That is the crash window: the store may hold
  the event while its outputs never reached Kafka, since the engines persist the store
  before they commit offsets. So it re-emits exactly the outputs its first application
  produced (recomputed from the stored prefix before it): byte-identical to the first
  ones, which the sinks drop by id. Nothing is lost.
- a duplicate event: another record, later in the run log (a producer that sent it
  twice, an agent's redelivered receipt). Its first record's outputs were published
  before any commit passed that record, or that record is read again itself; so this
  one emits nothing, and a notification is published once when nothing failed.

A stored event whose position is unknown (stored by a release that did not keep it) is
treated as the first case. Either way a revision number never names two contents.

The run log is the record (docs/stream.md, "Events accepted under older rules"): an
event an older release accepted into it keeps folding after the validation rules grew
stricter. Run-log records and stored events are parsed with `parse_accepted`, the
current rules, or, for an event that breaks only a rule added since (an identifier
holding a control, format or separator character), the rules it was accepted under,
with a warning. A stored event that cannot be read at all makes its run unreadable:
each of its records becomes a `run_unreadable` dead letter with a log line, the stored
events stay as they are, and every other run keeps folding.
"""

from __future__ import annotations

import dataclasses
import logging
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from outcomes.common.text import terminal_safe
from outcomes.reducers.engine import fold
from outcomes.reducers.errors import InvalidEvent
from outcomes.reducers.events import Event
from outcomes.reducers.limits import Limits
from outcomes.reducers.records import OutputRecord, dead_letter
from outcomes.reducers.state import RunState
from outcomes.reducers.timefmt import format_rfc3339
from outcomes.reducers.validate import parse_event
from outcomes.streams.store import Applied, EventStore

Decoder = Callable[[bytes], Any]

log = logging.getLogger("outcomes.worker.fold")

# Characters an identifier may hold since this release and could hold before (Unicode
# Cc, Cf, Zl, Zp), each masked by a printable character of the same UTF-8 width, so a
# masked value has the length and size of the original under every other rule.
_MASK_BY_WIDTH = {1: "_", 2: "\u00e9", 3: "\u20ac", 4: "\U00010000"}
_LATER_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
_WARNED_RUNS = 10_000  # runs remembered as warned about, per folder


class RunUnreadable(InvalidEvent):
    """A stored event of the run cannot be read: the run cannot be rebuilt."""


def _masked(value: Any) -> Any:
    """`value` with every character only a later rule refuses masked (or `value` itself
    when it holds none)."""
    if type(value) is str:
        if value.isprintable():
            return value
        chars = [
            _MASK_BY_WIDTH[len(c.encode("utf-8", "surrogatepass"))]
            if unicodedata.category(c) in _LATER_CATEGORIES
            else c
            for c in value
        ]
        masked = "".join(chars)
        return value if masked == value else masked
    if isinstance(value, Mapping):
        items = {key: _masked(item) for key, item in value.items()}
        same = all(items[key] is item for key, item in value.items())
        return value if same else items
    if type(value) is list or type(value) is tuple:
        masked_items = [_masked(item) for item in value]
        same = all(m is o for m, o in zip(masked_items, value, strict=True))
        return value if same else masked_items
    return value


def _restored(parsed: Any, original: Any) -> Any:
    """The parsed value of the masked event with each masked string put back as the
    original held it (by position: field by field, item by item)."""
    if type(parsed) is str:
        return original if type(original) is str and _masked(original) == parsed else parsed
    if type(parsed) is tuple and isinstance(original, (list, tuple)):
        return tuple(_restored(p, o) for p, o in zip(parsed, original, strict=True))
    if dataclasses.is_dataclass(parsed) and not isinstance(parsed, type):
        if not isinstance(original, Mapping):
            return parsed
        changes: dict[str, Any] = {}
        for field in dataclasses.fields(parsed):
            if field.name in original:
                now = getattr(parsed, field.name)
                was = _restored(now, original[field.name])
                if was is not now:
                    changes[field.name] = was
        return dataclasses.replace(parsed, **changes) if changes else parsed
    return parsed


def parse_accepted(value: Any, limits: Limits) -> tuple[Event, InvalidEvent | None]:
    """A run-log event under the rules it was accepted under: `(event, None)` when the
    current rules accept it; `(event, refusal)` when it breaks only a rule added since an
    older release forwarded it (an identifier holding a control, format or separator
    character), with the current rules' refusal. Anything else raises `InvalidEvent`.

    Every other rule is checked on a copy of the value whose such characters are masked
    (same length, same UTF-8 size); the event then holds the original strings.
    """
    try:
        return parse_event(value, limits), None
    except InvalidEvent as refusal:
        masked = _masked(value)
        if masked is value:
            raise
        try:
            event = parse_event(masked, limits)
        except InvalidEvent:
            raise refusal from None
        restored: Event = _restored(event, value)
        return restored, refusal


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
    redelivered: int = 0  # events the run had applied already (both kinds below)
    replayed: int = 0  # ... read again from the record that applied them: re-emitted
    rejected: int = 0
    rebuilt_runs: int = 0
    rebuilt_events: int = 0
    evicted_runs: int = 0  # dropped from the cache to make room
    older_rules: int = 0  # events folded under the rules an older release accepted them by
    unreadable: int = 0  # records set aside because a stored event of their run is unreadable


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
        self._warned: set[str] = set()  # runs a warning about older rules was logged for

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
        try:
            state = self._state(run_id)
        except RunUnreadable as exc:
            self.stats.unreadable += 1
            log.error(
                "run set aside: %s; record %s[%d]@%d is a run_unreadable dead letter",
                terminal_safe(exc.message),
                origin.topic,
                origin.partition,
                origin.offset,
            )
            return [self._dead_letter(exc, raw, origin, run_id, event.event_id)]
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
                return self._redelivered(run_id, state, event.event_id, origin)
            seq = len(state.events)
            _, outputs = fold(state, event)
            self.store.append(run_id, seq, raw, Applied(origin.partition, origin.offset))
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
        event, refusal = parse_accepted(value, self.limits)
        if refusal is not None:
            self._older_rules(run_id, "run-log record", refusal)
        return self._check(run_id, event)

    def _older_rules(self, run_id: str, what: str, refusal: InvalidEvent) -> None:
        """Count an event folded under older rules; warn once per run (a rebuilt run
        would otherwise repeat the line at every rebuild)."""
        self.stats.older_rules += 1
        if run_id in self._warned:
            return
        if len(self._warned) >= _WARNED_RUNS:
            self._warned.clear()
        self._warned.add(run_id)
        log.warning(
            "run %s: %s accepted by an older release is folded under the rules it was "
            "accepted under (the current rules refuse it: %s)",
            terminal_safe(run_id),
            what,
            terminal_safe(refusal.message),
        )

    @staticmethod
    def _check(run_id: str, event: Event) -> Event:
        if event.run_id != run_id:
            raise InvalidEvent(
                "schema_violation", f"run-log key {run_id!r} differs from run_id {event.run_id!r}"
            )
        return event

    def state_of(self, run_id: str) -> RunState | None:
        """The run's current state for a reader between two records (the gate, SPEC 8):
        the cached one, else rebuilt from the store; None when the store holds nothing
        of the run (a run never seen is not cached on a reader's account)."""
        if run_id not in self.cache and self.store.count(run_id) == 0:
            return None
        return self._state(run_id)

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
            fold(state, self._stored(run_id, seq, upto))
        if upto:
            self.stats.rebuilt_runs += 1
            self.stats.rebuilt_events += upto
        return state

    def _stored(self, run_id: str, seq: int, upto: int) -> Event:
        """The stored event `seq` of the run, under the rules it was accepted under.
        Raises `RunUnreadable` when it cannot be read at all."""
        where = f"run {run_id!r} cannot be rebuilt: its stored event {seq} (of {upto})"
        try:
            event, refusal = parse_accepted(self.decode(self.store.get(run_id, seq)), self.limits)
        except InvalidEvent as exc:
            raise RunUnreadable("run_unreadable", f"{where} is refused: {exc.message}") from None
        except Exception as exc:  # the codec's error, or a record missing from the store
            raise RunUnreadable(
                "run_unreadable", f"{where} is unreadable: {type(exc).__name__}: {exc}"
            ) from None
        if refusal is not None:
            self._older_rules(run_id, f"stored event {seq}", refusal)
        return event

    def _redelivered(
        self, run_id: str, state: RunState, event_id: str, origin: Origin
    ) -> list[OutputRecord]:
        """What an event the run applied already emits: the outputs its first application
        produced (recomputed) when this is the record that applied it, read again after
        a restart; nothing when it is a later duplicate (the module's docstring)."""
        seq = next(i for i, known in enumerate(state.events) if known == event_id)
        at = self.store.applied_at(run_id, seq)
        if at is not None and (origin.partition != at.partition or origin.offset > at.offset):
            return []
        self.stats.replayed += 1
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
