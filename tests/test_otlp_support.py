"""GenAI spans made with the real opentelemetry-sdk, for the OTLP receiver's tests.

`Recorder` is a tracer provider whose finished spans stay in memory; `request()` encodes
them with the encoder the OTLP exporters use, and `otlp_json` writes a request in the
OTLP/JSON encoding (ids as hex, as the OTLP specification has it).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import orjson
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

AttributeValue = str | bool | int | float | Sequence[str]


def messages(role: str, text: str) -> str:
    """A `gen_ai.input.messages` / `gen_ai.output.messages` value (JSON string form)."""
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


class Recorder:
    """A tracer provider keeping its finished spans."""

    def __init__(self, resource: Mapping[str, str] | None = None) -> None:
        self.memory = InMemorySpanExporter()
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": "test-agent", **(resource or {})})
        )
        self.provider.add_span_processor(SimpleSpanProcessor(self.memory))
        self.tracer = self.provider.get_tracer("tests.otlp")

    @contextmanager
    def span(self, name: str, **attributes: AttributeValue) -> Iterator[Span]:
        with self.tracer.start_as_current_span(name, attributes=attributes) as span:
            assert isinstance(span, Span)
            yield span

    @contextmanager
    def agent(
        self, request: str | None, answer: str | None, **extra: AttributeValue
    ) -> Iterator[Span]:
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "coder",
            **extra,
        }
        if request is not None:
            attributes["gen_ai.input.messages"] = messages("user", request)
        if answer is not None:
            attributes["gen_ai.output.messages"] = messages("assistant", answer)
        with self.span("invoke_agent coder", **attributes) as span:
            yield span

    def tool(
        self,
        name: str,
        arguments: Any = None,
        result: Any = None,
        call_id: str | None = None,
        error: str | None = None,
    ) -> None:
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
        }
        if call_id is not None:
            attributes["gen_ai.tool.call.id"] = call_id
        if arguments is not None:
            attributes["gen_ai.tool.call.arguments"] = json.dumps(arguments)
        if result is not None:
            attributes["gen_ai.tool.call.result"] = (
                result if isinstance(result, str) else json.dumps(result)
            )
        with self.span(f"execute_tool {name}", **attributes) as span:
            if error is not None:
                span.set_attribute("error.type", error)
                span.set_status(Status(StatusCode.ERROR, f"{error} raised"))

    def finished(self) -> tuple[ReadableSpan, ...]:
        return self.memory.get_finished_spans()

    def request(self) -> ExportTraceServiceRequest:
        return encode_spans(self.finished())


def otlp_json(request: ExportTraceServiceRequest) -> bytes:
    """`request` in the OTLP/JSON encoding: ids as hex strings, not base64."""
    document = json_format.MessageToDict(request)

    def hexify(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str):
                    node[key] = base64.b64decode(value).hex()
                else:
                    hexify(value)
        elif isinstance(node, list):
            for item in node:
                hexify(item)

    hexify(document)
    return orjson.dumps(document)
