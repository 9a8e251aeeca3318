"""The run browser in a real headless Chromium (Debian's `chromium`), through the
DevTools protocol, against `outcomes ui` serving a chDB that holds the five-file sample
and a quiet run: open the runs table, filter to contradicted runs, open the five-file
run, see its contradicted claims marked at revision 1 and open one's evidence, compare
revision 1 with the latest, look at the fleet. Each view is captured at 1280x800 and at
390 px wide (`.state/artifacts/browser/`; docs/img/ holds the committed ones).

No browser or no chDB: the test skips, except under CI=true, where it fails.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.browser_support import (
    QUIET,
    QUIET_AGENT,
    QUIET_MODEL,
    RUN,
    SAMPLE_MODEL,
    SHOTS,
    TOKEN,
    WIDE,
    Tab,
    chromium,
    write_runs,
)
from tests.conftest import require

ROOT = Path(__file__).resolve().parent.parent


def _chdb_available() -> bool:
    try:
        import chdb  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`outcomes ui` on the test runs; its base URL."""
    require(_chdb_available(), "chdb is not installed")
    dsn = write_runs(tmp_path_factory.mktemp("browser-ui"))
    process = subprocess.Popen(
        [sys.executable, "-c", "from outcomes.cli.ui import ui; ui()", "--clickhouse", dsn,
         "--port", "0", "--token", TOKEN, "--no-live"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    line = ""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not line.startswith("open "):
        line = process.stdout.readline()
        if not line and process.poll() is not None:
            break
    if not line.startswith("open "):
        process.kill()
        pytest.fail(f"outcomes ui did not start: {process.stderr.read() if process.stderr else ''}")
    base = line.split()[1].split("/login", 1)[0]
    try:
        yield base
    finally:
        process.terminate()
        assert process.wait(20) in (0, -15)


@pytest.fixture(scope="module")
def chromium_ws() -> Iterator[str]:
    with chromium() as websocket:
        yield websocket


# The lowest contrast ratio (WCAG 2) of any state, tag or link text against the
# background it is drawn on.
CONTRAST = """(() => {
  const rgb = (c) => c.match(/[\\d.]+/g).slice(0, 4).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map(v => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
    .reduce((a, v, i) => a + v * [0.2126, 0.7152, 0.0722][i], 0);
  const back = (el) => { for (; el; el = el.parentElement) {
    const c = rgb(getComputedStyle(el).backgroundColor);
    if (c.length < 4 || c[3] > 0) return c; } return [255, 255, 255]; };
  const ratios = [...document.querySelectorAll('.state, .tag, a, .muted, code')].map(el => {
    const a = lum(rgb(getComputedStyle(el).color)), b = lum(back(el));
    return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05); });
  return Math.min(...ratios);
})()"""


def rows_js() -> str:
    return "[...document.querySelectorAll('#runs-body tr[data-run]')].map(r => r.dataset.run)"


async def journey(websocket: str, base: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with aiohttp.ClientSession() as http, http.ws_connect(websocket, max_msg_size=0) as ws:
        tab = Tab(ws)
        reader = asyncio.create_task(tab.read())
        try:
            target = await tab.call("Target.createTarget", url="about:blank")
            attached = await tab.call(
                "Target.attachToTarget", targetId=target["targetId"], flatten=True
            )
            tab.session = attached["sessionId"]
            for domain in ("Network", "Page", "Runtime"):
                await tab.call(f"{domain}.enable")
            await tab.call("Emulation.setDeviceMetricsOverride", **WIDE)

            # Without the token: one line saying what is needed, nothing of the data.
            await tab.go(f"{base}/runs")
            seen["anonymous"] = await tab.value("document.getElementById('error').innerText")
            seen["anonymous_status"] = tab.statuses.get(f"{base}/runs")

            # The token URL once: a cookie, and the runs table without the token in view.
            await tab.go(f"{base}/login?token={TOKEN}")
            seen["after_login"] = await tab.value("location.href")
            seen["all_runs"] = await tab.value(rows_js())
            seen["labels"] = await tab.value(
                "[...document.querySelectorAll('input, select')].filter(e => e.type !== 'hidden')"
                ".map(e => e.labels && e.labels.length > 0)"
            )
            await tab.shoot("runs")
            # Keyboard: the first Tab reaches the skip link.
            await tab.key("Tab", "Tab", 9)
            seen["first_focus"] = await tab.value("document.activeElement.className")

            # Filter to contradicted runs with the form, as a person would.
            await tab.value("document.getElementById('contradicted').value = 'ever'")
            await tab.load(tab.click("form.filters button[type=submit]"))
            seen["filtered_url"] = await tab.value("location.search")
            seen["filtered"] = await tab.value(rows_js())
            await tab.shoot("runs-contradicted")

            # By agent, then by model, then by words of the task, with the form's controls.
            await tab.go(f"{base}/runs")
            await tab.value(f"document.getElementById('agent').value = '{QUIET_AGENT}'")
            await tab.load(tab.click("form.filters button[type=submit]"))
            seen["by_agent"] = [await tab.value("location.search"), await tab.value(rows_js())]
            await tab.value("document.getElementById('agent').value = ''")
            await tab.value(f"document.getElementById('model').value = '{SAMPLE_MODEL}'")
            await tab.load(tab.click("form.filters button[type=submit]"))
            seen["by_model"] = [await tab.value("location.search"), await tab.value(rows_js())]
            await tab.value("document.getElementById('model').value = ''")
            await tab.value("document.getElementById('q').value = 'report modules'")
            await tab.load(tab.click("form.filters button[type=submit]"))
            seen["by_task"] = [await tab.value("location.search"), await tab.value(rows_js())]
            seen["agent_cells"] = await tab.value(
                "[...document.querySelectorAll('#runs-body td.agent')].map(c => c.innerText)"
            )
            await tab.shoot("runs-task-search")
            await tab.go(f"{base}/runs?contradicted=ever")

            # Open the five-file run; then its first revision.
            await tab.load(tab.click(f"tr[data-run='{RUN}'] a"))
            seen["run_title"] = await tab.value("document.title")
            await tab.load(tab.click("nav.revisions a[href$='revision=1']"))
            seen["marks"] = await tab.value(
                "[...document.querySelectorAll('a.claim')].map(a => [a.firstChild.textContent,"
                " a.dataset.verdict, a.querySelector('.tag').innerText,"
                " getComputedStyle(a).borderBottomStyle])"
            )
            # Open the evidence of "all tests pass" from the text.
            await tab.click("a.claim[data-verdict=contradicted]:nth-of-type(2)")
            await asyncio.sleep(0.3)
            seen["card"] = await tab.value(
                "(() => { const d = document.getElementById('claim-run-five-files-final-answer-1');"
                " return [d.open, d.innerText, document.activeElement.tagName]; })()"
            )
            seen["evidence_event"] = await tab.value(
                "(() => { const r = document.querySelector('#claim-run-five-files-final-answer-1"
                " ol.evidence-events li[data-event=run-five-files-06]');"
                " return r ? ['.event-id', '.event-type', '.event-at', '.event-source', 'dl']"
                ".map(s => r.querySelector(s).innerText) : null; })()"
            )
            await tab.shoot("run-revision-1-evidence")
            await tab.value(
                "document.querySelector('#claim-run-five-files-final-answer-1"
                " ol.evidence-events').scrollIntoView({block: 'start'})"
            )
            await tab.shoot("run-evidence-events", scroll=False)
            seen["contrast"] = await tab.value(CONTRAST)

            # Compare revision 1 with the latest.
            await tab.value("document.getElementById('cmp-a').value = '1'")
            await tab.load(tab.click("nav.revisions form.compare button"))
            seen["compare_url"] = await tab.value("location.pathname + location.search")
            seen["differences"] = await tab.value(
                "[...document.querySelectorAll('table.diff tbody tr')].map(r =>"
                " [...r.cells].map(c => c.innerText))"
            )
            await tab.shoot("compare")

            # The run now, and the fleet.
            await tab.go(f"{base}/runs/{RUN}")
            seen["answers"] = await tab.value(
                "[...document.querySelectorAll('table.answers tbody tr')].map(r =>"
                " [...r.cells].map(c => c.innerText))"
            )
            # An event id links to the event in the run's list, which opens on the click.
            await tab.click("section[aria-labelledby=h-why] a.event")
            await asyncio.sleep(0.3)
            seen["event_link"] = await tab.value(
                "(() => { const d = document.querySelector(location.hash);"
                " return d ? [location.hash, d.tagName, d.innerText] : [location.hash]; })()"
            )
            await tab.go(f"{base}/runs/{RUN}")
            await tab.shoot("run")
            await tab.go(f"{base}/fleet")
            seen["charts"] = await tab.value(
                "[...document.querySelectorAll('svg.chart')].map(s => [s.getAttribute('role'),"
                " s.getAttribute('aria-label'), s.getBoundingClientRect().height > 20])"
            )
            await tab.shoot("fleet")

            # A URL no view has: one line.
            await tab.go(f"{base}/runs?status=done")
            seen["bad_url"] = await tab.value("document.getElementById('error').innerText")
            seen["requests"] = list(tab.requests)
            seen["errors"] = list(tab.console)
        finally:
            reader.cancel()
    return seen


def test_a_person_finds_the_contradicted_run_and_what_was_true_then(
    server: str, chromium_ws: str, capsys: pytest.CaptureFixture[str]
) -> None:
    seen = asyncio.run(journey(chromium_ws, server))
    assert seen["anonymous_status"] == 401
    assert seen["anonymous"] == "a read-only token is needed to open the browser"
    assert seen["after_login"] == f"{server}/runs"  # the token left the address bar
    assert seen["all_runs"] == [QUIET, RUN]
    assert seen["labels"] and all(seen["labels"])  # every control has a label
    assert seen["first_focus"] == "skip"
    assert seen["filtered_url"] == "?contradicted=ever"  # the view is its URL
    assert seen["filtered"] == [RUN]
    assert seen["run_title"].startswith(f"Run {RUN}: Complete")
    assert seen["marks"] == [
        ["Done", "contradicted", "contradicted", "double"],
        ["all tests pass", "contradicted", "contradicted", "double"],
        ["the release-notes draft is published", "contradicted", "contradicted", "double"],
    ]
    is_open, card, focused = seen["card"]
    assert is_open and focused == "SUMMARY"
    assert "check:unit" in card and "chk-1" in card and "snap-1" in card
    assert "run-five-files-06" in card  # the receipt event the check came from
    # ... and what that event says: its type, time, source and fields.
    event, kind, at, source, fields = seen["evidence_event"]
    assert (event, kind, at) == (
        "run-five-files-06",
        "verification.receipt",
        "2026-11-30T10:03:00.000Z",
    )
    assert source == "from agent-worker-7" and "check_id" in fields and "chk-1" in fields
    assert seen["by_agent"] == [f"?agent={QUIET_AGENT}", [QUIET]]
    assert seen["by_model"] == [f"?model={SAMPLE_MODEL}", [RUN]]
    assert seen["by_task"] == ["?q=report+modules", [RUN]]
    assert seen["agent_cells"] == [f"coder\n{SAMPLE_MODEL}"]
    assert QUIET_MODEL not in seen["by_model"][1]
    # The gated answer: sent back for repair, then passed on its second attempt.
    assert [row[:3] for row in seen["answers"]] == [
        ["final-answer", "1", "sent back for repair"],
        ["final-answer", "2 (repair)", "passed"],
    ]
    assert "2 contradicted" in seen["answers"][0][4]
    hash_, tag, text = seen["event_link"]
    # (the first event the status's predicates name: the goal, with its fields shown)
    assert hash_ == "#event-run-five-files-02" and tag == "DETAILS"
    assert "goal.revised" in text and "authored_by" in text and "user" in text
    assert seen["contrast"] >= 4.5  # WCAG AA for text
    assert seen["compare_url"] == f"/runs/{RUN}/compare?a=1&b=3"
    assert ["status", "Unresolved: not confirmed", "Complete"] in seen["differences"]
    assert len(seen["charts"]) == 6 and all(c[0] == "img" and c[1] and c[2] for c in seen["charts"])
    assert seen["bad_url"].startswith("status must be among complete")
    # Nothing is fetched from elsewhere (data: URLs are Chromium's own control icons).
    elsewhere = [u for u in seen["requests"] if not u.startswith((server, "data:"))]
    assert elsewhere == []
    assert seen["errors"] == []
    with capsys.disabled():
        print(f"\nbrowser screenshots: {SHOTS}; lowest text contrast {seen['contrast']:.2f}")
