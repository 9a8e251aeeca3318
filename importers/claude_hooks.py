"""Claude Code hook payloads, as the steps of a live trace.

Claude Code runs a hook command with one JSON object on standard input: the common
fields `session_id`, `transcript_path`, `cwd`, `hook_event_name`, and per event
`source` (SessionStart), `prompt` (UserPromptSubmit), `tool_name`, `tool_input`,
`tool_use_id` and `tool_response` (PostToolUse) or `error` (PostToolUseFailure),
`stop_hook_active` (Stop), `reason` (SessionEnd). The payloads of one session, in the
order they arrived (each with the time it arrived: payloads carry no clock), make a
trace that `outcomes.importers.derive` turns into the same events the transcript
importer derives: tool calls read by the same code as the transcript's
(`claude_code.call_fields`, `result_fields`). A Stop hands the last assistant message
over: the payload's `last_assistant_message` when Claude Code sends one, else the last
assistant text of the transcript at `transcript_path`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from outcomes.common.files import NotReadable, read_regular
from outcomes.importers.base import obj, text_of
from outcomes.importers.claude_code import ClaudeCodeImporter, call_fields, result_fields
from outcomes.importers.trace import (
    Finish,
    Message,
    Started,
    Step,
    ToolCall,
    Trace,
    TraceUnreadable,
)

FORMAT = "claude-code-jsonl"
EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "SessionEnd",
)


def run_id_of(session_id: str) -> str:
    """The run id the transcript importer gives the same session's transcript
    (`<session id>.jsonl`), so a session imported later joins its live run."""
    return f"{FORMAT}:{session_id}"[:128]


# The largest transcript a Stop reads for the last assistant message.
MAX_TRANSCRIPT_BYTES = 256 * 1024 * 1024


def last_assistant_text(transcript_path: object) -> tuple[str | None, str | None]:
    """(the last assistant message of the transcript or None, why it could not be read
    or None). Only a regular file is read, without blocking (a FIFO is refused, never
    waited on), up to MAX_TRANSCRIPT_BYTES; a transcript the reader fails on, whatever
    the value, gives no text and a reason, so a Stop is still journaled and finalises
    the run."""
    if not isinstance(transcript_path, str) or not transcript_path:
        return None, None
    path = Path(transcript_path)
    try:
        text = read_regular(path, MAX_TRANSCRIPT_BYTES).decode("utf-8")
        trace = ClaudeCodeImporter().read(path, text)
    except (OSError, UnicodeDecodeError, NotReadable, TraceUnreadable) as exc:
        return None, f"transcript {transcript_path}: {exc}"
    except Exception as exc:  # a value the reader fails on must not stop the Stop
        return None, f"transcript {transcript_path}: {type(exc).__name__}: {str(exc)[:200]}"
    texts = [s.text for s in trace.steps if isinstance(s, Message) and s.role == "assistant"]
    return (texts[-1] if texts else None), None


def steps_of(number: int, at: int, payload: dict[str, Any]) -> list[Step]:
    """The steps one hook payload adds (`number` is its place in the session)."""
    event = str(payload.get("hook_event_name") or "")
    where = f"hook {number} {event}"
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    if event == "SessionStart":
        model = payload.get("model")  # optional in the hook's input
        return [Started(where, at, model if isinstance(model, str) and model.strip() else None)]
    if event == "UserPromptSubmit":
        prompt = str(payload.get("prompt") or "")
        return [Message("user", prompt, at, where)] if prompt.strip() else []
    if event in {"PostToolUse", "PostToolUseFailure"}:
        name = str(payload.get("tool_name") or "tool")
        tool_input = obj(payload.get("tool_input"))
        call_id = str(payload.get("tool_use_id") or f"hook-{number}")
        record: dict[str, Any] = {
            "call_id": call_id,
            "tool": name,
            "where": where,
            "at": at,
            "cwd": cwd,
            "finished_at": at,
            **call_fields(name, tool_input),
        }
        if event == "PostToolUse":
            response = payload.get("tool_response")
            content = response if isinstance(response, str) else _response_text(response)
            record.update(result_fields(name, content, False, response, tool_input))
        else:
            error = str(payload.get("error") or "the tool failed")
            record.update(result_fields(name, error, True, None, tool_input))
            if payload.get("is_interrupt"):
                record["timed_out"] = True
        if isinstance(record.get("output"), str):
            record["output"] = kept_output(record["output"])
        return [ToolCall(**record)]
    if event == "Stop":
        text = payload.get("last_assistant_message")
        steps: list[Step] = []
        if isinstance(text, str) and text.strip():
            steps.append(Message("assistant", text, at, where))
        return [*steps, Finish(where, at)]
    if event == "SessionEnd":
        return [Finish(where, at)]
    return []


# What the hook keeps of one tool output: its start and its end (where runners print
# their summaries), this many characters in all. Every call derives the session's events
# from all the steps kept, so this bounds what each output costs every later call.
MAX_OUTPUT_CHARS = 256 * 1024


def kept_output(text: str) -> str:
    """`text`, or its first and last MAX_OUTPUT_CHARS / 2 characters with a line saying
    how many were left out between them."""
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    half = MAX_OUTPUT_CHARS // 2
    left_out = len(text) - 2 * half
    return f"{text[:half]}\n[{left_out} characters left out by the hook]\n{text[-half:]}"


def _response_text(response: object) -> str:
    """A tool_response's text: Bash's stdout and stderr, an MCP tool's content blocks,
    or the first text field of an object."""
    if isinstance(response, list):
        return text_of(response)
    data = obj(response)
    if "stdout" in data:
        return "\n".join(str(data.get(k) or "") for k in ("stdout", "stderr") if data.get(k))
    for key in ("output", "content", "result", "text"):
        if isinstance(data.get(key), str):
            return str(data[key])
    return ""


def live_trace(transcript: str, entries: list[dict[str, Any]]) -> Trace:
    """The trace of a session's journal: entries `{"at": micros, "payload": {...}}` in
    arrival order."""
    mapped = [
        steps_of(n, int(e.get("at") or 0), obj(e.get("payload"))) for n, e in enumerate(entries)
    ]
    return assemble(transcript, mapped, root_of(entries))


def root_of(entries: list[dict[str, Any]]) -> str | None:
    """The workspace: the first `cwd` a payload gives."""
    for entry in entries:
        cwd = obj(entry.get("payload")).get("cwd")
        if isinstance(cwd, str):
            return cwd
    return None


def assemble(transcript: str, mapped: list[list[Step]], root: str | None) -> Trace:
    """The trace of the steps each payload of a session added, in arrival order. A
    SessionEnd (or a Stop with no message) right after a Stop adds nothing: the run was
    handed over already. A Stop with a message right after a Stop is the answer Claude
    gave when a Stop hook made it go on (the gate's repair): it is handed over too."""
    steps: list[Step] = []
    for added in mapped:
        only_finish = bool(added) and all(isinstance(s, Finish) for s in added)
        if only_finish and steps and isinstance(steps[-1], Finish):
            continue
        steps.extend(added)
    model = next((s.model for s in steps if isinstance(s, Started) and s.model), None)
    return Trace(FORMAT, "claude-code (hooks)", transcript, tuple(steps), root=root, model=model)


# Steps as JSON, so the hook maps each payload once and keeps what it mapped.
_STEP_TYPES: dict[str, type[Step]] = {
    cls.__name__: cls for cls in (Message, ToolCall, Started, Finish)
}


def step_json(step: Step) -> dict[str, Any]:
    """`step` as a JSON object (`step_from_json` reads it back to an equal step)."""
    fields = {f.name: getattr(step, f.name) for f in dataclasses.fields(step)}
    return {"step": type(step).__name__, **fields}


def step_from_json(value: dict[str, Any]) -> Step:
    """The step `step_json` wrote (KeyError or TypeError for anything else)."""
    fields = dict(value)
    cls = _STEP_TYPES[fields.pop("step")]
    return cls(**fields)
