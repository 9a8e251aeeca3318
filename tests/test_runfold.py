"""The fold stage over an in-memory store: the same contract the faust tables serve."""

from __future__ import annotations

import base64
import dataclasses
import logging
import random
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from outcomes.common.codec import Codec
from outcomes.devtools.workload import generate_runs, interleave
from outcomes.reducers.engine import Engine
from outcomes.reducers.errors import InvalidEvent
from outcomes.reducers.limits import Limits
from outcomes.reducers.records import OutputRecord
from outcomes.reducers.validate import parse_event
from outcomes.streams.runfold import Origin, RunFolder, parse_accepted
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


# -- events accepted under older rules (docs/stream.md) ------------------------------

# What an older release accepted: identifiers with an ANSI colour, a bidi override, a
# zero-width space and a C1 control; the current rules refuse each of them.
OLD_TOOL = "read\x1b[31m_file\u202e"
OLD_SOURCE = "agent\u200bworker\x85"


def with_old_ids(event: Any) -> Any:
    """The event as an older release's parser gave it: its ids as they were sent."""
    return dataclasses.replace(event, tool=OLD_TOOL, source=OLD_SOURCE)


def older_run() -> tuple[list[dict[str, Any]], list[OutputRecord]]:
    """A run whose third event holds identifiers only an older release accepted, and
    the outputs that release published for it (the event built without the parser)."""
    events = workload(runs=1)
    index = next(i for i, e in enumerate(events) if e["type"] == "tool.started")
    clean = events[index]
    events[index] = {**clean, "tool": OLD_TOOL, "source": OLD_SOURCE}
    engine = Engine()
    return events, [o for e in events for o in engine.apply(_older(e))]


def test_the_current_rules_refuse_the_older_event() -> None:
    events, _ = older_run()
    bad = next(e for e in events if e.get("tool") == OLD_TOOL)
    with pytest.raises(InvalidEvent, match="source: format character U\\+200B"):
        parse_event(bad)
    with pytest.raises(InvalidEvent, match="tool: control character U\\+001B"):
        parse_event({**bad, "source": "agent-worker"})


def test_a_run_log_record_accepted_under_older_rules_folds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events, expected = older_run()
    stage = folder()
    with caplog.at_level(logging.WARNING, logger="outcomes.worker.fold"):
        got = [o for e in events for o in stage.process(e["run_id"], orjson.dumps(e), ORIGIN)]
    assert lines(got) == lines(expected)
    assert stage.stats.older_rules == 1 and stage.stats.rejected == 0
    [record] = caplog.records
    assert "rules it was accepted under" in record.getMessage()
    assert "\x1b" not in record.getMessage() and "\u202e" not in record.getMessage()


def test_a_rebuild_folds_stored_events_the_current_rules_refuse(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The store holds what an older release folded; a new release with a cold cache
    rebuilds the run from it and continues with the same revisions."""
    events, expected = older_run()
    run_id = events[0]["run_id"]
    store = MemoryEventStore()
    split = 8
    for seq, event in enumerate(events[:split]):
        store.append(run_id, seq, orjson.dumps(event))  # what the older worker stored
    stage = folder(store)
    with caplog.at_level(logging.WARNING, logger="outcomes.worker.fold"):
        later = [o for e in events[split:] for o in stage.process(run_id, orjson.dumps(e), ORIGIN)]
    first_part = Engine()
    before = [o for e in events[:split] for o in first_part.apply(_older(e))]
    assert lines(before) + lines(later) == lines(expected)
    assert stage.stats.rebuilt_runs == 1 and stage.stats.older_rules == 1
    assert store.count(run_id) == len(events)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "stored event 2" in warnings[0].getMessage()
    # The stored older event, redelivered, re-emits its first outputs (no conflict).
    index = next(i for i, e in enumerate(events) if e.get("tool") == OLD_TOOL)
    replayed = Engine()
    for e in events[:index]:
        replayed.apply(_older(e))
    again = folder(store).process(run_id, orjson.dumps(events[index]), ORIGIN)
    assert lines(again) == lines(replayed.apply(_older(events[index])))
    assert all(o.kind != "dead_letter" for o in again)


def _older(event: dict[str, Any]) -> Any:
    if event.get("tool") == OLD_TOOL:
        clean = {**event, "tool": "read_file", "source": "agent-worker"}
        return with_old_ids(parse_event(clean))
    return parse_event(event)


def test_older_rules_still_refuse_what_every_release_refused() -> None:
    events, _ = older_run()
    bad = next(e for e in events if e.get("tool") == OLD_TOOL)
    with pytest.raises(InvalidEvent, match="unknown field"):
        parse_accepted({**bad, "extra": 1}, Limits())
    only_tool = {**bad, "source": "agent-worker"}
    with pytest.raises(InvalidEvent, match="tool: lone surrogate"):
        parse_accepted({**only_tool, "tool": "x\ud800\x1b"}, Limits())
    with pytest.raises(InvalidEvent, match=r"event_id: must be 1\.\.128"):
        parse_accepted({**only_tool, "event_id": "\x1b" * 129}, Limits())
    with pytest.raises(InvalidEvent, match="exceeds"):
        parse_accepted({**only_tool, "tool": "\x1b" * (Limits().max_string_bytes + 1)}, Limits())
    event, refusal = parse_accepted(bad, Limits())
    assert refusal is not None and refusal.message.startswith("source: format character")
    assert (event.tool, event.source) == (OLD_TOOL, OLD_SOURCE)  # type: ignore[attr-defined]
    assert parse_accepted(events[0], Limits()) == (parse_event(events[0]), None)


def test_a_stored_event_that_cannot_be_read_sets_its_run_aside(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Not a crash loop and not a silent drop: each record of the run is a dead letter
    with the reason, the store is left as it is, and the other runs keep folding."""
    events = workload(runs=2)
    broken_run = events[0]["run_id"]
    mine = [e for e in events if e["run_id"] == broken_run]
    others = [e for e in events if e["run_id"] != broken_run]
    store = MemoryEventStore()
    store.append(broken_run, 0, orjson.dumps(mine[0]))
    store.append(broken_run, 1, b"\xc3\x01 not an event")
    stage = folder(store)
    with caplog.at_level(logging.ERROR, logger="outcomes.worker.fold"):
        for n in (2, 3):
            [letter] = stage.process(broken_run, orjson.dumps(mine[n]), Origin("log", 1, n))
            assert letter.kind == "dead_letter"
            assert letter.body["reason"] == "run_unreadable"
            assert "stored event 1 (of 2) is unreadable" in letter.body["message"]
            assert letter.body["event_id"] == mine[n]["event_id"]
            assert orjson.loads(base64.b64decode(letter.body["raw"])) == mine[n]
    assert store.count(broken_run) == 2
    assert stage.stats.unreadable == 2
    assert len(caplog.records) == 2 and "run_unreadable" in caplog.records[0].getMessage()
    engine = Engine()
    expected = [o for e in others for o in engine.apply(parse_event(e))]
    got = [o for e in others for o in stage.process(e["run_id"], orjson.dumps(e), ORIGIN)]
    assert lines(got) == lines(expected)


def test_the_worker_codec_rebuilds_a_run_stored_by_an_older_release() -> None:
    """The same with the bytes an older worker stored: Avro, decoded as the worker does."""
    codec = Codec()
    events, expected = older_run()
    run_id = events[0]["run_id"]
    store = MemoryEventStore()
    for seq, event in enumerate(events[:6]):
        store.append(run_id, seq, codec.encode_event(event))
    stage = RunFolder(store, codec.decode_event_fast)
    later = [o for e in events[6:] for o in stage.process(run_id, codec.encode_event(e), ORIGIN)]
    before = Engine()
    first = [o for e in events[:6] for o in before.apply(_older(e))]
    assert lines(first) + lines(later) == lines(expected)
    assert stage.stats.older_rules == 1 and stage.stats.rejected == 0
