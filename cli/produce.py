"""`outcomes produce`: publish JSONL or Avro container files of events to their topics."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from outcomes.cli import options
from outcomes.common.codec import ContainerFailure, iter_container_events, parse_json_event
from outcomes.common.errors import CodecError, DeliveryError, ProducerError
from outcomes.common.settings import Settings
from outcomes.streams.sdk.producer import OutcomesProducer


@dataclass(frozen=True, slots=True)
class _Invalid:
    """An input item that is not a valid event: where, and why."""

    where: str
    reason: str
    message: str


def _file_events(path: Path) -> Iterator[tuple[str, Any] | _Invalid]:
    """(location, event) for every item of a JSONL or `.avro` file, in file order."""
    if path.suffix == ".avro":
        for index, item in enumerate(iter_container_events(path)):
            if isinstance(item, ContainerFailure):
                yield _Invalid(f"{path}:{item.index + 1}", item.reason, item.message)
            else:
                yield f"{path}:{index + 1}", item
        return
    with path.open("rb") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                yield where, parse_json_event(line)
            except CodecError as exc:
                yield _Invalid(where, exc.reason, exc.message)


@click.command()
@click.argument(
    "files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@options.bootstrap
@options.schema_registry
@click.option(
    "--source",
    default="outcomes-produce",
    show_default=True,
    help="Client id of the producer (events keep their own `source`).",
)
@click.option(
    "--timeout",
    "message_timeout",
    type=click.FloatRange(min=0.1),
    default=30.0,
    show_default=True,
    help="Seconds for the broker to acknowledge each event before it counts as failed.",
)
def produce(
    files: tuple[Path, ...],
    bootstrap: str | None,
    schema_registry_url: str | None,
    source: str,
    message_timeout: float,
) -> None:
    """Publish the events in FILES (JSONL, one canonical JSON event per line, or Avro
    container files `*.avro`) to their topics as Avro, keyed by `run_id`.

    Invalid items are reported as `file:line: reason: message` and skipped; the others
    are still published. Exits non-zero if any item was invalid or not delivered. A
    summary goes to standard error.
    """
    settings = Settings.load(bootstrap=bootstrap, schema_registry_url=schema_registry_url)
    published = invalid = not_queued = failed = 0
    producer = OutcomesProducer(
        settings, source=source, message_timeout_ms=int(message_timeout * 1000)
    )
    try:
        for path in files:
            for item in _file_events(path):
                if isinstance(item, _Invalid):
                    invalid += 1
                    _report(f"{item.where}: {item.reason}: {item.message}")
                    continue
                where, event = item
                try:
                    producer.publish(event)
                except CodecError as exc:
                    invalid += 1
                    _report(f"{where}: {exc.reason}: {exc.message}")
                    continue
                published += 1
    except ProducerError as exc:  # backpressure: the broker is gone; stop, but summarize
        _report(f"error: {exc}; stopping")
        not_queued += 1
    finally:
        try:
            producer.close()
        except DeliveryError as exc:
            failed += len(exc.failures)
            _report(f"error: {exc}")
    _report(
        f"produced {published - failed} event(s) from {len(files)} file(s) to "
        f"{settings.bootstrap}; {invalid} invalid, {failed + not_queued} not delivered"
    )
    if invalid or failed or not_queued:
        sys.exit(1)


def _report(line: str) -> None:
    click.echo(line, err=True)
