"""Claude Code sessions: the transcript (`~/.claude/projects/<project>/<session>.jsonl`)
and the headless stream (`claude -p --output-format stream-json --verbose`).

Transcript, 1.x and 2.x alike: one JSON object per line. `type` `user`/`assistant` lines
carry `message.content`: text, `tool_use` blocks (id, name, input) from the assistant,
`tool_result` blocks (tool_use_id, content, is_error) from the user side, with the
tool's structured result in the line's `toolUseResult`. Lines also carry `sessionId`,
`timestamp`, `cwd`, `version` (the writer's version: 1.0.x, 2.0.x, 2.1.x) and
`isSidechain` (subagent work: its tool calls changed the workspace too, its messages are
not the run's). `isMeta` user lines (hook feedback, command caveats) and the summary a
compaction leaves (`isCompactSummary`) are not the user's request. Other line types
(`summary`, `system`, `file-history-snapshot`, `queue-operation`, `progress`, …) hold no
step, except a `progress` line that carries a subagent's message (`data.message`), read
as sidechain work. Newer content blocks: the
API's own tools (`server_tool_use` with its `web_search_tool_result` /
`web_fetch_tool_result` / `*_tool_result`), MCP connector blocks (`mcp_tool_use`,
`mcp_tool_result`) are tool calls and results like `tool_use`/`tool_result`; `thinking`,
`redacted_thinking`, `image` and `document` blocks hold no step.

Stream (the Agent SDK's message form, snake_case): a `system` line with subtype `init`
(`session_id`, `cwd`, `model`, `claude_code_version`), `assistant` and `user` lines as
above with `parent_tool_use_id` (set for a subagent's messages) and `tool_use_result`,
and a closing `result` line (`subtype`, `is_error`, `result`: the final answer). Lines
carry no timestamps.

A Bash result's exit status is its error state: Claude Code marks a non-zero exit
`is_error` and starts the content with `Exit code N`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from outcomes.importers.base import (
    Importer,
    bounded,
    first_json_lines,
    json_lines,
    moment,
    obj,
    path_of,
    role,
    text_of,
    unreadable,
    word,
)
from outcomes.importers.trace import (
    Finish,
    Message,
    Skipped,
    Step,
    ToolCall,
    ToolKind,
    Trace,
    cut_task,
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
        kind = word(structured.get("type"))
        if kind in {"create", "update"}:
            fields["created"] = kind == "create"
    return fields


def call_fields(name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """A tool_use's input as ToolCall fields (shared with the hook)."""
    kind = tool_kind(name)
    fields: dict[str, Any] = {"kind": kind, "arguments": bounded(tool_input)}
    if kind == "shell":
        fields["command"] = str(tool_input.get("command") or "")
    elif kind in {"write", "edit"}:
        path = path_of(
            tool_input.get("file_path"),
            tool_input.get("notebook_path"),
            tool_input.get("path"),
        )
        fields["path"] = path
        if kind == "write":
            fields["content"] = str(tool_input.get("content") or "")[:200]
    return fields


_LINE_TYPES = {"user", "assistant", "summary", "system", "queue-operation"}
# line types that hold no step (the transcript's bookkeeping, the stream's partial events)
_QUIET = {
    "summary",
    "system",
    "queue-operation",
    "file-history-snapshot",
    "progress",
    "custom-title",
    "stream_event",
}
_QUIET_BLOCKS = {"thinking", "redacted_thinking", "image", "document"}
# the API's server-side tools and the MCP connector: tool calls and results by other names
_CALL_BLOCKS = {"tool_use", "server_tool_use", "mcp_tool_use"}


def _not_said(row: dict[str, Any]) -> bool:
    """A user line the user did not write: hook feedback and caveats (`isMeta`), the
    summary a compaction leaves (`isCompactSummary`)."""
    return bool(row.get("isMeta") or row.get("isCompactSummary"))


# A slash command's record in the transcript (`/clear`, `/model`): what the user typed to
# the CLI and what it printed, never a request to the agent.
_COMMAND_RECORD = re.compile(r"\s*<(command-(name|message|args)|local-command-std\w+)>")


def _request(steps: list[Step]) -> str | None:
    """The first user message that asks the agent something (not a command record)."""
    for step in steps:
        if (
            isinstance(step, Message)
            and step.role == "user"
            and not _COMMAND_RECORD.match(step.text)
            and (task := cut_task(step.text))
        ):
            return task
    return None


def _is_result_block(btype: object) -> bool:
    return isinstance(btype, str) and btype.endswith("tool_result")


class ClaudeCodeImporter(Importer):
    name = "claude-code-jsonl"
    summary = "Claude Code session transcript (.jsonl) or --output-format stream-json"

    def sniff(self, head: str) -> bool:
        for row in first_json_lines(head, 20):
            if not isinstance(row, dict):
                continue
            if "sessionId" in row and word(row.get("type")) in _LINE_TYPES:
                return True
            if "session_id" in row and (
                (row.get("type") == "system" and row.get("subtype") == "init")
                or (
                    word(row.get("type")) in {"assistant", "user"}
                    and isinstance(row.get("message"), dict)
                )
            ):
                return True
        return False

    def read(self, path: Path, text: str) -> Trace:
        rows: list[tuple[int, dict[str, Any]]] = []
        skipped: list[Skipped] = []
        for number, row, why in json_lines(text):
            if why is not None:
                skipped.append(Skipped(f"line {number}", why))
            elif not isinstance(row, dict):
                skipped.append(Skipped(f"line {number}", "not a JSON object"))
            else:
                rows.append((number, row))
        if not rows or not any(word(r.get("type")) in {"user", "assistant"} for _, r in rows):
            raise unreadable(path, self.name, "no user or assistant lines")
        root = next((r["cwd"] for _, r in rows if isinstance(r.get("cwd"), str)), None)
        version = next(
            (
                r.get("version") or r.get("claude_code_version")
                for _, r in rows
                if isinstance(r.get("version") or r.get("claude_code_version"), str)
            ),
            "",
        )
        model = next(
            (
                r["message"]["model"]
                for _, r in rows
                if isinstance(r.get("message"), dict) and isinstance(r["message"].get("model"), str)
            ),
            "",
        ) or next((r["model"] for _, r in rows if isinstance(r.get("model"), str)), "")
        calls: dict[str, dict[str, Any]] = {}
        order: list[dict[str, Any] | Message] = []
        last_text_id: str | None = None
        for number, row in rows:
            kind = word(row.get("type"))
            where = f"line {number}"
            at = moment(row.get("timestamp"))
            side = bool(row.get("isSidechain")) or row.get("parent_tool_use_id") is not None
            if kind == "progress" and isinstance(obj(row.get("data")).get("message"), dict):
                # a subagent's message carried by a progress line: its work, not its words
                inner = obj(row["data"]["message"])
                kind, row, side = word(inner.get("type")), {**inner, "cwd": row.get("cwd")}, True
                at = moment(inner.get("timestamp")) or at
            if kind == "result":
                self._result_line(row, where, order)
                continue
            message = row.get("message")
            if kind not in {"user", "assistant"}:
                if kind not in _QUIET:
                    skipped.append(Skipped(where, f"line type {kind!r} is not mapped"))
                continue
            if not isinstance(message, dict):
                skipped.append(Skipped(where, "a user/assistant line without a message"))
                continue
            content = message.get("content")
            if isinstance(content, str):
                if kind == "user" and not side and not _not_said(row):
                    order.append(Message("user", content, at, where))
                elif kind == "assistant" and not side:
                    order.append(Message("assistant", content, at, where))
                continue
            if not isinstance(content, list):
                skipped.append(Skipped(where, "message content is neither text nor blocks"))
                continue
            structured = row.get("toolUseResult", row.get("tool_use_result"))
            for block in content:
                if not isinstance(block, dict):
                    continue
                btype = word(block.get("type"))
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
                    elif kind == "user" and _not_said(row):
                        pass
                    else:
                        order.append(Message(role(kind), body, at, where))
                    last_text_id = msg_id
                elif btype in _CALL_BLOCKS:
                    call_id = str(block.get("id") or f"{where}:tool")
                    name = str(block.get("name") or "tool")
                    if btype == "mcp_tool_use" and block.get("server_name"):
                        name = f"mcp__{block['server_name']}__{name}"
                    tool_input = obj(block.get("input"))
                    record: dict[str, Any] = {
                        "call_id": call_id,
                        "tool": name,
                        "where": where,
                        "at": at,
                        "cwd": row.get("cwd") if isinstance(row.get("cwd"), str) else None,
                        **call_fields(name, tool_input),
                    }
                    if btype == "server_tool_use" and name in {"web_search", "web_fetch"}:
                        record["kind"] = "read"
                    if call_id in calls:  # written again (a progress line repeats it)
                        calls[call_id].update({k: v for k, v in record.items() if k != "at"})
                        continue
                    calls[call_id] = record
                    order.append(record)
                    last_text_id = None
                elif _is_result_block(btype):
                    call_id = str(block.get("tool_use_id") or "")
                    record = calls.get(call_id, {})
                    if not record:
                        skipped.append(
                            Skipped(
                                where,
                                f"{btype} for unknown tool_use {call_id!r}",
                                True,
                                str(btype),
                            )
                        )
                        continue
                    error = block.get("is_error")
                    if error is None and isinstance(block.get("content"), dict):
                        # a server tool's error result: `{"type": "…_tool_result_error"}`
                        error = str(block["content"].get("type", "")).endswith("_error") or None
                    record.update(
                        result_fields(
                            record["tool"],
                            block.get("content"),
                            error,
                            structured if btype == "tool_result" else None,
                            record.get("arguments"),
                        )
                    )
                    record["finished_at"] = at
                elif btype in _QUIET_BLOCKS:
                    continue
                elif isinstance(btype, str) and btype.endswith("tool_use"):
                    skipped.append(
                        Skipped(where, f"content block {btype!r} is not mapped", True, str(btype))
                    )
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
            model=model or None,
            task=_request(steps),
        )

    @staticmethod
    def _result_line(
        row: dict[str, Any], where: str, order: list[dict[str, Any] | Message]
    ) -> None:
        """The stream's closing `result`: its text is the run's final answer (the last
        assistant message, when that is what it repeats)."""
        answer = row.get("result")
        if not isinstance(answer, str) or not answer.strip():
            return
        for i in range(len(order) - 1, -1, -1):
            item = order[i]
            if isinstance(item, Message) and item.role == "assistant":
                if item.text.strip() == answer.strip():
                    order[i] = Message("assistant", item.text, item.at, item.where, True)
                    return
                break
        at = next((o.at for o in reversed(order) if isinstance(o, Message)), None)
        order.append(Message("assistant", answer, at, where, True))
