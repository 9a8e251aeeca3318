"""Errors of the Kafka edge: the codec and the producer SDK.

All derive from :class:`outcomes.reducers.errors.OutcomesError`; each docstring says what the
operator (or the agent developer calling the SDK) should do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from outcomes.reducers.errors import InvalidEvent, OutcomesError

# Dead-letter reasons the codec produces (SPEC section 4).
UNDECODABLE = "undecodable"
UNKNOWN_SCHEMA = "unknown_schema"
SCHEMA_VIOLATION = "schema_violation"
TOO_LARGE = "too_large"


class CodecError(InvalidEvent):
    """Bytes or a canonical JSON record do not fit the Avro contract.

    `reason` is one of `undecodable`, `unknown_schema`, `schema_violation`, `too_large`.
    Operators: consumers turn this into a dead letter and move on; fix the producer named
    in the dead letter (or register the missing writer schema for `unknown_schema`).
    """

    def __init__(
        self,
        reason: str,
        message: str,
        *,
        run_id: str | None = None,
        event_id: str | None = None,
    ) -> None:
        super().__init__(reason, message)
        self.run_id = run_id
        self.event_id = event_id


class SchemaRegistryUnavailable(OutcomesError):
    """A Schema Registry URL is configured but its client cannot be used.

    Operators: install `confluent-kafka[schemaregistry]`, or unset
    OUTCOMES_SCHEMA_REGISTRY_URL to use Avro single-object encoding.
    """


class ProducerError(OutcomesError):
    """Base of the producer SDK's errors."""


@dataclass(frozen=True, slots=True)
class FailedDelivery:
    """One event the broker did not acknowledge, and why."""

    event_id: str
    topic: str
    error: str


class DeliveryError(ProducerError):
    """Some events were not acknowledged by Kafka (timed out or rejected).

    Agents: the listed events were NOT recorded; publish them again (same `event_id`:
    redelivery is a no-op downstream). Operators: check the broker is reachable from the
    worker (`outcomes dev status`, `OUTCOMES_BOOTSTRAP`) and that the topics exist.
    """

    def __init__(self, failures: Sequence[FailedDelivery]) -> None:
        self.failures = tuple(failures)
        shown = ", ".join(f"{f.event_id} ({f.topic}: {f.error})" for f in self.failures[:5])
        more = f" and {len(self.failures) - 5} more" if len(self.failures) > 5 else ""
        super().__init__(f"{len(self.failures)} event(s) not delivered: {shown}{more}")

    @property
    def event_ids(self) -> tuple[str, ...]:
        return tuple(f.event_id for f in self.failures)


class ProducerBackpressure(ProducerError):
    """The local send buffer stayed full for the whole bounded wait.

    The broker is unreachable or slower than the agent. Agents: the event was NOT
    queued; retry later or fail the step. Operators: check broker health and
    connectivity, or raise the buffer (`buffer_max_messages`) if bursts are expected.
    """


class ProducerClosed(ProducerError):
    """The producer was used after `close()`. Developers: create a new producer."""


class BrokerUnreachable(OutcomesError):
    """No Kafka broker answered a client's start-up check (`common/broker.py`)."""
