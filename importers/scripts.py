"""The named scripts a workspace defines, from the files a trace showed: package.json
`scripts`, Makefile targets, justfile recipes, Taskfile tasks, and the pdm, hatch and
poe scripts of pyproject.toml. `npm run lint` or `make check` is then
read through the command it runs (`eslint .`, `pytest -q`), not guessed from its name.

A file counts when the trace wrote it whole (its content) or printed it (a read tool's
result, `cat package.json`); a file tool's line numbers (`   12→`, `   12\t`) are
removed first. What cannot be parsed gives nothing.

Pure: strings in, values out.
"""

from __future__ import annotations

import json
import posixpath
import re
import tomllib

from outcomes.importers.checks import Scripts
from outcomes.importers.shell import split_command

PACKAGE_FILES = frozenset({"package.json"})
MAKE_FILES = frozenset({"Makefile", "makefile", "GNUmakefile"})
JUST_FILES = frozenset({"justfile", "Justfile", ".justfile"})
TASK_FILES = frozenset({"Taskfile.yml", "Taskfile.yaml", "taskfile.yml"})
PYPROJECT_FILES = frozenset({"pyproject.toml"})

_NUMBERED = re.compile(r"^ *\d+(?:→|\t)", re.M)
_SCRIPT_PAIR = re.compile(r'"((?:[^"\\]|\\.)+)"\s*:\s*"((?:[^"\\]|\\.)*)"')
_MAKE_TARGET = re.compile(r"^([A-Za-z0-9_.\-/]+(?:[ \t]+[A-Za-z0-9_.\-/]+)*)[ \t]*:(?![=:])(.*)$")
_JUST_RECIPE = re.compile(r"^@?([A-Za-z_][A-Za-z0-9_-]*)(?:[ \t]+[^:=]*)?:(?!=)(.*)$")


def without_line_numbers(text: str) -> str:
    """`text` without the line numbers a file tool prefixes (when every line has one)."""
    lines = text.splitlines()
    numbered = sum(1 for ln in lines if _NUMBERED.match(ln))
    if lines and numbered >= max(1, len([ln for ln in lines if ln.strip()]) * 0.8):
        return _NUMBERED.sub("", text)
    return text


def package_scripts(text: str) -> dict[str, str]:
    """The `scripts` of a package.json text (a fragment's pairs when it is not whole)."""
    body = without_line_numbers(text)
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict):
        scripts = data.get("scripts")
        if isinstance(scripts, dict):
            return {str(k): v for k, v in scripts.items() if isinstance(v, str)}
        return {}
    start = body.find('"scripts"')
    if start < 0:
        return {}
    close = body.find("}", start)
    block = body[start : close if close >= 0 else len(body)]
    out: dict[str, str] = {}
    for m in _SCRIPT_PAIR.finditer(block):
        try:
            out[json.loads(f'"{m.group(1)}"')] = json.loads(f'"{m.group(2)}"')
        except ValueError:
            continue
    return out


def make_recipes(text: str) -> dict[str, str]:
    """Makefile targets and their recipes (tab-indented lines, `@`/`-` prefixes removed,
    joined with `&&`); a target without a recipe runs its prerequisites' recipes."""
    recipes: dict[str, list[str]] = {}
    prerequisites: dict[str, list[str]] = {}
    current: list[str] = []
    for line in without_line_numbers(text).splitlines():
        if line.startswith("\t"):
            command = line.strip().lstrip("@-+").strip()
            if command and not command.startswith("#"):
                for name in current:
                    recipes[name].append(command)
            continue
        m = _MAKE_TARGET.match(line)
        if m and not line.startswith((".", "#")):
            current = m.group(1).split()
            for name in current:
                recipes.setdefault(name, [])
                prerequisites[name] = m.group(2).split(";")[0].split()
        elif line.strip() and not line.startswith("#"):
            current = []
    out: dict[str, str] = {}
    for name, commands in recipes.items():
        if not commands:
            commands = [c for p in prerequisites.get(name, []) for c in recipes.get(p, [])]
        if commands:
            out[name] = " && ".join(commands)
    return out


def just_recipes(text: str) -> dict[str, str]:
    """justfile recipes and their indented lines."""
    out: dict[str, list[str]] = {}
    current: str | None = None
    for line in without_line_numbers(text).splitlines():
        if line[:1] in {" ", "\t"} and current is not None:
            command = line.strip().lstrip("@-").strip()
            if command and not command.startswith("#"):
                out[current].append(command)
            continue
        m = _JUST_RECIPE.match(line)
        if m and not line.startswith(("set ", "export ", "alias ", "import ", "mod ")):
            current = m.group(1)
            out[current] = []
        elif line.strip():
            current = None
    return {k: " && ".join(v) for k, v in out.items() if v}


_TASK_NAME = re.compile(r"^  ([A-Za-z0-9_:.-]+):\s*$")
_TASK_CMD = re.compile(r"^\s+-\s+(?:cmd:\s*)?(.+?)\s*$")


def task_recipes(text: str) -> dict[str, str]:
    """Taskfile.yml tasks and their `cmds` (the plain list form and `- cmd: …`)."""
    out: dict[str, list[str]] = {}
    current: str | None = None
    in_tasks = in_cmds = False
    for line in without_line_numbers(text).splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line.startswith(" "):
            in_tasks, current = line.rstrip() == "tasks:", None
            continue
        name = _TASK_NAME.match(line) if in_tasks else None
        if name:
            current, in_cmds = name.group(1), False
            out[current] = []
        elif current is not None and line.strip() == "cmds:":
            in_cmds = True
        elif current is not None and in_cmds:
            cmd = _TASK_CMD.match(line)
            if cmd and not cmd.group(1).startswith("task:"):
                out[current].append(cmd.group(1).strip("'\""))
            elif not cmd:
                in_cmds = False
    return {k: " && ".join(v) for k, v in out.items() if v}


def pyproject_scripts(text: str) -> dict[str, str]:
    """pdm, hatch and poe scripts of a pyproject.toml (`pdm run lint`, `hatch run test`,
    `poe check`): name to command text."""
    try:
        data = tomllib.loads(without_line_numbers(text))
    except tomllib.TOMLDecodeError:
        return {}
    tool = data.get("tool") if isinstance(data.get("tool"), dict) else {}
    assert isinstance(tool, dict)
    tables: list[object] = [
        (tool.get("pdm") or {}).get("scripts"),
        (((tool.get("hatch") or {}).get("envs") or {}).get("default") or {}).get("scripts"),
        (tool.get("poe") or {}).get("tasks"),
    ]
    out: dict[str, str] = {}
    for table in tables:
        if not isinstance(table, dict):
            continue
        for name, value in table.items():
            command = value
            if isinstance(value, dict):
                command = value.get("cmd") or value.get("shell")
            if isinstance(command, list):
                command = " && ".join(c for c in command if isinstance(c, str))
            if isinstance(command, str) and command:
                out[str(name)] = command
    return out


_PRINTERS = frozenset({"cat", "bat", "batcat", "head", "less", "more", "nl"})


class ScriptBook:
    """The scripts seen so far in a trace, updated step by step (mutable while a trace
    is read; `scripts()` is the view at that moment)."""

    def __init__(self) -> None:
        self._package: dict[str, str] = {}
        self._recipes: dict[str, str] = {}
        self._python: dict[str, str] = {}

    def saw(self, path: str, text: str | None) -> None:
        """The trace showed the content of `path`."""
        if not text:
            return
        name = posixpath.basename(path.strip())
        if name in PACKAGE_FILES:
            found = package_scripts(text)
            if found:
                self._package = found
        elif name in MAKE_FILES:
            self._recipes.update(make_recipes(text))
        elif name in JUST_FILES:
            self._recipes.update(just_recipes(text))
        elif name in TASK_FILES:
            self._recipes.update(task_recipes(text))
        elif name in PYPROJECT_FILES:
            self._python.update(pyproject_scripts(text))

    def saw_shell(self, command: str, output: str | None) -> None:
        """`cat package.json`, `head -80 Makefile`, `cd web && cat package.json`: a
        command line whose one printing command names one file shows that file (whole or
        its first lines, which the parsers take as a fragment)."""
        if not output:
            return
        printing = [s for s in split_command(command) if s.program in _PRINTERS]
        if len(printing) != 1 or printing[0].piped_out:
            return
        files = [w for w in printing[0].words[1:] if not w.startswith("-") and not w.isdigit()]
        if len(files) == 1:
            self.saw(files[0], output)

    def scripts(self) -> Scripts:
        return Scripts(dict(self._package), dict(self._recipes), dict(self._python))
