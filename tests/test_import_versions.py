"""Every format version each importer reads, one small trace per version written for these
tests in the form the agent's own writer produces (the 1.x/first forms are in
test_import_formats.py): mini-swe-agent 2.x (tool calls, text-based actions, the
Responses API), Gemini CLI's JSONL chat recording, OpenHands' current agent-sdk tools and
v0 history pairs, Claude Code's `--output-format stream-json` and newer content blocks;
tool steps an importer cannot read are reported as such; nesting past any limit is one
line, never a RecursionError.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from outcomes.importers.derive import derive
from outcomes.importers.registry import detect, read_trace
from outcomes.importers.trace import Message, ToolCall, Trace, TraceUnreadable
from outcomes.reducers.validate import parse_event
from tests.cli_support import outcomes

WORK = "/work/proj"


def calls(trace: Trace) -> list[ToolCall]:
    return [s for s in trace.steps if isinstance(s, ToolCall)]


def messages(trace: Trace, role: str) -> list[str]:
    return [s.text for s in trace.steps if isinstance(s, Message) and s.role == role]


def receipts(trace: Trace) -> list[tuple[str, str, int]]:
    return [
        (e["label"], e["result"], e["tests_executed"])
        for e in derive(trace, "r")
        if e["type"] == "verification.receipt"
    ]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def jsonl(rows: list[Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


# -- mini-swe-agent 2.x ------------------------------------------------------------------

PATCH = (
    "diff --git a/pkg/num.py b/pkg/num.py\nindex 1..2 100644\n--- a/pkg/num.py\n+++ b/pkg/num.py\n"
)


def _observation(code: int, out: str, t: float, **extra: Any) -> dict[str, Any]:
    """What 2.x's observation template renders, and the `extra` its formatter keeps."""
    return {
        "content": f"<returncode>{code}</returncode>\n<output>\n{out}</output>",
        "extra": {
            "raw_output": out,
            "returncode": code,
            "timestamp": t,
            "exception_info": "",
            **extra,
        },
    }


def msa_v2_toolcalls() -> str:
    t0 = 1767261600.0

    def turn(text: str, *commands: str, t: float) -> dict[str, Any]:
        ids = [f"call_{int(t)}_{i}" for i in range(len(commands))]
        return {
            "role": "assistant",
            "content": text,
            "tool_calls": [
                {
                    "id": cid,
                    "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": c})},
                }
                for cid, c in zip(ids, commands, strict=True)
            ],
            "extra": {
                "actions": [
                    {"command": c, "tool_call_id": cid}
                    for cid, c in zip(ids, commands, strict=True)
                ],
                "cost": 0.01,
                "timestamp": t,
            },
        }

    def tool(cid: str, code: int, out: str, t: float, **extra: Any) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": cid, **_observation(code, out, t, **extra)}

    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Please solve this issue: rounding in pkg/num.py"},
        turn("Install the test runner and look.", "pip install pytest", "ls pkg", t=t0 + 1),
        tool(f"call_{int(t0 + 1)}_0", 0, "Successfully installed pytest-8.3.4\n", t0 + 2),
        tool(f"call_{int(t0 + 1)}_1", 0, "num.py\n", t0 + 3),
        # a response without a tool call: the agent's format error, nothing ran
        {"role": "assistant", "content": "Let me think.", "extra": {"actions": []}},
        {
            "role": "user",
            "content": "Tool call error: No tool calls found in the response.",
            "extra": {"interrupt_type": "FormatError"},
        },
        turn("Run the tests.", "cd /testbed && pytest tests/test_num.py", t=t0 + 10),
        tool(f"call_{int(t0 + 10)}_0", 1, "==== 1 failed, 3 passed in 0.20s ====\n", t0 + 11),
        turn("A slow command.", "sleep 100", t=t0 + 20),
        tool(
            f"call_{int(t0 + 20)}_0",
            -1,
            "",
            t0 + 50,
            exception_info="An error occurred while executing the command: timed out",
            exception_type="TimeoutExpired",
        ),
        turn(
            "Fix and rerun.",
            "sed -i 's/round(/my_round(/' pkg/num.py && pytest tests/test_num.py",
            t=t0 + 60,
        ),
        tool(f"call_{int(t0 + 60)}_0", 0, "==== 4 passed in 0.18s ====\n", t0 + 61),
        turn(
            "The fix is in and the tests pass. Submitting.",
            "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached",
            t=t0 + 70,
        ),
        # Submitted is raised before the submit command's observation is written
        {
            "role": "exit",
            "content": PATCH,
            "extra": {"exit_status": "Submitted", "submission": PATCH},
        },
    ]
    return json.dumps(
        {
            "info": {
                "model_stats": {"instance_cost": 0.05, "api_calls": 6},
                "config": {
                    "agent": {"step_limit": 0},
                    "agent_type": "minisweagent.agents.default.DefaultAgent",
                    "model": {"model_name": "provider/model-x"},
                },
                "mini_version": "2.2.1",
                "exit_status": "Submitted",
                "submission": PATCH,
            },
            "messages": messages,
            "trajectory_format": "mini-swe-agent-1.1",
        },
        indent=2,
    )


def test_mini_swe_agent_2_tool_calls_map_every_step(tmp_path: Path) -> None:
    trace = read_trace(write(tmp_path, "run.traj.json", msa_v2_toolcalls()))
    assert trace.format == "mini-swe-agent"
    assert trace.agent == "mini-swe-agent 2.2.1 (provider/model-x)"
    assert not [s for s in trace.skipped if s.tool_step]
    got = [(c.command, c.exit_code, c.timed_out) for c in calls(trace)]
    assert got == [
        ("pip install pytest", 0, False),
        ("ls pkg", 0, False),
        ("cd /testbed && pytest tests/test_num.py", 1, False),
        ("sleep 100", None, True),
        ("sed -i 's/round(/my_round(/' pkg/num.py && pytest tests/test_num.py", 0, False),
        ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached", 0, False),
    ]
    # the exit message is the submit command's result; the submission is the final diff
    assert calls(trace)[-1].output == PATCH and trace.complete
    assert trace.final_inventory is not None
    assert [c.path for c in trace.final_inventory] == ["pkg/num.py"]
    assert calls(trace)[0].output == "Successfully installed pytest-8.3.4\n"
    assert calls(trace)[2].finished_at == 1767261611_000000
    assert messages(trace, "assistant")[-1] == "The fix is in and the tests pass. Submitting."
    assert "Tool call error" not in " ".join(messages(trace, "user"))
    assert receipts(trace) == [
        ("pytest tests/test_num.py", "fail", 4),
        ("pytest tests/test_num.py", "pass", 4),
    ]


def test_mini_swe_agent_2_text_based_and_json_observations(tmp_path: Path) -> None:
    """A text-based model (actions parsed from a ```bash block, observations as `user`
    messages) under a config whose observation template is a JSON object."""
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "Do the task."},
        {
            "role": "assistant",
            "content": "THOUGHT: test.\n\n```bash\nnpm test\n```",
            "extra": {"actions": [{"command": "npm test"}], "timestamp": 1767261600.0},
        },
        {
            "role": "user",
            "content": json.dumps(
                {"returncode": 1, "output": "Tests: 1 failed, 2 passed, 3 total"}
            ),
            "extra": {"raw_output": "Tests: 1 failed, 2 passed, 3 total", "returncode": 1},
        },
        # an observation whose `extra` was stripped: the rendered JSON still says it all
        {
            "role": "assistant",
            "content": "```bash\nnpm run lint\n```",
            "extra": {"actions": [{"command": "npm run lint"}]},
        },
        {
            "role": "user",
            "content": json.dumps({"returncode": 2, "output": "1 problem"}),
            "extra": {"returncode": 2},
        },
        {
            "role": "exit",
            "content": "LimitsExceeded",
            "extra": {"exit_status": "LimitsExceeded", "submission": ""},
        },
    ]
    data = {
        "info": {"mini_version": "2.0.0"},
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1.1",
    }
    trace = read_trace(write(tmp_path, "t.traj.json", json.dumps(data)))
    assert [(c.command, c.exit_code, c.output) for c in calls(trace)] == [
        ("npm test", 1, "Tests: 1 failed, 2 passed, 3 total"),
        ("npm run lint", 2, "1 problem"),
    ]
    assert not trace.skipped and trace.final_inventory is None


def test_mini_swe_agent_2_responses_api(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": "Do the task."},
        {
            "object": "response",
            "output": [
                {"type": "reasoning", "summary": []},
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "Listing."}],
                },
                {
                    "type": "function_call",
                    "call_id": "fc_1",
                    "name": "bash",
                    "arguments": '{"command": "ls"}',
                },
            ],
            "extra": {
                "actions": [{"command": "ls", "tool_call_id": "fc_1"}],
                "timestamp": 1767261600.0,
            },
        },
        {
            "type": "function_call_output",
            "call_id": "fc_1",
            "output": "<returncode>0</returncode>\n<output>\na\n</output>",
            "extra": {"raw_output": "a\n", "returncode": 0},
        },
    ]
    data = {
        "info": {"mini_version": "2.4.0"},
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1.1",
    }
    trace = read_trace(write(tmp_path, "r.traj.json", json.dumps(data)))
    assert [(c.call_id, c.command, c.exit_code, c.output) for c in calls(trace)] == [
        ("fc_1", "ls", 0, "a\n")
    ]
    assert messages_of(trace) == [("user", "Do the task."), ("assistant", "Listing.")]


def messages_of(trace: Trace) -> list[tuple[str, str]]:
    return [(s.role, s.text) for s in trace.steps if isinstance(s, Message)]


def test_mini_swe_agent_2_a_result_of_no_call_is_an_unread_tool_step(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": "Do it."},
        {
            "role": "assistant",
            "content": "x",
            "tool_calls": [{"id": "a", "function": {"name": "python", "arguments": "{}"}}],
        },
        {
            "role": "tool",
            "tool_call_id": "zzz",
            "content": "<returncode>0</returncode>",
            "extra": {"returncode": 0},
        },
    ]
    data = {"info": {"mini_version": "2.1.0"}, "messages": messages}
    trace = read_trace(write(tmp_path, "u.traj.json", json.dumps(data)))
    unread = [(s.where, s.kind) for s in trace.skipped if s.tool_step]
    assert unread == [("message 1", "tool call"), ("message 2", "tool result")]


# -- Gemini CLI JSONL chat recording (0.39 and later) -----------------------------------


def _fr(call_id: str, name: str, output: str) -> dict[str, Any]:
    return {"functionResponse": {"id": call_id, "name": name, "response": {"output": output}}}


def _wrapped(text: str) -> str:
    return f"<untrusted_context>\n{text}\n</untrusted_context>"


def gemini_jsonl() -> str:
    def ts(s: int) -> str:
        return f"2026-05-01T09:00:{s:02d}.000Z"

    lint_out = _wrapped(
        "Output: src/a.ts\n  3:1  error  no-unused-vars\n\n1 problem\n"
        "Exit Code: 1\nProcess Group PGID: 41"
    )
    build_out = _wrapped("Output: built in 1.2s\nProcess Group PGID: 42")
    call_lint = {
        "id": "c-lint",
        "name": "run_shell_command",
        "args": {"command": "npm run lint"},
        "status": "success",  # the shell tool reports success; its output says exit 1
        "timestamp": ts(5),
        "result": [_fr("c-lint", "run_shell_command", lint_out)],
    }
    call_build = {
        "id": "c-build",
        "name": "run_shell_command",
        "args": {"command": "npm run build"},
        "status": "success",
        "timestamp": ts(9),
        "result": None,  # the response is only in the user message that follows
    }
    call_write = {
        "id": "c-write",
        "name": "write_file",
        "args": {"file_path": f"{WORK}/src/b.ts", "content": "export const b = 1;\n"},
        "status": "success",
        "timestamp": ts(12),
        "result": [
            _fr(
                "c-write",
                "write_file",
                f"Successfully created and wrote to new file: {WORK}/src/b.ts.",
            )
        ],
    }
    g1 = {
        "id": "g1",
        "timestamp": ts(4),
        "type": "gemini",
        "content": "Linting first.",
        "model": "gemini-x",
    }
    rows: list[dict[str, Any]] = [
        {"sessionId": "s-9", "projectHash": "abc", "startTime": ts(0), "lastUpdated": ts(0)},
        {
            "id": "u1",
            "timestamp": ts(1),
            "type": "user",
            "content": [{"text": "Fix the lint error and build."}],
        },
        {"$set": {"lastUpdated": ts(1)}},
        # a synthetic model turn: a thought part and the call it made, no words
        {
            "id": "g0",
            "timestamp": ts(2),
            "type": "gemini",
            "content": [
                {"text": "Planning quietly.", "thought": True},
                {"functionCall": {"name": "read_file", "args": {"file_path": "a"}}},
            ],
        },
        g1,
        {"$set": {"lastUpdated": ts(4)}},
        {**g1, "toolCalls": [call_lint]},  # written again with its tool call
        {
            "id": "u2",
            "timestamp": ts(6),
            "type": "user",
            "content": [_fr("c-lint", "run_shell_command", lint_out)],
        },
        {
            "id": "g2",
            "timestamp": ts(8),
            "type": "gemini",
            "content": "",
            "toolCalls": [call_build],
        },
        {
            "id": "u3",
            "timestamp": ts(10),
            "type": "user",
            "content": [_fr("c-build", "run_shell_command", build_out)],
        },
        {"id": "g3", "timestamp": ts(11), "type": "gemini", "content": "An idea I took back."},
        {"$rewindTo": "g3"},
        {
            "id": "g4",
            "timestamp": ts(12),
            "type": "gemini",
            "content": "",
            "toolCalls": [call_write],
        },
        {
            "id": "u4",
            "timestamp": ts(13),
            "type": "user",
            "content": [_fr("c-write", "write_file", "ok")],
        },
        {
            "id": "g5",
            "timestamp": ts(14),
            "type": "gemini",
            "content": "Lint still fails; the build passes.",
        },
        {"$set": {"lastUpdated": ts(15), "summary": "lint and build"}},
    ]
    return jsonl(rows)


def test_gemini_jsonl_recording_is_detected_and_read(tmp_path: Path) -> None:
    path = write(tmp_path, "session-2026-05-01T09-00-s9.jsonl", gemini_jsonl())
    trace = read_trace(path)
    assert trace.format == "gemini-cli"
    got = [(c.call_id, c.command or c.path, c.exit_code, c.failed) for c in calls(trace)]
    assert got == [
        ("c-lint", "npm run lint", 1, False),  # Exit Code: 1 wins over status success
        ("c-build", "npm run build", 0, False),  # no Exit Code line: it exited 0
        ("c-write", f"{WORK}/src/b.ts", None, False),
    ]
    assert calls(trace)[1].output == "built in 1.2s"  # from the functionResponse part
    assert calls(trace)[2].created is True
    # each message once, tool responses are no user words, the rewound one is gone
    assert messages_of(trace) == [
        ("user", "Fix the lint error and build."),
        ("assistant", "Linting first."),
        ("assistant", "Lint still fails; the build passes."),
    ]
    assert trace.started_at == 1777626000_000000
    assert [s.reason for s in trace.skipped] == ["1 message(s) rewound out of the conversation"]
    assert not [s for s in trace.skipped if s.tool_step]


def test_gemini_jsonl_checkpoint_replaces_the_messages(tmp_path: Path) -> None:
    rows = [
        {"sessionId": "s", "projectHash": "p", "startTime": "2026-05-01T09:00:00Z"},
        {"id": "a", "timestamp": "2026-05-01T09:00:01Z", "type": "user", "content": "old"},
        {
            "$set": {
                "messages": [
                    {
                        "id": "b",
                        "timestamp": "2026-05-01T09:00:02Z",
                        "type": "user",
                        "content": "new",
                    }
                ]
            }
        },
        {"id": "c", "timestamp": "2026-05-01T09:00:03Z", "type": "gemini", "content": "done"},
    ]
    trace = read_trace(write(tmp_path, "session-x.jsonl", jsonl(rows)))
    assert messages_of(trace) == [("user", "new"), ("assistant", "done")]


def _early(command: str, output: str, error: str, code: str) -> str:
    """A shell result in the form before about 0.2x: every field, `(none)` when empty."""
    return "\n".join(
        [
            f"Command: {command}",
            "Directory: (root)",
            f"Output: {output}",
            f"Error: {error}",
            f"Exit Code: {code}",
            "Signal: (none)",
            "Background PIDs: (none)",
            "Process Group PGID: 7",
        ]
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (_early("ls", "(empty)", "(none)", "0"), ("", 0)),
        (_early("make", "boom", "(none)", "2"), ("boom", 2)),
        (_early("x", "(empty)", "spawn x ENOENT", "(none)"), ("", None)),
        # later: only the fields that apply, wrapped; no Exit Code line means 0
        (_wrapped("Output: 3 passed\nProcess Group PGID: 8"), ("3 passed", 0)),
        (_wrapped("Output: FAIL\nExit Code: 1\nProcess Group PGID: 8"), ("FAIL", 1)),
        (_wrapped("Output: (empty)\nSignal: SIGTERM\nProcess Group PGID: 8"), ("", None)),
        ("Command moved to background (PID: 12). Output hidden. Press Ctrl+B to view.", None),
    ],
)
def test_gemini_shell_result_forms(text: str, expected: tuple[str, int | None] | None) -> None:
    from outcomes.importers.gemini_cli import shell_result

    output, code, timed_out = shell_result(text)
    if expected is None:
        assert code is None and not timed_out
    else:
        assert (output, code) == expected
    assert shell_result(
        "Command was automatically cancelled because it exceeded the timeout of 5.0 minutes"
        " without output. There was no output before it was cancelled."
    )[1:] == (None, True)


# -- nesting without bound ---------------------------------------------------------------

DEEP = 100_000


def _deep_list() -> str:
    return "[" * DEEP + "]" * DEEP


def _deep_object(key: str) -> str:
    return ('{"' + key + '": ') * DEEP + "1" + "}" * DEEP


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("deep.json", _deep_list()),
        (
            "deep.traj.json",
            '{"trajectory_format": "mini-swe-agent-1.1", "messages": ' + _deep_list() + "}",
        ),
        (
            "session-deep.json",
            '{"sessionId": "s", "projectHash": "p", "messages": ' + _deep_list() + "}",
        ),
        ("events.json", '[{"kind": "ActionEvent", "action": ' + _deep_object("a") + "}]"),
    ],
)
def test_a_document_nested_past_any_limit_is_one_line(tmp_path: Path, name: str, text: str) -> None:
    """Detection and every whole-document reader: a TraceUnreadable line, never a
    RecursionError."""
    path = write(tmp_path, name, text)
    for fmt in (
        None,
        "mini-swe-agent",
        "gemini-cli",
        "openhands-events",
        "claude-code-jsonl",
        "aider-history",
    ):
        try:
            read_trace(path, fmt)
        except TraceUnreadable as exc:
            assert "\n" not in str(exc)
        # a reader may also read the rest of the file and skip the record (JSONL)


def test_a_jsonl_line_nested_too_deeply_is_skipped_and_the_rest_kept(tmp_path: Path) -> None:
    base = {"sessionId": "s-1", "cwd": WORK, "version": "2.1.0"}
    good = {
        **base,
        "type": "user",
        "timestamp": "2026-02-01T10:00:01Z",
        "message": {"role": "user", "content": "Hi."},
    }
    answer = {
        **base,
        "type": "assistant",
        "timestamp": "2026-02-01T10:00:02Z",
        "message": {
            "id": "m",
            "role": "assistant",
            "content": [{"type": "text", "text": "Hello."}],
        },
    }
    text = json.dumps(good) + "\n" + _deep_object("message") + "\n" + json.dumps(answer) + "\n"
    path = write(tmp_path, "s.jsonl", text)
    assert detect(path, text).name == "claude-code-jsonl"
    trace = read_trace(path)
    assert messages_of(trace) == [("user", "Hi."), ("assistant", "Hello.")]
    assert [s.where for s in trace.skipped] == ["line 2"]
    assert "nested too deeply" in trace.skipped[0].reason


def test_nested_arguments_are_kept_only_to_a_bounded_depth(tmp_path: Path) -> None:
    """A value a little under the parser's limit parses; what a reader keeps of it is cut
    at MAX_NESTING, so nothing downstream follows it without bound."""
    from outcomes.importers.base import MAX_NESTING

    nested: Any = "x"
    for _ in range(400):
        nested = {"k": nested}
    rows = [
        {"type": "init", "timestamp": "2026-05-01T09:00:00Z", "session_id": "s", "model": "m"},
        {"type": "message", "timestamp": "2026-05-01T09:00:01Z", "role": "user", "content": "go"},
        {
            "type": "tool_use",
            "timestamp": "2026-05-01T09:00:02Z",
            "tool_name": "mcp_x",
            "tool_id": "t1",
            "parameters": {"deep": nested},
        },
        {
            "type": "tool_result",
            "timestamp": "2026-05-01T09:00:03Z",
            "tool_id": "t1",
            "status": "success",
            "output": "ok",
        },
    ]
    trace = read_trace(write(tmp_path, "stream.jsonl", jsonl(rows)))
    depth, value = 0, calls(trace)[0].arguments
    while isinstance(value, dict):
        depth, value = depth + 1, next(iter(value.values()))
    assert depth == MAX_NESTING and value == "…"
    derive(trace, "r")  # and the derivation reads it


# -- mini-swe-agent 2.x, interactive: an action not executed ----------------------------


def test_mini_swe_agent_2_interactive_submit_and_unexecuted_actions(tmp_path: Path) -> None:
    """The interactive agent writes an observation for every action, padding those it did
    not run (`action was not executed`); the submit command is one of those when it
    raised Submitted, and the exit message is its result."""
    submit = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
    not_run = {"raw_output": "", "returncode": -1, "exception_info": "action was not executed"}
    messages = [
        {"role": "user", "content": "Tidy up."},
        {
            "role": "assistant",
            "content": "Both at once.",
            "extra": {
                "actions": [
                    {"command": "rm -rf build", "tool_call_id": "a"},
                    {"command": "make", "tool_call_id": "b"},
                ]
            },
        },
        {
            "role": "tool",
            "tool_call_id": "a",
            "content": "<returncode>0</returncode>",
            "extra": {"raw_output": "", "returncode": 0},
        },
        {"role": "tool", "tool_call_id": "b", "content": "not run", "extra": not_run},
        {
            "role": "assistant",
            "content": "Done.",
            "extra": {"actions": [{"command": submit, "tool_call_id": "c"}]},
        },
        {"role": "tool", "tool_call_id": "c", "content": "not run", "extra": not_run},
        {"role": "exit", "content": "", "extra": {"exit_status": "Submitted", "submission": ""}},
    ]
    data = {"info": {"mini_version": "2.3.0"}, "messages": messages}
    trace = read_trace(write(tmp_path, "i.traj.json", json.dumps(data)))
    assert [(c.command, c.exit_code, c.output) for c in calls(trace)] == [
        ("rm -rf build", 0, ""),
        (submit, 0, ""),
    ]
    assert [(s.where, s.tool_step) for s in trace.skipped] == [("message 1", False)]
    assert trace.complete


# -- Claude Code --------------------------------------------------------------------------


def claude_stream() -> str:
    sid = {"session_id": "5e55-10n"}

    def assistant(mid: str, *blocks: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "assistant",
            "message": {
                "id": mid,
                "role": "assistant",
                "model": "claude-x",
                "content": list(blocks),
            },
            "parent_tool_use_id": None,
            **sid,
        }

    def result(cid: str, text: str, error: bool = False, **extra: Any) -> dict[str, Any]:
        block = {"type": "tool_result", "tool_use_id": cid, "content": text, "is_error": error}
        return {
            "type": "user",
            "message": {"role": "user", "content": [block]},
            "parent_tool_use_id": None,
            **sid,
            **extra,
        }

    rows = [
        {
            "type": "system",
            "subtype": "init",
            "cwd": WORK,
            "model": "claude-x",
            "tools": ["Bash"],
            "claude_code_version": "2.1.80",
            **sid,
        },
        assistant(
            "m1",
            {"type": "text", "text": "Running the tests."},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest -q"}},
        ),
        result("t1", "Exit code 1\n1 failed, 2 passed in 0.1s", True),
        # a subagent's work: its call counts, its words do not
        {
            **assistant(
                "m2",
                {"type": "text", "text": "subagent musing"},
                {
                    "type": "tool_use",
                    "id": "t2",
                    "name": "Edit",
                    "input": {"file_path": f"{WORK}/a.py", "old_string": "x", "new_string": "y"},
                },
            ),
            "parent_tool_use_id": "task-1",
        },
        {**result("t2", "The file has been updated."), "parent_tool_use_id": "task-1"},
        assistant(
            "m3",
            {
                "type": "server_tool_use",
                "id": "srv1",
                "name": "web_search",
                "input": {"query": "pytest flag"},
            },
        ),
        assistant(
            "m3",
            {
                "type": "web_search_tool_result",
                "tool_use_id": "srv1",
                "content": [
                    {"type": "web_search_result", "title": "t", "url": "https://example.org"}
                ],
            },
        ),
        assistant(
            "m4",
            {"type": "tool_use", "id": "t3", "name": "Bash", "input": {"command": "pytest -q"}},
        ),
        result(
            "t3",
            "3 passed in 0.1s",
            tool_use_result={"stdout": "3 passed in 0.1s", "stderr": "", "interrupted": False},
        ),
        assistant("m5", {"type": "text", "text": "All 3 tests pass."}),
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": "All 3 tests pass.",
            "num_turns": 5,
            **sid,
        },
    ]
    return jsonl(rows)


def test_claude_code_stream_json(tmp_path: Path) -> None:
    path = write(tmp_path, "run.jsonl", claude_stream())
    trace = read_trace(path)
    assert trace.format == "claude-code-jsonl" and trace.root == WORK
    assert trace.agent == "claude-code 2.1.80 (claude-x)"
    assert [(c.call_id, c.kind, c.exit_code) for c in calls(trace)] == [
        ("t1", "shell", 1),
        ("t2", "edit", None),
        ("srv1", "read", None),
        ("t3", "shell", 0),
    ]
    assert calls(trace)[3].output == "3 passed in 0.1s"
    assert "subagent musing" not in " ".join(messages(trace, "assistant"))
    final = [s for s in trace.steps if isinstance(s, Message) and s.final]
    assert [m.text for m in final] == ["All 3 tests pass."]
    assert not trace.skipped
    assert receipts(trace) == [("pytest -q", "fail", 3), ("pytest -q", "pass", 3)]


def test_claude_code_unknown_tool_blocks_are_unread_tool_steps(tmp_path: Path) -> None:
    base = {
        "sessionId": "s",
        "cwd": WORK,
        "version": "2.1.100",
        "timestamp": "2026-03-01T10:00:00Z",
    }
    rows = [
        {**base, "type": "user", "message": {"role": "user", "content": "Go."}},
        {
            **base,
            "type": "assistant",
            "message": {
                "id": "m",
                "role": "assistant",
                "content": [{"type": "future_tool_use", "id": "f1"}],
            },
        },
        {
            **base,
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "gone", "content": "x"}],
            },
        },
        {
            **base,
            "type": "assistant",
            "message": {
                "id": "m2",
                "role": "assistant",
                "content": [{"type": "sparkle", "x": 1}, {"type": "document", "source": {}}],
            },
        },
        {**base, "type": "progress", "data": {"type": "bash_progress", "output": "..."}},
    ]
    trace = read_trace(write(tmp_path, "s.jsonl", jsonl(rows)))
    assert [(s.where, s.tool_step, s.kind) for s in trace.skipped] == [
        ("line 2", True, "future_tool_use"),
        ("line 3", True, "tool_result"),
        ("line 4", False, ""),
    ]


def test_claude_code_subagent_progress_lines_carry_its_tool_calls(tmp_path: Path) -> None:
    base = {"sessionId": "s", "cwd": WORK, "version": "2.1.30", "timestamp": "2026-03-01T10:00:00Z"}
    inner_call = {
        "type": "assistant",
        "timestamp": "2026-03-01T10:00:05Z",
        "message": {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "sub1",
                    "name": "Write",
                    "input": {"file_path": f"{WORK}/n.txt", "content": "n"},
                }
            ],
        },
    }
    inner_result = {
        "type": "user",
        "timestamp": "2026-03-01T10:00:06Z",
        "message": {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "sub1",
                    "content": "File created successfully",
                }
            ],
        },
    }
    rows = [
        {**base, "type": "user", "message": {"role": "user", "content": "Go."}},
        {**base, "type": "progress", "data": {"type": "agent_progress", "message": inner_call}},
        {
            **base,
            "type": "progress",
            "data": {"type": "agent_progress", "message": inner_call},
        },  # again
        {**base, "type": "progress", "data": {"type": "agent_progress", "message": inner_result}},
        {
            **base,
            "type": "assistant",
            "message": {
                "id": "m",
                "role": "assistant",
                "content": [{"type": "text", "text": "Wrote n.txt."}],
            },
        },
    ]
    trace = read_trace(write(tmp_path, "p.jsonl", jsonl(rows)))
    assert [(c.call_id, c.kind, c.path, c.output) for c in calls(trace)] == [
        ("sub1", "write", f"{WORK}/n.txt", "File created successfully")
    ]
    assert messages_of(trace) == [("user", "Go."), ("assistant", "Wrote n.txt.")]


# -- OpenHands ----------------------------------------------------------------------------


def openhands_sdk_current() -> str:
    t = "2026-04-01T08:00:{:02d}"

    def action(i: int, eid: str, cid: str, tool: str, act: dict[str, Any] | None) -> dict[str, Any]:
        return {
            "kind": "ActionEvent",
            "id": eid,
            "timestamp": t.format(i),
            "source": "agent",
            "tool_name": tool,
            "tool_call_id": cid,
            "action": act,
            "thought": [],
        }

    def observation(i: int, eid: str, cid: str, tool: str, obs: dict[str, Any]) -> dict[str, Any]:
        return {
            "kind": "ObservationEvent",
            "id": f"o-{eid}",
            "timestamp": t.format(i),
            "source": "environment",
            "tool_name": tool,
            "tool_call_id": cid,
            "action_id": eid,
            "observation": obs,
        }

    def text(s: str) -> list[dict[str, Any]]:
        return [{"type": "text", "text": s}]

    patch = (
        "*** Begin Patch\n*** Add File: docs/NEW.md\n+hello\n"
        "*** Update File: src/app.py\n@@\n-a\n+b\n*** End Patch"
    )
    events = [
        {
            "kind": "MessageEvent",
            "id": "m0",
            "timestamp": t.format(0),
            "source": "user",
            "llm_message": {"role": "user", "content": text("Make the build pass.")},
        },
        action(
            1,
            "a1",
            "c1",
            "terminal",
            {"kind": "TerminalAction", "command": "make build", "is_input": False},
        ),
        observation(
            2,
            "a1",
            "c1",
            "terminal",
            {
                "kind": "TerminalObservation",
                "content": text("error: x"),
                "command": "make build",
                "exit_code": 2,
                "timeout": False,
                "metadata": {"exit_code": 2, "working_dir": WORK},
            },
        ),
        action(3, "a2", "c2", "apply_patch", {"kind": "ApplyPatchAction", "patch": patch}),
        observation(
            4,
            "a2",
            "c2",
            "apply_patch",
            {"kind": "ApplyPatchObservation", "content": text("Done!"), "is_error": False},
        ),
        action(
            5,
            "a3",
            "c3",
            "write_file",
            {"kind": "WriteFileAction", "file_path": f"{WORK}/notes.txt", "content": "n"},
        ),
        observation(
            6,
            "a3",
            "c3",
            "write_file",
            {
                "kind": "WriteFileObservation",
                "content": text("ok"),
                "is_error": False,
                "is_new_file": True,
            },
        ),
        action(7, "a4", "c4", "terminal", None),  # a call the model garbled: nothing ran
        {
            "kind": "AgentErrorEvent",
            "id": "e4",
            "timestamp": t.format(8),
            "source": "agent",
            "tool_name": "terminal",
            "tool_call_id": "c4",
            "error": "invalid arguments",
        },
        {
            "kind": "ACPToolCallEvent",
            "id": "x1",
            "timestamp": t.format(9),
            "source": "agent",
            "tool_call_id": "acp-1",
            "title": "npm test",
            "tool_kind": "execute",
            "status": "in_progress",
            "raw_input": {"command": "npm test"},
        },
        {
            "kind": "ACPToolCallEvent",
            "id": "x2",
            "timestamp": t.format(10),
            "source": "agent",
            "tool_call_id": "acp-1",
            "title": "npm test",
            "tool_kind": "execute",
            "status": "failed",
            "raw_input": {"command": "npm test"},
            "raw_output": "1 failing",
            "is_error": True,
        },
        {
            "kind": "ConversationStateUpdateEvent",
            "id": "s1",
            "timestamp": t.format(11),
            "source": "environment",
            "key": "execution_status",
            "value": "finished",
        },
        action(
            12, "a5", "c5", "finish", {"kind": "FinishAction", "message": "The build still fails."}
        ),
    ]
    return json.dumps(events)


def test_openhands_sdk_current_tools(tmp_path: Path) -> None:
    trace = read_trace(write(tmp_path, "events.json", openhands_sdk_current()))
    assert trace.format == "openhands-events" and trace.root == WORK
    got = [(c.call_id, c.kind, c.command or c.path, c.exit_code, c.failed) for c in calls(trace)]
    assert got == [
        ("c1", "shell", "make build", 2, None),
        ("c2", "other", None, None, False),
        ("c3", "write", f"{WORK}/notes.txt", None, False),
        ("acp-1", "shell", "npm test", None, True),
    ]
    assert calls(trace)[0].output == "error: x" and calls(trace)[2].created is True
    changes = [(s.path, s.change) for s in trace.steps if type(s).__name__ == "FileChange"]
    assert changes == [("docs/NEW.md", "added"), ("src/app.py", "modified")]
    assert not [s for s in trace.skipped if s.tool_step]
    assert messages_of(trace)[-1] == ("assistant", "The build still fails.")


def test_openhands_v0_history_pairs(tmp_path: Path) -> None:
    run = {
        "id": 2,
        "source": "agent",
        "action": "run",
        "args": {"command": "pytest -q"},
        "timestamp": "2026-04-01T08:00:01",
    }
    out = {
        "id": 3,
        "source": "agent",
        "observation": "run",
        "content": "2 passed in 0.1s",
        "extras": {"command": "pytest -q", "metadata": {"exit_code": 0}},
    }
    write_action = {
        "id": 4,
        "source": "agent",
        "action": "edit",
        "args": {"path": "/w/a.py", "command": "create", "file_text": "x"},
    }
    write_obs = {
        "observation": "edit",
        "content": "File created successfully at: /w/a.py",
        "extras": {},
    }
    output = {
        "instance_id": "i-1",
        "instruction": "Fix it.",
        "history": [[run, out], [write_action, write_obs]],
        "metadata": {"agent_class": "CodeActAgent"},
    }
    trace = read_trace(write(tmp_path, "output.jsonl", json.dumps(output) + "\n"))
    assert [(c.command or c.path, c.exit_code, c.output) for c in calls(trace)] == [
        ("pytest -q", 0, "2 passed in 0.1s"),
        ("/w/a.py", None, "File created successfully at: /w/a.py"),
    ]
    assert not trace.skipped


# -- aider --------------------------------------------------------------------------------


def test_aider_version_and_commands_the_user_typed(tmp_path: Path) -> None:
    history = "\n".join(
        [
            "",
            "# aider chat started at 2026-04-02 10:00:00",
            "",
            "> Aider v0.86.1  ",
            "> Main model: some-model with diff edit format  ",
            "",
            "#### /run pytest -q  ",
            "",
            "> Add 0.1k tokens of command output to the chat? (Y)es/(N)o [Yes]: n  ",
            "",
            "#### Make the failing test pass.  ",
            "#### !not a command: the second line of a message  ",
            "",
            "I will fix it.",
            "",
            "> Applied edit to calc.py  ",
            "> Commit 1a2b3c4 fix: calc  ",
            "",
            "#### !git status  ",
            "",
        ]
    )
    trace = read_trace(write(tmp_path, ".aider.chat.history.md", history))
    assert trace.agent == "aider 0.86.1 (1 sessions)"
    shells = [(c.tool, c.command, c.output, c.exit_code) for c in calls(trace) if c.kind == "shell"]
    assert shells == [("user-run", "pytest -q", None, None), ("user-run", "git status", None, None)]
    assert messages(trace, "user") == [
        "Make the failing test pass.\n!not a command: the second line of a message"
    ]


# -- the whole path: every new form imports to valid events that replay ------------------

NEW_FORMS = {
    "mini-swe-agent 2.x": ("run.traj.json", msa_v2_toolcalls, "mini-swe-agent"),
    "gemini-cli jsonl": ("session-1.jsonl", gemini_jsonl, "gemini-cli"),
    "claude-code stream-json": ("stream.jsonl", claude_stream, "claude-code-jsonl"),
    "openhands agent-sdk current": ("events.json", openhands_sdk_current, "openhands-events"),
}


@pytest.mark.parametrize("key", sorted(NEW_FORMS))
def test_each_new_form_imports_and_replays_without_a_dead_letter(tmp_path: Path, key: str) -> None:
    name, make, fmt = NEW_FORMS[key]
    trace = write(tmp_path, name, make())
    proc = outcomes("import", str(trace), "--run-id", "t-1")
    assert proc.returncode == 0, proc.stderr
    events = [orjson.loads(line) for line in proc.stdout.splitlines()]
    for event in events:
        parse_event(event)
    assert all(e["source"].startswith(f"import:{fmt}:{name}#") for e in events)
    assert any(e["type"] == "tool.finished" for e in events)
    out = write(tmp_path, "events.jsonl", proc.stdout)
    replay = outcomes("replay", str(out))
    assert replay.returncode == 0, replay.stderr
    records = [orjson.loads(line) for line in replay.stdout.splitlines()]
    assert not [r for r in records if r["record"] == "dead_letter"]


# -- detection from a file's ends ---------------------------------------------------------


def test_a_format_whose_mark_closes_the_file_is_found_from_its_end(tmp_path: Path) -> None:
    """A mini-swe-agent trajectory written without `info` first: nothing in its first
    256 KiB names the format, `trajectory_format` at its end does."""
    from outcomes.importers.registry import detect_file

    filler = [{"role": "user", "content": "x" * 1000} for _ in range(400)]
    data = {"messages": [{"role": "user", "content": "Do it."}, *filler]}
    text = json.dumps(data)[:-1] + ', "trajectory_format": "mini-swe-agent-1.1"}'
    path = write(tmp_path, "late.traj.json", text)
    assert len(text) > 300_000
    assert detect_file(path).name == "mini-swe-agent"
    assert read_trace(path).format == "mini-swe-agent"


def test_only_regular_files_are_read(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    for fmt in (None, "claude-code-jsonl"):
        with pytest.raises(TraceUnreadable, match="not a regular file"):
            read_trace(fifo, fmt)
    with pytest.raises(TraceUnreadable, match="not a regular file"):
        read_trace(Path("/dev/zero"))


def test_mini_swe_agent_1_0_without_marks_and_its_default_template(tmp_path: Path) -> None:
    """1.0 saved neither `trajectory_format` nor `mini_version`, and its default
    observation template printed the result's dict."""
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "Your task: count files."},
        {"role": "assistant", "content": "```bash\nls | wc -l\n```"},
        {"role": "user", "content": "Observation: {'output': '3\\n', 'returncode': 0}"},
        {"role": "assistant", "content": "```bash\nfalse\n```"},
        {"role": "user", "content": "Observation: {'output': '', 'returncode': 1}"},
        {"role": "assistant", "content": "```bash\nsleep 999\n```"},
        {
            "role": "user",
            "content": "The last command <command>sleep 999</command> timed out and has been"
            " killed.\nThe output of the command was:\n<output>\n\n</output>\nPlease try"
            " another command and make sure to avoid those requiring interactive input.",
        },
    ]
    data = {
        "info": {
            "exit_status": "LimitsExceeded",
            "submission": "",
            "model_stats": {"instance_cost": 0.0, "api_calls": 2},
        },
        "messages": messages,
    }
    trace = read_trace(write(tmp_path, "old.json", json.dumps(data, indent=2)))
    assert trace.format == "mini-swe-agent"
    assert [(c.command, c.exit_code, c.timed_out) for c in calls(trace)] == [
        ("ls | wc -l", 0, False),
        ("false", 1, False),
        ("sleep 999", None, True),
    ]


def test_gemini_chat_save_checkpoint(tmp_path: Path) -> None:
    shell = "Output: 1 failed, 2 passed\nExit Code: 1\nProcess Group PGID: 5"
    history = [
        {"role": "user", "parts": [{"text": "Run the tests."}]},
        {
            "role": "model",
            "parts": [
                {"text": "Running them.", "thought": False},
                {"functionCall": {"name": "run_shell_command", "args": {"command": "npm test"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "run_shell_command", "response": {"output": shell}}}
            ],
        },
        {"role": "model", "parts": [{"text": "One test fails."}]},
    ]
    for document in ({"history": history, "authType": "oauth-personal"}, history):
        path = write(tmp_path, "checkpoint-t.json", json.dumps(document, indent=2))
        trace = read_trace(path)
        assert trace.format == "gemini-cli" and trace.agent == "gemini-cli checkpoint"
        assert [(c.command, c.exit_code, c.output) for c in calls(trace)] == [
            ("npm test", 1, "1 failed, 2 passed")
        ]
        assert messages_of(trace) == [
            ("user", "Run the tests."),
            ("assistant", "Running them."),
            ("assistant", "One test fails."),
        ]
        assert trace.complete and not trace.skipped


# -- values of the wrong type -------------------------------------------------------------

_ODD: list[Any] = [None, 1, -1, 2.5, "", "x", [], {}, [1, "a"], {"a": [None]}, True, 10**30]


def _mutated(value: Any, rnd: Any, share: float) -> Any:
    if rnd.random() < share:
        return rnd.choice(_ODD)
    if isinstance(value, dict):
        return {k: _mutated(v, rnd, share) for k, v in value.items()}
    if isinstance(value, list):
        return [_mutated(v, rnd, share) for v in value]
    return value


@pytest.mark.parametrize(
    "make",
    [msa_v2_toolcalls, gemini_jsonl, claude_stream, openhands_sdk_current],
    ids=["mini-swe-agent", "gemini-cli", "claude-code", "openhands"],
)
def test_a_value_of_the_wrong_type_is_a_skipped_record_or_one_line(make: Any) -> None:
    """Any field replaced by a value of another type (seeded, 40 variants per form): each
    reader either reads the file, reporting what it skipped, or refuses it with one
    TraceUnreadable line — never a TypeError from deep inside."""
    import random

    from outcomes.importers.registry import IMPORTERS

    rnd = random.Random(20261207)
    text = make()
    try:
        documents, lines = [json.loads(text)], False
    except ValueError:
        documents, lines = [json.loads(x) for x in text.splitlines() if x.strip()], True
    for _ in range(40):
        share = rnd.choice([0.02, 0.05, 0.15])
        changed = [_mutated(d, rnd, share) for d in documents]
        variant = jsonl(changed) if lines else json.dumps(changed[0])
        for importer in IMPORTERS.values():
            try:
                derive(importer.read(Path("variant"), variant), "r")
            except TraceUnreadable as exc:
                assert "\n" not in str(exc)


def test_gemini_stream_shell_status_from_what_the_tool_displays(tmp_path: Path) -> None:
    """stream-json's `output` is the shell tool's display: the output (no status), or for
    a command that printed nothing `Command exited with code: N`, or nothing for exit 0."""

    def pair(n: int, command: str, output: str | None, status: str = "success") -> list[Any]:
        result: dict[str, Any] = {"type": "tool_result", "tool_id": f"t{n}", "status": status}
        if output is not None:
            result["output"] = output
        use = {
            "type": "tool_use",
            "tool_name": "run_shell_command",
            "tool_id": f"t{n}",
            "parameters": {"command": command},
        }
        return [use, result]

    rows = [
        {"type": "init", "session_id": "s", "model": "m"},
        {"type": "message", "role": "user", "content": "lint it"},
        *pair(1, "npm run lint", ""),
        *pair(2, "npm run typecheck", "Command exited with code: 2"),
        *pair(3, "npm test", "Tests: 3 passed"),
        *pair(4, "npm run build", None),
        *pair(5, "sleep 9", "Command terminated by signal: SIGTERM"),
    ]
    trace = read_trace(write(tmp_path, "stream.jsonl", jsonl(rows)))
    assert [(c.command, c.exit_code) for c in calls(trace)] == [
        ("npm run lint", 0),
        ("npm run typecheck", 2),
        ("npm test", None),
        ("npm run build", None),
        ("sleep 9", None),
    ]


def test_claude_code_a_compaction_summary_is_not_the_request(tmp_path: Path) -> None:
    base = {"sessionId": "s", "cwd": WORK, "version": "2.1.90", "timestamp": "2026-03-01T10:00:00Z"}
    summary = "This session is being continued from a previous conversation. Summary: …"
    rows = [
        {
            **base,
            "type": "user",
            "isCompactSummary": True,
            "message": {"role": "user", "content": summary},
        },
        {
            **base,
            "type": "user",
            "message": {"role": "user", "content": [{"type": "text", "text": "Now add docs."}]},
        },
    ]
    trace = read_trace(write(tmp_path, "c.jsonl", jsonl(rows)))
    assert messages(trace, "user") == ["Now add docs."]
