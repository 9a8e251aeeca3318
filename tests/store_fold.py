"""What a worker's outputs must be, predicted from its own store: the fold of each run's
stored events in the order they were stored.

The faust engine folds most records where it reads them (one stage, no run log), so the
run log no longer records the order of its folds; the run-events changelog does, per
run (`<run_id>\\x1f<seq>` -> the event applied as number `seq`, streams/store.py), and a
run's outputs depend on nothing but its own events in that order. Folding each run's
stored events again therefore predicts every output id and byte the worker may publish
for it (re-emission after a restart repeats the same bytes; a later duplicate is not
stored and emits nothing). It holds for the batch engine too, whose run log and store
agree.
"""

from __future__ import annotations

from outcomes.common.codec import Codec
from outcomes.devtools.harness import (
    Expectation,
    KafkaConfig,
    Outputs,
    check_against_run_log,
    end_offsets,
    read_from,
)
from outcomes.reducers.engine import Engine
from outcomes.reducers.records import OutputRecord
from outcomes.reducers.validate import parse_event
from outcomes.streams.store import stored_event
from outcomes.streams.worker_common import changelog_topic


def stored_runs(config: KafkaConfig, app_id: str, prefix: str) -> dict[str, list[bytes]]:
    """Each run under `prefix` -> its stored events' bytes, in `seq` order, read from the
    app's run-events changelog (the last copy of a key wins, as compaction keeps it)."""
    topic = changelog_topic(app_id)
    start = {tp: 0 for tp in end_offsets(config, [topic])}

    def keep(_topic: str, key: bytes | None) -> bool:
        return (key or b"").startswith(prefix.encode())

    stored: dict[str, dict[int, bytes]] = {}
    for _, _, _, key, value in read_from(config, start, keep):
        run_id, _, seq = (key or b"").decode().rpartition("\x1f")
        stored.setdefault(run_id, {})[int(seq)] = stored_event(value)
    runs: dict[str, list[bytes]] = {}
    for run_id, events in stored.items():
        assert sorted(events) == list(range(len(events))), f"{run_id}: gaps in its store"
        runs[run_id] = [events[seq] for seq in range(len(events))]
    return runs


def store_expectation(runs: dict[str, list[bytes]]) -> Expectation:
    """The outputs of folding each run's stored events in their order."""
    codec = Codec()
    engine = Engine()
    records: list[OutputRecord] = []
    for events in runs.values():
        for raw in events:
            records += engine.apply(parse_event(codec.decode(raw).value))
    return Expectation({}, {}, records)


def check_against_store(
    outputs: Outputs, config: KafkaConfig, app_id: str, prefix: str, run_log: str
) -> int:
    """Assert the outputs are exactly the fold of the worker's stored events: every id,
    nothing else, each with the same content (so no output was lost). Dead letters are
    left out unless they name the run log (as `check_against_run_log`). Returns the
    number of stored events."""
    runs = stored_runs(config, app_id, prefix)
    check_against_run_log(outputs, store_expectation(runs), run_log)
    return sum(len(events) for events in runs.values())
