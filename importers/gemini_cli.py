"""Gemini CLI sessions: the native chat recording and `--output-format stream-json`.

The chat recording (`~/.gemini/tmp/<project hash>/chats/session-*.json`) is an object
with `sessionId`, `startTime` and `messages`: `user` and `gemini` messages, the latter
with `toolCalls` (`id`, `name`, `args`, `status`, `result[].functionResponse.response`
holding `output` or `error`). A shell result's text embeds `Exit Code: N`.

The stream (`gemini -p … --output-format stream-json`) is JSONL: `init`, `message`
(`role`, `content`, `delta` for streamed chunks: consecutive chunks are one message),
`tool_use` (`tool_name`, `tool_id`, `parameters`), `tool_result` (`tool_id`, `status`,
`output`, `error`) and `result`, which closes a session's answer. It records no exit
statuses. A file may hold several sessions (`init` again); they continue one run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from outcomes.importers.base import Importer, moment, obj, role, text_of, unreadable
from outcomes.importers.trace import Finish, Message, Skipped, Step, ToolCall, ToolKind, Trace

_SHELL = {"run_shell_command", "shell"}
_WRITE = {"write_file"}
_EDIT = {"replace", "edit", "smart_edit"}
_READ = {
    "read_file",
    "read_many_files",
    "list_directory",
    "glob",
    "search_file_content",
    "grep",
    "web_fetch",
    "google_web_search",
}
_EXIT = re.compile(r"^Exit Code: (-?\d+|\(none\))\s*$", re.M)
_OUTPUT = re.compile(r"^Output: ?(.*?)\n(?:Error: |Exit Code: )", re.M | re.S)


def _kind(name: str) -> ToolKind:
    if name in _SHELL:
        return "shell"
    if name in _WRITE:
        return "write"
    if name in _EDIT:
        return "edit"
    if name in _READ:
        return "read"
    return "other"


def _call(
    call_id: str, name: str, args: dict[str, Any], where: str, at: int | None
) -> dict[str, Any]:
    kind = _kind(name)
    record: dict[str, Any] = {
        "call_id": call_id,
        "tool": name,
        "kind": kind,
        "where": where,
        "at": at,
        "arguments": args,
    }
    if kind == "shell":
        record["command"] = str(args.get("command") or "")
    elif kind in {"write", "edit"}:
        record["path"] = args.get("file_path") or args.get("path") or args.get("absolute_path")
        if kind == "write":
            record["content"] = str(args.get("content") or "")[:200]
    return record


def _result(record: dict[str, Any], output: str, failed: bool) -> None:
    record["output"] = output
    record["failed"] = failed
    if record["kind"] == "shell":
        m = _EXIT.search(output)
        if m and m.group(1) != "(none)":
            record["exit_code"] = int(m.group(1))
        body = _OUTPUT.search(output)
        if body:
            record["output"] = body.group(1)
    if record["kind"] == "write":
        if re.search(r"created and wrote to new file", output):
            record["created"] = True
        elif re.search(r"overwrote file", output):
            record["created"] = False


class GeminiCliImporter(Importer):
    name = "gemini-cli"
    summary = "Gemini CLI chat recording (session-*.json) or --output-format stream-json"

    def sniff(self, head: str) -> bool:
        if '"projectHash"' in head and '"messages"' in head:
            return True
        for line in head.splitlines()[:10]:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict) and row.get("type") == "init" and "session_id" in row:
                return True
        return bool(re.search(r'"type"\s*:\s*"tool_use".*"tool_name"', head))

    def read(self, path: Path, text: str) -> Trace:
        try:
            data: Any = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("messages"), list):
            return self._chat(path, data)
        return self._stream(path, text)

    def _chat(self, path: Path, data: dict[str, Any]) -> Trace:
        order: list[dict[str, Any] | Message] = []
        skipped: list[Skipped] = []
        for index, message in enumerate(data["messages"]):
            where = f"message {index}"
            if not isinstance(message, dict):
                skipped.append(Skipped(where, "not a message object"))
                continue
            at = moment(message.get("timestamp"))
            kind = message.get("type")
            body = text_of(message.get("content"))
            if kind == "user":
                order.append(Message("user", body, at, where))
                continue
            if kind not in {"gemini", "model", "assistant"}:
                if kind not in {"info", "error", "warning"}:
                    skipped.append(Skipped(where, f"message type {kind!r} is not mapped"))
                continue
            if body.strip():
                order.append(Message("assistant", body, at, where))
            for call in message.get("toolCalls") or []:
                if not isinstance(call, dict):
                    continue
                args = obj(call.get("args"))
                record = _call(
                    str(call.get("id") or where),
                    str(call.get("name") or "tool"),
                    args,
                    where,
                    moment(call.get("timestamp")) or at,
                )
                parts = []
                for item in call.get("result") or []:
                    response = ((item or {}).get("functionResponse") or {}).get("response") or {}
                    if isinstance(response, dict):
                        parts.append(
                            str(
                                response.get("output")
                                if "output" in response
                                else response.get("error", "")
                            )
                        )
                status = call.get("status")
                if parts or status in {"success", "error", "cancelled"}:
                    _result(record, "\n".join(parts), status in {"error", "cancelled"})
                order.append(record)
        steps: list[Step] = [o if isinstance(o, Message) else ToolCall(**o) for o in order]
        if not steps:
            raise unreadable(path, self.name, "no messages")
        last_at = moment(data.get("lastUpdated")) or next(
            (s.at for s in reversed(steps) if s.at is not None), None
        )
        steps.append(Finish(f"message {len(data['messages']) - 1}", last_at))
        return Trace(
            self.name,
            "gemini-cli",
            str(path),
            tuple(steps),
            started_at=moment(data.get("startTime")),
            skipped=tuple(skipped),
        )

    def _stream(self, path: Path, text: str) -> Trace:
        order: list[dict[str, Any] | Message] = []
        skipped: list[Skipped] = []
        calls: dict[str, dict[str, Any]] = {}
        model = ""
        delta_open = False
        rows = 0
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            where = f"line {number}"
            try:
                row = json.loads(line)
            except ValueError as exc:
                skipped.append(Skipped(where, f"not JSON: {exc}"))
                continue
            if not isinstance(row, dict):
                skipped.append(Skipped(where, "not a JSON object"))
                continue
            rows += 1
            kind = row.get("type")
            at = moment(row.get("timestamp"))
            if kind == "init":
                model = str(row.get("model") or model)
                delta_open = False
            elif kind == "message":
                who = role(row.get("role"))
                body = text_of(row.get("content"))
                previous = order[-1] if order else None
                if (
                    row.get("delta")
                    and delta_open
                    and isinstance(previous, Message)
                    and previous.role == who
                ):
                    order[-1] = Message(who, previous.text + body, previous.at, previous.where)
                else:
                    order.append(Message(who, body, at, where))
                delta_open = bool(row.get("delta"))
            elif kind == "tool_use":
                params = obj(row.get("parameters"))
                call_id = str(row.get("tool_id") or where)
                record = _call(call_id, str(row.get("tool_name") or "tool"), params, where, at)
                calls[call_id] = record
                order.append(record)
                delta_open = False
            elif kind == "tool_result":
                found = calls.get(str(row.get("tool_id") or ""))
                if found is None:
                    skipped.append(Skipped(where, "a tool_result of no known tool_use"))
                    continue
                output = row.get("output")
                error = row.get("error")
                if output is None and isinstance(error, dict):
                    output = error.get("message")
                _result(found, str(output or ""), row.get("status") == "error")
                found["finished_at"] = at
                delta_open = False
            elif kind == "result":
                for i in range(len(order) - 1, -1, -1):
                    item = order[i]
                    if isinstance(item, Message) and item.role == "assistant":
                        order[i] = Message("assistant", item.text, item.at, item.where, True)
                        break
                    if not isinstance(item, Message):
                        break
                delta_open = False
            else:
                skipped.append(Skipped(where, f"event type {kind!r} is not mapped"))
        if not rows:
            raise unreadable(path, self.name, "no JSON lines")
        steps: list[Step] = [o if isinstance(o, Message) else ToolCall(**o) for o in order]
        if not steps:
            raise unreadable(path, self.name, "no messages or tool calls")
        last_call = next((s for s in reversed(steps) if isinstance(s, ToolCall)), None)
        complete = last_call is None or last_call.output is not None
        last_at = next((s.at for s in reversed(steps) if s.at is not None), None)
        steps.append(Finish(f"line {len(text.splitlines())}", last_at))
        agent = "gemini-cli stream-json" + (f" ({model})" if model else "")
        return Trace(
            self.name, agent, str(path), tuple(steps), skipped=tuple(skipped), complete=complete
        )
