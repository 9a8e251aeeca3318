"""The OTLP receiver without a broker: GenAI spans made by the real opentelemetry-sdk,
mapped to canonical events (what each span shows, and no more), and the OTLP/HTTP
protocol in both encodings, with bad input refused in one line.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest
from google.protobuf import json_format
from google.rpc.status_pb2 import Status
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import Status as SpanStatus
from opentelemetry.trace import StatusCode

from outcomes.common.errors import DeliveryError, FailedDelivery
from outcomes.importers import otlp_server
from outcomes.importers.commands import read_command, tool_effect
from outcomes.importers.otlp import map_request
from outcomes.importers.otlp_http import parse_json
from outcomes.importers.otlp_server import Answer, Receiver, make_server
from outcomes.reducers.validate import parse_event
from outcomes.streams.sdk.producer import OutcomesProducer
from tests.cli_support import outcomes
from tests.http_support import NoAnswer, chunked, exchange, request_bytes
from tests.test_otlp_support import Recorder, messages, otlp_json

PYTEST_OK = "....\n4 passed in 0.12s\n"
PYTEST_FAILED = "..F.\n=== 1 failed, 3 passed in 0.31s ===\n"
GO_OK = ("pass", 1, "suite")  # go prints no count without -v: the runner's success


def events_of(request: ExportTraceServiceRequest) -> list[dict[str, Any]]:
    mapped = map_request(request)
    for event in mapped.events:
        parse_event(event)  # every event is canonical (SPEC 2)
    return mapped.events


def by_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def one_run() -> Recorder:
    """An agent run: a model call, a passing pytest run, a failing fetch, the answer."""
    recorder = Recorder()
    with recorder.agent("Fix the retry bug in src/retry.py", "Fixed the bug; all tests pass."):
        with recorder.span("chat gpt-5", **{"gen_ai.operation.name": "chat"}):
            pass
        recorder.tool("bash", {"command": "python -m pytest -q"}, PYTEST_OK, call_id="call_1")
        recorder.tool("fetch", {"url": "https://example.org"}, error="TimeoutError")
    return recorder


# -- mapping ---------------------------------------------------------------------------


def test_an_agent_span_starts_states_narrates_and_finalizes_the_run() -> None:
    events = events_of(one_run().request())
    runs = {e["run_id"] for e in events}
    assert len(runs) == 1 and runs.pop().startswith("otlp-")
    (started,) = by_type(events, "run.started")
    assert started["agent"] == "coder" and started["requested_by"] == "unknown"
    assert started["source"] == "otlp:test-agent"
    (goal,) = by_type(events, "goal.revised")
    assert goal["authored_by"] == "user" and goal["deliverables"] == []
    (narrative,) = by_type(events, "narrative.submitted")
    assert narrative["text"] == "Fixed the bug; all tests pass."
    (finalize,) = by_type(events, "finalize.requested")
    assert finalize["candidate_snapshot"] is None
    assert finalize["occurred_at"] >= narrative["occurred_at"] >= started["occurred_at"]
    assert len(by_type(events, "inference.started")) == 1


def test_a_tool_span_is_an_action_whose_outcome_is_the_span_status() -> None:
    events = events_of(one_run().request())
    finished = {e["tool"]: e for e in by_type(events, "tool.finished")}
    assert finished["bash"]["action_id"] == "call_1"  # gen_ai.tool.call.id
    assert finished["bash"]["outcome"] == "succeeded"
    assert finished["fetch"]["outcome"] == "failed"
    assert finished["fetch"]["error_class"] == "TimeoutError"
    assert finished["fetch"]["action_id"].startswith("otlp-")  # no call id: the span's
    started = {e["action_id"] for e in by_type(events, "tool.started")}
    assert started == {e["action_id"] for e in finished.values()}


def test_an_error_status_without_error_type_still_fails_the_tool() -> None:
    recorder = Recorder()
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "write"}
    with recorder.span("execute_tool write", **attributes) as span:
        span.set_status(SpanStatus(StatusCode.ERROR, "disk full"))
    (finished,) = by_type(events_of(recorder.request()), "tool.finished")
    assert (finished["outcome"], finished["error_class"]) == ("failed", "error")


@pytest.mark.parametrize(
    ("command", "result", "expected"),
    [
        ("python -m pytest -q", PYTEST_OK, ("pass", 4, "suite")),
        ("pytest tests/test_retry.py", PYTEST_FAILED, ("fail", 4, "focused")),
        ("cd repo && cargo test", "test result: ok. 7 passed; 0 failed;", ("pass", 7, "suite")),
        ("npx jest", "Tests:       2 failed, 5 passed, 7 total", ("fail", 7, "suite")),
        ("go test", {"stdout": "ok  \texample.com/x\t0.1s\n", "exit_code": 0}, GO_OK),
        ("make test", {"output": "...", "exit_code": 2}, ("fail", 0, "suite")),
        ("ruff check .", "All checks passed!\n", ("pass", 1, "suite")),
        ("mypy src", "Found 3 errors in 2 files (checked 9 source files)", ("fail", 0, "suite")),
        # A result that shows neither a summary nor the exit status: the check's outcome
        # is unknown, and says so.
        ("pytest -q", "collecting ... (output cut)", ("indeterminate", 0, "suite")),
    ],
)  # fmt: skip
def test_a_check_command_gets_a_receipt_from_the_runners_summary_or_exit_status(
    command: str, result: Any, expected: tuple[str, int, str]
) -> None:
    recorder = Recorder()
    recorder.tool("run_command", {"command": command}, result)
    (receipt,) = by_type(events_of(recorder.request()), "verification.receipt")
    assert (receipt["result"], receipt["tests_executed"], receipt["scope"]) == expected
    assert receipt["command"] == command


@pytest.mark.parametrize(
    ("tool", "arguments", "result"),
    [
        ("bash", {"command": "pytest -q"}, None),  # no result recorded: unknown
        ("bash", {"command": "git status"}, {"stdout": "clean", "exit_code": 0}),  # no check
        ("bash", {"command": "ls -la"}, "total 0"),
        ("search", {"command": "pytest -q"}, PYTEST_OK),  # not a shell tool
        ("bash", None, PYTEST_OK),  # the arguments show no command
    ],
)
def test_no_receipt_when_the_span_does_not_show_a_checks_result(
    tool: str, arguments: Any, result: Any
) -> None:
    recorder = Recorder()
    recorder.tool(tool, arguments, result)
    events = events_of(recorder.request())
    assert by_type(events, "verification.receipt") == []
    assert len(by_type(events, "tool.finished")) == 1  # the action is still recorded


def test_a_non_zero_exit_status_fails_the_tool() -> None:
    recorder = Recorder()
    recorder.tool(
        "bash", {"command": "make"}, {"stderr": "make: *** [all] Error 2", "exit_code": 2}
    )
    events = events_of(recorder.request())
    (finished,) = by_type(events, "tool.finished")
    assert (finished["outcome"], finished["error_class"]) == ("failed", "exit_code:2")
    (receipt,) = by_type(events, "verification.receipt")
    assert receipt["result"] == "fail"


def test_commits_and_pushes_are_effects_in_the_state_their_output_shows() -> None:
    recorder = Recorder()
    commit = {"stdout": "[main 1a2b3c4] fix retry\n 1 file changed\n", "exit_code": 0}
    recorder.tool("bash", {"command": 'git commit -am "fix"'}, commit, call_id="c1")
    rejected = " ! [rejected]        main -> main (fetch first)\nerror: failed to push some refs"
    recorder.tool("bash", {"command": "git push"}, {"stderr": rejected, "exit_code": 1}, "c2")
    recorder.tool("bash", {"command": "git push"}, None, call_id="c3")  # no result recorded
    events = events_of(recorder.request())
    intents = {e["intent_id"]: e["effect_class"] for e in by_type(events, "effect.intent")}
    # The classes are the shared reading's (importers/commands.py), as for every importer.
    push_class = read_command("git push", rejected, 1).effects[0].effect_class
    assert intents == {"c1:commit:0": "write", "c2:push:0": push_class}
    receipts = {e["intent_id"]: e for e in by_type(events, "effect.receipt")}
    assert receipts["c1:commit:0"]["receipt_id"] == "1a2b3c4"
    assert receipts["c1:commit:0"]["observed"] == "present"
    assert receipts["c2:push:0"]["observed"] == "failed"


def test_a_tool_named_like_an_effect_is_one() -> None:
    recorder = Recorder()
    recorder.tool("send_email", {"to": "ana@example.org"}, call_id="m1")  # no result shown
    recorder.tool("send_email", {"to": "bo@example.org"}, "SMTP refused", "m2", "SMTPError")
    events = events_of(recorder.request())
    intents = {e["intent_id"][:2]: e["effect_class"] for e in by_type(events, "effect.intent")}
    effect = tool_effect("send_email", {"to": "ana@example.org"}, None, None)
    assert effect is not None
    assert intents == {"m1": effect.effect_class, "m2": effect.effect_class}
    states = [(e["intent_id"][:2], e["state"]) for e in by_type(events, "effect.transition")]
    assert ("m1", "unknown") in states  # the call's result is not recorded
    (receipt,) = by_type(events, "effect.receipt")
    assert receipt["intent_id"].startswith("m2:") and receipt["observed"] == "failed"


def test_the_same_span_always_gives_the_same_event_ids() -> None:
    recorder = one_run()
    first, again = events_of(recorder.request()), events_of(recorder.request())
    assert first == again
    ids = [e["event_id"] for e in first]
    assert len(set(ids)) == len(ids)
    # Encoded through JSON and back: still the same events.
    assert events_of(parse_json(otlp_json(recorder.request()))) == first


def test_the_resource_can_name_the_run() -> None:
    recorder = Recorder({"outcomes.run_id": "task-42"})
    recorder.tool("bash", {"command": "ls"}, "x")
    assert {e["run_id"] for e in events_of(recorder.request())} == {"task-42"}


def test_an_agent_span_shows_only_what_it_has() -> None:
    recorder = Recorder()
    with recorder.agent(None, None):
        pass
    events = events_of(recorder.request())
    assert [e["type"] for e in events] == ["run.started", "finalize.requested"]


@pytest.mark.parametrize(
    ("error", "kind"), [("TimeoutError", "run.interrupted"), ("CancelledError", "run.cancelled")]
)
def test_an_agent_span_that_failed_interrupts_the_run(error: str, kind: str) -> None:
    recorder = Recorder()
    with recorder.agent("Do it", None) as span:
        span.set_attribute("error.type", error)
        span.set_status(SpanStatus(StatusCode.ERROR, "gave up"))
    events = events_of(recorder.request())
    (end,) = by_type(events, kind)
    assert end["reason"] == f"{error}: gave up"
    assert by_type(events, "finalize.requested") == []


def test_a_trace_that_is_one_model_call_or_one_chain_is_a_run() -> None:
    recorder = Recorder()
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": messages("user", "Summarize the changelog"),
        "gen_ai.output.messages": messages("assistant", "The release fixes two bugs."),
    }
    with recorder.span("chat gpt-5", **chat):
        pass
    chain = {
        "openinference.span.kind": "CHAIN",
        "input.value": "Rename the module",
        "output.value": "Renamed it.",
    }
    inner = {"openinference.span.kind": "CHAIN"}
    with recorder.span("RunnableSequence", **chain), recorder.span("inner", **inner):
        pass
    mapped = map_request(recorder.request())
    kinds = [e["type"] for e in mapped.events]
    assert kinds == [
        "run.started", "inference.started", "goal.revised", "narrative.submitted",
        "finalize.requested",
        "run.started", "goal.revised", "narrative.submitted", "finalize.requested",
    ]  # fmt: skip
    assert [e["text"] for e in by_type(mapped.events, "narrative.submitted")] == [
        "The release fixes two bugs.",
        "Renamed it.",
    ]
    assert len({e["run_id"] for e in mapped.events}) == 2
    # A chain below the root is glue, not a run: rejected, with the reason.
    assert [r.reason for r in mapped.rejections] == [
        "operation 'openinference:CHAIN' has no outcome event"
    ]


@pytest.mark.parametrize(
    "flattened",
    [
        {"llm.request.type": "chat", "gen_ai.prompt.0.role": "system",
         "gen_ai.prompt.0.content": "Be brief.", "gen_ai.prompt.1.role": "user",
         "gen_ai.prompt.1.content": "Summarize the changelog",
         "gen_ai.completion.0.role": "assistant",
         "gen_ai.completion.0.content": "Two bug fixes."},
        {"openinference.span.kind": "LLM", "llm.input_messages.0.message.role": "user",
         "llm.input_messages.0.message.content": "Summarize the changelog",
         "llm.output_messages.0.message.role": "assistant",
         "llm.output_messages.0.message.content": "Two bug fixes."},
    ],
)  # fmt: skip
def test_messages_flattened_into_indexed_attributes_are_read(flattened: dict[str, str]) -> None:
    recorder = Recorder()
    with recorder.span("chat", **flattened):
        pass
    events = events_of(recorder.request())
    assert len(by_type(events, "goal.revised")) == 1
    assert [e["text"] for e in by_type(events, "narrative.submitted")] == ["Two bug fixes."]


def test_spans_that_cannot_be_mapped_are_rejected_with_a_reason() -> None:
    recorder = Recorder()
    with recorder.span("GET /health"):
        pass
    with recorder.span("embeddings x", **{"gen_ai.operation.name": "embeddings"}):
        pass
    with recorder.span("execute_tool", **{"gen_ai.operation.name": "execute_tool"}):
        pass
    mapped = map_request(recorder.request())
    assert mapped.events == [] and mapped.spans == 3
    reasons = sorted(r.reason for r in mapped.rejections)
    assert reasons == [
        "execute_tool span without gen_ai.tool.name",
        "not a GenAI span (no gen_ai.operation.name, OpenInference or OpenLLMetry kind)",
        "operation 'embeddings' has no outcome event",
    ]


def test_spans_with_impossible_ids_or_times_are_rejected() -> None:
    recorder = Recorder()
    recorder.tool("bash", {"command": "ls"}, "x")
    recorder.tool("bash", {"command": "ls"}, "y")
    recorder.tool("bash", {"command": "ls"}, "z")
    request = recorder.request()
    first, second, third = request.resource_spans[0].scope_spans[0].spans
    first.start_time_unix_nano = 0  # never set
    second.span_id = b"\x01\x02"
    third.end_time_unix_nano = third.start_time_unix_nano - 1
    mapped = map_request(request)
    assert mapped.events == []
    assert [r.reason.split(" (")[0] for r in mapped.rejections] == [
        "the span has no valid start and end time",
        "the span has no valid trace_id/span_id",
        "the span has no valid start and end time",
    ]


def test_openinference_openllmetry_and_pydantic_ai_spans() -> None:
    recorder = Recorder()
    with recorder.span(
        "agent", **{"openinference.span.kind": "AGENT", "input.value": "Rename the module",
                    "output.value": "Renamed it."}
    ):  # fmt: skip
        with recorder.span(
            "shell", **{"openinference.span.kind": "TOOL", "tool.name": "shell",
                        "input.value": json.dumps({"command": "pytest"}), "output.value": PYTEST_OK}
        ):  # fmt: skip
            pass
        with recorder.span(
            "lint.tool", **{"traceloop.span.kind": "tool", "traceloop.entity.name": "run_cmd",
                            "traceloop.entity.input": json.dumps({"cmd": "ruff check ."}),
                            "traceloop.entity.output": json.dumps("Found 2 errors.")}
        ):  # fmt: skip
            pass
        with recorder.span("openai.chat", **{"llm.request.type": "chat"}):
            pass
        pydantic_ai = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "sh",
            "tool_arguments": json.dumps({"command": "cargo test"}),
            "tool_response": "test result: ok. 3 passed; 0 failed;",
        }
        with recorder.span("running tool: sh", **pydantic_ai):
            pass
    events = events_of(recorder.request())
    assert [e["text"] for e in by_type(events, "narrative.submitted")] == ["Renamed it."]
    assert len(by_type(events, "goal.revised")) == 1
    receipts = {e["label"]: e["result"] for e in by_type(events, "verification.receipt")}
    assert receipts == {"pytest": "pass", "ruff check .": "fail", "cargo test": "pass"}
    assert len(by_type(events, "inference.started")) == 1


def test_the_account_from_the_spans(tmp_path: Path) -> None:
    """Replayed, the events give the account the spans show: the run is complete, the
    pytest check passes, the failed fetch is a failed action, the narrative's claims are
    supported."""
    events = events_of(one_run().request())
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    out = tmp_path / "records.jsonl"
    proc = outcomes("replay", str(path), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    records = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert not [r for r in records if r["record"] == "dead_letter"]
    account = [r for r in records if r["record"] == "account_revision"][-1]
    assert account["status"] == "complete"
    assert [(c["label"], c["state"]) for c in account["checks"]] == [("pytest -q", "passing")]
    assert sorted(a["outcome"] for a in account["actions"]) == ["failed", "succeeded"]
    current: dict[str, str] = {}
    for verdict in (r for r in records if r["record"] == "claim_verdict"):
        current[verdict["claim_id"]] = verdict["verdict"]
    assert sorted(current.values()) == ["supported", "supported"]


# -- OTLP/HTTP -------------------------------------------------------------------------


class Sink:
    """Records what the receiver publishes; `fail` makes the next flush fail."""

    def __init__(self) -> None:
        self.events: list[Mapping[str, Any]] = []
        self.fail = False

    def publish(self, event: Mapping[str, Any]) -> str:
        self.events.append(event)
        return str(event["event_id"])

    def flush(self, timeout: float | None = None) -> None:
        if self.fail:
            raise DeliveryError([FailedDelivery("x", "outcomes.tool.v1", "broker down")])


def response(answer: Answer, encoding: str = "protobuf") -> ExportTraceServiceResponse:
    assert answer.status == 200, answer.body
    message = ExportTraceServiceResponse()
    if encoding == "protobuf":
        assert answer.content_type == "application/x-protobuf"
        message.ParseFromString(answer.body)
    else:
        assert answer.content_type == "application/json"
        json_format.Parse(answer.body, message)
    return message


def refusal_line(answer: Answer) -> str:
    status = Status()
    if answer.content_type == "application/json":
        json_format.Parse(answer.body, status)
    else:
        status.ParseFromString(answer.body)
    assert status.message and "\n" not in status.message
    return status.message


def mixed_request() -> ExportTraceServiceRequest:
    recorder = one_run()
    with recorder.span("GET /health"):
        pass
    return recorder.request()


def test_protobuf_and_json_give_the_same_events_and_a_partial_success() -> None:
    request = mixed_request()
    answers = {}
    sinks = {}
    for encoding, body, content_type in (
        ("protobuf", request.SerializeToString(), "application/x-protobuf"),
        ("json", otlp_json(request), "application/json; charset=utf-8"),
    ):
        sinks[encoding] = Sink()
        answers[encoding] = response(
            Receiver(sinks[encoding], log=lambda line: None).handle(body, content_type, None),
            encoding,
        )
    assert sinks["protobuf"].events == sinks["json"].events == events_of(request)
    for answer in answers.values():
        assert answer.partial_success.rejected_spans == 1
        assert "1 span(s) not mapped: 1 x not a GenAI span" in answer.partial_success.error_message
        assert "'GET /health'" in answer.partial_success.error_message


def test_a_fully_mapped_request_has_no_partial_success() -> None:
    sink = Sink()
    answer = Receiver(sink).handle(
        one_run().request().SerializeToString(), "application/x-protobuf", None
    )
    assert not response(answer).HasField("partial_success")
    assert len(sink.events) == len(events_of(one_run().request()))


def test_gzip_bodies_are_accepted() -> None:
    request = one_run().request()
    sink = Sink()
    body = gzip.compress(request.SerializeToString())
    response(Receiver(sink).handle(body, "application/x-protobuf", "gzip"))
    assert sink.events == events_of(request)


@pytest.mark.parametrize(
    ("body", "content_type", "encoding", "status", "says"),
    [
        (b"\x0a\x05garbage", "application/x-protobuf", None, 400, "undecodable protobuf"),
        (b"{not json", "application/json", None, 400, "invalid JSON"),
        (b"[1, 2]", "application/json", None, 400, "not an object"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}',
         "application/json", None, 400, "not a hex string"),
        (b'{"resourceSpans": 3}', "application/json", None, 400, "not an OTLP/JSON"),
        (b"hello", "text/plain", None, 415, "unsupported Content-Type text/plain"),
        (b"", None, None, 415, "unsupported Content-Type none"),
        (b"x", "application/x-protobuf", "br", 415, "unsupported Content-Encoding br"),
        (b"not gzip", "application/x-protobuf", "gzip", 400, "invalid gzip body"),
        (gzip.compress(b"x" * 5000), "application/x-protobuf", "gzip", 413, "once decompressed"),
    ],
)  # fmt: skip
def test_bad_requests_are_refused_in_one_line(
    body: bytes, content_type: str | None, encoding: str | None, status: int, says: str
) -> None:
    sink = Sink()
    logged: list[str] = []
    receiver = Receiver(sink, max_body_bytes=4096, log=logged.append)
    answer = receiver.handle(body, content_type, encoding)
    assert answer.status == status
    assert says in refusal_line(answer)
    assert sink.events == []
    assert logged and says in logged[0]
    assert receiver.counters.refused_requests == 1


def test_an_undelivered_request_is_503_and_its_retry_publishes_the_same_ids() -> None:
    body = one_run().request().SerializeToString()
    sink = Sink()
    sink.fail = True
    receiver = Receiver(sink, log=lambda line: None)
    answer = receiver.handle(body, "application/x-protobuf", None)
    assert answer.status == 503 and ("Retry-After", "5") in answer.headers
    assert "broker down" in refusal_line(answer)
    failed = [e["event_id"] for e in sink.events]
    sink.fail = False
    sink.events.clear()
    response(receiver.handle(body, "application/x-protobuf", None))
    assert [e["event_id"] for e in sink.events] == failed


def test_with_the_real_producer_and_no_broker_the_answer_is_503() -> None:
    """The producer SDK's delivery failure (no broker within the message timeout) is a
    503 the exporter retries, not a 200 for events that were never stored."""
    producer = OutcomesProducer(bootstrap="127.0.0.1:1", source="test", message_timeout_ms=300)
    try:
        receiver = Receiver(producer, flush_timeout=5.0, log=lambda line: None)
        body = one_run().request().SerializeToString()
        answer = receiver.handle(body, "application/x-protobuf", None)
    finally:
        with contextlib.suppress(DeliveryError):
            producer.close(timeout=1.0)
    assert answer.status == 503 and ("Retry-After", "5") in answer.headers
    assert "did not take this request's events" in refusal_line(answer)
    assert receiver.counters.undelivered_requests == 1


def test_the_command_says_in_one_line_when_no_broker_answers() -> None:
    proc = outcomes("otlp", "--port", "0", "--bootstrap", "127.0.0.1:1", timeout=60)
    assert proc.returncode == 1
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("outcomes otlp: error: no Kafka broker answered at 127.0.0.1:1")


def test_a_span_whose_event_is_too_large_is_rejected_whole() -> None:
    recorder = Recorder()
    with recorder.agent("Summarize", "x" * 70_000):
        pass
    recorder.tool("bash", {"command": "ls"}, "ok")
    sink = Sink()
    answer = response(Receiver(sink, log=lambda line: None).handle(
        recorder.request().SerializeToString(), "application/x-protobuf", None
    ))  # fmt: skip
    assert answer.partial_success.rejected_spans == 1
    assert (
        "narrative.submitted event is invalid (too_large)" in answer.partial_success.error_message
    )
    assert {e["type"] for e in sink.events} == {"tool.started", "tool.finished"}


# -- a real HTTP server and the real exporter ------------------------------------------


@pytest.fixture
def served() -> Iterator[tuple[str, Sink]]:
    sink = Sink()
    with make_server(Receiver(sink, log=lambda line: None), "127.0.0.1", 0) as server:
        yield f"http://127.0.0.1:{server.address[1]}", sink


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip])
def test_the_opentelemetry_exporter_exports_to_the_receiver(
    served: tuple[str, Sink], compression: Compression
) -> None:
    url, sink = served
    recorder = one_run()
    exporter = OTLPSpanExporter(endpoint=f"{url}/v1/traces", compression=compression, timeout=10)
    try:
        assert exporter.export(recorder.finished()) == SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert sink.events == events_of(recorder.request())


def test_json_over_http_and_wrong_requests(served: tuple[str, Sink]) -> None:
    url, sink = served
    body = otlp_json(one_run().request())
    post = urllib.request.Request(
        f"{url}/v1/traces", body, {"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(post, timeout=10) as answer:
        assert answer.status == 200
        assert answer.headers["Content-Type"] == "application/json"
        assert orjson.loads(answer.read()) == {}
    assert len(sink.events) == len(events_of(one_run().request()))
    for request, status in (
        (urllib.request.Request(f"{url}/v1/traces", method="GET"), 405),
        (urllib.request.Request(f"{url}/v1/metrics", b"x", method="POST"), 404),
        (urllib.request.Request(f"{url}/v1/traces", b"x", {"Content-Type": "text/csv"}), 415),
    ):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == status


def test_a_bug_while_handling_is_a_500_and_the_server_keeps_serving(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken(Sink):
        def publish(self, event: Mapping[str, Any]) -> str:
            raise RuntimeError("sink bug")

    body = one_run().request().SerializeToString()
    with make_server(Receiver(Broken(), log=lambda line: None), "127.0.0.1", 0) as server:
        url = f"http://127.0.0.1:{server.address[1]}/v1/traces"
        for _ in range(2):
            post = urllib.request.Request(url, body, {"Content-Type": "application/x-protobuf"})
            with pytest.raises(urllib.error.HTTPError) as failed:
                urllib.request.urlopen(post, timeout=10)
            assert failed.value.code == 500
            status = Status.FromString(failed.value.read())
            # One line for the client, never the traceback: that goes to the log.
            assert status.message == "internal error: RuntimeError"
    logged = "\n".join(r.getMessage() + str(r.exc_info) for r in caplog.records)
    assert "sink bug" in logged


def test_concurrent_exports_are_each_answered_and_published_whole(
    served: tuple[str, Sink],
) -> None:
    url, sink = served
    recorders = [one_run() for _ in range(4)]
    results: list[SpanExportResult] = []

    def export(recorder: Recorder) -> None:
        exporter = OTLPSpanExporter(endpoint=f"{url}/v1/traces", timeout=10)
        try:
            results.extend(exporter.export(recorder.finished()) for _ in range(3))
        finally:
            exporter.shutdown()

    threads = [threading.Thread(target=export, args=(r,)) for r in recorders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert results == [SpanExportResult.SUCCESS] * 12
    expected = [e for r in recorders for e in events_of(r.request())]
    assert len(sink.events) == 3 * len(expected)
    assert {e["event_id"] for e in sink.events} == {e["event_id"] for e in expected}


def test_a_closed_receiver_answers_503() -> None:
    receiver = Receiver(Sink(), log=lambda line: None)
    receiver.close()
    answer = receiver.handle(
        one_run().request().SerializeToString(), "application/x-protobuf", None
    )
    assert answer.status == 503 and "stopping" in refusal_line(answer)


# -- the HTTP door: bodies, limits, time, and one request never waiting on another -------


def _serve(sink: Sink, **kwargs: Any) -> Any:
    return make_server(Receiver(sink, log=lambda line: None), "127.0.0.1", 0, **kwargs)


def _post(
    url: str, body: bytes, content_type: str = "application/x-protobuf", timeout: float = 30
) -> tuple[int, bytes]:
    post = urllib.request.Request(url, body, {"Content-Type": content_type}, method="POST")
    try:
        with urllib.request.urlopen(post, timeout=timeout) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read()


def test_a_request_being_mapped_does_not_hold_up_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Spans are mapped outside the receiver's lock: while one request's mapping is
    stuck (a huge command, a slow span), a request sent behind it is answered (the old
    receiver mapped under its lock, and a 2 MiB command held every exporter 154 s)."""
    slow, quick = one_run(), one_run()
    slow_traces = {f"{span.context.trace_id:032x}" for span in slow.finished()}
    entered, release = threading.Event(), threading.Event()
    real_map_span = otlp_server.map_span

    def map_span(span: Any) -> Any:
        if span.trace_id in slow_traces:
            entered.set()
            release.wait(30)
        return real_map_span(span)

    monkeypatch.setattr(otlp_server, "map_span", map_span)
    sink = Sink()
    answers: list[int] = []
    with _serve(sink) as server:
        url = f"http://127.0.0.1:{server.address[1]}/v1/traces"
        first = threading.Thread(
            target=lambda: answers.append(_post(url, slow.request().SerializeToString())[0])
        )
        first.start()
        try:
            assert entered.wait(10), "the slow request was never mapped"
            status, _ = _post(url, quick.request().SerializeToString(), timeout=10)
            assert status == 200
            assert not answers  # the first is still being mapped
            assert {e["event_id"] for e in sink.events} == {
                e["event_id"] for e in events_of(quick.request())
            }
        finally:
            release.set()
            first.join(30)
    assert answers == [200]


def test_a_two_mebibyte_command_does_not_hold_up_the_next_request() -> None:
    big = Recorder()
    with big.agent("Echo a lot", "Done."):
        big.tool("bash", {"command": "echo '" + "x" * (2 << 20) + "'"}, "ok", call_id="c1")
    sink = Sink()
    with _serve(sink, body_seconds=120) as server:
        url = f"http://127.0.0.1:{server.address[1]}/v1/traces"
        first = threading.Thread(
            target=_post, args=(url, big.request().SerializeToString()), daemon=True
        )
        first.start()
        time.sleep(0.5)  # the big one is in first
        status, _ = _post(url, one_run().request().SerializeToString(), timeout=30)
        assert status == 200


def _nested(depth: int) -> bytes:
    """A valid OTLP/JSON request with one attribute value nested `depth` arrays deep."""
    value = '{"intValue": "1"}'
    for _ in range(depth):
        value = '{"arrayValue": {"values": [' + value + "]}}"
    return (
        '{"resourceSpans": [{"resource": {"attributes": [{"key": "deep", "value": '
        + value
        + "}]}}]}"
    ).encode()


@pytest.mark.parametrize("depth", [30, 200, 330])
def test_json_nested_too_deep_is_400_in_one_line(served: tuple[str, Sink], depth: int) -> None:
    """~990 levels of JSON nesting (3 per attribute value) answered 500 with a traceback;
    past the limit it is 400 with one line, and the receiver keeps serving."""
    url, _ = served
    status, body = _post(f"{url}/v1/traces", _nested(depth), "application/json")
    if depth == 30:
        assert status == 200
        return
    assert status == 400
    assert json.loads(body)["message"] == "the JSON body nests deeper than 100 levels"
    assert body.count(b"\n") == 0
    assert _post(f"{url}/v1/traces", otlp_json(one_run().request()), "application/json")[0] == 200


def test_every_gzip_member_is_read() -> None:
    """A gzip stream of several members (RFC 1952; `cat a.gz b.gz`) is read whole: the old
    receiver read the first member and ignored the rest."""
    request = one_run().request()
    data = request.SerializeToString()
    half = len(data) // 2
    body = gzip.compress(data[:half]) + gzip.compress(data[half:])
    sink = Sink()
    response(Receiver(sink).handle(body, "application/x-protobuf", "gzip"))
    assert sink.events == events_of(request)
    receiver = Receiver(Sink(), log=lambda line: None)
    answer = receiver.handle(gzip.compress(data) + b"trailing", "application/x-protobuf", "gzip")
    assert answer.status == 400 and "invalid gzip body" in refusal_line(answer)


def test_a_decompression_bomb_is_cut_at_the_limit_across_members() -> None:
    """Members each under the limit, together over it: 413, and no more than the limit
    is ever inflated."""
    member = gzip.compress(b"\x00" * 3000)
    receiver = Receiver(Sink(), max_body_bytes=4096, log=lambda line: None)
    answer = receiver.handle(member * 2, "application/x-protobuf", "gzip")
    assert answer.status == 413 and "once decompressed" in refusal_line(answer)
    bomb = gzip.compress(b"\x00" * (256 << 20))  # 256 MiB in ~250 KiB
    answer = Receiver(Sink(), log=lambda line: None).handle(bomb, "application/x-protobuf", "gzip")
    assert answer.status == 413


@pytest.mark.parametrize("length", ["-1", "abc", "1e3", "5, 6"])
def test_a_malformed_content_length_is_400_in_one_line(
    served: tuple[str, Sink], length: str
) -> None:
    url, _ = served
    address = ("127.0.0.1", int(url.rsplit(":", 1)[1]))
    head = request_bytes(
        "POST",
        "/v1/traces",
        [("Content-Type", "application/x-protobuf"), ("Content-Length", length)],
    )
    reply = exchange(address, head, b"x" * 5, timeout=5)
    assert reply.status == 400 and reply.closed
    assert json.loads(reply.body)["error"].startswith("malformed HTTP request")
    assert reply.body.count(b"\n") == 1
    assert _post(f"{url}/v1/traces", one_run().request().SerializeToString())[0] == 200


def test_a_chunked_export_is_read_and_an_oversized_one_cut() -> None:
    run = one_run()
    body = run.request().SerializeToString()
    sink = Sink()
    receiver = Receiver(sink, max_body_bytes=len(body) + 10, log=lambda line: None)
    with make_server(receiver, "127.0.0.1", 0) as server:
        headers = [("Content-Type", "application/x-protobuf"), ("Transfer-Encoding", "chunked")]
        head = request_bytes("POST", "/v1/traces", headers)
        reply = exchange(server.address, head + chunked(body[:100], body[100:]))
        assert reply.status == 200
        assert sink.events == events_of(run.request())
        reply = exchange(server.address, head + chunked(body, b"x" * 100))
        assert reply.status == 413
        assert Status.FromString(reply.body).message.startswith("request body over")
        too_long = [("Content-Type", "application/x-protobuf"), ("Content-Length", "1000000")]
        reply = exchange(server.address, request_bytes("POST", "/v1/traces", too_long))
        assert reply.status == 413 and reply.closed  # at once: nothing was sent


def test_a_token_is_checked_before_the_body_is_read() -> None:
    sink = Sink()
    with _serve(sink, token="s3cret") as server:
        headers = [("Content-Type", "application/x-protobuf"), ("Content-Length", "500000")]
        reply = exchange(server.address, request_bytes("POST", "/v1/traces", headers), timeout=5)
        assert reply.status == 401 and reply.closed  # the 500,000 bytes never sent
        wrong = [*headers, ("Authorization", "Bearer nope")]
        assert exchange(server.address, request_bytes("POST", "/v1/traces", wrong)).status == 401
        run = one_run()
        body = run.request().SerializeToString()
        good = [
            ("Content-Type", "application/x-protobuf"),
            ("Content-Length", str(len(body))),
            ("Authorization", "Bearer s3cret"),
        ]
        reply = exchange(server.address, request_bytes("POST", "/v1/traces", good, body))
        assert reply.status == 200
        assert sink.events == events_of(run.request())
        # The real exporter, with the header its users set (OTEL_EXPORTER_OTLP_HEADERS).
        url = f"http://127.0.0.1:{server.address[1]}/v1/traces"
        for token, result in (
            ("s3cret", SpanExportResult.SUCCESS),
            ("x", SpanExportResult.FAILURE),
        ):
            exporter = OTLPSpanExporter(
                endpoint=url, headers={"Authorization": f"Bearer {token}"}, timeout=10
            )
            try:
                assert exporter.export(run.finished()) == result
            finally:
                exporter.shutdown()


def test_slow_senders_are_cut() -> None:
    with _serve(Sink(), header_seconds=1.0, body_seconds=1.0) as server:
        head = request_bytes(
            "POST",
            "/v1/traces",
            [("Content-Type", "application/x-protobuf"), ("Content-Length", "100")],
        )
        started = time.monotonic()
        reply = exchange(server.address, head + b"\x0a", timeout=15)
        assert reply.status == 408 and reply.closed
        # Headers that never end: the connection is closed without an answer.
        with pytest.raises(NoAnswer, match="closed"):
            exchange(server.address, b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n", timeout=15)
        assert time.monotonic() - started < 12
