"""`outcomes otlp`: an OTLP/HTTP trace receiver publishing GenAI spans as events.

The protocol and the mapping are `outcomes.importers.otlp_server` and
`outcomes.importers.otlp`; what is mapped, and what stays unknown, is in
docs/integrations.md ("OpenTelemetry").
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

import click

from outcomes.cli import options
from outcomes.common.broker import check_broker
from outcomes.common.errors import DeliveryError
from outcomes.common.settings import Settings
from outcomes.importers.otlp_http import DEFAULT_MAX_BODY_BYTES, TRACES_PATH
from outcomes.importers.otlp_server import Receiver, make_server
from outcomes.streams.sdk.producer import OutcomesProducer

TOKEN_ENV = "OUTCOMES_OTLP_TOKEN"


@click.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (0.0.0.0 for every interface: then set --token, or put "
    "the receiver behind a proxy that authenticates).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=4318,
    show_default=True,
    help="Port to listen on (4318 is OTLP/HTTP's; 0 picks a free one and prints it).",
)
@options.bootstrap
@options.schema_registry
@click.option(
    "--timeout",
    "message_timeout",
    type=click.FloatRange(min=0.1),
    default=5.0,
    show_default=True,
    help="Seconds for the broker to acknowledge a request's events; past that the "
    "request is answered 503 and the exporter retries it (keep it under the exporter's "
    "own timeout, OTEL_EXPORTER_OTLP_TIMEOUT, 10 s by default).",
)
@click.option(
    "--max-body-bytes",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_BODY_BYTES,
    show_default=True,
    help="Largest request body, before and after gzip decompression (larger: 413).",
)
@click.option(
    "--token",
    envvar=TOKEN_ENV,
    default=None,
    metavar="TOKEN",
    help=f"Require `Authorization: Bearer TOKEN` on every request (401 otherwise, before "
    f"the body is read); exporters send it with "
    f"OTEL_EXPORTER_OTLP_HEADERS='Authorization=Bearer%20TOKEN'. Env: {TOKEN_ENV}.",
)
def otlp(
    host: str,
    port: int,
    bootstrap: str | None,
    schema_registry_url: str | None,
    message_timeout: float,
    max_body_bytes: int,
    token: str | None,
) -> None:
    """Receive OpenTelemetry traces on POST /v1/traces (OTLP/HTTP, protobuf or JSON,
    gzip or not) and publish their GenAI spans as events: agent spans as the run's
    start, goal, narrative and finalize request, tool spans as actions (and check
    receipts when a shell tool's result shows a test runner's summary or exit status),
    model spans as inference calls.

    Point an exporter at it with
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:4318/v1/traces. Each request is
    answered once the broker has acknowledged its events (503 with Retry-After when it
    has not: the exporter retries, and the same spans give the same event ids). Spans
    that cannot be mapped are counted in the answer's partial_success with the reasons.
    Stops on SIGTERM or Ctrl-C and prints what it did.
    """
    settings = Settings.load(bootstrap=bootstrap, schema_registry_url=schema_registry_url)
    check_broker(settings)
    producer = OutcomesProducer(
        settings, source="outcomes-otlp", message_timeout_ms=int(message_timeout * 1000)
    )
    receiver = Receiver(
        producer,
        max_body_bytes=max_body_bytes,
        flush_timeout=message_timeout,
        limits=settings.limits,
    )
    server = make_server(receiver, host, port, token=token or None)
    try:
        server.start()
    except OSError as exc:
        producer.close(timeout=1.0)
        message = f"cannot listen on {host}:{port}: {exc.strerror or exc}"
        raise click.ClickException(message) from None
    bound_host, bound_port = server.address
    click.echo(
        f"outcomes otlp: listening on http://{bound_host}:{bound_port}{TRACES_PATH}, "
        f"publishing to {settings.bootstrap}",
        err=True,
    )

    stopping = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        server.wait(stop=stopping.is_set)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.stop()  # requests in progress are answered first
        receiver.close()
        try:
            producer.close(timeout=message_timeout)
        except DeliveryError as exc:  # only requests already answered 503 left these
            click.echo(f"outcomes otlp: on close: {exc}", err=True)
    click.echo(f"outcomes otlp: {receiver.counters.line()}", err=True)
