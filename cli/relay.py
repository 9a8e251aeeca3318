"""`outcomes relay`: POST each notification, signed, to a webhook endpoint.

The consumer is `outcomes.streams.sdk.consumer.OutcomesConsumer`, the handler
`outcomes.streams.sdk.relay.WebhookRelay`; the headers and how a receiver checks them are in
docs/consumers.md.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Mapping
from pathlib import Path
from types import FrameType

import click

from outcomes.cli import options
from outcomes.common.broker import check_broker
from outcomes.common.settings import Settings
from outcomes.reducers.catalog import OUTPUT_TOPICS
from outcomes.streams.sdk.consumer import Backoff, OutcomesConsumer
from outcomes.streams.sdk.relay import SECRET_ENV, SECRET_FILE_ENV, WebhookRelay, load_secret

TOPICS: Mapping[str, str] = OUTPUT_TOPICS
"""Record kind -> topic the relay reads (tests point it at their own topics)."""

KINDS = ("account.final", "account.superseded", "claim_notification")


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
    help="Seconds to connect and to wait for each answer; a timeout is retried.",
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
    help="Longest wait between two attempts (seconds); waits double from 0.2 s, jittered.",
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
    help="Exit after this many seconds without a new notification (backfills, tests).",
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
    exponential backoff and jitter (at least Retry-After), in order per run; any other
    answer (4xx, and 3xx: redirects are not followed) is not retried: the notification
    is dead-lettered with the answer. At least once: a notification may arrive twice,
    always with the same Idempotency-Key. Refuses to start without a secret. Stops
    gracefully on SIGTERM.
    """
    logging.basicConfig(
        level=loglevel.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    secret = load_secret(secret_file)
    handler = WebhookRelay(url, secret, timeout=timeout)
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

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        with consumer:
            consumer.run(handler.deliver, idle_timeout=until_idle)
    except KeyboardInterrupt:
        pass  # the consumer closed: what was delivered is committed
    finally:
        signal.signal(signal.SIGTERM, previous)
        handler.close()
    stats = handler.stats
    click.echo(
        f"outcomes relay: {stats.delivered} delivered to {handler.public_url}, "
        f"{stats.failed_attempts} failed attempts retried, {stats.rejected} refused "
        f"(dead-lettered); consumer: {consumer.stats.summary()}",
        err=True,
    )
