"""`outcomes relay`: POST each notification, signed, to a webhook endpoint.

The consumer is `outcomes.streams.sdk.consumer.OutcomesConsumer`, the handler
`outcomes.streams.sdk.relay.WebhookRelay`; the headers and how a receiver checks them are in
docs/consumers.md.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import FrameType

import click

from outcomes.cli import options
from outcomes.common.broker import check_broker
from outcomes.common.settings import Settings
from outcomes.reducers.catalog import OUTPUT_TOPICS
from outcomes.streams.sdk.consumer import Backoff, Item, OutcomesConsumer, RetryLater
from outcomes.streams.sdk.relay import (
    SECRET_ENV,
    SECRET_FILE_ENV,
    RelayError,
    WebhookRelay,
    load_secret,
)

TOPICS: Mapping[str, str] = OUTPUT_TOPICS
"""Record kind -> topic the relay reads (tests point it at their own topics)."""

KINDS = ("account.final", "account.superseded", "claim_notification")


class IdleWhileFailing:
    """`--until-idle` for a notification that keeps failing: wraps the relay's `deliver`
    and calls `stop` once one notification has been failing for `seconds` (counted from
    its first failed attempt), even in the middle of a backoff wait. The consumer then returns
    without committing it, so the group's next relay sends it again.

    The consumer's own idle timeout counts only polls that bring nothing; while it
    retries one record it polls paused partitions and never sees idleness.
    """

    def __init__(
        self,
        deliver: Callable[[Item], None],
        seconds: float,
        stop: Callable[[], None],
    ) -> None:
        self._deliver = deliver
        self._seconds = seconds
        self._stop = stop
        self._failing: str | None = None  # id of the notification failing now
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()  # the timer's thread gives up only while failing
        self.last_failure: str | None = None
        self.gave_up: str | None = None  # id of the notification left undelivered

    def __call__(self, item: Item) -> None:
        if item.id != self._failing:
            self._settled()
        try:
            self._deliver(item)
        except RetryLater as exc:
            self.last_failure = exc.reason
            with self._lock:
                if self._failing is None:
                    self._failing = item.id
                    self._timer = threading.Timer(self._seconds, self._give_up, (item.id,))
                    self._timer.daemon = True
                    self._timer.start()
            raise
        except BaseException:
            self._settled()  # refused (dead-lettered) or a bug: not this class's concern
            raise
        self._settled()

    def _settled(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._failing = None

    def _give_up(self, item_id: str) -> None:
        with self._lock:
            if self._failing != item_id:
                return  # delivered or refused meanwhile
            self.gave_up = item_id
        self._stop()

    def close(self) -> None:
        self._settled()


@click.command()
@click.option("--url", required=True, metavar="URL", help="Endpoint to POST to (http or https).")
@click.option(
    "--secret-file",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar=SECRET_FILE_ENV,
    help=f"File holding the shared HMAC secret [env var: {SECRET_FILE_ENV}; "
    f"otherwise {SECRET_ENV} holds the secret itself]. Never a flag's value.",
)
@options.bootstrap
@click.option(
    "--group",
    default="outcomes-reader-relay",
    show_default=True,
    help="Consumer group: the relay resumes where this group stopped.",
)
@click.option(
    "--from-beginning",
    is_flag=True,
    help="A group that never committed starts at the oldest retained notification "
    "(default: only new ones).",
)
@click.option("--claims", is_flag=True, help="Relay claim notifications too.")
@click.option(
    "--status-changed",
    is_flag=True,
    help="Only notifications whose status differs from the previous revision's (and first "
    "accounts); no claim notifications.",
)
@click.option("--run", "run_ids", multiple=True, metavar="RUN_ID", help="Only this run (repeat).")
@click.option("--run-prefix", metavar="PREFIX", help="Only runs whose id starts with PREFIX.")
@click.option(
    "--kind", "kinds", multiple=True, type=click.Choice(KINDS), help="Only these kinds (repeat)."
)
@click.option(
    "--timeout",
    type=float,
    default=10.0,
    show_default=True,
    help="Seconds one attempt may take in all (connecting, sending, reading the answer), "
    "however slowly the endpoint answers; a timeout is retried.",
)
@click.option(
    "--max-attempts",
    type=int,
    default=None,
    help="Give up on a notification after this many failed attempts (5xx, timeouts) and "
    "dead-letter it [default: retry until delivered].",
)
@click.option(
    "--max-backoff",
    type=float,
    default=60.0,
    show_default=True,
    help="Longest wait between two attempts (seconds); waits double from 0.2 s, jittered; "
    "a longer Retry-After counts as this.",
)
@click.option(
    "--dead-letter-topic",
    default=OUTPUT_TOPICS["dead_letter"],
    show_default=True,
    help="Where refused (4xx but 408 and 429, 3xx) and undecodable notifications go.",
)
@click.option(
    "--until-idle",
    type=float,
    metavar="SECONDS",
    help="Exit after this many seconds without a new notification (backfills, tests), or "
    "with exit status 1 once one notification has kept failing this long (it is not "
    "committed: the next start sends it again).",
)
@click.option(
    "--loglevel",
    default="warning",
    show_default=True,
    type=click.Choice(["debug", "info", "warning", "error"]),
)
def relay(
    url: str,
    secret_file: Path | None,
    bootstrap: str | None,
    group: str,
    from_beginning: bool,
    claims: bool,
    status_changed: bool,
    run_ids: tuple[str, ...],
    run_prefix: str | None,
    kinds: tuple[str, ...],
    timeout: float,
    max_attempts: int | None,
    max_backoff: float,
    dead_letter_topic: str,
    until_idle: float | None,
    loglevel: str,
) -> None:
    """POST each notification, signed with HMAC-SHA256, to URL.

    The body is the notification's JSON; the headers carry a timestamp, the signature of
    timestamp and body, and the notification id as Idempotency-Key (docs/consumers.md).
    5xx, 408 and 429 answers, timeouts and refused connections are retried with
    exponential backoff and jitter (at least Retry-After, at most --max-backoff), in order
    per run; an attempt has --timeout seconds in all, and at most 64 KiB of an answer's
    body is read; any other
    answer (4xx, and 3xx: redirects are not followed) is not retried: the notification
    is dead-lettered with the answer. At least once: a notification may arrive twice,
    always with the same Idempotency-Key. Refuses to start without a secret. Stops
    gracefully on SIGTERM.
    """
    logging.basicConfig(
        level=loglevel.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    secret = load_secret(secret_file)
    handler = WebhookRelay(url, secret, timeout=timeout, max_backoff=max_backoff)
    settings = Settings.load(bootstrap=bootstrap)
    check_broker(settings)
    records = ("notification", "claim_notification") if claims else ("notification",)
    consumer = OutcomesConsumer(
        settings,
        group=group,
        records=records,
        run_ids=run_ids,
        run_prefix=run_prefix,
        kinds=kinds,
        status_changed=status_changed,
        from_beginning=from_beginning,
        transient_retries=None if max_attempts is None else max(0, max_attempts - 1),
        retries=0,  # anything but an HTTP answer or a timeout is a bug: dead-letter it
        backoff=Backoff(base=0.2, cap=max_backoff),
        dead_letter_topic=dead_letter_topic,
        topics=TOPICS,
    )

    def stop(signum: int, frame: FrameType | None) -> None:
        consumer.stop()

    deliver: Callable[[Item], None] = handler.deliver
    guard = None
    if until_idle is not None:
        deliver = guard = IdleWhileFailing(handler.deliver, until_idle, consumer.stop)
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        with consumer:
            consumer.run(deliver, idle_timeout=until_idle)
    except KeyboardInterrupt:
        pass  # the consumer closed: what was delivered is committed
    finally:
        signal.signal(signal.SIGTERM, previous)
        handler.close()
        if guard is not None:
            guard.close()
    stats = handler.stats
    click.echo(
        f"outcomes relay: {stats.delivered} delivered to {handler.public_url}, "
        f"{stats.failed_attempts} failed attempts retried, {stats.rejected} refused "
        f"(dead-lettered); consumer: {consumer.stats.summary()}",
        err=True,
    )
    if guard is not None and guard.gave_up is not None:
        raise RelayError(
            f"notification {guard.gave_up} still failing after {until_idle:g} s "
            f"(--until-idle; last: {guard.last_failure}); it is not committed: the "
            "group's next relay sends it again"
        )
