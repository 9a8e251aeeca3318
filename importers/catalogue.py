"""The tools agents run, as data: how each is invoked, what its output says, what it does.

One `Tool` row per tool (or per subcommand that does something different: `cargo test`
and `cargo build` are two rows). A row says

- how it is recognised: the program names, the subcommand that must follow (`sub`; with
  `any_goal` any goal on the line, as Maven and Gradle take several), a flag one of
  which must be given (`needs`: `black --check`), first arguments that make it something
  else (`skip`);
- what kind of check it runs, if any: test, build, lint, typecheck, format-check;
- the summary lines its documentation shows for success and failure (`lines`): a line
  that passes, fails, says nothing ran, or carries counts that decide (`count`), and
  whether the tool prints nothing on success (`silent`: its exit status 0 is then the
  evidence) or runs other tools whose lines count too (`delegates`: make, npm scripts,
  tox);
- the effect it has, if any (`effect`): its class, local or remote, which system, and
  the lines that show it completed or failed.

Lines are taken from each tool's documentation (`source`), never from recorded runs. The
readers (`outcomes.importers.checks`, `outcomes.importers.effects`) hold no per-tool
branch for a row's lines or kind; what they keep as code is how tools are invoked
(package scripts, recipes, wrappers) and where an effect's target comes from (git, the
forges, HTTP clients). `docs/tools.md` is generated from this table
(`catalogue_markdown`).

Pure data and lookups: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

CheckKind = Literal["test", "build", "lint", "typecheck", "format-check"]
LineResult = Literal["pass", "fail", "none", "count"]


@dataclass(frozen=True, slots=True)
class Line:
    """A summary line: `pass`, `fail`, `none` (nothing ran), or `count` (the counts it
    shows decide: any failure or error fails). `final`: printed once at the end of a
    run; `per_unit`: printed once per package, binary or project, so counts add up."""

    pattern: re.Pattern[str]
    result: LineResult
    final: bool = True
    per_unit: bool = False
    # a literal every match contains (its fixed prefix), so a text without it is skipped
    # by one substring search instead of a scan per pattern
    hint: str = ""


@dataclass(frozen=True, slots=True)
class EffectSpec:
    """What running the tool does beyond the workspace's files."""

    effect_class: str  # the class the claim checker reads: publication, deployment, install…
    kind: str  # a short name: publish, deploy, install, scaffold, server, pr create…
    remote: bool  # on another system (a registry, a cluster, a forge) or local
    system: str  # which system, in words
    done: re.Pattern[str] | None = None  # the line that shows it happened
    failed: re.Pattern[str] | None = None  # the line that shows it did not
    consequential: bool = True
    # a package, recipient or manifest argument the tool needs to do anything
    # (`pip install` alone installs nothing); False when the bare command acts
    needs_argument: bool = False


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    ecosystem: str
    programs: tuple[str, ...]
    sub: tuple[str, ...] = ()
    any_goal: bool = False
    needs: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    kind: CheckKind | None = None
    lines: tuple[Line, ...] = ()
    silent: bool = False
    delegates: bool = False
    reads: tuple[str, ...] = ()  # other rows whose lines this tool prints (django → unittest)
    effect: EffectSpec | None = None
    source: str = ""
    note: str = field(default="", compare=False)

    def matches(self, program: str, args: list[str]) -> bool:
        """Does `program args…` run this tool?"""
        if program not in self.programs:
            return False
        plain = [a for a in args if not a.startswith("-")]
        first = plain[0] if plain else ""
        if self.skip and first in self.skip:
            return False
        if self.sub:
            if self.any_goal:
                goals = {g.rsplit(":", 1)[-1] for g in plain}
                if not goals & set(self.sub):
                    return False
            elif first not in self.sub:
                return False
        return not self.needs or any(a.split("=")[0] in self.needs for a in args)


_META = frozenset(".^$*+?{}[]()|\\")
_ESCAPED_LITERAL = frozenset(".^$*+?{}[]()|\\-/:!#=<>\"' ")


def literal_prefix(pattern: str) -> str:
    """The fixed text every match of `pattern` starts with, after `^` and optional
    leading blanks or rules (`^\\s*`, `^=*`): "" when it starts with anything else."""
    i = 0
    for lead in ("^", "\\s*", "=*", "\\s*", "=*"):
        if pattern.startswith(lead, i):
            i += len(lead)
    out: list[str] = []
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern) and pattern[i + 1] in _ESCAPED_LITERAL:
            out.append(pattern[i + 1])
            i += 2
        elif c in _META:
            if c in "*?{" and out:
                out.pop()  # the character before an optional quantifier may be absent
            break
        else:
            out.append(c)
            i += 1
    return "".join(out)


def required_literal(pattern: str) -> str:
    """The longest fixed text every match of `pattern` contains, read outside groups and
    classes ("" when the pattern has a top-level `|`, or no such text of 3 characters)."""
    runs: list[str] = []
    run: list[str] = []
    depth = 0
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            literal = pattern[i + 1] in _ESCAPED_LITERAL and depth == 0
            piece, i = (pattern[i + 1] if literal else None), i + 2
        elif c == "[":
            close = pattern.find("]", i + 2)
            piece, i = None, (close + 1 if close > 0 else len(pattern))
        elif c in "()":
            depth += 1 if c == "(" else -1
            piece, i = None, i + 1
        elif c == "|" and depth == 0:
            return ""
        else:
            piece, i = (c if depth == 0 and c not in _META else None), i + 1
        if i < len(pattern) and pattern[i] in "*?{" and piece is not None:
            piece = None  # optional: not required
        if piece is None:
            runs.append("".join(run))
            run = []
        else:
            run.append(piece)
    runs.append("".join(run))
    best = max(runs, key=len)
    return best if len(best) >= 3 else ""


def _line(pattern: str, result: LineResult, final: bool = True, per_unit: bool = False) -> Line:
    hint = literal_prefix(pattern) or required_literal(pattern)
    return Line(re.compile(pattern, re.M), result, final, per_unit, hint)


def _p(pattern: str, final: bool = True, per_unit: bool = False) -> Line:
    return _line(pattern, "pass", final, per_unit)


def _f(pattern: str, final: bool = True, per_unit: bool = False) -> Line:
    return _line(pattern, "fail", final, per_unit)


def _c(pattern: str, final: bool = True, per_unit: bool = False) -> Line:
    return _line(pattern, "count", final, per_unit)


def _n(pattern: str) -> Line:
    return _line(pattern, "none")


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.M)


_URL = r"https?://\S+"
_NPM_ERROR = _f(r"^(?:npm ERR!|npm error) .*$", final=False)
_UNITTEST = (
    _p(r"^Ran (?P<total>\d+) tests? in [\d.]+s[ \t]*\n(?:[ \t]*\n)*OK\b.*$"),
    _f(r"^Ran (?P<total>\d+) tests? in [\d.]+s[ \t]*\n(?:[ \t]*\n)*FAILED\b.*$"),
    _n(r"^Ran 0 tests in [\d.]+s[ \t]*\n(?:[ \t]*\n)*NO TESTS RAN\b.*$"),
)
_CARGO_COMPILE = (
    _p(r"^\s*Finished `?\w+`? (?:profile|\[).*$"),
    _f(r"^error(?:\[E\d+\])?: .*$", final=False),
)
_GO_DIAGNOSTIC = _f(r"^\S+\.go:\d+:\d+: .*$", final=False)


def _install(system: str, done: str, failed: str, *, needs_argument: bool = False) -> EffectSpec:
    return EffectSpec(
        "install", "install", False, system, _rx(done), _rx(failed), False, needs_argument
    )


def _publish(system: str, done: str, failed: str = r"^(?:error|ERROR|Error)\b.*$") -> EffectSpec:
    return EffectSpec("publication", "publish", True, system, _rx(done), _rx(failed))


def _deploy(system: str, done: str, failed: str = r"^\s*(?:Error|ERROR|error)\b.*$") -> EffectSpec:
    return EffectSpec("deployment", "deploy", True, system, _rx(done), _rx(failed))


def _server(done: str, failed: str = r"EADDRINUSE|[Aa]ddress already in use") -> EffectSpec:
    return EffectSpec(
        "service", "server", False, "a local development server", _rx(done), _rx(failed), False
    )


_PIP_DONE = r"^(?:Successfully installed .*|Requirement already satisfied: .*)$"
_NPM_DONE = r"^(?:added \d+ packages?.*|up to date.*|changed \d+ packages?.*)$"
_NPM_FAIL = r"^(?:npm ERR!|npm error) .*$"
_SCAFFOLD_DONE = (
    r"^(?:Success! Created .*|Scaffolding project in .*|Done\. Now run:.*|"
    r"added \d+ packages?.*|\s*Creat(?:ed|ing) (?:binary|library) .*package.*|"
    r"Happy hacking!.*|.*\bcreated successfully\b.*)$"
)

TOOLS: tuple[Tool, ...] = (
    # -- Python ------------------------------------------------------------------------
    Tool(
        "pytest",
        "python",
        ("pytest", "py.test"),
        kind="test",
        lines=(
            _c(
                r"^=*\s*(?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|"
                r"deselected|rerun)(?:, )?)+\s+in\s+[\d.]+s(?:\s*\([^)]*\))?\s*=*\s*$"
            ),
            _n(r"^=*\s*no tests ran\s+in\s+[\d.]+s.*$"),
            _f(r"^!+\s*Interrupted:.*!+\s*$"),
        ),
        source="https://docs.pytest.org/en/stable/how-to/output.html",
    ),
    Tool(
        "unittest",
        "python",
        ("unittest",),
        kind="test",
        lines=_UNITTEST,
        source="https://docs.python.org/3/library/unittest.html#command-line-interface",
    ),
    Tool(
        "django test",
        "python",
        ("manage.py",),
        sub=("test",),
        kind="test",
        reads=("unittest",),
        source="https://docs.djangoproject.com/en/stable/topics/testing/overview/",
    ),
    Tool(
        "runtests",
        "python",
        ("runtests.py", "runtests"),
        kind="test",
        reads=("unittest", "pytest"),
        source="https://docs.djangoproject.com/en/dev/internals/contributing/writing-code/unit-tests/",
    ),
    Tool(
        "setup.py test",
        "python",
        ("setup.py",),
        sub=("test",),
        kind="test",
        reads=("unittest", "pytest"),
        source="https://setuptools.pypa.io/en/latest/deprecated/commands.html",
    ),
    Tool(
        "tox",
        "python",
        ("tox",),
        kind="test",
        delegates=True,
        lines=(
            _p(r"^\s*congratulations :\).*$"),
            _f(r"^\s*evaluation failed :\(.*$"),
            _f(r"^\s*\S+: FAIL code \d+.*$", final=False),
            _f(r"^ERROR:\s+\S+: (?:commands failed|InvocationError).*$", final=False),
        ),
        source="https://tox.wiki/en/latest/user_guide.html",
    ),
    Tool(
        "nox",
        "python",
        ("nox",),
        kind="test",
        delegates=True,
        lines=(
            _p(r"^nox > Session \S+ was successful.*$"),
            _f(r"^nox > Session \S+ failed.*$"),
        ),
        source="https://nox.thea.codes/en/stable/usage.html",
    ),
    Tool(
        "ruff format --check",
        "python",
        ("ruff",),
        sub=("format",),
        needs=("--check", "--diff"),
        kind="format-check",
        lines=(
            _p(r"^\d+ files? already formatted\s*$"),
            _f(r"^\d+ files? would be reformatted.*$"),
            _f(r"^Would reformat: .*$", final=False),
        ),
        source="https://docs.astral.sh/ruff/formatter/",
    ),
    Tool(
        "ruff check",
        "python",
        ("ruff",),
        skip=("format", "server", "rule", "config", "linter", "version", "clean", "analyze"),
        kind="lint",
        lines=(_p(r"^All checks passed!\s*$"), _c(r"^Found (?P<problems>\d+) errors?\b.*$")),
        source="https://docs.astral.sh/ruff/linter/",
    ),
    Tool(
        "flake8",
        "python",
        ("flake8",),
        kind="lint",
        silent=True,
        lines=(_f(r"^\S+:\d+:\d+: [A-Z]+\d+ .*$", final=False),),
        source="https://flake8.pycqa.org/en/latest/user/invocation.html",
    ),
    Tool(
        "pylint",
        "python",
        ("pylint",),
        kind="lint",
        lines=(
            _p(r"^Your code has been rated at 10\.00/10.*$"),
            _f(r"^Your code has been rated at (?!10\.00/)-?[\d.]+/10.*$"),
            _f(r"^\*{13} Module \S+\s*$", final=False),
        ),
        source="https://pylint.readthedocs.io/en/stable/user_guide/usage/output.html",
    ),
    Tool(
        "mypy",
        "python",
        ("mypy", "dmypy"),
        kind="typecheck",
        lines=(
            _p(r"^Success: no issues found in \d+ source files?\s*$"),
            _c(r"^Found (?P<problems>\d+) errors? in \d+ files?.*$"),
        ),
        source="https://mypy.readthedocs.io/en/stable/running_mypy.html",
    ),
    Tool(
        "pyright",
        "python",
        ("pyright", "basedpyright"),
        kind="typecheck",
        lines=(_c(r"^(?P<problems>\d+) errors?, \d+ warnings?, \d+ informations?\s*$"),),
        source="https://microsoft.github.io/pyright/#/command-line",
    ),
    Tool(
        "black --check",
        "python",
        ("black",),
        needs=("--check",),
        kind="format-check",
        lines=(
            _p(r"^All done! .*$"),
            _f(r"^Oh no! .*$"),
            _f(r"^would reformat .*$", final=False),
        ),
        source="https://black.readthedocs.io/en/stable/usage_and_configuration/the_basics.html",
    ),
    Tool(
        "isort --check",
        "python",
        ("isort",),
        needs=("--check", "--check-only", "-c"),
        kind="format-check",
        silent=True,
        lines=(_f(r"^ERROR: .* Imports are incorrectly sorted.*$", final=False),),
        source="https://pycqa.github.io/isort/docs/configuration/options.html#check",
    ),
    Tool(
        "pip install",
        "python",
        ("pip", "pip3"),
        sub=("install",),
        effect=_install("PyPI", _PIP_DONE, r"^ERROR: .*$", needs_argument=True),
        source="https://pip.pypa.io/en/stable/cli/pip_install/",
    ),
    Tool(
        "uv add/sync/pip install",
        "python",
        ("uv",),
        sub=("add", "sync", "pip"),
        effect=_install(
            "PyPI",
            r"^(?:Installed \d+ packages? in .*|Resolved \d+ packages? in .*|"
            r"Audited \d+ packages?.*)$",
            r"^(?:error|  \u00d7 ).*$",
        ),
        source="https://docs.astral.sh/uv/reference/cli/",
    ),
    Tool(
        "poetry add/install",
        "python",
        ("poetry", "pdm"),
        sub=("add", "install", "sync"),
        effect=_install(
            "PyPI",
            r"^(?:Writing lock file|  - Installing \S+ .*|No dependencies to install or update|"
            r"🎉 All complete!.*|Installing the current project: .*)$",
            r"^(?:\s*(?:SolverProblemError|Because .* version solving failed\.)|\[\w+Error\]).*$",
        ),
        source="https://python-poetry.org/docs/cli/#add",
    ),
    Tool(
        "conda install",
        "python",
        ("conda", "mamba", "micromamba"),
        sub=("install", "create"),
        effect=_install(
            "conda channels",
            r"^(?:Executing transaction: \.*done|# All requested packages already installed\.)$",
            r"^(?:PackagesNotFoundError: .*|CondaError: .*|LibMambaUnsatisfiableError: .*)$",
        ),
        source="https://docs.conda.io/projects/conda/en/stable/commands/install.html",
    ),
    Tool(
        "twine upload",
        "python",
        ("twine",),
        sub=("upload",),
        effect=_publish("PyPI", r"^View at:\s*\n?\s*https?://\S+", r"^(?:ERROR|HTTPError) .*$"),
        source="https://twine.readthedocs.io/en/stable/#twine-upload",
    ),
    Tool(
        "uv/poetry publish",
        "python",
        ("uv", "poetry", "pdm", "hatch", "flit"),
        sub=("publish",),
        effect=_publish("PyPI", r"^(?:Uploading \S+ \(.*|\s*- Uploading \S+ 100%.*)$"),
        source="https://docs.astral.sh/uv/guides/package/#publishing-your-package",
    ),
    Tool(
        "django runserver",
        "python",
        ("manage.py",),
        sub=("runserver",),
        effect=_server(
            r"^Starting development server at https?://\S+.*$",
            r"^Error: That port is already in use\.?$",
        ),
        source="https://docs.djangoproject.com/en/stable/ref/django-admin/#runserver",
    ),
    Tool(
        "flask run",
        "python",
        ("flask",),
        sub=("run",),
        effect=_server(r"^\s*\* Running on https?://\S+.*$"),
        source="https://flask.palletsprojects.com/en/stable/cli/#run-the-development-server",
    ),
    Tool(
        "uvicorn",
        "python",
        ("uvicorn", "gunicorn", "fastapi", "http.server"),
        effect=_server(
            r"^(?:INFO:\s+Uvicorn running on .*|\[.*\] \[INFO\] Listening at: .*|"
            r"Serving HTTP on .*|\s*Serving at:? .*)$"
        ),
        source="https://www.uvicorn.org/#command-line-options",
    ),
    # -- JavaScript / TypeScript -------------------------------------------------------
    Tool(
        "jest",
        "javascript",
        ("jest",),
        kind="test",
        lines=(_c(r"^Tests:\s+(?:.*\d+ total)\s*$"),),
        source="https://jestjs.io/docs/cli",
    ),
    Tool(
        "vitest",
        "javascript",
        ("vitest",),
        skip=("dev", "watch", "bench", "list", "init"),
        kind="test",
        lines=(
            _c(
                r"^\s*Tests\s+(?:\d+ (?:failed|passed|skipped|todo)(?: \| )?)+\s*"
                r"\((?P<total>\d+)\)\s*$"
            ),
        ),
        source="https://vitest.dev/guide/reporters",
    ),
    Tool(
        "mocha",
        "javascript",
        ("mocha", "_mocha"),
        kind="test",
        lines=(
            _c(r"^\s*(?P<passed>\d+) passing \(\d+m?s\)\s*$", final=False, per_unit=True),
            _c(r"^\s*(?P<failed>\d+) failing\s*$", per_unit=True),
        ),
        source="https://mochajs.org/#spec",
    ),
    Tool(
        "playwright test",
        "javascript",
        ("playwright",),
        sub=("test",),
        kind="test",
        lines=(
            _c(r"^\s+(?P<failed>\d+) failed\s*$", final=False, per_unit=True),
            _c(r"^\s+(?P<passed>\d+) passed \([\d.]+m?s\)\s*$", per_unit=True),
        ),
        source="https://playwright.dev/docs/test-reporters#list-reporter",
    ),
    Tool(
        "cypress run",
        "javascript",
        ("cypress",),
        sub=("run",),
        kind="test",
        lines=(_p(r"^\s*✔\s+All specs passed!.*$"), _f(r"^\s*✖\s+\d+ of \d+ failed.*$")),
        source="https://docs.cypress.io/app/references/command-line#cypress-run",
    ),
    Tool(
        "eslint",
        "javascript",
        ("eslint",),
        kind="lint",
        silent=True,
        lines=(_c(r"^✖ \d+ problems? \((?P<problems>\d+) errors?, \d+ warnings?\)\s*$"),),
        source="https://eslint.org/docs/latest/use/command-line-interface",
    ),
    Tool(
        "next lint",
        "javascript",
        ("next",),
        sub=("lint",),
        kind="lint",
        lines=(
            _p(r"^✔ No ESLint warnings or errors\s*$"),
            _f(r"^\d+:\d+\s+Error: .*$", final=False),
        ),
        source="https://nextjs.org/docs/app/api-reference/cli/next#next-lint-options",
    ),
    Tool(
        "prettier --check",
        "javascript",
        ("prettier",),
        needs=("--check", "-c"),
        kind="format-check",
        lines=(
            _p(r"^All matched files use Prettier code style!\s*$"),
            _f(r"^\[warn\] Code style issues (?:found in .*|were found .*)$"),
        ),
        source="https://prettier.io/docs/cli#--check",
    ),
    Tool(
        "tsc",
        "javascript",
        ("tsc", "vue-tsc"),
        kind="typecheck",
        silent=True,
        lines=(
            _c(r"^Found (?P<problems>\d+) errors?\b.*$"),
            _f(r"^.*error TS\d+:.*$", final=False),
        ),
        source="https://www.typescriptlang.org/docs/handbook/compiler-options.html",
    ),
    Tool(
        "webpack",
        "javascript",
        ("webpack", "webpack-cli"),
        skip=("serve", "watch"),
        kind="build",
        lines=(
            _p(r"^webpack \S+ compiled successfully in [\d.]+ m?s\s*$"),
            _p(r"^webpack \S+ compiled with \d+ warnings? in [\d.]+ m?s\s*$"),
            _f(r"^webpack \S+ compiled with \d+ errors?.*$"),
        ),
        source="https://webpack.js.org/api/cli/",
    ),
    Tool(
        "vite build",
        "javascript",
        ("vite",),
        sub=("build",),
        kind="build",
        lines=(_p(r"^✓ built in [\d.]+m?s\s*$"), _f(r"^error during build:.*$")),
        source="https://vite.dev/guide/cli#vite-build",
    ),
    Tool(
        "next build",
        "javascript",
        ("next",),
        sub=("build",),
        kind="build",
        lines=(
            _p(r"^\s*(?:✓|info\s+-) Compiled successfully.*$", final=False),
            _p(r"^\s*✓ Generating static pages.*$"),
            _f(r"^Failed to compile\.?\s*$"),
            _f(r"^> Build error occurred\s*$"),
            _f(r"^Type error: .*$", final=False),
        ),
        source="https://nextjs.org/docs/app/api-reference/cli/next#next-build-options",
    ),
    Tool(
        "rollup",
        "javascript",
        ("rollup",),
        kind="build",
        lines=(_p(r"^created \S+ in [\d.]+m?s\s*$", per_unit=True), _f(r"^\[!\] .*$")),
        source="https://rollupjs.org/command-line-interface/",
    ),
    Tool(
        "esbuild",
        "javascript",
        ("esbuild",),
        kind="build",
        lines=(_p(r"^\s*⚡ Done in \d+ms\s*$"), _f(r"^✘ \[ERROR\] .*$", final=False)),
        source="https://esbuild.github.io/getting-started/#your-first-bundle",
    ),
    Tool(
        "turbo",
        "javascript",
        ("turbo",),
        sub=("run", "build", "test", "lint", "typecheck", "check"),
        kind="build",
        delegates=True,
        lines=(
            # every task successful: the two numbers agree
            _p(r"^\s*Tasks:\s+(\d+) successful, \1 total\s*$"),
            _f(r"^\s*Tasks:\s+(\d+) successful, (?!\1 total)\d+ total\s*$"),
            _f(r"^\s*Failed:\s+\S+.*$"),
            _f(r"^\s*ERROR\s+(?:run failed: |\S+#\S+: ).*$"),
        ),
        source="https://turborepo.com/docs/reference/run",
    ),
    Tool(
        "npm scripts",
        "javascript",
        ("npm",),
        kind="test",
        delegates=True,
        lines=(_NPM_ERROR,),
        source="https://docs.npmjs.com/cli/commands/npm-run-script",
        note="`npm test`, `npm run <script>`; the script is read from package.json when "
        "the trace shows it",
    ),
    Tool(
        "yarn scripts",
        "javascript",
        ("yarn",),
        kind="test",
        delegates=True,
        lines=(_f(r"^error Command failed with exit code \d+\.?\s*$"),),
        source="https://yarnpkg.com/cli/run",
        note="`yarn <script>`, `yarn run <script>`",
    ),
    Tool(
        "pnpm scripts",
        "javascript",
        ("pnpm",),
        kind="test",
        delegates=True,
        lines=(_f(r"^\s*(?:ERR_PNPM_\w+|ELIFECYCLE)\b.*$"),),
        source="https://pnpm.io/cli/run",
        note="`pnpm <script>`, `pnpm run <script>`",
    ),
    Tool(
        "bun scripts",
        "javascript",
        ("bun",),
        kind="test",
        skip=("test",),
        delegates=True,
        lines=(_f(r'^error: script "\S+" exited with code \d+.*$'),),
        source="https://bun.sh/docs/cli/run",
        note="`bun run <script>`; `bun test` is bun's own runner",
    ),
    Tool(
        "bun test",
        "javascript",
        ("bun",),
        sub=("test",),
        kind="test",
        lines=(
            _c(r"^\s*(?P<passed>\d+) pass\s*$", final=False, per_unit=True),
            _c(r"^\s*(?P<failed>\d+) fail\s*$", per_unit=True),
        ),
        source="https://bun.sh/docs/cli/test",
    ),
    Tool(
        "npm install",
        "javascript",
        ("npm",),
        sub=("install", "i", "ci", "add", "isntall"),
        effect=_install("the npm registry", _NPM_DONE, _NPM_FAIL),
        source="https://docs.npmjs.com/cli/commands/npm-install",
    ),
    Tool(
        "yarn add/install",
        "javascript",
        ("yarn",),
        sub=("add", "install"),
        effect=_install(
            "the npm registry",
            r"^(?:success Saved \d+ new dependenc.*|Done in [\d.]+s\.?|➤ YN0000: · Done.*)$",
            r"^(?:error |➤ YN0001).*$",
        ),
        source="https://classic.yarnpkg.com/en/docs/cli/add",
    ),
    Tool(
        "pnpm add/install",
        "javascript",
        ("pnpm",),
        sub=("add", "install", "i"),
        effect=_install(
            "the npm registry",
            r"^(?:Done in [\d.]+m?s.*|Packages: \+\d+.*|Already up to date)$",
            r"^\s*ERR_PNPM_\w+.*$",
        ),
        source="https://pnpm.io/cli/add",
    ),
    Tool(
        "bun add/install",
        "javascript",
        ("bun",),
        sub=("add", "install", "i"),
        effect=_install(
            "the npm registry",
            r"^\s*(?:\d+ packages? installed.*|installed \S+@\S+.*|Checked \d+ installs.*)$",
            r"^error: .*$",
        ),
        source="https://bun.sh/docs/cli/add",
    ),
    Tool(
        "npm publish",
        "javascript",
        ("npm", "yarn", "pnpm"),
        sub=("publish",),
        effect=_publish("the npm registry", r"^\+ \S+@\S+\s*$|Published", _NPM_FAIL),
        source="https://docs.npmjs.com/cli/commands/npm-publish",
    ),
    Tool(
        "create-* scaffolders",
        "javascript",
        (
            "create-react-app",
            "create-next-app",
            "create-vite",
            "create-t3-app",
            "create-vue",
            "create-svelte",
            "create-remix",
            "create-astro",
            "create-expo-app",
        ),
        effect=EffectSpec(
            "install",
            "scaffold",
            False,
            "a new project with its packages",
            _rx(_SCAFFOLD_DONE),
            _rx(r"^(?:npm ERR!|npm error|error |Aborting installation\.).*$"),
            False,
        ),
        source="https://create-react-app.dev/docs/getting-started",
    ),
    Tool(
        "npm/yarn/pnpm/bun create",
        "javascript",
        ("npm", "yarn", "pnpm", "bun"),
        sub=("create", "init"),
        needs=(),
        effect=EffectSpec(
            "install",
            "scaffold",
            False,
            "a new project from a template",
            _rx(_SCAFFOLD_DONE),
            _rx(r"^(?:npm ERR!|npm error|error ).*$"),
            False,
            True,
        ),
        source="https://docs.npmjs.com/cli/commands/npm-init",
    ),
    Tool(
        "vite dev server",
        "javascript",
        ("vite",),
        skip=("build", "preview", "optimize"),
        effect=_server(r"^\s*➜\s+Local:\s+https?://\S+.*$|^\s*VITE v\S+\s+ready in .*$"),
        source="https://vite.dev/guide/cli#dev-server",
    ),
    Tool(
        "next dev",
        "javascript",
        ("next",),
        sub=("dev", "start"),
        effect=_server(
            r"^\s*(?:✓ Ready in .*|- Local:\s+https?://\S+.*|ready - started server on .*)$"
        ),
        source="https://nextjs.org/docs/app/api-reference/cli/next#next-dev-options",
    ),
    # -- Go ----------------------------------------------------------------------------
    Tool(
        "go test",
        "go",
        ("go",),
        sub=("test",),
        kind="test",
        lines=(
            _p(r"^ok\s+\S+\s+(?:[\d.]+s|\(cached\)).*$", final=False, per_unit=True),
            _f(r"^(?:FAIL|--- FAIL:).*$", final=False),
        ),
        source="https://pkg.go.dev/cmd/go#hdr-Test_packages",
    ),
    Tool(
        "go build",
        "go",
        ("go",),
        sub=("build",),
        kind="build",
        silent=True,
        lines=(_GO_DIAGNOSTIC,),
        source="https://pkg.go.dev/cmd/go#hdr-Compile_packages_and_dependencies",
    ),
    Tool(
        "go vet",
        "go",
        ("go",),
        sub=("vet",),
        kind="lint",
        silent=True,
        lines=(_GO_DIAGNOSTIC, _f(r"^vet: .*$", final=False)),
        source="https://pkg.go.dev/cmd/vet",
    ),
    Tool(
        "golangci-lint",
        "go",
        ("golangci-lint",),
        sub=("run",),
        kind="lint",
        silent=True,
        lines=(
            _c(r"^(?P<problems>\d+) issues?[.:]?\s*$"),
            _f(r"^\S+\.go:\d+:\d+: .* \([\w-]+\)\s*$", final=False),
        ),
        source="https://golangci-lint.run/docs/",
    ),
    Tool(
        "staticcheck",
        "go",
        ("staticcheck",),
        kind="lint",
        silent=True,
        lines=(_f(r"^\S+\.go:\d+:\d+: .* \((?:SA|S|ST|QF|U)\d+\)\s*$", final=False),),
        source="https://staticcheck.dev/docs/running-staticcheck/cli/",
    ),
    Tool(
        "go get/install",
        "go",
        ("go",),
        sub=("get", "install"),
        effect=_install(
            "the Go module proxy",
            r"^go: (?:added|upgraded|downgraded) \S+ .*$|^go: downloading \S+ .*$",
            r"^go: .*(?:[Nn]ot [Ff]ound|no matching versions|cannot find|invalid version).*$",
            needs_argument=True,
        ),
        source="https://go.dev/ref/mod#go-get",
    ),
    # -- Rust --------------------------------------------------------------------------
    Tool(
        "cargo nextest",
        "rust",
        ("cargo", "cargo-nextest"),
        sub=("nextest",),
        kind="test",
        lines=(
            _c(
                r"^\s*Summary \[.*\] (?P<total>\d+) tests? run: (?P<passed>\d+) passed"
                r"(?:.*?(?P<failed>\d+) failed)?.*$"
            ),
            _f(r"^error: test run failed.*$"),
        ),
        source="https://nexte.st/docs/running/",
    ),
    Tool(
        "cargo test",
        "rust",
        ("cargo",),
        sub=("test", "llvm-cov", "tarpaulin", "bench"),
        kind="test",
        lines=(
            _c(
                r"^test result: (?:ok|FAILED)\. (?P<passed>\d+) passed; (?P<failed>\d+) failed.*$",
                final=False,
                per_unit=True,
            ),
            _f(r"^error(?:\[E\d+\])?: (?:could not compile|test failed).*$"),
        ),
        source="https://doc.rust-lang.org/cargo/commands/cargo-test.html",
    ),
    Tool(
        "cargo build",
        "rust",
        ("cargo",),
        sub=("build", "b"),
        kind="build",
        lines=_CARGO_COMPILE,
        source="https://doc.rust-lang.org/cargo/commands/cargo-build.html",
    ),
    Tool(
        "cargo check",
        "rust",
        ("cargo",),
        sub=("check", "c"),
        kind="build",
        lines=_CARGO_COMPILE,
        source="https://doc.rust-lang.org/cargo/commands/cargo-check.html",
    ),
    Tool(
        "cargo clippy",
        "rust",
        ("cargo",),
        sub=("clippy",),
        kind="lint",
        lines=_CARGO_COMPILE,
        source="https://doc.rust-lang.org/clippy/usage.html",
    ),
    Tool(
        "cargo fmt --check",
        "rust",
        ("cargo",),
        sub=("fmt",),
        needs=("--check",),
        kind="format-check",
        silent=True,
        lines=(_f(r"^Diff in .*$", final=False),),
        source="https://github.com/rust-lang/rustfmt#checking-style-on-a-ci-server",
    ),
    Tool(
        "cargo add/install",
        "rust",
        ("cargo",),
        sub=("add", "install"),
        effect=_install(
            "crates.io",
            r"^\s*(?:Adding \S+ v\S+ to .*|Installed package `.*|Replaced package `.*|"
            r"Ignored package `.*)$",
            r"^error: .*$",
            needs_argument=True,
        ),
        source="https://doc.rust-lang.org/cargo/commands/cargo-add.html",
    ),
    Tool(
        "cargo new/init",
        "rust",
        ("cargo",),
        sub=("new", "init"),
        effect=EffectSpec(
            "install",
            "scaffold",
            False,
            "a new Cargo package",
            _rx(r"^\s*Creat(?:ed|ing) (?:binary|library) .*package.*$"),
            _rx(r"^error: .*$"),
            False,
        ),
        source="https://doc.rust-lang.org/cargo/commands/cargo-new.html",
    ),
    Tool(
        "cargo publish",
        "rust",
        ("cargo",),
        sub=("publish",),
        effect=_publish("crates.io", r"^\s*(?:Published|Uploaded) .*$", r"^error: .*$"),
        source="https://doc.rust-lang.org/cargo/commands/cargo-publish.html",
    ),
    # -- Java / Kotlin -----------------------------------------------------------------
    Tool(
        "mvn test",
        "java",
        ("mvn", "mvnw", "mvnd"),
        sub=("test", "verify", "install", "package", "integration-test", "check", "deploy"),
        any_goal=True,
        kind="test",
        lines=(
            _c(
                r"Tests run: (?P<total>\d+), Failures: (?P<failed>\d+), "
                r"Errors: (?P<errors>\d+), Skipped: \d+\s*$",
                final=False,
            ),
            _p(r"^\[INFO\] BUILD SUCCESS\s*$"),
            _f(r"^\[INFO\] BUILD FAILURE\s*$"),
        ),
        source="https://maven.apache.org/surefire/maven-surefire-plugin/",
    ),
    Tool(
        "mvn compile",
        "java",
        ("mvn", "mvnw", "mvnd"),
        sub=("compile", "test-compile"),
        any_goal=True,
        kind="build",
        lines=(_p(r"^\[INFO\] BUILD SUCCESS\s*$"), _f(r"^\[INFO\] BUILD FAILURE\s*$")),
        source="https://maven.apache.org/guides/getting-started/",
    ),
    Tool(
        "gradle test",
        "java",
        ("gradle", "gradlew"),
        sub=("test", "check", "verify", "connectedCheck", "integrationTest"),
        any_goal=True,
        kind="test",
        lines=(
            _p(r"^BUILD SUCCESSFUL\b.*$"),
            _f(r"^BUILD FAILED\b.*$"),
            _c(r"^(?P<total>\d+) tests? completed, (?P<failed>\d+) failed.*$", final=False),
        ),
        source="https://docs.gradle.org/current/userguide/java_testing.html",
    ),
    Tool(
        "gradle build",
        "java",
        ("gradle", "gradlew"),
        sub=("build", "assemble", "compileJava", "compileKotlin", "jar", "bootJar", "classes"),
        any_goal=True,
        kind="build",
        lines=(_p(r"^BUILD SUCCESSFUL\b.*$"), _f(r"^BUILD FAILED\b.*$")),
        source="https://docs.gradle.org/current/userguide/command_line_interface.html",
    ),
    Tool(
        "ktlint",
        "kotlin",
        ("ktlint",),
        skip=("installGitPreCommitHook", "generateEditorConfig"),
        kind="lint",
        silent=True,
        lines=(_f(r"^\S+\.kts?:\d+:\d+: .*$", final=False),),
        source="https://pinterest.github.io/ktlint/latest/install/cli/",
    ),
    Tool(
        "detekt",
        "kotlin",
        ("detekt", "detekt-cli"),
        kind="lint",
        silent=True,
        lines=(_c(r"^(?:Build|Analysis) failed with (?P<problems>\d+) weighted issues?\b.*$"),),
        source="https://detekt.dev/docs/gettingstarted/cli",
    ),
    # -- Ruby --------------------------------------------------------------------------
    Tool(
        "rspec",
        "ruby",
        ("rspec",),
        kind="test",
        lines=(_c(r"^(?P<total>\d+) examples?, (?P<failed>\d+) failures?.*$"),),
        source="https://rspec.info/features/3-13/rspec-core/command-line/exit-status/",
    ),
    Tool(
        "minitest",
        "ruby",
        ("rails", "ruby"),
        sub=("test",),
        kind="test",
        lines=(
            _c(
                r"^(?P<total>\d+) runs, \d+ assertions, (?P<failed>\d+) failures, "
                r"(?P<errors>\d+) errors, \d+ skips\s*$"
            ),
        ),
        source="https://guides.rubyonrails.org/testing.html#the-rails-test-runner",
        note="`rails test`, `bin/rails test`",
    ),
    Tool(
        "rake test",
        "ruby",
        ("rake",),
        sub=("test", "spec"),
        kind="test",
        reads=("minitest", "rspec"),
        lines=(_f(r"^rake aborted!\s*$"),),
        source="https://ruby.github.io/rake/",
    ),
    Tool(
        "rubocop",
        "ruby",
        ("rubocop",),
        kind="lint",
        lines=(
            _p(r"^\d+ files? inspected, no offenses detected\s*$"),
            _c(r"^\d+ files? inspected, (?P<problems>\d+) offenses? detected.*$"),
        ),
        source="https://docs.rubocop.org/rubocop/usage/basic_usage.html",
    ),
    Tool(
        "bundle/gem install",
        "ruby",
        ("bundle", "gem"),
        sub=("install", "add"),
        effect=_install(
            "RubyGems",
            r"^(?:Bundle complete!.*|Successfully installed \S+.*|\d+ gems? installed)$",
            r"^(?:ERROR: .*|Could not find gem .*|Bundler could not find .*)$",
        ),
        source="https://bundler.io/man/bundle-install.1.html",
    ),
    Tool(
        "gem push",
        "ruby",
        ("gem",),
        sub=("push",),
        effect=_publish(
            "RubyGems",
            r"^Successfully registered gem: .*$",
            r"^(?:ERROR|Error|There was a problem saving your gem|Repushing of gem).*$",
        ),
        source="https://guides.rubygems.org/publishing/",
    ),
    Tool(
        "rails server",
        "ruby",
        ("rails",),
        sub=("server", "s"),
        effect=_server(r"^\* Listening on https?://\S+.*$"),
        source="https://guides.rubyonrails.org/command_line.html#bin-rails-server",
    ),
    # -- PHP ---------------------------------------------------------------------------
    Tool(
        "phpunit",
        "php",
        ("phpunit",),
        kind="test",
        lines=(
            _p(r"^OK \((?P<total>\d+) tests?, \d+ assertions?\)\s*$"),
            _c(r"^Tests: \d+, Assertions: \d+.*$"),
            _f(r"^(?:FAILURES|ERRORS)!\s*$", final=False),
        ),
        source="https://docs.phpunit.de/en/11.5/textui.html",
    ),
    Tool(
        "pest",
        "php",
        ("pest",),
        kind="test",
        lines=(_c(r"^\s*Tests:\s+(?:\d+ \w+(?:, )?)+\s*\(\d+ assertions?\)\s*$"),),
        source="https://pestphp.com/docs/cli-api-reference",
    ),
    Tool(
        "phpstan",
        "php",
        ("phpstan",),
        sub=("analyse", "analyze"),
        kind="typecheck",
        lines=(
            _p(r"^\s*\[OK\] No errors\s*$"),
            _c(r"^\s*\[ERROR\] Found (?P<problems>\d+) errors?\s*$"),
        ),
        source="https://phpstan.org/user-guide/command-line-usage",
    ),
    Tool(
        "psalm",
        "php",
        ("psalm",),
        kind="typecheck",
        lines=(_p(r"^No errors found!\s*$"), _c(r"^(?P<problems>\d+) errors? found\s*$")),
        source="https://psalm.dev/docs/running_psalm/command_line_usage/",
    ),
    Tool(
        "php-cs-fixer --dry-run",
        "php",
        ("php-cs-fixer",),
        needs=("--dry-run",),
        kind="format-check",
        lines=(
            _p(r"^Checked all files in [\d.]+ seconds?.*$"),
            _c(r"^Found (?P<problems>\d+) of \d+ files? that can be fixed.*$"),
        ),
        source="https://cs.symfony.com/doc/usage.html",
    ),
    Tool(
        "composer install/require",
        "php",
        ("composer",),
        sub=("install", "require", "update", "create-project"),
        effect=_install(
            "Packagist",
            r"^(?:Generating (?:optimized )?autoload files|Package operations: .*|"
            r"Nothing to install, update or remove)$",
            r"^(?:Your requirements could not be resolved.*|\s*\[\w+(?:\\\w+)*Exception\].*)$",
        ),
        source="https://getcomposer.org/doc/03-cli.md#install-i",
    ),
    Tool(
        "artisan serve",
        "php",
        ("artisan",),
        sub=("serve",),
        effect=_server(r"^\s*(?:INFO\s+)?Server running on \[?https?://\S+.*$"),
        source="https://laravel.com/docs/installation#local-installation-using-herd",
    ),
    # -- .NET --------------------------------------------------------------------------
    Tool(
        "dotnet test",
        "dotnet",
        ("dotnet",),
        sub=("test",),
        kind="test",
        lines=(
            _c(
                r"^\s*(?:Passed|Failed)!\s+-\s+Failed:\s+(?P<failed>\d+),\s+Passed:\s+"
                r"(?P<passed>\d+),\s+Skipped:\s+\d+,\s+Total:\s+(?P<total>\d+).*$",
                final=False,
                per_unit=True,
            ),
            _p(r"^Test Run Successful\.\s*$"),
            _f(r"^Test Run Failed\.\s*$"),
        ),
        source="https://learn.microsoft.com/dotnet/core/tools/dotnet-test",
    ),
    Tool(
        "dotnet build",
        "dotnet",
        ("dotnet", "msbuild"),
        sub=("build",),
        kind="build",
        lines=(
            _p(r"^Build succeeded\.?.*$"),
            _f(r"^Build FAILED\.?\s*$"),
            _c(r"^\s*(?P<problems>\d+) Error\(s\)\s*$", final=False),
        ),
        source="https://learn.microsoft.com/dotnet/core/tools/dotnet-build",
    ),
    Tool(
        "dotnet format --verify-no-changes",
        "dotnet",
        ("dotnet",),
        sub=("format",),
        needs=("--verify-no-changes",),
        kind="format-check",
        silent=True,
        lines=(
            _f(r"^.*: error (?:WHITESPACE|FINALNEWLINE|IDE\d+|CA\d+|CHARSET):.*$", final=False),
        ),
        source="https://learn.microsoft.com/dotnet/core/tools/dotnet-format",
    ),
    Tool(
        "dotnet add package",
        "dotnet",
        ("dotnet",),
        sub=("add",),
        effect=_install(
            "NuGet",
            r"^info : PackageReference for package '.*' (?:version '.*' )?added to file .*$",
            r"^error: .*$",
        ),
        source="https://learn.microsoft.com/dotnet/core/tools/dotnet-add-package",
    ),
    Tool(
        "dotnet nuget push",
        "dotnet",
        ("dotnet", "nuget"),
        sub=("nuget", "push"),
        effect=_publish("NuGet", r"^\s*Your package was pushed\.?\s*$", r"^error: .*$"),
        source="https://learn.microsoft.com/dotnet/core/tools/dotnet-nuget-push",
    ),
    # -- recipes -----------------------------------------------------------------------
    Tool(
        "make",
        "any",
        ("make", "gmake"),
        kind="build",
        delegates=True,
        lines=(_f(r"^g?make(?:\[\d+\])?: \*\*\* .*Error \d+.*$"),),
        source="https://www.gnu.org/software/make/manual/html_node/Errors.html",
        note="the target's kind by its name; its recipe is read from the Makefile when "
        "the trace shows it",
    ),
    Tool(
        "just",
        "any",
        ("just",),
        kind="build",
        delegates=True,
        lines=(_f(r"^error: Recipe `\S+` failed .*$"),),
        source="https://just.systems/man/en/",
        note="a recipe whose name is a check (test, lint, check, build…)",
    ),
    Tool(
        "task",
        "any",
        ("task",),
        kind="build",
        delegates=True,
        lines=(_f(r'^task: Failed to run task "\S+": .*$'),),
        source="https://taskfile.dev/usage/",
        note="a task whose name is a check (test, lint, check, build…)",
    ),
    # -- containers, clusters, infrastructure -----------------------------------------
    Tool(
        "docker build",
        "any",
        ("docker", "podman"),
        sub=("build", "buildx"),
        kind="build",
        lines=(
            _p(
                r"^(?:Successfully built [0-9a-f]+|#\d+ naming to \S+ .*done|"
                r"#\d+ writing image sha256:\S+ .*done)\s*$"
            ),
            _f(r"^(?:ERROR: failed to (?:solve|build).*|ERROR \[.*\].*)$"),
        ),
        source="https://docs.docker.com/reference/cli/docker/buildx/build/",
    ),
    Tool(
        "docker push",
        "any",
        ("docker", "podman"),
        sub=("push",),
        effect=EffectSpec(
            "publication",
            "push",
            True,
            "a container registry",
            _rx(r"digest: sha256:[0-9a-f]+|Writing manifest to image destination"),
            _rx(r"^(?:denied: .*|unauthorized: .*|Error\b.*)$"),
        ),
        source="https://docs.docker.com/reference/cli/docker/image/push/",
    ),
    Tool(
        "kubectl",
        "any",
        ("kubectl", "oc"),
        sub=("apply", "create", "delete", "rollout", "scale", "set", "patch", "replace"),
        effect=_deploy(
            "a Kubernetes cluster",
            r"^\S+/\S+ (?:created|configured|deleted|scaled|restarted|patched|replaced|"
            r"image updated|serverside-applied)\b.*$|^deployment \S+ successfully rolled out$",
            r"^(?:error|Error from server)\b.*$",
        ),
        source="https://kubernetes.io/docs/reference/kubectl/generated/kubectl_apply/",
    ),
    Tool(
        "helm",
        "any",
        ("helm",),
        sub=("install", "upgrade", "uninstall", "rollback"),
        effect=_deploy(
            "a Kubernetes cluster (Helm release)",
            r"^STATUS: deployed\s*$|has been upgraded|^release \"\S+\" uninstalled$|"
            r"^Rollback was a success",
            r"^Error: .*$",
        ),
        source="https://helm.sh/docs/helm/helm_install/",
    ),
    Tool(
        "terraform apply",
        "any",
        ("terraform", "tofu"),
        sub=("apply", "destroy"),
        effect=_deploy(
            "cloud infrastructure",
            r"^(?:Apply|Destroy) complete!.*$",
            r"^(?:│ )?Error: .*$",
        ),
        source="https://developer.hashicorp.com/terraform/cli/commands/apply",
    ),
    Tool(
        "vercel",
        "javascript",
        ("vercel",),
        skip=("dev", "env", "login", "logs", "link", "pull", "ls", "list", "whoami", "inspect"),
        effect=_deploy("Vercel", r"^(?:✅\s+)?(?:Production|Preview): https?://\S+.*$"),
        source="https://vercel.com/docs/cli/deploy",
    ),
    Tool(
        "netlify deploy",
        "javascript",
        ("netlify", "ntl"),
        sub=("deploy",),
        effect=_deploy(
            "Netlify",
            r"^(?:Deploy is live!|\s*(?:Website|Unique deploy|Deployed draft) URL: https?://\S+).*$",
        ),
        source="https://cli.netlify.com/commands/deploy/",
    ),
    Tool(
        "fly deploy",
        "any",
        ("fly", "flyctl"),
        sub=("deploy",),
        effect=_deploy(
            "Fly.io",
            r"^\s*Visit your newly deployed app at https?://\S+.*$|"
            r"^\s*v\d+ deployed successfully\s*$",
        ),
        source="https://fly.io/docs/flyctl/deploy/",
    ),
    Tool(
        "heroku",
        "any",
        ("heroku",),
        sub=("container:release", "releases:rollback", "deploy"),
        effect=_deploy(
            "Heroku",
            r"^Releasing images? .* done$|^\s*https://\S+\.herokuapp\.com\S* deployed to Heroku$",
        ),
        source="https://devcenter.heroku.com/articles/container-registry-and-runtime",
    ),
    Tool(
        "wrangler/firebase/railway deploy",
        "javascript",
        ("wrangler", "firebase", "railway", "surge"),
        sub=("deploy", "publish", "up"),
        effect=_deploy(
            "a hosting provider",
            r"^\s*(?:Deployed \S+ triggers.*|✔\s+Deploy complete!|Hosting URL: https?://\S+|"
            r"https?://\S+\.workers\.dev\S*|Success! - Published to \S+).*$",
            r"^\s*(?:Error|ERROR|error\b|✘ \[ERROR\]).*$",
        ),
        source="https://developers.cloudflare.com/workers/wrangler/commands/#deploy",
    ),
    # -- version control and forges ----------------------------------------------------
    Tool(
        "git commit",
        "any",
        ("git",),
        sub=("commit",),
        effect=EffectSpec(
            "write",
            "commit",
            False,
            "the local git repository",
            _rx(r"^[^\[\n]{0,20}\[[^\]\n]+? [0-9a-f]{7,40}\] .*$"),
            _rx(r"^(?:error|fatal): .*$"),
        ),
        source="https://git-scm.com/docs/git-commit",
    ),
    Tool(
        "git push",
        "any",
        ("git",),
        sub=("push",),
        effect=EffectSpec(
            "git_push",
            "push",
            True,
            "a git remote",
            _rx(
                r"^\s*[*+\-=]?\s*(?:\[new branch\]|\[new tag\]|[0-9a-f]{7,}\.\.\.?[0-9a-f]{7,})"
                r"\s+\S+\s+->\s+\S+.*$|^Everything up-to-date\s*$"
            ),
            _rx(r"^\s*! \[(?:rejected|remote rejected)\].*$|^(?:error|fatal): .*$"),
        ),
        source="https://git-scm.com/docs/git-push#_output",
    ),
    Tool(
        "git tag",
        "any",
        ("git",),
        sub=("tag",),
        effect=EffectSpec(
            "write",
            "tag",
            False,
            "the local git repository",
            None,
            _rx(r"^fatal: .*$"),
            True,
            True,
        ),
        source="https://git-scm.com/docs/git-tag",
    ),
    Tool(
        "gh pr create/merge",
        "any",
        ("gh",),
        sub=("pr",),
        effect=EffectSpec(
            "pull_request",
            "pr",
            True,
            "GitHub",
            _rx(rf"^{_URL}/pull/\d+\s*$|^✓ (?:Merged|Squashed and merged|Rebased and merged) .*$"),
            _rx(r"^(?:GraphQL: .*|HTTP \d{3}: .*|X .*|pull request create failed: .*)$"),
        ),
        source="https://cli.github.com/manual/gh_pr_create",
    ),
    Tool(
        "gh issue create",
        "any",
        ("gh",),
        sub=("issue",),
        effect=EffectSpec(
            "issue",
            "issue",
            True,
            "GitHub",
            _rx(rf"^{_URL}/issues/\d+(?:#\S*)?\s*$|^✓ Closed issue .*$"),
            _rx(r"^(?:GraphQL: .*|HTTP \d{3}: .*)$"),
        ),
        source="https://cli.github.com/manual/gh_issue_create",
    ),
    Tool(
        "gh release/repo create",
        "any",
        ("gh",),
        sub=("release", "repo", "gist", "workflow"),
        effect=EffectSpec(
            "publication",
            "publish",
            True,
            "GitHub",
            _rx(rf"^(?:✓ Created repository \S+ on GitHub.*|{_URL})\s*$"),
            _rx(r"^(?:GraphQL: .*|HTTP \d{3}: .*)$"),
        ),
        source="https://cli.github.com/manual/gh_release_create",
    ),
    Tool(
        "glab mr create/merge",
        "any",
        ("glab",),
        sub=("mr",),
        effect=EffectSpec(
            "pull_request",
            "mr",
            True,
            "GitLab",
            _rx(rf"^\s*{_URL}/-/merge_requests/\d+\s*$|^✓ Merged!?.*$"),
            _rx(r"^(?:ERROR: .*|POST https?://\S+: \d{3} .*|.*\b40[0-9] .*)$"),
        ),
        source="https://gitlab.com/gitlab-org/cli/-/blob/main/docs/source/mr/create.md",
    ),
    Tool(
        "glab issue create",
        "any",
        ("glab",),
        sub=("issue",),
        effect=EffectSpec(
            "issue",
            "issue",
            True,
            "GitLab",
            _rx(rf"^{_URL}/-/issues/\d+\s*$"),
            _rx(r"^(?:ERROR: .*|POST https?://\S+: \d{3} .*)$"),
        ),
        source="https://gitlab.com/gitlab-org/cli/-/blob/main/docs/source/issue/create.md",
    ),
    # -- HTTP clients ------------------------------------------------------------------
    Tool(
        "curl",
        "any",
        ("curl",),
        effect=EffectSpec(
            "upload",
            "http",
            True,
            "an HTTP service (a request with a method that changes something)",
            _rx(r"HTTP/[\d.]+ 2\d\d"),
            _rx(r"^curl: \(\d+\).*$|HTTP/[\d.]+ [45]\d\d.*"),
        ),
        source="https://curl.se/docs/manpage.html#-X",
    ),
    Tool(
        "wget",
        "any",
        ("wget",),
        effect=EffectSpec(
            "upload",
            "http",
            True,
            "an HTTP service (`--method`, `--post-data`)",
            _rx(r"HTTP request sent, awaiting response\.\.\. 2\d\d.*"),
            _rx(r"ERROR \d{3}.*|HTTP request sent, awaiting response\.\.\. [45]\d\d.*"),
        ),
        source="https://www.gnu.org/software/wget/manual/wget.html#HTTP-Options",
    ),
    Tool(
        "httpie",
        "any",
        ("http", "https", "xh"),
        effect=EffectSpec(
            "upload",
            "http",
            True,
            "an HTTP service (`http POST url`)",
            _rx(r"HTTP/[\d.]+ 2\d\d"),
            _rx(r"HTTP/[\d.]+ [45]\d\d.*|^http: error: .*$"),
        ),
        source="https://httpie.io/docs/cli/http-method",
    ),
    # -- other runners recognised by their subcommand -----------------------------------
    Tool(
        "bazel",
        "any",
        ("bazel", "bazelisk"),
        sub=("test", "build"),
        kind="test",
        lines=(
            _p(r"^INFO: Build completed successfully.*$"),
            _f(r"^(?:FAILED|ERROR): Build did NOT complete successfully.*$"),
            _c(
                r"^Executed \d+ out of \d+ tests?: (?:(?P<passed>\d+) tests? pass)?"
                r"(?:.*?(?P<failed>\d+) fails? locally)?.*$"
            ),
        ),
        source="https://bazel.build/docs/user-manual",
    ),
    Tool(
        "swift test/build",
        "swift",
        ("swift",),
        sub=("test", "build"),
        kind="test",
        lines=(
            _p(r"^(?:Build complete!.*|Test Suite 'All tests' passed at .*)$"),
            _f(r"^(?:error: fatalError|Test Suite 'All tests' failed at .*|error: .*)$"),
        ),
        source="https://www.swift.org/documentation/package-manager/",
    ),
    Tool(
        "sbt/mix/stack/cabal/zig/dune/deno/flutter/dart/meson",
        "any",
        ("sbt", "mix", "stack", "cabal", "zig", "dune", "deno", "flutter", "dart", "meson"),
        sub=("test", "compile", "build", "runtest", "lint", "check"),
        kind="test",
        lines=(
            _p(r"^\[success\] Total time: .*$"),
            _f(r"^\[error\] .*$", final=False),
            _c(r"^(?P<total>\d+) tests?, (?P<failed>\d+) failures?.*$"),
        ),
        source="https://www.scala-sbt.org/1.x/docs/Testing.html",
        note="sbt's summary lines; the others by their exit status",
    ),
    Tool(
        "ctest/bats/ava/karma/tap",
        "any",
        ("ctest", "bats", "ava", "karma", "tap"),
        skip=("init",),
        kind="test",
        lines=(_c(r"^\d+% tests passed, (?P<failed>\d+) tests? failed out of (?P<total>\d+)\s*$"),),
        source="https://cmake.org/cmake/help/latest/manual/ctest.1.html",
        note="ctest's summary; the others by their exit status",
    ),
    Tool(
        "shellcheck/stylelint/biome/hadolint",
        "any",
        ("shellcheck", "stylelint", "biome", "hadolint"),
        kind="lint",
        silent=True,
        lines=(_f(r"^In \S+ line \d+:\s*$", final=False),),
        source="https://github.com/koalaman/shellcheck/blob/master/shellcheck.1.md",
        note="shellcheck's finding header; the others by their exit status",
    ),
)

BY_NAME: dict[str, Tool] = {t.name: t for t in TOOLS}

# Check kinds that read each other's lines when a script's kind is known only from its
# name (`npm run lint` may run tsc and eslint and prettier).
KIND_GROUPS: dict[str, frozenset[str]] = {
    "test": frozenset({"test"}),
    "build": frozenset({"build", "typecheck"}),
    "lint": frozenset({"lint", "typecheck", "format-check"}),
    "typecheck": frozenset({"typecheck", "lint"}),
    "format-check": frozenset({"format-check", "lint"}),
}


_INTERPRETERS = re.compile(r"(?:python[\d.]*|php|node|ruby|bash|sh)")
_SCRIPT_FILE = re.compile(r"[\w./-]*(?:\.py|\.php|\.js|\.rb|\.sh|runtests|artisan)")


def invocation(words: tuple[str, ...] | list[str]) -> tuple[str, list[str]]:
    """The program a command runs and its arguments: `python manage.py test` runs
    `manage.py`, `php artisan serve` runs `artisan`, `create-next-app@latest` is
    `create-next-app`."""
    if not words:
        return "", []
    program = words[0].rsplit("/", 1)[-1]
    args = list(words[1:])
    if _INTERPRETERS.fullmatch(program) and args and _SCRIPT_FILE.fullmatch(args[0]):
        program, args = args[0].rsplit("/", 1)[-1], args[1:]
    if "@" in program[1:]:
        program = program[0] + program[1:].split("@", 1)[0]
    return program, args


def find_tool(program: str, args: list[str], *, checks: bool) -> Tool | None:
    """The first row `program args…` matches: among checks (rows with a kind) or among
    effects (rows with an effect)."""
    for tool in TOOLS:
        if (tool.kind is not None if checks else tool.effect is not None) and tool.matches(
            program, args
        ):
            return tool
    return None


def lines_of(names: Iterable[str]) -> tuple[tuple[str, Line], ...]:
    """The summary lines of the named rows and of the rows they read."""
    out: list[tuple[str, Line]] = []
    seen: set[str] = set()
    pending = list(names)
    while pending:
        name = pending.pop(0)
        if name in seen or name not in BY_NAME:
            continue
        seen.add(name)
        tool = BY_NAME[name]
        out.extend((name, line) for line in tool.lines)
        pending.extend(tool.reads)
    return tuple(out)


ALL_LINES: tuple[tuple[str, Line], ...] = tuple((t.name, ln) for t in TOOLS for ln in t.lines)


def _recognised(tool: Tool) -> str:
    words = " / ".join(f"`{p}`" for p in tool.programs)
    if tool.sub:
        words += (" with any goal of " if tool.any_goal else " ") + ", ".join(
            f"`{s}`" for s in tool.sub
        )
    if tool.needs:
        words += " with " + " or ".join(f"`{n}`" for n in tool.needs)
    if tool.skip:
        words += " (not " + ", ".join(f"`{s}`" for s in tool.skip) + ")"
    if tool.note:
        words += f"; {tool.note}"
    return words


def _evidence(tool: Tool, result: str) -> str:
    shown = [f"`{ln.pattern.pattern}`" for ln in tool.lines if ln.result in (result, "count")]
    if result == "pass" and tool.silent:
        shown.append("silence with exit status 0")
    if tool.reads:
        shown.append("lines of " + ", ".join(tool.reads))
    if tool.delegates:
        shown.append("lines of the tools it runs")
    if not shown and tool.kind is not None:
        shown.append(f"exit status {'0' if result == 'pass' else 'non-zero'}")
    return "<br>".join(shown).replace("|", "\\|")


def _effect(tool: Tool) -> str:
    e = tool.effect
    if e is None:
        return "—"
    where = "remote" if e.remote else "local"
    text = f"{e.effect_class} ({e.kind}, {where}: {e.system})"
    if e.done is not None:
        text += f"; done: `{e.done.pattern}`"
    if e.failed is not None:
        text += f"; failed: `{e.failed.pattern}`"
    return text.replace("|", "\\|")


def _kind(tool: Tool) -> str:
    if tool.kind is None:
        return "—"
    if tool.delegates and tool.programs[0] in {
        "npm",
        "yarn",
        "pnpm",
        "bun",
        "make",
        "just",
        "task",
    }:
        return "by the script's body, else its name"
    return tool.kind


def catalogue_markdown() -> str:
    """docs/tools.md: the catalogue as a table, from this module's data."""
    head = [
        "# The tool catalogue",
        "",
        "Generated from `importers/catalogue.py` by `catalogue_markdown()`; a test keeps",
        "this file in step with the data. Each row: how the tool is recognised in a",
        "command line (after wrappers such as `sudo`, `timeout`, `npx`, `pnpm dlx`,",
        "`uv run`, `poetry run`, `python -m` are removed; `npm|yarn|pnpm|bun run <script>`",
        "and make/just/task recipes are read through package.json or the Makefile when",
        "the trace shows them), the check it runs, the lines its documentation shows for",
        "success and failure (regular expressions, one per line of output), and its",
        "effect. When a pipe takes the exit status away (`cmd | tail`), only these lines",
        "decide; with none of them and no status the receipt is `indeterminate`.",
        "",
        f"{len(TOOLS)} rows.",
        "",
        "| tool | ecosystem | recognised by | check | success evidence | failure evidence "
        "| effect | documentation |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = [
        f"| {t.name} | {t.ecosystem} | {_recognised(t)} | {_kind(t)} | "
        f"{_evidence(t, 'pass') or '—'} | {_evidence(t, 'fail') or '—'} | {_effect(t)} | "
        f"{t.source} |"
        for t in TOOLS
    ]
    return "\n".join(head + rows) + "\n"
