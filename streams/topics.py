"""`outcomes topics`: every Kafka topic of the pipeline, declared once and ensured idempotently.

The table (`topic_table`) is the only place that says how many partitions a topic has,
how long it keeps data and how large a record may be. `outcomes topics ensure` creates
what is missing and reports, without guessing, anything on the cluster that differs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final, Literal, TypeVar

from outcomes.common.retry import Backoff, Deadline, retry, wait_for
from outcomes.common.runtime import consume_ready
from outcomes.common.settings import Settings
from outcomes.reducers.catalog import INPUT_TOPICS, OUTPUT_TOPICS, RUN_LOG_TOPIC
from outcomes.reducers.errors import OutcomesError
from outcomes.reducers.limits import Limits

_T = TypeVar("_T")

KiB: Final = 1024
MiB: Final = 1024 * KiB
DAY_MS: Final = 24 * 60 * 60 * 1000

PARTITIONS: Final = 6
"""Partitions of every topic. All topics are keyed by run_id and share one count, so a
run lands on the same partition number everywhere (co-partitioning: the worker's
per-partition state and any join stay local). Two cores today, room for six consumers."""

FRAMING_BYTES: Final = 64 * KiB
"""Headroom over the event limit for the Kafka key (run_id), headers and batch framing."""

Role = Literal["input", "output", "internal"]
KafkaConf = Mapping[str, str | int | float | bool]
"""Client properties as confluent-kafka takes them (`Settings.kafka_config()` fits)."""


class TopicsError(OutcomesError):
    """Topics could not be listed, created or altered on the cluster.

    Operators: check that the brokers answer at the bootstrap address (`outcomes dev
    status` for the dev stack) and that the client may create and configure topics.
    """


@dataclass(frozen=True)
class TopicSpec:
    """One row of the topic table."""

    name: str
    role: Role
    partitions: int
    cleanup_policy: Literal["delete", "compact"]
    retention_ms: int  # -1: keep forever
    max_message_bytes: int
    why: str

    def replication(self, brokers: int) -> int:
        """Replication factor on a cluster of `brokers` brokers: min(3, brokers)."""
        return max(1, min(3, brokers))

    def configs(self, brokers: int) -> dict[str, str]:
        """Topic-level configs, as Kafka spells them; compared verbatim for drift."""
        return {
            "cleanup.policy": self.cleanup_policy,
            "retention.ms": str(self.retention_ms),
            "max.message.bytes": str(self.max_message_bytes),
            # With 3 replicas an acks=all write needs 2 of them; fewer replicas cannot
            # ask for more than one without refusing every write while one is down.
            "min.insync.replicas": "2" if self.replication(brokers) >= 3 else "1",
        }


def topic_table(limits: Limits | None = None) -> tuple[TopicSpec, ...]:
    """The declared topics of the pipeline, sized from the event limits in force.

    Sizing (`max.message.bytes`, which Kafka applies to a whole record batch, after
    compression):
    - input topics: the SPEC's event limit (1 MiB) plus 64 KiB for the key, headers and
      batch framing, so an event at the limit is accepted and one a little over it still
      reaches the worker, which dead-letters it as `too_large` instead of the producer
      failing; anything far larger is refused by the broker at produce time.
    - run log: carries the same events, so the same bound.
    - dead letters: the raw rejected bytes (up to the input bound) plus origin metadata
      and a message: 2 MiB.
    - account revisions: one account folds a whole run (up to 10,000 artifacts per
      snapshot, every predicate and check), so it can outgrow any one event: 8 MiB.
    - notifications, provenance rows, claim verdicts and claim notifications: small
      records, 1 MiB.
    Producers must allow the same size (librdkafka `message.max.bytes`, default 1 MB).

    Retention: inputs 7 days (the worker folds them within seconds; a week lets an
    operator replay after a fix); outputs 7 days except account revisions and dead
    letters, 30 days (ClickHouse is their long-term home; dead letters wait for a
    person). Nothing is compacted: every topic is keyed by run_id and every record
    matters, and compaction would keep only the last record per run. The run log is
    the worker's recovery source, so it is kept until deleted by an operator.
    """
    limits = limits or Limits()
    input_max = limits.max_event_bytes + FRAMING_BYTES
    week, month = 7 * DAY_MS, 30 * DAY_MS
    inputs = tuple(
        TopicSpec(name, "input", PARTITIONS, "delete", week, input_max, "input events")
        for name in INPUT_TOPICS
    )
    outputs = {
        "account_revision": (month, 8 * MiB, "account revisions; ClickHouse keeps them"),
        "notification": (week, 1 * MiB, "account.final / account.superseded"),
        "provenance_row": (week, 1 * MiB, "retrieval, injection and finding rows"),
        "claim_verdict": (week, 1 * MiB, "narrative claim verdicts"),
        "claim_notification": (week, 1 * MiB, "claim verdicts settled anew"),
        "dead_letter": (month, 2 * MiB, "rejected raw bytes plus reason"),
        "answer_check": (week, 1 * MiB, "answers checked before display (SPEC 8)"),
    }
    unknown = set(OUTPUT_TOPICS) ^ set(outputs)
    if unknown:
        raise TopicsError(
            f"topic table and outcomes.reducers.catalog disagree on outputs: {unknown}"
        )
    output_specs = tuple(
        TopicSpec(OUTPUT_TOPICS[kind], "output", PARTITIONS, "delete", keep, size, why)
        for kind, (keep, size, why) in outputs.items()
    )
    run_log = TopicSpec(
        RUN_LOG_TOPIC, "internal", PARTITIONS, "delete", -1, input_max, "per-run ordered log"
    )
    return (*inputs, *output_specs, run_log)


TOPICS: Final = topic_table()


# --------------------------------------------------------------------------- ensure


@dataclass(frozen=True)
class Drift:
    """One way a topic on the cluster differs from its row in the table."""

    topic: str
    setting: str  # "partitions", "replication" or a config name
    declared: str
    actual: str

    @property
    def fixable(self) -> bool:
        return self.setting not in ("partitions", "replication")


@dataclass
class EnsureReport:
    """What `ensure_topics` found and did."""

    brokers: int
    created: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    fixed: list[Drift] = field(default_factory=list)
    drift: list[Drift] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.created or self.fixed)


def _admin(conf: KafkaConf) -> Any:
    from confluent_kafka.admin import AdminClient

    # log_level 4 (warning): librdkafka's info lines (e.g. "purging unserved events" as
    # the client closes) would trail the command's own summary; warnings still show.
    return AdminClient({"log_level": 4, **conf})


class MissingTopic(TopicsError):
    """A topic the command reads does not exist. Operators: `outcomes topics ensure`."""


def _leadership_moving(exc: Exception) -> bool:
    """Whether `exc` is what a read of offsets meets while a cluster's leadership moves:
    a broker restarting answers NOT_LEADER_FOR_PARTITION or LEADER_NOT_AVAILABLE for its
    partitions until the new leader is known, and a request to the old leader times out,
    loses its connection, or dies with the client's handle of a broker the cluster no
    longer lists (_TIMED_OUT, _TRANSPORT, _DESTROY_BROKER)."""
    from confluent_kafka import KafkaError, KafkaException

    moving = {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError._DESTROY_BROKER,
    }
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return isinstance(error, KafkaError) and error.code() in moving


def end_offsets(
    conf: KafkaConf, topics: Sequence[str], *, patience: float = 60.0
) -> dict[tuple[str, int], int]:
    """The current end (high watermark) of every partition of `topics`.

    While a cluster's leadership moves (see `_leadership_moving`), a request is asked
    again, for up to `patience` seconds in all. Raises `MissingTopic` for a topic the
    cluster lacks, `TopicsError` if Kafka fails or the leadership does not settle.
    """
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    deadline = Deadline(patience)

    def patiently(call: Callable[[], _T]) -> _T:
        return retry(
            call,
            retry_if=_leadership_moving,
            timeout=deadline.remaining,
            backoff=Backoff(base=0.25, cap=2.0),
        )

    consumer = Consumer({"log_level": 4, **conf, "group.id": "outcomes-offset-probe"})
    try:
        metadata = patiently(lambda: consumer.list_topics(timeout=10))
        ends: dict[tuple[str, int], int] = {}
        for topic in topics:
            info = metadata.topics.get(topic)
            if info is None or info.error is not None:
                raise MissingTopic(f"topic {topic} does not exist (run `outcomes topics ensure`)")
            for partition in info.partitions:
                where = TopicPartition(topic, partition)
                _, high = patiently(partial(consumer.get_watermark_offsets, where, timeout=10))
                ends[(topic, partition)] = int(high)
        return ends
    except KafkaException as exc:
        raise TopicsError(f"reading end offsets failed: {exc}") from exc
    finally:
        consumer.close()


def read_range(
    conf: KafkaConf,
    start: Mapping[tuple[str, int], int],
    end: Mapping[tuple[str, int], int],
    *,
    timeout: float = 120.0,
    consumer_conf: Mapping[str, Any] | None = None,
) -> Iterator[list[Any]]:
    """The records of each partition from `start` up to `end`, in batches as consumed.

    Finished when every position has reached its end (positions, not record offsets:
    they step over transaction markers); records at or past a partition's end are left
    out. Raises `TopicsError` on a consumer error, or if the range is not read within
    `timeout` seconds of the last record received.
    """
    from confluent_kafka import Consumer, TopicPartition

    pending = {tp: end[tp] for tp, offset in start.items() if end.get(tp, 0) > offset}
    consumer = Consumer(
        {
            "log_level": 4,
            **conf,
            "group.id": f"outcomes-range-reader-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            **(consumer_conf or {}),
        }
    )
    try:
        consumer.assign([TopicPartition(t, p, start[(t, p)]) for t, p in pending])
        deadline = Deadline(timeout)
        while pending:
            # Returns as soon as records are there: asking for more than remain must not
            # wait out the timeout (it did, inside a benchmark's measurement).
            batch = consume_ready(consumer, 10_000, 0.5)
            if not batch and deadline.expired:
                raise TopicsError(f"could not read to the end in {timeout:.0f} s: {pending}")
            kept = []
            for msg in batch:
                if msg.error() is not None:
                    raise TopicsError(f"consumer error: {msg.error()}")
                if msg.offset() < end[(msg.topic(), msg.partition())]:
                    kept.append(msg)
            if kept:
                deadline.restart()
                yield kept
            for tp in consumer.position([TopicPartition(t, p) for t, p in pending]):
                if tp.offset >= pending[(tp.topic, tp.partition)]:
                    del pending[(tp.topic, tp.partition)]
    finally:
        consumer.close()


def _await_topics(admin: Any, names: Sequence[str], timeout: float) -> Any:
    """Cluster metadata once every named topic has a leader for every partition.

    CreateTopics returns when the controller has the topic; the brokers learn of it a
    moment later, and a describe or produce in between gets UNKNOWN_TOPIC_OR_PART.
    """

    def led() -> Any:
        metadata = admin.list_topics(timeout=timeout)
        ready = all(
            name in metadata.topics
            and metadata.topics[name].partitions
            and all(p.leader >= 0 for p in metadata.topics[name].partitions.values())
            for name in names
        )
        return metadata if ready else None

    return wait_for(
        led,
        timeout=timeout,
        what=f"created topics did not get leaders within {timeout:.0f} s",
        error=TopicsError,
    )


def describe_topic_configs(
    admin: Any, names: Sequence[str], timeout: float = 30.0
) -> dict[str, dict[str, str]]:
    """Every config value of the named topics, as the broker reports them.

    The broker asked may not know a topic yet that another broker just reported (on a
    cluster, brokers learn new topics from the controller a moment apart): an unknown
    topic is asked again until `timeout`.
    """
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import ConfigResource

    deadline = Deadline(timeout)
    pending = list(names)
    configs: dict[str, dict[str, str]] = {}
    while pending:
        resources = [ConfigResource(ConfigResource.Type.TOPIC, name) for name in pending]
        pending = []
        for resource, future in admin.describe_configs(resources, request_timeout=timeout).items():
            try:
                entries = future.result()
            except KafkaException as exc:
                error = exc.args[0]
                unknown = getattr(error, "code", lambda: None)() == KafkaError.UNKNOWN_TOPIC_OR_PART
                if unknown and not deadline.expired:
                    pending.append(resource.name)
                    continue
                raise TopicsError(f"describing {resource.name} failed: {error}") from None
            configs[resource.name] = {k: str(e.value) for k, e in entries.items()}
        if pending:
            time.sleep(min(0.2, deadline.remaining))
    return configs


def _await_configs(admin: Any, name: str, wanted: Mapping[str, str], timeout: float) -> None:
    """Wait until the broker reports the altered configs (it learns them asynchronously)."""

    def visible() -> bool:
        actual = describe_topic_configs(admin, [name], timeout)[name]
        return all(actual.get(k) == v for k, v in wanted.items())

    wait_for(
        visible,
        timeout=timeout,
        what=f"{name}: altered configs not visible within {timeout:.0f} s",
        error=TopicsError,
    )


def ensure_topics(
    kafka_conf: KafkaConf,
    table: Sequence[TopicSpec] = TOPICS,
    *,
    fix_config: bool = False,
    timeout: float = 30.0,
) -> EnsureReport:
    """Create the table's missing topics; report (and with `fix_config`, repair) drift."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

    admin = _admin(kafka_conf)
    try:
        metadata = admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise TopicsError(
            f"no Kafka broker answered at {kafka_conf.get('bootstrap.servers')}: {exc}"
        ) from None
    brokers = len(metadata.brokers)
    report = EnsureReport(brokers=brokers)

    missing = [spec for spec in table if spec.name not in metadata.topics]
    if missing:
        futures = admin.create_topics(
            [
                NewTopic(
                    spec.name,
                    num_partitions=spec.partitions,
                    replication_factor=spec.replication(brokers),
                    config=spec.configs(brokers),
                )
                for spec in missing
            ],
            operation_timeout=timeout,
            request_timeout=timeout,
        )
        for name, future in futures.items():
            try:
                future.result()
            except KafkaException as exc:
                error = exc.args[0]
                if error.code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise TopicsError(f"creating {name} failed: {error.str()}") from None
                continue  # created concurrently by another `ensure`: checked for drift below
            report.created.append(name)
        metadata = _await_topics(admin, report.created, timeout)

    existing = [spec for spec in table if spec.name not in report.created]
    if not existing:
        return report
    actual_configs = describe_topic_configs(admin, [spec.name for spec in existing], timeout)

    for spec in existing:
        topic_md = metadata.topics[spec.name]
        drifts: list[Drift] = []
        partitions = len(topic_md.partitions)
        if partitions != spec.partitions:
            drifts.append(Drift(spec.name, "partitions", str(spec.partitions), str(partitions)))
        replication = min((len(p.replicas) for p in topic_md.partitions.values()), default=0)
        if replication != spec.replication(brokers):
            drifts.append(
                Drift(spec.name, "replication", str(spec.replication(brokers)), str(replication))
            )
        actual = actual_configs[spec.name]
        for key, value in spec.configs(brokers).items():
            if actual.get(key) != value:
                drifts.append(Drift(spec.name, key, value, str(actual.get(key))))
        fixable = [d for d in drifts if d.fixable]
        if fix_config and fixable:
            resource = ConfigResource(
                ConfigResource.Type.TOPIC,
                spec.name,
                incremental_configs=[
                    ConfigEntry(d.setting, d.declared, incremental_operation=AlterConfigOpType.SET)
                    for d in fixable
                ],
            )
            for future in admin.incremental_alter_configs([resource]).values():
                try:
                    future.result()
                except KafkaException as exc:
                    raise TopicsError(f"altering {spec.name} failed: {exc.args[0].str()}") from None
            _await_configs(admin, spec.name, {d.setting: d.declared for d in fixable}, timeout)
            report.fixed.extend(fixable)
            drifts = [d for d in drifts if not d.fixable]
        if drifts:
            report.drift.extend(drifts)
        elif not any(d.topic == spec.name for d in report.fixed):
            report.unchanged.append(spec.name)
    return report


# --------------------------------------------------------------------------- aiokafka


def aiokafka_options(settings: Settings) -> dict[str, Any]:
    """Keyword arguments for aiokafka clients (faust's transport) from the same Settings.

    `Settings.kafka_config()` speaks librdkafka; aiokafka names the same bootstrap, TLS
    and SASL options differently and wants an `ssl.SSLContext` instead of file paths.
    """
    options: dict[str, Any] = {
        "bootstrap_servers": settings.bootstrap.split(","),
        "security_protocol": settings.security_protocol,
    }
    if settings.security_protocol in ("SSL", "SASL_SSL"):
        from aiokafka.helpers import create_ssl_context

        options["ssl_context"] = create_ssl_context(
            cafile=settings.ssl_cafile,
            certfile=settings.ssl_certfile,
            keyfile=settings.ssl_keyfile,
        )
    if settings.sasl_mechanism is not None:
        options["sasl_mechanism"] = settings.sasl_mechanism
        options["sasl_plain_username"] = settings.sasl_username
        options["sasl_plain_password"] = settings.sasl_password
    return options


def cluster_brokers(
    bootstrap: str, timeout: float = 3.0, conf: Mapping[str, str] | None = None
) -> int | None:
    """How many brokers answer a metadata request at `bootstrap`, or None when none does.
    `conf` adds client properties (SASL credentials of a secure stack)."""
    health = cluster_health(bootstrap, timeout, conf)
    return health[0] if health is not None else None


def cluster_health(
    bootstrap: str, timeout: float = 3.0, conf: Mapping[str, str] | None = None
) -> tuple[int, int] | None:
    """(brokers answering, partitions whose end offset cannot be read yet) at
    `bootstrap`, or None when no broker answers a metadata request.

    A broker restarted on a large log answers metadata requests, and even names itself
    leader, while it still loads its partitions; until then clients reading offsets get
    NOT_LEADER_FOR_PARTITION (seen here for ~0.6 s after a restart on 7 GB of logs).
    """
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    # log_level 0: while a broker starts, refused connections are expected and the
    # return value already says whether anything answered; librdkafka's per-attempt
    # error lines would only bury the CLI's own message.
    admin = AdminClient(
        {**(conf or {}), "bootstrap.servers": bootstrap, "socket.timeout.ms": 2000, "log_level": 0}
    )
    try:
        metadata = admin.list_topics(timeout=timeout)
    except KafkaException:
        return None  # "no broker answered" is the answer this function exists to give
    partitions = {
        TopicPartition(name, number): OffsetSpec.latest()
        for name, topic in metadata.topics.items()
        for number in topic.partitions
    }
    if not partitions:
        return len(metadata.brokers), 0
    unreadable = 0
    for future in admin.list_offsets(partitions, request_timeout=timeout).values():
        try:
            future.result()
        except KafkaException:
            unreadable += 1  # counted: this is what the caller waits out
    return len(metadata.brokers), unreadable
