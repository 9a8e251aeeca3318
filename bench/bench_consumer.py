"""Downstream consumer throughput on the dev broker, beside the raw consume+decode ceiling.

One run publishes notifications to a topic of its own, then measures on it:
- the raw ceiling: confluent-kafka `consume()` in batches and `Codec().decode` of each
  record, nothing else, in this process;
- the consumer SDK (`outcomes.streams.sdk.consumer.OutcomesConsumer`) with a handler that does
  nothing: decoding, typed items, filters, offset bookkeeping and commits;
- the webhook relay (`outcomes.streams.sdk.relay.WebhookRelay` as the SDK's handler) against a
  local `http.server` receiver (a process of its own) that verifies each signature and
  answers 204: one request at a time, as the relay sends them.

Each figure is notifications/s from the first record handled to the last (the group's
join is left out, and shown apart as the wall time). The receiver shares the machine's
cores with the relay and the broker. Prints figures; asserts nothing.

    .venv/bin/python -m outcomes.bench.bench_consumer [--notifications 200000] [--relayed 10000]
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing.queues import Queue
from multiprocessing.sharedctypes import Synchronized
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from outcomes.common.codec import Codec
from outcomes.common.settings import Settings
from outcomes.devtools.samples import notification
from outcomes.streams.sdk.consumer import Item, OutcomesConsumer
from outcomes.streams.sdk.relay import WebhookRelay
from outcomes.streams.sdk.webhook import verify

STATUSES = ("unresolved", "blocked", "partially_complete", "complete")


@dataclass(frozen=True)
class Figures:
    """One measurement: records handled, steady-state seconds, wall seconds."""

    name: str
    records: int
    seconds: float
    wall: float

    def line(self) -> str:
        rate = self.records / self.seconds if self.seconds > 0 else float("inf")
        return (
            f"{self.name:<34} {self.records:>7} notifications  {rate:>9,.0f} /s  "
            f"({1e6 / rate:,.1f} µs each; wall {self.wall:.1f} s with the group join)"
        )


def publish(settings: Settings, topic: str, count: int) -> None:
    codec = Codec()
    producer = Producer(
        {**settings.kafka_config(), "linger.ms": 20, "enable.idempotence": True, "acks": "all"}
    )
    runs = max(1, count // 4)
    prefix = f"bench-{uuid.uuid4().hex[:6]}"
    for i in range(count):
        run, revision = i % runs, 1 + i // runs
        status = STATUSES[(revision - 1) % 4]
        previous = None if revision == 1 else STATUSES[(revision - 2) % 4]
        record = notification(f"{prefix}-{run:06d}", revision, status, previous, revision % 60)
        while True:
            try:
                producer.produce(topic, codec.encode_output(record), record.key.encode())
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    if producer.flush(60) != 0:
        raise SystemExit("the broker did not acknowledge every notification")


def raw_ceiling(settings: Settings, topic: str, count: int) -> Figures:
    codec = Codec()
    consumer = Consumer(
        {
            **settings.kafka_config(),
            "group.id": f"bench-raw-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    started = time.perf_counter()
    first: float | None = None
    seen = 0
    try:
        while seen < count:
            for message in consumer.consume(500, 1.0):
                value = message.value()
                if message.error() is not None or value is None:
                    continue
                codec.decode(value)
                if first is None:
                    first = time.perf_counter()
                seen += 1
    finally:
        consumer.close()
    end = time.perf_counter()
    # From the first decoded to the last: seen - 1 intervals, as for the SDK below.
    return Figures("raw consume + decode (ceiling)", seen - 1, end - (first or end), end - started)


def through_sdk(
    settings: Settings, topic: str, count: int, name: str, handler: Callable[[Item], None]
) -> Figures:
    times: list[float] = []

    def timed(item: Item) -> None:
        handler(item)
        times.append(time.perf_counter())

    consumer = OutcomesConsumer(
        settings,
        group=f"outcomes-reader-bench-{uuid.uuid4().hex[:8]}",
        topics={"notification": topic},
        from_beginning=True,
        dead_letter_topic=None,
    )
    started = time.perf_counter()
    with consumer:
        consumer.run(timed, max_items=count, idle_timeout=30)
    end = time.perf_counter()
    if len(times) < 2:
        raise SystemExit(f"{name}: only {len(times)} notifications handled")
    # From the first handled to the last: count - 1 intervals.
    return Figures(name, len(times) - 1, times[-1] - times[0], end - started)


def _nothing(item: Item) -> None:
    return


class _Receiver(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: one connection for the whole run
    secret = ""
    verified: Synchronized[int]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        verify(self.secret, body, dict(self.headers.items()))
        with self.verified.get_lock():
            self.verified.value += 1
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


def _serve(secret: str, verified: Synchronized[int], ports: Queue[int]) -> None:
    """The receiver, in a process of its own (so it does not share the relay's GIL)."""
    _Receiver.secret = secret
    _Receiver.verified = verified
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    ports.put(server.server_address[1])
    server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notifications", type=int, default=200_000)
    parser.add_argument("--relayed", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--bootstrap", default=None)
    args = parser.parse_args()
    settings = Settings.load(bootstrap=args.bootstrap)
    conf: dict[str, str | int | float | bool] = {**settings.kafka_config()}
    admin = AdminClient(conf)
    topic = f"bench-consumer-{uuid.uuid4().hex[:8]}"
    brokers = len(admin.list_topics(timeout=10).brokers)
    new = NewTopic(topic, num_partitions=args.partitions, replication_factor=min(3, brokers))
    admin.create_topics([new], operation_timeout=30)[topic].result()
    secret = uuid.uuid4().hex + uuid.uuid4().hex
    context = multiprocessing.get_context("spawn")
    verified = context.Value("q", 0)
    ports: Queue[int] = context.Queue()
    receiver = context.Process(target=_serve, args=(secret, verified, ports), daemon=True)
    receiver.start()
    port = ports.get(timeout=30)
    try:
        began = time.perf_counter()
        publish(settings, topic, args.notifications)
        print(
            f"published {args.notifications} notifications to {topic} "
            f"({args.partitions} partitions) in {time.perf_counter() - began:.1f} s"
        )
        figures = [raw_ceiling(settings, topic, args.notifications)]
        figures.append(
            through_sdk(
                settings, topic, args.notifications, "consumer SDK (handler does nothing)", _nothing
            )
        )
        relay = WebhookRelay(f"http://127.0.0.1:{port}/hook", secret)
        try:
            figures.append(
                through_sdk(
                    settings,
                    topic,
                    args.relayed,
                    "relay -> local receiver (204)",
                    relay.deliver,
                )
            )
        finally:
            relay.close()
        for figure in figures:
            print(figure.line())
        print(
            f"receiver (a process of its own) verified {verified.value} signed requests; "
            f"relay: {relay.stats.delivered} delivered, {relay.stats.failed_attempts} retried"
        )
    finally:
        receiver.terminate()
        receiver.join(10)
        admin.delete_topics([topic], operation_timeout=30)[topic].result()


if __name__ == "__main__":
    main()
