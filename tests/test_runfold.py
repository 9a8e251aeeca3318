"""The fold stage over an in-memory store: the same contract the faust tables serve."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from outcomes.devtools.workload import generate_runs, interleave
from outcomes.reducers.engine import Engine
from outcomes.reducers.records import OutputRecord
from outcomes.reducers.validate import parse_event
from outcomes.streams.runfold import Origin, RunFolder
from outcomes.streams.store import MemoryEventStore
from tests.strategies import RUN_ID, run_events

ORIGIN = Origin("outcomes.run-log.v1", 0, 0)


def folder(store: MemoryEventStore | None = None, cache_runs: int = 10_000) -> RunFolder:
    return RunFolder(store or MemoryEventStore(), orjson.loads, cache_runs=cache_runs)


def lines(records: list[OutputRecord]) -> list[bytes]:
    return [r.to_json_line() for r in records]


def workload(runs: int = 35, seed: int = 5) -> list[dict[str, Any]]:
    return interleave(list(generate_runs(runs, seed=seed, padding=3)), seed=seed)


def test_folding_the_run_log_gives_what_replay_gives() -> None:
    events = workload()
    engine = Engine()
    expected = [o for e in events for o in engine.apply(parse_event(e))]
    stage = folder()
    got = [o for e in events for o in stage.process(e["run_id"], orjson.dumps(e), ORIGIN)]
    assert lines(got) == lines(expected)


def test_a_tiny_cache_rebuilds_runs_from_the_store_without_changing_outputs() -> None:
    events = workload()
    roomy, tiny = folder(), folder(cache_runs=2)
    for event in events:
        raw = orjson.dumps(event)
        assert lines(tiny.process(event["run_id"], raw, ORIGIN)) == lines(
            roomy.process(event["run_id"], raw, ORIGIN)
        )
    assert tiny.stats.rebuilt_runs > 0
    assert len(tiny.cache) <= 2


@settings(max_examples=100, deadline=None)
@given(events=run_events(max_size=25), data=st.data())
def test_a_redelivered_record_re_emits_exactly_its_first_outputs(
    events: list[dict[str, Any]], data: st.DataObject
) -> None:
    """The crash window: the store kept an event whose outputs never reached Kafka.
    Processing the record again must publish those same outputs, byte for byte."""
    stage = folder()
    first: list[list[bytes]] = [
        lines(stage.process(RUN_ID, orjson.dumps(e), ORIGIN)) for e in events
    ]
    index = data.draw(st.integers(0, len(events) - 1))
    again = stage.process(RUN_ID, orjson.dumps(events[index]), ORIGIN)
    assert lines(again) == first[index]
    # ...also from a worker that restarted (empty cache, state from the store alone).
    restarted = folder(stage.store)  # type: ignore[arg-type]
    assert lines(restarted.process(RUN_ID, orjson.dumps(events[index]), ORIGIN)) == first[index]


def test_crash_between_store_write_and_publish_loses_nothing() -> None:
    """Simulate kills: after each crash the outputs of the last few records are lost in
    flight, and the worker restarts from an older committed position."""
    events = workload(runs=20, seed=9)
    raw = [(e["run_id"], orjson.dumps(e)) for e in events]
    engine = Engine()
    expected = {
        (o.kind, o.id): o.to_json_line() for e in events for o in engine.apply(parse_event(e))
    }
    rng = random.Random(3)
    store = MemoryEventStore()
    published: dict[tuple[str, str], bytes] = {}
    committed = 0
    position = 0
    stage = folder(store)
    while position < len(raw):
        crash_at = min(len(raw), position + rng.randint(5, 40))
        finishing = crash_at == len(raw)  # the last stretch runs to the end, no crash
        for index in range(position, crash_at):
            outputs = stage.process(*raw[index], ORIGIN)
            if finishing or index < crash_at - 3:  # else: these outputs never arrive
                for o in outputs:
                    line = o.to_json_line()
                    assert published.setdefault((o.kind, o.id), line) == line
        if finishing:
            break
        # Crash: offsets were committed only up to a point before the lost outputs.
        committed = max(committed, crash_at - rng.randint(3, 6))
        position = committed
        stage = folder(store)  # a new process: cold cache, the store survives
    assert published == expected


def test_the_same_event_id_with_new_content_is_a_dead_letter_with_its_run_log_position() -> None:
    stage = folder()
    event = workload(runs=1)[0]
    stage.process(event["run_id"], orjson.dumps(event), ORIGIN)
    changed = {**event, "source": "someone-else"}
    [letter] = stage.process(event["run_id"], orjson.dumps(changed), Origin("t", 3, 42))
    assert letter.kind == "dead_letter"
    assert letter.body["reason"] == "event_id_conflict"
    assert (letter.body["origin_partition"], letter.body["origin_offset"]) == (3, 42)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [(b"\xc3\x01garbage", "undecodable"), (b'{"type": "tool.started"}', "schema_violation")],
)
def test_bad_run_log_records_become_dead_letters(raw: bytes, reason: str) -> None:
    stage = folder()

    def decode(data: bytes) -> Any:
        return orjson.loads(data)

    stage.decode = decode
    [letter] = stage.process("run-x", raw, ORIGIN)
    assert letter.body["reason"] == reason
    assert stage.stats.rejected == 1
