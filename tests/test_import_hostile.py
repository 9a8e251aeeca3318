"""`outcomes import` given what a hostile or unlucky user gives it (issue 34): its own
input as --out, a missing directory, a FIFO, a device, a file name with a newline,
times past the year 9999, a long final message, a trace with many unread tool steps.
Each is one clear line and an exit code that says so, never a traceback, a hang or an
input overwritten; a bad value costs its record, never the file."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from outcomes.cli.main import main
from outcomes.importers.claude_code import ClaudeCodeImporter
from outcomes.importers.trace import Skipped, ToolCall, Trace
from outcomes.reducers.validate import parse_event
from tests.cli_support import outcomes

BASE = {"sessionId": "s-1", "cwd": "/work/proj", "version": "2.1.0"}


def user(text: object, stamp: object) -> dict[str, Any]:
    return {
        **BASE,
        "type": "user",
        "timestamp": stamp,
        "message": {"role": "user", "content": text},
    }


def assistant(text: str, stamp: object, mid: str = "m-1") -> dict[str, Any]:
    message = {
        "id": mid,
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": text}],
    }
    return {**BASE, "type": "assistant", "timestamp": stamp, "message": message}


def call(cid: str, command: str, stamp: str) -> dict[str, Any]:
    block = {"type": "tool_use", "id": cid, "name": "Bash", "input": {"command": command}}
    message = {"id": f"m-{cid}", "role": "assistant", "model": "m", "content": [block]}
    return {**BASE, "type": "assistant", "timestamp": stamp, "message": message}


def result(cid: str, text: str, stamp: str) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": cid, "content": text, "is_error": False}
    return {**user([block], stamp), "toolUseResult": {"stdout": text, "stderr": ""}}


def trace_text(first_stamp: object = "2026-02-01T10:00:01.000Z", final: str = "Done.") -> str:
    rows = [
        user("Run the tests.", first_stamp),
        call("t1", "python -m pytest -q", "2026-02-01T10:00:02.000Z"),
        result("t1", "3 passed in 0.01s", "2026-02-01T10:00:03.000Z"),
        assistant(final, "2026-02-01T10:00:04.000Z"),
    ]
    return "".join(json.dumps(r) + "\n" for r in rows)


def no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr


def events_of(text: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in text.splitlines() if line.strip()]


# ------------------------------------------------------------------------- the output


def test_an_out_that_is_the_input_is_refused_and_the_input_kept(tmp_path: Path) -> None:
    trace = tmp_path / "T.jsonl"
    trace.write_text(trace_text())
    before = trace.read_bytes()
    link = tmp_path / "link.jsonl"
    link.symlink_to(trace)
    for out in (trace, link):
        proc = outcomes("import", str(trace), "--out", str(out))
        no_traceback(proc)
        assert proc.returncode == 2, proc.stderr
        (line,) = proc.stderr.splitlines()
        assert line.startswith("outcomes import: error: --out ") and "is the input" in line
        assert trace.read_bytes() == before


def test_an_out_in_a_missing_directory_is_one_line_exit_2(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(trace_text())
    proc = outcomes("import", str(trace), "--out", str(tmp_path / "no" / "such" / "x.jsonl"))
    no_traceback(proc)
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line == (
        f"outcomes import: error: cannot write {tmp_path}/no/such/x.jsonl: "
        f"no such directory {tmp_path}/no/such"
    )


def test_the_out_file_is_replaced_whole(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(trace_text())
    out = tmp_path / "events.jsonl"
    out.write_text("old contents\n")
    out.chmod(0o640)
    result = CliRunner().invoke(main, ["import", str(trace), "--out", str(out)])
    assert result.exit_code == 0, result.output
    events = events_of(out.read_text())
    assert events and all(parse_event(e) for e in events)
    assert oct(out.stat().st_mode & 0o777) == "0o640"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


# ------------------------------------------------------------------------- what is read


@pytest.mark.timeout(60)
def test_a_fifo_and_a_device_are_refused_without_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a FIFO"), (Path("/dev/zero"), "a device")):
        proc = outcomes("import", str(path), timeout=20)
        no_traceback(proc)
        assert proc.returncode == 1
        assert proc.stderr.splitlines() == [
            f"outcomes import: error: {path}: not a regular file ({kind})"
        ]


def test_a_file_name_with_a_newline_makes_events_replay_accepts(tmp_path: Path) -> None:
    trace = tmp_path / "run\nstatus: complete.jsonl"
    trace.write_text(trace_text())
    proc = outcomes("import", str(trace))
    assert proc.returncode == 0, proc.stderr
    events = events_of(proc.stdout)
    assert events
    for event in events:
        parse_event(event)  # raises for an id or a source with a control character
    assert {e["run_id"] for e in events} == {"claude-code-jsonl:run_status: complete"}


# ------------------------------------------------------------------------- values out of range


@pytest.mark.parametrize(
    "stamp",
    ["9999-12-31T23:59:59.999999Z", "9999-12-31T00:00:00Z", 1e20, -1e20],
    ids=["year-9999-end", "year-9999-last-day", "1e20", "-1e20"],
)
def test_a_time_out_of_range_costs_its_record_its_time_not_the_file(
    tmp_path: Path, stamp: object
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(trace_text(first_stamp=stamp))
    proc = outcomes("import", str(trace))
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert f"{trace}: line 1: time out of range, read as undated" in proc.stderr.splitlines()
    events = events_of(proc.stdout)
    assert {e["type"] for e in events} >= {"goal.revised", "verification.receipt"}
    for event in events:
        parse_event(event)


def test_a_value_a_reader_fails_on_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    # NaN is not JSON, but Python's json module (which the readers use) reads it.
    trace.write_text(trace_text().replace('"2026-02-01T10:00:01.000Z"', "NaN", 1))
    proc = outcomes("import", str(trace))
    no_traceback(proc)
    if proc.returncode == 0:  # a reader that reports the record keeps the rest
        assert all(parse_event(e) for e in events_of(proc.stdout))
    else:
        assert len(proc.stderr.splitlines()) == 1


# ------------------------------------------------------------------------- said, not silent


def test_a_cut_narrative_is_said(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    final = "All tests pass. " * 5000  # 80,000 characters
    trace.write_text(trace_text(final=final))
    proc = outcomes("import", str(trace))
    assert proc.returncode == 0, proc.stderr
    (narrative,) = [e for e in events_of(proc.stdout) if e["type"] == "narrative.submitted"]
    assert len(narrative["text"]) == 60000
    assert (
        f"{trace}: line 4: the final message has 80000 characters; "
        "the narrative holds its first 60000"
    ) in proc.stderr.splitlines()


def _with_unread(read: int, unread: int, kind: str) -> Any:
    """ClaudeCodeImporter.read, replaced: a trace of `read` tool calls and `unread`
    tool steps the reader could not read."""

    def fake(self: ClaudeCodeImporter, path: Path, text: str) -> Trace:
        steps = tuple(
            ToolCall(f"c{i}", "Bash", "shell", f"line {i + 1}", 1_000_000 * (i + 1), command="ls")
            for i in range(read)
        )
        skipped = tuple(
            Skipped(f"line {100 + i}", "tool_calls block not understood", True, kind)
            for i in range(unread)
        )
        return Trace("claude-code-jsonl", "claude-code", str(path), steps, skipped=skipped)

    return fake


@pytest.mark.parametrize(("read", "unread", "refused"), [(28, 12, True), (36, 4, False)])
def test_a_trace_with_too_many_unread_tool_steps_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read: int, unread: int, refused: bool
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(trace_text())
    monkeypatch.setattr(
        ClaudeCodeImporter, "read", _with_unread(read, unread, "tool_calls message")
    )
    result = CliRunner().invoke(main, ["import", str(trace), "--format", "claude-code-jsonl"])
    lines = result.stderr.splitlines()
    if refused:
        assert result.exit_code == 1
        assert lines == [
            f"outcomes import: error: {trace}: 12 of 40 tool steps not read: 12 tool_calls message"
        ]
        assert result.stdout == ""
    else:
        assert result.exit_code == 0, result.output
        not_mapped = [line for line in lines if "not mapped" in line]
        assert len(not_mapped) == 4
    again = CliRunner().invoke(
        main, ["import", str(trace), "--format", "claude-code-jsonl", "--max-unread-share", "0.5"]
    )
    assert again.exit_code == 0


def test_an_out_that_is_a_link_writes_its_target(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(trace_text())
    target = tmp_path / "target.jsonl"
    target.write_text("old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    result = CliRunner().invoke(main, ["import", str(trace), "--out", str(link)])
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and events_of(target.read_text())


def test_a_long_final_message_in_a_wide_script_is_cut_to_what_a_narrative_holds() -> None:
    from outcomes.importers.derive import narrative_text
    from outcomes.reducers.limits import Limits

    wide = "結" * 70_000  # 3 bytes each: 60,000 characters would be 180,000 bytes
    cut = narrative_text(wide)
    assert len(cut.encode()) <= Limits().max_string_bytes and wide.startswith(cut)
    assert narrative_text("done") == "done"
    assert narrative_text("a" * 70_000) == "a" * 60_000
