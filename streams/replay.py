"""In-process replay: the same reducers the stream runs, over files of events.

JSONL lines are decoded and validated one by one; anything that cannot be applied
becomes a dead letter naming the file and line, and processing goes on.
"""

from __future__ import annotations

import gc
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import orjson

from outcomes.common.codec.container import (
    CONTAINER_MAGIC,
    SourceItem,
    iter_container_items,
    not_a_container,
)
from outcomes.reducers.engine import Engine, fold
from outcomes.reducers.errors import InvalidEvent, OutcomesError
from outcomes.reducers.limits import Limits
from outcomes.reducers.records import OutputRecord, dead_letter
from outcomes.reducers.validate import event_parser

T = TypeVar("T")

# Records between two gc.freeze() calls in a one-shot replay (see `settling_state`).
SETTLE_EVERY = 10_000


class EventsRejected(OutcomesError):
    """Some events of the replayed files were rejected (dead letters).

    Operators: each one is reported as `file:line: reason: message` on standard error
    and as a dead-letter record in the output; fix the producer or the file and replay.
    """


@dataclass
class ReplayStats:
    """Counts for the summary line."""

    read: int = 0
    applied: int = 0
    redelivered: int = 0
    rejected: int = 0
    revisions: int = 0

    def summary(self) -> str:
        return (
            f"events read {self.read}, applied {self.applied}, redelivered {self.redelivered}, "
            f"rejected {self.rejected}, revisions {self.revisions}"
        )


def _ids(value: Any) -> tuple[str | None, str | None]:
    if isinstance(value, dict):
        run_id, event_id = value.get("run_id"), value.get("event_id")
        return (
            run_id if isinstance(run_id, str) else None,
            event_id if isinstance(event_id, str) else None,
        )
    return None, None


def jsonl_items(path: Path, limits: Limits) -> Iterator[SourceItem]:
    """Decode a JSONL file line by line; blank lines are skipped. A line is read up to
    the event size limit: a longer one (a file without newlines) is one `too_large` dead
    letter holding its start, and reading goes on after its end, in bounded memory."""
    name = str(path)
    max_bytes = limits.max_event_bytes
    loads = orjson.loads
    # A SourceItem built as the tuple it is (its generated __new__ is a Python call).
    item = tuple.__new__
    with path.open("rb") as handle:
        readline = handle.readline
        number = 0
        while line := readline(max_bytes + 2):  # the limit, and room for "\r\n"
            number += 1
            raw = line.rstrip(b"\r\n")
            if not raw or raw.isspace():
                continue
            if len(raw) > max_bytes:
                size, last = len(line), line
                while not last.endswith(b"\n") and (last := readline(1 << 20)):
                    size += len(last)
                size -= len(last) - len(last.rstrip(b"\r\n"))  # without the line's end
                message = f"event of {size} bytes exceeds {max_bytes}"
                error = InvalidEvent("too_large", message)
                yield SourceItem(name, number, raw[:max_bytes], error=error)
                continue
            try:
                value = loads(raw)
            except orjson.JSONDecodeError as exc:
                yield SourceItem(name, number, raw, error=_undecodable(raw, number, exc))
                continue
            yield item(SourceItem, (name, number, raw, value, None))


def _undecodable(raw: bytes, number: int, exc: orjson.JSONDecodeError) -> InvalidEvent:
    """Why a line is not JSON; bytes that are not UTF-8 text (a binary file) say so,
    instead of orjson's "str is not valid UTF-8: surrogates not allowed"."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        return InvalidEvent(
            "undecodable",
            f"not UTF-8 text at line {number} (byte {bad.start + 1} is "
            f"0x{raw[bad.start]:02x}); is this a JSONL file?",
        )
    return InvalidEvent("undecodable", f"not JSON: {exc}")


def file_items(path: Path, limits: Limits) -> Iterator[SourceItem]:
    """Items of a JSONL or Avro object container file.

    A file named `*.avro` is read as Avro whatever it holds (as `outcomes produce` does),
    so one that is not a container is one `undecodable` dead letter saying so, not a
    dead letter per "line" of binary; any other file is Avro if it starts with the
    container magic, else JSONL. A device (`/dev/zero`) is one dead letter saying so; a
    pipe is read as it comes (`outcomes replay <(…)`).
    """
    mode = path.stat().st_mode
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):  # /dev/zero would never end
        message = f"{path}: a device, not a file of events"
        yield SourceItem(str(path), 1, b"", error=InvalidEvent("undecodable", message))
        return
    with path.open("rb") as handle:
        magic = handle.read(len(CONTAINER_MAGIC))
    if magic == CONTAINER_MAGIC:
        yield from iter_container_items(path, limits)
    elif path.suffix == ".avro":
        # Without the magic, the container reader fails on whatever the first bytes
        # happen to mean ("read length must be non-negative" for JSON text).
        message = not_a_container(path, magic)
        yield SourceItem(str(path), 1, b"", error=InvalidEvent("undecodable", message))
    else:
        yield from jsonl_items(path, limits)


def replay_items(
    items: Iterable[SourceItem], engine: Engine, limits: Limits, stats: ReplayStats
) -> Iterator[OutputRecord]:
    """Validate and fold every item, yielding outputs and dead letters in input order."""
    parse = event_parser(limits)
    runs = engine.runs
    for item in items:
        stats.read += 1
        error = item.error
        if error is None:
            try:
                event = parse(item.value)
                state = runs.get(event.run_id)
                if state is None:
                    state = engine.state(event.run_id)
                applied_before = len(state.events)
                _, outputs = fold(state, event)
            except InvalidEvent as exc:
                # Without its traceback, which holds this frame: no cycle through the engine.
                error = exc.with_traceback(None)
            else:
                if len(state.events) == applied_before:
                    stats.redelivered += 1
                else:
                    stats.applied += 1
                for output in outputs:
                    if output.kind == "account_revision":
                        stats.revisions += 1
                    yield output
                continue
        stats.rejected += 1
        run_id, event_id = _ids(item.value)
        yield dead_letter(
            reason=error.reason,
            message=error.message,
            raw=item.raw,
            origin_file=item.origin_file,
            origin_line=item.origin_line,
            run_id=run_id,
            event_id=event_id,
        )


def settling_state(records: Iterable[T], every: int = SETTLE_EVERY) -> Iterator[T]:
    """Pass `records` through, calling `gc.freeze()` every `every` of them.

    For a one-shot process only (`outcomes replay`, its benchmark). Run state only grows
    during a replay, and nearly all of it is kept to the end, yet CPython's cyclic
    collector re-scans every surviving object in its older generations: with 10,000
    interleaved runs that took a tenth of the replay's time. Freezing moves what exists
    so far out of the collector's view; it is still freed by reference counting. The
    fold makes no reference cycles, so nothing collectable is held back (a cycle that
    did get frozen would be kept until the process exits).
    """
    count = 0
    for record in records:
        yield record
        count += 1
        if count >= every:
            count = 0
            gc.freeze()
