"""What a tool span's arguments and result show: the shell command it ran, its output
and exit status, and so its checks and effects (read by `outcomes.importers.commands`,
the same reading every trace importer uses).

Only what the span shows: the command comes from the tool's arguments (a shell tool's
`command`, `cmd` or `script`), the outcome from its result (the runner's summary line,
or the exit status). A span whose result is not recorded (content capture is opt-in in
the GenAI conventions) shows no outcome: its command makes no receipt and no effect.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from outcomes.importers.commands import CommandReading, Effect, read_command, tool_effect

_SHELL_WORDS = frozenset(
    {"bash", "sh", "zsh", "shell", "terminal", "console", "command", "cmd", "exec", "execute"}
    | {"run"}
)
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_COMMAND_KEYS = ("command", "cmd", "script")
_EXIT_KEYS = ("exit_code", "exitCode", "returncode", "return_code", "exit_status", "exitStatus")
_OUTPUT_KEYS = ("output", "stdout", "stderr", "content", "result", "text")


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool's result as the span records it: the text and, if shown, the exit status."""

    output: str
    exit_code: int | None


def shell_command(tool: str, arguments: Any) -> str | None:
    """The command line a shell tool ran, when its arguments show one."""
    words = {w.lower() for w in _WORD.findall(tool)}
    if not words & _SHELL_WORDS or not isinstance(arguments, Mapping):
        return None
    for key in _COMMAND_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            if value[:2] in (["bash", "-lc"], ["bash", "-c"], ["sh", "-c"]) and len(value) == 3:
                return value[2].strip()  # Codex-style argv: the script is the command
            return shlex.join(value)
    return None


def tool_result(result: Any) -> ToolResult | None:
    """The text and exit status of a recorded result (None when none is recorded)."""
    if result is None:
        return None
    if isinstance(result, str):
        return ToolResult(result, None)
    if isinstance(result, Mapping):
        status = next((result[k] for k in _EXIT_KEYS if k in result), None)
        exit_code = status if isinstance(status, int) and not isinstance(status, bool) else None
        texts = [result[k] for k in _OUTPUT_KEYS if isinstance(result.get(k), str)]
        return ToolResult("\n".join(texts), exit_code)
    if isinstance(result, list):  # content parts (MCP and the Agents SDK's outputs)
        texts = [p.get("text") for p in result if isinstance(p, Mapping)]
        return ToolResult("\n".join(t for t in texts if isinstance(t, str)), None)
    return ToolResult(str(result), None)


def read_shell(command: str, result: ToolResult) -> CommandReading:
    """The checks (with verdicts) and effects `command` shows through its result."""
    return read_command(command, result.output or None, result.exit_code)


def other_effect(
    tool: str, arguments: Any, result: ToolResult | None, failed: bool
) -> Effect | None:
    """The effect of a non-shell tool named like one (`create_pull_request`, `send_email`)."""
    args = dict(arguments) if isinstance(arguments, Mapping) else None
    return tool_effect(tool, args, result.output if result else None, failed or None)
