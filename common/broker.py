"""Whether a Kafka broker answers: the start-up check of every long-running client.

Without it, a worker or sink pointed at a dead address retried for tens of seconds,
logging every refused connection (hundreds of librdkafka lines), and then died with a
traceback or, with `--until-idle`, exited 0 as if all was consumed. The probe's own
librdkafka logging is off (log_level 0): its answer is the message.
"""

from __future__ import annotations

from typing import Final

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from outcomes.common.errors import BrokerUnreachable
from outcomes.common.settings import Settings

BROKER_CHECK_SECONDS: Final = 5.0
"""How long a client waits at start for a broker to answer (its `--help` says so)."""


def check_broker(settings: Settings, timeout: float = BROKER_CHECK_SECONDS) -> None:
    """Raise `BrokerUnreachable` unless a broker answers a metadata request within
    `timeout`, with the client's full Kafka settings (TLS/SASL included)."""
    try:
        AdminClient({**settings.kafka_config(), "log_level": 0}).list_topics(timeout=timeout)
    except KafkaException as exc:
        error = exc.args[0] if exc.args else exc
        reason = error.str() if hasattr(error, "str") else str(error)
        raise BrokerUnreachable(
            f"no Kafka broker answered at {settings.bootstrap} within {timeout:g} s "
            f"({reason}); start one (`outcomes dev up`) or fix --bootstrap / "
            "OUTCOMES_BOOTSTRAP"
        ) from None
