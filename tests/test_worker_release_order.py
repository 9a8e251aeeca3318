"""The batch worker forwards each release of the merge with every run's events in the
order they happened, keeping the interleaving of runs (streams/worker_batch.py)."""

from __future__ import annotations

from typing import Any

from outcomes.devtools.workload import generate_run
from outcomes.reducers.validate import parse_event
from outcomes.streams.worker_batch import in_event_time


def item(run: str, n: int, micros: int, arrival: int) -> tuple[int, int, Any, bytes]:
    """A validated event of run `run` (its n-th generated one), said to happen at `micros`."""
    event = parse_event(generate_run(run, "clean")[n])
    return (micros, arrival, event, f"{run}:{n}".encode())


def test_each_run_is_put_in_event_time_order_in_its_own_places() -> None:
    released = [
        item("a", 2, 300, 0),  # a's finalize arrived first
        item("b", 1, 100, 1),
        item("a", 1, 200, 2),
        item("b", 2, 250, 3),
        item("a", 3, 300, 4),  # same time as a:2: arrival order breaks the tie
    ]
    ordered = in_event_time(released)
    assert [raw for *_, raw in ordered] == [b"a:1", b"b:1", b"a:2", b"b:2", b"a:3"]
    assert [e.run_id for _, _, e, _ in ordered] == ["a", "b", "a", "b", "a"]  # places kept


def test_a_release_already_in_order_is_unchanged() -> None:
    released = [item("a", 1, 1, 0), item("b", 1, 2, 1), item("a", 2, 3, 2)]
    assert in_event_time(released) == released
    assert in_event_time([]) == []
