"""`TimestampMerge`: input records leave in timestamp order, never stall, and keep each
partition's offset order (so committed offsets are always a processed prefix)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from outcomes.streams.merge import Partition, TimestampMerge

NOW = 1_000_000.0  # seconds: every record below is much older, unless said otherwise


@dataclass(frozen=True)
class Msg:
    topic_: str
    partition_: int
    offset_: int
    ts: int

    def timestamp(self) -> tuple[int, int]:
        return (1, self.ts)

    def offset(self) -> int:
        return self.offset_


class Watermarks:
    def __init__(self) -> None:
        self.high: dict[Partition, int] = {}

    def __call__(self, tp: Partition) -> int | None:
        return self.high.get(tp)


def merge(marks: Watermarks, **kwargs: float) -> TimestampMerge:
    return TimestampMerge(marks, clock=lambda: NOW, **kwargs)  # type: ignore[arg-type]


def add(m: TimestampMerge, msg: Msg) -> None:
    m.add(msg, msg.topic_, msg.partition_, msg.offset_)


def test_releases_in_timestamp_order_when_nothing_is_behind() -> None:
    marks = Watermarks()
    m = merge(marks)
    a = [Msg("tools", 0, i, ts) for i, ts in enumerate([10, 20, 30])]
    b = [Msg("lifecycle", 0, i, ts) for i, ts in enumerate([15, 25])]
    for msg in a + b:
        add(m, msg)
    marks.high = {("tools", 0): 3, ("lifecycle", 0): 2}
    assert [x.ts for x in m.release(now=0.0)] == [10, 15, 20, 25, 30]
    assert m.buffered == 0


def test_a_partition_behind_holds_back_later_records_until_max_wait() -> None:
    marks = Watermarks()
    m = merge(marks, max_wait=0.25)
    m.assign({("tools", 0): 0, ("lifecycle", 0): 0})
    add(m, Msg("lifecycle", 0, 0, 50))  # a finalize, while the tools backlog is unread
    marks.high = {("tools", 0): 100, ("lifecycle", 0): 1}
    assert list(m.release(now=0.0)) == []
    assert list(m.release(now=0.1)) == []
    add(m, Msg("tools", 0, 0, 10))  # the tool events arrive: they go first
    add(m, Msg("tools", 0, 1, 60))
    marks.high[("tools", 0)] = 2
    assert [x.ts for x in m.release(now=0.2)] == [10, 50, 60]
    add(m, Msg("lifecycle", 0, 1, 70))
    marks.high = {("tools", 0): 50, ("lifecycle", 0): 2}
    assert list(m.release(now=1.0)) == []  # blocked from 1.0 on
    assert [x.ts for x in m.release(now=1.3)] == [70]  # never stalls


def test_recent_records_wait_out_the_grace_period() -> None:
    marks = Watermarks()
    m = merge(marks, grace=0.1)
    m.assign({("tools", 0): 0, ("lifecycle", 0): 0})
    recent = int(NOW * 1000) - 50  # 50 ms old: an earlier record may be in flight
    add(m, Msg("lifecycle", 0, 0, recent))
    marks.high = {("lifecycle", 0): 1, ("tools", 0): 0}
    assert list(m.release(now=0.0)) == []
    assert len(list(m.release(now=0.3))) == 1


def test_a_hurried_release_skips_the_grace_but_not_a_partition_behind() -> None:
    marks = Watermarks()
    m = merge(marks, grace=0.1)
    m.assign({("tools", 0): 0, ("lifecycle", 0): 0})
    recent = int(NOW * 1000) - 10
    add(m, Msg("lifecycle", 0, 0, recent))
    marks.high = {("lifecycle", 0): 1, ("tools", 0): 5}  # tools is behind
    assert list(m.release(now=0.0, hurry=True)) == []
    marks.high[("tools", 0)] = 0  # nothing more on the way
    assert list(m.release(now=0.0)) == []  # young: it waits out the grace...
    assert len(list(m.release(now=0.0, hurry=True))) == 1  # ...unless someone waits for it


def test_each_partition_keeps_its_offset_order_whatever_the_timestamps() -> None:
    rng = random.Random(7)
    marks = Watermarks()
    m = merge(marks)
    sent: dict[Partition, list[int]] = {}
    for topic in ("a", "b", "c"):
        for offset in range(200):
            msg = Msg(topic, 0, offset, rng.randrange(1000))  # timestamps out of order
            add(m, msg)
            sent.setdefault((topic, 0), []).append(offset)
        marks.high[(topic, 0)] = 200
    got: dict[Partition, list[int]] = {}
    for msg in m.release(now=0.0):
        got.setdefault((msg.topic_, msg.partition_), []).append(msg.offset_)
    assert got == sent


def test_too_much_buffered_forces_release() -> None:
    marks = Watermarks()
    m = merge(marks, max_buffered=3)
    m.assign({("tools", 0): 0, ("lifecycle", 0): 0})
    marks.high = {("tools", 0): 1000, ("lifecycle", 0): 3}
    for i in range(3):
        add(m, Msg("lifecycle", 0, i, i))
    assert len(list(m.release(now=0.0))) == 3


def test_clear_forgets_everything() -> None:
    marks = Watermarks()
    m = merge(marks)
    add(m, Msg("tools", 0, 0, 1))
    m.clear()
    assert m.buffered == 0
    assert list(m.release(now=0.0)) == []


def test_the_wait_counts_from_the_last_input_not_from_the_block() -> None:
    marks = Watermarks()
    m = merge(marks, max_wait=0.25)
    m.assign({("tools", 0): 0, ("lifecycle", 0): 0})
    marks.high = {("tools", 0): 1000, ("lifecycle", 0): 100}
    add(m, Msg("lifecycle", 0, 0, 50))  # a finalize; tools is behind all along
    assert list(m.release(now=0.0)) == []
    for step in range(1, 20):  # input keeps coming (a long fold between calls): hold on
        add(m, Msg("lifecycle", 0, step, 50 + step))
        assert list(m.release(now=step * 0.3)) == []
    assert len(list(m.release(now=19 * 0.3 + 0.3))) == 20  # no input for 0.3 s: go


def test_a_partition_past_its_records_is_not_behind() -> None:
    """A transaction marker raises the high watermark without a record to consume;
    the consumer's position steps over it."""
    marks = Watermarks()
    positions = {("tools", 0): 11}
    m = TimestampMerge(marks, clock=lambda: NOW, position=positions.get)
    m.assign({("tools", 0): 0, ("lifecycle", 0): 0})
    add(m, Msg("tools", 0, 9, 5))  # its last record; offset 10 is a marker
    marks.high = {("tools", 0): 11, ("lifecycle", 0): 1}
    add(m, Msg("lifecycle", 0, 0, 7))
    assert [x.ts for x in m.release(now=0.0)] == [5, 7]
    positions[("tools", 0)] = 10  # the marker not stepped over yet: behind
    add(m, Msg("lifecycle", 0, 1, 8))
    assert list(m.release(now=0.1)) == []


def test_a_partition_whose_end_is_not_known_yet_counts_as_behind() -> None:
    """Before the first fetch response for a partition its high watermark is unknown:
    a backlog's finalize must not go ahead of tool events not fetched yet."""
    marks = Watermarks()
    m = merge(marks, max_wait=0.25)
    m.assign({("tools", 0): 0, ("lifecycle", 0): 0})
    marks.high = {("lifecycle", 0): 1}  # tools: no fetch response yet
    add(m, Msg("lifecycle", 0, 0, 50))
    assert list(m.release(now=0.0)) == []
    add(m, Msg("tools", 0, 0, 10))  # its first fetch: the older tool event goes first
    marks.high[("tools", 0)] = 1
    assert [x.ts for x in m.release(now=0.1)] == [10, 50]
    add(m, Msg("lifecycle", 0, 1, 60))
    del marks.high[("tools", 0)]  # unknown again (say, reassigned): held, never stalled
    assert list(m.release(now=1.0)) == []
    assert [x.ts for x in m.release(now=1.3)] == [60]


def test_run_log_activity_holds_the_block_but_not_past_max_hold() -> None:
    """Records the merge does not hold (the run log's) count as activity, so a backlog
    whose fold outlasts `max_wait` is not released finalize-first; `max_hold` bounds it."""
    marks = Watermarks()
    m = merge(marks, max_wait=0.25, max_hold=3.0)
    m.assign({("tools", 0): 0, ("lifecycle", 0): 0})
    marks.high = {("tools", 0): 1000, ("lifecycle", 0): 100}
    add(m, Msg("lifecycle", 0, 0, 50))  # a finalize; tools is behind all along
    assert list(m.release(now=0.0)) == []
    for step in range(1, 10):  # only run-log records arrive, 0.3 s apart: hold on
        m.note_activity()
        assert list(m.release(now=step * 0.3)) == []
    m.note_activity()
    assert [x.offset_ for x in m.release(now=3.0)] == [0]  # blocked 3 s: released anyway


def test_without_activity_the_wait_releases_a_block() -> None:
    marks = Watermarks()
    m = merge(marks, max_wait=0.25)
    m.assign({("tools", 0): 0, ("lifecycle", 0): 0})
    marks.high = {("tools", 0): 1000, ("lifecycle", 0): 100}
    add(m, Msg("lifecycle", 0, 0, 50))
    assert list(m.release(now=0.0)) == []
    assert [x.offset_ for x in m.release(now=0.3)] == [0]
