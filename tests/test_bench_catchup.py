"""`outcomes bench`'s catch-up verdicts and its probe sink's note of revisions written
from their canonical JSON: the pieces that need no broker."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from outcomes.devtools.bench import AckLog, TimedWriter, catch_up_targets
from outcomes.sinks.writer import ClickHouseWriter, Encoded


def _results(catch: dict[str, Any] | None, e2e: float = 2_000.0) -> dict[str, Any]:
    results: dict[str, Any] = {"throughput": {"events_per_s": e2e}}
    if catch is not None:
        results["catch_up"] = catch
    return results


def _catch(rate: float, peak_mib: int | None, complete: bool = True) -> dict[str, Any]:
    return {
        "events": 100_000,
        "seconds": 100_000 / rate,
        "events_per_s": rate,
        "peak_rss_bytes": None if peak_mib is None else peak_mib * 2**20,
        "rss_samples_mib": [],
        "complete": complete,
        "events_folded": None,
    }


def test_catch_up_is_judged_against_end_to_end_and_one_gib() -> None:
    verdicts = catch_up_targets(_results(_catch(5_000.0, 600)))
    assert verdicts["catch_up>=e2e_mixed_runs"] == {"value": 2.5, "met": True}
    assert verdicts["catch_up_peak_rss<=1GiB"] == {"value": 600, "met": True}
    slow_and_large = catch_up_targets(_results(_catch(1_000.0, 1_700)))
    assert slow_and_large["catch_up>=e2e_mixed_runs"]["met"] is False
    assert slow_and_large["catch_up_peak_rss<=1GiB"] == {"value": 1_700, "met": False}


def test_an_unfinished_catch_up_meets_no_speed_target() -> None:
    verdicts = catch_up_targets(_results(_catch(9_000.0, 500, complete=False)))
    assert verdicts["catch_up>=e2e_mixed_runs"]["met"] is False
    unknown_peak = catch_up_targets(_results(_catch(9_000.0, None)))
    assert unknown_peak["catch_up_peak_rss<=1GiB"] == {"value": None, "met": False}


def test_results_without_a_catch_up_have_no_catch_up_verdicts() -> None:
    assert catch_up_targets(_results(None)) == {}


def test_the_probe_notes_revisions_written_from_their_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[str] = []

    def stored(self: Any, table: str, records: Mapping[str, Sequence[Encoded]]) -> None:
        written.append(table)

    monkeypatch.setattr(ClickHouseWriter, "_insert_json", stored)
    probe = TimedWriter.__new__(TimedWriter)  # no connection: the base insert is replaced
    log = tmp_path / "acks.jsonl"
    probe._log = log.open("a", buffering=1)

    def revision(run_id: str, number: int, cutoff: str) -> Encoded:
        body = {"revision_id": f"{run_id}:{number}", "revision": number}
        body["observation_cutoff"] = cutoff
        return Encoded(run_id, f"{run_id}:{number}", orjson.dumps(body))

    notification = Encoded("r-1", "r-1:1", b'{"notification_id": "r-1:1"}')
    probe._insert_json("notifications", {"notification": [notification]})
    probe._insert_json(
        "account_revisions",
        {
            "account_revision": [
                revision("r-1", 1, "2026-01-01T00:00:00.000001Z"),
                revision("r-2", 3, "2026-01-01T00:00:01Z"),
            ]
        },
    )
    probe._log.close()
    assert written == ["notifications", "account_revisions"]
    (line,) = log.read_text().splitlines()  # the notification's insert is not noted
    acked, revisions = json.loads(line)
    assert revisions == [["r-1", 1, 1_767_225_600_000_001], ["r-2", 3, 1_767_225_601_000_000]]
    acks = AckLog(log)
    acks.refresh()
    assert acks.acks[("r-2", 3)] == (acked, 1_767_225_601_000_000)
