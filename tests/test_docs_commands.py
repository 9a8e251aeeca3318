"""Every `outcomes …` command and every SQL block the docs show, run exactly as printed.

The fenced blocks of README.md and docs/*.md are read; each line that runs `outcomes`
(or `.venv/bin/outcomes`) is a doc command, and each ```sql block a doc query. A doc
command either runs here, through `bash -c` with the line as printed, or is listed in
`NOT_RUN` with the reason; nothing is skipped silently, and a `NOT_RUN` entry the docs
no longer show fails the test too. Commands that read `query.sql` run with each SQL
block saved as `query.sql`, against the sample chDB database (tests/chdb_support.py)
named by `OUTCOMES_CLICKHOUSE`; the state dir is a temporary one, so no command here
touches the dev Kafka stack or `.state`.
"""

from __future__ import annotations

import csv
import io
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from outcomes.sinks import clickhouse
from outcomes.sinks.query import run_query
from tests.chdb_support import sample_database

pytestmark = pytest.mark.clickhouse
ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
# `outcomes` at a command position: line start, after && || | ; or env assignments.
RUNS_OUTCOMES = re.compile(
    r"(?:^|&&|\|\||[|;])\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:\.venv/bin/)?outcomes(?:\s|$)"
)


@dataclass(frozen=True)
class DocCommand:
    """One command line of a fenced block (backslash continuations joined)."""

    doc: str
    line: int
    text: str

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


def doc_commands() -> list[DocCommand]:
    found: list[DocCommand] = []
    for doc, first, _lang, body in _fenced():
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
            if RUNS_OUTCOMES.search(text):
                found.append(DocCommand(doc, start, text))
    return found


def doc_queries() -> list[DocQuery]:
    return [DocQuery(doc, line, body) for doc, line, lang, body in _fenced() if lang == "sql"]


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

_READS_SAMPLE = (
    "reads samples/five_file_run.jsonl (relative to the repository) or the replay output "
    "the line before writes; tests/test_show.py and tests/test_export.py run show, export "
    "and verify-bundle on that sample"
)
_EXPORT = (
    "export run-five-files --from /tmp/five.jsonl --events samples/five_file_run.jsonl "
    "--out /tmp/five.zip"
)
for _doc, _prefix, _shown in (
    ("README.md", ".venv/bin/outcomes ", ("--revision 1",)),
    ("docs/reports.md", "outcomes ", ("", "--revision 1 --format markdown")),
):
    for _args in (
        "replay samples/five_file_run.jsonl --out /tmp/five.jsonl",
        *(f"show run-five-files --from /tmp/five.jsonl {x}".rstrip() for x in _shown),
        _EXPORT,
        "verify-bundle /tmp/five.zip",
    ):
        NOT_RUN[(_doc, _prefix + _args)] = _READS_SAMPLE

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


def test_every_doc_command_is_run_or_listed_with_a_reason() -> None:
    commands = doc_commands()
    assert len(commands) > 10, "the extraction found too few commands"
    unaccounted = [
        str(c)
        for c in commands
        if (c.doc, c.text) not in NOT_RUN
        and c.text not in RUN_ONCE
        and "query.sql" not in c.text
        and c.text not in literal_queries()
    ]
    assert not unaccounted, "doc commands neither run nor listed in NOT_RUN:\n" + "\n".join(
        unaccounted
    )
    shown = {(c.doc, c.text) for c in commands}
    stale = [f"{doc}: {text}" for doc, text in NOT_RUN if (doc, text) not in shown]
    assert not stale, "NOT_RUN lists commands the docs no longer show:\n" + "\n".join(stale)
    assert {c.text for c in commands} >= set(RUN_ONCE)
    assert literal_queries(), "README shows a query written out"
    assert len(query_commands()) >= 2 and doc_queries()


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
