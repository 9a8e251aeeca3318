"""Where the fold stage keeps each run's applied events: the `EventStore` contract and
its three implementations.

- `MemoryEventStore`: a dict, for tests and single-process use;
- `PartitionStore`: the batch engine's, one rocksdict database per run-log partition,
  each append also produced to the changelog partition of the same number;
- `TableEventStore`: the faust engine's, over a changelog-backed faust table.

The two Kafka-backed stores share one layout, `store_key(run_id, seq)` -> `stored_value`:
the run-log position the event was applied at, then the event's bytes as the run log
carried them, in the changelog `<app_id>-run-events-changelog`
(`outcomes.streams.worker_common.changelog_topic`), so both engines of one app id read the same
changelog (docs/stream.md, "State"). A value an older release stored holds the event's
bytes alone: its position is unknown (`applied_at` answers None).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from rocksdict import BlockBasedOptions, Cache, Options, Rdict, WriteBatch

from outcomes.streams.worker_common import WorkerError, WorkerOptions

_CHECKPOINT = b"\x1f\x1fchangelog-offset"  # no run's key (`store_key`) starts with \x1f

# A stored value that starts with `_APPLIED_AT` holds the run-log partition and offset
# its event was applied at (signed 32 and 64 bits, big-endian), then the event. No event
# starts so: the run log carries Avro single-object (\xc3\x01) or Schema Registry (\x00)
# framing, and a value stored before positions were kept holds the event alone.
_APPLIED_AT = b"\x1e@"
_POSITION = struct.Struct(">iq")
_HEADER_BYTES = len(_APPLIED_AT) + _POSITION.size


class Applied(NamedTuple):
    """Where a stored event was applied: the partition and offset of its run-log record."""

    partition: int
    offset: int


def store_key(run_id: str, seq: int) -> bytes:
    r"""`<run_id>\x1f<seq>`: the key of a run's event number `seq` in the run-events store
    and its changelog, for both engines (the ASCII unit separator cannot appear in a
    valid run_id)."""
    return f"{run_id}\x1f{seq}".encode()


def stored_value(raw: bytes, at: Applied | None) -> bytes:
    """What the store and its changelog hold for an event applied at `at` (the event's
    bytes alone when the position is unknown)."""
    if at is None:
        return raw
    return _APPLIED_AT + _POSITION.pack(at.partition, at.offset) + raw


def stored_event(value: bytes) -> bytes:
    """The event's bytes of a stored value (the hot path of a rebuild: no position)."""
    if value.startswith(_APPLIED_AT) and len(value) >= _HEADER_BYTES:
        return value[_HEADER_BYTES:]
    return value


def read_stored(value: bytes) -> tuple[bytes, Applied | None]:
    """The event's bytes and where it was applied (None for a value stored without it)."""
    if not value.startswith(_APPLIED_AT) or len(value) < _HEADER_BYTES:
        return value, None
    partition, offset = _POSITION.unpack_from(value, len(_APPLIED_AT))
    return value[_HEADER_BYTES:], Applied(partition, offset)


class EventStore(Protocol):
    """Durable per-run event lists: append-only, read by position."""

    def count(self, run_id: str) -> int:
        """How many events the run has stored."""

    def get(self, run_id: str, seq: int) -> bytes:
        """The encoded event at position `seq` (0-based) of the run."""

    def applied_at(self, run_id: str, seq: int) -> Applied | None:
        """The run-log position event `seq` of the run was applied at (None: stored by a
        release that did not keep it)."""

    def append(self, run_id: str, seq: int, raw: bytes, at: Applied | None = None) -> None:
        """Store the encoded event at position `seq`, which is the current count, applied
        at run-log position `at`."""


class MemoryEventStore:
    """An `EventStore` in a dict: for tests and for `replay`-like single-process use."""

    def __init__(self) -> None:
        self.events: dict[str, list[bytes]] = {}  # run -> its `stored_value`s

    def count(self, run_id: str) -> int:
        return len(self.events.get(run_id, ()))

    def get(self, run_id: str, seq: int) -> bytes:
        return stored_event(self.events[run_id][seq])

    def applied_at(self, run_id: str, seq: int) -> Applied | None:
        return read_stored(self.events[run_id][seq])[1]

    def append(self, run_id: str, seq: int, raw: bytes, at: Applied | None = None) -> None:
        stored = self.events.setdefault(run_id, [])
        if seq != len(stored):
            raise ValueError(f"{run_id}: append at {seq}, but {len(stored)} events are stored")
        stored.append(stored_value(raw, at))


class PartitionStore:
    """`EventStore` for the runs of one run-log partition (the batch engine).

    `<run_id>\\x1f<seq>` -> the run's event number `seq` as `stored_value` (the faust
    engine's table layout, so both engines read one changelog). Appends wait in
    `pending` (and go to the changelog at once) until `persist`, which a commit calls
    after the changelog acknowledged them; the database under `_CHECKPOINT` remembers
    the changelog offset it is complete up to, so a restore reads only what follows.
    """

    def __init__(self, path: Path, partition: int, options: WorkerOptions) -> None:
        opts = Options(raw_mode=True)
        opts.create_if_missing(True)
        table = BlockBasedOptions()
        table.set_block_cache(Cache(options.rocksdb_cache_mib * 1024 * 1024))
        opts.set_block_based_table_factory(table)
        opts.set_write_buffer_size(options.rocksdb_write_buffer_mib * 1024 * 1024)
        opts.set_max_write_buffer_number(2)
        path.mkdir(parents=True, exist_ok=True)
        self.db = Rdict(str(path), opts)
        self.partition = partition
        self.pending: dict[bytes, bytes] = {}
        self.append_hook: Any = None  # set by the worker: sends one record to the changelog

    def _get(self, key: bytes) -> bytes | None:
        value = self.pending.get(key)
        if value is None:
            value = self.db.get(key)
        return value

    def count(self, run_id: str) -> int:
        seq = 0
        while self._get(store_key(run_id, seq)) is not None:
            seq += 1
        return seq

    def _value(self, run_id: str, seq: int) -> bytes:
        value = self._get(store_key(run_id, seq))
        if value is None:
            raise WorkerError(f"run {run_id}: stored event {seq} is missing from the store")
        return value

    def get(self, run_id: str, seq: int) -> bytes:
        return stored_event(self._value(run_id, seq))

    def applied_at(self, run_id: str, seq: int) -> Applied | None:
        return read_stored(self._value(run_id, seq))[1]

    def append(self, run_id: str, seq: int, raw: bytes, at: Applied | None = None) -> None:
        key = store_key(run_id, seq)
        value = stored_value(raw, at)
        self.pending[key] = value
        self.append_hook(key, value, self.partition)

    def persist(self) -> None:
        """Write pending appends to the local database (their changelog records are
        acknowledged by then)."""
        if not self.pending:
            return
        batch = WriteBatch(raw_mode=True)
        for key, value in self.pending.items():
            batch.put(key, value)
        self.db.write(batch)
        self.pending.clear()

    @property
    def checkpoint(self) -> int:
        value = self.db.get(_CHECKPOINT)
        return int(value) if value is not None else 0

    def set_checkpoint(self, offset: int) -> None:
        self.db[_CHECKPOINT] = str(offset).encode()

    def close(self, checkpoint: int | None) -> None:
        """Persist, record how far the changelog is complete (when known), close."""
        self.persist()
        if checkpoint is not None:
            self.set_checkpoint(checkpoint)
        self.db.close()


class TableEventStore:
    """`EventStore` over one changelog-backed faust table (the faust engine).

    `run_events[b"<run_id>\\x1f<seq>"]` holds the run's event number `seq` (as
    `stored_value`). Keys are
    read and written only during stream iteration, so faust picks the partition of the
    record being processed: the run's own partition. A run's count is found by probing
    `seq` upwards (only when a run is rebuilt, which reads every event anyway); one
    table write per applied event.
    """

    def __init__(self, events: Any) -> None:
        self.events = events

    def count(self, run_id: str) -> int:
        seq = 0
        while self.events.get(store_key(run_id, seq)) is not None:
            seq += 1
        return seq

    def _value(self, run_id: str, seq: int) -> bytes:
        value = self.events.get(store_key(run_id, seq))
        if value is None:
            raise WorkerError(f"run {run_id}: stored event {seq} is missing from the table")
        data: bytes = value
        return data

    def get(self, run_id: str, seq: int) -> bytes:
        return stored_event(self._value(run_id, seq))

    def applied_at(self, run_id: str, seq: int) -> Applied | None:
        return read_stored(self._value(run_id, seq))[1]

    def append(self, run_id: str, seq: int, raw: bytes, at: Applied | None = None) -> None:
        self.events[store_key(run_id, seq)] = stored_value(raw, at)
