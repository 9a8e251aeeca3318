"""The browser on its own: the door's server (common/door.py) with the browser mounted at
the root, a read-only session on the outcomes database, and the live feed when a broker
is given."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from outcomes.browser.app import Browser, component
from outcomes.browser.live import Feed, LiveSource
from outcomes.browser.queries import Session
from outcomes.common.door import DoorServer, app


@dataclass
class Running:
    """A started browser: its server, its session and its live source (if any)."""

    server: DoorServer
    browser: Browser
    source: LiveSource | None

    @property
    def url(self) -> str:
        host, port = self.server.address
        return f"http://{host}:{port}"

    @property
    def login_url(self) -> str:
        return f"{self.url}/login?token={self.browser.token}"

    def stop(self) -> None:
        self.server.stop()
        if self.source is not None:
            self.source.stop()
        self.browser.session.close()


def new_token() -> str:
    """A read-only token for one browser process (URL-safe, 128 bits)."""
    return secrets.token_urlsafe(16)


def start(
    dsn: str,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    bootstrap: str | None = None,
    live: bool = True,
) -> Running:
    """Open the database read-only, start the live feed (unless `live` is false), bind
    and serve on a thread of its own. Raises the database's error (one line) or OSError
    for an address in use before anything is served."""
    session = Session(dsn)
    feed = Feed()
    source = LiveSource(feed, bootstrap).start() if live else None
    browser = Browser(session, token or new_token(), feed, live=source is not None)
    try:
        server = DoorServer(app(component(browser)), host=host, port=port, name="browser")
        server.start()
    except BaseException:
        if source is not None:
            source.stop()
        session.close()
        raise
    return Running(server, browser, source)
