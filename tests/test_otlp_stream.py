"""`outcomes otlp` end to end: an agent instrumented with the real opentelemetry-sdk
exports its GenAI spans with the real OTLP/HTTP exporter (protobuf, gzip) to the
receiver, which publishes them to the real broker; `outcomes worker` folds them and
`outcomes sink` writes them into ClickHouse (chDB). A second run arrives as OTLP/JSON.

What the account in ClickHouse must show is what the spans show: the test run that
failed and then passed (the check passes on its latest receipt), the commit, the push the
remote rejected (so the narrative's "I pushed" is contradicted), and the same account as
`outcomes replay` of the mapped events. Every batch is exported twice, as an exporter
retrying after a lost answer would: both copies carry the same event ids and bytes, so
each event is applied once, and no dead letter is written.

Each run is named through the resource attribute `outcomes.run_id` with the harness's
prefix, so no other session on the shared broker touches it.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import orjson
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from outcomes.common.codec import Codec
from outcomes.devtools.harness import (
    Harness,
    KafkaConfig,
    finish,
    read_run_log,
)
from outcomes.importers.otlp import map_request
from tests.cli_support import outcomes
from tests.sink_support import sink_everything
from tests.test_otlp_support import Recorder, otlp_json

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow

FAILED_RUN = "..F.\n=== 1 failed, 3 passed in 0.31s ===\n"
PASSED_RUN = "....\n=== 4 passed in 0.22s ===\n"
REJECTED_PUSH = (
    "To github.com:acme/retry.git\n ! [rejected]        main -> main (fetch first)\n"
    "error: failed to push some refs to 'github.com:acme/retry.git'\n"
)
ANSWER = "Fixed the retry bug: all tests pass, and I pushed the fix to origin."


def agent_run(run_id: str) -> Recorder:
    """The spans of one agent run, as an instrumented agent records them."""
    recorder = Recorder({"outcomes.run_id": run_id, "service.name": "retry-agent"})
    with recorder.agent("Make the retry tests pass and push the fix", ANSWER):
        with recorder.span("chat gpt-5", **{"gen_ai.operation.name": "chat"}):
            pass
        recorder.tool("bash", {"command": "python -m pytest -q"}, FAILED_RUN, "call_1")
        recorder.tool("str_replace_editor", {"path": "src/retry.py"}, "edited", "call_2")
        recorder.tool("bash", {"command": "python -m pytest -q"}, PASSED_RUN, "call_3")
        commit = {"stdout": "[main 1a2b3c4] fix retry\n 1 file changed\n", "exit_code": 0}
        recorder.tool("bash", {"command": 'git commit -am "fix retry"'}, commit, "call_4")
        push = {"stderr": REJECTED_PUSH, "exit_code": 1}
        recorder.tool("bash", {"command": "git push origin main"}, push, "call_5")
        with recorder.span("GET /internal/health"):  # not a GenAI span: rejected, counted
            pass
    return recorder


def small_run(run_id: str) -> Recorder:
    recorder = Recorder({"outcomes.run_id": run_id})
    with recorder.agent("Lint the package", "The linter found nothing to fix."):
        recorder.tool("run_command", {"command": "ruff check ."}, "All checks passed!\n")
    return recorder


def start_receiver(bootstrap: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    receiver = subprocess.Popen(
        [sys.executable, "-m", "outcomes.cli", "otlp", "--port", "0", "--bootstrap", bootstrap],
        cwd=ROOT, stderr=log.open("wb"), stdout=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+/v1/traces)", log.read_text())
        if found:
            return receiver, found.group(1)
        if receiver.poll() is not None:
            pytest.fail(f"outcomes otlp exited {receiver.returncode}: {log.read_text()}")
        time.sleep(0.1)
    receiver.kill()
    pytest.fail(f"outcomes otlp did not start within 60 s: {log.read_text()}")


def show(run_id: str, *source: str) -> dict[str, Any]:
    proc = outcomes("show", run_id, *source, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    shown: dict[str, Any] = orjson.loads(proc.stdout)
    return shown


def replayed(recorders: list[Recorder], tmp: Path) -> Path:
    """`outcomes replay` of the events the spans map to (the reference)."""
    events = [e for r in recorders for e in map_request(r.request()).events]
    path = tmp / "events.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    out = tmp / "replay.jsonl"
    proc = outcomes("replay", str(path), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def test_genai_spans_exported_to_the_receiver_reach_clickhouse(
    kafka_bootstrap: str,
    kafka_config: KafkaConfig,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with Harness(kafka_config, kafka_bootstrap, tmp_path, "otlp") as harness:
        run, json_run = f"{harness.prefix}-agent", f"{harness.prefix}-json"
        spans, lint = agent_run(run), small_run(json_run)
        log = tmp_path / "otlp.log"
        receiver, url = start_receiver(kafka_bootstrap, log)
        try:
            worker = harness.worker()
            worker.start()
            # Configured as docs/integrations.md says, through the environment only.
            monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", url)
            monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip")
            exporter = OTLPSpanExporter()
            try:
                for attempt in ("first", "retry"):
                    result = exporter.export(spans.finished())
                    assert result == SpanExportResult.SUCCESS, (attempt, log.read_text())
            finally:
                exporter.shutdown()
            for _ in ("first", "retry"):
                post = urllib.request.Request(
                    url, otlp_json(lint.request()), {"Content-Type": "application/json"}
                )
                with urllib.request.urlopen(post, timeout=30) as answer:
                    assert answer.status == 200
                    assert orjson.loads(answer.read()) == {}
            finish([worker], kafka_config, timeout=180)
            forwarded = read_run_log(kafka_config, harness.marks, harness.prefix)
            outputs = harness.outputs()
        finally:
            receiver.send_signal(signal.SIGTERM)
            assert receiver.wait(60) == 0, log.read_text()
        # Idempotent: the two exports of each batch carried the same event ids with the
        # same bytes, so the pipeline applied each event once.
        copies: dict[str, set[bytes]] = {}
        codec = Codec()
        for _, _, raw in forwarded:
            event = codec.decode(raw).value
            copies.setdefault(event["event_id"], set()).add(raw)
        mapped = {e["event_id"] for r in (spans, lint) for e in map_request(r.request()).events}
        assert set(copies) == mapped
        assert all(len(versions) == 1 for versions in copies.values())
        assert outputs.of_kind("dead_letter") == {} and outputs.conflicting() == []
        summary = log.read_text()
        assert "4 request(s), 20 span(s)" in summary, summary
        assert "2 span(s) rejected, 0 request(s) refused, 0 not delivered" in summary, summary

        dsn = f"chdb://{tmp_path}/chdb"
        sink_everything(kafka_config, kafka_bootstrap, harness.marks, dsn, "otlp")

        reference = replayed([spans, lint], tmp_path)
        live = show(run, "--clickhouse", dsn)
        expected = show(run, "--from", str(reference))
        for key in ("status", "predicates", "checks", "effects", "actions", "artifacts"):
            assert live[key] == expected[key], key
        assert [(c["label"], c["state"], c["tests_executed"]) for c in live["checks"]] == [
            ("pytest -q", "passing", 4)
        ]
        effects = {e["intent_id"].split(":")[0]: e["state"] for e in live["effects"]}
        assert effects == {"call_4": "completed", "call_5": "failed"}  # commit; rejected push
        outcomes_by_action = {a["action_id"]: a["outcome"] for a in live["actions"]}
        assert outcomes_by_action["call_5"] == "failed"  # the push exited 1
        assert outcomes_by_action["call_3"] == "succeeded"
        claims = {c["span_text"]: c["verdict"] for c in live["claims"]}
        assert claims == {c["span_text"]: c["verdict"] for c in expected["claims"]}
        assert claims["all tests pass"] == "supported"
        # The remote rejected the push: "I pushed" is contradicted.
        pushed = [verdict for text, verdict in claims.items() if "pushed" in text]
        assert pushed == ["contradicted"], claims

        lint_live = show(json_run, "--clickhouse", dsn)
        lint_expected = show(json_run, "--from", str(reference))
        assert lint_live["checks"] == lint_expected["checks"]
        assert [(c["label"], c["state"]) for c in lint_live["checks"]] == [
            ("ruff check .", "passing")
        ]
        assert lint_live["status"] == "complete"
