"""OpenHands event lists: agent-sdk (V1) event lists and v0 evaluation output.

V1 (a JSON list, or JSONL, of events with `kind`): `MessageEvent` (`source` user/agent,
`llm_message.content`), `ActionEvent` (`action.kind` `ExecuteBashAction`,
`FileEditorAction`, `FinishAction`, …; `tool_call_id`), `ObservationEvent` (paired by
`action_id`; `ExecuteBashObservation` has `output`, `exit_code` — often None — and
`metadata.exit_code`, the shell's status for the line; `FileEditorObservation` has
`error` and `prev_exist`). Actions or observations stored as Python-repr strings are read
for their kind and fields.

v0 (`output.jsonl` lines of an evaluation, or a bare `history` list): `history` items
with `action` (`run`, `edit`, `write`, `read`, `message`, `finish`, …) and `args`, or
`observation` with `content`, `cause` (the action's id) and `extras` (`exit_code`,
`metadata.exit_code`). A `run` with an empty command continues the previous command and
its output belongs to it. `test_result.git_patch` is the run's final diff.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from outcomes.importers.base import Importer, moment, obj, role, text_of, unreadable
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

_REPR = re.compile(r"^(\w+)\((.*)\)$", re.S)


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
    for value in (obs.get("exit_code"), (obs.get("metadata") or {}).get("exit_code")):
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
        try:
            data: Any = json.loads(text)
            documents = [data]
        except ValueError:
            documents = []
            for number, line in enumerate(text.splitlines(), start=1):
                if line.strip():
                    try:
                        documents.append(json.loads(line))
                    except ValueError as exc:
                        raise unreadable(path, self.name, f"line {number}: {exc}") from None
        if len(documents) == 1 and isinstance(documents[0], list):
            events = documents[0]
        elif all(isinstance(d, dict) and "kind" in d for d in documents):
            events = documents
        else:
            events = None
        if events is not None and any(isinstance(e, dict) and "kind" in e for e in events):
            return self._v1(path, events)
        output = documents[0] if len(documents) == 1 else None
        if isinstance(output, dict) and isinstance(output.get("history"), list):
            return self._v0(path, output)
        if events is not None and any(
            isinstance(e, dict) and ("action" in e or "observation" in e) for e in events
        ):
            return self._v0(path, {"history": events})
        raise unreadable(path, self.name, "neither an event list nor an output with a history")

    # -- agent-sdk (V1) ----------------------------------------------------------------

    def _v1(self, path: Path, events: list[Any]) -> Trace:
        order: list[dict[str, Any] | Message] = []
        by_action: dict[str, dict[str, Any]] = {}
        skipped: list[Skipped] = []
        ignored: set[str] = set()
        final: Message | None = None
        for index, event in enumerate(events):
            where = f"event {index}"
            if not isinstance(event, dict):
                skipped.append(Skipped(where, "not an event object"))
                continue
            kind = event.get("kind")
            at = moment(event.get("timestamp"))
            if kind == "MessageEvent":
                llm = event.get("llm_message") or {}
                order.append(
                    Message(role(event.get("source")), text_of(llm.get("content")), at, where)
                )
            elif kind == "ActionEvent":
                action = _from_repr(event.get("action"))
                if not isinstance(action, dict):
                    skipped.append(Skipped(where, "an action that cannot be read"))
                    continue
                akind = str(action.get("kind") or "")
                call_id = str(event.get("tool_call_id") or event.get("id") or where)
                record: dict[str, Any] = {
                    "call_id": call_id,
                    "tool": str(event.get("tool_name") or akind),
                    "where": where,
                    "at": at,
                    "arguments": {},
                }
                if akind == "FinishAction":
                    final = Message("assistant", str(action.get("message") or ""), at, where, True)
                    order.append(final)
                    continue
                if akind in {"ThinkAction", "MessageAction"}:
                    ignored.add(str(event.get("id") or ""))  # thoughts change nothing
                    continue
                if akind == "ExecuteBashAction":
                    if action.get("is_input"):
                        record.update(kind="other")  # keystrokes to a running command
                    else:
                        record.update(kind="shell", command=str(action.get("command") or ""))
                elif akind in {"FileEditorAction", "StrReplaceEditorAction"}:
                    command = action.get("command")
                    if command == "view":
                        record.update(kind="read", path=action.get("path"))
                    else:
                        record.update(
                            kind="write" if command == "create" else "edit",
                            path=action.get("path"),
                            created=True if command == "create" else None,
                            content=str(action.get("file_text") or "")[:200] or None,
                        )
                else:
                    record.update(
                        kind="other",
                        arguments={
                            k: v for k, v in action.items() if isinstance(v, str | int | bool)
                        },
                    )
                action_id = str(event.get("id") or call_id)
                by_action[action_id] = record
                by_action.setdefault(call_id, record)
                order.append(record)
            elif kind == "ObservationEvent":
                obs = _from_repr(event.get("observation"))
                target = by_action.get(str(event.get("action_id") or "")) or by_action.get(
                    str(event.get("tool_call_id") or "")
                )
                if target is None or not isinstance(obs, dict):
                    quiet = str(event.get("action_id") or "") in ignored or (
                        isinstance(obs, dict) and obs.get("kind") == "FinishObservation"
                    )
                    if not quiet:
                        skipped.append(Skipped(where, "an observation of no known action"))
                    continue
                output = obs.get("output")
                if output is None:
                    output = text_of(obs.get("content"))
                target["output"] = _clean(str(output or ""))
                target["finished_at"] = at
                if obs.get("kind") == "ExecuteBashObservation" or target.get("kind") == "shell":
                    target["exit_code"] = _exit(obs)
                    target["timed_out"] = bool(obs.get("timeout"))
                    if obs.get("error") is True:
                        target["failed"] = True
                else:
                    target["failed"] = bool(obs.get("error"))
                    if target.get("kind") == "write" and "prev_exist" in obs:
                        target["created"] = not obs.get("prev_exist")
            elif kind in {
                "SystemPromptEvent",
                "AgentErrorEvent",
                "PauseEvent",
                "Condensation",
                "CondensationRequest",
            }:
                continue
            else:
                skipped.append(Skipped(where, f"event kind {kind!r} is not mapped"))
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

    # -- v0 ----------------------------------------------------------------------------

    def _v0(self, path: Path, output: dict[str, Any]) -> Trace:
        order: list[dict[str, Any] | Message] = []
        by_id: dict[Any, dict[str, Any]] = {}
        skipped: list[Skipped] = []
        last_shell: dict[str, Any] | None = None
        instruction = output.get("instruction")
        history = output["history"]
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
                        by_id[item.get("id")] = last_shell  # continues the previous command
                        continue
                    record.update(kind="shell", command=command)
                    last_shell = record
                elif action in {"edit", "write"}:
                    cmd = args.get("command")
                    record.update(
                        kind="write" if cmd == "create" or action == "write" else "edit",
                        path=args.get("path"),
                        created=True if cmd == "create" else None,
                        content=str(args.get("file_text") or args.get("content") or "")[:200]
                        or None,
                    )
                elif action == "read":
                    record.update(kind="read", path=args.get("path"))
                else:
                    record.update(
                        kind="other",
                        arguments={
                            k: v for k, v in args.items() if isinstance(v, str | int | bool)
                        },
                    )
                by_id[item.get("id")] = record
                order.append(record)
            elif item.get("observation") is not None:
                target = by_id.get(item.get("cause"))
                obs = item.get("observation")
                if target is None:
                    if obs not in {"null", "agent_state_changed", "recall", "user_rejected"}:
                        skipped.append(Skipped(where, f"observation {obs!r} of no known action"))
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
        return self._trace(path, order, skipped, agent, final)

    def _trace(
        self,
        path: Path,
        order: list[Any],
        skipped: list[Skipped],
        agent: str,
        final: Any,
        working_dir: str | None = None,
    ) -> Trace:
        """The steps as a trace; the workspace root is the shell's working directory the
        observations report (agent-sdk), else the first `cd /dir` of a command."""
        steps: list[Step] = [o if isinstance(o, Message) else ToolCall(**o) for o in order]
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
        )


def _clean(text: str) -> str:
    """Terminal control sequences (bracketed paste markers) out of a shell's output."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
