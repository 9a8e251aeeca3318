"""mini-swe-agent trajectories (`*.traj.json`), 1.x and 2.x.

One JSON object: `info` (`mini_version`, `exit_status`, `submission`: for SWE-bench
configs the final `git diff`, `config` with the model's name), `messages`, and
`trajectory_format` — `mini-swe-agent-1` from the 1.x savers (1.0 wrote neither mark; its
`info.model_stats.instance_cost` is how such a file is recognised), `mini-swe-agent-1.1`
from the 2.x agent's own `save`. The version is `info.mini_version` (its major number
says which writer), else the format string.

1.x: `system`, the task as the first `user` message, then `assistant` turns holding one
```` ```bash ```` block, each answered by a `user` message (`<returncode>N</returncode>`
with `<output>` — or `<output_head>`/`<output_tail>` past 10,000 characters — or the
timeout template, "timed out and has been killed"). The run ends with a `user` message
holding the submission (`Submitted`) or a limit's name. Messages carry `timestamp`;
assistant turns carry their model response's `created` in `extra.response`.

2.x: assistant messages carry the parsed commands in `extra.actions` (`command`, and
`tool_call_id` when the model made OpenAI-style `tool_calls` of the `bash` tool); each
executed action is answered by a `tool` message (`tool_call_id`), or a `user` one for
text-based models and commands a human typed, whose `extra` holds `raw_output`,
`returncode`, `exception_info` (a timeout: `exception_type` `TimeoutExpired`) and
`timestamp`; its `content` is the config's observation template (`<returncode>` tags, or
a JSON object with `returncode` and `output`). Models on the Responses API save the
response object (`object: "response"`, `output` items `message`/`function_call`) and
`function_call_output` items (`call_id`, `output`). A `user` message whose
`extra.interrupt_type` is `FormatError` means the model's actions were not run. The run
ends with a `role: "exit"` message (`extra.exit_status`, `extra.submission`): on
`Submitted` the submit command (`echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT …`) printed the
submission and raised before its own observation was written, so the exit message is
that command's result.

The narrative is the last assistant turn's text (its reasoning and the submit command).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from outcomes.importers.base import (
    Importer,
    load_json,
    moment,
    obj,
    text_of,
    unreadable,
)
from outcomes.importers.patch import patch_changes
from outcomes.importers.trace import (
    Finish,
    Message,
    Skipped,
    Step,
    ToolCall,
    Trace,
    ends_with_a_result,
)

# mini-swe-agent's own action pattern: a fenced block tagged `bash`
_BLOCK = re.compile(r"```(?:bash|sh)\s*\n(.*?)\n```", re.S)
_RETURN = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_OUTPUT = re.compile(r"<output>\n?(.*?)</output>", re.S)
_HEADTAIL = re.compile(r"<output_(?:head|tail)>\n?(.*?)</output_(?:head|tail)>", re.S)
# the markers that make the first line of a command's output a submission
_SUBMIT = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")
_REPR_RETURN = re.compile(r"'returncode': (-?\d+)")
_NOT_EXECUTED = "action was not executed"


def _observation(content: str) -> tuple[str, int | None, bool]:
    """(output, exit status, timed out) from an observation's rendered text: the
    `<returncode>` form, the JSON form, or 1.x's timeout template."""
    code = _RETURN.search(content)
    if code is not None:
        out = _OUTPUT.search(content)
        body = out.group(1) if out else "\n".join(_HEADTAIL.findall(content)) or content
        return body, int(code.group(1)), False
    stripped = content.strip()
    if stripped.startswith("{") and '"returncode"' in stripped[:200]:
        try:
            data = load_json(stripped)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("returncode"), int):
            body = data.get("output")
            if not isinstance(body, str):
                parts = [data.get("output_head"), data.get("output_tail")]
                body = "\n".join(p for p in parts if isinstance(p, str))
            return body, data["returncode"], False
    if content.startswith("Observation: {"):  # 1.x's bare default template: a dict
        codes = _REPR_RETURN.findall(content)
        if codes:
            return content, int(codes[-1]), False
    timed_out = "timed out and has been killed" in content[:2000]
    return content, None, timed_out


class MiniSweAgentImporter(Importer):
    name = "mini-swe-agent"
    summary = "mini-swe-agent trajectory (.traj.json), 1.x and 2.x"

    def sniff(self, head: str) -> bool:
        return (
            ('"trajectory_format"' in head and "mini-swe-agent" in head)
            or ('"mini_version"' in head and '"messages"' in head)
            or '"agent_type": "minisweagent.' in head
            or ('"instance_cost"' in head and '"messages"' in head)  # 1.0's save, no marks
            or ('"messages"' in head and "<returncode>" in head)
        )

    def read(self, path: Path, text: str) -> Trace:
        try:
            data: Any = load_json(text)
        except ValueError as exc:
            raise unreadable(path, self.name, f"not JSON: {str(exc)[:200]}") from None
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            raise unreadable(path, self.name, "no `messages` list")
        return _Reader(path, data).trace()


class _Reader:
    """One trajectory's messages, read in order into steps."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data
        self.info = obj(data.get("info"))
        self.records: list[dict[str, Any] | Message] = []
        self.skipped: list[Skipped] = []
        self.by_id: dict[str, dict[str, Any]] = {}
        # calls without an id waiting for their observation, oldest first
        self.waiting: list[dict[str, Any]] = []
        self.at: int | None = None
        self.exit: dict[str, Any] | None = None
        # 2.x writes every observation with its `extra`; only 1.x answers a command
        # with a bare user message
        major = re.match(r"\d+", str(self.info.get("mini_version") or ""))
        self.v2 = (major is not None and int(major.group()) >= 2) or data.get(
            "trajectory_format"
        ) == "mini-swe-agent-1.1"

    # -- calls -------------------------------------------------------------------------

    def _call(self, command: str, where: str, call_id: str | None) -> dict[str, Any]:
        own = where.replace(" ", "-")  # `message-N`, `message-N-2` for a second action
        while not call_id and own in self.by_id:
            own = f"{where.replace(' ', '-')}-{len(self.by_id)}"
        record: dict[str, Any] = {
            "call_id": call_id or own,
            "tool": "bash",
            "kind": "shell",
            "command": command.strip(),
            "where": where,
            "at": self.at,
        }
        self.records.append(record)
        self.by_id[call_id or own] = record
        if not call_id:
            self.waiting.append(record)
        return record

    def _answer(self, record: dict[str, Any], content: str, extra: dict[str, Any]) -> None:
        """An observation's output, exit status and timeout onto its call."""
        body, code, timed_out = _observation(content)
        if isinstance(extra.get("raw_output"), str):
            body = extra["raw_output"]
        if isinstance(extra.get("returncode"), int) and not isinstance(
            extra.get("returncode"), bool
        ):
            code = extra["returncode"]
        exception = str(extra.get("exception_info") or "")
        if extra.get("exception_type") == "TimeoutExpired" or "timed out" in exception.lower():
            timed_out = True
        if exception == _NOT_EXECUTED:
            record["not_executed"] = True
            return
        record["output"] = body
        record["exit_code"] = None if timed_out or (code is not None and code < 0) else code
        record["timed_out"] = timed_out
        if exception and not timed_out:
            record["failed"] = True  # the environment could not run it
        record["finished_at"] = moment(extra.get("timestamp"))

    def _actions(self, message: dict[str, Any], where: str, index: int) -> None:
        """The commands of an assistant turn: `extra.actions` (2.x), else its tool calls,
        else (1.x) its one ```bash block."""
        extra = obj(message.get("extra"))
        actions = extra.get("actions")
        if isinstance(actions, list):
            for action in actions:
                command = obj(action).get("command")
                if isinstance(command, str):
                    call_id = obj(action).get("tool_call_id")
                    self._call(command, where, str(call_id) if call_id else None)
                else:
                    self.skipped.append(
                        Skipped(where, "an action without a command", True, "action")
                    )
            return
        calls = message.get("tool_calls")
        if isinstance(calls, list) and calls:
            self._tool_calls(calls, where, index)
            return
        if message.get("object") == "response":
            items = [
                i for i in message.get("output") or [] if obj(i).get("type") == "function_call"
            ]
            self._tool_calls(items, where, index)
            return
        blocks = _BLOCK.findall(text_of(message.get("content")))
        if len(blocks) == 1:
            self._call(blocks[0], where, None)
        elif blocks:
            self.skipped.append(Skipped(where, f"{len(blocks)} bash blocks (the agent runs none)"))

    def _tool_calls(self, calls: list[Any], where: str, index: int) -> None:
        """Tool calls saved without `extra.actions`: read from the calls themselves. Ones
        the agent refused (a format error follows) did not run and are no tool steps."""
        refused = self._format_error_follows(index)
        for call in calls:
            call = obj(call)
            function = obj(call.get("function")) or call
            arguments = function.get("arguments")
            try:
                args = load_json(arguments) if isinstance(arguments, str) else arguments
            except ValueError:
                args = None
            command = obj(args).get("command")
            if refused:
                self.skipped.append(Skipped(where, "a tool call refused as a format error"))
            elif function.get("name") == "bash" and isinstance(command, str):
                call_id = call.get("id") or call.get("call_id")
                self._call(command, where, str(call_id) if call_id else None)
            else:
                name = function.get("name")
                self.skipped.append(
                    Skipped(where, f"tool call {name!r} without a bash command", True, "tool call")
                )

    def _format_error_follows(self, index: int) -> bool:
        messages = self.data["messages"]
        following = messages[index + 1] if index + 1 < len(messages) else None
        return obj(obj(following).get("extra")).get("interrupt_type") == "FormatError"

    # -- messages ----------------------------------------------------------------------

    def _observation_of(self, message: dict[str, Any], where: str) -> None:
        """A `tool` message or `function_call_output` item: the result of its call."""
        call_id = str(message.get("tool_call_id") or message.get("call_id") or "")
        record = self.by_id.get(call_id)
        content = message.get("output") if "output" in message else message.get("content")
        if record is None:
            self.skipped.append(
                Skipped(where, f"a tool result of no known call {call_id!r}", True, "tool result")
            )
            return
        self._answer(record, text_of(content), obj(message.get("extra")))

    def _user(self, message: dict[str, Any], where: str, index: int) -> None:
        extra = obj(message.get("extra"))
        content = text_of(message.get("content"))
        if extra.get("interrupt_type") == "FormatError":
            return  # the agent's complaint about the model's answer, not the user's words
        if isinstance(extra.get("actions"), list):  # a command a human typed (2.x)
            self._actions(message, where, index)
            return
        if "returncode" in extra or "raw_output" in extra:
            if self.waiting:
                self._answer(self.waiting.pop(0), content, extra)
            else:
                self.skipped.append(
                    Skipped(where, "an observation of no command", True, "observation")
                )
            return
        if self.waiting and index > 1 and not extra and not self.v2:
            # 1.x: the answer to the command before it — its observation, the timeout
            # template, the submission, or a limit's name (no exit status in those)
            self._answer(self.waiting.pop(0), content, {})
            return
        self.records.append(Message("user", content, self.at, where))

    def _assistant(self, message: dict[str, Any], where: str, index: int) -> None:
        if message.get("object") == "response":
            texts = [
                text_of(obj(item).get("content"))
                for item in message.get("output") or []
                if obj(item).get("type") == "message"
            ]
            content = "\n".join(t for t in texts if t)
        else:
            content = text_of(message.get("content"))
        self.waiting.clear()  # an unanswered earlier command stays without a result
        if content.strip() or not (
            message.get("tool_calls") or obj(message.get("extra")).get("actions")
        ):
            self.records.append(Message("assistant", content, self.at, where))
        self._actions(message, where, index)

    def _exit(self, message: dict[str, Any], where: str) -> None:
        """The run's end (2.x): on `Submitted`, the submission is the output of the
        command that printed it."""
        extra = obj(message.get("extra"))
        self.exit = extra
        if extra.get("exit_status") != "Submitted":
            return
        submission = extra.get("submission")
        text = submission if isinstance(submission, str) else text_of(message.get("content"))
        for record in reversed(self.records):
            if isinstance(record, Message):
                continue
            if any(marker in record["command"] for marker in _SUBMIT) and (
                "output" not in record or record.get("not_executed")
            ):
                record.pop("not_executed", None)
                record.update(output=text, exit_code=0, finished_at=self.at)
            break

    def trace(self) -> Trace:
        messages = self.data["messages"]
        for index, message in enumerate(messages):
            where = f"message {index}"
            if not isinstance(message, dict):
                self.skipped.append(Skipped(where, "not a message object"))
                continue
            extra = obj(message.get("extra"))
            self.at = (
                moment(obj(extra.get("response")).get("created"))
                or moment(extra.get("timestamp"))
                or moment(message.get("timestamp"))
                or self.at
            )
            role = message.get("role") or message.get("type")
            if message.get("object") == "response":
                role = "assistant"
            if role == "system":
                continue
            if role == "assistant":
                self._assistant(message, where, index)
            elif role == "tool" or role == "function_call_output":
                self._observation_of(message, where)
            elif role == "user":
                self._user(message, where, index)
            elif role == "exit":
                self._exit(message, where)
            else:
                self.skipped.append(Skipped(where, f"role {role!r} is not mapped"))
        steps: list[Step] = []
        for r in self.records:
            if isinstance(r, Message):
                steps.append(r)
            elif r.pop("not_executed", False):
                self.skipped.append(Skipped(r["where"], "a command the agent did not execute"))
            else:
                steps.append(ToolCall(**r))
        if not steps:
            raise unreadable(self.path, MiniSweAgentImporter.name, "no user or assistant messages")
        submission = (self.exit or {}).get("submission") or self.info.get("submission")
        final = (
            patch_changes(submission, "info.submission")
            if isinstance(submission, str) and submission.strip()
            else None
        )
        steps.append(Finish(f"message {len(messages) - 1}", self.at))
        return Trace(
            MiniSweAgentImporter.name,
            self._agent(),
            str(self.path),
            tuple(steps),
            final_inventory=final,
            skipped=tuple(self.skipped),
            complete=ends_with_a_result(steps),
            model=self._model(),
        )

    def _model(self) -> str | None:
        """The configured model (`info.config.model.model_name`), else the model the
        first response names (`extra.response.model`)."""
        config = obj(self.info.get("config"))
        named = obj(config.get("model")).get("model_name")
        if isinstance(named, str) and named:
            return named
        for message in self.data.get("messages") or ():
            answered = obj(obj(obj(message).get("extra")).get("response")).get("model")
            if isinstance(answered, str) and answered:
                return answered
        return None

    def _agent(self) -> str:
        version = str(self.info.get("mini_version") or self.data.get("trajectory_format") or "")
        config = obj(self.info.get("config"))
        model = str(obj(config.get("model")).get("model_name") or "")
        return f"mini-swe-agent {version}".strip() + (f" ({model})" if model else "")
