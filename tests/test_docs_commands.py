"""Every command, query and code sample the docs show, run exactly as printed.

The fenced blocks of README.md and docs/*.md are read. A doc command is a line of a
shell block (```bash, ```sh or an unlabelled block) that runs a program: `outcomes`,
`.venv/bin/…`, `bash`, `curl`, `docker`, `python`, `pip`, `jq`; every line of a ```bash
or ```sh block must be one (or a comment), so no command slips past. A doc command either
runs here, through `bash -c` with the line as printed, or is listed in `NOT_RUN` with the
reason it cannot run in a test (a long-running daemon, the shared dev broker, minutes of
benchmark); a `NOT_RUN` command that is one `outcomes` or `python -m` invocation still
has its options parsed (the line with `--help` added). Nothing is skipped silently, and a
`NOT_RUN` entry the docs no longer show fails the test too. Each ```sql block is a doc
query, run through every command that reads `query.sql`, against the sample chDB
database (tests/chdb_support.py) named by `OUTCOMES_CLICKHOUSE`; the state dir is a
temporary one, so no command here touches the dev Kafka stack or `.state`. Each ```python
block runs here as printed (the receiver, the live-endpoint client, the consumers, which
need the broker) or is named in `CODE_RUN_ELSEWHERE` with the test that runs it.
"""

from __future__ import annotations

import csv
import fcntl
import http.client
import io
import os
import re
import signal
import socket
import sqlite3
import subprocess
import uuid
from collections.abc import Iterator, Mapping
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path

import orjson
import pytest

from outcomes.common.retry import poll_until
from outcomes.devtools.samples import notification
from outcomes.reducers.catalog import OUTPUT_TOPICS
from outcomes.sinks import clickhouse, live
from outcomes.sinks.query import run_query
from outcomes.streams.sdk.webhook import IDEMPOTENCY_HEADER, sign
from tests.chdb_support import sample_database
from tests.consumer_support import publish

pytestmark = pytest.mark.clickhouse
ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
SHELL = ("bash", "sh")
# `outcomes` at a command position: line start, after && || | ; or env assignments.
RUNS_OUTCOMES = re.compile(
    r"(?:^|&&|\|\||[|;])\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:\.venv/bin/)?outcomes(?:\s|$)"
)
# Any other program a doc line may run, at the start of the line.
RUNS_PROGRAM = re.compile(
    r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:\.venv/bin/\S+|bash|curl|docker|python3?|pip3?|jq)(?:\s|$)"
)


@dataclass(frozen=True)
class DocCommand:
    """One command line of a fenced block (backslash continuations joined)."""

    doc: str
    line: int
    text: str
    block: int = 0  # the line its fenced block starts on

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.text}"


@dataclass(frozen=True)
class DocQuery:
    """One ```sql block."""

    doc: str
    line: int
    sql: str

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}"


def _fenced() -> Iterator[tuple[str, int, str, str]]:
    for path in DOCS:
        text = path.read_text()
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start(2)) + 1
            yield path.relative_to(ROOT).as_posix(), line, match.group(1), match.group(2)


def _shell_lines() -> Iterator[tuple[str, int, int, str, str]]:
    """(doc, block's first line, line, block language, text) of each line of the shell
    and unlabelled blocks, backslash continuations joined."""
    for doc, first, lang, body in _fenced():
        if lang not in ("", *SHELL):
            continue
        pending: list[str] = []
        start = first
        for n, raw in enumerate(body.splitlines(), first):
            if not pending:
                start = n
            if raw.endswith("\\"):
                pending.append(raw)
                continue
            text = "\n".join([*pending, raw])
            pending = []
            yield doc, first, start, lang, text


def _is_command(text: str) -> bool:
    return bool(RUNS_OUTCOMES.search(text) or RUNS_PROGRAM.match(text))


def doc_commands() -> list[DocCommand]:
    return [
        DocCommand(doc, n, text, block)
        for doc, block, n, _, text in _shell_lines()
        if _is_command(text)
    ]


def doc_queries() -> list[DocQuery]:
    return [DocQuery(doc, line, body) for doc, line, lang, body in _fenced() if lang == "sql"]


@dataclass(frozen=True)
class DocCode:
    """One ```python block."""

    doc: str
    line: int
    code: str

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}"


def doc_code() -> list[DocCode]:
    return [DocCode(doc, line, body) for doc, line, lang, body in _fenced() if lang == "python"]


def code_block(doc: str, marker: str) -> DocCode:
    """The one ```python block of `doc` that holds `marker`."""
    found = [c for c in doc_code() if c.doc == doc and marker in c.code]
    assert len(found) == 1, f"{doc}: {len(found)} python blocks hold {marker!r}"
    return found[0]


DEMO_NEEDS_KAFKA = (
    "starts (or needs) the dev Kafka broker and runs the whole demo, minutes long; "
    "tests/test_demo.py runs the demo itself (marked kafka)"
)
SYNOPSIS = "a synopsis, not a command: brackets and capitals (DSN, RUN_ID) are placeholders"

# (doc, command as printed) -> why this test does not run it.
NOT_RUN: dict[tuple[str, str], str] = {
    ("README.md", "bash scripts/setup.sh && .venv/bin/outcomes demo"): (
        "creates .venv and installs the project; " + DEMO_NEEDS_KAFKA
    ),
    (
        "README.md",
        ".venv/bin/outcomes dev up && .venv/bin/outcomes topics ensure "
        "&& .venv/bin/python -m pytest -q",
    ): "starts the shared dev Kafka and runs this whole test suite (this test included)",
    ("docs/demo.md", "bash scripts/setup.sh && .venv/bin/outcomes demo"): (
        "creates .venv and installs the project; " + DEMO_NEEDS_KAFKA
    ),
    (
        "docs/demo.md",
        "outcomes loadgen --runs 10000 --workers 4 --rate 2000 \\\n"
        "    --padding-mean 20 --size-distribution exponential --malformed 5 \\\n"
        "    --run-prefix soak-1 --out /tmp/soak-1.jsonl",
    ): "publishes 10,000 runs to a Kafka broker (tests/test_loadgen.py covers loadgen)",
    (
        "docs/benchmarks.md",
        ".venv/bin/outcomes bench                       # end to end, full: about 2 minutes "
        "on 2 cores",
    ): "the end-to-end benchmark: needs Kafka and takes about 2 minutes",
    (
        "docs/benchmarks.md",
        ".venv/bin/outcomes bench --quick               # about 1 minute",
    ): "the end-to-end benchmark: needs Kafka and takes about a minute",
    (
        "docs/clickhouse.md",
        "outcomes sink [--bootstrap B] [--clickhouse DSN] [--until-idle SECONDS]",
    ): SYNOPSIS,
    (
        "docs/clickhouse.md",
        "OUTCOMES_PURGE_CREDENTIAL=… outcomes purge --run RUN_ID [--clickhouse DSN] "
        "[--reason TEXT]",
    ): SYNOPSIS,
    (
        "docs/clickhouse.md",
        "outcomes purge --run RUN_ID --credential-file /run/secrets/purge [--actor NAME]",
    ): SYNOPSIS,
    ("docs/kafka.md", ".venv/bin/outcomes dev up             # Kafka 4.1.1 on 127.0.0.1:9092"): (
        "starts Kafka on port 9092, where the shared dev broker already runs"
    ),
    (
        "docs/kafka.md",
        ".venv/bin/outcomes topics ensure      # every topic of the pipeline",
    ): "creates topics on the shared dev broker (tests/test_topics.py covers it, kafka)",
    ("docs/kafka.md", ".venv/bin/outcomes dev down           # stop it (data is kept)"): (
        "stops the dev Kafka other tests and sessions use"
    ),
    (
        "docs/troubleshooting.md",
        ".venv/bin/outcomes dev down          # stop exactly the broker processes `dev up` started",
    ): "stops the dev Kafka other tests and sessions use",
    (
        "docs/troubleshooting.md",
        ".venv/bin/outcomes dev down --purge  # ... and delete their data",
    ): "stops the dev Kafka other tests and sessions use, and deletes its data",
    ("docs/troubleshooting.md", "outcomes <command>: error: <message>"): (
        "the shape of an error line, not a command"
    ),
    (
        "README.md",
        ".venv/bin/outcomes dev up                 # real Kafka 4.1 (KRaft) on 127.0.0.1:9092; "
        "--brokers 3 for fault tests",
    ): "starts Kafka on port 9092, where the shared dev broker already runs",
    (
        "README.md",
        ".venv/bin/outcomes topics ensure          # every topic from one declared table; "
        "reports drift",
    ): "creates topics on the shared dev broker (tests/test_topics.py covers it, kafka)",
    (
        "README.md",
        ".venv/bin/outcomes produce events.jsonl   # JSONL or Avro container files -> Avro "
        "topics, keyed by run_id",
    ): "publishes to Kafka, and events.jsonl stands for the reader's own file "
    "(tests/test_produce_cli.py covers produce, kafka)",
    (
        "README.md",
        ".venv/bin/outcomes worker                 # the stream pipeline (--engine batch|faust; "
        "SIGTERM stops it gracefully)",
    ): "a long-running worker that needs Kafka (tests/test_worker_*.py run it, kafka)",
    (
        "README.md",
        ".venv/bin/outcomes sink                   # output topics -> ClickHouse, exactly-once "
        "effect",
    ): "a long-running sink that needs Kafka (tests/test_sink.py runs it, kafka)",
    (
        "README.md",
        ".venv/bin/outcomes dev down",
    ): "stops the dev Kafka other tests and sessions use",
}

_BENCHMARK = (
    "a benchmark: it prints figures after minutes of load and asserts nothing "
    "(docs/benchmarks.md); its options are parsed here"
)
_SUITE = "runs this whole test suite (this test included); CI runs it (.ci/run)"
_SETUP = "creates .venv and installs the project into it; CI runs it first (.ci/run)"
NOT_RUN.update(
    {
        (
            "README.md",
            '.venv/bin/python -m pytest -q -m "not kafka"     # the tests that need no broker',
        ): _SUITE,
        (
            "docs/kafka.md",
            ".venv/bin/python -m pytest -q         # Kafka tests use the running broker",
        ): _SUITE,
        (
            "docs/kafka.md",
            "bash scripts/setup.sh                 # .venv with outcomes and its dev extras",
        ): _SETUP,
        ("docs/kafka.md", "docker compose -f docker/compose.yaml up -d --build"): (
            "builds the images and starts the containers: needs a Docker engine; "
            "tests/test_docker_files.py checks docker/compose.yaml with Compose's own loader"
        ),
        ("docs/kafka.md", "docker compose -f docker/compose.yaml ps"): (
            "lists the containers the line before starts (a Docker engine's)"
        ),
        **{
            (doc, line): (
                "serves the run browser until stopped; tests/test_browser_ui.py drives "
                "`outcomes ui` in Chromium"
            )
            for doc, line in (
                (
                    "README.md",
                    ".venv/bin/outcomes ui   # the demo's last line prints this command; "
                    "open the address it prints",
                ),
                (
                    "docs/browser.md",
                    "outcomes ui                                   # the configured database, "
                    "live from Kafka",
                ),
                ("docs/browser.md", "outcomes ui --clickhouse chdb:///data/outcomes --port 8080"),
                (
                    "docs/browser.md",
                    "outcomes ui --no-live                         # no broker needed; pages "
                    "load on request",
                ),
            )
        },
        **{
            ("docs/integrations.md", line): (
                "writes a Claude Code settings.json (the project's or the user's); "
                "tests/test_hook_install.py runs it into temporary folders"
            )
            for line in (
                ".venv/bin/outcomes hook install                 # the project's "
                ".claude/settings.json",
                ".venv/bin/outcomes hook install --scope user    # ~/.claude/settings.json",
                ".venv/bin/outcomes hook install --bootstrap broker-1:9092",
            )
        },
    }
)

# Commands not run here by what they are: (pattern the line matches, reason).
NOT_RUN_KINDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^\.venv/bin/python -m outcomes\.bench\.bench_\w+"), _BENCHMARK),
    (
        re.compile(r"^\.venv/bin/python -m outcomes\.bench\.plots "),
        "rewrites the committed images under docs/img from bench results; its options are "
        "parsed here",
    ),
)


def not_run_reason(command: DocCommand) -> str | None:
    """Why `command` is not run here, or None when it runs."""
    listed = NOT_RUN.get((command.doc, command.text))
    if listed is not None:
        return listed
    return next((why for kind, why in NOT_RUN_KINDS if kind.match(command.text)), None)


# Sequences run in order as printed (each line a command of its own): they read
# samples/five_file_run.jsonl relative to the checkout and hand files on to the next line.
# doc -> text each command of its block prints, in order.
IN_ORDER: dict[str, tuple[str, ...]] = {
    "README.md": (
        "revisions 3",
        "Run run-five-files: then (revision 1) and now (revision 3)",
        "revision run-five-files:3",
        "verified",
    ),
    "docs/reports.md": (
        "revisions 3",
        "Run run-five-files: revision 3 of 3",
        "# Run run-five-files: then (revision 1) and now (revision 3)",
        "revision run-five-files:3",
        "verified",
    ),
}

# Lines that run at the top of the checkout, as a developer types them (README.md,
# Development): the lint and the type check pass on what is committed.
AT_ROOT: dict[str, str] = {
    ".venv/bin/ruff check . && .venv/bin/ruff format --check .": "already formatted",
    ".venv/bin/mypy": "Success: no issues found",
}

# The curl line of docs/clickhouse.md runs against a live endpoint (test_live_endpoint_*).
LIVE_ENDPOINT_PREFIX = 'curl -s -u "analyst:'

# Commands run once, as printed, with what they answer here (a fresh state dir: no
# dev stack recorded in it): (exit code, text the output holds).
RUN_ONCE: dict[str, tuple[int, str]] = {
    ".venv/bin/outcomes clickhouse migrate     # tables and views (chdb://.state/chdb by "
    "default)": (0, "is up to date"),
    ".venv/bin/outcomes dev status         # what runs, its memory, whether it answers": (
        1,
        "dev Kafka is not running",
    ),
    ".venv/bin/outcomes dev status        # what runs, and whether every node answers": (
        1,
        "dev Kafka is not running",
    ),
}


def query_commands() -> list[DocCommand]:
    """The doc commands that run a saved block (`query.sql`)."""
    return [c for c in doc_commands() if "query.sql" in c.text]


def literal_queries() -> list[str]:
    """The doc commands that run a statement written out on the line (each text once)."""
    texts = (c.text for c in doc_commands() if "query.sql" not in c.text)
    return sorted({t for t in texts if re.match(r"(?:\.venv/bin/)?outcomes query \S", t)})


def in_order(doc: str) -> list[DocCommand]:
    """The commands of `doc`'s block that begins with the replay of the sample, in order."""
    commands = doc_commands()
    starts = [
        c for c in commands if c.doc == doc and " replay samples/five_file_run.jsonl" in c.text
    ]
    assert len(starts) == 1, f"{doc}: {len(starts)} blocks replay the sample"
    return [c for c in commands if c.doc == doc and c.block == starts[0].block]


def live_endpoint_commands() -> list[DocCommand]:
    return [c for c in doc_commands() if c.text.startswith(LIVE_ENDPOINT_PREFIX)]


def _accounted(command: DocCommand) -> bool:
    return (
        not_run_reason(command) is not None
        or command.text in RUN_ONCE
        or "query.sql" in command.text
        or command.text in literal_queries()
        or command.text in AT_ROOT
        or command in live_endpoint_commands()
        or (command.doc in IN_ORDER and command in in_order(command.doc))
    )


def test_every_doc_command_is_run_or_listed_with_a_reason() -> None:
    commands = doc_commands()
    assert len(commands) > 10, "the extraction found too few commands"
    unaccounted = [str(c) for c in commands if not _accounted(c)]
    assert not unaccounted, "doc commands neither run nor listed in NOT_RUN:\n" + "\n".join(
        unaccounted
    )
    shown = {(c.doc, c.text) for c in commands}
    stale = [f"{doc}: {text}" for doc, text in NOT_RUN if (doc, text) not in shown]
    assert not stale, "NOT_RUN lists commands the docs no longer show:\n" + "\n".join(stale)
    assert {c.text for c in commands} >= set(RUN_ONCE) | set(AT_ROOT)
    assert literal_queries(), "README shows a query written out"
    assert len(query_commands()) >= 2 and doc_queries()
    assert [len(in_order(doc)) for doc in IN_ORDER] == [len(v) for v in IN_ORDER.values()]
    assert live_endpoint_commands()
    for kind, _ in NOT_RUN_KINDS:
        assert any(kind.match(c.text) for c in commands), f"no doc command is {kind.pattern}"


def test_every_line_of_a_shell_block_is_a_command() -> None:
    """A ```bash or ```sh line the extraction did not take for a command would be
    neither run nor listed: each one is a command or a comment."""
    stray = [
        f"{doc}:{n}: {text}"
        for doc, _, n, lang, text in _shell_lines()
        if lang in SHELL and text.strip() and not text.lstrip().startswith("#")
        if not _is_command(text)
    ]
    assert not stray, "shell lines that are not recognised commands:\n" + "\n".join(stray)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """A working directory with `.venv` (for `.venv/bin/outcomes`), the sample chDB
    database as OUTCOMES_CLICKHOUSE, a fresh state dir, and nothing of this process's
    chDB engine open (a subprocess opens the directory)."""
    root = tmp_path_factory.mktemp("docs-commands")
    with sample_database(root) as dsn:
        clickhouse.close_all()
        (root / ".venv").symlink_to(ROOT / ".venv")
        env = {k: v for k, v in os.environ.items() if not k.startswith("OUTCOMES_")}
        env.update(
            OUTCOMES_CLICKHOUSE=dsn,
            OUTCOMES_STATE_DIR=str(root / "state"),
            PATH=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}",
            COLUMNS="200",
        )
        yield root, env


def run_as_printed(
    command: str, cwd: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def expected_rows(dsn: str, sql: str) -> int:
    try:
        return len(run_query(dsn, sql).rows)
    finally:
        clickhouse.close_all()


def check_output(command: str, output: str, rows: int) -> None:
    """The output is the block's answer in the command's format, `rows` rows of it."""
    if "--format json" in command:
        assert len(orjson.loads(output)) == rows
    elif "--format csv" in command:
        assert len(list(csv.reader(io.StringIO(output)))) == rows + 1
    else:
        assert f"{rows} row{'s' if rows != 1 else ''}" in output


def _run_query_command(
    query: DocQuery, command: DocCommand, sandbox: tuple[Path, dict[str, str]]
) -> None:
    cwd, env = sandbox
    rows = expected_rows(env["OUTCOMES_CLICKHOUSE"], query.sql)
    (cwd / "query.sql").write_text(query.sql)
    done = run_as_printed(command.text, cwd, env)
    assert done.returncode == 0, f"{command} with {query}: {done.stderr}"
    assert done.stderr == ""
    check_output(command.text, done.stdout, rows)


def _pairs() -> list[tuple[DocQuery, DocCommand]]:
    """Each SQL block once, each query command at least twice (round robin)."""
    commands = query_commands()
    queries = doc_queries()
    count = max(len(queries), 2 * len(commands))
    return [(queries[i % len(queries)], commands[i % len(commands)]) for i in range(count)]


@pytest.mark.parametrize(("query", "command"), _pairs(), ids=str)
def test_doc_query_runs_as_printed(
    query: DocQuery, command: DocCommand, sandbox: tuple[Path, dict[str, str]]
) -> None:
    _run_query_command(query, command, sandbox)


@pytest.mark.slow
@pytest.mark.parametrize("command", query_commands(), ids=str)
@pytest.mark.parametrize("query", doc_queries(), ids=str)
def test_every_doc_query_with_every_command(
    query: DocQuery, command: DocCommand, sandbox: tuple[Path, dict[str, str]]
) -> None:
    _run_query_command(query, command, sandbox)


@pytest.mark.parametrize("command", sorted(RUN_ONCE))
def test_doc_command_runs_as_printed(command: str, sandbox: tuple[Path, dict[str, str]]) -> None:
    cwd, env = sandbox
    code, needle = RUN_ONCE[command]
    done = run_as_printed(command, cwd, env)
    assert done.returncode == code, done.stdout + done.stderr
    assert needle in done.stdout + done.stderr


def test_the_old_analyst_command_works_too(sandbox: tuple[Path, dict[str, str]]) -> None:
    """`outcomes query "$(cat query.sql)"`, the form the docs used to print: a block
    starts with `-- name:`, which is the statement, not an option."""
    cwd, env = sandbox
    query = doc_queries()[0]
    (cwd / "query.sql").write_text(query.sql)
    done = run_as_printed('outcomes query --format json "$(cat query.sql)"', cwd, env)
    assert done.returncode == 0, done.stderr
    check_output("--format json", done.stdout, expected_rows(env["OUTCOMES_CLICKHOUSE"], query.sql))


def test_demo_says_the_dev_stack_still_runs_and_how_to_stop_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """docs/demo.md: the demo's last line says the dev Kafka keeps running and that
    `outcomes dev down` stops it; nothing when no dev stack of that state dir runs."""
    from outcomes.common.settings import Settings
    from outcomes.devtools import demo, devstack

    settings = Settings.load(state_dir=tmp_path)
    assert demo.dev_stack_note(settings) is None  # no stack recorded there
    node = devstack.RunningNode(
        node_id=1,
        pid=1,
        port=9092,
        controller_port=9093,
        config="",
        log_dir="",
        proc_start=None,
    )
    stack = devstack.Stack(
        version="4.1.1",
        brokers=1,
        base_port=9092,
        bootstrap="127.0.0.1:9092",
        started_at=0.0,
        nodes=(node,),
    )
    monkeypatch.setattr(devstack, "read_stack", lambda _settings: stack)
    monkeypatch.setattr(devstack, "is_alive", lambda _node: True)
    note = demo.dev_stack_note(settings)
    assert note is not None
    assert "still running at 127.0.0.1:9092" in note and "`outcomes dev down`" in note
    assert f"\n{note}\n" in (ROOT / "docs" / "demo.md").read_text()  # shown as printed
    assert f"`outcomes dev down --state-dir {tmp_path}`" in (
        demo.dev_stack_note(settings, tmp_path) or ""
    )
    monkeypatch.setattr(devstack, "is_alive", lambda _node: False)
    assert demo.dev_stack_note(settings) is None


@pytest.mark.parametrize("command", literal_queries())
def test_doc_literal_query_runs_as_printed(
    command: str, sandbox: tuple[Path, dict[str, str]]
) -> None:
    cwd, env = sandbox
    done = run_as_printed(command, cwd, env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and " row" in done.stdout


# --------------------------------------------------------------------------- not run here


def without_comment(line: str) -> str:
    """The line without its trailing shell comment (an unquoted `#` starting a word)."""
    quote = None
    for i, char in enumerate(line):
        if quote is not None:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line


def test_without_comment() -> None:
    assert without_comment("a --b 1   # where a replay's time goes") == "a --b 1"
    assert without_comment("curl -u \"x#y\" 'z # w' # c") == "curl -u \"x#y\" 'z # w'"
    assert without_comment("jq -r '.token // env.X' f") == "jq -r '.token // env.X' f"


def _parse_check(command: str) -> str | None:
    """The line with `--help` added, when it is one `outcomes` or `python -m` invocation
    whose options a `--help` still parses (not a synopsis, not a chain); for a module
    run without options, a check that it can be imported."""
    text = without_comment(command)
    if any(sep in text for sep in ("&&", "||", "|", ";", "[", "<")):
        return None
    module = re.fullmatch(r"\.venv/bin/python -m (outcomes\.[\w.]+)", text)
    if module is not None:  # no options to parse: the module is there
        spec = (
            f"import importlib.util as u, sys; sys.exit(u.find_spec({module.group(1)!r}) is None)"
        )
        return f'.venv/bin/python -c "{spec}" && echo usage: importable'
    if re.match(r"(?:\.venv/bin/)?outcomes \S|\.venv/bin/python -m outcomes\.", text) is None:
        return None
    return f"{text} --help"


def parse_checks() -> list[tuple[str, str]]:
    found = []
    for command in doc_commands():
        if not_run_reason(command) is not None and (check := _parse_check(command.text)):
            found.append((str(command), check))
    return found


@pytest.mark.parametrize(("command", "check"), parse_checks(), ids=[c for c, _ in parse_checks()])
def test_a_command_not_run_here_still_parses_as_printed(
    command: str, check: str, sandbox: tuple[Path, dict[str, str]]
) -> None:
    """Its program exists and takes the options the docs give it."""
    cwd, env = sandbox
    done = run_as_printed(check, cwd, env)
    assert done.returncode == 0, f"{check}: {done.stdout}{done.stderr}"
    assert "usage:" in done.stdout.lower()


def test_the_parse_checks_cover_the_single_commands() -> None:
    checked = {c for c, _ in parse_checks()}
    assert any("outcomes worker" in c for c in checked)
    assert any("outcomes loadgen --runs 10000" in c for c in checked)
    assert any("outcomes.bench.plots" in c for c in checked)
    assert not any("[--" in c or "&&" in c for c in checked)


# --------------------------------------------------------------------------- run in order


FIVE_FILES = (Path("/tmp/five.jsonl"), Path("/tmp/five.zip"))


@pytest.fixture
def five_file_lock() -> Iterator[None]:
    """The sequences write /tmp/five.jsonl and /tmp/five.zip as printed: one at a time
    across processes, each starting as a first-time reader does (`export` refuses to
    replace a bundle without --force)."""
    with open("/tmp/outcomes-docs-five.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            for path in FIVE_FILES:
                path.unlink(missing_ok=True)
            yield
        finally:
            for path in FIVE_FILES:
                path.unlink(missing_ok=True)
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.mark.parametrize("doc", sorted(IN_ORDER))
def test_doc_sequence_runs_in_order_as_printed(
    doc: str, sandbox: tuple[Path, dict[str, str]], five_file_lock: None
) -> None:
    cwd, env = sandbox
    if not (cwd / "samples").exists():
        (cwd / "samples").symlink_to(ROOT / "samples")
    for command, needle in zip(in_order(doc), IN_ORDER[doc], strict=True):
        done = run_as_printed(command.text, cwd, env)
        assert done.returncode == 0, f"{command}: {done.stderr}"
        assert needle in done.stdout + done.stderr, f"{command}: {done.stdout}{done.stderr}"


# --------------------------------------------------------------------------- at the top


@pytest.mark.parametrize(
    "command",
    [pytest.param(c, marks=[pytest.mark.slow] if "mypy" in c else []) for c in sorted(AT_ROOT)],
)
def test_development_command_passes_at_the_top_of_the_checkout(command: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTCOMES_")}
    done = subprocess.run(
        ["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert AT_ROOT[command] in done.stdout


# --------------------------------------------------------------------------- code samples

# ```python blocks another test runs as printed: (doc, a line of the block) -> that test.
CODE_RUN_ELSEWHERE: dict[tuple[str, str], str] = {
    ("README.md", 'run_id = "run-2026-11-30-0042"'): (
        "tests/test_sdk_docs.py::test_sdk_example_publishes_its_events (the broker)"
    ),
    ("docs/browser.md", "browser = Browser(Session(dsn), token, Feed())"): (
        "tests/test_browser_app.py::"
        "test_mounted_behind_the_door_at_a_path_every_link_and_the_cookie_keep_it"
    ),
}
# ```python blocks this file runs: (doc, a line of the block) -> the test.
CODE_RUN_HERE: dict[tuple[str, str], str] = {
    ("docs/clickhouse.md", 'ep = json.load(open(".state/chdb.live.json"))'): (
        "test_live_endpoint_samples_run_as_printed"
    ),
    ("docs/consumers.md", "class Receiver(BaseHTTPRequestHandler):"): (
        "test_webhook_receiver_sample_runs_as_printed"
    ),
    ("README.md", "def on_notification(n: Notification) -> None:"): (
        "test_consumer_samples_run_as_printed"
    ),
    ("docs/consumers.md", 'db = sqlite3.connect("billing.db", isolation_level=None)'): (
        "test_consumer_samples_run_as_printed"
    ),
}


def test_every_python_block_is_run_here_or_named() -> None:
    named = {**CODE_RUN_ELSEWHERE, **CODE_RUN_HERE}
    claimed = {str(code_block(doc, marker)) for doc, marker in named}
    assert len(claimed) == len(named), "two entries name one block"
    unnamed = [str(c) for c in doc_code() if str(c) not in claimed]
    assert not unnamed, "python blocks neither run nor named:\n" + "\n".join(unnamed)
    here = {test for test in CODE_RUN_HERE.values()}
    assert here <= set(globals()), here - set(globals())


def run_code(
    code: DocCode, cwd: Path, env: Mapping[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """A block as a script of its own, with the venv's Python (like the docs' reader)."""
    script = cwd / f"{Path(code.doc).stem}_{code.line}.py"
    script.write_text(code.code)
    return subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), str(script)],
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize("password", [None, "the analyst password of this test"])
def test_live_endpoint_samples_run_as_printed(
    password: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/clickhouse.md's curl line and clickhouse-connect sample, in a directory whose
    `.state/chdb` a sink's endpoint serves: with its random token, and with
    OUTCOMES_ANALYST_PASSWORD (then the address file holds no token)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTCOMES_")}
    if password is None:
        monkeypatch.delenv(live.PASSWORD_ENV, raising=False)
    else:
        monkeypatch.setenv(live.PASSWORD_ENV, password)
        env[live.PASSWORD_ENV] = password
    clickhouse.close_all()
    with sample_database(tmp_path / ".state") as dsn:
        target = clickhouse.parse_dsn(dsn)
        assert target.path == str(tmp_path / ".state" / "chdb")
        clickhouse.connect(dsn)
        with live.LiveServer(target.path, target.database):
            assert ("token" in orjson.loads(live.endpoint_file(target.path).read_bytes())) == (
                password is None
            )
            expected = expected_rows(dsn, "SELECT * FROM current_accounts")
            clickhouse.connect(dsn)
            for command in live_endpoint_commands():
                done = subprocess.run(
                    ["bash", "-c", command.text],
                    cwd=tmp_path,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                assert done.returncode == 0, done.stderr
                assert done.stdout.strip() == str(expected), done.stdout
            code = code_block("docs/clickhouse.md", 'ep = json.load(open(".state/chdb.live.json"))')
            sample = code.code.rstrip().splitlines()
            # The last line is an expression the reader looks at: print it here.
            checked = replace(code, code="\n".join([*sample[:-1], f"print(len({sample[-1]}))"]))
            done = run_code(checked, tmp_path, env)
            assert done.returncode == 0, done.stderr
            assert done.stdout.strip() == str(expected)
    clickhouse.close_all()


def _post(port: int, body: bytes, headers: Mapping[str, str]) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("POST", "/", body, dict(headers))
        return connection.getresponse().status
    finally:
        connection.close()


def test_webhook_receiver_sample_runs_as_printed(tmp_path: Path) -> None:
    """docs/consumers.md's receiver, as printed (it listens on 127.0.0.1:8080): a signed
    request is acted on once and answered 204 every time, a tampered one 401."""
    code = code_block("docs/consumers.md", "class Receiver(BaseHTTPRequestHandler):")
    port = int(re.search(r'HTTPServer\(\("127\.0\.0\.1", (\d+)\)', code.code).group(1))  # type: ignore[union-attr]
    with socket.socket() as probe:
        taken = probe.connect_ex(("127.0.0.1", port)) == 0
    assert not taken, f"port {port}, which the sample listens on, is taken on this machine"
    secret = "a-webhook-secret-for-the-docs-test"
    env = {**os.environ, "OUTCOMES_RELAY_SECRET": secret, "PYTHONUNBUFFERED": "1"}
    script = tmp_path / "receiver.py"
    script.write_text(code.code)
    receiver = subprocess.Popen(
        [str(ROOT / ".venv" / "bin" / "python"), str(script)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def listening() -> bool:
            assert receiver.poll() is None, receiver.communicate()[1]
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

        assert poll_until(listening, timeout=30)
        body = orjson.dumps({"run_id": "run-docs-receiver", "status": "complete"})
        headers = {**sign(secret, body), IDEMPOTENCY_HEADER: "run-docs-receiver:1"}
        assert _post(port, body, headers) == 204
        assert _post(port, body, headers) == 204  # a redelivery: answered, not acted on
        assert _post(port, body + b" ", headers) == 401
    finally:
        receiver.terminate()
        out, _ = receiver.communicate(timeout=10)
    assert out.splitlines() == ["run-docs-receiver complete"]


CONSUMER_SAMPLES = {
    "README.md": "def on_notification(n: Notification) -> None:",
    "docs/consumers.md": 'db = sqlite3.connect("billing.db", isolation_level=None)',
}


def _invoiced(db: Path, run_id: str) -> bool:
    if not db.exists():
        return False
    with closing(sqlite3.connect(db)) as conn:
        query = "SELECT status FROM invoices WHERE run_id = ?"
        statuses = {row[0] for row in conn.execute(query, (run_id,))}
    return statuses == {"complete"}


@pytest.mark.kafka
@pytest.mark.parametrize("doc", sorted(CONSUMER_SAMPLES))
def test_consumer_samples_run_as_printed(
    doc: str, kafka_bootstrap: str, kafka_config: dict[str, str], tmp_path: Path
) -> None:
    """README.md's consumer (it prints) and docs/consumers.md's (it records the id and an
    invoice in sqlite), each as printed in a process of its own against the broker, in
    the group it names: a notification published meanwhile is handled. A sample runs
    until stopped, and a group without committed offsets starts at the end of the topic
    once it has its partitions, so the test publishes a new revision every 2 s until it
    sees the effect, then stops the process."""
    code = code_block(doc, CONSUMER_SAMPLES[doc])
    run_id = f"docs-consumer-{uuid.uuid4().hex[:12]}"
    env = {**os.environ, "OUTCOMES_BOOTSTRAP": kafka_bootstrap, "PYTHONUNBUFFERED": "1"}
    script = tmp_path / "sample.py"
    script.write_text(code.code)
    out_path = tmp_path / "out.txt"
    with out_path.open("w") as out:
        process = subprocess.Popen(
            [str(ROOT / ".venv" / "bin" / "python"), str(script)],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    revisions = iter(range(1, 1_000))

    def handled() -> bool:
        assert process.poll() is None, out_path.read_text()
        n = next(revisions)
        publish(
            kafka_config,
            OUTPUT_TOPICS["notification"],
            [notification(run_id, n, "complete", None, n % 60)],
        )
        if "sqlite3" in code.code:
            return _invoiced(tmp_path / "billing.db", run_id)
        return f"{run_id} revision" in out_path.read_text()

    try:
        assert poll_until(handled, timeout=90, interval=2.0), out_path.read_text()
    finally:
        process.send_signal(signal.SIGINT)  # the `with` block closes it: it leaves the group
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if "sqlite3" not in code.code:
        line = next(x for x in out_path.read_text().splitlines() if x.startswith(run_id))
        assert re.fullmatch(rf"{run_id} revision \d+: None -> complete", line), line


# --------------------------------------------------------------------------- help texts

_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
# "five output topics", "every output topic (six)", "output topics, six"
COUNTED_TOPICS = re.compile(r"\b(\w+) output topics\b|\boutput topics?\W{1,3}(\w+)\b")


def test_help_texts_count_the_output_topics_right() -> None:
    """`outcomes --help` and each command's `--help` name as many output topics as there
    are (`outcomes --help` and `sink --help` said five when there were six)."""
    from click.testing import CliRunner

    from outcomes.cli.main import COMMANDS, main

    runner = CliRunner()
    texts = {"outcomes": runner.invoke(main, ["--help"]).output}
    for name in COMMANDS:
        texts[name] = runner.invoke(main, [name, "--help"]).output
    wrong = []
    for name, text in texts.items():
        flat = " ".join(text.split())
        for match in COUNTED_TOPICS.finditer(flat):
            word = match.group(1) or match.group(2)
            if _NUMBER_WORDS.get(word, len(OUTPUT_TOPICS)) != len(OUTPUT_TOPICS):
                wrong.append(f"{name}: {match.group(0)}")
    assert not wrong, f"there are {len(OUTPUT_TOPICS)} output topics: {wrong}"
