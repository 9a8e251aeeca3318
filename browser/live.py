"""Live: what the notification topics say, handed to every open page as server-sent events.

One consumer (the consumer SDK, streams/sdk/consumer.py) per browser process reads the
notification and claim-notification topics in a group of its own that never commits (a
live view changes nothing on the broker) and publishes each item to the `Feed`; each open
`/events` stream holds a bounded queue of it. A page told that run R reached revision N
asks for its fragment again with `wait=R:N`, and the server answers once ClickHouse holds
that revision (the sink writes it moments after the worker announced it).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from outcomes.common.settings import Settings

log = logging.getLogger(__name__)

QUEUE_ITEMS = 256
"""Per open page: a page that reads slower than this many items is told to reload."""
KEEPALIVE_SECONDS = 15.0


@dataclass
class Feed:
    """Fan-out of live items to the open event streams (thread-safe publish)."""

    _subscribers: set[tuple[asyncio.AbstractEventLoop, asyncio.Queue[bytes | None]]] = field(
        default_factory=set
    )
    _lock: threading.Lock = field(default_factory=threading.Lock)
    published: int = 0

    def publish(self, item: dict[str, Any]) -> None:
        """Send `item` (a JSON object) to every open stream, from any thread."""
        data = b"data: " + orjson.dumps(item) + b"\n\n"
        with self._lock:
            self.published += 1
            targets = list(self._subscribers)
        for loop, queue in targets:
            loop.call_soon_threadsafe(_offer, queue, data)

    async def stream(self, is_gone: Callable[[], Any]) -> AsyncGenerator[bytes, None]:
        """One page's event stream until it disconnects: items, and a comment line every
        `KEEPALIVE_SECONDS` so proxies and the page know the stream is alive."""
        queue: asyncio.Queue[bytes | None] = asyncio.Queue(QUEUE_ITEMS)
        entry = (asyncio.get_running_loop(), queue)
        with self._lock:
            self._subscribers.add(entry)
        try:
            yield b"retry: 2000\n: connected\n\n"
            while True:
                try:
                    data = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
                except TimeoutError:
                    if await is_gone():
                        return
                    yield b": keepalive\n\n"
                    continue
                if data is None:  # overflowed: the page reloads what it shows
                    yield b"event: overflow\ndata: {}\n\n"
                    return
                yield data
        finally:
            with self._lock:
                self._subscribers.discard(entry)


def _offer(queue: asyncio.Queue[bytes | None], data: bytes) -> None:
    try:
        queue.put_nowait(data)
    except asyncio.QueueFull:
        while not queue.empty():
            queue.get_nowait()
        queue.put_nowait(None)


def item_message(item: Any) -> dict[str, Any]:
    """What a page needs of a consumer item: which run, which revision, its status."""
    body = item.body
    return {
        "record": item.record,
        "kind": item.kind,
        "run_id": item.run_id,
        "revision": int(body.get("revision") or 0),
        "status": body.get("status"),
        "previous_status": body.get("previous_status"),
    }


class LiveSource:
    """The consumer thread that feeds a `Feed` from the notification topics."""

    def __init__(self, feed: Feed, bootstrap: str | None = None) -> None:
        # lazy: the consumer SDK (confluent-kafka) only when the browser goes live
        from outcomes.streams.sdk.consumer import OutcomesConsumer

        settings = Settings.load(bootstrap=bootstrap)
        self.feed = feed
        self.consumer = OutcomesConsumer(
            settings,
            group=f"outcomes-reader-ui-{uuid.uuid4().hex[:12]}",
            records=("notification", "claim_notification"),
            commit=False,
            dead_letter_topic=None,
            config={"queued.max.messages.kbytes": 16_384},
        )
        self._thread = threading.Thread(target=self._run, name="browser-live", daemon=True)

    def start(self) -> LiveSource:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self.consumer.run(lambda item: self.feed.publish(item_message(item)))
        except Exception:  # the pages keep working, without live updates
            log.exception("the live feed stopped")

    def wait_assigned(self, timeout: float) -> bool:
        """Whether the consumer was given its partitions within `timeout` seconds: from
        then on every new notification reaches the open pages (it starts at the end)."""
        deadline = time.monotonic() + timeout
        while not self.consumer.assignment:
            if time.monotonic() >= deadline or not self._thread.is_alive():
                return False
            time.sleep(0.1)
        return True

    def stop(self) -> None:
        self.consumer.stop()
        self._thread.join(10)
        self.consumer.close()
