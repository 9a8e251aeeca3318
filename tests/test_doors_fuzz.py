"""Fuzzing the doors data comes in by (issue 34): `outcomes import` of arbitrary JSON and
JSONL per format, `outcomes replay` of arbitrary JSONL and of mutated Avro containers,
and Claude Code hook payloads. Whatever comes in, a door answers with events that
validate, dead letters or one line, never an exception; a corrupt Avro block costs only
its own events.

Bounded for CI: each test runs a few dozen examples (the hook's, a dozen sessions of up
to four calls) without a deadline: at most about ten seconds each on two loaded cores.
"""

from __future__ import annotations

import io
import itertools
import json
import math
import tempfile
from pathlib import Path
from typing import Any

import fastavro
import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from outcomes.cli import hook as hook_cli
from outcomes.cli.main import main
from outcomes.common.codec.container import (
    ContainerFailure,
    iter_container_events,
    write_container,
)
from outcomes.importers.claude_hooks import run_id_of
from outcomes.importers.registry import FORMATS
from outcomes.reducers.engine import Engine
from outcomes.reducers.limits import Limits
from outcomes.reducers.validate import parse_event
from outcomes.streams.replay import ReplayStats, file_items, replay_items

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "five_file_run.jsonl"
FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# Words the trace formats use, so that generated objects reach past the first check.
KEYS = (
    "type", "role", "content", "message", "text", "timestamp", "tool_use", "tool_result",
    "tool_use_id", "id", "name", "input", "command", "file_path", "is_error", "toolUseResult",
    "stdout", "stderr", "sessionId", "cwd", "history", "trajectory", "messages", "action",
    "observation", "kind", "source", "args", "tool_calls", "function", "arguments",
    "returncode", "output", "toolCalls", "status", "result", "thoughts", "exit_code",
    "info", "submission", "trajectory_format", "llm_message", "extras", "path", "old_str",
)  # fmt: skip
WORDS = (
    "user", "assistant", "tool_use", "tool_result", "text", "Bash", "Write", "Edit",
    "pytest -q", "git push", "rm -rf x", "3 passed in 0.1s", "MessageAction", "agent",
    "CmdRunAction", "run", "finish", "gemini", "function_call", "/w/a.py", "..", "\n",
    "9999-12-31T23:59:59.999999Z", "0000-01-01T00:00:00Z", "2026-02-01T10:00:00Z", "",
)  # fmt: skip
NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([1e20, -1e20, 1e308, 0.5, 1.7e9, 1.7e12, 1.7e15, 1.7e18]),
)
# Text orjson can write (no lone surrogates).
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, st.sampled_from(WORDS), TEXT)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(KEYS) | TEXT, inner, max_size=5),
    ),
    max_leaves=25,
)
RECORDS = st.dictionaries(st.sampled_from(KEYS), JSON_VALUES, min_size=1, max_size=6)


def _dumps(value: Any) -> str:
    return json.dumps(value, allow_nan=True)


def _import(data: bytes, fmt: str) -> None:
    """Import `data` as `fmt`: exit 0 with events that validate, or exit 1 with one line."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.jsonl"
        path.write_bytes(data)
        result = CliRunner().invoke(main, ["import", str(path), "--format", fmt])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert result.exit_code in (0, 1), result.output
    assert "Traceback" not in result.stderr
    for line in result.stdout.splitlines():
        parse_event(orjson.loads(line))
    if result.exit_code == 1:
        assert result.stderr.splitlines()[-1].startswith("outcomes import: error: ")


# ------------------------------------------------------------------------------ import


@pytest.mark.parametrize("fmt", FORMATS)
@FUZZ
@given(rows=st.lists(RECORDS, min_size=1, max_size=6))
def test_import_of_arbitrary_jsonl_is_events_or_one_line(fmt: str, rows: list[Any]) -> None:
    _import("".join(_dumps(r) + "\n" for r in rows).encode(), fmt)


@pytest.mark.parametrize("fmt", FORMATS)
@FUZZ
@given(value=JSON_VALUES)
def test_import_of_an_arbitrary_json_document_is_events_or_one_line(fmt: str, value: Any) -> None:
    _import(_dumps(value).encode(), fmt)


@FUZZ
@given(data=st.binary(max_size=200))
def test_import_of_arbitrary_bytes_is_events_or_one_line(data: bytes) -> None:
    for fmt in FORMATS:
        _import(data, fmt)


# ------------------------------------------------------------------------------ replay

SAMPLE_EVENTS = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]


@st.composite
def mutated_events(draw: st.DrawFn) -> list[str]:
    """Lines of the five-file run, some with a field set to an arbitrary value, dropped or
    replaced by arbitrary text."""
    lines = []
    for event in SAMPLE_EVENTS:
        action = draw(st.sampled_from(["keep", "keep", "set", "drop", "text"]))
        body = dict(event)
        if action == "set":
            body[draw(st.sampled_from(sorted(body)))] = draw(JSON_VALUES)
        elif action == "drop":
            body.pop(draw(st.sampled_from(sorted(body))))
        if action == "text":
            lines.append(draw(st.text(max_size=40)).replace("\n", " "))
        else:
            lines.append(_dumps(body))
    return lines


@FUZZ
@given(lines=mutated_events())
def test_replay_of_arbitrary_jsonl_folds_or_dead_letters_each_line(lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "events.jsonl"
        path.write_text("\n".join(lines) + "\n")
        stats = ReplayStats()
        records = list(replay_items(file_items(path, Limits()), Engine(), Limits(), stats))
    expected = sum(1 for line in lines if line.strip())
    assert stats.read == expected
    assert stats.applied + stats.redelivered + stats.rejected == expected
    assert sum(1 for r in records if r.kind == "dead_letter") == stats.rejected


# ------------------------------------------------------------------------------ Avro

HEADER = {
    "type": "record",
    "name": "org.apache.avro.file.Header",
    "fields": [
        {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 4}},
        {"name": "meta", "type": {"type": "map", "values": "bytes"}},
        {"name": "sync", "type": {"type": "fixed", "name": "Sync", "size": 16}},
    ],
}


def _container(compression: str) -> tuple[bytes, list[tuple[int, int, list[str]]]]:
    """The five-file run's distinct events in a container of small blocks: its bytes and
    each block's (first byte, byte after its sync marker, event ids)."""
    events = list({e["event_id"]: e for e in SAMPLE_EVENTS}.values())
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.avro"
        write_container(path, events, compression=compression, block_bytes=250)
        raw = path.read_bytes()
    sync = fastavro.schemaless_reader(io.BytesIO(raw), HEADER)["sync"]  # type: ignore[call-overload,index]
    ends = []
    at = raw.find(sync)
    while at >= 0:
        ends.append(at + 16)
        at = raw.find(sync, at + 16)
    blocks, taken = [], 0
    for start, end in itertools.pairwise(ends):
        stream = io.BytesIO(raw[start:end])
        count = _zigzag(stream)
        ids = [e["event_id"] for e in events[taken : taken + count]]
        taken += count
        blocks.append((start, end, ids))
    assert taken == len(events)
    return raw, blocks


def _zigzag(stream: io.BytesIO) -> int:
    shift = result = 0
    while True:
        byte = stream.read(1)[0]
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1)
        shift += 7


CONTAINERS = {c: _container(c) for c in ("null", "deflate")}


@pytest.mark.parametrize("compression", sorted(CONTAINERS))
@FUZZ
@given(data=st.data())
def test_a_mutated_container_loses_only_the_blocks_it_touches(
    compression: str, data: st.DataObject
) -> None:
    raw, blocks = CONTAINERS[compression]
    first = blocks[0][0]
    changes = data.draw(
        st.lists(
            st.tuples(st.integers(first, len(raw) - 1), st.integers(0, 255)), min_size=1, max_size=4
        )
    )
    mutated = bytearray(raw)
    for position, value in changes:
        mutated[position] = value
    touched = {p for p, v in changes if raw[p] != v}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "m.avro"
        path.write_bytes(bytes(mutated))
        items = list(iter_container_events(path))
    read = {i["event_id"] for i in items if not isinstance(i, ContainerFailure)}
    for start, end, ids in blocks:
        # a block is intact with the sync marker before it and its own bytes untouched
        if not any(start - 16 <= p < end for p in touched):
            assert set(ids) <= read, (start, end, sorted(set(ids) - read))
    if not touched:
        assert not any(isinstance(i, ContainerFailure) for i in items)


# ------------------------------------------------------------------------------ the hook

HOOK_EVENTS = (
    "SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop",
    "SessionEnd", "Other",
)  # fmt: skip


@st.composite
def payloads(draw: st.DrawFn) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "session_id": draw(st.sampled_from(["s", "..", "col/1", "col_1", "a\nb"]) | TEXT),
        "hook_event_name": draw(st.sampled_from(HOOK_EVENTS)),
        "cwd": draw(st.sampled_from(["/w", None, 3])),
        "transcript_path": draw(st.sampled_from(["/nowhere/s.jsonl", "/dev/zero", "", None])),
    }
    for key in draw(st.lists(st.sampled_from(
        ["prompt", "tool_name", "tool_input", "tool_use_id", "tool_response", "error",
         "last_assistant_message", "is_interrupt", "reason"]
    ), max_size=5)):  # fmt: skip
        payload[key] = draw(JSON_VALUES)
    return payload


@settings(FUZZ, max_examples=30)
@given(sent=st.lists(payloads(), min_size=1, max_size=4))
def test_hook_payloads_never_fail_and_never_leave_the_state_dir(
    sent: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    def publish(
        events: list[dict[str, Any]], timeout: float, bootstrap: str | None, registry: str | None
    ) -> tuple[set[str], list[tuple[dict[str, Any], str]], str | None]:
        return set(), [], "broker down"

    monkeypatch.setattr(hook_cli, "_publish", publish)
    with tempfile.TemporaryDirectory() as folder:
        state = Path(folder) / "state"
        for payload in sent:
            # _handle raising is the failure: the command would print it as an error line
            message = hook_cli._handle(_dumps(payload).encode(), state, None, 1.0, None, None, 1.0)
            assert message is None or message.startswith("outcomes hook: ")
        assert sorted(p.name for p in Path(folder).iterdir()) == ["state"]
        for session in {p["session_id"] for p in sent}:
            spool = state / hook_cli.session_folder(session) / "spool.jsonl"
            if not spool.exists():
                continue
            for line in spool.read_bytes().splitlines():
                event = orjson.loads(line)
                assert event["run_id"] == run_id_of(session)
                assert not any(isinstance(v, float) and math.isnan(v) for v in event.values())
