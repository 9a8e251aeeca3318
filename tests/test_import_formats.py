"""`outcomes import` on one small trace of each format, written for these tests: the
format is detected, every event is valid and replays without a dead letter, and the
account says what the trace shows and no more (checks from the runner's summary or exit
status, the workspace inventory against the base, effects with the state their output
settles, the first request as the goal and the last assistant message as the narrative).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

from outcomes.importers.derive import derive
from outcomes.importers.registry import read_trace
from outcomes.reducers.validate import parse_event
from tests.cli_support import outcomes

WORK = "/work/proj"


def jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def claude_code() -> str:
    base = {"sessionId": "s-1", "cwd": WORK, "version": "2.1.0"}

    def user(content: object, t: int, **extra: Any) -> dict[str, Any]:
        return {
            **base,
            "type": "user",
            "timestamp": f"2026-02-01T10:00:{t:02d}.000Z",
            "message": {"role": "user", "content": content},
            **extra,
        }

    def assistant(block: dict[str, Any], t: int, mid: str) -> dict[str, Any]:
        return {
            **base,
            "type": "assistant",
            "timestamp": f"2026-02-01T10:00:{t:02d}.000Z",
            "message": {"id": mid, "role": "assistant", "model": "m", "content": [block]},
        }

    def call(cid: str, name: str, tool_input: dict[str, Any], t: int) -> dict[str, Any]:
        return assistant(
            {"type": "tool_use", "id": cid, "name": name, "input": tool_input}, t, f"m-{cid}"
        )

    def result(
        cid: str, text: str, t: int, error: bool = False, tur: object = None
    ) -> dict[str, Any]:
        block = {"type": "tool_result", "tool_use_id": cid, "content": text, "is_error": error}
        return user([block], t, toolUseResult=tur)

    rows = [
        user("Add a greet() helper with a test.", 1),
        assistant({"type": "text", "text": "I will add it."}, 2, "m-0"),
        call("t1", "Write", {"file_path": f"{WORK}/greet.py", "content": "def greet(): ..."}, 3),
        result(
            "t1",
            f"File created successfully at: {WORK}/greet.py",
            4,
            tur={"type": "create", "filePath": f"{WORK}/greet.py"},
        ),
        call("t2", "Write", {"file_path": f"{WORK}/scratch.py", "content": "print(1)"}, 5),
        result("t2", "File created", 6, tur={"type": "create", "filePath": f"{WORK}/scratch.py"}),
        call("t3", "Bash", {"command": "python -m pytest tests/test_greet.py -q"}, 7),
        result(
            "t3",
            "..\n2 passed in 0.01s",
            8,
            tur={"stdout": "..\n2 passed in 0.01s", "stderr": "", "interrupted": False},
        ),
        call("t4", "Bash", {"command": "rm scratch.py && ls"}, 9),
        result("t4", "greet.py", 10, tur={"stdout": "greet.py", "stderr": ""}),
        call("t5", "Bash", {"command": "git add -A && git commit -m 'Add greet'"}, 11),
        result("t5", "[main 1a2b3c4] Add greet\n 1 file changed\n create mode 100644 greet.py", 12),
        call("t6", "Bash", {"command": "git push origin main"}, 13),
        result(
            "t6", "Exit code 1\n ! [rejected]        main -> main (fetch first)", 14, error=True
        ),
        {**base, "type": "mystery", "timestamp": "2026-02-01T10:00:15.000Z"},
        assistant(
            {"type": "text", "text": "Added greet() with passing tests and committed it."},
            16,
            "m-9",
        ),
    ]
    return jsonl(rows)


def mini_swe_agent() -> str:
    def turn(command: str) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": f"THOUGHT: next.\n\n```bash\n{command}\n```",
            "extra": {"response": {"created": 1767261600}},
        }

    def obs(code: int, out: str) -> dict[str, Any]:
        return {
            "role": "user",
            "content": f"<returncode>{code}</returncode>\n<output>\n{out}</output>",
        }

    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Fix the rounding bug in pkg/num.py."},
        turn("cat <<'EOF' > repro.py\nprint(round(2.5))\nEOF"),
        obs(0, ""),
        turn("sed -i 's/round(/my_round(/' pkg/num.py"),
        obs(0, ""),
        turn("cd /testbed && pytest tests/test_num.py"),
        obs(1, "==== 1 failed, 3 passed in 0.20s ===="),
        turn("rm repro.py"),
        obs(0, ""),
        turn("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"),
        {
            "role": "user",
            "content": "diff --git a/pkg/num.py b/pkg/num.py\n--- a/pkg/num.py\n+++ b/pkg/num.py",
        },
    ]
    patch = (
        "diff --git a/pkg/num.py b/pkg/num.py\nindex 1..2 100644\n"
        "--- a/pkg/num.py\n+++ b/pkg/num.py\n"
    )
    return json.dumps(
        {
            "trajectory_format": "mini-swe-agent-1",
            "messages": messages,
            "info": {"exit_status": "Submitted", "submission": patch},
        }
    )


def openhands_v1() -> str:
    events = [
        {
            "kind": "MessageEvent",
            "id": "e0",
            "timestamp": "2026-02-01T10:00:00.000000",
            "source": "user",
            "llm_message": {
                "role": "user",
                "content": [{"type": "text", "text": "Run the tests."}],
            },
        },
        {
            "kind": "ActionEvent",
            "id": "a1",
            "timestamp": "2026-02-01T10:00:01",
            "source": "agent",
            "tool_name": "execute_bash",
            "tool_call_id": "c1",
            "action": {"kind": "ExecuteBashAction", "command": "npm test"},
        },
        {
            "kind": "ObservationEvent",
            "id": "o1",
            "timestamp": "2026-02-01T10:00:05",
            "source": "environment",
            "tool_name": "execute_bash",
            "tool_call_id": "c1",
            "action_id": "a1",
            # a Python repr, nested metadata and an enum member included
            "observation": "ExecuteBashObservation(output='Tests:       1 failed, 4 passed, "
            "5 total', exit_code=None, metadata=CmdOutputMetadata(exit_code=1, pid=-1, "
            "working_dir='/workspace'), "
            "kind=<Kind.BASH: 'bash'>)",
        },
        {
            "kind": "ActionEvent",
            "id": "a2",
            "timestamp": "2026-02-01T10:00:06",
            "source": "agent",
            "tool_name": "str_replace_editor",
            "tool_call_id": "c2",
            # agent-sdk event lists may hold the action as its Python repr
            "action": "FileEditorAction(command='create', path='/workspace/NOTES.md', "
            "file_text='notes')",
        },
        {
            "kind": "ObservationEvent",
            "id": "o2",
            "timestamp": "2026-02-01T10:00:07",
            "source": "environment",
            "tool_name": "str_replace_editor",
            "tool_call_id": "c2",
            "action_id": "a2",
            "observation": {
                "kind": "FileEditorObservation",
                "output": "File created",
                "error": None,
                "prev_exist": False,
            },
        },
        {
            "kind": "ActionEvent",
            "id": "a3",
            "timestamp": "2026-02-01T10:00:08",
            "source": "agent",
            "tool_name": "finish",
            "tool_call_id": "c3",
            "action": {"kind": "FinishAction", "message": "One test fails; I wrote NOTES.md."},
        },
    ]
    return json.dumps(events)


def openhands_v0() -> str:
    history = [
        {
            "id": 0,
            "timestamp": "2026-02-01T10:00:00",
            "source": "user",
            "action": "message",
            "message": "Make the build pass.",
            "args": {"content": "Make the build pass."},
        },
        {
            "id": 1,
            "timestamp": "2026-02-01T10:00:01",
            "source": "agent",
            "action": "edit",
            "args": {
                "path": "/repo/src/App.java",
                "command": "str_replace",
                "old_str": "a",
                "new_str": "b",
            },
        },
        {
            "id": 2,
            "timestamp": "2026-02-01T10:00:02",
            "source": "agent",
            "observation": "edit",
            "cause": 1,
            "content": "The file /repo/src/App.java has been edited.",
            "extras": {},
        },
        {
            "id": 3,
            "timestamp": "2026-02-01T10:00:03",
            "source": "agent",
            "action": "run",
            "args": {"command": "cd /repo && mvn -q test"},
        },
        {
            "id": 4,
            "timestamp": "2026-02-01T10:00:09",
            "source": "agent",
            "observation": "run",
            "cause": 3,
            "content": "Tests run: 7, Failures: 0, Errors: 0, Skipped: 0\n[INFO] BUILD SUCCESS",
            "extras": {"metadata": {"exit_code": 0}},
        },
        {
            "id": 5,
            "timestamp": "2026-02-01T10:00:10",
            "source": "agent",
            "action": "finish",
            "args": {"final_thought": "The build passes."},
        },
    ]
    patch = "diff --git a/src/App.java b/src/App.java\n--- a/src/App.java\n+++ b/src/App.java\n"
    return json.dumps({"instance_id": "x", "history": history, "test_result": {"git_patch": patch}})


def gemini_chat() -> str:
    shell_out = (
        "Command: cargo test\nDirectory: (root)\nOutput: test result: ok. 3 passed; 0 failed; "
        "0 ignored\nError: (none)\nExit Code: 0\nSignal: 0"
    )
    messages = [
        {
            "id": "1",
            "timestamp": "2026-02-01T10:00:00.000Z",
            "type": "user",
            "content": "Port it to Rust.",
        },
        {
            "id": "2",
            "timestamp": "2026-02-01T10:00:05.000Z",
            "type": "gemini",
            "content": "",
            "toolCalls": [
                {
                    "id": "w1",
                    "name": "write_file",
                    "args": {"file_path": "src/lib.rs", "content": "pub fn f() {}"},
                    "status": "success",
                    "result": [
                        {
                            "functionResponse": {
                                "id": "w1",
                                "name": "write_file",
                                "response": {
                                    "output": "Successfully created and wrote to new file: "
                                    "/p/src/lib.rs."
                                },
                            }
                        }
                    ],
                },
                {
                    "id": "s1",
                    "name": "run_shell_command",
                    "args": {"command": "cargo test"},
                    "status": "success",
                    "result": [
                        {
                            "functionResponse": {
                                "id": "s1",
                                "name": "run_shell_command",
                                "response": {"output": shell_out},
                            }
                        }
                    ],
                },
                {
                    "id": "p1",
                    "name": "create_pull_request",
                    "args": {"owner": "o", "repo": "r"},
                    "status": "success",
                    "result": [
                        {
                            "functionResponse": {
                                "id": "p1",
                                "name": "create_pull_request",
                                "response": {
                                    "output": '{"html_url": "https://example.test/o/r/pull/3"}'
                                },
                            }
                        }
                    ],
                },
            ],
        },
        {
            "id": "3",
            "timestamp": "2026-02-01T10:00:09.000Z",
            "type": "gemini",
            "content": "Ported; tests pass; PR opened.",
        },
    ]
    return json.dumps(
        {
            "sessionId": "g",
            "projectHash": "h",
            "startTime": "2026-02-01T10:00:00.000Z",
            "lastUpdated": "2026-02-01T10:00:09.000Z",
            "messages": messages,
        }
    )


def gemini_stream() -> str:
    rows = [
        {"type": "init", "timestamp": "2026-02-01T10:00:00.000Z", "session_id": "g2", "model": "m"},
        {
            "type": "message",
            "timestamp": "2026-02-01T10:00:00.000Z",
            "role": "user",
            "content": "Build the site.",
        },
        {
            "type": "tool_use",
            "timestamp": "2026-02-01T10:00:01.000Z",
            "tool_name": "run_shell_command",
            "tool_id": "b1",
            "parameters": {"command": "npm run build"},
        },
        {
            "type": "tool_result",
            "timestamp": "2026-02-01T10:00:09.000Z",
            "tool_id": "b1",
            "status": "success",
            "output": "> vite build\nbuilding for production...",
        },
        {
            "type": "message",
            "timestamp": "2026-02-01T10:00:10.000Z",
            "role": "assistant",
            "content": "The site ",
            "delta": True,
        },
        {
            "type": "message",
            "timestamp": "2026-02-01T10:00:10.100Z",
            "role": "assistant",
            "content": "is built.",
            "delta": True,
        },
        {"type": "result", "timestamp": "2026-02-01T10:00:11.000Z", "status": "success"},
    ]
    return jsonl(rows)


def aider() -> str:
    return "\n".join(
        [
            "",
            "# aider chat started at 2026-02-01 10:00:00",
            "",
            "#### add a readme",
            "",
            "README.md",
            "```",
            "<<<<<<< SEARCH",
            "=======",
            "# Project",
            ">>>>>>> REPLACE",
            "```",
            "",
            "> Create new file? (Y)es/(N)o [Yes]: y  ",
            "> Applied edit to README.md  ",
            "> Commit abc1234 docs: add readme  ",
            "",
            "#### /run pytest",
            "",
            "> Running pytest  ",
            "> Running git push origin main  ",
            "",
            "The readme is in place.",
            "",
        ]
    )


FIXTURES = {
    "claude-code-jsonl": ("session.jsonl", claude_code),
    "mini-swe-agent": ("run.traj.json", mini_swe_agent),
    "openhands-events": ("events.json", openhands_v1),
    "openhands-v0": ("output.jsonl", openhands_v0),
    "gemini-cli": ("session-1.json", gemini_chat),
    "gemini-stream": ("stream.jsonl", gemini_stream),
    "aider-history": (".aider.chat.history.md", aider),
}
DETECTED = {"openhands-v0": "openhands-events", "gemini-stream": "gemini-cli"}


def imported(tmp_path: Path, key: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """(events, replay records, stderr) of `outcomes import` of the fixture (format detected)."""
    name, make = FIXTURES[key]
    trace = tmp_path / name
    trace.write_text(make())
    proc = outcomes("import", str(trace), "--run-id", f"t-{key}")
    assert proc.returncode == 0, proc.stderr
    events = [orjson.loads(line) for line in proc.stdout.splitlines()]
    for event in events:
        parse_event(event)  # raises on an invalid event
    out = tmp_path / "events.jsonl"
    out.write_text(proc.stdout)
    replay = outcomes("replay", str(out))
    records = [orjson.loads(line) for line in replay.stdout.splitlines()]
    assert replay.returncode == 0, replay.stderr
    assert not [r for r in records if r["record"] == "dead_letter"]
    return events, records, proc.stderr


def last_account(records: list[dict[str, Any]]) -> dict[str, Any]:
    return max(
        (r for r in records if r["record"] == "account_revision"), key=lambda r: r["revision"]
    )


def receipts(events: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [
        (e["label"], e["result"], e["tests_executed"])
        for e in events
        if e["type"] == "verification.receipt"
    ]


def artifacts(account: dict[str, Any]) -> dict[str, str]:
    return {a["path"]: a["change"] for a in account["artifacts"]}


def effects(account: dict[str, Any]) -> list[tuple[str | None, str]]:
    return sorted((e["effect_class"], e["state"]) for e in account["effects"])


def narrative(events: list[dict[str, Any]]) -> str:
    return [e for e in events if e["type"] == "narrative.submitted"][-1]["text"]


@pytest.mark.parametrize("key", sorted(FIXTURES))
def test_each_format_is_detected_and_every_event_names_its_source(tmp_path: Path, key: str) -> None:
    name, make = FIXTURES[key]
    path = tmp_path / name
    path.write_text(make())
    trace = read_trace(path)
    assert trace.format == DETECTED.get(key, key)
    events = derive(trace, "r")
    assert events and all(e["source"].startswith(f"import:{trace.format}:{name}#") for e in events)
    assert derive(read_trace(path), "r") == events  # the same trace, the same events
    kinds = [e["type"] for e in events]
    assert kinds[0] == "run.started" and "goal.revised" in kinds and "finalize.requested" in kinds


def test_claude_code(tmp_path: Path) -> None:
    events, records, err = imported(tmp_path, "claude-code-jsonl")
    assert receipts(events) == [("pytest tests/test_greet.py -q", "pass", 2)]
    account = last_account(records)
    assert artifacts(account) == {"greet.py": "added"}  # scratch.py was created and removed
    assert effects(account) == [("git_push", "failed"), ("write", "completed")]
    assert narrative(events) == "Added greet() with passing tests and committed it."
    goal = next(e for e in events if e["type"] == "goal.revised")
    assert goal["authored_by"] == "user" and goal["source"].endswith("#line 1")
    assert "line 15: not mapped: line type 'mystery' is not mapped" in err


def test_mini_swe_agent(tmp_path: Path) -> None:
    events, records, _ = imported(tmp_path, "mini-swe-agent")
    assert receipts(events) == [("pytest tests/test_num.py", "fail", 4)]
    account = last_account(records)
    assert artifacts(account) == {"pkg/num.py": "modified"}  # the submission's diff
    assert narrative(events).startswith("THOUGHT: next.")


def test_openhands_agent_sdk(tmp_path: Path) -> None:
    events, records, _ = imported(tmp_path, "openhands-events")
    assert receipts(events) == [("npm test", "fail", 5)]
    finished = [e for e in events if e["type"] == "tool.finished" and e["tool"] == "execute_bash"]
    assert [(e["outcome"], e["error_class"]) for e in finished] == [("failed", "exit_code:1")]
    # paths under the shell's working directory are the workspace's
    assert artifacts(last_account(records)) == {"NOTES.md": "added"}
    assert narrative(events) == "One test fails; I wrote NOTES.md."


def test_openhands_v0(tmp_path: Path) -> None:
    events, records, _ = imported(tmp_path, "openhands-v0")
    assert receipts(events) == [("mvn -q test", "pass", 7)]
    assert "src/App.java" in artifacts(last_account(records))
    assert narrative(events) == "The build passes."


def test_gemini_chat_recording(tmp_path: Path) -> None:
    events, records, _ = imported(tmp_path, "gemini-cli")
    assert receipts(events) == [("cargo test", "pass", 3)]
    account = last_account(records)
    assert artifacts(account) == {"src/lib.rs": "added"}
    assert effects(account) == [("pull_request", "completed")]
    assert narrative(events) == "Ported; tests pass; PR opened."


def test_gemini_stream_json(tmp_path: Path) -> None:
    events, _, _ = imported(tmp_path, "gemini-stream")
    # stream-json records no exit status and the build printed no result: unknown
    assert receipts(events) == [("npm run build", "indeterminate", 0)]
    assert narrative(events) == "The site is built."  # the streamed deltas, joined


def test_aider_history(tmp_path: Path) -> None:
    events, records, _ = imported(tmp_path, "aider-history")
    # aider records that pytest ran, never what it printed
    assert receipts(events) == [("pytest", "indeterminate", 0)]
    account = last_account(records)
    assert artifacts(account) == {"README.md": "added"}
    assert effects(account) == [("git_push", "unknown"), ("write", "completed")]
    assert narrative(events) == "The readme is in place."


def test_a_file_that_cannot_be_read_is_one_line_and_exit_1(tmp_path: Path) -> None:
    junk = tmp_path / "notes.txt"
    junk.write_text("just some words\n")
    proc = outcomes("import", str(junk))
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip().count("\n") == 0 and "not a trace of a known format" in proc.stderr
    missing = outcomes("import", str(tmp_path / "nope.jsonl"), "--format", "claude-code-jsonl")
    assert missing.returncode == 1 and "no such file" in missing.stderr
    folder = outcomes("import", str(tmp_path))
    assert folder.returncode == 1 and "not a regular file (a directory)" in folder.stderr
    wrong = outcomes("import", str(junk), "--format", "mini-swe-agent")
    assert wrong.returncode == 1 and "not a mini-swe-agent trace" in wrong.stderr


def test_out_writes_the_events_to_a_file(tmp_path: Path) -> None:
    trace = tmp_path / "run.traj.json"
    trace.write_text(mini_swe_agent())
    out = tmp_path / "events.jsonl"
    proc = outcomes("import", str(trace), "--out", str(out))
    assert proc.returncode == 0 and proc.stdout == ""
    events = [orjson.loads(line) for line in out.read_text().splitlines()]
    assert {e["run_id"] for e in events} == {"mini-swe-agent:run"}


def test_a_claude_code_background_command_shows_no_exit_status(tmp_path: Path) -> None:
    base = {
        "sessionId": "s-2",
        "cwd": WORK,
        "type": "assistant",
        "timestamp": "2026-02-01T10:00:00Z",
    }
    use = {"type": "tool_use", "id": "b1", "name": "Bash",
           "input": {"command": "npm test", "run_in_background": True}}  # fmt: skip
    done = {"type": "tool_result", "tool_use_id": "b1", "content": "Command running in background"}
    rows = [
        {**base, "type": "user", "message": {"role": "user", "content": "Run the tests."}},
        {**base, "message": {"id": "m1", "role": "assistant", "content": [use]}},
        {**base, "type": "user", "message": {"role": "user", "content": [done]},
         "toolUseResult": {"stdout": "Command running in background", "stderr": ""}},
    ]  # fmt: skip
    path = tmp_path / "bg.jsonl"
    path.write_text(jsonl(rows))
    events = derive(read_trace(path), "r")
    assert receipts(events) == [("npm test", "indeterminate", 0)]


def test_produce_publishes_the_events_to_their_topics(
    kafka_bootstrap: str, kafka_config: dict[str, Any], tmp_path: Path
) -> None:
    from confluent_kafka import Consumer, TopicPartition

    from outcomes.common.codec import Codec
    from outcomes.devtools.harness import end_offsets
    from outcomes.reducers.catalog import INPUT_TOPICS

    trace = tmp_path / "run.traj.json"
    trace.write_text(mini_swe_agent())
    run = f"produce-{uuid.uuid4().hex[:12]}"
    before = end_offsets(kafka_config, INPUT_TOPICS)
    proc = outcomes(
        "import", str(trace), "--run-id", run, "--produce", "--bootstrap", kafka_bootstrap
    )
    assert proc.returncode == 0, proc.stderr
    expected = [
        orjson.loads(x) for x in outcomes("import", str(trace), "--run-id", run).stdout.splitlines()
    ]
    assert f"produced {len(expected)} event(s)" in proc.stderr
    after = end_offsets(kafka_config, INPUT_TOPICS)
    consumer = Consumer({**kafka_config, "group.id": f"t-{run}", "enable.auto.commit": False})
    consumer.assign([TopicPartition(t, p, o) for (t, p), o in before.items() if after[(t, p)] > o])
    codec, seen = Codec(), []
    remaining = sum(after[tp] - o for tp, o in before.items())
    while remaining > 0:  # every message up to the ends measured after producing
        message = consumer.poll(10)
        assert message is not None, "fewer messages than the topics' ends say"
        if message.offset() >= after[(message.topic(), message.partition())]:
            continue  # produced by someone else after this test's import
        remaining -= 1
        value = codec.decode(message.value()).value
        if value["run_id"] == run:
            seen.append(value["event_id"])
    consumer.close()
    assert sorted(seen) == sorted(e["event_id"] for e in expected)
