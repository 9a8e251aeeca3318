"""OpenTelemetry GenAI spans (an OTLP `ExportTraceServiceRequest`) as canonical events.

A pure function of the spans: the same span always gives the same events, under the same
event ids, so an exporter's retry of a batch is a redelivery the pipeline drops. Each
span is mapped on its own (no state between requests), by what it shows:

- A run is a trace: `run_id` is `otlp-<trace id>`, unless the resource carries
  `outcomes.run_id` (one run per process, set with `OTEL_RESOURCE_ATTRIBUTES`).
  `gen_ai.conversation.id` is not used: the semantic conventions put it on agent and
  model spans, not on tool spans, so a run keyed by it would lose its tools.
- An agent span (`gen_ai.operation.name` `invoke_agent` or `invoke_workflow`; the
  OpenInference kind `AGENT`; the OpenLLMetry kinds `agent`, `workflow`) starts the run
  (`run.started`), states the goal when its input shows a user request (`goal.revised`,
  authored by the user, with no deliverables or checks: the words of a request are not a
  list of files), submits its output text as the narrative (`narrative.submitted`) and,
  when it ends, asks for the account (`finalize.requested` with no snapshot: spans show
  no workspace). An agent span that ended in an error interrupts the run instead
  (`run.interrupted` with the error as the reason; `run.cancelled` when the error is a
  cancellation). The root span of a trace that is a model call or an OpenInference
  chain is the run in the same way (its input the goal, its output the narrative).
- A tool span (`execute_tool`; OpenInference `TOOL`; OpenLLMetry `tool`) is an action:
  `tool.started` and `tool.finished` under `gen_ai.tool.call.id` (or the span id). Its
  outcome is `failed` when the span ended in an error (status `ERROR`, `error.type`) or
  its result shows a non-zero exit status, else `succeeded` (the conventions leave the
  status unset when the operation raised nothing). A shell tool's command is read by
  `outcomes.importers.commands`, as in every importer: a check (test runner, build,
  linter, type checker) makes a `verification.receipt` whose result is the runner's
  summary, else the exit status, else `indeterminate`; commits, pushes, deploys and
  messages make effects in the state the result shows. A tool whose result is not
  recorded (content capture is opt-in) shows no outcome for its command: no receipt, no
  effect. A non-shell tool named like an effect (`send_email`) is that effect.
- A model span (`chat`, `generate_content`, `text_completion`; OpenInference `LLM`;
  OpenLLMetry `llm.request.type`) records the model call (`inference.started`).

Anything else (embeddings, retrieval, memory, plan spans, spans of no GenAI convention,
a tool span without a tool name) cannot be mapped: it is returned as a `Rejection` with
its reason, for the receiver to count and report, never dropped in silence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from outcomes.importers.commands import Effect
from outcomes.importers.otlp_checks import other_effect, read_shell, shell_command, tool_result
from outcomes.importers.trace import cut_task, request_goal
from outcomes.reducers.timefmt import format_rfc3339

Event = dict[str, Any]
Attributes = dict[str, Any]

NO_SNAPSHOT = "unknown"
"""`candidate_snapshot` of a receipt made from spans: they show no workspace snapshot (the
account has none either, so receipts are judged on their own, SPEC 3.3)."""

RUN_ID_ATTRIBUTE = "outcomes.run_id"
"""Resource attribute that names the run of every span the process exports."""

AGENT_OPERATIONS = frozenset({"invoke_agent", "invoke_workflow"})
TOOL_OPERATIONS = frozenset({"execute_tool"})
MODEL_OPERATIONS = frozenset({"chat", "generate_content", "text_completion"})

# OpenInference (`openinference.span.kind`) and OpenLLMetry (`traceloop.span.kind`,
# `llm.request.type`) kinds, each as the operation it stands for.
_OPENINFERENCE_KINDS = {"AGENT": "invoke_agent", "TOOL": "execute_tool", "LLM": "chat"}
_TRACELOOP_KINDS = {"agent": "invoke_agent", "workflow": "invoke_workflow", "tool": "execute_tool"}
_TRACELOOP_REQUEST_TYPES = {"chat": "chat", "completion": "text_completion"}

# Where each thing a span can show is found, first key first: the GenAI semantic
# conventions, then OpenInference, then OpenLLMetry, then Pydantic AI's first
# instrumentation (`tool_arguments`, `tool_response` beside the gen_ai tool name and id).
_TOOL_NAME = ("gen_ai.tool.name", "tool.name", "traceloop.entity.name")
_TOOL_ARGUMENTS = (
    "gen_ai.tool.call.arguments",
    "input.value",
    "traceloop.entity.input",
    "tool_arguments",
)
_TOOL_RESULT = (
    "gen_ai.tool.call.result",
    "output.value",
    "traceloop.entity.output",
    "tool_response",
)
_INPUT = ("gen_ai.input.messages", "input.value", "traceloop.entity.input")
_OUTPUT = ("gen_ai.output.messages", "output.value", "traceloop.entity.output")
_AGENT_NAME = ("gen_ai.agent.name", "traceloop.entity.name")
_USER = ("user.id", "enduser.id")
# The model a span names: GenAI's request/response model, OpenInference's, OpenLLMetry's.
_MODEL = ("gen_ai.request.model", "gen_ai.response.model", "llm.model_name", "llm.request.model")
# An instrumentation may record the messages on an event of the span instead, or
# flattened into indexed attributes.
_CONTENT_EVENTS = frozenset({"gen_ai.client.inference.operation.details"})
_FLATTENED = {
    "gen_ai.input.messages": ("gen_ai.prompt", "llm.input_messages"),
    "gen_ai.output.messages": ("gen_ai.completion", "llm.output_messages"),
}
_FLAT_KEY = re.compile(r"\.(\d+)\.(?:message\.)?(role|content)$")

_CANCELLED = re.compile(r"cancel", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Rejection:
    """A span that gives no event, and why (one line)."""

    trace_id: str
    span_id: str
    name: str
    reason: str


@dataclass(slots=True)
class Mapped:
    """What one export request gives: events in span order, and the rejected spans."""

    events: list[Event] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)
    spans: int = 0


@dataclass(frozen=True, slots=True)
class SpanView:
    """One span with its resource, its attributes decoded to Python values."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    start_ns: int
    end_ns: int
    status_code: int
    status_message: str
    attributes: Attributes
    resource: Attributes
    events: tuple[tuple[str, Attributes], ...]

    @property
    def is_root(self) -> bool:
        return not self.parent_span_id

    def first(self, keys: Sequence[str]) -> Any:
        """The value of the first of `keys` the span carries (None if none)."""
        for key in keys:
            value = self.attributes.get(key)
            if value is not None and value != "":
                return value
        return None


# -- decoding --------------------------------------------------------------------------


def any_value(value: AnyValue) -> Any:
    """An OTLP AnyValue as a Python value (None when unset)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    return getattr(value, kind)


def attributes(pairs: Iterable[KeyValue]) -> Attributes:
    return {pair.key: any_value(pair.value) for pair in pairs}


def spans(request: ExportTraceServiceRequest) -> Iterator[SpanView]:
    """Every span of the request, in request order."""
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield _view(span, resource)


def _view(span: Span, resource: Attributes) -> SpanView:
    return SpanView(
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_span_id=span.parent_span_id.hex(),
        name=span.name,
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        status_code=span.status.code,
        status_message=span.status.message,
        attributes=attributes(span.attributes),
        resource=resource,
        events=tuple((e.name, attributes(e.attributes)) for e in span.events),
    )


# -- mapping ---------------------------------------------------------------------------


def map_request(request: ExportTraceServiceRequest) -> Mapped:
    """The events of every span of `request`, and the spans that cannot be mapped."""
    mapped = Mapped()
    for span in spans(request):
        mapped.spans += 1
        outcome = map_span(span)
        if isinstance(outcome, str):
            mapped.rejections.append(Rejection(span.trace_id, span.span_id, span.name, outcome))
        else:
            mapped.events.extend(outcome)
    return mapped


def operation(span: SpanView) -> str | None:
    """The GenAI operation the span stands for, whichever convention names it."""
    named = span.attributes.get("gen_ai.operation.name")
    if isinstance(named, str) and named:
        return named
    kind = span.attributes.get("openinference.span.kind")
    if isinstance(kind, str) and kind:
        return _OPENINFERENCE_KINDS.get(kind.upper(), f"openinference:{kind.upper()}")
    kind = span.attributes.get("traceloop.span.kind")
    if isinstance(kind, str) and kind:
        return _TRACELOOP_KINDS.get(kind.lower(), f"traceloop:{kind.lower()}")
    request_type = span.attributes.get("llm.request.type")
    if isinstance(request_type, str) and request_type:
        return _TRACELOOP_REQUEST_TYPES.get(request_type, f"llm:{request_type}")
    return None


def map_span(span: SpanView) -> list[Event] | str:
    """The span's events, or the one-line reason it cannot be mapped."""
    if len(span.trace_id) != 32 or len(span.span_id) != 16:
        return "the span has no valid trace_id/span_id (16 and 8 bytes)"
    if not 0 < span.start_ns <= span.end_ns:
        return "the span has no valid start and end time (0 < start <= end)"
    op = operation(span)
    if op is None:
        return "not a GenAI span (no gen_ai.operation.name, OpenInference or OpenLLMetry kind)"
    builder = _Builder(span)
    if op in AGENT_OPERATIONS:
        return builder.agent()
    if op in TOOL_OPERATIONS:
        return builder.tool()
    if op in MODEL_OPERATIONS:
        return builder.model()
    if op == "openinference:CHAIN" and span.is_root:  # the application's whole request
        return builder.agent()
    return f"operation {op[:100]!r} has no outcome event"


class _Builder:
    """Events of one span: ids, envelope and times come from the span."""

    def __init__(self, span: SpanView) -> None:
        self.span = span
        override = span.resource.get(RUN_ID_ATTRIBUTE)
        self.run_id = (
            override if isinstance(override, str) and override else f"otlp-{span.trace_id}"
        )
        service = span.resource.get("service.name")
        self.source = f"otlp:{service}" if isinstance(service, str) and service else "otlp"

    def event(self, kind: str, event_type: str, at_ns: int, **fields: Any) -> Event:
        return {
            "event_id": f"otlp-{self.span.trace_id}-{self.span.span_id}-{kind}",
            "run_id": self.run_id,
            "type": event_type,
            "occurred_at": format_rfc3339(at_ns // 1000),
            "source": self.source,
            **fields,
        }

    # -- runs --------------------------------------------------------------------------

    def run_bounds(self) -> list[Event]:
        """`run.started` at the span's start; `finalize.requested` (or the interruption)
        at its end."""
        span = self.span
        agent = span.first(_AGENT_NAME)
        if not isinstance(agent, str):
            agent = span.resource.get("service.name")
        user = span.first(_USER)
        model = span.first(_MODEL)
        task = _request_text(_content(span, _INPUT, "gen_ai.input.messages"))
        started = self.event(
            "run-started",
            "run.started",
            span.start_ns,
            agent=agent if isinstance(agent, str) and agent else "unknown",
            requested_by=f"user:{user}" if isinstance(user, str) and user else "unknown",
            # Display and search only (docs/records.md): left out when the span lacks them.
            **({"model": model[:200]} if isinstance(model, str) and model else {}),
            **({"task": task} if task else {}),
        )
        error = _error(span)
        if error is None:
            end = self.event("finalize", "finalize.requested", span.end_ns, candidate_snapshot=None)
        elif _CANCELLED.search(error):
            end = self.event("cancelled", "run.cancelled", span.end_ns, reason=error)
        else:
            end = self.event("interrupted", "run.interrupted", span.end_ns, reason=error)
        return [started, end]

    def agent(self) -> list[Event]:
        span = self.span
        started, end = self.run_bounds()
        events = [started]
        if _user_request(_content(span, _INPUT, "gen_ai.input.messages")):
            events.append(
                self.event(
                    "goal",
                    "goal.revised",
                    span.start_ns,
                    **request_goal(),
                )
            )
        text = _final_text(_content(span, _OUTPUT, "gen_ai.output.messages"))
        if text:
            events.append(
                self.event(
                    "narrative",
                    "narrative.submitted",
                    span.end_ns,
                    narrative_id=f"otlp-{span.span_id}",
                    account_revision=None,
                    channel="otlp",
                    text=text,
                )
            )
        events.append(end)
        return events

    def model(self) -> list[Event]:
        span = self.span
        response = span.attributes.get("gen_ai.response.id")
        call = response if isinstance(response, str) and response else f"otlp-{span.span_id}"
        inference = self.event("inference", "inference.started", span.start_ns, model_call_id=call)
        if not span.is_root:
            return [inference]
        started, *rest = self.agent()  # a model call that is the whole trace is the run
        return [started, inference, *rest]

    # -- tools -------------------------------------------------------------------------

    def tool(self) -> list[Event] | str:
        span = self.span
        tool = span.first(_TOOL_NAME)
        if not isinstance(tool, str):
            return "execute_tool span without gen_ai.tool.name"
        call = span.attributes.get("gen_ai.tool.call.id")
        action = call if isinstance(call, str) and call else f"otlp-{span.span_id}"
        arguments = _structured(span.first(_TOOL_ARGUMENTS))
        result = tool_result(_structured(span.first(_TOOL_RESULT)))
        error = _error(span)
        if error is not None:
            outcome, error_class = "failed", _error_class(span)
        elif result is not None and result.exit_code not in (None, 0):
            outcome, error_class = "failed", f"exit_code:{result.exit_code}"
        else:  # the conventions leave the status unset when the tool raised nothing
            outcome, error_class = "succeeded", None
        events = [
            self.event("tool-started", "tool.started", span.start_ns, action_id=action, tool=tool),
            self.event(
                "tool-finished",
                "tool.finished",
                span.end_ns,
                action_id=action,
                tool=tool,
                outcome=outcome,
                error_class=error_class,
            ),
        ]
        command = shell_command(tool, arguments)
        if command is None:
            effect = other_effect(tool, arguments, result, error is not None)
            if effect is not None:
                events += self.effect(action, 0, effect)
            return events
        if result is None:
            return events  # the result is not recorded: the command's outcome is unknown
        reading = read_shell(command, result)
        for index, (check, verdict) in enumerate(reading.checks):
            events.append(
                self.event(
                    f"check-{index}",
                    "verification.receipt",
                    span.end_ns,
                    check_id=f"{action}:{index}",
                    label=check.label,
                    scope="focused" if check.focused else "suite",
                    result=verdict.result,
                    tests_executed=verdict.tests_executed,
                    candidate_snapshot=NO_SNAPSHOT,
                    environment=self.source,
                    command=command[:60_000],
                    expected_artifacts=[],
                )
            )
        for index, effect in enumerate(reading.effects):
            events += self.effect(action, index, effect)
        return events

    def effect(self, action: str, index: int, effect: Effect) -> list[Event]:
        """An effect the tool attempted: intended, active, then its receipt when the
        result settles it, else the state it shows (`denied`, `unknown`)."""
        at = self.span.end_ns
        intent = f"{action}:{effect.kind or effect.effect_class}:{index}"
        part = f"effect-{index}"
        events = [
            self.event(
                f"{part}-intent",
                "effect.intent",
                at,
                intent_id=intent,
                effect_class=effect.effect_class,
                target=effect.target[:1000],
                consequential=effect.consequential,
            ),
            self.event(
                f"{part}-active",
                "effect.transition",
                at,
                intent_id=intent,
                state="active",
                attempt_id=action,
                reason=None,
            ),
        ]
        if effect.outcome in ("completed", "failed"):
            events.append(
                self.event(
                    f"{part}-receipt",
                    "effect.receipt",
                    at,
                    intent_id=intent,
                    receipt_id=effect.receipt or f"{intent}:{effect.outcome}",
                    attempt_id=action,
                    origin="provider_receipt",
                    observed="present" if effect.outcome == "completed" else "failed",
                    authoritative=True,
                )
            )
        else:
            events.append(
                self.event(
                    f"{part}-{effect.outcome}",
                    "effect.transition",
                    at,
                    intent_id=intent,
                    state=effect.outcome,
                    attempt_id=action,
                    reason=effect.evidence[:1000] if effect.outcome == "denied" else None,
                )
            )
        return events


# -- what a span shows -----------------------------------------------------------------


def _error(span: SpanView) -> str | None:
    """The error the span ended with (one line), or None when it shows none."""
    if span.status_code != Status.STATUS_CODE_ERROR and "error.type" not in span.attributes:
        return None
    parts = [str(span.attributes.get("error.type") or _exception(span, "exception.type") or "")]
    message = span.status_message or _exception(span, "exception.message")
    if message:
        parts.append(str(message))
    line = ": ".join(p for p in parts if p) or "error"
    return line.splitlines()[0][:1000] if line.strip() else "error"


def _error_class(span: SpanView) -> str:
    kind = span.attributes.get("error.type") or _exception(span, "exception.type")
    return str(kind) if kind else "error"


def _exception(span: SpanView, key: str) -> Any:
    for name, attrs in span.events:
        if name == "exception" and attrs.get(key):
            return attrs[key]
    return None


def _content(span: SpanView, keys: Sequence[str], event_key: str) -> Any:
    """The span's messages (input or output), from its attributes, a content event, or
    the indexed attributes older instrumentations flatten them into."""
    value = span.first(keys)
    if value is None:
        for name, attrs in span.events:
            if name in _CONTENT_EVENTS and attrs.get(event_key) is not None:
                value = attrs[event_key]
    if value is None:
        value = _flattened(span.attributes, _FLATTENED[event_key]) or None
    return _structured(value)


def _flattened(attrs: Attributes, prefixes: Sequence[str]) -> list[dict[str, Any]]:
    """Messages kept as `<prefix>.<n>.role` / `.content` (OpenLLMetry's `gen_ai.prompt`,
    OpenInference's `llm.input_messages.<n>.message.role`), in index order."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        for prefix in prefixes:
            match = _FLAT_KEY.match(key[len(prefix) :]) if key.startswith(prefix) else None
            if match is not None:
                found.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return [found[index] for index in sorted(found)]


def _structured(value: Any) -> Any:
    """A JSON string decoded (conventions allow structured values or their JSON)."""
    if isinstance(value, str | bytes):
        text = value.strip()
        if text[:1] in ("{", "[", '"'):
            try:
                return orjson.loads(text)
            except orjson.JSONDecodeError:
                return value
    return value


def _messages(value: Any) -> list[Mapping[str, Any]]:
    if isinstance(value, Mapping):
        inner = value.get("messages")
        return _messages(inner) if inner is not None else [value]
    if isinstance(value, list):
        return [m for m in value if isinstance(m, Mapping)]
    return []


def _texts(message: Mapping[str, Any]) -> list[str]:
    """The text of one message: semconv `parts`, or an OpenAI-style `content`."""
    texts: list[str] = []
    parts = message.get("parts")
    if isinstance(parts, list):
        for part in parts:
            if isinstance(part, Mapping) and part.get("type") == "text":
                content = part.get("content")
                if isinstance(content, str):
                    texts.append(content)
    content = message.get("content")
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping) and part.get("type") in ("text", "output_text"):
                text = part.get("text", part.get("content"))
                if isinstance(text, str):
                    texts.append(text)
    return [t for t in texts if t.strip()]


def _user_request(value: Any) -> bool:
    """The input shows a request: a user message with text, or plain input text."""
    if isinstance(value, str):
        return bool(value.strip())
    return any(m.get("role") == "user" and _texts(m) for m in _messages(value))


def _request_text(value: Any) -> str | None:
    """The request as worded: the first user message's text, or plain input text; cut
    as a trace's task is (`MAX_TASK_CHARS`)."""
    if isinstance(value, str):
        text = value.strip()
    else:
        text = next(
            ("\n\n".join(_texts(m)).strip() for m in _messages(value) if m.get("role") == "user"),
            "",
        )
    return cut_task(text) or None


def _final_text(value: Any) -> str | None:
    """The agent's last answer: the last assistant message with text, or output text."""
    if isinstance(value, str):
        return value.strip() or None
    for message in reversed(_messages(value)):
        if message.get("role", "assistant") == "assistant":
            texts = _texts(message)
            if texts:
                return "\n\n".join(texts)
    return None
