"""The secure profile: SASL/SCRAM identities and ACLs enforced by a real Kafka broker.

A secure dev stack of its own (own state dir, own ports) is started once for the
module, so it never touches the plain dev broker other tests use. The broker, not this
code, must refuse what an identity may not do.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from outcomes.cli.dev import dev
from outcomes.common.settings import Settings
from outcomes.devtools.devstack import (
    ADMIN_USER,
    DevStackError,
    Layout,
    client_env,
    client_settings,
    down,
    ensure_secrets,
    find_java,
    password_file,
    read_passwords,
    server_properties,
    up,
)
from outcomes.reducers.catalog import INPUT_TOPICS, OUTPUT_TOPICS, RUN_LOG_TOPIC
from outcomes.sinks.events import group_for
from outcomes.streams.acls import (
    IDENTITIES,
    PRODUCER,
    READER,
    SINK,
    SINK_EVENTS_GROUP,
    SINK_GROUP,
    WORKER,
    acl_table,
)
from outcomes.streams.topics import ensure_topics
from tests.port_support import free_base_port

REVISIONS = OUTPUT_TOPICS["account_revision"]
NOTIFICATIONS = OUTPUT_TOPICS["notification"]
GOALS = INPUT_TOPICS[0]


# --------------------------------------------------------------------------- no broker


def test_secure_broker_config_is_sasl_on_loopback_with_standard_authorizer() -> None:
    layout = Layout(1, 23092, secure=True)
    props = server_properties(layout, layout.nodes[0], Path("/d"), "s3cret-s3cret-s3cret")
    assert props["authorizer.class.name"] == (
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    )
    assert props["allow.everyone.if.no.acl.found"] == "false"
    assert props["super.users"] == f"User:{ADMIN_USER}"
    assert props["listeners"] == ("SASL_PLAINTEXT://127.0.0.1:23092,CONTROLLER://127.0.0.1:23192")
    assert "PLAINTEXT:PLAINTEXT" not in props["listener.security.protocol.map"]
    assert "SCRAM-SHA-512" in props["sasl.enabled.mechanisms"]
    with pytest.raises(DevStackError):
        server_properties(layout, layout.nodes[0], Path("/d"))
    plain = server_properties(Layout(1), Layout(1).nodes[0], Path("/d"))
    assert "authorizer.class.name" not in plain


def test_acl_table_gives_producers_only_the_input_topics() -> None:
    table = acl_table()
    producer = [g for g in table if g.user == PRODUCER]
    assert {g.name for g in producer} == set(INPUT_TOPICS)
    assert all(g.resource == "topic" and not g.prefixed for g in producer)
    assert all(set(g.operations) == {"WRITE", "DESCRIBE"} for g in producer)
    sink = [g for g in table if g.user == SINK]
    topics = {g.name for g in sink if g.resource == "topic"}
    assert topics == {*OUTPUT_TOPICS.values(), RUN_LOG_TOPIC}  # the events recorder's log
    assert all("WRITE" not in g.operations for g in sink)
    assert [g.name for g in sink if g.resource == "group"] == [SINK_GROUP, SINK_EVENTS_GROUP]
    assert group_for(SINK_GROUP) == SINK_EVENTS_GROUP
    reader = [g for g in table if g.user == READER and g.resource == "topic"]
    assert REVISIONS not in {g.name for g in reader}
    worker_inputs = [g for g in table if g.user == WORKER and g.name in INPUT_TOPICS]
    assert all("WRITE" not in g.operations for g in worker_inputs)


def test_password_file_setting(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("from-the-file\n")
    settings = Settings.load({"OUTCOMES_KAFKA_SASL_PASSWORD_FILE": str(secret)})
    assert settings.sasl_password == "from-the-file"
    assert settings.kafka_config()["sasl.password"] == "from-the-file"
    assert "from-the-file" not in repr(settings)
    assert settings.describe()["sasl_password"] == "***"
    both = Settings.load(
        {"OUTCOMES_KAFKA_SASL_PASSWORD_FILE": str(secret), "OUTCOMES_KAFKA_SASL_PASSWORD": "env"}
    )
    assert both.sasl_password == "env"
    with pytest.raises(Exception, match="cannot read"):
        Settings.load({"OUTCOMES_KAFKA_SASL_PASSWORD_FILE": str(tmp_path / "missing")})


def test_secrets_are_files_from_env_or_generated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OUTCOMES_DEV_SECRETS_DIR", raising=False)
    monkeypatch.setenv("OUTCOMES_DEV_PRODUCER_PASSWORD", "producer-from-the-environment")
    settings = Settings.load({}, state_dir=str(tmp_path))
    layout = Layout(1, 23092, secure=True)
    passwords = ensure_secrets(settings, layout)
    assert set(passwords) == {ADMIN_USER, *IDENTITIES}
    assert passwords[PRODUCER] == "producer-from-the-environment"
    assert len(set(passwords.values())) == len(passwords)
    directory = password_file(settings, layout, ADMIN_USER).parent
    assert directory.stat().st_mode & 0o077 == 0
    assert all(f.stat().st_mode & 0o077 == 0 for f in directory.iterdir())
    monkeypatch.delenv("OUTCOMES_DEV_PRODUCER_PASSWORD")
    assert ensure_secrets(settings, layout) == passwords  # kept, not regenerated
    assert read_passwords(directory) == {u: passwords[u] for u in IDENTITIES}
    password_file(settings, layout, WORKER).write_text('bad"quote;in-a-password\n')
    with pytest.raises(DevStackError, match="must be 16-200 characters"):
        ensure_secrets(settings, layout)
    with pytest.raises(DevStackError, match="cannot read the password of"):
        read_passwords(tmp_path / "nowhere")


def test_client_settings_name_the_identity_and_its_file(tmp_path: Path) -> None:
    settings = Settings.load({}, state_dir=str(tmp_path))
    layout = Layout(1, 23092, secure=True)
    ensure_secrets(settings, layout)
    worker = client_settings(settings, layout, WORKER).kafka_config()
    assert worker["security.protocol"] == "SASL_PLAINTEXT"
    assert worker["sasl.mechanism"] == "SCRAM-SHA-512"
    assert worker["sasl.username"] == WORKER
    assert worker["sasl.password"] == password_file(settings, layout, WORKER).read_text().strip()
    admin = client_settings(settings, layout, ADMIN_USER).kafka_config()
    assert admin["sasl.mechanism"] == "PLAIN"


# --------------------------------------------------------------------------- real broker


def _free_base_port() -> int:
    # a range of its own, apart from test_devstack's, below the ephemeral ports
    return free_base_port(1, 26000, 32000)


class SecureStack:
    def __init__(self, settings: Settings, layout: Layout) -> None:
        self.settings = settings
        self.layout = layout

    def conf(self, user: str) -> dict[str, Any]:
        return {
            **client_settings(self.settings, self.layout, user).kafka_config(),
            "log_level": 0,
        }

    def password(self, user: str) -> str:
        return password_file(self.settings, self.layout, user).read_text().strip()


@pytest.fixture(scope="module")
def secure_stack(
    tmp_path_factory: pytest.TempPathFactory, require_service: Callable[[bool, str], None]
) -> Iterator[SecureStack]:
    """A one-broker secure stack on ports and a state dir of its own, topics ensured."""
    try:
        find_java()
    except DevStackError as exc:
        require_service(False, str(exc))
    state = tmp_path_factory.mktemp("secure-state")
    settings = Settings.load({}, state_dir=str(state))
    layout = Layout(1, _free_base_port(), secure=True)
    try:
        up(settings, layout, echo=lambda _m: None)
    except DevStackError as exc:
        down(settings, purge=True, echo=lambda _m: None)
        require_service(False, f"the secure dev stack did not start: {exc}")
    try:
        stack = SecureStack(settings, layout)
        ensure_topics(stack.conf(ADMIN_USER))
        yield stack
    finally:
        down(settings, purge=True, echo=lambda _m: None)


def _produce(conf: dict[str, Any], topic: str) -> KafkaError | None:
    """Produce one record; the delivery error (None: accepted)."""
    producer = Producer({**conf, "enable.idempotence": True, "message.timeout.ms": 20000})
    results: list[KafkaError | None] = []
    producer.produce(topic, b"value", key=b"run-1", on_delivery=lambda e, _m: results.append(e))
    try:
        producer.flush(30)
    except KafkaException as exc:  # an identity that may write nowhere gets no producer id
        error: KafkaError = exc.args[0]
        return error
    assert results, f"no delivery report for {topic}"
    return results[0]


def _fetch_errors(conf: dict[str, Any], topic: str) -> set[int]:
    """Read `topic` by assignment from offset 0; the error codes seen (empty: readable).

    librdkafka still looks up the group's coordinator, so an identity without a group
    also sees GROUP_AUTHORIZATION_FAILED, and it fetches nothing from a topic whose
    metadata the broker refused: that refusal (the topic's metadata error) is added.
    """
    probe = f"outcomes-reader-probe-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({**conf, "group.id": probe, "enable.auto.commit": False})
    seen: set[int] = set()
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(6)])
        refused = consumer.list_topics(topic, timeout=10).topics[topic].error
        if refused is not None:
            seen.add(refused.code())
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            error = msg.error()
            if error is None:
                return seen
            if error.code() != KafkaError._PARTITION_EOF:
                seen.add(error.code())
            if KafkaError.TOPIC_AUTHORIZATION_FAILED in seen:
                return seen
        return seen
    finally:
        consumer.close()


def _group_error(conf: dict[str, Any], group: str, topic: str) -> KafkaError | None:
    """Join `group` subscribed to `topic` and commit; the first error, None if it worked."""
    consumer = Consumer(
        {**conf, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    )
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            error = msg.error() if msg is not None else None
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    return error
                continue
            if msg is not None:
                consumer.commit(message=msg, asynchronous=False)
                return None
        raise AssertionError(f"nothing read from {topic} in group {group}")
    finally:
        consumer.close()


@pytest.mark.kafka
def test_producer_writes_inputs_only(secure_stack: SecureStack) -> None:
    producer = secure_stack.conf(PRODUCER)
    assert _produce(producer, GOALS) is None
    refused = _produce(producer, REVISIONS)
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


@pytest.mark.kafka
def test_producer_cannot_read_the_run_log_or_join_the_workers_group(
    secure_stack: SecureStack,
) -> None:
    producer = secure_stack.conf(PRODUCER)
    assert KafkaError.TOPIC_AUTHORIZATION_FAILED in _fetch_errors(producer, RUN_LOG_TOPIC)
    joined = _group_error(producer, "outcomes-worker", GOALS)
    assert joined is not None and joined.code() == KafkaError.GROUP_AUTHORIZATION_FAILED


@pytest.mark.kafka
def test_worker_sink_and_reader_use_their_own_topics(secure_stack: SecureStack) -> None:
    worker, sink, reader = (secure_stack.conf(u) for u in (WORKER, SINK, READER))
    assert _produce(secure_stack.conf(PRODUCER), GOALS) is None
    # The worker: its group on the inputs, its run log, the outputs; never an input.
    assert _group_error(worker, "outcomes-worker", GOALS) is None
    assert _produce(worker, RUN_LOG_TOPIC) is None
    assert _produce(worker, REVISIONS) is None
    assert _produce(worker, NOTIFICATIONS) is None
    refused = _produce(worker, GOALS)
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # The sink: reads the outputs in its group and commits; writes nothing.
    assert _group_error(sink, SINK_GROUP, REVISIONS) is None
    # It may write no topic at all, so the broker already refuses it a producer id.
    refused = _produce(sink, REVISIONS)
    assert refused is not None
    assert refused.code() in (
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    )
    sink_other_group = _group_error(sink, "outcomes-worker", REVISIONS)
    assert sink_other_group is not None
    assert sink_other_group.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    # Downstream readers: notifications only.
    assert _group_error(reader, "outcomes-reader-dashboard", NOTIFICATIONS) is None
    assert KafkaError.TOPIC_AUTHORIZATION_FAILED in _fetch_errors(reader, REVISIONS)
    assert _fetch_errors(reader, NOTIFICATIONS) == set()


@pytest.mark.kafka
def test_a_wrong_password_is_refused(secure_stack: SecureStack) -> None:
    conf = {**secure_stack.conf(PRODUCER), "sasl.password": "not-the-password"}
    error = _produce({**conf, "message.timeout.ms": 5000}, GOALS)
    assert error is not None
    assert error.code() in (KafkaError._MSG_TIMED_OUT, KafkaError._AUTHENTICATION)


@pytest.mark.kafka
def test_no_secret_in_argv_logs_or_cli_output(secure_stack: SecureStack) -> None:
    passwords = [secure_stack.password(u) for u in (ADMIN_USER, *IDENTITIES)]
    # Every process's command line, as `ps` would show it.
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        for password in passwords:
            assert password not in cmdline, f"a password is in the argv of pid {entry.name}"
    stack_dir = secure_stack.settings.state_dir / "kafka"
    for log in stack_dir.rglob("*.log"):
        text = log.read_text(errors="replace")
        for password in passwords:
            assert password not in text, f"a password is in {log}"
    for secret in password_file(
        secure_stack.settings, secure_stack.layout, ADMIN_USER
    ).parent.iterdir():
        assert secret.stat().st_mode & 0o077 == 0
    for config in stack_dir.rglob("server.properties"):
        assert config.stat().st_mode & 0o077 == 0
    result = CliRunner().invoke(
        dev,
        [
            "up",
            "--secure",
            "--port",
            str(secure_stack.layout.base_port),
            "--state-dir",
            str(secure_stack.settings.state_dir),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "already running" in result.output
    assert "OUTCOMES_KAFKA_SASL_PASSWORD_FILE=" in result.output
    for password in passwords:
        assert password not in result.output
    env = client_env(secure_stack.settings, secure_stack.layout, WORKER)
    assert all(p not in v for v in env.values() for p in passwords)
    assert os.environ.get("OUTCOMES_KAFKA_SASL_PASSWORD") not in passwords


@pytest.mark.kafka
def test_dev_identities_sets_passwords_from_files(
    secure_stack: SecureStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`outcomes dev identities` (what compose's `identities` service runs) on any broker."""
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    for user in IDENTITIES:
        (secrets_dir / f"{user}.password").write_text(f"{user}-rotated-{uuid.uuid4().hex}\n")
    for name, value in client_env(secure_stack.settings, secure_stack.layout, ADMIN_USER).items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(dev, ["identities", "--secrets-dir", str(secrets_dir)])
    assert result.exit_code == 0, result.output
    assert "4 SCRAM users" in result.output
    try:
        rotated = {
            **secure_stack.conf(PRODUCER),
            "sasl.password": (secrets_dir / "producer.password").read_text().strip(),
        }
        assert _produce(rotated, GOALS) is None
    finally:  # the module's other tests use the passwords in the stack's files
        again = CliRunner().invoke(
            dev,
            [
                "identities",
                "--secrets-dir",
                str(password_file(secure_stack.settings, secure_stack.layout, ADMIN_USER).parent),
            ],
        )
        assert again.exit_code == 0, again.output


def test_compose_secure_profile(require_service: Callable[[bool, str], None]) -> None:
    """docker/compose.yaml's `secure` profile, as Compose's own loader resolves it."""
    import json
    import subprocess

    from tests.test_docker_files import COMPOSE_FILE, _compose_command

    command = _compose_command()
    require_service(command is not None, "no Docker Compose v2 found (.ci/run installs one)")
    assert command is not None
    result = subprocess.run(
        [*command, "-f", str(COMPOSE_FILE), "--profile", "secure", "config", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COMPOSE_PROJECT_NAME": "outcomes-test"},
    )
    assert result.returncode == 0, result.stderr
    services = json.loads(result.stdout)["services"]
    kafka = services["kafka-secure"]["environment"]
    assert kafka["KAFKA_AUTHORIZER_CLASS_NAME"] == (
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    )
    assert kafka["KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND"] == "false"
    assert "PLAINTEXT:PLAINTEXT" not in kafka["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"]
    ports = services["kafka-secure"]["ports"]
    assert all(p["host_ip"] == "127.0.0.1" for p in ports)
    assert services["identities"]["command"] == [
        "dev",
        "identities",
        "--secrets-dir",
        "/run/secrets",
    ]
    users = {"worker-secure": WORKER, "sink-secure": SINK}
    for name, user in users.items():
        env = services[name]["environment"]
        assert env["OUTCOMES_KAFKA_SASL_USERNAME"] == user
        assert env["OUTCOMES_KAFKA_SASL_MECHANISM"] == "SCRAM-SHA-512"
        assert env["OUTCOMES_KAFKA_SASL_PASSWORD_FILE"].startswith("/run/secrets/")
    for service in services.values():  # secrets come from files, never the environment
        env = service.get("environment") or {}
        assert not any(k.endswith("PASSWORD") and v for k, v in env.items()), service


@pytest.mark.kafka
@pytest.mark.clickhouse
def test_pipeline_end_to_end_under_the_secure_profile(
    secure_stack: SecureStack, tmp_path: Path
) -> None:
    """produce (as producer) -> worker (as worker) -> sink (as sink) -> chDB."""
    import subprocess
    import sys

    outcomes = str(Path(sys.executable).with_name("outcomes"))
    sample = Path(__file__).resolve().parent.parent / "samples" / "five_file_run.jsonl"
    chdb = f"chdb://{tmp_path / 'chdb'}"
    settings, layout = secure_stack.settings, secure_stack.layout

    def run(user: str, *args: str) -> str:
        env = {
            **os.environ,
            **client_env(settings, layout, user),
            "OUTCOMES_STATE_DIR": str(tmp_path / user),
            "OUTCOMES_CLICKHOUSE": chdb,
        }
        env.pop("OUTCOMES_KAFKA_SASL_PASSWORD", None)
        result = subprocess.run(
            [outcomes, *args], env=env, capture_output=True, text=True, timeout=180, check=False
        )
        assert result.returncode == 0, f"{user} {args}: {result.stdout}{result.stderr}"
        return result.stdout + result.stderr

    assert "0 not delivered" in run(PRODUCER, "produce", str(sample))
    assert "folded" in run(WORKER, "worker", "--until-idle", "5", "--no-web")
    assert "offsets committed" in run(SINK, "sink", "--until-idle", "5", "--no-query-endpoint")
    out = run(
        ADMIN_USER,
        "query",
        "--format",
        "csv",
        "SELECT count() AS n FROM account_revisions WHERE run_id = 'run-five-files'",
    )
    assert "n\n" in out
    assert int(out.split("n\n", 1)[1].split()[0]) >= 1, out
