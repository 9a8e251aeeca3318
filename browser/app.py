"""The browser's routes, as a component of the HTTP door (common/door.py).

Every page is a GET whose URL says all of it (filters, page, revisions compared), so a
view can be pasted to a colleague. Every request shows the read-only token first, as
`Authorization: Bearer <token>` or the cookie `/login?token=…` set once; nothing reads a
body. Refusals are one line: an HTML page for a person, JSON for the event stream.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import URL
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from outcomes.browser import charts, pages, queries
from outcomes.browser.live import Feed
from outcomes.common.door import Component, Refusal, json_refusal, one_line
from outcomes.reducers.errors import OutcomesError
from outcomes.reports.errors import RevisionNotFound, RunNotFound

HERE = Path(__file__).resolve().parent
COOKIE = "outcomes_ui"
WAIT_SECONDS = 3.0
"""How long a fragment asked for with `wait=` waits for ClickHouse to hold the revision."""

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; script-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@dataclass
class Browser:
    """What the routes read: the read-only session, the token, the live feed."""

    session: queries.Session
    token: str
    feed: Feed
    live: bool = False
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)


def html_refusal(request: Request | None, refusal: Refusal) -> Response:
    """A refusal as a person reads it: one line on a page (JSON for the event stream)."""
    if request is not None and request.url.path.endswith("/events"):
        return json_refusal(request, refusal)
    login = (
        "<p>Open the address <code>outcomes ui</code> printed (it ends in "
        "<code>/login?token=…</code>), or send <code>Authorization: Bearer …</code>.</p>"
        if refusal.status == 401
        else ""
    )
    body = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{refusal.status}: outcomes</title></head><body>"
        f'<main><h1>{refusal.status}</h1><p role="alert" id="error">{escape(refusal.message)}</p>'
        f'{login}<p><a href="/">Runs</a></p></main></body></html>\n'
    )
    headers = {**SECURITY_HEADERS, **refusal.headers}
    headers["Content-Security-Policy"] = "default-src 'none'; frame-ancestors 'none'"
    return HTMLResponse(body, refusal.status, headers)


def component(browser: Browser, mount: str = "") -> Component:
    """The browser as a door component, at `mount` ("" : the root)."""
    return Component(routes(browser), mount=mount, refuse=html_refusal, name="browser")


def routes(browser: Browser) -> Sequence[BaseRoute]:
    """The browser's routes: pages, fragments, the event stream, login, static files."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    templates = Jinja2Templates(env=env)
    templates.env.globals["status_words"] = pages.status_words
    templates.env.globals["verdict_words"] = pages.verdict_words
    templates.env.filters["when"] = pages.when

    def allowed(request: Request) -> None:
        offered = request.cookies.get(COOKIE, "")
        header = request.headers.get("authorization", "")
        if header[:7].lower() == "bearer ":
            offered = header[7:].strip()
        if not offered or not hmac.compare_digest(offered.encode(), browser.token.encode()):
            raise Refusal(401, "a read-only token is needed to open the browser")

    def render(request: Request, name: str, context: dict[str, Any]) -> Response:
        def path_for(route: str, /, **params: Any) -> str:
            # Paths, not absolute URLs: the host a page names is never the request's.
            return request.url_for(route, **params).path

        context = {
            "live": browser.live,
            "database": browser.session.database,
            "url_for": path_for,
            **context,
        }
        return templates.TemplateResponse(request, name, context, headers=SECURITY_HEADERS)

    def guarded(load: Callable[[], Any]) -> Any:
        try:
            return load()
        except (RunNotFound, RevisionNotFound) as exc:
            raise Refusal(404, str(exc)) from exc
        except OutcomesError as exc:
            raise Refusal(503, one_line(str(exc))) from exc

    async def login(request: Request) -> Response:
        token = request.query_params.get("token", "")
        if not token or not hmac.compare_digest(token.encode(), browser.token.encode()):
            raise Refusal(401, "that token does not open this browser")
        target = str(request.url_for("runs").path)
        response = RedirectResponse(target, 303, headers=SECURITY_HEADERS)
        response.set_cookie(
            COOKIE, browser.token, httponly=True, samesite="strict",
            path=request.scope.get("root_path") or "/", secure=request.url.scheme == "https",
        )  # fmt: skip
        return response

    async def home(request: Request) -> Response:
        allowed(request)
        return RedirectResponse(str(request.url_for("runs").path), 303)

    async def runs(request: Request) -> Response:
        allowed(request)
        f = pages.run_filter(request.query_params)
        wait = pages.wait_for(request.query_params)
        fragment = request.query_params.get("fragment") == "rows"
        page = await run_in_threadpool(
            guarded, lambda: _waited(browser, wait, lambda: queries.runs_page(
                browser.session, f, browser.clock()))
        )  # fmt: skip
        offered = (
            queries.Choices([], [])
            if fragment
            else await run_in_threadpool(guarded, lambda: queries.choices(browser.session))
        )
        here = request.url_for("runs")
        context = {
            "page": page,
            "choices": offered,
            "f": f,
            "statuses": queries.STATUSES,
            "here": here,
            "self_url": _with(here, f.params(), f.page),
            "prev_url": _with(here, f.params(), f.page - 1) if f.page > 1 else None,
            "next_url": _with(here, f.params(), f.page + 1) if page.more else None,
        }
        name = "runs_rows.html" if fragment else "runs.html"
        return render(request, name, context)

    async def run(request: Request) -> Response:
        allowed(request)
        run_id = request.path_params["run_id"]
        number = pages.positive(request.query_params, "revision")
        wait = pages.wait_for(request.query_params)
        view = await run_in_threadpool(
            guarded, lambda: _waited(browser, wait,
                                     lambda: queries.read_view(browser.session, run_id))
        )  # fmt: skip
        context = guarded(lambda: pages.run_page(view, number))
        name = "run_main.html" if request.query_params.get("fragment") == "main" else "run.html"
        return render(request, name, context)

    async def compare(request: Request) -> Response:
        allowed(request)
        run_id = request.path_params["run_id"]
        view = await run_in_threadpool(guarded, lambda: queries.read_view(browser.session, run_id))
        latest = int(view.latest["revision"])
        a = pages.positive(request.query_params, "a") or 1
        b = pages.positive(request.query_params, "b") or latest
        context = guarded(lambda: pages.compare_page(view, a, b))
        return render(request, "compare.html", context)

    async def fleet(request: Request) -> Response:
        allowed(request)
        shown = await run_in_threadpool(guarded, lambda: charts.fleet(browser.session))
        return render(request, "fleet.html", {"charts": shown})

    async def events(request: Request) -> Response:
        allowed(request)
        if not browser.live:
            raise Refusal(404, "this browser was started without a live feed (no --bootstrap)")
        headers = {**SECURITY_HEADERS, "X-Accel-Buffering": "no"}
        return StreamingResponse(
            browser.feed.stream(request.is_disconnected), media_type="text/event-stream",
            headers=headers,
        )  # fmt: skip

    return [
        Route("/", home, name="home"),
        Route("/login", login, name="login"),
        Route("/runs", runs, name="runs"),
        Route("/runs/{run_id:str}", run, name="run"),
        Route("/runs/{run_id:str}/compare", compare, name="compare"),
        Route("/fleet", fleet, name="fleet"),
        Route("/events", events, name="events"),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]


def _with(url: URL, params: list[tuple[str, str]], page: int) -> str:
    """The path and query of this view at `page` (relative: a proxy's host stays its)."""
    query = urlencode([*params, *([("page", str(page))] if page > 1 else [])])
    return url.path + (f"?{query}" if query else "")


def _waited(browser: Browser, wait: tuple[str, int] | None, load: Callable[[], Any]) -> Any:
    """`load()`, once ClickHouse holds revision N of run R when the page asked to wait for
    it (a live notification can arrive before the sink has written what it announces)."""
    if wait is not None:
        run_id, revision = wait
        deadline = time.monotonic() + WAIT_SECONDS
        while queries.latest_revision(browser.session, run_id) < revision:
            if time.monotonic() >= deadline:
                break
            time.sleep(0.1)
    return load()
