"""`outcomes ui`: the run browser (docs/browser.md) on its own server."""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType

import click

from outcomes.cli import options
from outcomes.common.settings import Settings

TOKEN_ENV = "OUTCOMES_UI_TOKEN"
LIVE_WAIT_SECONDS = 30.0


@click.command()
@options.clickhouse
@options.bootstrap
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
    help="Port to listen on (0: any free port).",
)  # fmt: skip
@click.option(
    "--token",
    metavar="TOKEN",
    default=None,
    help=f"The read-only token a visitor shows (a new random one if not given).  "
    f"[env var: {TOKEN_ENV}]",
)
@click.option(
    "--no-live",
    is_flag=True,
    help="Do not read the notification topics (no live updates; no broker needed).",
)
def ui(
    clickhouse: str | None,
    bootstrap: str | None,
    host: str,
    port: int,
    token: str | None,
    no_live: bool,
) -> None:
    """Open the run browser: runs, one run's account beside what its agent said, the
    fleet's charts, updated live from the notification topics.

    It reads the outcomes database read-only (the analysts' session, every statement a
    fixed one of its own: nothing on a page is SQL) and prints the address to open
    once, with its token; that address sets a cookie and the token leaves the URL.

    \b
        outcomes ui
        outcomes ui --clickhouse chdb:///data/outcomes --port 8080 --no-live
    """
    # lazy: the web stack (starlette, jinja2, uvicorn) only for this command
    from outcomes.browser.server import start

    settings = Settings.load(clickhouse=clickhouse, bootstrap=bootstrap)
    live = not no_live
    if live:
        from outcomes.common.broker import BrokerUnreachable, check_broker  # lazy: only live

        try:
            check_broker(settings)
        except BrokerUnreachable as exc:
            click.echo(f"outcomes ui: live updates off: {exc}", err=True)
            live = False
    running = start(
        settings.clickhouse_dsn,
        host=host,
        port=port,
        token=token or os.environ.get(TOKEN_ENV) or None,
        bootstrap=settings.bootstrap,
        live=live,
    )
    stopped = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        stopped.set()

    previous = signal.signal(signal.SIGTERM, stop)
    click.echo(f"outcomes ui: serving {settings.clickhouse_dsn} read-only at {running.url}")
    if running.source is not None:
        ready = running.source.wait_assigned(LIVE_WAIT_SECONDS)
        click.echo(
            "live: following the notification topics"
            if ready
            else f"live: no partitions assigned within {LIVE_WAIT_SECONDS:g} s; pages update "
            "once they are"
        )
    click.echo(f"open {running.login_url}", nl=True)
    try:
        running.server.wait(stop=stopped.is_set)
    except KeyboardInterrupt:
        pass  # Ctrl-C is how a person stops it: no traceback
    finally:
        signal.signal(signal.SIGTERM, previous)
        running.stop()
