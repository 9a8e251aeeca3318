"""Which kind of check a receipt is, and which kind and scope a verification claim names.

A verification claim is backed only by a receipt of the kind of check it names, on the
scope it names (SPEC 6): "all tests pass" by a test run of the whole suite, "no type
errors" by a type checker. Receipts carry a label, which importers set to the check's
command (`pytest -q`, `npm run build`, `npx tsc --noEmit`) and producers to a name
(`unit`, `lint`); `label_kinds` reads either. `claimed_checks` reads the claim's clause.

Kinds: `test`, `build`, `lint`, `typecheck`, `format`. A receipt has a primary kind (what
its failure says is wrong) and the kinds its pass establishes: a compiler of a typed
language type-checks as it builds (`cargo build`, `go build`, `tsc`), so its pass backs
"no type errors", while its failure does not say which. A bundler's build (`vite build`,
an `npm run build` whose script is unknown) establishes a build only. A label read as no
kind (`ci`, `npm run check`) could be any check: a claim is never judged by the absence
of a kind while such a receipt exists.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

CheckKind = Literal["test", "build", "lint", "typecheck", "format"]
ClaimScope = Literal["all", "part"]
Kinds = tuple[CheckKind | None, frozenset[CheckKind]]

_NONE: Kinds = (None, frozenset())


def _k(primary: CheckKind, *also: CheckKind) -> Kinds:
    return primary, frozenset((primary, *also))


TEST = _k("test")
BUILD = _k("build")
TYPED_BUILD = _k("build", "typecheck")
TYPECHECK = _k("typecheck")
TYPECHECK_EMIT = _k("typecheck", "build")
LINT = _k("lint")
FORMAT = _k("format")


# Programs that are one kind of check whatever their arguments (the argument rules below
# come first: `ruff format --check`, `tsc --noEmit`).
def _words(text: str) -> list[str]:
    return text.split()


_PROGRAMS: dict[str, Kinds] = {
    **dict.fromkeys(
        _words(
            """pytest py.test tox nox nosetests unittest jest vitest mocha ava tap karma
            cypress playwright rspec phpunit pest ctest bats runtests runtests.py trial green
            ward behave cucumber codeceptjs testem jasmine qunit"""
        ),
        TEST,
    ),
    **dict.fromkeys(
        _words("mypy pyright pyre pytype vue-tsc svelte-check flow basedpyright dmypy"),
        TYPECHECK,
    ),
    **dict.fromkeys(
        _words(
            """eslint ruff flake8 pylint pycodestyle pydocstyle pyflakes bandit golangci-lint
            staticcheck revive rubocop stylelint shellcheck hadolint markdownlint ktlint
            detekt checkstyle phpstan psalm phpcs oxlint xo standard tslint jshint swiftlint
            clang-tidy cpplint actionlint yamllint biome vulture semgrep"""
        ),
        LINT,
    ),
    **dict.fromkeys(_words("webpack rollup esbuild parcel turbo nx"), BUILD),
    **dict.fromkeys(_words("javac kotlinc scalac rustc swiftc"), TYPED_BUILD),
}

# `<program> <subcommand>` pairs.
_SUBCOMMANDS: dict[str, dict[str, Kinds]] = {
    "cargo": {
        **dict.fromkeys(("test", "nextest", "llvm-cov", "tarpaulin", "bench"), TEST),
        "build": TYPED_BUILD,
        "check": TYPED_BUILD,
        "clippy": LINT,
        "fmt": FORMAT,
    },
    "go": {"test": TEST, "build": TYPED_BUILD, "vet": LINT},
    "dotnet": {"test": TEST, "build": TYPED_BUILD, "format": FORMAT},
    "deno": {"test": TEST, "lint": LINT, "check": TYPECHECK, "fmt": FORMAT},
    "bun": {"test": TEST},
    "swift": {"test": TEST, "build": TYPED_BUILD},
    "mix": {"test": TEST, "compile": TYPED_BUILD, "format": FORMAT, "credo": LINT},
    "dune": {"test": TEST, "runtest": TEST, "build": TYPED_BUILD},
    "stack": {"test": TEST, "build": TYPED_BUILD},
    "cabal": {"test": TEST, "build": TYPED_BUILD},
    "next": {"build": TYPED_BUILD, "lint": LINT},
    "ng": {"build": TYPED_BUILD, "test": TEST, "lint": LINT},
    "vite": {"build": BUILD},
    "nuxt": {"build": BUILD},
    "astro": {"build": BUILD, "check": TYPECHECK},
    "rake": {"test": TEST, "spec": TEST},
    "biome": {"lint": LINT, "check": LINT, "format": FORMAT},
    "ruff": {"format": FORMAT, "check": LINT},
}
_MAVEN = {"test": TEST, "verify": TEST, "install": TEST, "package": TEST, "compile": TYPED_BUILD}
_GRADLE = {"test": TEST, "check": TEST, "build": TEST, "assemble": TYPED_BUILD}
for _name in ("mvn", "mvnw", "./mvnw"):
    _SUBCOMMANDS[_name] = _MAVEN
for _name in ("gradle", "gradlew", "./gradlew"):
    _SUBCOMMANDS[_name] = _GRADLE

# Formatters count as a check only in check mode.
_FORMATTERS = frozenset({"prettier", "black", "isort", "rustfmt", "gofmt", "clang-format"})
_CHECK_MODE = frozenset({"--check", "-c", "--list-different", "-l", "--diff", "--dry-run"})

# Wrappers before the program: runners of a tool installed elsewhere.
_WRAPPERS: dict[str, int] = {
    "npx": 1,
    "bunx": 1,
    "pnpx": 1,
    "uvx": 1,
    "pipx": 2,  # pipx run X
    "uv": 2,  # uv run X
    "poetry": 2,
    "pipenv": 2,
    "hatch": 2,
    "pdm": 2,
    "rye": 2,
    "bundle": 2,  # bundle exec X
    "time": 1,
    "env": 1,
}
_PYTHON = re.compile(r"(?:.*/)?python[\d.]*$")
_ENV_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")

# Script and recipe names (npm run X, make X, just X), and the words of a name label.
_NAME_WORDS: tuple[tuple[re.Pattern[str], Kinds], ...] = (
    (re.compile(r"^(?:type-?check\w*|types|typing|tsc|check-types|typescript|ts)$"), TYPECHECK),
    (re.compile(r"^(?:lint\w*|linter|style|clippy|eslint)$"), LINT),
    (re.compile(r"^(?:fmt|format\w*|prettier)$"), FORMAT),
    (
        re.compile(
            r"^(?:tests?|testing|unit|integration|e2e|spec|specs|suite|smoke|functional"
            r"|acceptance|regression|coverage|cov|pytest|jest|vitest)$"
        ),
        TEST,
    ),
    (re.compile(r"^(?:build|compile|compilation|bundle|dist)$"), BUILD),
)


def _name_kinds(name: str) -> Kinds:
    """The kind a script, recipe or label name reads as: the one kind its words name
    (`test:unit`, `unit-tests`, `build`), none when they name none or several."""
    found: set[Kinds] = set()
    for word in re.split(r"[^a-z0-9]+", name.lower()):
        for pattern, kinds in _NAME_WORDS:
            if word and pattern.match(word):
                found.add(kinds)
                break
    if len(found) == 1:
        return found.pop()
    return _NONE


def _takes_two(words: list[str]) -> bool:
    """`timeout 60 X`, `python -m X`: two words before the program."""
    head = words[0]
    return (head == "timeout" and len(words) > 1) or bool(
        _PYTHON.match(head) and words[1:2] == ["-m"]
    )


def _program(words: list[str]) -> list[str]:
    """The words from the program on: environment assignments and wrappers dropped."""
    while words:
        head = words[0]
        if _ENV_ASSIGNMENT.match(head):
            words = words[1:]
        elif head in _WRAPPERS:
            words = words[_WRAPPERS[head] :]
        elif _takes_two(words):
            words = words[2:]
        else:
            return words
    return words


@lru_cache(maxsize=4096)  # every revision judges a run's narratives again, same labels
def label_kinds(label: str) -> Kinds:
    """(primary kind or None, the kinds a pass establishes) of a receipt's label."""
    words = _program(label.split())
    if not words:
        return _NONE
    program = words[0].rsplit("/", 1)[-1] if "/" in words[0] else words[0]
    args = words[1:]
    if program == "tsc":
        return TYPECHECK if "--noEmit" in args or "--noemit" in args else TYPECHECK_EMIT
    if program in {"make", "gmake"} and not args:
        return BUILD
    if len(words) == 1 and program not in _PROGRAMS:
        return _name_kinds(program)  # a producer's name for the check (`unit`, `lint`)
    if program in {"npm", "yarn", "pnpm", "bun"}:
        script = args[1] if args[:1] == ["run"] and len(args) > 1 else args[0] if args else ""
        if script in {"t", "test"}:
            return TEST
        if program == "bun" and script in _SUBCOMMANDS["bun"]:
            return _SUBCOMMANDS["bun"][script]
        return _name_kinds(script)
    if program in {"make", "gmake", "just", "task"}:
        targets = [a for a in args if not a.startswith("-") and "=" not in a]
        if not targets:
            return BUILD if program in {"make", "gmake"} else _NONE
        return _name_kinds(targets[0])
    if program in _FORMATTERS:
        return FORMAT if _CHECK_MODE & set(args) else _NONE
    if _PYTHON.match(program) and args:
        script = args[0].rsplit("/", 1)[-1]
        if script in {"runtests.py", "runtests"} or (script == "manage.py" and "test" in args):
            return TEST
        return _NONE
    sub = _SUBCOMMANDS.get(program)
    if sub is not None:
        first = next((a for a in args if not a.startswith("-")), "")
        kinds = sub.get(first, _NONE)
        if program == "cargo" and first == "fmt" and "--check" not in args:
            return _NONE
        if program == "ruff" and first == "format" and "--check" not in args:
            return _NONE
        if kinds != _NONE or program in {"ruff", "biome"}:
            return kinds if kinds != _NONE else LINT
        return _NONE
    return _PROGRAMS.get(program, _NONE)


# -- claims ----------------------------------------------------------------------------------

_FLAGS = re.IGNORECASE
_CLAIM_WORDS: tuple[tuple[CheckKind, re.Pattern[str]], ...] = (
    (
        "typecheck",
        re.compile(
            r"\btype[-\s]?(?:check\w*|errors?|safe\w*|safety)\b|\btypescript\b|\btsc\b"
            r"|\bmypy\b|\bpyright\b|\btyping\s+errors?\b|\btypes?\s+(?:check|pass)\w*",
            _FLAGS,
        ),
    ),
    (
        "lint",
        re.compile(
            r"\blint\w*|\b(?:eslint|ruff|flake8|pylint|clippy|rubocop|stylelint|golangci)\b"
            r"|\bgo\s+vet\b",
            _FLAGS,
        ),
    ),
    (
        "format",
        re.compile(
            r"\b(?:prettier|rustfmt|gofmt|cargo\s+fmt)\b|\bformat(?:ting)?\s+checks?\b"
            r"|\b(?:correctly|properly)\s+formatted\b",
            _FLAGS,
        ),
    ),
    (
        "test",
        re.compile(
            r"\b(?:tests?|tested|testing|test\s*cases?|specs?|suites?|pytest|jest|vitest"
            r"|mocha|rspec|doctests?)\b",
            _FLAGS,
        ),
    ),
    ("build", re.compile(r"\b(?:build\w*|built|compil\w+|bundl\w+)\b", _FLAGS)),
)
_ALL = re.compile(
    r"\b(?:all|every|entire|whole|full|complete|overall|everything)\b|\bsuites?\b", _FLAGS
)
_TESTS_NOUN = r"\s+(?:\w+\s+)?(?:tests?|specs?|test\s*cases?)\b(?!\s+suite)"
# A part named outright ("the new tests", "these tests"), which "all" does not widen.
_PART = re.compile(
    r"\b(?:new|newly|added|relevant|related|targeted|focused|affected|specific|modified"
    r"|updated|changed|reproduction|regression|this|these|those|my|single|some|individual)"
    + _TESTS_NOUN,
    _FLAGS,
)
# A part named by a modifier or in the singular ("the merge tests", "the test"), which a
# quantifier widens ("all the unit tests").
_NAMED_PART = re.compile(
    r"\bthe\s+\w+" + _TESTS_NOUN + r"|\b(?:a|the|one)\s+(?:\w+\s+)?test\b(?!s|\s+suite)",
    _FLAGS,
)


def claimed_checks(clause: str) -> tuple[tuple[CheckKind, ...], ClaimScope | None]:
    """The kinds of check a verification claim's clause names (none: a generic claim,
    "Verified", "CI is green") and the scope it names: `all` ("all tests", "the full
    suite"), `part` ("the new test", "these tests"), None when it names neither."""
    kinds = tuple(kind for kind, pattern in _CLAIM_WORDS if pattern.search(clause))
    if "typecheck" in kinds and "build" in kinds and not re.search(r"\bbuil", clause, _FLAGS):
        # "compiles without TypeScript errors": the compiler's type check, one claim
        kinds = tuple(k for k in kinds if k != "build")
    suite_of_another = re.search(r"\bsuites?\b", clause, _FLAGS) and not re.search(
        r"\btest", clause, _FLAGS
    )
    if "test" in kinds and len(kinds) > 1 and suite_of_another:
        kinds = tuple(k for k in kinds if k != "test")  # "the lint suite"
    scope: ClaimScope | None = None
    if _PART.search(clause):
        scope = "part"
    elif _ALL.search(clause):
        scope = "all"
    elif _NAMED_PART.search(clause):
        scope = "part"
    return kinds, scope
