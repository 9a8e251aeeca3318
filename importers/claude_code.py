"""Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`).

One JSON object per line. `type` `user`/`assistant` lines carry `message.content`: text,
`tool_use` blocks (id, name, input) from the assistant, `tool_result` blocks (tool_use_id,
content, is_error) from the user side, with the tool's structured result in the line's
`toolUseResult`. Lines also carry `timestamp`, `cwd`, `version` and `isSidechain`
(subagent work: its tool calls changed the workspace too, its messages are not the
run's). `isMeta` user lines (hook feedback, command caveats) are not the user's request.
A Bash result's exit status is its error state: Claude Code marks a non-zero exit
`is_error` and starts the content with `Exit code N`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from outcomes.importers.base import Importer, moment, obj, role, text_of, unreadable
from outcomes.importers.trace import (
    Finish,
    Message,
    Skipped,
    Step,
    ToolCall,
    ToolKind,
    Trace,
    ends_with_a_result,
)

SHELL_TOOLS = {"Bash", "BashOutput"}
WRITE_TOOLS = {"Write"}
EDIT_TOOLS = {"Edit", "MultiEdit", "NotebookEdit", "str_replace_based_edit_tool"}
_EXIT = re.compile(r"^(?:Error: )?Exit code (\d+)")
_TIMEOUT = re.compile(r"^(?:Error: )?Command timed out", re.I)


def tool_kind(name: str) -> ToolKind:
    if name in SHELL_TOOLS:
        return "shell"
    if name in WRITE_TOOLS:
        return "write"
    if name in EDIT_TOOLS:
        return "edit"
    if name in {"Read", "Glob", "Grep", "LS", "NotebookRead", "WebFetch", "WebSearch"}:
        return "read"
    return "other"


def result_fields(
    name: str,
    content: object,
    is_error: bool | None,
    structured: object,
    tool_input: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A tool result's fields as Claude Code records them (shared with the hook). A
    command started with `run_in_background` returns at once: its result shows no exit
    status of the command."""
    output = text_of(content) if not isinstance(content, str) else content
    fields: dict[str, Any] = {"output": output, "failed": bool(is_error)}
    if name in SHELL_TOOLS:
        if isinstance(structured, dict) and "stdout" in structured:
            parts = [str(structured.get("stdout") or ""), str(structured.get("stderr") or "")]
            fields["output"] = "\n".join(p for p in parts if p) or output
            if structured.get("interrupted"):
                fields["timed_out"] = True
        m = _EXIT.match(output or "")
        if _TIMEOUT.match(output or ""):
            fields["timed_out"] = True
        elif m:
            fields["exit_code"] = int(m.group(1))
        elif is_error or (tool_input or {}).get("run_in_background"):
            fields["exit_code"] = None  # an error without a status; a background start
        else:
            fields["exit_code"] = 0
    if name in WRITE_TOOLS and isinstance(structured, dict):
        kind = structured.get("type")
        if kind in {"create", "update"}:
            fields["created"] = kind == "create"
    return fields


def call_fields(name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """A tool_use's input as ToolCall fields (shared with the hook)."""
    kind = tool_kind(name)
    fields: dict[str, Any] = {"kind": kind, "arguments": tool_input}
    if kind == "shell":
        fields["command"] = str(tool_input.get("command") or "")
    elif kind in {"write", "edit"}:
        path = (
            tool_input.get("file_path") or tool_input.get("notebook_path") or tool_input.get("path")
        )
        fields["path"] = str(path) if path else None
        if kind == "write":
            fields["content"] = str(tool_input.get("content") or "")[:200]
    return fields


class ClaudeCodeImporter(Importer):
    name = "claude-code-jsonl"
    summary = "Claude Code session transcript (.jsonl)"

    def sniff(self, head: str) -> bool:
        for line in head.splitlines()[:20]:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if (
                isinstance(row, dict)
                and "sessionId" in row
                and row.get("type")
                in {
                    "user",
                    "assistant",
                    "summary",
                    "system",
                    "queue-operation",
                }
            ):
                return True
        return False

    def read(self, path: Path, text: str) -> Trace:
        rows: list[tuple[int, dict[str, Any]]] = []
        skipped: list[Skipped] = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                skipped.append(Skipped(f"line {number}", f"not JSON: {exc}"))
                continue
            if not isinstance(row, dict):
                skipped.append(Skipped(f"line {number}", "not a JSON object"))
                continue
            rows.append((number, row))
        if not rows or not any(r.get("type") in {"user", "assistant"} for _, r in rows):
            raise unreadable(path, self.name, "no user or assistant lines")
        root = next((r["cwd"] for _, r in rows if isinstance(r.get("cwd"), str)), None)
        version = next((r["version"] for _, r in rows if isinstance(r.get("version"), str)), "")
        model = next(
            (
                r["message"]["model"]
                for _, r in rows
                if isinstance(r.get("message"), dict) and isinstance(r["message"].get("model"), str)
            ),
            "",
        )
        calls: dict[str, dict[str, Any]] = {}
        order: list[dict[str, Any] | Message] = []
        last_text_id: str | None = None
        for number, row in rows:
            kind = row.get("type")
            where = f"line {number}"
            at = moment(row.get("timestamp"))
            message = row.get("message")
            if kind not in {"user", "assistant"}:
                if kind not in {"summary", "system", "queue-operation", "file-history-snapshot"}:
                    skipped.append(Skipped(where, f"line type {kind!r} is not mapped"))
                continue
            if not isinstance(message, dict):
                skipped.append(Skipped(where, "a user/assistant line without a message"))
                continue
            content = message.get("content")
            side = bool(row.get("isSidechain"))
            if isinstance(content, str):
                if kind == "user" and not side and not row.get("isMeta"):
                    order.append(Message("user", content, at, where))
                elif kind == "assistant" and not side:
                    order.append(Message("assistant", content, at, where))
                continue
            if not isinstance(content, list):
                skipped.append(Skipped(where, "message content is neither text nor blocks"))
                continue
            for block in content:
                if not isinstance(block, dict):
                    continue
                btype = block.get("type")
                if btype == "text" and side:
                    continue  # a subagent's words are not the run's messages
                elif btype == "text":
                    body = str(block.get("text") or "")
                    msg_id = message.get("id") if kind == "assistant" else None
                    previous = order[-1] if order else None
                    if (
                        msg_id is not None
                        and msg_id == last_text_id
                        and isinstance(previous, Message)
                        and previous.role == "assistant"
                    ):
                        order[-1] = Message(
                            "assistant", previous.text + "\n\n" + body, at, previous.where
                        )
                    elif kind == "user" and row.get("isMeta"):
                        pass
                    else:
                        order.append(Message(role(kind), body, at, where))
                    last_text_id = msg_id
                elif btype == "tool_use":
                    call_id = str(block.get("id") or f"{where}:tool")
                    name = str(block.get("name") or "tool")
                    tool_input = obj(block.get("input"))
                    record: dict[str, Any] = {
                        "call_id": call_id,
                        "tool": name,
                        "where": where,
                        "at": at,
                        "cwd": row.get("cwd") if isinstance(row.get("cwd"), str) else None,
                        **call_fields(name, tool_input),
                    }
                    calls[call_id] = record
                    order.append(record)
                    last_text_id = None
                elif btype == "tool_result":
                    call_id = str(block.get("tool_use_id") or "")
                    record = calls.get(call_id, {})
                    if not record:
                        skipped.append(
                            Skipped(where, f"tool_result for unknown tool_use {call_id!r}")
                        )
                        continue
                    record.update(
                        result_fields(
                            record["tool"],
                            block.get("content"),
                            block.get("is_error"),
                            row.get("toolUseResult"),
                            record.get("arguments"),
                        )
                    )
                    record["finished_at"] = at
                elif btype in {"thinking", "redacted_thinking", "image"}:
                    continue
                else:
                    skipped.append(Skipped(where, f"content block {btype!r} is not mapped"))
        steps: list[Step] = []
        for item in order:
            steps.append(item if isinstance(item, Message) else ToolCall(**item))
        last_at = next((s.at for s in reversed(steps) if s.at is not None), None)
        steps.append(Finish(f"line {rows[-1][0]}", last_at))
        agent = f"claude-code {version}".strip() + (f" ({model})" if model else "")
        return Trace(
            format=self.name,
            agent=agent,
            path=str(path),
            steps=tuple(steps),
            complete=ends_with_a_result(steps),
            root=root,
            skipped=tuple(skipped),
        )
