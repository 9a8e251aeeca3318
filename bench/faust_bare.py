"""A bare faust agent: the yardstick for the faust engine (issue 28).

It consumes the input topics with faust (the same aiokafka consumer, event loop and
per-record stream path as `outcomes worker --engine faust`) and decodes each record with
`Codec().decode_event_fast`, nothing else: no validation, run log, fold, tables, sends or
sensors. `bench.bench_worker` runs it over the same load as the engines, in the same
run, and reports the faust engine's rate against it.

    python -m outcomes.bench.faust_bare BOOTSTRAP APP_ID EXPECTED OUT_JSON

The group `APP_ID` must already hold committed offsets where the load starts. Once
`EXPECTED` records were decoded (or nothing came for 10 s after the first) it writes
`{"records", "decoded", "failed", "seconds"}` to OUT_JSON (seconds: first record received to last
decoded, monotonic) and stops.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import faust

from outcomes.common.codec import Codec
from outcomes.common.errors import CodecError
from outcomes.reducers.catalog import INPUT_TOPICS

IDLE_SECONDS = 10.0


def build_app(bootstrap: str, app_id: str, expected: int, out: Path) -> Any:
    """The faust app: one agent over the input topics, decoding each record."""
    codec = Codec()
    app = faust.App(
        app_id,
        broker=[f"kafka://{server}" for server in bootstrap.split(",")],
        processing_guarantee="at_least_once",
        consumer_auto_offset_reset="earliest",
        topic_allow_declare=False,
        web_enabled=False,
        stream_wait_empty=False,
    )
    inputs = app.topic(*INPUT_TOPICS, key_serializer="raw", value_serializer="raw")
    seen = {"records": 0, "decoded": 0, "failed": 0, "first": 0.0, "last": 0.0, "done": False}

    def finish() -> None:
        if seen["done"]:
            return
        seen["done"] = True
        seconds = float(seen["last"]) - float(seen["first"])
        figures = {key: seen[key] for key in ("records", "decoded", "failed")}
        figures["seconds"] = seconds
        out.write_text(json.dumps(figures))
        os.kill(os.getpid(), signal.SIGTERM)

    @app.agent(inputs)
    async def decode(stream: Any) -> None:
        async for value in stream:
            now = time.monotonic()
            if not seen["records"]:
                seen["first"] = now
            seen["records"] = int(seen["records"]) + 1
            try:
                codec.decode_event_fast(value)
                seen["decoded"] = int(seen["decoded"]) + 1
            except CodecError:
                seen["failed"] = int(seen["failed"]) + 1  # the engine dead-letters these
            seen["last"] = time.monotonic()
            if int(seen["records"]) >= expected:
                finish()

    @app.timer(interval=1.0)
    async def stop_when_idle() -> None:
        if seen["records"] and time.monotonic() - float(seen["last"]) > IDLE_SECONDS:
            finish()

    return app


def main(argv: list[str]) -> None:
    bootstrap, app_id, expected, out = argv[0], argv[1], int(argv[2]), Path(argv[3])
    logging.getLogger("aiokafka").setLevel(logging.WARNING)
    app = build_app(bootstrap, app_id, expected, out)
    worker = faust.Worker(app, loglevel="warning", quiet=True, redirect_stdouts=False)
    with contextlib.suppress(SystemExit):  # faust exits the worker by SystemExit
        worker.execute_from_commandline()


if __name__ == "__main__":
    main(sys.argv[1:])
