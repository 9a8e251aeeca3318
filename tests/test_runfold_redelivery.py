"""An event the run applied already, in the fold stage: the same run-log record read again
after a restart re-emits its first outputs byte for byte (the crash window); the same
event in a later run-log record (a duplicate, nothing failed) emits nothing. Both over
the in-memory store and over the batch engine's rocksdict store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from outcomes.reducers.engine import Engine
from outcomes.reducers.records import OutputRecord
from outcomes.reducers.validate import parse_event
from outcomes.streams.runfold import Origin, RunFolder
from outcomes.streams.store import (
    Applied,
    MemoryEventStore,
    PartitionStore,
    read_stored,
    stored_value,
)
from outcomes.streams.worker_common import WorkerOptions
from tests.strategies import RUN_ID, run_events

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "five_file_run.jsonl"
LOG = "app-run-log"


def lines(records: list[OutputRecord]) -> list[bytes]:
    return [r.to_json_line() for r in records]


def folder(store: Any = None) -> RunFolder:
    return RunFolder(store if store is not None else MemoryEventStore(), orjson.loads)


def sample() -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in SAMPLE.read_bytes().splitlines()]


def fold_log(stage: RunFolder, events: list[dict[str, Any]], first: int = 0) -> list[list[bytes]]:
    """Each event as its own run-log record (partition 2, offsets from `first`); the
    outputs of each."""
    return [
        lines(stage.process(e["run_id"], orjson.dumps(e), Origin(LOG, 2, first + n)))
        for n, e in enumerate(events)
    ]


def test_the_five_file_sample_folds_to_replays_outputs_each_once() -> None:
    """The sample's redelivered receipt is a later run-log record: it emits nothing, so
    every notification (and every other output) is published once, as replay has it."""
    events = sample()
    ids = [e["event_id"] for e in events]
    assert len(ids) > len(set(ids)), "the sample holds a redelivered event"
    engine = Engine()
    expected = [o for e in events for o in engine.apply(parse_event(e))]
    stage = folder()
    got = [line for outputs in fold_log(stage, events) for line in outputs]
    assert got == lines(expected)
    assert stage.stats.redelivered == 1 and stage.stats.replayed == 0
    kinds = [orjson.loads(line)["record"] for line in got]
    assert kinds.count("notification") == 3 and kinds.count("claim_notification") == 2
    assert len(got) == len(set(got))


def test_after_a_restart_each_record_again_gives_what_it_gave_the_first_time() -> None:
    """A worker that crashed before committing any offset reads the whole run log again
    over the store it left: each record emits what it emitted the first time, byte for
    byte: the first application's outputs again, and nothing for the duplicate."""
    events = sample()
    store = MemoryEventStore()
    first = fold_log(folder(store), events)
    restarted = folder(store)  # a new process: cold cache, the store survives
    assert fold_log(restarted, events) == first
    assert restarted.stats.replayed == len(events) - 1
    ids = [e["event_id"] for e in events]
    [duplicate] = [n for n, i in enumerate(ids) if i in ids[:n]]
    assert first[duplicate] == [] and first[ids.index(ids[duplicate])] != []


@settings(max_examples=60, deadline=None)
@given(events=run_events(max_size=20), data=st.data())
def test_one_record_replayed_re_emits_and_a_later_copy_emits_nothing(
    events: list[dict[str, Any]], data: st.DataObject
) -> None:
    store = MemoryEventStore()
    stage = folder(store)
    first = fold_log(stage, events)
    index = data.draw(st.integers(0, len(events) - 1))
    raw = orjson.dumps(events[index])
    again = Origin(LOG, 2, index)
    # The same record after a restart (cold cache) or without one: its first outputs.
    assert lines(folder(store).process(RUN_ID, raw, again)) == first[index]
    assert lines(stage.process(RUN_ID, raw, again)) == first[index]
    # The same event in a new record, later in the run log: nothing, cached or not.
    later = Origin(LOG, 2, len(events) + 5)
    assert stage.process(RUN_ID, raw, later) == []
    assert folder(store).process(RUN_ID, raw, later) == []
    # ... and in another partition's record (a run log whose partitions were changed).
    assert stage.process(RUN_ID, raw, Origin(LOG, 3, index)) == []


def test_an_event_stored_without_its_position_is_re_emitted() -> None:
    """A store written by a release that kept no positions: every redelivery is treated
    as the crash window, as that release did (duplicates, never a loss)."""
    events = sample()[:6]
    store = MemoryEventStore()
    for seq, event in enumerate(events):
        store.append(event["run_id"], seq, orjson.dumps(event))
    engine = Engine()
    expected = [lines(engine.apply(parse_event(e))) for e in events]
    late = Origin(LOG, 2, 1_000)
    assert (
        lines(folder(store).process(events[4]["run_id"], orjson.dumps(events[4]), late))
        == (expected[4])
    )


def test_a_stored_value_holds_its_position_and_an_older_one_holds_the_event_alone() -> None:
    raw = b"\xc3\x01" + bytes(range(40))
    value = stored_value(raw, Applied(5, 2**40 + 3))
    assert value != raw and read_stored(value) == (raw, Applied(5, 2**40 + 3))
    assert read_stored(raw) == (raw, None)
    assert read_stored(b"\x00\x00\x00\x00\x07avro") == (b"\x00\x00\x00\x00\x07avro", None)
    assert stored_value(raw, None) == raw


def test_the_batch_stores_position_survives_a_persist_a_reopen_and_the_changelog(
    tmp_path: Path,
) -> None:
    events = sample()
    sent: list[tuple[bytes, bytes, int]] = []
    store = PartitionStore(tmp_path / "p2", 2, WorkerOptions())
    store.append_hook = lambda key, value, partition: sent.append((key, value, partition))
    first = fold_log(folder(store), events)
    store.close(None)
    assert all(read_stored(value)[1] is not None for _, value, _ in sent)

    reopened = PartitionStore(tmp_path / "p2", 2, WorkerOptions())
    reopened.append_hook = lambda key, value, partition: sent.append((key, value, partition))
    run_id = events[0]["run_id"]
    assert reopened.applied_at(run_id, 0) == Applied(2, 0)
    assert fold_log(folder(reopened), events) == first

    # A store restored from those changelog records alone (another worker's) says the same.
    restored = PartitionStore(tmp_path / "elsewhere", 2, WorkerOptions())
    for key, value, _ in sent:
        restored.db[key] = value
    assert fold_log(folder(restored), events) == first
    reopened.close(None)
    restored.close(None)
