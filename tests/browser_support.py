"""Runs for the run browser's tests: the five-file sample and a quiet run, folded and
written into a chDB directory the way the sink writes them."""

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
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from outcomes.reducers.answers import answer_checked_event
from outcomes.reducers.timefmt import parse_rfc3339
from outcomes.sinks import clickhouse
from outcomes.sinks.events import EventStore, row_of
from outcomes.sinks.writer import ClickHouseWriter
from tests.builders import fold_events
from tests.conftest import require

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "five_file_run.jsonl"
RUN = "run-five-files"
QUIET = "run-quiet"
# What the test runs started with (run.started's optional model and task), written here.
SAMPLE_MODEL, QUIET_MODEL, QUIET_AGENT = "model-large-2", "model-small-1", "reviewer"
SAMPLE_TASK = "Rename the five report modules and keep the whole suite green"
TOKEN = "test-token-4f9a"
SHOTS = ROOT / ".state" / "artifacts" / "browser"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
)
WIDE = {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False}
PHONE = {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True}


def sample_events() -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in SAMPLE.read_bytes().splitlines() if line.strip()]


def browsed_events() -> list[dict[str, Any]]:
    """The sample with the model and task its run.started may carry, and its final answer
    checked before display twice: sent back for repair, then passed."""
    events = sample_events()
    for event in events:
        if event["type"] == "run.started":
            event["model"], event["task"] = SAMPLE_MODEL, SAMPLE_TASK
    last = max(parse_rfc3339(e["occurred_at"]) for e in events)
    for attempt, decision, counts in (
        (1, "repair", {"supported": 1, "contradicted": 2}),
        (2, "pass", {"supported": 2}),
    ):
        events.append(
            answer_checked_event(
                run_id=RUN, answer_chain_id="final-answer", attempt=attempt,
                decision=decision, text=f"answer attempt {attempt}", counts=counts,
                account_revision=1, occurred_at=last + attempt * 1_000_000, source="gate",
            )
        )  # fmt: skip
    return events


def quiet_events() -> list[dict[str, Any]]:
    """The sample's work up to its finalize, under another run id, with no narrative: a
    run no claim was made about (so never contradicted), finished later than the sample."""
    out = []
    for event in sample_events():
        if event["type"] == "narrative.submitted":
            continue
        text = orjson.dumps(event).decode().replace(RUN, QUIET)
        moved = orjson.loads(text)
        moved["occurred_at"] = moved["occurred_at"].replace("2026-11-30T10", "2026-11-30T11")
        if moved["type"] == "run.started":
            moved["agent"], moved["model"] = QUIET_AGENT, QUIET_MODEL
        out.append(moved)
        if event["type"] == "finalize.requested":
            break
    return out


def write_runs(directory: Path) -> str:
    """A chDB directory holding both runs' outputs; the DSN. The engine is closed after."""
    clickhouse.close_all()
    dsn = f"chdb://{directory}/chdb"
    inputs = [browsed_events(), quiet_events()]
    records = [r for events in inputs for r in fold_events(events)[0]]
    writer = ClickHouseWriter(dsn)
    writer.write(records)
    # The input events, as `outcomes sink` records them from the run log.
    EventStore(writer.conn).write(
        [row_of(e, 0, n) for events in inputs for n, e in enumerate(events)]
    )
    clickhouse.close_all()
    return dsn


@contextmanager
def chromium() -> Iterator[str]:
    """A headless Chromium for the block; its DevTools websocket address. No browser:
    skip, except under CI=true, where the test fails."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    require(binary is not None, "no chromium: apt-get install -y chromium")
    assert binary is not None
    profile = Path(tempfile.mkdtemp(prefix="outcomes-browser-"))
    process = subprocess.Popen(
        [binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    websocket, log = None, []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and websocket is None:
        text = process.stderr.readline().decode(errors="replace")
        if not text and process.poll() is not None:
            break
        log.append(text.rstrip())
        found = re.search(r"DevTools listening on (ws://\S+)", text)
        websocket = found.group(1) if found else None
    if websocket is None:
        process.kill()
        pytest.fail("chromium did not start:\n" + "\n".join(log[-20:]))
    try:
        yield websocket
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(profile, ignore_errors=True)


class Tab:
    """One page over the DevTools protocol: navigate, evaluate, click, key, capture."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.ids = iter(range(1, 1 << 30))
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.loaded = asyncio.Event()
        self.requests: list[str] = []
        self.statuses: dict[str, int] = {}
        self.console: list[str] = []
        self.session = ""

    async def read(self) -> None:
        async for msg in self.ws:
            data = json.loads(msg.data)
            method = data.get("method")
            if "id" in data and data["id"] in self.pending:
                self.pending.pop(data["id"]).set_result(data)
            elif method == "Network.requestWillBeSent":
                self.requests.append(data["params"]["request"]["url"])
            elif method == "Network.responseReceived":
                response = data["params"]["response"]
                self.statuses[response["url"]] = response["status"]
            elif method == "Page.loadEventFired":
                self.loaded.set()
            elif method == "Runtime.exceptionThrown":
                self.console.append(str(data["params"]["exceptionDetails"]))

    async def call(self, method: str, **params: Any) -> Any:
        n = next(self.ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[n] = future
        message: dict[str, Any] = {"id": n, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            message["sessionId"] = self.session
        await self.ws.send_str(json.dumps(message))
        reply = await asyncio.wait_for(future, 30)
        if "error" in reply:
            raise AssertionError(f"{method}: {reply['error']}")
        return reply["result"]

    async def value(self, expression: str) -> Any:
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def load(self, action: Any) -> None:
        """Run `action` (a coroutine) and wait for the page it leads to."""
        self.loaded.clear()
        await action
        await asyncio.wait_for(self.loaded.wait(), 30)

    async def go(self, url: str) -> None:
        await self.load(self.call("Page.navigate", url=url))

    async def click(self, selector: str) -> None:
        """A real mouse click at the middle of the first element `selector` matches."""
        box = await self.value(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            await self.call(
                "Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left",
                clickCount=1,
            )  # fmt: skip

    async def key(self, key: str, code: str, keycode: int) -> None:
        for kind in ("rawKeyDown", "keyUp"):
            await self.call(
                "Input.dispatchKeyEvent", type=kind, key=key, code=code,
                windowsVirtualKeyCode=keycode,
            )  # fmt: skip

    async def shoot(self, name: str, scroll: bool = True) -> None:
        """The view at 1280x800 and at 390 px wide (full height on the phone; with
        `scroll` False, the phone's view from where the page is scrolled to)."""
        SHOTS.mkdir(parents=True, exist_ok=True)
        for suffix, metrics in (("", WIDE), ("-phone", PHONE)):
            await self.call("Emulation.setDeviceMetricsOverride", **metrics)
            await asyncio.sleep(0.2)
            clip = None
            if suffix:
                height = await self.value("document.documentElement.scrollHeight")
                top = 0 if scroll else await self.value("window.scrollY")
                clip = {"x": 0, "y": top, "width": 390, "height": min(height - top, 2400),
                        "scale": 1}  # fmt: skip
                width = await self.value("document.documentElement.scrollWidth")
                assert width <= 392, f"{name}: {width} px wide on a 390 px phone"
            shot = await self.call(
                "Page.captureScreenshot", format="png", captureBeyondViewport=bool(clip),
                **({"clip": clip} if clip else {}),
            )  # fmt: skip
            (SHOTS / f"browser-{name}{suffix}.png").write_bytes(base64.b64decode(shot["data"]))
        await self.call("Emulation.setDeviceMetricsOverride", **WIDE)
