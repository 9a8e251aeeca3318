"""`outcomes follow`: a live tail of what the pipeline decides.

Each notification is printed as it arrives: the run, the revision, the status before and
after, and what changed (the `changes` of the account revision it announces, read from
the revisions topic; a notification whose revision does not show up within a second is
printed without them). Claim notifications are printed too. `--format json` prints one
JSON object a line for scripts. Each notification id is printed once: a copy the worker
published again after a restart (docs/consumers.md, "What the topics hold") is skipped.
The consumer is `outcomes.streams.sdk.consumer.OutcomesConsumer`, in a group of its own
that never commits: following changes nothing on the broker.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from types import FrameType
from typing import Any, Literal

import click
import orjson

from outcomes.cli import options
from outcomes.common.broker import check_broker
from outcomes.common.settings import Settings
from outcomes.reducers.catalog import OUTPUT_TOPICS
from outcomes.streams.sdk.consumer import (
    AccountRevision,
    ClaimNotification,
    Item,
    Notification,
    OutcomesConsumer,
)

TOPICS: Mapping[str, str] = OUTPUT_TOPICS
"""Record kind -> topic follow reads (tests point it at their own topics)."""

KINDS = ("account.final", "account.superseded", "claim_notification")
GRACE = 1.0
"""Once everything is read, seconds a notification still waits for its revision."""
MAX_WAIT = 10.0
"""Seconds a notification waits for its revision at most, however busy the topics."""
_REMEMBERED_REVISIONS = 1_000_000  # ~150 bytes each
# Notification ids remembered as shown, to skip a copy: a copy comes when a worker redoes
# the uncommitted end of its run log after a restart, soon after the first (~100 bytes).
_REMEMBERED_IDS = 200_000
_HOLD_ABOVE = 5_000
_CLOCK_SLACK_MS = 5_000

Format = Literal["text", "json"]

INTERRUPTED = 130
"""Exit status after Ctrl-C: 128 + SIGINT, what a shell reports for an interrupted command."""


def text_line(item: Notification | ClaimNotification, changes: tuple[str, ...] | None) -> str:
    """How a person sees one notification."""
    head = f"{item.observation_cutoff}  {item.run_id}  r{item.revision}"
    if isinstance(item, ClaimNotification):
        return (
            f"{head}  claims settled  status {item.status}  "
            f"{len(item.verdict_ids)} verdict(s): {item.superseded} superseded, "
            f"{item.withdrawn} withdrawn"
        )
    before = item.previous_status or "new"
    if changes is None:
        changed = "changed: (revision not seen)"
    else:
        changed = f"changed: {', '.join(changes) if changes else 'first account'}"
    automation = "  completion automation" if item.completion_automation else ""
    return f"{head}  {item.kind}  {before} → {item.status}  {changed}{automation}"


def json_line(item: Notification | ClaimNotification, changes: tuple[str, ...] | None) -> str:
    """One JSON object: the record (`"record"` plus its fields); a notification also gets
    `changes`, its revision's list (null when the revision was not seen)."""
    value: dict[str, Any] = item.to_json()
    if isinstance(item, Notification):
        value["changes"] = None if changes is None else list(changes)
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


@dataclass
class _Waiting:
    item: Notification | ClaimNotification
    since: float


class Tail:
    """Puts each notification beside its revision's `changes`, in arrival order.

    Notifications wait in one queue, so nothing is printed ahead of an earlier one (a
    run's revisions stay in order). The worker publishes a revision before its
    notification, so the revision's Kafka timestamp is not later than the
    notification's: the head is printed once its revision was seen, or once every
    revisions partition this follower reads went past the notification's timestamp (the
    revision is not coming), or when the consumer has read everything there is and the
    head waited `grace` seconds, or after `max_wait` seconds in any case. Catching up
    from the beginning, revisions (larger records) lag behind notifications; this waits
    for them instead of giving up after a fixed time. `revisions` gives the revisions
    partitions read now (None: revisions are not read).
    """

    def __init__(
        self,
        kinds: frozenset[str],
        fmt: Format,
        *,
        revisions: Callable[[], Collection[int]] | None,
        status_changed: bool = False,
        grace: float = GRACE,
        max_wait: float = MAX_WAIT,
        on_closed: Callable[[], None] | None = None,
        hold: Callable[[bool], None] | None = None,
    ) -> None:
        self.kinds = kinds
        self.status_changed = status_changed
        self.line = text_line if fmt == "text" else json_line
        self.revisions = revisions
        self.grace = grace
        self.max_wait = max_wait
        self.on_closed = on_closed
        self.hold = hold  # hold(True): stop fetching notifications; hold(False): go on
        self._holding = False
        self.closed = False
        self.printed = 0
        self.copies = 0  # notifications skipped: their id was shown (or queued) already
        self._shown: OrderedDict[str, None] = OrderedDict()
        self._changes: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._queue: deque[_Waiting] = deque()
        self._newest: dict[int, int] = {}  # revisions partition -> newest timestamp read

    def __call__(self, item: Item) -> None:
        if isinstance(item, AccountRevision):
            self._changes[item.id] = item.changes
            if len(self._changes) > _REMEMBERED_REVISIONS:
                self._changes.popitem(last=False)
            partition, stamp = item.origin.partition, item.origin.timestamp
            self._newest[partition] = max(self._newest.get(partition, -1), stamp)
        elif (
            isinstance(item, Notification | ClaimNotification)
            and (not self.kinds or item.kind in self.kinds)
            and (not self.status_changed or item.status_changed)
        ):
            if item.id in self._shown:
                self.copies += 1
            else:
                self._shown[item.id] = None
                if len(self._shown) > _REMEMBERED_IDS:
                    self._shown.popitem(last=False)
                self._queue.append(_Waiting(item, time.monotonic()))
        self.flush()
        # Notifications running far ahead of their revisions wait here: fetch no more of
        # them until the revisions caught up, so memory stays bounded.
        if self.hold is not None and self._holding != (len(self._queue) > _HOLD_ABOVE):
            self._holding = not self._holding
            self.hold(self._holding)

    def _settled(self, waiting: _Waiting, now: float, idle: bool) -> bool:
        """Whether the head may be printed: its revision came, or will not."""
        item = waiting.item
        if self.revisions is None or isinstance(item, ClaimNotification):
            return True
        if item.id in self._changes:
            return True
        waited = now - waiting.since
        if waited >= self.max_wait or (idle and waited >= self.grace):
            return True
        stamp = item.origin.timestamp
        if stamp < 0:
            return False
        # Every partition read well past the notification's time (workers writing one
        # partition at once interleave their batches): its revision was not there.
        past = stamp + _CLOCK_SLACK_MS
        return all(self._newest.get(p, -1) >= past for p in self.revisions())

    def idle(self) -> None:
        """The consumer read everything there is: print what waited `grace` seconds."""
        self.flush(idle=True)

    def flush(self, force: bool = False, idle: bool = False) -> None:
        now = time.monotonic()
        while self._queue:
            head = self._queue[0]
            item = head.item
            if not (force or self._settled(head, now, idle)):
                return
            self._queue.popleft()
            changes = self._changes.get(item.id) if isinstance(item, Notification) else None
            if self.closed:
                continue
            try:
                click.echo(self.line(item, changes))
            except BrokenPipeError:  # the reader went away (`| head`): stop quietly
                self.closed = True
                if self.on_closed is not None:
                    self.on_closed()
                continue
            self.printed += 1


@click.command()
@click.option("--run", "run_ids", multiple=True, metavar="RUN_ID", help="Only this run (repeat).")
@click.option("--run-prefix", metavar="PREFIX", help="Only runs whose id starts with PREFIX.")
@click.option(
    "--kind", "kinds", multiple=True, type=click.Choice(KINDS), help="Only these kinds (repeat)."
)
@click.option(
    "--status-changed",
    is_flag=True,
    help="Only notifications whose status differs from the previous revision's (and first "
    "accounts).",
)
@click.option(
    "--from-beginning",
    is_flag=True,
    help="Start with the oldest retained notification (default: only new ones).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: one line a notification, for a person; json: one JSON object a line.",
)
@click.option(
    "--no-changes",
    is_flag=True,
    help="Do not read the revisions topic (what changed is then not shown).",
)
@click.option(
    "--until-idle",
    type=float,
    metavar="SECONDS",
    help="Exit after this many seconds without a new record (scripts, tests).",
)
@options.bootstrap
def follow(
    run_ids: tuple[str, ...],
    run_prefix: str | None,
    kinds: tuple[str, ...],
    status_changed: bool,
    from_beginning: bool,
    fmt: Format,
    no_changes: bool,
    until_idle: float | None,
    bootstrap: str | None,
) -> None:
    """Print each notification as the pipeline decides it: run, revision, status before
    → after, what changed. Each notification id is printed once (a copy published again
    after a worker restart is skipped).

    Reads outcomes.notifications.v1 and outcomes.claim-notifications.v1 (and, for what
    changed, outcomes.account-revisions.v1) in a consumer group of its own that never
    commits. Stops on SIGTERM, or on Ctrl-C with one line and exit status 130 (a second
    Ctrl-C stops it without waiting for the consumer to leave its group).
    """
    try:
        interrupted = _follow(
            run_ids,
            run_prefix,
            kinds,
            status_changed,
            from_beginning,
            fmt,
            no_changes,
            until_idle,
            bootstrap,
        )
    except KeyboardInterrupt:  # before the tail ran, or a second Ctrl-C while it closed
        interrupted = True
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the line and the exit, undisturbed
        click.echo("outcomes follow: stopped (Ctrl-C)", err=True)
        raise SystemExit(INTERRUPTED)


def _follow(
    run_ids: tuple[str, ...],
    run_prefix: str | None,
    kinds: tuple[str, ...],
    status_changed: bool,
    from_beginning: bool,
    fmt: Format,
    no_changes: bool,
    until_idle: float | None,
    bootstrap: str | None,
) -> bool:
    """The tail itself; True when a Ctrl-C stopped it (what it held is printed first)."""
    settings = Settings.load(bootstrap=bootstrap)
    check_broker(settings)
    records = ["notification", "claim_notification"]
    if not no_changes:
        records.append("account_revision")
    consumer = OutcomesConsumer(
        settings,
        group=f"outcomes-reader-follow-{uuid.uuid4().hex[:12]}",
        records=records,
        run_ids=run_ids,
        run_prefix=run_prefix,
        from_beginning=from_beginning,
        commit=False,
        topics=TOPICS,
        dead_letter_topic=None,  # a tail writes nothing: an undecodable record is logged
        config={"queued.max.messages.kbytes": 16_384},  # a person's tail: less prefetch
    )
    revisions_topic = TOPICS["account_revision"]

    def revision_partitions() -> list[int]:
        return [p for t, p in consumer.assignment if t == revisions_topic]

    def hold(pause: bool) -> None:
        for record in ("notification", "claim_notification"):
            (consumer.pause if pause else consumer.resume)(record)

    tail = Tail(
        frozenset(kinds),
        fmt,
        revisions=None if no_changes else revision_partitions,
        status_changed=status_changed,
        on_closed=consumer.stop,
        hold=None if no_changes else hold,
    )

    interrupted = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal interrupted
        if signum == signal.SIGINT:
            if interrupted:
                raise KeyboardInterrupt  # a second Ctrl-C: do not wait any longer
            interrupted = True
        consumer.stop()  # the loop returns after the current item; the tail prints the rest

    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, stop)}
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # a background job's stays so
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, stop)
    try:
        with consumer:
            consumer.run(tail, idle_timeout=until_idle, on_idle=tail.idle)
        tail.flush(force=True)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if tail.closed:  # no flush at exit into the closed pipe
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return interrupted
