"""run.started's `model` and `task` (docs/records.md, fields beyond SPEC 2) as each trace
format records them: the model where the format names it, the task as the requester's
first words to the agent. Inputs are written here in each format's documented form
(tests/test_import_formats.py's fixtures, with the fields that name a model added)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from outcomes.importers.derive import derive
from outcomes.importers.otlp import map_request
from outcomes.importers.registry import read_trace
from outcomes.importers.trace import MAX_TASK_CHARS, Message, Trace, cut_task
from outcomes.reducers.validate import parse_event
from tests.test_import_formats import FIXTURES, jsonl
from tests.test_otlp_support import Recorder


def started(tmp_path: Path, name: str, text: str) -> dict[str, Any]:
    path = tmp_path / name
    path.write_text(text)
    events = derive(read_trace(path), "run-1")
    first = next(e for e in events if e["type"] == "run.started")
    parse_event(first)  # the current rules accept it
    return first


def fixture(key: str) -> str:
    return FIXTURES[key][1]()


def claude_code_after_a_command() -> str:
    """A session that began with `/clear` (its command record and caveat) before the
    request."""
    rows = [json.loads(line) for line in fixture("claude-code-jsonl").splitlines()]
    base = {k: rows[0][k] for k in ("sessionId", "cwd", "version")}
    stamp = "2026-02-01T09:59:59.000Z"
    record = {
        **base,
        "type": "user",
        "timestamp": stamp,
        "message": {
            "role": "user",
            "content": "<command-name>/clear</command-name>\n<command-message>clear"
            "</command-message>\n<command-args></command-args>",
        },
    }
    output = {**record, "message": {"role": "user", "content": "<local-command-stdout>"}}
    return jsonl([record, output, *rows])


def mini_swe_agent(configured: bool) -> str:
    data = json.loads(fixture("mini-swe-agent"))
    if configured:
        data["info"]["config"] = {"model": {"model_name": "provider/model-q"}}
    else:
        for message in data["messages"]:
            if message["role"] == "assistant":
                message["extra"]["response"]["model"] = "model-q-2026"
    return json.dumps(data)


def openhands_v0(configured: bool) -> str:
    rows = [json.loads(line) for line in fixture("openhands-v0").splitlines() if line.strip()]
    if configured:
        rows[0]["metadata"] = {**rows[0].get("metadata", {}), "llm_config": {"model": "oh/m-1"}}
    else:
        for item in rows[0]["history"]:
            if item.get("source") == "agent":
                item["tool_call_metadata"] = {"model_response": {"model": "m-1-2026"}}
    return jsonl(rows)


def gemini_chat() -> str:
    data = json.loads(fixture("gemini-cli"))
    for message in data["messages"]:
        if message["type"] == "gemini":
            message["model"] = "gemini-q"
    return json.dumps(data)


def aider(header: str) -> str:
    lines = fixture("aider-history").split("\n")
    return "\n".join(
        [*lines[:2], "> Aider v0.85.2  ", header, "> Weak model: small-x  ", *lines[2:]]
    )


CASES: dict[str, tuple[str, Callable[[], str], str | None, str]] = {
    "claude-code": (
        "session.jsonl",
        claude_code_after_a_command,
        "m",
        "Add a greet() helper with a test.",
    ),
    "mini-swe-agent config": (
        "run.traj.json",
        lambda: mini_swe_agent(True),
        "provider/model-q",
        "Fix the rounding bug in pkg/num.py.",
    ),
    "mini-swe-agent response": (
        "run.traj.json",
        lambda: mini_swe_agent(False),
        "model-q-2026",
        "Fix the rounding bug in pkg/num.py.",
    ),
    "openhands v0 config": (
        "output.jsonl",
        lambda: openhands_v0(True),
        "oh/m-1",
        "Make the build pass.",
    ),
    "openhands v0 response": (
        "output.jsonl",
        lambda: openhands_v0(False),
        "m-1-2026",
        "Make the build pass.",
    ),
    # The agent-sdk's event list names no model: none is made up.
    "openhands agent-sdk": (
        "events.json",
        lambda: fixture("openhands-events"),
        None,
        "Run the tests.",
    ),
    "gemini chat": ("session-1.json", gemini_chat, "gemini-q", "Port it to Rust."),
    "gemini stream": ("stream.jsonl", lambda: fixture("gemini-stream"), "m", "Build the site."),
    "aider": (
        ".aider.chat.history.md",
        lambda: aider("> Main model: gpt-x with diff edit format, infinite output  "),
        "gpt-x",
        "add a readme",
    ),
    "aider, older header": (
        ".aider.chat.history.md",
        lambda: aider("> Model: gpt-y with whole edit format  "),
        "gpt-y",
        "add a readme",
    ),
    "aider, no header": (
        ".aider.chat.history.md",
        lambda: fixture("aider-history"),
        None,
        "add a readme",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_format_gives_run_started_its_model_and_task(tmp_path: Path, case: str) -> None:
    name, make, model, task = CASES[case]
    first = started(tmp_path, name, make())
    assert first.get("model") == model
    assert first["task"] == task
    if model is None:
        assert "model" not in first  # left out, never null or guessed


def test_a_task_is_one_line_cut_to_its_limit_and_never_invalid() -> None:
    assert (
        cut_task("  Fix it.\n\n\tThen\u200b run\u2028the tests.  ") == "Fix it. Then run the tests."
    )
    long = cut_task("word " * 2_000)
    assert len(long) == MAX_TASK_CHARS and long.endswith("…")
    trace = Trace("t", "agent", "p", (Message("user", "\u0007\n", None, "l1"),
                                       Message("user", "Second\nline", None, "l2")))  # fmt: skip
    first = derive(trace, "run-2")[0]
    assert first["type"] == "run.started" and first["task"] == "Second line"
    parse_event(first)


def test_a_live_trace_sends_run_started_once_with_the_task_the_next_step_gave() -> None:
    """The hook derives a growing trace (whole=False): run.started is held at a session's
    start until the next step, then stays the event it was when first sent."""
    from outcomes.importers.trace import Started

    early = Trace("t", "agent", "p", (Started("s", None),))
    later = Trace("t", "agent", "p", (Started("s", None), Message("user", "Do it", None, "u")))
    more = Trace("t", "agent", "p", (*later.steps, Message("user", "And more", None, "v")))
    assert derive(early, "r", whole=False) == []
    assert derive(later, "r", whole=False)[0] == derive(more, "r", whole=False)[0]
    assert derive(later, "r", whole=False)[0]["task"] == "Do it"
    assert derive(later, "r")[0]["task"] == "Do it"  # a finished trace: the whole request


def test_an_otlp_agent_span_names_its_model_and_request() -> None:
    recorder = Recorder()
    with recorder.agent(
        "Fix the retry bug\nin src/retry.py", "Done.", **{"gen_ai.request.model": "gpt-q"}
    ):
        pass
    events = map_request(recorder.request()).events
    first = next(e for e in events if e["type"] == "run.started")
    assert first["model"] == "gpt-q" and first["task"] == "Fix the retry bug in src/retry.py"
    parse_event(first)
    bare = Recorder()
    with bare.agent(None, "Done."):
        pass
    first = next(e for e in map_request(bare.request()).events if e["type"] == "run.started")
    assert "model" not in first and "task" not in first


def _hook_events(payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from outcomes.importers.claude_hooks import live_trace

    entries = [{"at": 1_765_000_000_000_000 + n, "payload": p} for n, p in enumerate(payloads)]
    return derive(live_trace("t.jsonl", entries), "run-h", whole=False)


def test_the_hook_holds_run_started_for_the_first_prompt_and_keeps_its_place() -> None:
    """The hook sees SessionStart (which may name the model) before the prompt: run.started
    waits for the next step, takes the prompt as its task, and keeps the start's id and
    time, so every later call derives the same event."""
    base = {"session_id": "s", "transcript_path": "t.jsonl", "cwd": "/w"}
    start = {**base, "hook_event_name": "SessionStart", "source": "startup", "model": "m-1"}
    prompt = {**base, "hook_event_name": "UserPromptSubmit", "prompt": "Fix the\nparser"}
    tool = {
        **base,
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_use_id": "t1",
        "tool_input": {"command": "ls"},
        "tool_response": {"stdout": "a", "stderr": ""},
    }
    assert [e for e in _hook_events([start]) if e["type"] == "run.started"] == []
    (second,) = [e for e in _hook_events([start, prompt]) if e["type"] == "run.started"]
    (third,) = [e for e in _hook_events([start, prompt, tool]) if e["type"] == "run.started"]
    assert second == third
    assert second["task"] == "Fix the parser" and second["model"] == "m-1"
    assert second["occurred_at"] == "2025-12-06T05:46:40.000000Z"  # the start's time
    parse_event(second)
    # No model named at the start: none is made up.
    (bare,) = [
        e for e in _hook_events([{**start, "model": None}, prompt]) if e["type"] == "run.started"
    ]
    assert "model" not in bare
