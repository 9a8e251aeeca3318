"""Release input records across partitions in timestamp order (the ingest stage's merge).

A run's events arrive on nine topics, and a consumer sees the records of different
partitions in whatever order their fetches complete. On a backlog that order is far from
the order the events happened: the lifecycle topic is short, so a run's
`finalize.requested` reaches the run log before most of its tool events, and from then on
every event makes a revision carrying the whole account (SPEC 3.1): O(n) per event.

`TimestampMerge` buffers consumed records per partition and releases them by record
timestamp, lowest first, the way Kafka Streams synchronises a task's inputs: a record is
released only when no partition that still has unread records could hold an earlier
one. A partition with nothing buffered blocks while it is *behind* (its cached high
watermark is past what was consumed), and, for live traffic, while the lowest buffered
record is younger than `grace` seconds: an earlier record of another partition may still
be on its way (producers send each partition's batch separately, and a cached watermark
lags its partition). To never stall, a blocked merge releases anyway once no input has
arrived for `max_wait` seconds (any record: the run log's too), after `max_hold` seconds
blocked whatever arrives, or when `max_buffered` records wait. (Counting
`max_wait` from the last input, not from the start of the block: on a backlog, the
fold of a large batch can take longer than `max_wait` while the partition that blocks
is only waiting for the next `consume`, and releasing everything then folded runs
finalize-first again.) Within a partition, records leave in offset
order, so the offsets to commit are always a processed prefix.

The order it produces is only a better arrival order, not a contract: the run log fixes
whatever order was forwarded, and the fold's results for a set of events do not depend
on it beyond the revision sequence.
"""

from __future__ import annotations

import heapq
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

Partition = tuple[str, int]
# (topic, partition) -> the high watermark as last seen, or None when unknown.
HighWatermark = Callable[[Partition], int | None]
# (topic, partition) -> the consumer's position (steps over transaction markers), or None.
Position = Callable[[Partition], int | None]


class TimestampMerge:
    """Per-partition FIFO buffers, released lowest timestamp first."""

    def __init__(
        self,
        high_watermark: HighWatermark,
        max_wait: float = 0.25,
        max_buffered: int = 200_000,
        max_hold: float = 30.0,
        grace: float = 0.1,
        clock: Callable[[], float] = time.time,
        position: Position | None = None,
    ) -> None:
        self.high_watermark = high_watermark
        self.position = position
        self.max_wait = max_wait
        self.max_hold = max_hold
        self.grace_ms = int(grace * 1000)
        self.clock = clock
        self.max_buffered = max_buffered
        self.queues: dict[Partition, deque[Any]] = {}
        self.next_offset: dict[Partition, int] = {}  # the next offset not yet consumed
        self.heads: list[tuple[int, str, int, int]] = []  # (timestamp, topic, partition, offset)
        self.buffered = 0
        self.blocked_since: float | None = None
        self.last_input: float | None = None

    def assign(self, starts: dict[Partition, int | None]) -> None:
        """Partitions now consumed, with the offset each starts at (None: unknown)."""
        for tp, start in starts.items():
            self.queues.setdefault(tp, deque())
            if start is not None and start >= 0:
                self.next_offset[tp] = start

    def clear(self) -> None:
        """Forget every buffered record and partition (a rebalance: all is re-read from
        the committed offsets)."""
        self.queues.clear()
        self.next_offset.clear()
        self.heads.clear()
        self.buffered = 0
        self.blocked_since = None

    def add(self, msg: Any, topic: str, partition: int, offset: int) -> None:
        tp = (topic, partition)
        queue = self.queues.get(tp)
        if queue is None:
            queue = self.queues[tp] = deque()
        if not queue:
            heapq.heappush(self.heads, (msg.timestamp()[1], topic, partition, offset))
        queue.append(msg)
        self.buffered += 1
        self.next_offset[tp] = offset + 1
        self.last_input = None  # stamped by the next `release`

    def note_activity(self) -> None:
        """Records arrived that the merge does not hold (the run log's, whose fold took
        the time): a backlog is being read, not a partition stalled, so `max_wait` counts
        from here. `max_hold` still bounds how long a block lasts."""
        self.last_input = None

    def _behind(self, tp: Partition) -> bool:
        """Whether the partition may have records not consumed yet.

        A partition whose end is not known yet (no fetch response for it since it was
        assigned) counts as behind: on a backlog the lifecycle topic's first fetch
        often came back before the tool topic's, and a run's finalize went first.
        `max_wait` still bounds the hold.
        """
        high = self.high_watermark(tp)
        if high is None:
            return True
        consumed = self.next_offset.get(tp, 0)
        if high <= consumed:
            return False
        position = self.position(tp) if self.position is not None else None
        return position is None or high > position

    def release(self, now: float | None = None, hurry: bool = False) -> Iterator[Any]:
        """The records that can go now, in merged order. `hurry` (someone waits for
        them: a gate check, SPEC 8) lets a young head go without its grace; a partition
        that is behind still holds it."""
        now = time.monotonic() if now is None else now
        if self.last_input is None:
            self.last_input = now  # records arrived since the last call
        forced = self.buffered >= self.max_buffered or (
            self.blocked_since is not None
            and (
                now - max(self.blocked_since, self.last_input) >= self.max_wait
                or now - self.blocked_since >= self.max_hold
            )
        )
        heads, queues = self.heads, self.queues
        young = self.clock() * 1000 - self.grace_ms  # timestamps above this are recent
        # Empty partitions that may still hold an earlier record: asked once per call.
        empty = {tp for tp, q in queues.items() if not q}
        behind = {tp for tp in empty if self._behind(tp)}
        while heads:
            if not forced and empty and (behind or (not hurry and heads[0][0] > young)):
                if self.blocked_since is None:
                    self.blocked_since = now
                return
            _, topic, partition, _ = heapq.heappop(heads)
            queue = queues[(topic, partition)]
            msg = queue.popleft()
            self.buffered -= 1
            self.blocked_since = None
            yield msg
            if queue:
                head = queue[0]
                heapq.heappush(heads, (head.timestamp()[1], topic, partition, head.offset()))
            else:
                empty.add((topic, partition))
                if self._behind((topic, partition)):
                    behind.add((topic, partition))
