"""One validated, frozen settings object for every adapter.

Each setting names its environment variable and, where one exists, its CLI flag. CLI
flags win over the environment, which wins over the defaults. Secrets (SASL password,
purge credential) are never printed: `Settings.describe()` masks them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from outcomes.reducers.errors import OutcomesError
from outcomes.reducers.limits import Limits


class SettingsError(OutcomesError):
    """A setting has an invalid value. Operators: fix the named variable or flag."""


DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def _project_root() -> Path:
    return Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Setting:
    """Documentation of one setting: where it comes from and what it means."""

    name: str
    env: str
    flag: str | None
    help: str
    secret: bool = False
    default: str | None = None
    """What is in force when neither the flag nor the variable is set, as help shows it."""


SETTINGS_DOC: tuple[Setting, ...] = (
    Setting(
        "bootstrap",
        "OUTCOMES_BOOTSTRAP",
        "--bootstrap",
        "Kafka bootstrap servers, comma separated.",
        default=DEFAULT_BOOTSTRAP,
    ),
    Setting(
        "security_protocol",
        "OUTCOMES_KAFKA_SECURITY_PROTOCOL",
        None,
        "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.",
    ),
    Setting(
        "sasl_mechanism",
        "OUTCOMES_KAFKA_SASL_MECHANISM",
        None,
        "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.",
    ),
    Setting("sasl_username", "OUTCOMES_KAFKA_SASL_USERNAME", None, "SASL user name."),
    Setting("sasl_password", "OUTCOMES_KAFKA_SASL_PASSWORD", None, "SASL password.", secret=True),
    Setting(
        "sasl_password_file",
        "OUTCOMES_KAFKA_SASL_PASSWORD_FILE",
        None,
        "File holding the SASL password (used when OUTCOMES_KAFKA_SASL_PASSWORD is unset).",
    ),
    Setting("ssl_cafile", "OUTCOMES_KAFKA_SSL_CAFILE", None, "CA bundle for TLS."),
    Setting("ssl_certfile", "OUTCOMES_KAFKA_SSL_CERTFILE", None, "Client certificate."),
    Setting("ssl_keyfile", "OUTCOMES_KAFKA_SSL_KEYFILE", None, "Client private key."),
    Setting(
        "schema_registry_url",
        "OUTCOMES_SCHEMA_REGISTRY_URL",
        "--schema-registry",
        "Confluent Schema Registry URL (frames events with registry schema ids).",
        default="Avro single-object encoding",
    ),
    Setting(
        "clickhouse",
        "OUTCOMES_CLICKHOUSE",
        "--clickhouse",
        "ClickHouse DSN: chdb:///path (embedded) or http(s)://host:port[/database].",
        default="chdb://<state_dir>/chdb",
    ),
    Setting(
        "state_dir",
        "OUTCOMES_STATE_DIR",
        "--state-dir",
        "Project-local state: dev broker data, chDB files, worker tables.",
        default="<repo>/.state",
    ),
    Setting(
        "max_event_bytes",
        "OUTCOMES_MAX_EVENT_BYTES",
        None,
        "Largest accepted encoded event (bytes).",
    ),
    Setting(
        "max_string_bytes",
        "OUTCOMES_MAX_STRING_BYTES",
        None,
        "Largest accepted string field (bytes, UTF-8).",
    ),
    Setting(
        "max_list_items", "OUTCOMES_MAX_LIST_ITEMS", None, "Largest accepted list field (items)."
    ),
    Setting(
        "purge_credential",
        "OUTCOMES_PURGE_CREDENTIAL",
        None,
        "The purge credential `outcomes purge` presents (or --credential-file); never a flag.",
        secret=True,
    ),
    Setting(
        "purge_credential_sha256",
        "OUTCOMES_PURGE_CREDENTIAL_SHA256",
        None,
        "SHA-256 (hex) of the purge credential; `outcomes clickhouse migrate` puts it in force.",
        secret=True,
    ),
    Setting(
        "purge_actor",
        "OUTCOMES_PURGE_ACTOR",
        "--actor",
        "Who purges, recorded in purge_log.",
        default="OS user@host",
    ),
    Setting(
        "gate_url",
        "OUTCOMES_GATE_URL",
        "--gate-url",
        "The pre-display gate: a worker's door (`outcomes check`, the Claude Code Stop hook).",
        default="http://127.0.0.1:6066",
    ),
    Setting(
        "gate_token",
        "OUTCOMES_GATE_TOKEN",
        None,
        "The bearer token a check presents (else the worker's own, from its state folder); "
        "never a flag.",
        secret=True,
    ),
)


@dataclass(frozen=True)
class Settings:
    """Every knob of the pipeline, validated once."""

    bootstrap: str = DEFAULT_BOOTSTRAP
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    sasl_password_file: str | None = None
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    schema_registry_url: str | None = None
    clickhouse: str | None = None
    state_dir: Path = field(default_factory=lambda: _project_root() / ".state")
    limits: Limits = field(default_factory=Limits)
    purge_credential: str | None = field(default=None, repr=False)
    purge_credential_sha256: str | None = field(default=None, repr=False)
    purge_actor: str | None = None
    gate_url: str = "http://127.0.0.1:6066"
    gate_token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        protocols = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}
        if self.security_protocol not in protocols:
            raise SettingsError(
                f"OUTCOMES_KAFKA_SECURITY_PROTOCOL={self.security_protocol!r}: "
                f"expected one of {sorted(protocols)}"
            )
        if not self.bootstrap.strip():
            raise SettingsError(
                "bootstrap servers are empty: set --bootstrap or OUTCOMES_BOOTSTRAP"
            )

    @property
    def clickhouse_dsn(self) -> str:
        """The DSN in force: the configured one, else embedded chDB under the state dir."""
        return self.clickhouse or f"chdb://{self.state_dir / 'chdb'}"

    @classmethod
    def load(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from the environment, then non-None keyword overrides (CLI flags)."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for doc in SETTINGS_DOC:
            raw = env.get(doc.env)
            if raw is None or raw == "":
                continue
            values[doc.name] = raw
        for key, value in overrides.items():
            if value is not None:
                values[key] = value
        limit_keys = {"max_event_bytes", "max_string_bytes", "max_list_items"}
        limit_values: dict[str, int] = {}
        for key in limit_keys & values.keys():
            try:
                limit_values[key] = int(values.pop(key))
            except ValueError as exc:
                raise SettingsError(f"{key} must be an integer: {exc}") from None
        if values.get("sasl_password_file") and not values.get("sasl_password"):
            path = Path(values["sasl_password_file"]).expanduser()
            try:
                values["sasl_password"] = path.read_text().strip()
            except OSError as exc:
                raise SettingsError(
                    f"OUTCOMES_KAFKA_SASL_PASSWORD_FILE={path}: cannot read it ({exc.strerror})"
                ) from None
        if "state_dir" in values:
            values["state_dir"] = Path(values["state_dir"]).expanduser().resolve()
        known = {f.name for f in fields(cls)}
        unknown = values.keys() - known
        if unknown:
            raise SettingsError(f"unknown settings: {sorted(unknown)}")
        settings = cls(**values)
        if limit_values:
            settings = replace(settings, limits=replace(settings.limits, **limit_values))
        return settings

    def kafka_config(self) -> dict[str, str]:
        """librdkafka/confluent-kafka client properties (bootstrap, TLS, SASL)."""
        conf: dict[str, str] = {
            "bootstrap.servers": self.bootstrap,
            "security.protocol": self.security_protocol,
        }
        optional = {
            "sasl.mechanism": self.sasl_mechanism,
            "sasl.username": self.sasl_username,
            "sasl.password": self.sasl_password,
            "ssl.ca.location": self.ssl_cafile,
            "ssl.certificate.location": self.ssl_certfile,
            "ssl.key.location": self.ssl_keyfile,
        }
        conf.update({k: v for k, v in optional.items() if v is not None})
        return conf

    def describe(self) -> dict[str, str]:
        """Settings for display, with secrets masked."""
        shown: dict[str, str] = {}
        secret = {d.name for d in SETTINGS_DOC if d.secret}
        for f in fields(self):
            value = getattr(self, f.name)
            shown[f.name] = "***" if (f.name in secret and value) else str(value)
        return shown
