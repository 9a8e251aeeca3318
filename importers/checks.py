"""Which commands are checks, of what kind, and what their output says.

A check is recognised by the program it runs (the catalogue's rows,
`outcomes.importers.catalogue`), never by what the agent said it meant; a package
script or a make/just/task recipe is a check when its name is one (`test`, `lint`,
`build`…) or when its body, read from the package.json or Makefile the trace showed,
runs one. Its result comes from the tool's own summary lines, else from its exit status
when that status is its own (no pipe after it took it away), else it is
`indeterminate`, never `pass`.

When one command line runs several checks and they share one output (`npm run lint |
tail && npm run build | tail`), the output is read in order: each summary line goes to
the first check, from the current one on, whose tool prints it, and a check that has
printed its closing line hands the rest on.

Pure: strings in, values out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from outcomes.importers.catalogue import (
    ALL_LINES,
    BY_NAME,
    KIND_GROUPS,
    Line,
    Tool,
    find_tool,
    invocation,
    lines_of,
)
from outcomes.importers.shell import Simple, split_command

CheckResult = Literal["pass", "fail", "indeterminate"]


@dataclass(frozen=True, slots=True)
class Scripts:
    """What the trace showed of the workspace's named scripts: package.json `scripts`,
    Makefile/justfile/Taskfile recipes and pyproject.toml's pdm/hatch/poe scripts, name
    to command text."""

    package: Mapping[str, str]
    recipes: Mapping[str, str]
    python: Mapping[str, str] = field(default_factory=dict)  # pdm/hatch/poe scripts

    @staticmethod
    def empty() -> Scripts:
        return Scripts({}, {})


@dataclass(frozen=True, slots=True)
class Check:
    """A command that runs a check: `kind` test|build|lint|typecheck|format-check,
    `label` the check as it reads without wrappers, `focused` when it names particular
    tests or paths; `tools` the catalogue rows whose lines are its evidence (empty: any
    row's, for a runner whose script is not known)."""

    kind: str
    label: str
    runner: str
    focused: bool
    tools: tuple[str, ...] = ()


_SCRIPT_CHECKS = re.compile(
    r"(test|tests|check|lint|typecheck|type-check|types|tsc|build|compile|verify|ci|e2e|"
    r"coverage|spec|format:check|fmt:check|format-check|prettier:check)([:_-].*)?$"
)
_NOT_CHECKS = frozenset(
    {"clean", "install", "run", "serve", "start", "dev", "deploy", "format", "fmt"}
)
_PACKAGE_MANAGERS = frozenset({"npm", "yarn", "pnpm", "bun"})
_MANAGER_COMMANDS = frozenset(
    {"add", "install", "i", "ci", "remove", "rm", "dlx", "exec", "create", "init", "publish"}
    | {"x", "link", "why", "outdated", "update", "upgrade", "audit", "pack", "login", "info"}
)
_RECIPE_RUNNERS = frozenset({"make", "gmake", "just", "task"})
_WHOLE_TREE = frozenset({"./...", "...", ".", "./"})
_MAX_DEPTH = 3


def check_of(simple: Simple, scripts: Scripts | None = None, _depth: int = 0) -> Check | None:
    """The check `simple` runs, or None for a command that is not a check."""
    prog, args = invocation(simple.words)
    if _asks_about_itself(args):
        return None  # `pylint --version`, `pytest --help`: the tool reports on itself
    if prog.endswith("runtests.py"):
        prog = "runtests.py"
    known = scripts or Scripts.empty()
    if prog in _PACKAGE_MANAGERS and not (prog == "bun" and args[:1] == ["test"]):
        name = _package_script(prog, args)
        if name is None:
            return None
        if name not in known.package and prog != "npm" and name in args:
            # `pnpm vitest run`, `yarn eslint .`: with no script of that name, yarn,
            # pnpm and bun run the package's binary
            rest = args[args.index(name) + 1 :]
            tool = find_tool(name, rest, checks=True)
            if tool is not None and tool.kind is not None and not tool.delegates:
                kind = _kind_by_subcommand(tool, rest)
                return Check(kind, simple.text, tool.name, _focused(tool.name, rest), (tool.name,))
        return _named(simple, prog, name, known.package.get(name), known, _depth)
    if prog in _RECIPE_RUNNERS:
        targets = [a for a in args if not a.startswith("-") and "=" not in a]
        if not targets:
            if prog != "make":
                return None
            return Check("build", simple.text, prog, False, ())
        # `make clean test`: the first target that is a check by its name or its recipe
        candidates = [
            t
            for t in targets
            if t not in _NOT_CHECKS or _body_check(known.recipes.get(t), known, _depth)
        ]
        if not candidates:
            return None
        name = candidates[0]
        body = known.recipes.get(name)
        if prog != "make" and not _SCRIPT_CHECKS.match(name) and body is None:
            return None
        return _named(simple, prog, name, body, known, _depth, recipe=True)
    tool = find_tool(prog, args, checks=True)
    if tool is None and (prog in known.python or prog == "poe"):
        # `pdm run lint`, `hatch run test` (their wrapper removed), `poe check`
        name = args[0] if prog == "poe" and args else prog
        body = known.python.get(name)
        if body is not None:
            return _named(simple, prog, name, body, known, _depth, recipe=True)
        return None
    if tool is None or tool.kind is None:
        return None
    kind = _kind_by_subcommand(tool, args)
    tools = () if tool.delegates else (tool.name,)
    return Check(kind, simple.text, tool.name, _focused(tool.name, args), tools)


def _kind_by_subcommand(tool: Tool, args: list[str]) -> str:
    """A row that covers several subcommands (`bazel test|build`, `deno lint`) takes the
    kind its subcommand names."""
    kind = tool.kind or "test"
    if len(tool.sub) > 1 and not tool.any_goal:
        first = next((a for a in args if not a.startswith("-")), "")
        if first in {"build", "compile", "assemble"}:
            return "build"
        if first in {"lint", "check"} and kind == "test":
            return "lint" if first == "lint" else "build"
    return kind


def _named(
    simple: Simple,
    prog: str,
    name: str,
    body: str | None,
    scripts: Scripts,
    depth: int,
    *,
    recipe: bool = False,
) -> Check | None:
    """A package script or recipe: a check by its body when the trace showed it, else
    by its name."""
    inner = _body_check(body, scripts, depth)
    runner_row = {"gmake": "make"}.get(prog, prog if recipe else f"{prog} scripts")
    if inner is not None:
        tools = tuple(dict.fromkeys((*inner.tools, runner_row))) if inner.tools else ()
        return Check(inner.kind, simple.text, f"{prog} {name}", inner.focused, tools)
    if body is not None and not _SCRIPT_CHECKS.match(name):
        return None  # the script is known and runs no check
    if not _SCRIPT_CHECKS.match(name):
        if recipe and prog in {"make", "gmake"} and name not in _NOT_CHECKS:
            return Check(_script_kind(name), simple.text, f"{prog} {name}", False, ())
        return None
    return Check(_script_kind(name), simple.text, f"{prog} {name}", False, ())


def _body_check(body: str | None, scripts: Scripts, depth: int) -> Check | None:
    """The first check a script's body runs (scripts may call scripts, to a depth)."""
    if body is None or depth >= _MAX_DEPTH:
        return None
    found = [c for s in split_command(body) if (c := check_of(s, scripts, depth + 1)) is not None]
    if not found:
        return None
    tools = tuple(dict.fromkeys(t for c in found for t in c.tools))
    if any(not c.tools for c in found):
        tools = ()
    return Check(found[0].kind, body, found[0].runner, found[0].focused, tools)


def _asks_about_itself(args: list[str]) -> bool:
    """`--version`/`--help` anywhere, or `-V`/`-h` as the only argument."""
    return any(a in {"--version", "--help"} for a in args) or args in (["-V"], ["-h"])


def _package_script(prog: str, args: list[str]) -> str | None:
    if not args:
        return None if prog == "npm" else "install" if prog != "bun" else None
    head = args[0]
    if head in {"test", "t", "tst"}:
        return "test"
    if head in {"run", "run-script", "rum", "urn"} and len(args) > 1:
        return args[1]
    if prog != "npm" and head not in _MANAGER_COMMANDS and not head.startswith("-"):
        return head
    return None


def _script_kind(name: str) -> str:
    if re.search(r"(format|fmt|prettier)[:_-]?check", name):
        return "format-check"
    if re.match(r"(lint|check|format)", name):
        return "lint"
    if re.match(r"(typecheck|type-check|types|tsc)", name):
        return "typecheck"
    if re.match(r"(build|compile|all$)", name):
        return "build"
    return "test"


def _focused(runner: str, args: list[str]) -> bool:
    """Does the check name particular tests (a path, a node id, `-k`)?"""
    for a in args:
        if a in {"-k", "-run", "--run", "-t", "--testNamePattern", "--filter", "-p", "--package"}:
            return True
        if a.startswith("-") or a in _WHOLE_TREE:
            continue
        if "/" in a or "::" in a or re.search(r"\.(py|rs|go|ts|js|tsx|jsx|java|rb|php|cs)$", a):
            return True
        if runner in {"runtests", "django test"}:
            return True
    return False


# -- summary lines ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Summary:
    """What a runner's own summary says: the result and the counts it shows."""

    result: CheckResult
    tests: int | None
    line: str


@dataclass(frozen=True, slots=True)
class _Hit:
    at: int
    tool: str
    line: Line
    text: str
    result: CheckResult
    counts: Mapping[str, int]


_COUNT_WORDS: dict[str, str] = {
    "passed": "passed",
    "passing": "passed",
    "pass": "passed",
    "xfailed": "passed",
    "xpassed": "passed",
    "successful": "passed",
    "failed": "failed",
    "failing": "failed",
    "failures": "failed",
    "failure": "failed",
    "fail": "failed",
    "error": "errors",
    "errors": "errors",
    "total": "total",
    "tests": "total",
    "examples": "total",
    "example": "total",
    "runs": "total",
}
_NUMBER_WORD = re.compile(r"(\d+) ([A-Za-z]+)|([A-Za-z]+): (\d+)")


def _counts(m: re.Match[str], line: Line) -> dict[str, int]:
    named = {k: int(v) for k, v in m.groupdict().items() if v is not None and v.isdigit()}
    if line.result != "count":
        return named
    out: dict[str, int] = {}
    for g in _NUMBER_WORD.finditer(m.group(0)):
        number, word = (g.group(1), g.group(2)) if g.group(1) else (g.group(4), g.group(3))
        key = _COUNT_WORDS.get(word.lower())
        if key is not None and key not in named:
            out[key] = out.get(key, 0) + int(number)
    return {**out, **named}


def _tests(counts: Mapping[str, int]) -> int | None:
    if "total" in counts:
        return counts["total"]
    keys = [k for k in ("passed", "failed", "errors") if k in counts]
    return sum(counts[k] for k in keys) if keys else None


def _hits(output: str, lines: Sequence[tuple[str, Line]]) -> list[_Hit]:
    found: list[_Hit] = []
    for tool, line in lines:
        if line.hint and line.hint not in output:
            continue
        for m in line.pattern.finditer(output):
            counts = _counts(m, line)
            if line.result == "count":
                bad = counts.get("failed", 0) + counts.get("errors", 0) + counts.get("problems", 0)
                result: CheckResult = "fail" if bad else "pass"
            elif line.result == "none":
                result = "indeterminate"
                counts = {"total": 0}
            else:
                result = line.result
            if BY_NAME[tool].kind not in {"test", None}:
                counts = {}  # a linter's or a build's numbers count problems, not tests
            found.append(_Hit(m.start(), tool, line, m.group(0).strip(), result, counts))
    found.sort(key=lambda h: h.at)
    return found


def _combine(hits: Sequence[_Hit]) -> Summary | None:
    """The last line decides, unless an earlier one failed (a build error after a passing
    test binary fails the run); counts of per-unit lines add up."""
    if not hits:
        return None
    last = hits[-1]
    tests = _tests(last.counts)
    units = [h for h in hits if h.line.per_unit and h.tool == last.tool]
    if last.line.per_unit and len(units) > 1:
        totals: dict[str, int] = {}
        for h in units:
            for k, v in h.counts.items():
                totals[k] = totals.get(k, 0) + v
        tests = _tests(totals)
    if tests is None:
        counted = [h for h in hits if _tests(h.counts) is not None]
        tests = _tests(counted[-1].counts) if counted else None
    fails = [h for h in hits if h.result == "fail"]
    if fails and last.result != "fail":
        return Summary("fail", tests, f"{fails[-1].text} | {last.text}")
    return Summary(last.result, tests, last.text)


def summary_of(output: str, tools: Sequence[str] = ()) -> Summary | None:
    """The summary `output` shows for the named catalogue rows (any row's when none are
    named), or None if it shows none."""
    lines = lines_of(tools) if tools else ALL_LINES
    return _combine(_hits(output, lines))


def _compatible(hit: _Hit, check: Check, rows: frozenset[str] | None) -> bool:
    """Can `check` have printed `hit`? `rows`: the rows whose lines it reads (None: any
    row of a kind it may run)."""
    if rows is not None:
        return hit.tool in rows
    row = BY_NAME[hit.tool]
    if row.kind is None or row.delegates:
        return True  # a runner's own failure line (`npm ERR!`, `make: ***`)
    return row.kind in KIND_GROUPS.get(check.kind, frozenset({check.kind}))


def lines_tools(names: Sequence[str]) -> frozenset[str]:
    return frozenset(name for name, _ in lines_of(names))


def shared_summaries(output: str, checks: Sequence[Check]) -> list[Summary | None]:
    """Each check's summary from one output several checks wrote in order."""
    if len(checks) == 1:
        return [summary_of(output, checks[0].tools)]
    rows = [lines_tools(c.tools) if c.tools else None for c in checks]
    names: set[str] = set()
    for read in rows:
        names |= read if read is not None else set(BY_NAME)
    lines = tuple((n, ln) for n, ln in ALL_LINES if n in names)
    assigned: list[list[_Hit]] = [[] for _ in checks]
    closed = [False] * len(checks)
    current = 0
    for hit in _hits(output, lines):
        for j in range(current, len(checks)):
            if (j == current and closed[j]) or not _compatible(hit, checks[j], rows[j]):
                continue
            assigned[j].append(hit)
            current = j
            if hit.line.final:
                closed[j] = True
            break
    return [_combine(hits) for hits in assigned]


# -- verdicts --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Verdict:
    """A check's result as the trace shows it, with the count and the line it came from."""

    result: CheckResult
    tests_executed: int
    evidence: str


_TIMEOUT = re.compile(r"(Command timed out|timed out after|TimeoutExpired|Killed)", re.I)
_PYTEST_NO_TESTS = 5  # pytest's exit status when it collected no tests


def verdict(
    check: Check,
    summary: Summary | None,
    status: int | None,
    output: str,
    *,
    timed_out: bool = False,
) -> Verdict:
    """The result of a check from its summary, else its own exit status (`status` is
    None when a pipe took it away or the trace does not show it)."""
    timeout = timed_out or (summary is None and _TIMEOUT.search(output[:200] + output[-400:]))
    if timeout and (summary is None or summary.result != "fail"):
        return Verdict("indeterminate", summary.tests or 0 if summary else 0, "timed out")
    if summary is not None:
        if status not in (None, 0) and summary.result == "pass":
            # e.g. coverage below its threshold after the tests passed
            tests = summary.tests if summary.tests is not None else 1
            return Verdict("fail", tests, f"{summary.line} | exit code {status}")
        if summary.result == "indeterminate":
            return Verdict("indeterminate", summary.tests or 0, summary.line)
        fallback = 1 if summary.result == "pass" else 0
        tests = summary.tests if summary.tests is not None else fallback
        return Verdict(summary.result, tests, summary.line)
    if status is None:
        return Verdict("indeterminate", 0, "no summary and no exit status")
    if status == 0:
        return Verdict("pass", 1, "exit code 0")
    if status == _PYTEST_NO_TESTS and check.runner == "pytest":
        return Verdict("indeterminate", 0, "exit code 5: no tests collected")
    return Verdict("fail", 0, f"exit code {status}")


def check_verdict(
    simple: Simple,
    output: str | None,
    exit_code: int | None,
    *,
    timed_out: bool = False,
    scripts: Scripts | None = None,
) -> Verdict:
    """The result of the check `simple` runs, from its output and the line's status.

    The exit status counts only when nothing after the runner in a pipe took it away
    (`pytest | tail` reports tail's status). A timeout, or no output and no status, is
    `indeterminate`. `tests_executed` is the summary's count; a check whose summary shows
    no count (a build, a lint, an exit status alone) counts as one check run.
    """
    check = check_of(simple, scripts) or Check("test", simple.text, simple.program, False)
    text = output or ""
    summary = summary_of(text, check.tools) if text else None
    status = None if simple.piped_out or simple.background else exit_code
    return verdict(check, summary, status, text, timed_out=timed_out)
