"""One recorded agent run, read into a format-free list of steps.

Every importer reads its format into a `Trace`: the messages and tool calls in the order
the file records them, each with where it stands in the file. `outcomes.importers.derive`
turns a trace into canonical events; nothing there knows a format.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from outcomes.reducers.errors import OutcomesError

Role = Literal["user", "assistant"]
ToolKind = Literal["shell", "write", "edit", "delete", "read", "other"]


class TraceUnreadable(OutcomesError):
    """The file is not a trace of the format asked for (or of any known format).

    Operators: check the path and `--format`; `outcomes import --help` lists the formats.
    """


@dataclass(frozen=True, slots=True)
class Message:
    """A user or assistant message. `final` marks a message the format itself records as
    the run's closing answer (OpenHands' finish, a stream's `result`)."""

    role: Role
    text: str
    at: int | None
    where: str
    final: bool = False


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call and, when the trace has it, its result.

    `kind` says what the call does to the workspace: `shell` runs `command`; `write`
    writes the whole of `path` (`created` True for a new file, False for an overwrite,
    None when the trace does not say); `edit` changes part of `path`; `delete` removes it.
    `output` is None when the trace holds no result; `exit_code` None when it shows no
    exit status; `failed` True/False when the tool reported its own error state.
    """

    call_id: str
    tool: str
    kind: ToolKind
    where: str
    at: int | None
    command: str | None = None
    path: str | None = None
    created: bool | None = None
    content: str | None = None
    arguments: dict[str, object] = field(default_factory=dict)
    output: str | None = None
    exit_code: int | None = None
    failed: bool | None = None
    timed_out: bool = False
    cwd: str | None = None
    finished_at: int | None = None


@dataclass(frozen=True, slots=True)
class FileChange:
    """A change the trace states outright (aider's `Applied edit to`, a final patch)."""

    path: str
    change: Literal["added", "modified", "deleted"]
    where: str
    at: int | None


@dataclass(frozen=True, slots=True)
class Skipped:
    """A record the importer could not map: where it is, and why.

    `tool_step` is True when the record was (or carried) a tool step: a tool call or its
    result that the importer could not read. `outcomes import` counts those against the
    tool calls it did read and refuses a file past a small share of unread steps (an
    account with no tools would judge the final message against nothing). `kind` names
    what was not read (`"tool_calls message"`, `"event 'x'"`), for the one-line summary."""

    where: str
    reason: str
    tool_step: bool = False
    kind: str = ""


@dataclass(frozen=True, slots=True)
class Finish:
    """The agent stopped and handed back (end of a file, a Claude Code `Stop` hook): the
    workspace is sealed, finalization requested, the last assistant message submitted."""

    where: str
    at: int | None


@dataclass(frozen=True, slots=True)
class Started:
    """The agent's session began (a Claude Code `SessionStart` hook, whose input names
    the session's model when the agent gives it)."""

    where: str
    at: int | None
    model: str | None = None


Step = Message | ToolCall | FileChange | Finish | Started


@dataclass(frozen=True, slots=True)
class Trace:
    """A run as the file records it. `root` is the workspace directory when known
    (paths under it are made relative); `final_inventory`, when the format records the
    run's final diff against its base (mini-swe-agent's submission, OpenHands' git
    patch), is that diff's change list and overrides what the steps imply for its paths."""

    format: str
    agent: str
    path: str
    steps: tuple[Step, ...]
    root: str | None = None
    started_at: int | None = None
    final_inventory: tuple[FileChange, ...] | None = None
    skipped: tuple[Skipped, ...] = ()
    complete: bool = True
    # The model the agent ran on, as the format names it (run.started's `model`).
    model: str | None = None
    # The request, when the format tells it from other user lines (run.started's `task`;
    # else the first user message with words).
    task: str | None = None


MAX_TASK_CHARS = 4_000
"""run.started's `task` is the first request cut here: it is shown and searched, never
judged, and the whole request stays in the trace."""


def task_of(steps: Sequence[Step]) -> str | None:
    """The request as its requester worded it: the first user message with words among
    `steps` (run.started's `task`), or None when they hold none."""
    for step in steps:
        if isinstance(step, Message) and step.role == "user" and (task := cut_task(step.text)):
            return task
    return None


def cut_task(text: str) -> str:
    """A request as one line for display and search: line breaks, tabs and other control
    or format characters become spaces, runs of spaces one (the event's validation
    holds `task` to an identifier's characters), cut at `MAX_TASK_CHARS`."""
    text = " ".join(
        "".join(" " if unicodedata.category(ch) in _NOT_IN_A_LINE else ch for ch in text).split()
    )
    return text if len(text) <= MAX_TASK_CHARS else text[: MAX_TASK_CHARS - 1] + "…"


_NOT_IN_A_LINE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def ends_with_a_result(steps: list[Step] | tuple[Step, ...]) -> bool:
    """False when the last tool call has no result: the file was cut off mid-call."""
    last = next((s for s in reversed(steps) if isinstance(s, ToolCall)), None)
    return last is None or last.output is not None or last.failed is not None


OBSERVED = "*"  # outcomes.reducers.account.OBSERVED: what the run did is required


def request_goal() -> dict[str, Any]:
    """The `goal.revised` fields a user's first request gives: revision 1, by the user.

    A trace holds the request as prose, which the event has no field for: deliverables
    and actions stay unknown, never guessed. What done requires is the default of SPEC
    3.2 for a goal without structure: every check the run ran, in its latest state
    (`*` as the required check), and every effect it attempted (`*` as the requested
    effect). The reducer resolves `*` against the run's events, so a later rerun that
    fixes a failing check changes the account. A project policy replaces it with a
    later revision by `product_rule` (`outcomes.importers.policy`)."""
    return {
        "goal_revision": 1,
        "authored_by": "user",
        "deliverables": [],
        "required_checks": [{"label": OBSERVED, "scope": "focused"}],
        "requested_effects": [OBSERVED],
        "requested_actions": [],
        "target_revision": None,
    }
