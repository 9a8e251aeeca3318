"""Gemini CLI sessions: the chat recording (JSON, then JSONL), `--output-format
stream-json`, and `/chat save` checkpoints.

The chat recording lives in `~/.gemini/tmp/<project hash>/chats/`. Up to 0.38 it was one
JSON object, `session-*.json`: `sessionId`, `projectHash`, `startTime`, `lastUpdated`
and `messages`. From 0.39 it is JSONL, `session-*.jsonl`, appended to as the session goes:
a header line (`sessionId`, `projectHash`, `startTime`, …), then each message as a line
every time it is written (a message is written again when its tool calls, tokens or
content change: the last line with an `id` wins and keeps its first place), `$set` lines
that update the header's fields (a `$set` holding `messages` replaces the whole list, a
checkpoint), and `$rewindTo` lines that drop the named message and every one after it.
A resumed legacy file is migrated into the same JSONL form. The format is recognised by
its header line (JSONL) or its one object (JSON); both are read to the same messages.

Messages are `user`, `gemini` (with `toolCalls`: `id`, `name`, `args`, `status`
success/error/cancelled, `result` — the `functionResponse` parts sent back to the model,
whose `response` holds `output` or `error`), `info`, `error`, `warning`. A tool's
response is also recorded as a `user` message whose content is those `functionResponse`
parts (matched to the call by `id`): it is the call's result when the call has none, and
never the user's words. A shell result's text says how the command ended: up to about
0.2x every field (`Command:`, `Directory:`, `Output:`, `Error:`, `Exit Code:`,
`Signal:`, …, `(none)` when empty); later only `Output:` and the fields that apply, an
`Exit Code:` line only when it is not 0, the whole wrapped in `<untrusted_context>`. A
call whose status is `success` may still show `Exit Code: 1`: the exit code in the
output wins.

The stream (`gemini -p … --output-format stream-json`) is JSONL: `init`, `message`
(`role`, `content`, `delta` for streamed chunks: consecutive chunks are one message),
`tool_use` (`tool_name`, `tool_id`, `parameters`), `tool_result` (`tool_id`, `status`,
`output`, `error`) and `result`, which closes a session's answer. A shell result's
`output` is what the shell tool displays: the command's output, with no status; when
the command printed nothing, `Command exited with code: N` for a non-zero status, and
nothing at all for exit 0. A file may hold several sessions (`init` again); they
continue one run.
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
    load_json,
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
    ends_with_a_result,
)

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
    "grep_search",
    "web_fetch",
    "google_web_search",
}
_EXIT = re.compile(r"^Exit Code: (-?\d+|\(none\))\s*$", re.M)
# the fields a shell result may end with, after `Output:`
_TRAILER = re.compile(r"^(?:Error|Exit Code|Signal|Background PIDs|Process Group PGID): ", re.M)
_WRAP = re.compile(r"^\s*<untrusted_context>\n?(.*?)\n?</untrusted_context>\s*$", re.S)
_OUTPUT_LINE = re.compile(r"^Output: ", re.M)
_SIGNAL = re.compile(r"^Signal: (\S+)\s*$", re.M)


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
        "arguments": bounded(args),
    }
    if kind == "shell":
        record["command"] = str(args.get("command") or "")
    elif kind in {"write", "edit"}:
        record["path"] = path_of(args.get("file_path"), args.get("path"), args.get("absolute_path"))
        if kind == "write":
            record["content"] = str(args.get("content") or "")[:200]
    return record


def shell_result(text: str) -> tuple[str, int | None, bool]:
    """(output, exit status, timed out) of a `run_shell_command` result's text. The exit
    status is the `Exit Code:` line; in the later form, which writes that line only for a
    non-zero status, a finished command without one exited 0. A cancelled, timed-out or
    backgrounded command has no status."""
    wrapped = _WRAP.match(text)
    body = wrapped.group(1) if wrapped else text
    if body.startswith(("Command was automatically cancelled", "Command was cancelled")):
        return body, None, "exceeded the timeout" in body[:200]
    if body.startswith(("Command moved to background", "Command is running in background")):
        return body, None, False
    first = _OUTPUT_LINE.search(body) if body.startswith("Command: ") else None
    start = first.start() if first else 0
    if not body[start:].startswith("Output: "):
        return body, None, False
    lines = body[start + len("Output: ") :].split("\n")
    end = len(lines)
    while end > 1 and _TRAILER.match(lines[end - 1]):
        end -= 1  # the fields after the output, read from the end
    output = "\n".join(lines[:end])
    fields = "\n".join(lines[end:])
    if output == "(empty)":
        output = ""
    code = _EXIT.search(fields)
    if code is not None:
        return output, None if code.group(1) == "(none)" else int(code.group(1)), False
    if start > 0:
        return output, None, False  # the early form always writes the line
    signal = _SIGNAL.search(fields)
    error = re.search(r"^Error: (?!\(none\))", fields, re.M)
    if error is not None or (signal is not None and signal.group(1) not in {"(none)", "0"}):
        return output, None, False  # it could not run, or a signal ended it
    return output, 0, False


def _result(record: dict[str, Any], output: str, failed: bool) -> None:
    record["output"] = output
    record["failed"] = failed
    if record["kind"] == "shell":
        body, code, timed_out = shell_result(output)
        record["output"] = body
        record["exit_code"] = None if failed and code == 0 else code
        record["timed_out"] = timed_out
    if record["kind"] == "write":
        if re.search(r"created and wrote to new file", output):
            record["created"] = True
        elif re.search(r"overwrote file", output):
            record["created"] = False


_EXITED = re.compile(r"^Command exited with code: (-?\d+)\s*$")


def _displayed_status(output: object, failed: bool) -> int | None:
    """A stream's shell exit status, from what the shell tool displays (the stream's
    `output`): the tool shows the command's output, or — when there was none — `Command
    exited with code: N` for a non-zero status, a signal, a failure or a cancellation,
    and nothing at all only for a clean exit 0. So an empty display is 0, that line is
    N, anything else (output, which carries no status) is unknown. Debug mode shows the
    full result text instead, read as the recording's."""
    if not isinstance(output, str) or failed:
        return None
    if output == "":
        return 0
    if (m := _EXITED.match(output)) is not None:
        return int(m.group(1))
    if output.lstrip().startswith(("Output: ", "Command: ", "<untrusted_context>")):
        return shell_result(output)[1]
    return None


def _response_text(parts: object) -> str | None:
    """The text of a tool's `functionResponse` parts (their `output`, else `error`), or
    None when there are none."""
    texts = []
    for item in parts if isinstance(parts, list) else [parts]:
        response = obj(obj(obj(item).get("functionResponse")).get("response"))
        if "output" in response or "error" in response:
            value = response.get("output") if "output" in response else response.get("error")
            texts.append(value if isinstance(value, str) else text_of(value))
    return "\n".join(texts) if texts else None


def _said(content: object) -> str:
    """A message's words: its text, or its text parts without the model's thoughts
    (`thought: true` parts, which a synthetic message may hold)."""
    if isinstance(content, list):
        content = [p for p in content if not (isinstance(p, dict) and p.get("thought") is True)]
    return text_of(content)


def _function_responses(content: object) -> dict[str, object]:
    """A `user` message's `functionResponse` parts by call id (a tool's response)."""
    found: dict[str, object] = {}
    for part in content if isinstance(content, list) else []:
        response = obj(obj(part).get("functionResponse"))
        if response and isinstance(response.get("id"), str):
            found[response["id"]] = [part]
    return found


def _is_content(item: object) -> bool:
    """A Gemini API `Content`: a `role` of user or model and a list of `parts`."""
    return (
        isinstance(item, dict)
        and word(item.get("role")) in {"user", "model"}
        and isinstance(item.get("parts"), list)
    )


def _is_header(row: object) -> bool:
    """The JSONL recording's first line: the session's fields, no message."""
    return (
        isinstance(row, dict)
        and isinstance(row.get("sessionId"), str)
        and isinstance(row.get("projectHash"), str)
        and "type" not in row
        and "id" not in row
    )


class GeminiCliImporter(Importer):
    name = "gemini-cli"
    summary = (
        "Gemini CLI chat recording (session-*.json, session-*.jsonl) or --output-format stream-json"
    )

    def sniff(self, head: str) -> bool:
        if '"projectHash"' in head and '"messages"' in head:
            return True
        if re.search(r'"role":\s*"model"', head) and re.search(r'"parts":\s*\[', head):
            return True  # a `/chat save` checkpoint
        for row in first_json_lines(head, 10):
            if _is_header(row):
                return True
            if isinstance(row, dict) and row.get("type") == "init" and "session_id" in row:
                return True
            if isinstance(row, dict) and row.get("type") == "tool_use" and "tool_name" in row:
                return True
        return False

    def read(self, path: Path, text: str) -> Trace:
        try:
            data: Any = load_json(text)
        except ValueError as exc:
            if "nested too deeply" in str(exc):
                raise unreadable(path, self.name, str(exc)) from None
            data = None
        if isinstance(data, dict) and isinstance(data.get("messages"), list):
            found: list[tuple[dict[str, Any] | None, str]] = [
                (m if isinstance(m, dict) else None, f"message {i}")
                for i, m in enumerate(data["messages"])
            ]
            last = f"message {len(data['messages']) - 1}"
            return self._chat(path, found, data, last, [], "gemini-cli")
        history = data.get("history") if isinstance(data, dict) else data
        if isinstance(history, list) and history and all(_is_content(c) for c in history):
            return self._checkpoint(path, history)
        rows = json_lines(text)
        first = next((row for _, row, why in rows if why is None), None)
        if _is_header(first):
            return self._recording(path, rows)
        return self._stream(path, text)

    def _checkpoint(self, path: Path, history: list[dict[str, Any]]) -> Trace:
        """A `/chat save` checkpoint: the model's history as Gemini API `Content` items
        (`role` user/model, `parts` of text, `functionCall`, `functionResponse`). It has
        no times and no statuses: a result is its response's `output`, or its `error`."""
        order: list[dict[str, Any] | Message] = []
        open_calls: list[dict[str, Any]] = []
        skipped: list[Skipped] = []
        for index, content in enumerate(history):
            where = f"history {index}"
            parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
            words = _said([p for p in parts if "text" in p])
            if content.get("role") == "model":
                if words.strip():
                    order.append(Message("assistant", words, None, where))
                for n, part in enumerate(parts):
                    call = obj(part.get("functionCall"))
                    if call:
                        name = str(call.get("name") or "tool")
                        record = _call(
                            str(call.get("id") or f"{where}:{n}"),
                            name,
                            obj(call.get("args")),
                            where,
                            None,
                        )
                        order.append(record)
                        open_calls.append(record)
                continue
            if words.strip():
                order.append(Message("user", words, None, where))
            for part in parts:
                response = obj(part.get("functionResponse"))
                if not response:
                    continue
                # by id, else the oldest open call of that name (older models send no id)
                by_id = [c for c in open_calls if c["call_id"] == response.get("id")]
                by_name = [c for c in open_calls if c["tool"] == response.get("name")]
                matched = by_id or by_name
                if not matched:
                    skipped.append(
                        Skipped(
                            where, "a functionResponse of no known call", True, "functionResponse"
                        )
                    )
                    continue
                record = matched[0]
                open_calls.remove(record)
                answer = obj(response.get("response"))
                _result(
                    record,
                    _response_text([part]) or "",
                    "error" in answer and "output" not in answer,
                )
        steps: list[Step] = [o if isinstance(o, Message) else ToolCall(**o) for o in order]
        if not steps:
            raise unreadable(path, self.name, "an empty checkpoint")
        steps.append(Finish(f"history {len(history) - 1}", None))
        return Trace(
            self.name,
            "gemini-cli checkpoint",
            str(path),
            tuple(steps),
            skipped=tuple(skipped),
            complete=ends_with_a_result(steps),
        )

    def _recording(self, path: Path, rows: list[tuple[int, Any, str | None]]) -> Trace:
        """The JSONL recording, replayed the way Gemini CLI loads it: the last writing
        of each message in its first place, `$set` updates, `$rewindTo` cuts."""
        meta: dict[str, Any] = {}
        latest: dict[str, tuple[dict[str, Any], str]] = {}
        skipped: list[Skipped] = []
        rewound = rewound_calls = 0
        for number, row, why in rows:
            where = f"line {number}"
            if why is not None or not isinstance(row, dict):
                skipped.append(Skipped(where, why or "not a JSON object"))
                continue
            if isinstance(row.get("$rewindTo"), str):
                ids = list(latest)
                cut = ids.index(row["$rewindTo"]) if row["$rewindTo"] in ids else 0
                for gone in ids[cut:]:
                    tool_calls = latest.pop(gone)[0].get("toolCalls")
                    rewound_calls += len(tool_calls) if isinstance(tool_calls, list) else 0
                    rewound += 1
            elif isinstance(row.get("id"), str):
                latest[row["id"]] = (row, where)
            elif isinstance(row.get("$set"), dict):
                update = row["$set"]
                if isinstance(update.get("messages"), list):
                    latest = {
                        m["id"]: (m, where)
                        for m in update["messages"]
                        if isinstance(m, dict) and isinstance(m.get("id"), str)
                    }
                meta.update({k: v for k, v in update.items() if k != "messages"})
            elif _is_header(row) or isinstance(row.get("sessionId"), str):
                meta.update({k: v for k, v in row.items() if k != "messages"})
                legacy = row.get("messages")
                for m in legacy if isinstance(legacy, list) else []:  # a whole record, one line
                    if isinstance(m, dict) and isinstance(m.get("id"), str):
                        latest[m["id"]] = (m, where)
            else:
                skipped.append(Skipped(where, "a line of no known kind"))
        if rewound:
            # the user took them back (Gemini CLI may also have reverted their file
            # changes): the conversation is what the agent's own loader keeps
            skipped.append(
                Skipped(
                    "$rewindTo",
                    f"{rewound} message(s) rewound out of the conversation"
                    + (
                        f" ({rewound_calls} tool call(s) in them not read)" if rewound_calls else ""
                    ),
                )
            )
        found: list[tuple[dict[str, Any] | None, str]] = list(latest.values())
        last = f"line {rows[-1][0]}" if rows else "line 0"
        kind = "gemini-cli" + (" subagent" if meta.get("kind") == "subagent" else "")
        return self._chat(path, found, meta, last, skipped, kind)

    def _chat(
        self,
        path: Path,
        found: list[tuple[dict[str, Any] | None, str]],
        meta: dict[str, Any],
        last: str,
        skipped: list[Skipped],
        agent: str,
    ) -> Trace:
        """The messages of a recording (JSON or JSONL) as steps."""
        responses: dict[str, object] = {}
        for message, _ in found:
            if message is not None and message.get("type") == "user":
                responses.update(_function_responses(message.get("content")))
        order: list[dict[str, Any] | Message] = []
        for message, where in found:
            if message is None:
                skipped.append(Skipped(where, "not a message object"))
                continue
            at = moment(message.get("timestamp"))
            kind = word(message.get("type"))
            body = _said(message.get("content"))
            if kind == "user":
                if not _function_responses(message.get("content")):
                    order.append(Message("user", body, at, where))
                continue  # a tool's response: read with its call
            if kind not in {"gemini", "model", "assistant"}:
                if kind not in {"info", "error", "warning"}:
                    skipped.append(Skipped(where, f"message type {kind!r} is not mapped"))
                continue
            if body.strip():
                order.append(Message("assistant", body, at, where))
            tool_calls = message.get("toolCalls")
            for call in tool_calls if isinstance(tool_calls, list) else []:
                if not isinstance(call, dict):
                    skipped.append(
                        Skipped(where, "a tool call that is not an object", True, "toolCall")
                    )
                    continue
                call_id = str(call.get("id") or where)
                record = _call(
                    call_id,
                    str(call.get("name") or "tool"),
                    obj(call.get("args")),
                    where,
                    moment(call.get("timestamp")) or at,
                )
                text = _response_text(call.get("result"))
                if text is None:
                    text = _response_text(responses.get(call_id))
                status = word(call.get("status"))
                if text is not None or status in {"success", "error", "cancelled"}:
                    _result(record, text or "", status in {"error", "cancelled"})
                order.append(record)
        steps: list[Step] = [o if isinstance(o, Message) else ToolCall(**o) for o in order]
        if not steps:
            raise unreadable(path, self.name, "no messages")
        last_at = moment(meta.get("lastUpdated")) or next(
            (s.at for s in reversed(steps) if s.at is not None), None
        )
        steps.append(Finish(last, last_at))
        return Trace(
            self.name,
            agent,
            str(path),
            tuple(steps),
            started_at=moment(meta.get("startTime")),
            skipped=tuple(skipped),
            # Each model message of a recording names the model that wrote it.
            model=next(
                (
                    str(m["model"])
                    for m, _ in found
                    if m is not None and isinstance(m.get("model"), str) and m["model"]
                ),
                None,
            ),
        )

    def _stream(self, path: Path, text: str) -> Trace:
        order: list[dict[str, Any] | Message] = []
        skipped: list[Skipped] = []
        calls: dict[str, dict[str, Any]] = {}
        model = ""
        delta_open = False
        rows = 0
        lines = json_lines(text)
        for number, row, why in lines:
            where = f"line {number}"
            if why is not None:
                skipped.append(Skipped(where, why))
                continue
            if not isinstance(row, dict):
                skipped.append(Skipped(where, "not a JSON object"))
                continue
            rows += 1
            kind = word(row.get("type"))
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
                    skipped.append(
                        Skipped(where, "a tool_result of no known tool_use", True, "tool_result")
                    )
                    continue
                output = row.get("output")
                error = row.get("error")
                failed = word(row.get("status")) == "error"
                if output is None and isinstance(error, dict):
                    output = error.get("message")
                _result(found, str(output or ""), failed)
                if found["kind"] == "shell":
                    found["exit_code"] = _displayed_status(row.get("output"), failed)
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
            elif kind == "error":
                message = str(row.get("message") or "")[:200]
                skipped.append(Skipped(where, f"{row.get('severity') or 'error'}: {message}"))
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
        steps.append(Finish(f"line {lines[-1][0] if lines else 0}", last_at))
        agent = "gemini-cli stream-json" + (f" ({model})" if model else "")
        return Trace(
            self.name,
            agent,
            str(path),
            tuple(steps),
            skipped=tuple(skipped),
            complete=complete,
            model=model or None,
        )
