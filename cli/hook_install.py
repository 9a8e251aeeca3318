"""`outcomes hook install`: write the Claude Code hook into a `settings.json`, so it runs.

The documented line `"command": "outcomes hook claude-code"` fails with `outcomes: not
found` when the CLI lives in a virtual environment that is not on the PATH Claude Code
runs hooks with (as `scripts/setup.sh` leaves it), and Claude Code drops the events
without a word. This command writes the hook with the absolute path of the running
`outcomes` and the options given (the bootstrap servers, the gate's URL and budget), into
the project's `.claude/settings.json` or the user's `~/.claude/settings.json`, keeping
every other setting and every other hook there as it was, and says what it wrote.
Running it again replaces its own entries (recognised by the command) and nothing else.
"""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click
import orjson

from outcomes.reducers.errors import OutcomesError

# The hook events the hook maps (cli/hook.py), and whether each takes a tool matcher.
EVENTS: tuple[tuple[str, bool], ...] = (
    ("SessionStart", False),
    ("UserPromptSubmit", False),
    ("PostToolUse", True),
    ("PostToolUseFailure", True),
    ("Stop", False),
    ("SessionEnd", False),
)
HOOK_TIMEOUT = 30  # seconds Claude Code gives the command; the hook keeps its own budget
MARK = "hook claude-code"  # what makes an entry ours


class InstallError(OutcomesError):
    """The settings file cannot be read or written as JSON settings.

    Operators: fix or move the file named, then run `outcomes hook install` again.
    """


def outcomes_executable() -> Path:
    """The absolute path of the `outcomes` being run (the venv's, when it is one)."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "outcomes" and argv0.exists():
        return argv0.resolve()
    beside = Path(sys.executable).parent / "outcomes"
    if beside.exists():
        return beside.resolve()
    raise InstallError(
        "cannot find the outcomes executable beside this Python "
        f"({sys.executable}); run this command as .venv/bin/outcomes hook install"
    )


def hook_command(executable: Path, extra: Sequence[str]) -> str:
    return shlex.join([str(executable), "hook", "claude-code", *extra])


def _ours(entry: Mapping[str, Any]) -> bool:
    hooks = entry.get("hooks") if isinstance(entry, Mapping) else None
    return isinstance(hooks, list) and any(
        isinstance(h, Mapping) and MARK in str(h.get("command", "")) for h in hooks
    )


def merged(settings: Mapping[str, Any], command: str) -> dict[str, Any]:
    """`settings` with our entry for each hook event (replacing ours, keeping others')."""
    out = dict(settings)
    hooks = out.get("hooks", {})
    if not isinstance(hooks, Mapping):
        raise InstallError("its 'hooks' is not an object")
    hooks = dict(hooks)
    for event, takes_matcher in EVENTS:
        entries = hooks.get(event, [])
        if not isinstance(entries, list):
            raise InstallError(f"its 'hooks.{event}' is not a list")
        entry: dict[str, Any] = {
            "hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT}]
        }
        if takes_matcher:
            entry = {"matcher": "*", **entry}
        hooks[event] = [e for e in entries if not _ours(e)] + [entry]
    out["hooks"] = hooks
    return out


def settings_path(scope: str, project: Path) -> Path:
    if scope == "user":
        return Path.home() / ".claude" / "settings.json"
    return project / ".claude" / "settings.json"


def install(path: Path, command: str) -> dict[str, Any]:
    """Write the hook into the settings at `path` (created if missing); returns them."""
    current: Any = {}
    if path.exists():
        try:
            raw = path.read_bytes()
            current = orjson.loads(raw) if raw.strip() else {}
        except (OSError, orjson.JSONDecodeError) as exc:
            raise InstallError(f"{path} is not readable as JSON: {exc}") from None
        if not isinstance(current, dict):
            raise InstallError(f"{path} does not hold a JSON object")
    try:
        settings = merged(current, command)
    except InstallError as exc:
        raise InstallError(f"{path}: {exc}") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".settings-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(orjson.dumps(settings, option=orjson.OPT_INDENT_2) + b"\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return settings


@click.command("install")
@click.option(
    "--scope",
    type=click.Choice(["project", "user"]),
    default="project",
    show_default=True,
    help="project: <dir>/.claude/settings.json; user: ~/.claude/settings.json.",
)
@click.option(
    "--project-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The project whose .claude/settings.json is written (with --scope project).",
)
@click.option("--bootstrap", help="Kafka bootstrap servers the hook publishes to.")
@click.option(
    "--gate-url",
    help="A worker's door whose pre-display gate checks the final message at each Stop "
    "(e.g. http://127.0.0.1:6066); without it the Stop is not checked.",
)
@click.option(
    "--gate-budget",
    type=click.FloatRange(min=0.1, max=25.0),
    help="Seconds a Stop's check may take before the answer is shown unchecked "
    "(the hook's default: 3).",
)
def install_command(
    scope: str,
    project_dir: Path,
    bootstrap: str | None,
    gate_url: str | None,
    gate_budget: float | None,
) -> None:
    """Install the Claude Code hook with this outcomes' absolute path."""
    extra: list[str] = []
    if bootstrap:
        extra += ["--bootstrap", bootstrap]
    if gate_url:
        extra += ["--gate-url", gate_url]
    if gate_budget is not None:
        if not gate_url:
            raise click.UsageError("--gate-budget is the gate's: give --gate-url with it")
        extra += ["--gate-budget", f"{gate_budget:g}"]
    command = hook_command(outcomes_executable(), extra)
    path = settings_path(scope, project_dir.resolve())
    install(path, command)
    events = ", ".join(name for name, _ in EVENTS)
    click.echo(f"wrote {path}: {events} run {command}")
