"""OpenHands event lists: agent-sdk (V1) event lists and v0 evaluation output.

V1 (a JSON list, or JSONL, of events with `kind`; the version is that discriminator):
`MessageEvent` (`source` user/agent, `llm_message.content`), `ActionEvent` (`action.kind`
— the shell's `ExecuteBashAction`, renamed `TerminalAction` in November 2025;
`FileEditorAction`/`StrReplaceEditorAction`; the Gemini-style `WriteFileAction`,
`EditAction`, `ReadFileAction`; `ApplyPatchAction`; `FinishAction`, `ThinkAction`, …;
`tool_call_id`; `action` is null when the model's call could not be parsed),
`ObservationEvent` (paired by `action_id`; `ExecuteBashObservation`/`TerminalObservation`
have `output` or `content` blocks, `exit_code` — often None — and `metadata.exit_code`,
the shell's status for the line, and `timeout`; others have `content`, `is_error` or
`error`, and `prev_exist`/`is_new_file` for a write), `AgentErrorEvent` and
`UserRejectObservation` (a call that failed in the agent or was refused: its result),
and `ACPToolCallEvent` (a tool call an ACP agent ran: `tool_kind` execute/edit/read/…,
`raw_input`, `raw_output`, `status`, `is_error`, written again as it progresses).
Actions or observations stored as Python-repr strings are read for their kind and
fields.

v0 (`output.jsonl` lines of an evaluation, a saved trajectory, or a bare `history`
list): `history` items with `action` (`run`, `run_ipython`, `edit`, `write`, `read`,
`browse`, `call_tool_mcp`, `message`, `finish`, …) and `args`, or `observation` with
`content`, `cause` (the action's id) and `extras` (`exit_code`, `metadata.exit_code`);
some evaluations write the history as `[action, observation]` pairs. A `run` with an
empty command continues the previous command and its output belongs to it.
`test_result.git_patch` is the run's final diff.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any, Literal

from outcomes.importers.base import (
    Importer,
    bounded,
    json_lines,
    key_of,
    load_json,
    moment,
    obj,
    path_of,
    role,
    text_of,
    unreadable,
    word,
)
from outcomes.importers.patch import patch_changes
from outcomes.importers.trace import (
    FileChange,
    Finish,
    Message,
    Skipped,
    Step,
    ToolCall,
    Trace,
    ends_with_a_result,
)

_REPR = re.compile(r"^(\w+)\((.*)\)$", re.S)
_SHELL_ACTIONS = {"ExecuteBashAction", "TerminalAction", "CmdRunAction"}
_SHELL_OBSERVATIONS = {"ExecuteBashObservation", "TerminalObservation"}
_EDITOR_ACTIONS = {"FileEditorAction", "StrReplaceEditorAction", "PlanningFileEditorAction"}
# event kinds that hold no step of the run
_QUIET_EVENTS = {
    "SystemPromptEvent",
    "PauseEvent",
    "Condensation",
    "CondensationRequest",
    "CondensationSummaryEvent",
    "ConversationStateUpdateEvent",
    "LLMCompletionLogEvent",
    "TokenEvent",
    "StreamingDeltaEvent",
    "HookExecutionEvent",
    "InterruptEvent",
    "ConversationErrorEvent",
}
# ACP tool kinds (the Agent Client Protocol's `ToolKind`)
_ACP_KINDS = {"execute": "shell", "edit": "edit", "delete": "delete", "read": "read"}
# v0 observations that answer no tool call
_V0_QUIET = {
    "null",
    "agent_state_changed",
    "recall",
    "user_rejected",
    "think",
    "message",
    "chat",
    "condense",
    "loop_detection",
    "task_tracking",
    "success",
}
_PATCH_CHANGE: dict[str, Literal["added", "modified", "deleted"]] = {
    "Add": "added",
    "Update": "modified",
    "Delete": "deleted",
}
_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$", re.M)


def _from_repr(value: object) -> object:
    """`ExecuteBashAction(command='ls', timeout=None)` as {'kind': ..., 'command': ...}."""
    if not isinstance(value, str):
        return value
    m = _REPR.match(value.strip())
    if not m:
        return value
    # enum members print as `<SecurityRisk.LOW: 'LOW'>`: their value is what counts
    text = re.sub(r"<[\w.]+: ('[^']*'|\"[^\"]*\"|-?\d+)>", r"\1", value.strip())
    try:
        call = ast.parse(text, mode="eval").body
    except SyntaxError:
        return {"kind": m.group(1)}
    return _literal(call)


def _literal(node: ast.expr) -> Any:
    """A repr's value: literals as themselves, `Name(a=…)` as {'kind': 'Name', 'a': …}
    (nested ones too: `metadata=CmdOutputMetadata(exit_code=0)`), anything else None."""
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        out: dict[str, Any] = {kw.arg: _literal(kw.value) for kw in node.keywords if kw.arg}
        out["kind"] = name  # the class, whatever a `kind` field says
        return out
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values, strict=True) if k}
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def _exit(obs: dict[str, Any]) -> int | None:
    for value in (obs.get("exit_code"), obj(obs.get("metadata")).get("exit_code")):
        if isinstance(value, int) and value >= 0:
            return value
    return None


class OpenHandsImporter(Importer):
    name = "openhands-events"
    summary = "OpenHands agent-sdk event list or v0 evaluation output (history)"

    def sniff(self, head: str) -> bool:
        return bool(
            re.search(r'"kind"\s*:\s*"(ActionEvent|ObservationEvent|MessageEvent)"', head)
            or (
                re.search(r'"history"\s*:', head) and re.search(r'"(action|observation)"\s*:', head)
            )
            or re.search(r'"observation"\s*:\s*"run"', head)
        )

    def read(self, path: Path, text: str) -> Trace:
        lines_skipped: list[Skipped] = []
        try:
            documents = [load_json(text)]
        except ValueError as exc:
            if "nested too deeply" in str(exc) and text.lstrip()[:1] == "[":
                raise unreadable(path, self.name, str(exc)) from None
            documents = []
            for number, row, why in json_lines(text):
                if why is None:
                    documents.append(row)
                else:
                    lines_skipped.append(Skipped(f"line {number}", why))
            if not documents:
                raise unreadable(path, self.name, f"not JSON: {str(exc)[:200]}") from None
        if len(documents) == 1 and isinstance(documents[0], list):
            events = documents[0]
        elif all(isinstance(d, dict) and "kind" in d for d in documents):
            events = documents
        else:
            events = None
        if events is not None and any(isinstance(e, dict) and "kind" in e for e in events):
            return self._v1(path, events, lines_skipped)
        output = documents[0] if len(documents) == 1 else None
        if isinstance(output, dict) and isinstance(output.get("history"), list):
            return self._v0(path, output, lines_skipped)
        if events is not None and any(isinstance(e, dict | list) and _v0_item(e) for e in events):
            return self._v0(path, {"history": events}, lines_skipped)
        raise unreadable(path, self.name, "neither an event list nor an output with a history")

    # -- agent-sdk (V1) ----------------------------------------------------------------

    def _v1(self, path: Path, events: list[Any], skipped: list[Skipped]) -> Trace:
        order: list[dict[str, Any] | Message] = []
        by_action: dict[str, dict[str, Any]] = {}
        ignored: set[str] = set()
        for index, event in enumerate(events):
            where = f"event {index}"
            if not isinstance(event, dict):
                skipped.append(Skipped(where, "not an event object"))
                continue
            kind = word(event.get("kind"))
            at = moment(event.get("timestamp"))
            if kind == "MessageEvent":
                llm = obj(event.get("llm_message"))
                order.append(
                    Message(role(event.get("source")), text_of(llm.get("content")), at, where)
                )
            elif kind == "ActionEvent":
                self._v1_action(event, where, at, order, by_action, ignored, skipped)
            elif kind == "ObservationEvent":
                self._v1_observation(event, where, at, by_action, ignored, skipped)
            elif kind in {"AgentErrorEvent", "UserRejectObservation"}:
                target = by_action.get(str(event.get("action_id") or "")) or by_action.get(
                    str(event.get("tool_call_id") or "")
                )
                if target is None:
                    continue  # an error of the agent's own, no tool call's
                reason = event.get("error") or event.get("rejection_reason") or kind
                target.update(output=str(reason), failed=True, finished_at=at)
            elif kind == "ACPToolCallEvent":
                self._acp(event, where, at, order, by_action, skipped)
            elif kind in _QUIET_EVENTS:
                continue
            else:
                tool = isinstance(kind, str) and kind.endswith(("Action", "Observation"))
                skipped.append(
                    Skipped(where, f"event kind {kind!r} is not mapped", tool, f"event {kind!r}")
                )
        working = next(
            (
                str(obj(obj(_from_repr(e.get("observation"))).get("metadata")).get("working_dir"))
                for e in events
                if isinstance(e, dict)
                and obj(obj(_from_repr(e.get("observation"))).get("metadata")).get("working_dir")
            ),
            None,
        )
        return self._trace(path, order, skipped, "openhands agent-sdk", None, working)

    @staticmethod
    def _v1_action(
        event: dict[str, Any],
        where: str,
        at: int | None,
        order: list[Any],
        by_action: dict[str, dict[str, Any]],
        ignored: set[str],
        skipped: list[Skipped],
    ) -> None:
        action = _from_repr(event.get("action"))
        call_id = str(event.get("tool_call_id") or event.get("id") or where)
        record: dict[str, Any] = {
            "call_id": call_id,
            "tool": str(event.get("tool_name") or obj(action).get("kind") or "tool"),
            "where": where,
            "at": at,
            "arguments": {},
        }
        if action is None and event.get("tool_name"):
            # the model's call could not be parsed: nothing ran (an AgentErrorEvent says why)
            ignored.add(str(event.get("id") or ""))
            skipped.append(Skipped(where, "a tool call the agent could not parse (not run)"))
            return
        if not isinstance(action, dict):
            skipped.append(Skipped(where, "an action that cannot be read", True, "ActionEvent"))
            return
        akind = str(action.get("kind") or "")
        if akind == "FinishAction":
            order.append(Message("assistant", str(action.get("message") or ""), at, where, True))
            return
        if akind in {"ThinkAction", "MessageAction", "TaskTrackerAction"}:
            ignored.add(str(event.get("id") or ""))  # plans and thoughts change nothing
            return
        if akind in _SHELL_ACTIONS:
            if action.get("is_input"):
                record.update(kind="other")  # keystrokes to a running command
            else:
                record.update(kind="shell", command=str(action.get("command") or ""))
        elif akind in _EDITOR_ACTIONS:
            command = action.get("command")
            if command == "view":
                record.update(kind="read", path=path_of(action.get("path")))
            else:
                record.update(
                    kind="write" if command == "create" else "edit",
                    path=path_of(action.get("path")),
                    created=True if command == "create" else None,
                    content=str(action.get("file_text") or "")[:200] or None,
                )
        elif akind == "WriteFileAction":
            record.update(
                kind="write",
                path=path_of(action.get("file_path")),
                content=str(action.get("content") or "")[:200] or None,
            )
        elif akind == "EditAction":
            record.update(kind="edit", path=path_of(action.get("file_path")))
        elif akind in {"ReadFileAction", "GlobAction", "GrepAction", "ListDirectoryAction"}:
            record.update(kind="read", path=path_of(action.get("file_path"), action.get("path")))
        elif akind == "ApplyPatchAction":
            patch = str(action.get("patch") or "")
            record.update(
                kind="other",
                arguments={"files": [m.group(2) for m in _PATCH_FILE.finditer(patch)]},
            )
            record["patch"] = patch
        else:
            record.update(
                kind="other",
                arguments={k: v for k, v in action.items() if isinstance(v, str | int | bool)},
            )
        action_id = str(event.get("id") or call_id)
        by_action[action_id] = record
        by_action.setdefault(call_id, record)
        order.append(record)

    @staticmethod
    def _v1_observation(
        event: dict[str, Any],
        where: str,
        at: int | None,
        by_action: dict[str, dict[str, Any]],
        ignored: set[str],
        skipped: list[Skipped],
    ) -> None:
        obs = _from_repr(event.get("observation"))
        target = by_action.get(str(event.get("action_id") or "")) or by_action.get(
            str(event.get("tool_call_id") or "")
        )
        if target is None or not isinstance(obs, dict):
            quiet = str(event.get("action_id") or "") in ignored or (
                isinstance(obs, dict)
                and word(obs.get("kind")) in {"FinishObservation", "ThinkObservation"}
            )
            if not quiet:
                skipped.append(
                    Skipped(where, "an observation of no known action", True, "ObservationEvent")
                )
            return
        output = obs.get("output")
        if output is None:
            output = text_of(obs.get("content"))
        target["output"] = _clean(str(output or ""))
        target["finished_at"] = at
        error = obs.get("error") or obs.get("is_error")
        if word(obs.get("kind")) in _SHELL_OBSERVATIONS or target.get("kind") == "shell":
            target["exit_code"] = _exit(obs)
            target["timed_out"] = bool(obs.get("timeout"))
            if error is True:
                target["failed"] = True
        else:
            target["failed"] = bool(error)
            if target.get("kind") == "write" and "prev_exist" in obs:
                target["created"] = not obs.get("prev_exist")
            elif target.get("kind") == "write" and isinstance(obs.get("is_new_file"), bool):
                target["created"] = obs["is_new_file"]

    @staticmethod
    def _acp(
        event: dict[str, Any],
        where: str,
        at: int | None,
        order: list[Any],
        by_action: dict[str, dict[str, Any]],
        skipped: list[Skipped],
    ) -> None:
        """A tool call an ACP agent ran; written again as it progresses, the last wins."""
        call_id = str(event.get("tool_call_id") or "")
        raw = obj(event.get("raw_input"))
        kind = _ACP_KINDS.get(str(event.get("tool_kind") or ""), "other")
        if not call_id:
            skipped.append(
                Skipped(where, "an ACP tool call without an id", True, "ACPToolCallEvent")
            )
            return
        record = by_action.get(call_id)
        if record is None:
            record = {"call_id": call_id, "where": where, "at": at}
            by_action[call_id] = record
            order.append(record)
        record.update(tool=str(event.get("title") or "acp"), kind=kind, arguments=bounded(raw))
        if kind == "shell":
            record["command"] = str(raw.get("command") or event.get("title") or "")
        elif kind in {"edit", "delete", "read"}:
            record["path"] = path_of(raw.get("file_path"), raw.get("path"), raw.get("abs_path"))
        status = word(event.get("status"))
        if status in {"completed", "failed"}:
            out = event.get("raw_output")
            record["output"] = out if isinstance(out, str) else text_of(out or event.get("content"))
            record["failed"] = status == "failed" or bool(event.get("is_error"))
            record["finished_at"] = at

    # -- v0 ----------------------------------------------------------------------------

    def _v0(self, path: Path, output: dict[str, Any], skipped: list[Skipped]) -> Trace:
        order: list[dict[str, Any] | Message] = []
        by_id: dict[Any, dict[str, Any]] = {}
        last_shell: dict[str, Any] | None = None
        instruction = output.get("instruction")
        history: list[Any] = []
        for item in output["history"]:
            # `[action, observation]` pairs (some evaluations' form): the observation's
            # action is its pair's when it names no cause
            if isinstance(item, list) and len(item) == 2 and all(isinstance(i, dict) for i in item):
                action, observation = item
                if observation.get("cause") is None and action.get("id") is not None:
                    observation = {**observation, "cause": action.get("id")}
                history.extend([action, observation] if observation else [action])
            else:
                history.append(item)
        if (
            isinstance(instruction, str)
            and instruction.strip()
            and not any(isinstance(h, dict) and h.get("source") == "user" for h in history)
        ):
            order.append(Message("user", instruction, None, "instruction"))
        for index, item in enumerate(history):
            if not isinstance(item, dict):
                skipped.append(Skipped(f"history {index}", "not an object"))
                continue
            where = f"id {item.get('id', index)}"
            at = moment(item.get("timestamp"))
            args = obj(item.get("args"))
            action = item.get("action")
            if action is not None and not isinstance(action, str):
                skipped.append(Skipped(where, "an action of no known name", True, "action"))
                continue
            if action is not None:
                call_id = str(
                    (item.get("tool_call_metadata") or {}).get("tool_call_id")
                    or item.get("id", index)
                )
                record: dict[str, Any] = {
                    "call_id": call_id,
                    "tool": str(action),
                    "where": where,
                    "at": at,
                    "arguments": {},
                }
                if action in {"message", "system"}:
                    body = str(args.get("content") or item.get("message") or "")
                    if action == "message":
                        order.append(Message(role(item.get("source")), body, at, where))
                    continue
                if action == "finish":
                    body = str(
                        args.get("final_thought")
                        or args.get("message")
                        or item.get("message")
                        or ""
                    )
                    order.append(Message("assistant", body, at, where, True))
                    continue
                if action in {"think", "recall", "condensation", "change_agent_state", "null"}:
                    continue
                if action == "run":
                    command = str(args.get("command") or "")
                    if not command.strip() and last_shell is not None:
                        by_id[key_of(item.get("id"))] = last_shell  # continues the last one
                        continue
                    record.update(kind="shell", command=command)
                    last_shell = record
                elif action in {"edit", "write"}:
                    cmd = args.get("command")
                    record.update(
                        kind="write" if cmd == "create" or action == "write" else "edit",
                        path=path_of(args.get("path")),
                        created=True if cmd == "create" else None,
                        content=str(args.get("file_text") or args.get("content") or "")[:200]
                        or None,
                    )
                elif action == "read":
                    record.update(kind="read", path=path_of(args.get("path")))
                else:
                    record.update(
                        kind="other",
                        arguments={
                            k: v for k, v in args.items() if isinstance(v, str | int | bool)
                        },
                    )
                by_id[key_of(item.get("id"))] = record
                order.append(record)
            elif item.get("observation") is not None:
                target = by_id.get(key_of(item.get("cause")))
                obs = word(item.get("observation"))
                if target is None:
                    if obs not in _V0_QUIET:
                        skipped.append(
                            Skipped(
                                where,
                                f"observation {obs!r} of no known action",
                                True,
                                f"observation {obs!r}",
                            )
                        )
                    continue
                extras = obj(item.get("extras"))
                content = str(item.get("content") or "")
                if target.get("output") and target.get("kind") == "shell":
                    content = target["output"] + "\n" + content  # a continued command
                target["output"] = content
                target["finished_at"] = at
                if target.get("kind") == "shell":
                    target["exit_code"] = _exit(extras)
                if obs == "error":
                    target["failed"] = True
                elif target.get("kind") != "shell":
                    target["failed"] = content.startswith("ERROR")
            else:
                skipped.append(Skipped(where, "neither an action nor an observation"))
        patch = (
            (output.get("test_result") or {}).get("git_patch")
            if isinstance(output.get("test_result"), dict)
            else None
        )
        final = patch_changes(patch, "test_result.git_patch") if isinstance(patch, str) else None
        agent = "openhands " + str((output.get("metadata") or {}).get("agent_class") or "v0")
        return self._trace(path, order, skipped, agent, final, model=_v0_model(output, history))

    def _trace(
        self,
        path: Path,
        order: list[Any],
        skipped: list[Skipped],
        agent: str,
        final: Any,
        working_dir: str | None = None,
        model: str | None = None,
    ) -> Trace:
        """The steps as a trace; the workspace root is the shell's working directory the
        observations report (agent-sdk), else the first `cd /dir` of a command."""
        steps: list[Step] = []
        for item in order:
            if isinstance(item, Message):
                steps.append(item)
                continue
            patch = item.pop("patch", None)
            steps.append(ToolCall(**item))
            if isinstance(patch, str) and item.get("output") is not None and not item.get("failed"):
                steps.extend(
                    FileChange(m.group(2), _PATCH_CHANGE[m.group(1)], item["where"], item["at"])
                    for m in _PATCH_FILE.finditer(patch)
                )
        if not steps:
            raise unreadable(path, self.name, "no actions or messages")
        roots = [
            str(s.command)[3:].split("&&")[0].strip()
            for s in steps
            if isinstance(s, ToolCall) and s.command and s.command.startswith("cd /")
        ]
        last_at = next((s.at for s in reversed(steps) if s.at is not None), None)
        steps.append(Finish(steps[-1].where, last_at))
        return Trace(
            self.name,
            agent,
            str(path),
            tuple(steps),
            complete=ends_with_a_result(steps),
            root=working_dir or (roots[0] if roots else None),
            final_inventory=final,
            skipped=tuple(skipped),
            model=model,
        )


def _v0_model(output: dict[str, Any], history: list[Any]) -> str | None:
    """A v0 run's model: its evaluation's `metadata.llm_config.model`, else the model a
    tool call's response names (`tool_call_metadata.model_response.model`). The agent-sdk
    event list names none (the model is in the conversation's state, not its events)."""
    configured = obj(obj(output.get("metadata")).get("llm_config")).get("model")
    if isinstance(configured, str) and configured:
        return configured
    for item in history:
        meta = obj(obj(item).get("tool_call_metadata"))
        answered = obj(meta.get("model_response")).get("model")
        if isinstance(answered, str) and answered:
            return answered
    return None


def _v0_item(item: object) -> bool:
    """A v0 history item: an action or observation, or an `[action, observation]` pair."""
    if isinstance(item, list):
        return len(item) == 2 and all(isinstance(i, dict) for i in item)
    return isinstance(item, dict) and ("action" in item or "observation" in item)


def _clean(text: str) -> str:
    """Terminal control sequences (bracketed paste markers) out of a shell's output."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
