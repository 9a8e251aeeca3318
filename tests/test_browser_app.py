"""The run browser's routes (browser/) against a real chDB holding the five-file sample
and a quiet run: the token, the runs table's filters as URLs, one run's claims and their
evidence, two revisions side by side, the fleet's charts and their SQL, refusals in one
line, the read-only session, the live feed."""

from __future__ import annotations

import asyncio
import http.client
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

import markupsafe
import pytest

from outcomes.browser import charts, queries
from outcomes.browser.app import COOKIE, Browser, component
from outcomes.browser.live import Feed
from outcomes.browser.queries import RunFilter, Session
from outcomes.common.door import DoorServer, app
from outcomes.sinks import clickhouse
from outcomes.sinks.exceptions import ClickHouseUnavailable
from outcomes.sinks.query import run_query
from tests.browser_support import (
    QUIET,
    QUIET_AGENT,
    QUIET_MODEL,
    RUN,
    SAMPLE_MODEL,
    SAMPLE_TASK,
    TOKEN,
    browsed_events,
    write_runs,
)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    dsn = write_runs(tmp_path_factory.mktemp("browser"))
    session = Session(dsn)
    now = datetime(2026, 11, 30, 11, 30, tzinfo=UTC)
    try:
        yield Browser(session, TOKEN, Feed(), live=True, clock=lambda: now)
    finally:
        session.close()
        clickhouse.close_all()


@dataclass
class Answer:
    status_code: int
    headers: Mapping[str, str]
    text: str


class Client:
    """A plain HTTP/1.1 client of the running door (no redirects followed)."""

    def __init__(self, address: tuple[str, int], token: str | None) -> None:
        self.address = address
        self.token = token

    def get(self, path: str, headers: Mapping[str, str] | None = None) -> Answer:
        conn = http.client.HTTPConnection(*self.address, timeout=30)
        sent = dict(headers or {})
        if self.token is not None:
            sent["Cookie"] = f"{COOKIE}={self.token}"
        try:
            conn.request("GET", path, headers=sent)
            response = conn.getresponse()
            body = response.read().decode()
            got = {k.lower(): v for k, v in response.getheaders()}
            return Answer(response.status, got, body)
        finally:
            conn.close()


@pytest.fixture(scope="module")
def server(browser: Browser) -> Iterator[DoorServer]:
    with DoorServer(app(component(browser)), name="browser-test") as door:
        yield door


@pytest.fixture
def client(server: DoorServer) -> Client:
    return Client(server.address, TOKEN)


def runs_of(html: str) -> list[str]:
    return re.findall(r'<tr data-run="([^"]+)"', html)


def test_every_page_needs_the_token_and_the_token_url_sets_a_cookie_once(
    server: DoorServer,
) -> None:
    anonymous = Client(server.address, None)
    for path in ("/runs", f"/runs/{RUN}", "/fleet", "/events", "/"):
        answer = anonymous.get(path)
        assert answer.status_code == 401, path
        assert RUN not in answer.text
    assert anonymous.get("/runs", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert anonymous.get("/runs", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert anonymous.get("/login?token=wrong").status_code == 401
    login = anonymous.get(f"/login?token={TOKEN}")
    assert login.status_code == 303 and login.headers["location"] == "/runs"
    cookie = login.headers["set-cookie"]
    assert f"{COOKIE}={TOKEN}" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert Client(server.address, TOKEN).get("/runs").status_code == 200  # the cookie opens it


def test_runs_newest_first_and_each_filter_is_a_url(client: Client) -> None:
    assert runs_of(client.get("/runs").text) == [QUIET, RUN]  # the quiet run changed later
    assert runs_of(client.get("/runs?contradicted=ever").text) == [RUN]
    # Every claim of the sample is supported now: nothing is contradicted at present.
    assert runs_of(client.get("/runs?contradicted=now").text) == []
    assert runs_of(client.get("/runs?status=complete").text) == [RUN]
    assert runs_of(client.get("/runs?status=unresolved&status=blocked").text) == [QUIET]
    assert runs_of(client.get("/runs?q=QUIET").text) == [QUIET]
    assert runs_of(client.get("/runs?q=retry.py").text) == [QUIET, RUN]  # the goal's text
    assert runs_of(client.get("/runs?until=2026-11-30T10:30").text) == [RUN]
    assert runs_of(client.get("/runs?since=2026-11-30T10:30").text) == [QUIET]
    # The clock is 11:30: the sample's supersessions (10:05-10:10) are over an hour old.
    assert runs_of(client.get("/runs?superseded=1h").text) == []
    page = client.get("/runs?contradicted=ever&q=five").text
    assert 'href="/runs?contradicted=ever&amp;q=five"' in page  # the view's own link


def test_runs_filter_by_agent_and_model_and_search_the_task(client: Client) -> None:
    assert runs_of(client.get("/runs?agent=coder").text) == [RUN]
    assert runs_of(client.get(f"/runs?agent={QUIET_AGENT}").text) == [QUIET]
    assert runs_of(client.get(f"/runs?agent=coder&agent={QUIET_AGENT}").text) == [QUIET, RUN]
    assert runs_of(client.get(f"/runs?model={SAMPLE_MODEL}").text) == [RUN]
    assert runs_of(client.get(f"/runs?model={QUIET_MODEL}&agent=coder").text) == []
    assert runs_of(client.get("/runs?agent=nobody").text) == []
    # The task as its requester worded it, in any case; the quiet run has none.
    assert runs_of(client.get("/runs?q=REPORT+MODULES").text) == [RUN]
    assert runs_of(client.get("/runs?q=suite+green&contradicted=ever").text) == [RUN]
    html = client.get("/runs").text
    # The choices are what runs started with; each row names its agent, model and task.
    agents = re.search(r'<select id="agent" name="agent">(.*?)</select>', html, re.S)
    assert agents is not None
    assert re.findall(r'<option value="([^"]+)"', agents.group(1)) == ["coder", QUIET_AGENT]
    row = html.split(f'<tr data-run="{RUN}"', 1)[1].split("</tr>", 1)[0]
    assert "coder" in row and SAMPLE_MODEL in row and SAMPLE_TASK in row
    assert 'href="/runs?agent=reviewer&amp;q=x"' in client.get("/runs?agent=reviewer&q=x").text


def test_the_runs_table_shows_what_the_issue_lists(client: Client) -> None:
    html = client.get(f"/runs?q={RUN}").text
    row = html.split(f'<tr data-run="{RUN}"', 1)[1].split("</tr>", 1)[0]
    assert "Complete" in row and "verification: pass" in row
    assert "deliverable:src/app.py" in row and "check:unit" in row
    assert re.search(r">0</span> / 0 / 0", row)  # claims contradicted / omitted / review now
    assert '<td data-label="Revisions" class="num">3</td>' in row
    assert "2026-11-30 10:10:00 UTC" in row


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("status=done", "status must be among complete"),
        ("contradicted=yes", "contradicted must be now or ever"),
        ("page=0", "page must be a whole number"),
        ("since=yesterday", "since must be a date"),
        ("q=" + "x" * 201, "search text over 200 characters"),
        ("agent=" + "x" * 201, "agent: at most 200 names"),
    ],
)
def test_a_url_no_view_has_is_refused_in_one_line(client: Client, query: str, message: str) -> None:
    answer = client.get(f"/runs?{query}")
    assert answer.status_code == 400
    shown = re.search(r'<p role="alert" id="error">([^<]*)</p>', answer.text)
    assert shown is not None and message in shown.group(1) and "\n" not in shown.group(1)
    assert "Traceback" not in answer.text


def test_a_missing_run_or_revision_is_404_in_one_line(client: Client) -> None:
    assert client.get("/runs/no-such-run").status_code == 404
    answer = client.get(f"/runs/{RUN}?revision=9")
    assert answer.status_code == 404 and "has no revision 9 (it has 1, 2, 3)" in answer.text


def test_one_run_marks_each_claim_by_its_verdict_then_and_now(client: Client) -> None:
    then = client.get(f"/runs/{RUN}?revision=1").text
    marks = re.findall(r'<a class="claim tone-(\w+)"[^>]*data-verdict="(\w+)">([^<]*)<', then)
    assert marks == [
        ("failed", "contradicted", "Done"),
        ("failed", "contradicted", "all tests pass"),
        ("failed", "contradicted", "the release-notes draft is published"),
    ]
    assert "what was true then" in then
    now = client.get(f"/runs/{RUN}").text
    assert [
        m[1] for m in re.findall(r'<a class="claim tone-(\w+)"[^>]*data-verdict="(\w+)"', now)
    ] == ["supported"] * 3


def test_a_claim_opens_the_entries_it_was_judged_on_and_their_events(client: Client) -> None:
    html = client.get(f"/runs/{RUN}?revision=1").text
    card = html.split('id="claim-run-five-files-final-answer-1"', 1)[1].split("</details>", 1)[0]
    # "all tests pass" was judged on revision 1's unit check: passed on snap-1, not snap-2.
    assert "check:unit" in card and "chk-1" in card and "snap-1" in card
    assert "not confirmed: stale" in card
    assert "run-five-files-05" in card and "run-five-files-06" in card  # its events
    assert "the unit check has not passed on the final candidate snap-2" in card
    draft = html.split('id="claim-run-five-files-final-answer-2"', 1)[1].split("</details>", 1)[0]
    assert "draft-release-notes" in draft and "not confirmed: unknown" in draft


def test_evidence_shows_the_events_it_came_from_with_their_contents(client: Client) -> None:
    html = client.get(f"/runs/{RUN}?revision=1").text
    card = html.split('id="claim-run-five-files-final-answer-1"', 1)[1].split("</details>", 1)[0]
    listed = card.split('<ol class="evidence-events"', 1)[1].split("</ol>", 1)[0]
    receipt = listed.split('data-event="run-five-files-06"', 1)[1].split("</li>", 1)[0]
    # The check's receipt: its type, time, source and what it says (command, counts).
    assert "verification.receipt" in receipt and "2026-11-30T10:03:00.000Z" in receipt
    assert "agent-worker-7" in receipt
    assert "<dt>check_id</dt><dd><code>chk-1</code></dd>" in receipt
    assert "<dt>tests_executed</dt>" in receipt
    # Every event id on the page links to the event in the run's list of input events.
    assert 'href="#event-run-five-files-06"' in html
    listed = html.split('<section aria-labelledby="h-events">', 1)[1]
    unique = {e["event_id"] for e in browsed_events()}  # the sample repeats one event
    assert listed.count("<details") == len(re.findall(r'id="event-', listed)) == len(unique)
    assert "<dt>model</dt><dd><code>model-large-2</code></dd>" in listed


def test_a_run_page_shows_its_gated_answers_and_their_repairs(client: Client) -> None:
    html = client.get(f"/runs/{RUN}").text
    section = html.split('<section aria-labelledby="h-answers">', 1)[1].split("</section>", 1)[0]
    rows = re.findall(r'<tr data-decision="(\w+)">(.*?)</tr>', section)
    assert [d for d, _ in rows] == ["repair", "pass"]
    assert "sent back for repair" in rows[0][1] and "2 contradicted" in rows[0][1]
    assert "(repair)" in rows[1][1] and "passed" in rows[1][1] and "revision 1" in rows[1][1]
    assert 'aria-labelledby="h-answers"' not in client.get(f"/runs/{QUIET}").text


def test_any_two_revisions_side_by_side(client: Client) -> None:
    html = client.get(f"/runs/{RUN}/compare?a=1&b=3").text
    rows = re.findall(
        r'<tr><th scope="row">([^<]*)</th>'
        r'<td class="then">([^<]*)</td><td class="now">([^<]*)</td>',
        html,
    )
    assert ("status", "Unresolved: not confirmed", "Complete") in rows
    assert ("check unit", "not confirmed: stale", "passing") in rows
    assert any(item.endswith("“all tests pass”") and now == "supported" for item, _, now in rows)
    assert "What was true then: revision 1" in html and "What is true now: revision 3" in html
    assert client.get(f"/runs/{RUN}/compare?a=2&b=2").status_code == 200


def test_each_chart_is_svg_and_its_sql_gives_its_numbers_through_outcomes_query(
    client: Client, browser: Browser
) -> None:
    html = client.get("/fleet").text
    assert html.count('<svg xmlns="http://www.w3.org/2000/svg"') == len(charts.SPECS)
    assert html.count('role="img"') == len(charts.SPECS)
    for chart in charts.fleet(browser.session):
        # The SQL shown is the SQL run, and an analyst's `outcomes query` takes it as is.
        assert str(markupsafe.escape(chart.sql)) in html
        assert run_query(browser.session.dsn, chart.sql).rows == chart.rows, chart.slug
    status = next(c for c in charts.fleet(browser.session) if c.slug == "status-over-time")
    assert sorted(r[1:] for r in status.rows) == [("complete", 1), ("unresolved", 1)]
    shares = next(c for c in charts.fleet(browser.session) if c.slug == "answers-contradicted")
    assert shares.rows == [("when judged", 1.0), ("now", 0.0)]


def test_the_session_is_read_only(browser: Browser) -> None:
    with pytest.raises(ClickHouseUnavailable, match="readonly"):
        browser.session.rows(
            f"INSERT INTO {browser.session.table('dead_letters')} (run_id) VALUES ('x')"
        )
    with pytest.raises(ClickHouseUnavailable, match="readonly"):
        browser.session.rows("SET readonly = 0")


def test_pages_allow_nothing_from_elsewhere(client: Client) -> None:
    answer = client.get(f"/runs/{RUN}")
    policy = answer.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert not re.search(r'(?:src|href)="(?:https?:)?//', answer.text)


def test_the_live_feed_hands_each_item_to_every_open_stream() -> None:
    feed = Feed()

    async def scenario() -> list[bytes]:
        async def gone() -> bool:
            return False

        streams = [feed.stream(gone), feed.stream(gone)]
        got = [await s.__anext__() for s in streams]  # connected
        assert all(g.startswith(b"retry:") for g in got)
        item = {"run_id": RUN, "revision": 4, "status": "complete", "record": "notification"}
        await asyncio.get_running_loop().run_in_executor(None, feed.publish, item)
        out = [await asyncio.wait_for(s.__anext__(), 5) for s in streams]
        for s in streams:
            await s.aclose()
        return out

    received = asyncio.run(scenario())
    assert received[0] == received[1]
    assert received[0].startswith(b"data: {") and b'"revision":4' in received[0]


def test_a_fragment_waits_for_the_revision_a_notification_announced(client: Client) -> None:
    # Revision 3 is there: answered at once. Revision 4 never comes: answered after the
    # wait, with what there is (the page then shows revision 3).
    assert 'data-run="run-five-files"' in client.get(f"/runs?fragment=rows&wait={RUN}:3").text
    html = client.get(f"/runs/{RUN}?fragment=main&wait={RUN}:4").text
    assert "Revision 3 of 3" in html


@pytest.mark.parametrize(
    "f",
    [
        RunFilter(),
        RunFilter(page=2),
        RunFilter(status=("unresolved",)),
        RunFilter(contradicted="ever"),
        RunFilter(q="retry"),
        RunFilter(status=("complete",), q="five"),
        RunFilter(since=datetime(2026, 11, 30, 10, 30, tzinfo=UTC)),
        RunFilter(superseded_last_hour=True),
        RunFilter(agent=("coder",)),
        RunFilter(model=(QUIET_MODEL,), q="quiet"),
        RunFilter(q="report modules"),
    ],
)
def test_the_newest_revisions_scan_finds_the_page_grouping_every_run_would(
    browser: Browser, monkeypatch: pytest.MonkeyPatch, f: RunFilter
) -> None:
    # One run a page, scanning as few revisions as the page needs (2 of the 4), against
    # grouping every run's revisions (no scan at all).
    monkeypatch.setattr(queries, "PAGE_SIZE", 1)
    monkeypatch.setattr(queries, "SCAN_EXTRA", 0)
    scanned = queries.runs_page(browser.session, f)
    assert "candidates" in scanned.sql or f.page > 1
    monkeypatch.setattr(queries, "FULL_SCAN", 0)
    grouped = queries.runs_page(browser.session, f)
    assert "candidates" not in grouped.sql
    assert (scanned.rows, scanned.more) == (grouped.rows, grouped.more)


def test_mounted_behind_the_door_at_a_path_every_link_and_the_cookie_keep_it(
    browser: Browser,
) -> None:
    with DoorServer(app(component(browser, mount="/ui")), name="browser-mounted") as door:
        login = Client(door.address, None).get(f"/ui/login?token={TOKEN}")
        assert login.status_code == 303 and login.headers["location"] == "/ui/runs"
        assert "Path=/ui" in login.headers["set-cookie"]
        html = Client(door.address, TOKEN).get("/ui/runs").text
        links = re.findall(r'(?:href|src)="(/[^"]*)"', html)
        assert links and all(link.startswith("/ui/") for link in links), links
        assert f'href="/ui/runs/{RUN}"' in html
        assert Client(door.address, TOKEN).get("/ui/static/app.js").status_code == 200
        assert Client(door.address, TOKEN).get("/runs").status_code == 404
