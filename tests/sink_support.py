"""`outcomes sink` as the end-to-end tests run it: from where the test's outputs start,
into a chDB directory of the test's own, until everything the worker wrote so far is in
ClickHouse; stopped with SIGTERM at the end of the block, and it must exit 0."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from outcomes.devtools.harness import (
    KafkaConfig,
    Marks,
    commit_offsets,
    end_offsets,
    group_offsets,
)
from outcomes.reducers.catalog import OUTPUT_TOPICS

ROOT = Path(__file__).resolve().parent.parent


def wait_sunk(config: KafkaConfig, group: str, targets: dict[tuple[str, int], int]) -> None:
    """Until the sink's group has committed up to `targets` (the outputs' ends after the
    worker finished): everything the worker wrote for this test is in chDB."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        done = group_offsets(config, group, OUTPUT_TOPICS.values())
        if all(done.get(tp, -1) >= end for tp, end in targets.items()):
            return
        time.sleep(0.5)
    pytest.fail("the sink did not commit the test's outputs within 120 s")


@contextmanager
def sunk(config: KafkaConfig, bootstrap: str, marks: Marks, dsn: str, tag: str) -> Iterator[None]:
    """Inside the block, every output the test's worker wrote so far is in `dsn` and the
    sink still runs (its live query endpoint answers)."""
    targets = end_offsets(config, OUTPUT_TOPICS.values())
    group = f"test-{tag}-sink-{uuid.uuid4().hex[:8]}"
    commit_offsets(config, group, marks.outputs)
    sink = subprocess.Popen(
        [sys.executable, "-m", "outcomes.cli", "sink", "--bootstrap", bootstrap,
         "--clickhouse", dsn, "--group-id", group, "--batch-seconds", "0.2"],
        cwd=ROOT, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_sunk(config, group, targets)
        yield
    finally:
        sink.send_signal(signal.SIGTERM)
        _, err = sink.communicate(timeout=60)
    assert sink.returncode == 0, err


def sink_everything(config: KafkaConfig, bootstrap: str, marks: Marks, dsn: str, tag: str) -> None:
    """Every output the test's worker wrote so far into `dsn`, the sink stopped after."""
    with sunk(config, bootstrap, marks, dsn, tag):
        pass
