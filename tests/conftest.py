"""Fixtures every test module may use: the real Kafka broker and unique topic names.

Kafka-backed tests ask for `kafka_bootstrap` (or a fixture built on it). It finds the
broker `outcomes dev up` started (or `OUTCOMES_BOOTSTRAP`), checks that it answers a
metadata request, and otherwise skips with the reason, except under `CI=true`, where a
missing broker fails the test: CI must never pass by skipping the integration layer.
Tests that use it are marked `kafka` automatically (`pytest -m "not kafka"` runs the
rest). Fixtures specific to one module belong in that module, not here.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable, Iterator

import pytest

from outcomes.common.settings import Settings
from outcomes.devtools.devstack import read_stack
from outcomes.streams.topics import cluster_brokers

KafkaConfig = dict[str, str | int | float | bool]
"""confluent-kafka client properties, typed as its constructors take them."""


def in_ci() -> bool:
    """True when running under CI (`CI=true`), where a missing service is a failure."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def require(condition: bool, reason: str) -> None:
    """Skip the test with `reason` unless `condition`; under CI fail instead of skipping."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def require_service() -> Callable[[bool, str], None]:
    """`require_service(ok, reason)`: skip unless `ok`; under CI=true fail instead."""
    return require


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that needs the broker with `kafka`."""
    for item in items:
        if "kafka_bootstrap" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.kafka)


def _configured_bootstrap() -> str:
    """OUTCOMES_BOOTSTRAP if set, else the running dev stack's, else the default."""
    if os.environ.get("OUTCOMES_BOOTSTRAP"):
        return Settings.load().bootstrap
    stack = read_stack(Settings.load())
    return stack.bootstrap if stack is not None else Settings().bootstrap


@pytest.fixture(scope="session")
def kafka_bootstrap() -> str:
    """Bootstrap servers of a real Kafka broker that answers metadata requests."""
    bootstrap = _configured_bootstrap()
    brokers = cluster_brokers(bootstrap, timeout=10.0)
    require(
        brokers is not None,
        f"no Kafka broker answers at {bootstrap}: run `outcomes dev up` "
        "(or point OUTCOMES_BOOTSTRAP at a broker)",
    )
    return bootstrap


@pytest.fixture(scope="session")
def kafka_settings(kafka_bootstrap: str) -> Settings:
    """Settings aimed at the test broker (TLS/SASL from the environment, if any)."""
    return Settings.load(bootstrap=kafka_bootstrap)


@pytest.fixture(scope="session")
def kafka_config(kafka_settings: Settings) -> KafkaConfig:
    """confluent-kafka client properties for the test broker (copy before changing)."""
    return dict(kafka_settings.kafka_config())


@pytest.fixture
def unique_topic(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """Factory of topic names no other test (or earlier run) uses.

    `unique_topic("in")` -> `test.<test name>.<8 hex>.in`; the same suffix within one
    test gives the same name, so a test can refer to its topics by role.
    """
    test = re.sub(r"[^a-zA-Z0-9_-]+", "-", request.node.name).strip("-")[:80]
    token = uuid.uuid4().hex[:8]

    def name(suffix: str = "t") -> str:
        return f"test.{test}.{token}.{suffix}"

    return name


@pytest.fixture
def kafka_topic(
    kafka_config: KafkaConfig, unique_topic: Callable[[str], str]
) -> Iterator[Callable[..., str]]:
    """Factory creating real topics with unique names; they are deleted after the test.

    `kafka_topic("in", partitions=3, config={"retention.ms": "60000"})` returns the name.
    The dev broker does not auto-create topics, so a test creates what it uses.
    """
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(kafka_config)
    created: list[str] = []

    def create(suffix: str = "t", partitions: int = 1, config: dict[str, str] | None = None) -> str:
        name = unique_topic(suffix)
        brokers = len(admin.list_topics(timeout=10).brokers)
        topic = NewTopic(
            name,
            num_partitions=partitions,
            replication_factor=min(3, brokers),
            config=config or {},
        )
        admin.create_topics([topic], operation_timeout=30)[name].result()
        created.append(name)
        return name

    yield create
    if created:
        for future in admin.delete_topics(created, operation_timeout=30).values():
            future.result()
