"""`outcomes demo`: the whole pipeline on one machine, from agent events to analyst queries.

Steps: start the dev Kafka if nothing answers (downloading it on first use), ensure the
topics and the ClickHouse schema, publish N seeded runs from K simulated agent workers
(plus a few malformed messages), run `outcomes worker` and then `outcomes sink` until
idle as subprocesses, and print what ClickHouse now says about those runs. The runs are
narrated (`outcomes.devtools.workload`): each agent's final message is written from its
run's events, and a share of them overclaims or leaves a failure out, so the summary
shows claims contradicted and omitted beside those supported. The summary fits 80
columns and ends with the `outcomes ui` command that opens the same database.

A demo only ever looks at what it produced: its run ids share a prefix unique to the
invocation (`demo-<UTC timestamp>`), every query filters on it, and the worker's and the
sink's consumer groups (new ones per demo) start at the topics' current end offsets, so
earlier traffic on a long-lived broker is neither re-processed nor counted.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Final

import orjson

from outcomes.common.retry import Deadline
from outcomes.common.settings import Settings
from outcomes.devtools import devstack
from outcomes.devtools.loadgen import (
    LoadResult,
    LoadSpec,
    Origin,
    default_prefix,
    plan_runs,
    publish_load,
)
from outcomes.devtools.workload import Event
from outcomes.reducers.catalog import INPUT_TOPICS, OUTPUT_TOPICS, run_log_topic
from outcomes.reducers.errors import OutcomesError
from outcomes.sinks import clickhouse as ch
from outcomes.sinks import schema
from outcomes.sinks.query import run_query
from outcomes.streams.topics import TopicsError, cluster_brokers, ensure_topics
from outcomes.streams.topics import end_offsets as topic_ends

STOP_GRACE_S = 20.0
"""How long a child gets to exit after SIGTERM before it is killed."""

CONTRADICTED_SHOWN = 5
"""Contradicted claims the summary quotes (one per reason)."""

SUMMARY_WIDTH = 80
"""The summary is laid out for a terminal this wide (or the terminal, if narrower)."""

SHOWCASE_SCENARIO = "contradicting_receipts"
"""The scenario whose first run the demo renders in full (it is revised and contradicts)."""


class DemoError(OutcomesError):
    """The demo could not finish. Operators: the message names the failing step; the
    worker's and sink's logs are kept under `<state_dir>/demo/<run prefix>/`."""


# --------------------------------------------------------------------------- plumbing


def ensure_broker(settings: Settings, echo: Callable[[str], None]) -> bool:
    """Make sure a broker answers at the bootstrap; start the dev stack if it is local.

    Returns True when this call started the dev stack. A non-local bootstrap that does
    not answer is an error: the demo never starts brokers somewhere it was not asked to.
    """
    if cluster_brokers(settings.bootstrap, timeout=5.0) is not None:
        return False
    host, _, port = settings.bootstrap.partition(":")
    if "," in settings.bootstrap or host not in ("127.0.0.1", "localhost") or not port.isdigit():
        raise DemoError(
            f"no Kafka broker answers at {settings.bootstrap}; start it, or unset "
            "OUTCOMES_BOOTSTRAP to let the demo run the local dev stack"
        )
    echo(f"no broker at {settings.bootstrap}: starting the dev Kafka stack (`outcomes dev up`)")
    result = devstack.up(settings, devstack.Layout(1, int(port)), echo=echo)
    how = "downloaded and started" if result.downloaded else "started"
    echo(f"Kafka {result.stack.version} {how} in {result.seconds:.0f} s")
    return result.started


def end_offsets(settings: Settings, topics: Sequence[str]) -> dict[tuple[str, int], int]:
    """The current end (high watermark) of every partition of `topics`."""
    try:
        return topic_ends(settings.kafka_config(), topics)
    except TopicsError as exc:
        raise DemoError(str(exc)) from exc


def start_group_at(settings: Settings, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
    """Commit `offsets` for a new consumer group, so its first member starts there."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({**settings.kafka_config(), "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(
            offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()],
            asynchronous=False,
        )
    except KafkaException as exc:
        raise DemoError(f"could not position consumer group {group}: {exc}") from exc
    finally:
        consumer.close()


def committed_offsets(
    settings: Settings, group: str, partitions: Sequence[tuple[str, int]]
) -> dict[tuple[str, int], int]:
    """The offsets a group has committed (-1 where it has none)."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({**settings.kafka_config(), "group.id": group, "enable.auto.commit": False})
    try:
        found = consumer.committed([TopicPartition(t, p) for t, p in partitions], timeout=10)
    except KafkaException as exc:
        raise DemoError(f"reading offsets of group {group} failed: {exc}") from exc
    finally:
        consumer.close()
    return {(tp.topic, tp.partition): tp.offset for tp in found}


def delete_worker_internals(settings: Settings, app_id: str, echo: Callable[[str], None]) -> None:
    """Delete the topics faust created for `app_id` (table changelogs, assignor)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(dict[str, str | int | float | bool](settings.kafka_config()))
    try:
        names = [t for t in admin.list_topics(timeout=10).topics if t.startswith(f"{app_id}-")]
        if not names:
            return
        for name, future in admin.delete_topics(names, operation_timeout=30).items():
            try:
                future.result()
            except KafkaException as exc:
                echo(f"warning: could not delete internal topic {name}: {exc}")
    except KafkaException as exc:
        echo(f"warning: could not list internal topics of {app_id}: {exc}")


class Child:
    """A subprocess that is always stopped: SIGTERM, then SIGKILL after a grace period."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self._log: IO[bytes] | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Child:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("wb")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            self.argv, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, env=env
        )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def poll(self) -> int | None:
        assert self.proc is not None
        return self.proc.poll()

    def stop(self, grace: float = STOP_GRACE_S) -> int | None:
        """Stop the child if it still runs; return its exit code."""
        proc = self.proc
        code: int | None = None
        if proc is not None:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=grace)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            code = proc.returncode
        if self._log is not None:
            self._log.close()
            self._log = None
        return code

    def tail(self, lines: int = 3) -> str:
        """The last meaningful lines of the child's log, joined for a one-line error."""
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        picked = [line.strip() for line in text if line.strip()][-lines:]
        return " | ".join(picked) or "(empty log)"


def worker_argv(
    settings: Settings, app_id: str, *, until_idle: float | None, state_dir: Path
) -> list[str]:
    """`outcomes worker` for a pipeline run (no web endpoint, own table directory)."""
    argv = [sys.executable, "-m", "outcomes.cli", "worker", "--bootstrap", settings.bootstrap]
    argv += ["--app-id", app_id, "--no-web", "--state-dir", str(state_dir)]
    if until_idle is not None:
        argv += ["--until-idle", str(until_idle)]
    return argv


def sink_argv(
    settings: Settings,
    group: str,
    *,
    until_idle: float | None,
    batch_seconds: float | None = None,
    run_log: str | None = None,
) -> list[str]:
    """`outcomes sink` into the settings' ClickHouse DSN with its own consumer group;
    `run_log`: the worker group's run log, whose events the sink records too."""
    argv = [sys.executable, "-m", "outcomes.cli", "sink", "--bootstrap", settings.bootstrap]
    argv += ["--clickhouse", settings.clickhouse_dsn, "--group-id", group]
    if run_log is not None:
        argv += ["--run-log", run_log]
    if until_idle is not None:
        argv += ["--until-idle", str(until_idle)]
    if batch_seconds is not None:
        argv += ["--batch-seconds", str(batch_seconds)]
    return argv


def migrate_clickhouse(dsn: str) -> None:
    """Create or upgrade the schema, then free the engine (chDB: one process per path)."""
    ch.close_all()
    try:
        schema.migrate(ch.connect(dsn))
    finally:
        ch.close_all()


# --------------------------------------------------------------------------- summary


@dataclass
class DemoSummary:
    """What ClickHouse says about the demo's runs."""

    runs_with_accounts: int = 0
    status_mix: dict[str, int] = field(default_factory=dict)
    workflow_mix: dict[str, int] = field(default_factory=dict)
    revisions: int = 0
    superseded_runs: int = 0
    status_changes: int = 0
    notifications: dict[str, int] = field(default_factory=dict)
    contradictions: dict[str, int] = field(default_factory=dict)
    findings: dict[str, int] = field(default_factory=dict)
    claim_verdicts: dict[str, int] = field(default_factory=dict)
    dead_letters: dict[str, int] = field(default_factory=dict)
    run_dead_letters: int = 0
    showcase: dict[str, Any] | None = None
    contradicted_claims: list[tuple[str, str, str]] = field(default_factory=list)
    """A few contradicted claims, one per reason: (run id, the words, the reason)."""


def _literal(text: str) -> str:
    """A ClickHouse string literal (run prefixes are validated, but quote anyway)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def query_summary(
    dsn: str, prefix: str, malformed: Sequence[Origin], showcase_run: str = ""
) -> DemoSummary:
    """Read the demo's runs back from ClickHouse through the analysts' query path."""
    mine = f"startsWith(run_id, {_literal(prefix + '-')})"

    def pairs(sql: str) -> dict[str, int]:
        return {str(row[0]): int(row[1]) for row in run_query(dsn, sql).rows}

    def scalar(sql: str) -> int:
        return int(run_query(dsn, sql).rows[0][0])

    # Hold one client open so the analyst queries share one engine instead of each
    # starting (and stopping) chDB; closed in the finally below.
    ch.connect(dsn)
    try:
        summary = DemoSummary()
        summary.runs_with_accounts = scalar(f"SELECT count() FROM current_accounts WHERE {mine}")
        summary.status_mix = pairs(
            f"SELECT status, count() AS n FROM current_accounts WHERE {mine} "
            "GROUP BY status ORDER BY n DESC, status"
        )
        summary.workflow_mix = pairs(
            f"SELECT workflow_status, count() AS n FROM current_accounts WHERE {mine} "
            "GROUP BY workflow_status ORDER BY n DESC, workflow_status"
        )
        summary.revisions = scalar(f"SELECT count() FROM account_revisions WHERE {mine}")
        superseded = run_query(
            dsn,
            "SELECT countIf(revisions > 1), countIf(first_status != current_status) FROM ("
            "SELECT run_id, count() AS revisions, argMin(status, revision) AS first_status, "
            f"argMax(status, revision) AS current_status FROM account_revisions WHERE {mine} "
            "GROUP BY run_id)",
        ).rows[0]
        summary.superseded_runs, summary.status_changes = int(superseded[0]), int(superseded[1])
        summary.notifications = pairs(
            f"SELECT kind, count() AS n FROM notifications WHERE {mine} GROUP BY kind ORDER BY kind"
        )
        summary.contradictions = pairs(
            f"SELECT kind, count() AS n FROM open_contradictions WHERE {mine} "
            "GROUP BY kind ORDER BY n DESC, kind"
        )
        summary.findings = pairs(
            f"SELECT kind, count() AS n FROM current_provenance_findings WHERE {mine} "
            "GROUP BY kind ORDER BY n DESC, kind"
        )
        # Current verdicts: each claim's latest settlement. Counting every settlement
        # would count a claim again each time a later revision changed it, and how often
        # that happens depends on the order the worker saw the events in.
        summary.claim_verdicts = pairs(
            f"SELECT verdict, count() AS n FROM current_claim_verdicts WHERE {mine} "
            "GROUP BY verdict ORDER BY n DESC, verdict"
        )
        summary.contradicted_claims = [
            (str(run_id), str(words), str(reason))
            for run_id, words, reason in run_query(
                dsn,
                f"SELECT run_id, span_text, reason FROM current_claim_verdicts WHERE {mine} "
                "AND verdict = 'contradicted' ORDER BY reason, run_id, span_start "
                f"LIMIT 1 BY reason LIMIT {CONTRADICTED_SHOWN}",
            ).rows
        ]
        if malformed:
            where = " OR ".join(
                f"(origin_topic = {_literal(o.topic)} AND origin_partition = {o.partition} "
                f"AND origin_offset = {o.offset})"
                for o in malformed
            )
            summary.dead_letters = pairs(
                f"SELECT reason, count() AS n FROM dead_letters WHERE {where} "
                "GROUP BY reason ORDER BY n DESC, reason"
            )
        summary.run_dead_letters = scalar(
            f"SELECT count() FROM dead_letters WHERE run_id IS NOT NULL AND {mine}"
        )
        # The showcase run if it has an account, else the most revised run.
        showcase = run_query(
            dsn,
            f"SELECT account FROM current_accounts WHERE {mine} "
            f"ORDER BY run_id != {_literal(showcase_run)}, revision DESC, run_id LIMIT 1",
        ).rows
        if showcase:
            summary.showcase = orjson.loads(showcase[0][0])
        return summary
    finally:
        ch.close_all()


# --------------------------------------------------------------------------- rendering

_STATUS_STYLE = {
    "complete": "bold green",
    "partially_complete": "yellow",
    "failed": "bold red",
    "blocked": "bold magenta",
    "unresolved": "bold cyan",
}
_STATE_STYLE = {"satisfied": "green", "unsatisfied": "red", "indeterminate": "cyan"}


NOT_RECORDED: Final = "not recorded"


def _shown(value: object) -> str:
    """A field as the panel prints it: a value the run did not record says so."""
    return NOT_RECORDED if value is None else str(value)


def _event_in_run(event_id: str, run_id: str) -> str:
    """An event id inside its run's panel: the part after the run id, when it has one."""
    return event_id.removeprefix(f"{run_id}:")


def account_panel(account: Mapping[str, Any]) -> Any:
    """One account revision as a readable rich panel (status, predicates, checks, ...)."""
    from rich.console import Group
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    status = str(account["status"])
    run_id = str(account["run_id"])
    head = Text()
    head.append("status ", style="dim")
    head.append(status, style=_STATUS_STYLE.get(status, "bold"))
    head.append("   workflow ", style="dim")
    head.append(str(account["workflow_status"]))
    head.append("   revision ", style="dim")
    head.append(str(account["revision"]))
    if account.get("supersedes"):
        head.append(f" (supersedes {account['supersedes']})", style="dim")
    head.append("\ngoal revision ", style="dim")
    head.append(_shown(account.get("goal_revision")))
    head.append("   candidate ", style="dim")
    head.append(_shown(account.get("candidate_snapshot")))
    dims = account.get("dimensions") or {}
    head.append("\n" + "   ".join(f"{k}={_shown(v)}" for k, v in dims.items()), style="dim")

    parts: list[Any] = [head]

    def table(title: str, columns: Sequence[str]) -> Table:
        t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, expand=True)
        for name in columns:
            t.add_column(name, overflow="fold")
        return t

    predicates = table("predicates", ("id", "required", "state", "reason"))
    for p in account.get("predicates", []):
        state = str(p["state"])
        predicates.add_row(
            str(p["id"]),
            "yes" if p["required"] else "no",
            Text(state, style=_STATE_STYLE.get(state, "")),
            str(p["reason"]),
        )
    parts.append(predicates)
    if account.get("checks"):
        checks = table("checks", ("label", "state", "result", "tests", "snapshot"))
        for c in account["checks"]:
            checks.add_row(
                str(c["label"]),
                str(c["state"]),
                _shown(c.get("result")),
                _shown(c.get("tests_executed")),
                _shown(c.get("candidate_snapshot")),
            )
        parts.append(checks)
    if account.get("effects"):
        effects = table("effects", ("intent", "class", "state", "receipts", "unresolved"))
        for e in account["effects"]:
            effects.add_row(
                str(e["intent_id"]),
                _shown(e.get("effect_class")),
                str(e["state"]),
                ", ".join(e.get("receipts", [])) or "-",
                "yes" if e.get("unresolved") else "no",
            )
        parts.append(effects)
    if account.get("contradictions"):
        contradictions = table("contradictions", ("subject", "kind", "evidence"))
        for c in account["contradictions"]:
            evidence = "; ".join(
                f"{e['value']} (event {_event_in_run(str(e['event_id']), run_id)})"
                for e in c["evidence"]
            )
            contradictions.add_row(str(c["subject"]), str(c["kind"]), evidence)
        parts.append(contradictions)
    if account.get("provenance_findings"):
        findings = table("provenance findings", ("kind", "subject"))
        for f in account["provenance_findings"]:
            findings.add_row(str(f["kind"]), str(f["subject"]))
        parts.append(findings)
    return Panel(Group(*parts), title=f"run {account['run_id']}", title_align="left")


def render_summary(console: Any, result: DemoResult) -> None:
    """Print the demo's summary tables and the showcase account, laid out for 80 columns:
    the count tables two a row at a fixed width (a long key is cut with an ellipsis,
    never wrapped), the quoted claims and the panel wrapping inside their cells."""
    from rich.table import Table
    from rich.text import Text

    s = result.summary
    width = min(int(console.width), SUMMARY_WIDTH)
    half = (width - 3) // 2

    def mix(title: str, counts: Mapping[str, int]) -> Table:
        t = Table(show_edge=False, width=half, pad_edge=False)
        t.add_column(title, no_wrap=True, overflow="ellipsis", header_style="bold", ratio=1)
        t.add_column("count", justify="right", no_wrap=True, width=7)
        for key, value in counts.items():
            t.add_row(key, f"{value:,}")
        if not counts:
            t.add_row("(none)", "0")
        return t

    console.print(
        f"\n[bold]{s.runs_with_accounts:,}[/bold] of {result.load.runs:,} runs have an account "
        f"({s.revisions:,} revisions; {s.superseded_runs:,} runs superseded, "
        f"{s.status_changes:,} of them changed status)"
    )
    tables = [
        mix("status", s.status_mix),
        mix("workflow", s.workflow_mix),
        mix("claim verdicts (now)", s.claim_verdicts),
        mix("notifications", s.notifications),
        mix("open contradictions", s.contradictions),
        mix("provenance findings", s.findings),
        mix("dead letters (malformed)", s.dead_letters),
    ]
    grid = Table.grid(padding=(0, 3, 0, 0))
    grid.add_column(width=half)
    grid.add_column(width=half)
    for left in range(0, len(tables), 2):
        if left:
            grid.add_row("", "")
        grid.add_row(*tables[left : left + 2])
    console.print(grid)
    if s.contradicted_claims:
        said = Table(
            title="\nwhat agents said that the evidence contradicts (outcomes show RUN)",
            title_justify="left",
            show_edge=False,
            pad_edge=False,
            width=width,
        )
        said.add_column("run", no_wrap=True, overflow="ellipsis", max_width=32)
        said.add_column("claim", overflow="fold", ratio=1)
        said.add_column("why", no_wrap=True, overflow="ellipsis", max_width=24)
        for run_id, words, reason in s.contradicted_claims:
            said.add_row(run_id, Text(f"“{words}”", style="bold red"), reason)
        console.print(said)
    if s.showcase is not None:
        console.print(account_panel(s.showcase), width=width)
    console.print(
        f"[dim]run prefix {result.prefix}; ClickHouse {result.dsn}\ntry: outcomes query "
        f'"SELECT status, count() FROM current_accounts WHERE startsWith(run_id, '
        f"'{result.prefix}-') GROUP BY status\"[/dim]"
    )


def browser_command(dsn: str, bootstrap: str, *, default: Settings) -> str:
    """The `outcomes ui` line that opens the demo's database: plain when the demo used
    the database (and broker) `outcomes ui` opens by default, else with the options."""
    argv = ["outcomes", "ui"]
    if dsn != default.clickhouse_dsn:
        argv += ["--clickhouse", shlex.quote(dsn)]
    if bootstrap != default.bootstrap:
        argv += ["--bootstrap", shlex.quote(bootstrap)]
    return " ".join(argv)


def dev_stack_note(settings: Settings, state_dir: Path | None = None) -> str | None:
    """The demo's last line when the dev Kafka stack (`outcomes dev up`, or the demo
    itself) is running: it keeps running after the demo, so say so and how to stop it
    (with `--state-dir` when the demo was given one). None when no dev stack of this
    state dir runs (e.g. the demo used another broker)."""
    stack = devstack.read_stack(settings)
    if stack is None or not any(devstack.is_alive(node) for node in stack.nodes):
        return None
    down = "outcomes dev down" + (f" --state-dir {state_dir}" if state_dir is not None else "")
    return (
        f"The dev Kafka stack is still running at {stack.bootstrap} (it keeps the demo's "
        f"topics for the next run); stop it with `{down}` (add --purge to also delete "
        "its data)."
    )


# --------------------------------------------------------------------------- the demo


@dataclass
class DemoResult:
    """Everything a demo did: ids, what it published, what ClickHouse holds, timings."""

    prefix: str
    app_id: str
    sink_group: str
    dsn: str
    load: LoadResult
    summary: DemoSummary
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def events(self) -> list[Event]:
        """The events published, each as sent (canonical JSON form)."""
        return list(self.load.published or [])

    @property
    def malformed(self) -> list[Origin]:
        """Where the malformed raw messages landed."""
        return list(self.load.malformed)


def _progress_bar(console: Any) -> Any:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TimeElapsedColumn,
    )

    return Progress(
        SpinnerColumn(),
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


def _consumed(
    settings: Settings,
    group: str,
    start: Mapping[tuple[str, int], int],
) -> int:
    committed = committed_offsets(settings, group, list(start))
    return sum(max(0, committed[tp] - offset) for tp, offset in start.items() if committed[tp] >= 0)


def _wait_child(
    child: Child,
    *,
    timeout: float,
    tick: Callable[[], None],
    what: str,
) -> None:
    deadline = Deadline(timeout)
    next_tick = Deadline(0.0)
    while child.poll() is None:
        if deadline.expired:
            child.stop()
            raise DemoError(f"{what} did not finish within {timeout:.0f} s (log: {child.log_path})")
        if next_tick.expired:
            tick()
            next_tick = Deadline(0.5)
        time.sleep(0.1)
    tick()
    code = child.poll()
    if code != 0:
        raise DemoError(f"{what} exited with {code}: {child.tail()} (log: {child.log_path})")


@contextmanager
def _step(timings: dict[str, float], name: str) -> Iterator[None]:
    t0 = time.monotonic()
    try:
        yield
    finally:
        timings[name] = round(time.monotonic() - t0, 3)


def run_demo(
    *,
    runs: int = 300,
    workers: int = 4,
    seed: int = 0,
    malformed: int = 3,
    bootstrap: str | None = None,
    clickhouse: str | None = None,
    state_dir: Path | None = None,
    idle_seconds: float = 3.0,
    timeout: float = 900.0,
    keep_internals: bool = False,
    console: Any = None,
) -> DemoResult:
    """Run the demo end to end and return what it published and what ClickHouse holds.

    Raises DemoError (or another OutcomesError) naming the failing step. The worker and
    sink subprocesses are always stopped, whatever happens.
    """
    from rich.console import Console

    console = console or Console(stderr=True)
    settings = Settings.load(bootstrap=bootstrap, clickhouse=clickhouse, state_dir=state_dir)
    prefix = default_prefix("demo")
    app_id = f"outcomes-{prefix}"
    sink_group = f"outcomes-sink-{prefix}"
    work = settings.state_dir / "demo" / prefix
    timings: dict[str, float] = {}

    def echo(message: str) -> None:
        console.print(f"[dim]{message}[/dim]")

    with _step(timings, "setup"):
        ensure_broker(settings, echo)
        report = ensure_topics(settings.kafka_config())
        if report.drift:
            drift = "; ".join(f"{d.topic} {d.setting}" for d in report.drift[:3])
            echo(f"warning: topics differ from the declared table ({drift})")
        migrate_clickhouse(settings.clickhouse_dsn)
        # The demo's own worker folds its own run log (created empty on start).
        inputs = end_offsets(settings, list(INPUT_TOPICS))
        outputs = end_offsets(settings, list(OUTPUT_TOPICS.values()))
        start_group_at(settings, app_id, inputs)
        start_group_at(settings, sink_group, outputs)
    echo(
        f"run prefix {prefix}: {runs} runs from {workers} agent workers; "
        f"worker group {app_id}; ClickHouse {settings.clickhouse_dsn}"
    )

    spec = LoadSpec(
        runs=runs, seed=seed, prefix=prefix, malformed=malformed, workers=workers, narrated=True
    )
    input_start = dict(inputs)
    try:
        with _progress_bar(console) as bar:
            task = bar.add_task("agents publishing events", total=None)
            with _step(timings, "publish"):
                load = publish_load(
                    settings,
                    spec,
                    keep_events=True,
                    progress=lambda done, total: bar.update(task, completed=done, total=total),
                )
            sent = load.events + len(load.malformed)
            bar.update(
                task,
                description=f"published {load.events:,} events + {len(load.malformed)} malformed",
            )

            wtask = bar.add_task("worker folding runs", total=sent)
            with (
                _step(timings, "worker"),
                Child(
                    "worker",
                    worker_argv(settings, app_id, until_idle=idle_seconds, state_dir=work),
                    work / "worker.log",
                ) as worker,
            ):
                _wait_child(
                    worker,
                    timeout=timeout,
                    what="outcomes worker",
                    tick=lambda: bar.update(
                        wtask, completed=min(sent, _consumed(settings, app_id, input_start))
                    ),
                )
            bar.update(wtask, completed=sent, description="worker done")

            produced = end_offsets(settings, list(OUTPUT_TOPICS.values()))
            to_sink = sum(produced[tp] - outputs[tp] for tp in outputs)
            stask = bar.add_task("sink writing to ClickHouse", total=to_sink)
            with (
                _step(timings, "sink"),
                Child(
                    "sink",
                    sink_argv(
                        settings,
                        sink_group,
                        until_idle=idle_seconds,
                        run_log=run_log_topic(app_id),
                    ),
                    work / "sink.log",
                ) as sink,
            ):
                _wait_child(
                    sink,
                    timeout=timeout,
                    what="outcomes sink",
                    tick=lambda: bar.update(
                        stask, completed=_consumed(settings, sink_group, outputs)
                    ),
                )
            landed = _consumed(settings, sink_group, outputs)
            bar.update(stask, completed=landed, description="sink done")
            if landed < to_sink:
                raise DemoError(
                    f"the sink committed {landed} of {to_sink} output records "
                    f"(log: {work / 'sink.log'})"
                )
    finally:
        if not keep_internals:
            delete_worker_internals(settings, app_id, echo)
            shutil.rmtree(work / "worker", ignore_errors=True)

    with _step(timings, "query"):
        showcase = next((p.run_id for p in plan_runs(spec) if p.scenario == SHOWCASE_SCENARIO), "")
        summary = query_summary(settings.clickhouse_dsn, prefix, load.malformed, showcase)
    if summary.runs_with_accounts == 0 and runs > 0:
        raise DemoError(f"ClickHouse holds no account of the {runs} runs (log: {work})")
    return DemoResult(prefix, app_id, sink_group, settings.clickhouse_dsn, load, summary, timings)
