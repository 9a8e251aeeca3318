"""What a shell command is, and what its output says: checks, commits, effects.

Shared by every importer (and the OTLP receiver's tool spans): a command line is split
into its simple commands; each is classified by the program it runs, never by what the
agent said it meant. A check (test runner, build tool, linter, type checker) gets its
result from the runner's own summary line, or from the exit status when the summary is
missing; when neither is shown the result is `indeterminate`, never `pass`. Local
`git commit` is a write whose receipt is the commit line; pushes, pull requests,
repository creation, deploys, installs, downloads and messages are effects whose state
comes from their output, `unknown` when the output does not settle it.

Effect classes are the ones the claim checker reads a narrative's words against:
`write` (local commits), `git_push` (pushes, commits made on a remote through its API),
`pull_request`, `issue`, `deployment` (deploys, preview sandboxes), `publication`
(repositories, releases), `email`, `message` (chat), `upload`, and for what is not an
effect on others' systems `install`, `fetch` (downloads), `service`, `schedule`.

Pure: strings in, values out. No clock, no I/O.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Literal

CheckResult = Literal["pass", "fail", "indeterminate"]
EffectOutcome = Literal["completed", "failed", "denied", "unknown"]

# -- splitting a command line ----------------------------------------------------------

_SEPARATORS = {"&&", "||", ";", "|", "&", "|&", "\n"}
_WRAPPERS = {
    "sudo",
    "time",
    "nice",
    "nohup",
    "env",
    "command",
    "exec",
    "xvfb-run",
    "stdbuf",
}
_RUNNERS_WITH_RUN = {"uv", "poetry", "pdm", "hatch", "pipenv", "rye", "bundle"}


@dataclass(frozen=True, slots=True)
class Simple:
    """One simple command of a command line: its words, the files it redirects output
    into, and whether a later stage of a pipe (`| tail`) takes its exit status away."""

    words: tuple[str, ...]
    piped_out: bool
    background: bool = False
    writes: tuple[str, ...] = ()

    @property
    def program(self) -> str:
        return self.words[0].rsplit("/", 1)[-1] if self.words else ""

    @property
    def text(self) -> str:
        return " ".join(self.words)


def _tokens(line: str) -> list[str]:
    """Shell words and separators of a command line; heredoc bodies are dropped."""
    body = re.sub(r"<<-?\s*'?\"?(\w+)'?\"?([^\n]*)\n.*?\n\s*\1\s*(?=\n|$)", r"\2", line, flags=re.S)
    body = re.sub(r"\d?>&\d|\d?<&\d", " ", body)  # fd duplication is no separator
    body = re.sub(r"&>>?", " > ", body)
    lexer = shlex.shlex(body, posix=True, punctuation_chars=";&|\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    out: list[str] = []
    try:
        for token in lexer:
            out.append(token)
    except ValueError:  # an unbalanced quote: fall back to whitespace words
        return body.replace("\n", " ; ").split()
    return out


def _separator(token: str) -> str:
    """`|`, `|&`, `&` as themselves; any run of `;`, `&&`, `||` and newlines ends a
    command the way `;` does."""
    bare = token.replace("\n", "")
    return bare if bare in {"|", "|&", "&"} else ";"


def split_command(line: str) -> tuple[Simple, ...]:
    """The simple commands of `line`, wrappers (`sudo`, `timeout 60`, `VAR=1`, `cd x &&`)
    removed from their words."""
    groups: list[tuple[list[str], str]] = []
    current: list[str] = []
    for token in _tokens(line):
        if token and set(token) <= set(";&|\n"):
            groups.append((current, _separator(token)))
            current = []
        else:
            current.append(token)
    groups.append((current, ""))
    simples: list[Simple] = []
    for words, sep in groups:
        words, writes = _redirects(words)
        words = _strip_wrappers(words)
        if not words:
            continue
        simples.append(Simple(tuple(words), sep in {"|", "|&"}, sep == "&", tuple(writes)))
    return tuple(simples)


def _redirects(words: list[str]) -> tuple[list[str], list[str]]:
    """The words without redirections, and the files output is redirected into."""
    cleaned: list[str] = []
    writes: list[str] = []
    target: str | None = None
    for w in words:
        if target is not None:
            if target == "out" and not w.startswith("/dev/"):
                writes.append(w)
            target = None
            continue
        if re.fullmatch(r"\d?>>?|>\|", w):
            target = "out"
            continue
        if w == "<":
            target = "in"
            continue
        m = re.fullmatch(r"\d?>>?(\S+)", w)
        if m:
            if not m.group(1).startswith("/dev/"):
                writes.append(m.group(1))
            continue
        if re.fullmatch(r"<\S+", w):
            continue
        cleaned.append(w)
    return cleaned, writes


def _strip_wrappers(words: list[str]) -> list[str]:
    while words:
        head = words[0]
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", head):
            words = words[1:]
        elif head in _WRAPPERS:
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[1:]
        elif head == "timeout":
            words = words[1:]
            while words and (words[0].startswith("-") or re.fullmatch(r"[\d.]+[smhd]?", words[0])):
                words = words[1:]
        elif head in _RUNNERS_WITH_RUN and len(words) > 1 and words[1] in {"run", "exec"}:
            words = words[2:]
        elif head in {"npx", "bunx", "pnpx"} or (
            head in {"pnpm", "yarn"} and words[1:2] == ["dlx"]
        ):
            words = words[2:] if head in {"pnpm", "yarn"} else words[1:]
            while words and words[0].startswith("-"):
                words = words[1:]
        elif re.fullmatch(r"python[\d.]*", head.rsplit("/", 1)[-1]) and words[1:2] == ["-m"]:
            words = words[2:]
        else:
            break
    return words


# -- what a command is -----------------------------------------------------------------

# Tools whose first argument says whether they check: `bazel test`, `dotnet build`…
_SUBCOMMAND_CHECKS: dict[str, frozenset[str]] = {
    "bazel": frozenset({"test", "build"}),
    "bazelisk": frozenset({"test", "build"}),
    "dotnet": frozenset({"test", "build"}),
    "swift": frozenset({"test", "build"}),
    "sbt": frozenset({"test", "compile"}),
    "mix": frozenset({"test", "compile"}),
    "rake": frozenset({"test", "spec"}),
    "deno": frozenset({"test", "lint", "check"}),
    "meson": frozenset({"test"}),
    "stack": frozenset({"test", "build"}),
    "cabal": frozenset({"test", "build"}),
    "zig": frozenset({"test", "build"}),
    "flutter": frozenset({"test"}),
    "dart": frozenset({"test"}),
}

_SCRIPT_CHECKS = re.compile(
    r"(test|tests|check|lint|typecheck|type-check|types|tsc|build|compile|verify|ci|e2e|"
    r"coverage|spec)([:_-].*)?$"
)
_MAKE_NON_CHECK = {"clean", "install", "run", "serve", "start", "dev", "deploy", "format", "fmt"}
_CARGO_CHECKS = {"test", "build", "check", "clippy", "nextest", "llvm-cov", "bench", "tarpaulin"}
_GO_CHECKS = {"test", "build", "vet"}
_LINTERS = {
    "ruff",
    "mypy",
    "eslint",
    "tsc",
    "pyright",
    "flake8",
    "pylint",
    "golangci-lint",
    "shellcheck",
    "stylelint",
    "biome",
    "vue-tsc",
    "hadolint",
    "rubocop",
    "phpstan",
}
_TEST_RUNNERS = {
    "pytest",
    "py.test",
    "unittest",
    "tox",
    "nox",
    "jest",
    "vitest",
    "mocha",
    "ava",
    "phpunit",
    "rspec",
    "ctest",
    "bats",
    "playwright",
    "cypress",
    "karma",
    "tap",
}


@dataclass(frozen=True, slots=True)
class Check:
    """A command that runs a check: `kind` test|build|lint|typecheck, `label` the check
    as it reads without wrappers, `focused` when it names particular tests or paths."""

    kind: str
    label: str
    runner: str
    focused: bool


def check_of(simple: Simple) -> Check | None:
    """The check `simple` runs, or None for a command that is not a check."""
    w = list(simple.words)
    prog = simple.program
    args = w[1:]
    if _asks_about_itself(args):
        return None  # `pylint --version`, `pytest --help`: the tool reports on itself
    kind: str | None = None
    runner = prog
    if prog in _TEST_RUNNERS or prog.endswith("runtests.py") or prog == "runtests":
        kind = "test"
    elif re.fullmatch(r"python[\d.]*", prog) and args:
        script = args[0].rsplit("/", 1)[-1]
        if script in {"runtests.py", "runtests"} or (
            script == "manage.py" and args[1:2] == ["test"]
        ):
            kind, runner = "test", script
            args = args[1:]
        elif script == "setup.py" and args[1:2] == ["test"]:
            kind, runner = "test", "setup.py"
    elif prog == "cargo" and args and args[0] in _CARGO_CHECKS | {"fmt"}:
        if args[0] == "fmt" and "--check" not in args:
            return None
        kind = (
            "test"
            if args[0] in {"test", "nextest", "llvm-cov", "tarpaulin", "bench"}
            else ("lint" if args[0] in {"clippy", "fmt"} else "build")
        )
        runner = f"cargo {args[0]}"
    elif prog == "go" and args and args[0] in _GO_CHECKS:
        kind = "test" if args[0] == "test" else ("lint" if args[0] == "vet" else "build")
        runner = f"go {args[0]}"
    elif prog in {"npm", "yarn", "pnpm", "bun"}:
        package_script = _package_script(prog, args)
        if package_script is None or not _SCRIPT_CHECKS.match(package_script):
            return None
        script = package_script
        kind = _script_kind(script)
        runner = f"{prog} {script}"
    elif prog in {"mvn", "mvnw", "./mvnw", "gradle", "gradlew", "./gradlew"}:
        goals = [a for a in args if not a.startswith("-")]
        if goals and all(g in {"clean", "dependency:tree", "wrapper"} for g in goals):
            return None
        kind = (
            "test"
            if not goals
            or any("test" in g or g in {"verify", "check", "install", "package"} for g in goals)
            else "build"
        )
    elif prog in {"make", "gmake", "just", "task", "ninja"}:
        targets = [a for a in args if not a.startswith("-") and "=" not in a]
        if prog != "ninja" and targets and all(t in _MAKE_NON_CHECK for t in targets):
            return None
        if (
            prog in {"just", "task"}
            and targets
            and not all(_SCRIPT_CHECKS.match(t) for t in targets)
        ):
            return None
        if prog in {"just", "task"} and not targets:
            return None
        kind = _script_kind(targets[0]) if targets else "build"
    elif prog in _LINTERS:
        if prog == "ruff" and args[:1] == ["format"] and "--check" not in args:
            return None
        kind = "typecheck" if prog in {"mypy", "tsc", "pyright", "vue-tsc"} else "lint"
    elif prog in {"black", "prettier", "isort"} and ("--check" in args or "-c" in args):
        kind = "lint"
    elif prog in {"dune"} and args[:1] in (["build"], ["test"], ["runtest"]):
        kind = "test" if args[0] != "build" else "build"
    elif prog in _SUBCOMMAND_CHECKS and args and args[0] in _SUBCOMMAND_CHECKS[prog]:
        kind = "build" if args[0] in {"build", "compile", "check"} else "test"
        if prog == "deno" and args[0] in {"lint", "check"}:
            kind = "lint"
        runner = f"{prog} {args[0]}"
    if kind is None:
        return None
    label = simple.text
    focused = _focused(runner, args)
    return Check(kind, label, runner, focused)


def _asks_about_itself(args: list[str]) -> bool:
    """`--version`/`--help` anywhere, or `-V`/`-h` as the only argument."""
    return any(a in {"--version", "--help"} for a in args) or args in (["-V"], ["-h"])


def _package_script(prog: str, args: list[str]) -> str | None:
    if not args:
        return None if prog == "npm" else "install"
    head = args[0]
    if head in {"test", "t", "tst"}:
        return "test"
    if head in {"run", "run-script"} and len(args) > 1:
        return args[1]
    if prog != "npm" and head not in {"add", "install", "remove", "dlx", "exec", "create", "init"}:
        return head
    return None


def _script_kind(name: str) -> str:
    if re.match(r"(lint|check|format)", name):
        return "lint"
    if re.match(r"(typecheck|type-check|types|tsc)", name):
        return "typecheck"
    if re.match(r"(build|compile)", name):
        return "build"
    return "test"


# Arguments that name the whole tree, not particular tests: Go's `./...`, `.`.
_WHOLE_TREE = frozenset({"./...", "...", ".", "./"})


def _focused(runner: str, args: list[str]) -> bool:
    """Does the check name particular tests (a path, a node id, `-k`)?"""
    for a in args:
        if a in {"-k", "-run", "--run", "-t", "--testNamePattern", "--filter", "-p", "--package"}:
            return True
        if a.startswith("-") or a in _WHOLE_TREE:
            continue
        if "/" in a or "::" in a or re.search(r"\.(py|rs|go|ts|js|tsx|jsx|java)$", a):
            return True
        if runner.endswith(("runtests.py", "runtests", "manage.py")):
            return True
    return False


# -- runner summaries ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Summary:
    """What a runner's own summary says: the result and the counts it shows."""

    result: CheckResult
    tests: int | None
    line: str


_PYTEST = re.compile(
    r"^=*\s*((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected|"
    r"rerun)(?:, )?)+|no tests ran)\s+in\s+[\d.]+s(?:\s*\([^)]*\))?\s*=*\s*$",
    re.M,
)
_PYTEST_INTERRUPTED = re.compile(r"^!+\s*Interrupted:.*!+\s*$", re.M)
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s\s*$", re.M)
_UNITTEST_END = re.compile(r"^(OK|FAILED)\b.*$", re.M)
_CARGO = re.compile(r"^test result: (ok|FAILED)\. (\d+) passed; (\d+) failed.*$", re.M)
_CARGO_ERROR = re.compile(r"^error(\[E\d+\])?: (could not compile|test failed|.*)$", re.M)
_CARGO_FINISHED = re.compile(r"^\s*Finished `?\w+`? profile.*$", re.M)
_GO_OK = re.compile(r"^ok\s+\S+\s+[\d.]+s.*$", re.M)
_GO_FAIL = re.compile(r"^(FAIL|--- FAIL:).*$", re.M)
_JEST = re.compile(r"^Tests:\s+(.*\d+ total)\s*$", re.M)
_VITEST = re.compile(
    r"^\s*Tests\s+((?:\d+ (?:failed|passed|skipped|todo)(?: \| )?)+)\s*\((\d+)\)\s*$", re.M
)
_MVN_TESTS = re.compile(r"Tests run: (\d+), Failures: (\d+), Errors: (\d+), Skipped: \d+\s*$", re.M)
_MVN_BUILD = re.compile(
    r"^\[INFO\] BUILD (SUCCESS|FAILURE)\s*$|^BUILD (SUCCESSFUL|FAILED)\b.*$", re.M
)
_MAKE_ERROR = re.compile(r"^g?make(\[\d+\])?: \*\*\* .*Error \d+.*$", re.M)
_TSC = re.compile(r"^Found (\d+) errors?\b.*$|^.*error TS\d+:.*$", re.M)
_RUFF_OK = re.compile(r"^All checks passed!\s*$", re.M)
_RUFF_FOUND = re.compile(r"^Found (\d+) errors?\.?.*$", re.M)
_MYPY_OK = re.compile(r"^Success: no issues found in \d+ source files?\s*$", re.M)
_MYPY_FAIL = re.compile(r"^Found \d+ errors? in \d+ files?.*$", re.M)
_ESLINT = re.compile(r"^✖ \d+ problems? \((\d+) errors?, \d+ warnings?\)\s*$", re.M)
_VITE_OK = re.compile(r"^✓ built in [\d.]+m?s\s*$", re.M)
_BUILD_FAIL = re.compile(
    r"^(error during build:|npm ERR!|npm error|ERR_PNPM_\w+|error Command failed).*$", re.M
)
_TIMEOUT = re.compile(r"(Command timed out|timed out after|TimeoutExpired|Killed)", re.I)


def _count(text: str, word: str) -> int:
    m = re.search(rf"(\d+) {word}", text)
    return int(m.group(1)) if m else 0


def summary_of(output: str) -> Summary | None:
    """The last runner summary `output` shows, or None if it shows none."""
    found: list[tuple[int, Summary]] = []
    for m in _PYTEST.finditer(output):
        body = m.group(1)
        if body == "no tests ran":
            # pytest's exit 5: nothing was collected. No test failed and none passed;
            # the receipt says so with 0 tests (SPEC: missing evidence is indeterminate).
            found.append((m.start(), Summary("indeterminate", 0, m.group(0).strip())))
            continue
        passed = _count(body, "passed") + _count(body, "xfailed") + _count(body, "xpassed")
        failed = _count(body, "failed") + _count(body, "error")
        result: CheckResult = "fail" if failed else "pass"
        found.append((m.start(), Summary(result, passed + failed, m.group(0).strip())))
    for m in _PYTEST_INTERRUPTED.finditer(output):
        found.append((m.start(), Summary("fail", None, m.group(0).strip())))
    for m in _UNITTEST_RAN.finditer(output):
        end = _UNITTEST_END.search(output, m.end())
        if end is not None:
            ok = end.group(1) == "OK"
            line = f"{m.group(0).strip()} | {end.group(0).strip()}"
            found.append((end.start(), Summary("pass" if ok else "fail", int(m.group(1)), line)))
    cargo = list(_CARGO.finditer(output))
    if cargo:
        failed = sum(int(m.group(3)) for m in cargo)
        passed = sum(int(m.group(2)) for m in cargo)
        bad = failed or any(m.group(1) == "FAILED" for m in cargo)
        line = " | ".join(m.group(0).strip() for m in cargo)
        found.append((cargo[-1].start(), Summary("fail" if bad else "pass", passed + failed, line)))
    for m in _GO_FAIL.finditer(output):
        found.append((m.start(), Summary("fail", None, m.group(0).strip())))
    for m in _GO_OK.finditer(output):
        found.append((m.start(), Summary("pass", None, m.group(0).strip())))
    for m in _JEST.finditer(output):
        body = m.group(1)
        total = _count(body, "total")
        found.append(
            (
                m.start(),
                Summary("fail" if _count(body, "failed") else "pass", total, m.group(0).strip()),
            )
        )
    for m in _VITEST.finditer(output):
        body = m.group(1)
        found.append(
            (
                m.start(),
                Summary(
                    "fail" if _count(body, "failed") else "pass",
                    int(m.group(2)),
                    m.group(0).strip(),
                ),
            )
        )
    tests_run = list(_MVN_TESTS.finditer(output))
    for m in _MVN_BUILD.finditer(output):
        ok = (m.group(1) or m.group(2)) in {"SUCCESS", "SUCCESSFUL"}
        tests = None
        line = m.group(0).strip()
        before = [t for t in tests_run if t.start() < m.start()]
        if before:
            t = before[-1]
            tests = int(t.group(1))
            line = f"{line} | {t.group(0).strip()}"
        found.append((m.start(), Summary("pass" if ok else "fail", tests, line)))
    for pattern in (_MAKE_ERROR, _BUILD_FAIL):
        for m in pattern.finditer(output):
            found.append((m.start(), Summary("fail", None, m.group(0).strip())))
    for m in _TSC.finditer(output):
        found.append((m.start(), Summary("fail", None, m.group(0).strip())))
    plain: tuple[tuple[re.Pattern[str], CheckResult], ...] = (
        (_RUFF_OK, "pass"),
        (_MYPY_OK, "pass"),
        (_RUFF_FOUND, "fail"),
        (_MYPY_FAIL, "fail"),
        (_VITE_OK, "pass"),
    )
    for pattern, result in plain:
        for m in pattern.finditer(output):
            found.append((m.start(), Summary(result, None, m.group(0).strip())))
    for m in _ESLINT.finditer(output):
        found.append(
            (m.start(), Summary("fail" if int(m.group(1)) else "pass", None, m.group(0).strip()))
        )
    if not found:
        return None
    fails = [s for _, s in found if s.result == "fail"]
    last = max(found, key=lambda item: item[0])[1]
    if fails and last.result != "fail":
        # a failing stage anywhere (a build error after a passing test binary) fails the run
        return Summary("fail", last.tests, f"{fails[-1].line} | {last.line}")
    return last


@dataclass(frozen=True, slots=True)
class Verdict:
    """A check's result as the trace shows it, with the count and the line it came from."""

    result: CheckResult
    tests_executed: int
    evidence: str


def check_verdict(
    simple: Simple, output: str | None, exit_code: int | None, *, timed_out: bool = False
) -> Verdict:
    """The result of a check from its runner's summary, else its exit status.

    The exit status counts only when nothing after the runner in a pipe took it away
    (`pytest | tail` reports tail's status). A timeout, or no output and no status, is
    `indeterminate`. `tests_executed` is the summary's count; a check whose summary shows
    no count (a build, a lint, an exit status alone) counts as one check run.
    """
    text = output or ""
    summary = summary_of(text) if text else None
    status = None if simple.piped_out or simple.background else exit_code
    timeout = timed_out or (summary is None and _TIMEOUT.search(text[:200] + text[-400:]))
    if timeout and (summary is None or summary.result != "fail"):
        return Verdict("indeterminate", summary.tests or 0 if summary else 0, "timed out")
    if summary is not None:
        result = summary.result
        if status not in (None, 0) and result == "pass":
            result = "fail"  # e.g. coverage below its threshold after the tests passed
            return Verdict(
                result,
                summary.tests if summary.tests is not None else 1,
                f"{summary.line} | exit code {status}",
            )
        tests = summary.tests if summary.tests is not None else (1 if result == "pass" else 0)
        return Verdict(result, tests, summary.line)
    if status is None:
        return Verdict("indeterminate", 0, "no summary and no exit status")
    if status == 0:
        return Verdict("pass", 1, "exit code 0")
    if status == _PYTEST_NO_TESTS and _runs_pytest(simple):
        return Verdict("indeterminate", 0, "exit code 5: no tests collected")
    return Verdict("fail", 0, f"exit code {status}")


_PYTEST_NO_TESTS = 5  # pytest's exit status when it collected no tests


def _runs_pytest(simple: Simple) -> bool:
    check = check_of(simple)
    return check is not None and check.runner in {"pytest", "py.test"}


# -- git and other effects -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Effect:
    """An effect a command or tool call attempted: its class, a target handle, and the
    state its output settles (`unknown` when it does not), with the line that says so."""

    effect_class: str
    target: str
    outcome: EffectOutcome
    evidence: str
    receipt: str | None = None  # the provider's own id (commit sha, repo id, URL)
    consequential: bool = True
    kind: str = ""


_COMMIT_LINE = re.compile(r"^\[([^\]\s]+)(?: \(root-commit\))? ([0-9a-f]{7,40})\] .*$", re.M)
_PUSH_OK = re.compile(
    r"^\s*(?:\*|\+|-|=)?\s*(?:\[new branch\]|\[new tag\]|[0-9a-f]{7,}\.\.\.?[0-9a-f]{7,})"
    r"\s+\S+\s+->\s+\S+.*$|^Everything up-to-date\s*$",
    re.M,
)
_PUSH_FAIL = re.compile(r"^\s*! \[(?:rejected|remote rejected)\].*$|^(?:error|fatal): .*$", re.M)
_URL = re.compile(r"https?://\S+")
_NOT_FOUND = re.compile(r"(command not found|No such file or directory|not recognized as)", re.I)


def git_effects(simple: Simple, output: str | None, exit_code: int | None) -> list[Effect]:
    """The effects of one git or gh command (commit, push, pr/repo/release create)."""
    w = simple.words
    if not w:
        return []
    prog = simple.program
    text = output or ""
    status = None if simple.piped_out or simple.background else exit_code
    sub = [a for a in w[1:] if not a.startswith("-")]
    if prog == "git":
        # skip `git -C dir` style global options
        args = list(w[1:])
        while args and args[0] in {"-C", "-c", "--git-dir", "--work-tree"}:
            args = args[2:]
        verb = args[0] if args else ""
        if verb == "commit":
            m = list(_COMMIT_LINE.finditer(text))
            if m:
                line = m[-1]
                return [
                    Effect(
                        "write",
                        f"git:{line.group(1)}",
                        "completed",
                        line.group(0).strip(),
                        line.group(2),
                        kind="commit",
                    )
                ]
            if re.search(r"nothing (added )?to commit|no changes added to commit", text):
                return []  # git had nothing to write: no write was attempted
            if status not in (None, 0):
                return [
                    Effect(
                        "write",
                        "git:commit",
                        "failed",
                        _last_lines(text) or f"exit code {status}",
                        kind="commit",
                    )
                ]
            return [
                Effect(
                    "write", "git:commit", "unknown", "no commit line in the output", kind="commit"
                )
            ]
        if verb == "push":
            target = " ".join(a for a in args[1:] if not a.startswith("-")) or "default remote"
            fail = _PUSH_FAIL.search(text)
            ok = _PUSH_OK.search(text)
            if fail and not ok:
                return [
                    Effect(
                        "git_push",
                        f"git-push:{target}",
                        "failed",
                        fail.group(0).strip(),
                        kind="push",
                    )
                ]
            if ok and status in (None, 0):
                return [
                    Effect(
                        "git_push",
                        f"git-push:{target}",
                        "completed",
                        ok.group(0).strip(),
                        kind="push",
                    )
                ]
            if status not in (None, 0):
                return [
                    Effect(
                        "git_push",
                        f"git-push:{target}",
                        "failed",
                        f"exit code {status}",
                        kind="push",
                    )
                ]
            return [
                Effect(
                    "git_push",
                    f"git-push:{target}",
                    "unknown",
                    "the output does not show the push's result",
                    kind="push",
                )
            ]
        return []
    if (
        prog == "gh"
        and len(sub) >= 2
        and sub[1] in {"create", "merge", "comment", "edit", "close", "upload", "deploy", "run"}
    ):
        if sub[0] not in {"pr", "repo", "release", "issue", "gist", "workflow"}:
            return []
        target = f"gh:{sub[0]}-{sub[1]}"
        klass = {"pr": "pull_request", "issue": "issue"}.get(sub[0], "publication")
        url = _URL.search(text)
        if status not in (None, 0) or re.search(
            r"^(GraphQL|HTTP \d{3}|error|failed)", text, re.M | re.I
        ):
            return [
                Effect(
                    klass,
                    target,
                    "failed",
                    _last_lines(text) or f"exit code {status}",
                    kind=f"{sub[0]} {sub[1]}",
                )
            ]
        if url:
            return [
                Effect(
                    klass,
                    target,
                    "completed",
                    url.group(0),
                    url.group(0),
                    kind=f"{sub[0]} {sub[1]}",
                )
            ]
        return [
            Effect(
                klass,
                target,
                "unknown",
                "the output shows no URL",
                kind=f"{sub[0]} {sub[1]}",
            )
        ]
    return []


# Commands that change something on another system: (program, subcommands or None for
# any, effect class, the line that shows it happened).
_REMOTE: tuple[tuple[str, frozenset[str] | None, str, re.Pattern[str]], ...] = (
    ("npm", frozenset({"publish"}), "publication", re.compile(r"^\+ \S+@\S+\s*$", re.M)),
    ("yarn", frozenset({"publish"}), "publication", re.compile(r"Published", re.M)),
    ("pnpm", frozenset({"publish"}), "publication", re.compile(r"^\+ \S+@\S+\s*$", re.M)),
    (
        "cargo",
        frozenset({"publish"}),
        "publication",
        re.compile(r"^\s*(Published|Uploaded) ", re.M),
    ),
    (
        "twine",
        frozenset({"upload"}),
        "publication",
        re.compile(r"^View at:\s*\n?\s*https?://", re.M),
    ),
    ("docker", frozenset({"push"}), "publication", re.compile(r"digest: sha256:[0-9a-f]+", re.M)),
    ("podman", frozenset({"push"}), "publication", re.compile(r"Writing manifest|digest", re.M)),
    (
        "kubectl",
        frozenset({"apply", "create", "delete", "rollout", "scale", "set"}),
        "deployment",
        re.compile(r"^\S+/\S+ (created|configured|deleted|scaled|restarted|image updated)", re.M),
    ),
    (
        "helm",
        frozenset({"install", "upgrade", "uninstall", "rollback"}),
        "deployment",
        re.compile(r"^STATUS: deployed|has been upgraded|uninstalled", re.M),
    ),
    (
        "terraform",
        frozenset({"apply", "destroy"}),
        "deployment",
        re.compile(r"^(Apply|Destroy) complete!", re.M),
    ),
    ("aws", None, "upload", re.compile(r"^upload: \S+ to s3://", re.M)),
    ("gsutil", frozenset({"cp", "rsync"}), "upload", re.compile(r"Operation completed", re.M)),
)


def _remote_effect(simple: Simple, text: str, status: int | None) -> Effect | None:
    w = simple.words
    prog = simple.program
    sub = next((a for a in w[1:] if not a.startswith("-")), "")
    for name, subs, effect_class, done in _REMOTE:
        if prog != name or (subs is not None and sub not in subs):
            continue
        if name == "aws" and not any(a.startswith("s3://") for a in w[2:]):
            return None  # only copies to S3 are uploads here
        target = f"{prog} {sub}".strip()
        if status not in (None, 0):
            return Effect(
                effect_class,
                target,
                "failed",
                _last_lines(text) or f"exit code {status}",
                kind=target,
            )
        m = done.search(text)
        if m:
            return Effect(effect_class, target, "completed", m.group(0).strip()[:300], kind=target)
        return Effect(
            effect_class, target, "unknown", "the output does not show the result", kind=target
        )
    if prog in {"scp", "rsync"} and any(re.match(r"^[\w.@-]+:", a) for a in w[-1:]):
        target = f"{prog}:{w[-1]}"[:200]
        if status not in (None, 0):
            return Effect("upload", target, "failed", f"exit code {status}", kind=prog)
        return Effect(
            "upload", target, "unknown", "a copy's output does not show it arrived", kind=prog
        )
    if prog in {"curl", "wget", "http", "xh"}:
        methods = {
            "-X",
            "--request",
            "-d",
            "--data",
            "--data-raw",
            "--data-binary",
            "-F",
            "--form",
            "-T",
            "--upload-file",
            "--json",
        }
        sends = any(a in methods or a.startswith(("--data", "-d", "-F", "-X")) for a in w[1:])
        if prog in {"http", "xh"}:
            sends = bool(w[1:2]) and w[1].upper() in {"POST", "PUT", "PATCH", "DELETE"}
        if not sends:
            return None
        if any(a in {"-X", "--request"} for a in w[1:]):
            verb = (
                w[w.index("-X") + 1 if "-X" in w else w.index("--request") + 1]
                if len(w) > 2
                else ""
            )
            if verb.upper() in {"GET", "HEAD", "OPTIONS"}:
                return None
        address = next((a for a in w[1:] if re.match(r"https?://", a)), "url")
        host = re.sub(r"^https?://([^/:]+).*$", r"\1", address)
        effect_class = (
            "message"
            if re.search(r"(slack|discord|chat|teams|telegram|webhook)", host + address)
            else "upload"
        )
        target = f"http:{host}"
        if status not in (None, 0) or re.search(r"^curl: \(\d+\)", text, re.M):
            return Effect(
                effect_class,
                target,
                "failed",
                _last_lines(text) or f"exit code {status}",
                kind="http",
            )
        answer = re.search(r"HTTP/[\d.]+ (\d{3})", text)
        if answer and answer.group(1).startswith("2"):
            return Effect(effect_class, target, "completed", answer.group(0), kind="http")
        if answer:
            return Effect(effect_class, target, "failed", answer.group(0), kind="http")
        return Effect(
            effect_class, target, "unknown", "the response's status is not shown", kind="http"
        )
    return None


_DEPLOYERS = {
    "vercel",
    "netlify",
    "flyctl",
    "fly",
    "heroku",
    "wrangler",
    "firebase",
    "surge",
    "railway",
}
_MAILERS = {"mail", "mailx", "sendmail", "mutt", "msmtp", "swaks"}


def shell_effects(simple: Simple, output: str | None, exit_code: int | None) -> list[Effect]:
    """Effects of one simple command beyond git: deploys, installs, downloads, mail and
    chat messages, schedules, services and background servers."""
    effects = git_effects(simple, output, exit_code)
    if effects:
        return effects
    prog = simple.program
    w = simple.words
    text = output or ""
    status = None if simple.piped_out or simple.background else exit_code
    missing = _NOT_FOUND.search(text)
    if missing and prog in text[: missing.end() + 40]:
        failed_line = next(
            (ln for ln in text.splitlines() if _NOT_FOUND.search(ln)), missing.group(0)
        )
        if _effect_program(simple):
            return [
                Effect(
                    _effect_program(simple) or "external",
                    f"{prog}",
                    "failed",
                    failed_line.strip(),
                    kind=prog,
                )
            ]
        return []
    if prog in _DEPLOYERS and any(
        a in {"deploy", "publish", "up"} or a == "--prod" for a in w[1:]
    ) | (prog in {"vercel", "surge"}):
        url = _URL.search(text)
        if status not in (None, 0):
            return [
                Effect(
                    "deployment", f"deploy:{prog}", "failed", f"exit code {status}", kind="deploy"
                )
            ]
        if url:
            return [
                Effect(
                    "deployment",
                    f"deploy:{prog}",
                    "completed",
                    url.group(0),
                    url.group(0),
                    kind="deploy",
                )
            ]
        return [
            Effect(
                "deployment",
                f"deploy:{prog}",
                "unknown",
                "no deployment URL in the output",
                kind="deploy",
            )
        ]
    if prog in _MAILERS:
        rcpt = next((a for a in reversed(w[1:]) if "@" in a), "recipient")
        if status not in (None, 0):
            return [Effect("email", f"mail:{rcpt}", "failed", f"exit code {status}", kind="email")]
        # a local mailer's success only says the message was handed over, not delivered
        return [
            Effect(
                "email",
                f"mail:{rcpt}",
                "unknown",
                "handed to the local mailer; delivery not shown",
                kind="email",
            )
        ]
    if re.search(r"(chat|message|notify|slack|discord|telegram|sms)", prog) and len(w) > 1:
        rcpt = w[1]
        reply = (
            re.search(rf"^\s*{re.escape(rcpt)}\s*:\s*\S.*$", text, re.M | re.I) if rcpt else None
        )
        if status not in (None, 0):
            return [
                Effect(
                    "message",
                    f"message:{rcpt}",
                    "failed",
                    f"exit code {status}",
                    kind="message",
                )
            ]
        if reply:
            return [
                Effect(
                    "message",
                    f"message:{rcpt}",
                    "completed",
                    reply.group(0).strip()[:200],
                    kind="message",
                )
            ]
        return [
            Effect(
                "message",
                f"message:{rcpt}",
                "unknown",
                "no reply or receipt in the output",
                kind="message",
            )
        ]
    remote = _remote_effect(simple, text, status)
    if remote is not None:
        return [remote]
    remote = _remote_effect(simple, text, status)
    if remote is not None:
        return [remote]
    effects = []
    if prog in {
        "apt-get",
        "apt",
        "yum",
        "dnf",
        "apk",
        "brew",
        "pip",
        "pip3",
        "npm",
        "yarn",
        "pnpm",
        "cargo",
        "gem",
        "go",
    } and _installs(simple):
        pkgs = " ".join(a for a in w[2:] if not a.startswith("-")) or "packages"
        if status not in (None, 0) or re.search(
            r"^(E:|ERROR:|error:|npm ERR!|npm error)", text, re.M
        ):
            effects.append(
                Effect(
                    "install",
                    f"install:{pkgs}",
                    "failed",
                    _last_lines(text) or f"exit code {status}",
                    consequential=False,
                    kind="install",
                )
            )
        elif (
            re.search(
                r"^(Setting up |Successfully installed |added \d+ packages?|Installed |OK: "
                r"|\s+Installed )",
                text,
                re.M,
            )
            or "up to date" in text
        ):
            line = re.search(
                r"^(Setting up |Successfully installed |added \d+ packages?|Installed |OK: ).*$",
                text,
                re.M,
            )
            effects.append(
                Effect(
                    "install",
                    f"install:{pkgs}",
                    "completed",
                    line.group(0).strip() if line else "up to date",
                    consequential=False,
                    kind="install",
                )
            )
        else:
            effects.append(
                Effect(
                    "install",
                    f"install:{pkgs}",
                    "unknown",
                    "the output does not show the install's result",
                    consequential=False,
                    kind="install",
                )
            )
        for m in re.finditer(
            r"^invoke-rc\.d: policy-rc\.d denied execution of (\w+)\.\s*$", text, re.M
        ):
            effects.append(
                Effect(
                    "service",
                    f"service:{m.group(1)}:{pkgs}",
                    "denied",
                    m.group(0).strip(),
                    consequential=False,
                    kind="service",
                )
            )
    if prog in {"curl", "wget"} and (
        prog == "wget"
        or any(
            a in {"-O", "-o", "--output", "--remote-name"}
            or a.startswith("-o")
            or a == "-LO"
            or a == "-OL"
            for a in w[1:]
        )
    ):
        address = next((a for a in w[1:] if a.startswith(("http://", "https://"))), "url")
        method = "download"
        if any(
            a in {"-X", "--request", "-d", "--data", "-F", "--form", "-T", "--upload-file"}
            for a in w[1:]
        ):
            method = "upload"
        if status not in (None, 0) or re.search(r"^curl: \(\d+\)|ERROR \d{3}", text, re.M):
            effects.append(
                Effect(
                    "fetch" if method == "download" else "upload",
                    f"{method}:{address}",
                    "failed",
                    _last_lines(text) or f"exit code {status}",
                    consequential=method != "download",
                    kind=method,
                )
            )
        elif re.search(r"^\s*100\s+\d+\S*\s+100\s+\d+|saved \[|100%", text, re.M):
            done = re.search(r"^.*(100\s+\d+\S*\s+100\s+\d+|saved \[|100%).*$", text, re.M)
            effects.append(
                Effect(
                    "fetch" if method == "download" else "upload",
                    f"{method}:{address}",
                    "completed",
                    done.group(0).strip()[-120:] if done else "100%",
                    consequential=method != "download",
                    kind=method,
                )
            )
        else:
            effects.append(
                Effect(
                    "fetch" if method == "download" else "upload",
                    f"{method}:{address}",
                    "unknown",
                    "the output does not show the transfer's result",
                    consequential=method != "download",
                    kind=method,
                )
            )
    if prog == "crontab" and not _lists_crontab(w):
        effects.append(
            Effect(
                "schedule",
                "crontab",
                "failed" if status not in (None, 0) else "unknown",
                "crontab installed nothing it reports"
                if status in (None, 0)
                else f"exit code {status}",
                consequential=True,
                kind="schedule",
            )
        )
    if prog in {"systemctl", "service"} and any(a in {"start", "restart", "enable"} for a in w[1:]):
        target = " ".join(w[1:])
        effects.append(
            Effect(
                "service",
                f"service:{target}",
                "failed" if status not in (None, 0) else "unknown",
                f"exit code {status}" if status is not None else "no status shown",
                consequential=False,
                kind="service",
            )
        )
    if simple.background and _serves(simple):
        effects.append(
            Effect(
                "service",
                f"server:{simple.text[:80]}",
                "unknown",
                _last_lines(text) or "started in the background; its state is not shown",
                consequential=False,
                kind="server",
            )
        )
    return effects


def _effect_program(simple: Simple) -> str | None:
    prog = simple.program
    if prog in _MAILERS:
        return "email"
    if re.search(r"(chat|message|notify|slack|discord|telegram|sms)", prog):
        return "message"
    if prog in _DEPLOYERS:
        return "deployment"
    if prog == "crontab" and not _lists_crontab(simple.words):
        return "schedule"
    return None


def _lists_crontab(words: tuple[str, ...]) -> bool:
    """`crontab -l` only prints the table: no schedule changes."""
    return words[1:2] == ("-l",)


def _installs(simple: Simple) -> bool:
    args = [a for a in simple.words[1:] if not a.startswith("-")]
    return (
        bool(args) and args[0] in {"install", "add", "i", "get"} and len(args) > 1
        if simple.program not in {"npm", "yarn", "pnpm"}
        else bool(args) and args[0] in {"install", "add", "i"} and len(args) > 1
    )


def _serves(simple: Simple) -> bool:
    text = simple.text
    return bool(
        re.search(
            r"(http\.server|serve|server|runserver|uvicorn|gunicorn|flask run|"
            r"npm (run )?(start|dev)|node |vite|next (dev|start))",
            text,
        )
    )


def _last_lines(text: str, n: int = 2) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:])[:300]


# -- tools that are effects by name (MCP servers, agent tool sets) ---------------------

_TOOL_EFFECTS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"(create|fork)_?(repository|repo)$"), "publication", "repo create"),
    (re.compile(r"push(_files)?$|^push_"), "git_push", "push"),
    (
        re.compile(r"create_or_update_file$|(create|update|delete)_file_contents?$"),
        "git_push",
        "remote commit",
    ),
    (re.compile(r"(create|merge|update)_(pull_request|pr)$"), "pull_request", "pull request"),
    (
        re.compile(r"create_(issue|comment)$|add_(issue_)?comment$|(create|update)_issue"),
        "issue",
        "issue",
    ),
    (re.compile(r"(create|publish)_release$"), "publication", "release"),
    (re.compile(r"deploy|create_(app_)?preview|publish"), "deployment", "deploy"),
    (re.compile(r"send_(email|mail)"), "email", "email"),
    (
        re.compile(r"send_message|post_message|chat_post|slack|(send|reply)_?(dm|sms)"),
        "message",
        "message",
    ),
    (re.compile(r"(upload)"), "upload", "upload"),
    (re.compile(r"(^|[._])commit$"), "write", "commit"),
)


def tool_effect(
    tool: str, arguments: dict[str, object] | None, output: str | None, failed: bool | None
) -> Effect | None:
    """The effect of a non-shell tool named like one (`create_repository`,
    `mcp__github__push_files`, `create_app_preview`, `send_email`), its state from the
    tool's own result."""
    name = tool.rsplit("__", 1)[-1].lower()
    match = next(((c, k) for p, c, k in _TOOL_EFFECTS if p.search(name)), None)
    if match is None:
        return None
    effect_class, kind = match
    args = arguments or {}
    target_bits = [
        str(args[k])
        for k in (
            "owner",
            "organization",
            "repo",
            "name",
            "branch",
            "path",
            "task_id",
            "channel",
            "to",
        )
        if args.get(k)
    ]
    target = f"{name}:{'/'.join(target_bits)[:200]}" if target_bits else name
    text = output or ""
    if output is None:
        return Effect(effect_class, target, "unknown", "the call has no result", kind=kind)
    error = re.search(
        r'"status"\s*:\s*"(error|failed)"'
        r"|\b(\d{3}) [A-Z][\w ]*(failed|empty|Not Found|Unprocessable|Forbidden|Conflict)"
        r"|reported tool error|^(Error|error|failed)\b",
        text,
        re.M,
    )
    if kind == "commit":  # a local commit the tool made: its receipt is the commit id
        sha = re.search(r"\b[0-9a-f]{7,40}\b", text)
        if sha and not failed:
            return Effect("write", "git:commit", "completed", text[:300], sha.group(0), kind=kind)
        return Effect(
            "write", "git:commit", "failed" if failed else "unknown", text[:300], kind=kind
        )
    if failed or error:
        line = error.group(0) if error else _last_lines(text)
        detail = next(
            (
                ln.strip()
                for ln in text.splitlines()
                if re.search(r"(error|failed|\d{3} )", ln, re.I)
            ),
            line,
        )
        return Effect(effect_class, target, "failed", detail[:300], kind=kind)
    receipt = re.search(r'"(?:sha|id|html_url|url|preview_url|commit)"\s*:\s*"?([\w:/.\-]+)', text)
    running = re.search(r'"status"\s*:\s*"(running|success|ok|created|sent|delivered)"', text)
    if receipt or running:
        evidence = (
            (running.group(0) if running else "")
            + (" | " if running and receipt else "")
            + (receipt.group(0) if receipt else "")
        )
        return Effect(
            effect_class,
            target,
            "completed",
            evidence[:300],
            receipt.group(1) if receipt else None,
            kind=kind,
        )
    return Effect(
        effect_class, target, "unknown", "the result does not show the outcome", kind=kind
    )


# -- one command line, all of it -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CommandReading:
    """Everything one command line shows: its checks (with verdicts) and its effects."""

    checks: tuple[tuple[Check, Verdict], ...] = ()
    effects: tuple[Effect, ...] = field(default_factory=tuple)


def read_command(
    line: str, output: str | None, exit_code: int | None, *, timed_out: bool = False
) -> CommandReading:
    """Classify the command line `line` and read its output.

    Output is shared by every simple command of the line; a runner's summary in it is
    credited to the line's check. With several checks in one line each gets the same
    reading only when the line's exit status is its own (no pipe after it)."""
    simples = split_command(line)
    checks: list[tuple[Check, Verdict]] = []
    effects: list[Effect] = []
    for index, simple in enumerate(simples):
        # a line's exit status is its last command's: earlier ones only have their output
        status = exit_code if index == len(simples) - 1 else None
        check = check_of(simple)
        if check is not None:
            checks.append((check, check_verdict(simple, output, status, timed_out=timed_out)))
        effects.extend(shell_effects(simple, output, status))
    return CommandReading(tuple(checks), tuple(effects))
