"""`outcomes check RUN_ID --text FILE` (cli/check.py) against a real door with a gate,
whose desk a thread serves over the five-file run folded by the reducers (the worker
stand-in of tests/test_gate_door.py). Exit status: 0 pass, 3 repair, 4 contain, 5 stale,
1 the gate not reached or refusing, 2 usage."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from outcomes.cli.main import main
from tests.gate_support import GateWorker
from tests.test_gate_door import RUN, TOKEN, _prefix_events

FALSE = "All five files changed, all tests pass and the draft was sent."


@pytest.fixture
def worker() -> Iterator[GateWorker]:
    w = GateWorker(TOKEN)
    w.replay.apply(*_prefix_events())
    try:
        yield w
    finally:
        w.close()


def check(tmp_path: Path, worker_url: str, text: str, *args: str, token: bool = True) -> Result:
    path = tmp_path / "answer.txt"
    path.write_text(text)
    env = {"OUTCOMES_GATE_TOKEN": TOKEN} if token else {"OUTCOMES_GATE_TOKEN": ""}
    return CliRunner().invoke(
        main, ["check", RUN, "--text", str(path), "--gate-url", worker_url, *args], env=env
    )


def test_a_contradicted_answer_is_repair_with_each_fact(tmp_path: Path, worker: GateWorker) -> None:
    result = check(tmp_path, worker.url, FALSE)
    assert result.exit_code == 3, result.output
    assert result.stdout.startswith("repair (revision ")
    assert '- "all tests pass": ' in result.stdout and '- "the draft was sent": ' in result.stdout
    assert "Instruction (for the repair):" in result.stdout and "<outcome-account" in result.stdout


def test_json_is_the_gates_answer(tmp_path: Path, worker: GateWorker) -> None:
    result = check(tmp_path, worker.url, FALSE, "--json")
    assert result.exit_code == 3
    answer = orjson.loads(result.stdout)
    assert answer["decision"] == "repair" and answer["run_id"] == RUN
    assert {c["text"] for c in answer["claims"] if c["verdict"] == "contradicted"} >= {
        "all tests pass",
        "the draft was sent",
    }


def test_a_repaired_answer_that_still_contradicts_is_contain(
    tmp_path: Path, worker: GateWorker
) -> None:
    result = check(tmp_path, worker.url, "Sorry: the draft was sent.", "--attempt", "2",
                   "--chain-id", "c-1")  # fmt: skip
    assert result.exit_code == 4, result.output
    assert "Show instead:" in result.stdout and "Status: unresolved." in result.stdout


def test_a_truthful_answer_passes(tmp_path: Path, worker: GateWorker) -> None:
    result = check(tmp_path, worker.url, "I could not confirm that the draft was sent.")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("pass")


def test_a_position_not_reached_is_stale(tmp_path: Path, worker: GateWorker) -> None:
    result = check(tmp_path, worker.url, FALSE, "--position", "never-published",
                   "--budget", "1")  # fmt: skip
    assert result.exit_code == 5, result.output
    assert result.stdout.startswith("stale: the account had reached 0 of the 1 events")


def test_the_worker_token_file_is_read(
    tmp_path: Path, worker: GateWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OUTCOMES_GATE_TOKEN", raising=False)
    state = tmp_path / "state"
    assert check(tmp_path, worker.url, FALSE, "--state-dir", str(state), token=False).exit_code == 1
    (state / "worker" / "app-x").mkdir(parents=True)
    (state / "worker" / "app-x" / "gate-token").write_text(TOKEN + "\n")
    result = check(tmp_path, worker.url, FALSE, "--state-dir", str(state), "--app-id", "app-x",
                   token=False)  # fmt: skip
    assert result.exit_code == 3, result.output


def test_no_gate_is_one_line_and_1(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        result = check(tmp_path, f"http://127.0.0.1:{sock.getsockname()[1]}", FALSE)
    assert result.exit_code == 1 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("outcomes check: no answer from the gate")


def test_bad_usage_is_2(tmp_path: Path, worker: GateWorker) -> None:
    missing = CliRunner().invoke(main, ["check", RUN, "--text", str(tmp_path / "none.txt")])
    assert missing.exit_code == 2
    bad = tmp_path / "map.json"
    bad.write_text("{not json")
    result = check(tmp_path, worker.url, FALSE, "--claim-map", str(bad))
    assert result.exit_code == 2 and "not JSON" in result.output
    outside = tmp_path / "outside.json"
    outside.write_bytes(orjson.dumps([{"start": 0, "end": 3, "kind": "effect",
                                       "entries": ["effect:another-runs"]}]))  # fmt: skip
    refused = check(tmp_path, worker.url, FALSE, "--claim-map", str(outside))
    assert refused.exit_code == 1 and "refused the check (422)" in refused.stderr
