"""Every mistake seen in the field gets one clear line: what and where, a non-zero exit
code, no traceback (issue "every mistake gets one clear line").

Each case runs the real `outcomes` process where a traceback or librdkafka's own logging
could show, and in process (CliRunner) where the check needs a chDB engine.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from outcomes.cli.main import main
from outcomes.common.broker import BROKER_CHECK_SECONDS
from outcomes.sinks import clickhouse
from tests.chdb_support import PURGE_SECRET, sample_database
from tests.cli_support import outcomes

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "five_file_run.jsonl"
DEAD_BROKER = "127.0.0.1:1"  # nothing listens on port 1


def one_error_line(proc: subprocess.CompletedProcess[str], command: str) -> str:
    """The single stderr line of a failed command (asserting there is nothing else)."""
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"outcomes {command}: error: "), lines
    return lines[0]


# --------------------------------------------------------------------------- 1. replay targets


@pytest.mark.parametrize("command", ["replay", "import"])
def test_an_out_in_a_missing_directory_names_the_path(command: str, tmp_path: Path) -> None:
    # A command line that cannot work: exit code 2 (as for click's usage errors), before
    # anything is read.
    given = SAMPLE
    if command == "import":
        given = tmp_path / "t.jsonl"
        given.write_text(json.dumps({"type": "user", "message": {"content": "hi"}}) + "\n")
    proc = outcomes(command, "--out", "/nonexistent/dir/x.jsonl", str(given))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [
        f"outcomes {command}: error: cannot write /nonexistent/dir/x.jsonl: "
        "no such directory /nonexistent/dir"
    ]
    assert proc.stdout == ""


@pytest.mark.parametrize(
    ("dsn", "said"),
    [
        ("bogus://x", "must start with chdb:// or http(s)://"),
        ("chdb:///proc/outcomes-db", "cannot create chDB directory /proc/outcomes-db"),
        ("http://127.0.0.1:1", "cannot reach ClickHouse at http://127.0.0.1:1"),
    ],
)
def test_replay_into_an_unusable_clickhouse_names_it(dsn: str, said: str) -> None:
    proc = outcomes("replay", "--clickhouse", dsn, str(SAMPLE))
    assert said in one_error_line(proc, "replay")


# --------------------------------------------------------------------------- 2. dead broker


@pytest.mark.parametrize(
    "argv",
    [
        ["worker", "--bootstrap", DEAD_BROKER, "--no-web"],
        ["sink", "--bootstrap", DEAD_BROKER, "--until-idle", "3"],
    ],
    ids=["worker", "sink"],
)
def test_a_dead_broker_is_one_line_within_the_stated_time(tmp_path: Path, argv: list[str]) -> None:
    if argv[0] == "sink":
        argv = [*argv, "--clickhouse", f"chdb://{tmp_path}/chdb"]
    started = time.monotonic()
    proc = outcomes(*argv, timeout=60)
    took = time.monotonic() - started
    line = one_error_line(proc, argv[0])
    assert f"no Kafka broker answered at {DEAD_BROKER}" in line
    assert took < BROKER_CHECK_SECONDS + 10, took  # the check, plus the process start
    assert proc.stdout == ""


@pytest.mark.parametrize("command", ["worker", "sink"])
def test_help_states_how_long_the_broker_check_waits(command: str) -> None:
    result = CliRunner().invoke(main, [command, "--help"])
    text = " ".join(result.output.split())
    assert f"no Kafka broker answers within {BROKER_CHECK_SECONDS:g} s" in text


# --------------------------------------------------------------------------- 3. rejects


GOOD = {
    "event_id": "e-1",
    "run_id": "run-x",
    "type": "tool.finished",
    "occurred_at": "2026-11-30T10:00:00Z",
    "source": "worker",
    "action_id": "a1",
    "tool": "shell",
    "outcome": "succeeded",
    "error_class": None,
}


def test_replay_reports_each_rejected_event_on_stderr_and_exits_non_zero(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    bad = {**GOOD, "event_id": "e-2", "outcome": "exploded"}
    path.write_text(json.dumps(GOOD) + "\n{not json\n" + json.dumps(bad) + "\n")
    proc = outcomes("replay", str(path))
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0].startswith(f"{path}:2: undecodable: not JSON"), lines
    assert lines[1].startswith(f"{path}:3: schema_violation: "), lines
    assert "'exploded'" in lines[1]
    assert lines[2].startswith("events read 3, applied 1, redelivered 0, rejected 2")
    assert lines[3] == (
        "outcomes replay: error: 2 of 3 event(s) rejected (reasons above; "
        "dead letters on standard output)"
    )
    assert len(lines) == 4
    # The dead letters are still on stdout, as before.
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["origin_line"] for r in records if r["record"] == "dead_letter"] == [2, 3]


def test_replay_without_rejects_still_exits_zero() -> None:
    proc = outcomes("replay", str(SAMPLE))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        "events read 16, applied 15, redelivered 1, rejected 0, revisions 3"
    ]


def test_a_file_named_avro_is_read_as_avro(tmp_path: Path) -> None:
    path = tmp_path / "events.avro"
    path.write_text(json.dumps(GOOD) + "\n")  # JSON in a file that says it is Avro
    proc = outcomes("replay", str(path))
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert lines[0] == (
        f"{path}:1: undecodable: {path}: not an Avro container file (it starts with JSON "
        "text, not Obj\\x01); a file named *.avro is read as Avro: name a JSONL file *.jsonl"
    ), lines
    assert "Traceback" not in proc.stderr
    assert "read length" not in proc.stderr
    (letter,) = [json.loads(line) for line in proc.stdout.splitlines()]
    assert letter["record"] == "dead_letter" and letter["reason"] == "undecodable"


# --------------------------------------------------------------------------- 4. binary input


def test_a_binary_file_is_not_utf8_text_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "image.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes([0x7B, 0xD8, 0x00, 0x10]) + b"\n")
    proc = outcomes("replay", str(path))
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert lines[0] == (
        f"{path}:1: undecodable: not UTF-8 text at line 1 (byte 1 is 0x89); is this a JSONL file?"
    )
    assert lines[1].startswith(f"{path}:2: undecodable: not JSON: ")  # \x1a is UTF-8
    assert lines[2] == (
        f"{path}:3: undecodable: not UTF-8 text at line 3 (byte 2 is 0xd8); is this a JSONL file?"
    )
    assert "surrogates" not in proc.stdout + proc.stderr


# --------------------------------------------------------------------------- 5. 6. ClickHouse


SECRET = PURGE_SECRET


@pytest.fixture
def chdb_dsn(tmp_path: Path) -> Iterator[str]:
    """A fresh chDB directory holding the sample, with a purge credential configured."""
    with sample_database(tmp_path) as dsn:
        yield dsn


@pytest.mark.clickhouse
def test_query_refuses_a_path_with_no_outcomes_database(tmp_path: Path) -> None:
    clickhouse.close_all()
    typo = tmp_path / "chbd"
    result = CliRunner().invoke(main, ["query", "SELECT 1", "--clickhouse", f"chdb://{typo}"])
    assert result.exit_code == 1, result.output
    assert result.stderr == (
        f"outcomes query: error: no outcomes database at {typo} (chDB); "
        f"create one with `outcomes clickhouse migrate --clickhouse chdb://{typo}`\n"
    )
    assert not typo.exists()  # nothing was created
    # A directory that exists but holds no chDB database is refused too, untouched.
    other = tmp_path / "notes"
    other.mkdir()
    result = CliRunner().invoke(main, ["query", "SELECT 1", "--clickhouse", f"chdb://{other}"])
    assert result.exit_code == 1
    assert "no outcomes database at" in result.stderr
    assert list(other.iterdir()) == []
    clickhouse.close_all()


@pytest.mark.clickhouse
def test_query_still_answers_on_a_migrated_database(chdb_dsn: str) -> None:
    result = CliRunner().invoke(
        main, ["query", "SELECT count() AS n FROM current_accounts", "--clickhouse", chdb_dsn]
    )
    assert result.exit_code == 0, result.output


@pytest.mark.clickhouse
def test_purging_a_run_that_does_not_exist_says_so(chdb_dsn: str) -> None:
    env = {"OUTCOMES_PURGE_CREDENTIAL": SECRET}
    result = CliRunner().invoke(
        main, ["purge", "--run", "does-not-exist", "--clickhouse", chdb_dsn], env=env
    )
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr == (
        "outcomes purge: error: no run does-not-exist: no rows of it in any table "
        "(never sunk, or already purged)\n"
    )
    real = CliRunner().invoke(main, ["purge", "--run", "run-b", "--clickhouse", chdb_dsn], env=env)
    assert real.exit_code == 0, real.output
    assert real.stdout.startswith("purged run run-b (")
