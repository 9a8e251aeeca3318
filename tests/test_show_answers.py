"""`outcomes show` lists the answers checked before display (SPEC 8) from a replay's
output and from ClickHouse, as their `answer_check` records hold them."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from outcomes.reducers.answers import answer_checked_event
from tests.builders import five_file_events
from tests.cli_support import outcomes

RUN = "run-five-files"


def _events(tmp_path: Path) -> Path:
    events = five_file_events()
    for attempt, decision in ((1, "repair"), (2, "contain")):
        events.append(
            answer_checked_event(
                run_id=RUN,
                answer_chain_id="chain-1",
                attempt=attempt,
                decision=decision,
                text=f"answer {attempt}",
                counts={"contradicted": 2, "supported": 1},
                account_revision=1,
                occurred_at=1_796_032_000_000_000 + attempt,
                source="test",
            )
        )
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    return path


def _answers(shown: str) -> list[tuple[str, int, str]]:
    doc = orjson.loads(shown)
    return [(a["answer_chain_id"], a["attempt"], a["decision"]) for a in doc["answers"]]


def test_show_from_a_replay_lists_the_checked_answers(tmp_path: Path) -> None:
    replayed = tmp_path / "out.jsonl"
    done = outcomes("replay", str(_events(tmp_path)), "--out", str(replayed))
    assert done.returncode == 0, done.stderr
    shown = outcomes("show", RUN, "--from", str(replayed), "--format", "json")
    assert shown.returncode == 0, shown.stderr
    assert _answers(shown.stdout) == [("chain-1", 1, "repair"), ("chain-1", 2, "contain")]
    text = outcomes("show", RUN, "--from", str(replayed))
    assert "Answers checked before display" in text.stdout


@pytest.mark.clickhouse
def test_show_from_clickhouse_lists_the_checked_answers(tmp_path: Path) -> None:
    dsn = f"chdb://{tmp_path / 'chdb'}"
    done = outcomes("replay", str(_events(tmp_path)), "--clickhouse", dsn, "--out", "/dev/null")
    assert done.returncode == 0, done.stderr
    shown = outcomes("show", RUN, "--clickhouse", dsn, "--format", "json")
    assert shown.returncode == 0, shown.stderr
    assert _answers(shown.stdout) == [("chain-1", 1, "repair"), ("chain-1", 2, "contain")]
