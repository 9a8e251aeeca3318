"""The batch worker's web endpoint: `/outcomes/stats` and Prometheus `/metrics` agree
with what it did, consumer lag is exposed per partition, and other paths are 404."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from outcomes.devtools.harness import Harness, KafkaConfig, finish, wait_for

pytestmark = pytest.mark.slow
RUNS = 200


def get(port: int, path: str) -> tuple[int, str, str]:
    """(status, content type, body) of a GET on the worker's endpoint."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, "", ""


def samples(text: str) -> dict[str, float]:
    """Prometheus text exposition -> {name{labels}: value}, comments skipped."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def test_stats_and_metrics_report_the_work_done(
    kafka_bootstrap: str, kafka_config: KafkaConfig, tmp_path: Path
) -> None:
    with Harness(kafka_config, kafka_bootstrap, tmp_path, "web") as harness:
        events = harness.workload(RUNS)
        harness.produce(events)
        worker = harness.worker(web=True, until_idle=8.0)
        worker.start()
        port = worker.web_port
        assert port is not None
        wait_for(lambda: worker.progress() >= 2 * len(events), 120, "the load to be folded")

        status, kind, body = get(port, "/outcomes/stats")
        assert status == 200 and kind == "application/json"
        stats = json.loads(body)
        assert stats["engine"] == "batch"
        assert stats["forwarded"] == stats["folded"] == len(events)
        assert stats["dead_letters"] == 0
        assert stats["applied"] == len(events)
        assert stats["outputs"] > 0
        assert stats["merge_buffered"] == 0  # everything consumed was forwarded

        # librdkafka's statistics arrive every 5 s: wait for the lag gauges.
        wait_for(
            lambda: "outcomes_worker_consumer_lag{" in get(port, "/metrics")[2],
            30,
            "consumer lag on /metrics",
        )
        status, kind, body = get(port, "/metrics")
        assert status == 200 and kind.startswith("text/plain")
        metrics = samples(body)
        assert metrics["outcomes_worker_folded_total"] == len(events)
        assert metrics["outcomes_worker_forwarded_total"] == len(events)
        assert metrics["outcomes_worker_outputs_total"] == stats["outputs"]
        assert metrics["outcomes_worker_merge_buffered"] == 0
        assert metrics["outcomes_worker_restored_total"] == 0  # a new app: nothing to restore
        lags = {k: v for k, v in metrics.items() if k.startswith("outcomes_worker_consumer_lag{")}
        assert any(f'topic="{harness.run_log}"' in k for k in lags), sorted(lags)
        # Labels topic and partition, in either order (prometheus-client sorts them).
        either = r'.*\{(topic="[^"]+",partition="\d+"|partition="\d+",topic="[^"]+")\}'
        assert all(re.fullmatch(either, k) for k in lags)
        assert all(v >= 0 for v in lags.values())

        assert get(port, "/nothing-here")[0] == 404
        finish([worker], kafka_config, timeout=120)
