"""A trace's steps as canonical events (SPEC section 2), deriving only what they show.

- The first user message makes the goal (`goal.revised` by `user`; the event has no
  field for the request's text, so deliverables and checks stay empty: a trace does not
  structure them). The run starts with `run.started`.
- Every tool call is `tool.started`, and `tool.finished` once the trace holds its result:
  `failed` on an error state or a non-zero exit status, `succeeded` on a clean one,
  `indeterminate` when the trace shows neither.
- A check command is a `verification.receipt` judged by `outcomes.importers.commands`,
  against a workspace snapshot of the inventory at that moment (emitted when it changed).
  `npm run x` and `make x` are read through the package.json scripts and Makefile
  recipes the trace showed before that step (`outcomes.importers.scripts`).
- Effects (commits, pushes, repositories, deploys, messages, installs…) are
  `effect.intent` + `effect.transition` `active`, then a provider receipt (`present` or
  `failed`) when the output settles it, a `denied` transition when the output says the
  attempt was refused, and an `unknown` transition otherwise.
- Each `Finish` step seals the inventory in a snapshot, requests finalization and
  submits the last assistant message as the narrative.

Event ids are `<run_id>:<step>:<part>` (hashed when longer than 128 characters), so the
same trace gives the same events; `occurred_at` is the trace's own time for the step
(kept non-decreasing; a format without clocks counts microseconds from the epoch, in file
order), and `source` names the format, the file and the position in it.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Iterator
from typing import Any

from outcomes.importers.commands import (
    Check,
    Effect,
    Simple,
    check_of,
    read_command,
    split_command,
    tool_effect,
)
from outcomes.importers.scripts import ScriptBook
from outcomes.importers.trace import (
    FileChange,
    Finish,
    Message,
    Started,
    ToolCall,
    Trace,
    request_goal,
    task_of,
)
from outcomes.importers.workspace import Inventory
from outcomes.reducers.limits import Limits
from outcomes.reducers.timefmt import format_rfc3339

Event = dict[str, Any]


def _event_id(run_id: str, step: int, part: str) -> str:
    text = f"{run_id}:{step:05d}:{part}"
    if len(text) <= 128:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:40]
    return f"{run_id[:80]}:{digest}"


class _Builder:
    def __init__(
        self,
        trace: Trace,
        run_id: str,
        scratch: frozenset[str] = frozenset(),
        whole: bool = True,
    ) -> None:
        self.trace = trace
        self.whole = whole
        self.run_id = run_id
        self.name = posixpath.basename(trace.path) or trace.path
        self.inventory = Inventory(trace.root, scratch)
        self.book = ScriptBook()  # package.json scripts and recipes the trace showed
        self.clock = trace.started_at if trace.started_at is not None else _before_first(trace)
        self.events: list[Event] = []
        self.snapshot: str | None = None
        self.snapshot_print: str | None = None
        self.goal_set = False
        self.started = False
        self.pending_start: tuple[int, str, int | None] | None = None
        self.last_assistant: Message | None = None
        self.final_message: Message | None = None

    # -- envelope ----------------------------------------------------------------------

    def _at(self, at: int | None) -> int:
        if at is not None and at > self.clock:
            self.clock = at
        else:
            self.clock += 1
        return self.clock

    def emit(self, step: int, part: str, kind: str, where: str, at: int, **fields: Any) -> str:
        event_id = _event_id(self.run_id, step, part)
        self.events.append(
            {
                "event_id": event_id,
                "run_id": self.run_id,
                "type": kind,
                "occurred_at": format_rfc3339(at),
                "source": f"import:{self.trace.format}:{self.name}#{where}"[:1000],
                **fields,
            }
        )
        return event_id

    # -- steps -------------------------------------------------------------------------

    def session_started(self, step: int, where: str, at: int | None) -> None:
        """A session's start. A live trace holds run.started until its next step, so a
        first prompt gives it its task (the hook sees SessionStart before the prompt);
        the event keeps the start's place and time."""
        if self.whole:
            self.start(step, where, at)
        elif not self.started and self.pending_start is None:
            self.pending_start = (step, where, at)

    def start(self, step: int, where: str, at: int | None) -> None:
        if self.started:
            return
        self.started = True
        upto = step  # the steps the task may use
        if self.pending_start is not None:
            step, where, at = self.pending_start
        self.emit(
            step,
            "run",
            "run.started",
            where,
            self._at(at),
            agent=self.trace.agent,
            requested_by="user",
            # Display and search only (docs/records.md): left out when the trace lacks them.
            **({"model": self.trace.model} if self.trace.model else {}),
            # A live trace's run.started may use only the steps up to it (derive()).
            **({"task": task} if (task := self._task(upto)) else {}),
        )

    def _task(self, step: int) -> str | None:
        if not self.whole:  # each event depends only on the steps before it
            return task_of(self.trace.steps[: step + 1])
        return self.trace.task or task_of(self.trace.steps)

    def message(self, step: int, m: Message) -> None:
        self.start(step, m.where, m.at)
        at = self._at(m.at)
        if m.role == "user" and not self.goal_set and m.text.strip():
            self.goal_set = True
            self.emit(
                step,
                "goal",
                "goal.revised",
                m.where,
                at,
                **request_goal(),
            )
        if m.role == "assistant" and m.text.strip():
            self.last_assistant = m
            if m.final:
                self.final_message = m

    def file_change(self, change: FileChange) -> None:
        path = self.inventory.relative(change.path)
        if change.change == "deleted":
            self.inventory.delete(path, change.where)
        else:
            self.inventory.write(path, change.change == "added", change.where)

    def tool(self, step: int, call: ToolCall) -> None:
        self.start(step, call.where, call.at)
        at = self._at(call.at)
        self.emit(
            step, "start", "tool.started", call.where, at, action_id=call.call_id, tool=call.tool
        )
        has_result = call.output is not None or call.failed is not None
        end = self._at(call.finished_at if call.finished_at is not None else call.at)
        if has_result:
            outcome, error = _outcome(call)
            self.emit(
                step,
                "finish",
                "tool.finished",
                call.where,
                end,
                action_id=call.call_id,
                tool=call.tool,
                outcome=outcome,
                error_class=error,
            )
        # file operations count unless the trace shows the call failed
        ran = call.failed is not True and call.exit_code in (None, 0) and not call.timed_out
        if call.kind == "read" and call.path and call.failed is not True:
            self.book.saw(call.path, call.output)
        if call.kind == "shell" and call.command:
            self._shell(step, call, end, ran)
        elif call.kind in {"write", "edit", "delete"} and call.path and ran:
            path = self.inventory.relative(call.path, call.cwd)
            if call.kind == "write":
                self.book.saw(call.path, call.content)
                # a change is noted by its content, not its position (content digests)
                self.inventory.write(path, call.created, f"write:{call.content or call.where}")
            elif call.kind == "edit":
                change = sorted(call.arguments.items()) if call.arguments else call.where
                self.inventory.edit(path, f"edit:{change!r}")
            else:
                self.inventory.delete(path, call.where)
        elif call.kind == "other":
            effect = tool_effect(call.tool, call.arguments, call.output, call.failed)
            if effect is not None:
                self._effect(step, "effect-0", call, effect, end)

    def _shell(self, step: int, call: ToolCall, at: int, ran: bool) -> None:
        command = call.command or ""
        if ran:
            self.inventory.apply_shell(command, call.output, call.cwd, call.where)
        elif call.output:
            self.inventory.apply_git_listing(command, call.output, call.where)
        scripts = self.book.scripts()
        reading = read_command(
            command, call.output, call.exit_code, timed_out=call.timed_out, scripts=scripts
        )
        if call.exit_code in (None, 0):
            self.book.saw_shell(command, call.output)
        simples = split_command(command) if self.inventory.scratch else ()
        checks = [(c, v) for c, v in reading.checks if not self._on_scratch_only(c, simples, call)]
        for index, (check, verdict) in enumerate(checks):
            snapshot = self.current_snapshot(step, call.where, at)
            self.emit(
                step,
                f"check-{index}",
                "verification.receipt",
                call.where,
                at,
                check_id=f"{call.call_id}:{index}",
                label=check.label,
                scope="focused" if check.focused else "suite",
                result=verdict.result,
                tests_executed=verdict.tests_executed,
                candidate_snapshot=snapshot,
                environment=f"{self.trace.format}:{self.trace.agent}",
                command=command,
                expected_artifacts=[],
            )
        for index, effect in enumerate(reading.effects):
            self._effect(step, f"effect-{index}", call, effect, at)

    def _on_scratch_only(self, check: Check, simples: tuple[Simple, ...], call: ToolCall) -> bool:
        """A linter or type checker whose every target is a file the run created and
        removed again reports on that file, not on the workspace: it makes no receipt."""
        if check.kind not in ("lint", "typecheck", "format-check") or not self.inventory.scratch:
            return False
        scripts = self.book.scripts()
        for simple in simples:
            if check_of(simple, scripts) != check:
                continue
            targets = [
                w for w in simple.words[1:] if not w.startswith("-") and ("." in w or "/" in w)
            ]
            paths = [self.inventory.relative(t, call.cwd) for t in targets]
            return bool(paths) and all(p in self.inventory.scratch for p in paths)
        return False

    def _effect(self, step: int, part: str, call: ToolCall, effect: Effect, at: int) -> None:
        intent = f"{call.call_id}:{effect.kind or effect.effect_class}:{part.rsplit('-', 1)[-1]}"
        where = call.where
        self.emit(
            step,
            f"{part}-intent",
            "effect.intent",
            where,
            at,
            intent_id=intent,
            effect_class=effect.effect_class,
            target=effect.target[:1000],
            consequential=effect.consequential,
        )
        self.emit(
            step,
            f"{part}-active",
            "effect.transition",
            where,
            at,
            intent_id=intent,
            state="active",
            attempt_id=call.call_id,
            reason=None,
        )
        if effect.outcome in {"completed", "failed"}:
            self.emit(
                step,
                f"{part}-receipt",
                "effect.receipt",
                where,
                at,
                intent_id=intent,
                receipt_id=effect.receipt or f"{intent}:{effect.outcome}",
                attempt_id=call.call_id,
                origin="provider_receipt",
                observed="present" if effect.outcome == "completed" else "failed",
                authoritative=True,
            )
        else:
            self.emit(
                step,
                f"{part}-{effect.outcome}",
                "effect.transition",
                where,
                at,
                intent_id=intent,
                state=effect.outcome,
                attempt_id=call.call_id,
                reason=effect.evidence[:1000] if effect.outcome == "denied" else None,
            )

    def current_snapshot(self, step: int, where: str, at: int, sealed: bool = False) -> str:
        printed = self.inventory.fingerprint()
        if self.snapshot is not None and printed == self.snapshot_print and not sealed:
            return self.snapshot
        snapshot = f"{self.run_id}:ws:{step:05d}" + (":sealed" if sealed else "")
        self.emit(
            step,
            "snapshot" + ("-sealed" if sealed else ""),
            "workspace.snapshot",
            where,
            at,
            snapshot_id=snapshot,
            base_revision=None,
            sealed=sealed,
            artifacts=self.inventory.artifacts(),
        )
        self.snapshot, self.snapshot_print = snapshot, printed
        return snapshot

    def finish(self, step: int, f: Finish, final: tuple[FileChange, ...] | None) -> None:
        self.start(step, f.where, f.at)
        if final is not None:
            settled = [(self.inventory.relative(c.path), c.change) for c in final]
            self.inventory.settle(settled, f.where)
        at = self._at(f.at)
        snapshot = self.current_snapshot(step, f.where, at, sealed=True)
        self.emit(
            step,
            "finalize",
            "finalize.requested",
            f.where,
            self._at(None),
            candidate_snapshot=snapshot,
        )
        message = self.final_message or self.last_assistant
        if message is not None:
            self.emit(
                step,
                "narrative",
                "narrative.submitted",
                message.where,
                self._at(None),
                narrative_id=f"{self.run_id}:narrative:{step:05d}",
                account_revision=None,
                channel="final_message",
                text=narrative_text(message.text),
            )


# A narrative's text is cut to this many characters, then to the string limit in bytes
# (a CJK message of 60,000 characters is 180,000 bytes, which validation refuses).
NARRATIVE_CHARS = 60_000


def narrative_text(text: str) -> str:
    """The start of `text` that a narrative may hold: 60,000 characters, and no more UTF-8
    bytes than a string field may (`Limits.max_string_bytes`), cut on a character."""
    text = text[:NARRATIVE_CHARS]
    encoded = text.encode("utf-8")
    limit = Limits().max_string_bytes
    return text if len(encoded) <= limit else encoded[:limit].decode("utf-8", "ignore")


# Steps before a trace's first time are dated in the millisecond before it.
_LEAD_IN_US = 1000


def _before_first(trace: Trace) -> int:
    """Where the clock starts when the trace gives no start time: just before its first
    timestamped step (a stream whose first row, the user's prompt, has no time), else 0
    (a format without clocks counts microseconds from the epoch)."""
    first = next((s.at for s in trace.steps if s.at is not None), None)
    return max(0, first - _LEAD_IN_US) if first is not None else 0


def _outcome(call: ToolCall) -> tuple[str, str | None]:
    if call.timed_out:
        return "indeterminate", "timeout"
    if call.exit_code not in (None, 0):
        return "failed", f"exit_code:{call.exit_code}"
    if call.failed is True:
        return "failed", "tool_error"
    if call.exit_code == 0 or call.failed is False:
        return "succeeded", None
    return "indeterminate", None


def derive(trace: Trace, run_id: str, *, whole: bool = True) -> list[Event]:
    """The canonical events of `trace` as the run `run_id`, in trace order.

    With `whole` (a finished trace), files the run created and removed again (scratch
    scripts) are marked not verification-sensitive in every snapshot: removing a scratch
    file after a check does not make the check stale. Finding them takes a first pass
    over the trace. A live trace (the hook) is derived with `whole=False`: each event
    then depends only on the steps before it, so deriving a longer trace repeats the
    earlier events exactly."""
    scratch = (
        _build(trace, run_id, frozenset()).inventory.created_and_removed() if whole else frozenset()
    )
    return _build(trace, run_id, scratch, whole).events


def _build(trace: Trace, run_id: str, scratch: frozenset[str], whole: bool = True) -> _Builder:
    builder = _Builder(trace, run_id, scratch, whole)
    finishes = [i for i, s in enumerate(trace.steps) if isinstance(s, Finish)]
    last_finish = finishes[-1] if finishes else None
    for index, step in enumerate(trace.steps):
        if isinstance(step, Message):
            builder.message(index, step)
        elif isinstance(step, ToolCall):
            builder.tool(index, step)
        elif isinstance(step, FileChange):
            builder.file_change(step)
        elif isinstance(step, Finish):
            final = trace.final_inventory if index == last_finish else None
            builder.finish(index, step, final)
        elif isinstance(step, Started):
            builder.session_started(index, step.where, step.at)
    if not trace.complete and trace.steps:
        where = trace.steps[-1].where
        builder.emit(
            len(trace.steps),
            "interrupted",
            "run.interrupted",
            where,
            builder._at(None),
            reason="the trace ends before the last tool call's result",
        )
    return builder


def iter_events(traces: list[tuple[Trace, str]]) -> Iterator[Event]:
    for trace, run_id in traces:
        yield from derive(trace, run_id)
