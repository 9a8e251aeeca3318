"""The report page (reports/html.py) in a real headless Chromium (Debian's `chromium`).

The browser opens the page from a file, with no network, through the DevTools protocol:
the test reads the rendered DOM and computed styles, records every request the page
makes, and keeps a full-page screenshot as an artifact (`.state/artifacts/report.png`,
the unresolved state at revision 1 beside it as `report-unresolved.png`; the paths are
printed). No browser: the test skips, except under CI=true, where it fails; a browser
that is there but does not start or render fails everywhere.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from outcomes.reports.html import page
from outcomes.reports.model import RunView
from tests.builders import fold_events
from tests.conftest import require

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "five_file_run.jsonl"
ARTIFACTS = ROOT / ".state" / "artifacts"
RUN = "run-five-files"
BROWSER_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
)
START_SECONDS = 30.0


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def view_after(lines: int) -> RunView:
    """The run as it stood after the sample's first `lines` events."""
    events = [orjson.loads(x) for x in SAMPLE.read_bytes().splitlines()[:lines]]
    outputs, _ = fold_events(events)
    bodies = [(r.kind, r.body) for r in outputs]
    return RunView.of(
        RUN,
        [b for k, b in bodies if k == "account_revision"],
        [b for k, b in bodies if k == "claim_verdict"],
        events,
    )


@dataclass
class Browser:
    """One headless Chromium and its DevTools websocket address."""

    process: subprocess.Popen[bytes]
    websocket: str
    profile: Path
    log: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    binary = chromium()
    require(binary is not None, "no chromium: apt-get install -y chromium (.ci/run does)")
    assert binary is not None
    profile = Path(tempfile.mkdtemp(prefix="outcomes-chromium-"))
    process = subprocess.Popen(
        [binary, *BROWSER_FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    log: list[str] = []
    deadline = time.monotonic() + START_SECONDS
    websocket = None
    while time.monotonic() < deadline and websocket is None:
        line = process.stderr.readline().decode(errors="replace")
        if not line and process.poll() is not None:
            break
        log.append(line.rstrip())
        found = re.search(r"DevTools listening on (ws://\S+)", line)
        websocket = found.group(1) if found else None
    if websocket is None:
        process.kill()
        pytest.fail(f"chromium did not start ({binary}):\n" + "\n".join(log[-20:]))
    try:
        yield Browser(process, websocket, profile, log)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        shutil.rmtree(profile, ignore_errors=True)


# What the test reads from the rendered page (run in the browser by the test, not by the
# page, which has no script).
PROBE = """(() => {
  const style = (el, pseudo) => getComputedStyle(el, pseudo || null);
  const text = (el) => el.innerText.replace(/\\s+/g, ' ').trim();
  const rect = (el) => { const r = el.getBoundingClientRect(); return [r.width, r.height]; };
  return JSON.stringify({
    title: document.title,
    h1: text(document.querySelector('h1')),
    headings: [...document.querySelectorAll('h2')].map(text),
    banner: (() => { const b = document.querySelector('.banner');
      return {text: text(b), border: style(b).borderLeftColor, style: style(b).borderTopStyle,
              size: rect(b)}; })(),
    tables: [...document.querySelectorAll('table')].map(t => ({
      caption: t.caption ? text(t.caption) : null,
      colHeaders: t.querySelectorAll('thead th[scope=col]').length,
      rowHeaders: t.querySelectorAll('tbody th[scope=row]').length,
      rows: t.tBodies[0].rows.length})),
    states: [...document.querySelectorAll('.state')].map(s => ({
      text: text(s), cls: s.className, color: style(s).color,
      marker: style(s, '::before').content})),
    marks: [...document.querySelectorAll('mark')].map(m => ({
      text: text(m), cls: m.className, tag: text(m.nextElementSibling),
      underline: style(m).borderBottomColor})),
    scripts: document.querySelectorAll('script').length,
    external: [...document.querySelectorAll('[src],link[href]')].length,
    brokenLinks: [...document.querySelectorAll('a[href^="#"]')]
      .filter(a => !document.getElementById(decodeURIComponent(a.hash.slice(1))))
      .map(a => a.hash),
    width: document.documentElement.scrollWidth,
    height: document.documentElement.scrollHeight,
  });
})()"""


async def _render(websocket: str, url: str, shot: Path) -> tuple[dict[str, Any], list[str]]:
    """Open `url` in a new tab, wait for its load, probe it, screenshot the whole page."""
    requests: list[str] = []
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(websocket, max_msg_size=0) as ws,
    ):
        ids = iter(range(1, 1_000_000))
        pending: dict[int, asyncio.Future[Any]] = {}
        loaded = asyncio.Event()

        async def reader() -> None:
            async for msg in ws:
                data = json.loads(msg.data)
                if "id" in data and data["id"] in pending:
                    pending.pop(data["id"]).set_result(data)
                elif data.get("method") == "Network.requestWillBeSent":
                    requests.append(data["params"]["request"]["url"])
                elif data.get("method") == "Page.loadEventFired":
                    loaded.set()

        async def call(method: str, session_id: str | None = None, **params: Any) -> Any:
            n = next(ids)
            future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            pending[n] = future
            message: dict[str, Any] = {"id": n, "method": method, "params": params}
            if session_id:
                message["sessionId"] = session_id
            await ws.send_str(json.dumps(message))
            reply = await asyncio.wait_for(future, 30)
            if "error" in reply:
                raise AssertionError(f"{method}: {reply['error']}")
            return reply["result"]

        task = asyncio.create_task(reader())
        try:
            target = await call("Target.createTarget", url="about:blank")
            attached = await call(
                "Target.attachToTarget", targetId=target["targetId"], flatten=True
            )
            sid = attached["sessionId"]
            await call("Network.enable", sid)
            await call("Page.enable", sid)
            await call("Emulation.setDeviceMetricsOverride", sid, width=1200, height=900,
                       deviceScaleFactor=1, mobile=False)  # fmt: skip
            await call("Page.navigate", sid, url=url)
            await asyncio.wait_for(loaded.wait(), 30)
            probe = await call("Runtime.evaluate", sid, expression=PROBE, returnByValue=True)
            found = json.loads(probe["result"]["value"])
            image = await call(
                "Page.captureScreenshot",
                sid,
                format="png",
                captureBeyondViewport=True,
                clip={"x": 0, "y": 0, "width": 1200, "height": found["height"], "scale": 1},
            )
            shot.parent.mkdir(parents=True, exist_ok=True)
            shot.write_bytes(base64.b64decode(image["data"]))
            await call("Target.closeTarget", targetId=target["targetId"])
        finally:
            task.cancel()
    return found, requests


def render(
    browser: Browser, view: RunView, name: str, tmp: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[dict[str, Any], list[str]]:
    html = tmp / f"{name}.html"
    html.write_text(page(view))
    shot = ARTIFACTS / f"{name}.png"
    found, requests = asyncio.run(_render(browser.websocket, html.as_uri(), shot))
    assert shot.stat().st_size > 10_000
    with capsys.disabled():  # in the CI log even when the test passes
        print(f"\nreport screenshot: {shot} ({found['width']}x{found['height']} px)")
    return found, requests


def test_the_final_report_renders_accessibly_from_the_file_alone(
    browser: Browser, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found, requests = render(browser, view_after(16), "report", tmp_path, capsys)
    # Nothing but the page itself was requested: no font, script, style or image.
    assert requests == [(tmp_path / "report.html").as_uri()]
    assert found["scripts"] == 0 and found["external"] == 0
    assert found["title"] == "Run run-five-files: Complete (revision 3)"
    assert found["h1"] == "Run run-five-files"
    assert found["headings"] == ["Status block", "Revision timeline", "Narratives", "Evidence"]
    assert found["banner"]["text"].startswith("Status: Complete Account time: revision 3 of 3")
    assert found["banner"]["size"][1] > 40  # laid out, not collapsed
    tables = {t["caption"]: t for t in found["tables"]}
    assert tables["Checks"]["colHeaders"] == 6 and tables["Checks"]["rowHeaders"] == 1
    assert tables["Artifacts of the candidate snapshot snap-2"]["rows"] == 5
    assert all(t["caption"] and t["colHeaders"] and t["rowHeaders"] == t["rows"]
               for t in found["tables"])  # fmt: skip
    assert found["brokenLinks"] == []
    # Every claim is marked and its verdict written beside it, not only coloured.
    assert [(m["text"], m["tag"]) for m in found["marks"]] == [
        ("Done", "supported"),
        ("all tests pass", "supported"),
        ("the release-notes draft is published", "supported"),
    ]
    assert found["width"] <= 1200  # no sideways scrolling at a laptop's width


def test_unknown_is_written_and_styled_apart_from_failure(
    browser: Browser, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """At revision 1 the check is stale and the draft's outcome unknown: their states
    read "not confirmed" in a colour and marker of their own, never the failure red; the
    contradicted claims are the failures, and say so in words."""
    found, _ = render(browser, view_after(13), "report-unresolved", tmp_path, capsys)
    assert found["title"] == "Run run-five-files: Unresolved: not confirmed (revision 1)"
    assert found["banner"]["style"] == "dashed"  # unknown, not failed: no red banner
    states = found["states"]
    failed = {s["color"] for s in states if "tone-failed" in s["cls"]}
    unknown = [s for s in states if "tone-unknown" in s["cls"]]
    texts = {s["text"] for s in unknown}
    assert {"not confirmed", "not confirmed: stale", "not confirmed: unknown"} <= texts
    assert all(s["marker"] == '"?"' for s in unknown)
    assert not any("fail" in s["text"] for s in unknown)
    assert failed and all(s["color"] not in failed for s in unknown)
    assert found["banner"]["border"] not in failed
    contradicted = [m for m in found["marks"] if m["tag"] == "contradicted"]
    assert [m["text"] for m in contradicted] == [
        "Done",
        "all tests pass",
        "the release-notes draft is published",
    ]
    assert all(m["cls"] == "tone-failed" for m in contradicted)
    assert found["brokenLinks"] == []
