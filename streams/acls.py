"""Who may do what on the broker: one table of identities and their Kafka ACLs.

The secure profile (`outcomes dev up --secure`, docs/kafka.md "The secure profile")
gives every part of the pipeline its own SASL/SCRAM user and lets the broker's
StandardAuthorizer refuse everything else (`allow.everyone.if.no.acl.found=false`):

- `producer`: agent workers (streams/sdk) may write the input topics, nothing else;
- `worker`: reads the inputs, owns its run log, internal topics and consumer group
  (everything named after its app id), writes the output topics;
- `sink`: reads the output topics and commits its group; its events recorder reads the
  worker's run log and commits the group beside it (`outcomes-sink-events`);
- `reader`: downstream consumers read the notification topics (groups `outcomes-reader*`).

The stack's own admin is a super user and needs no ACL.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from outcomes.reducers.catalog import (
    DEFAULT_APP_ID,
    INPUT_TOPICS,
    OUTPUT_TOPICS,
    RUN_LOG_TOPIC,
    run_log_topic,
)

PRODUCER: Final = "producer"
WORKER: Final = "worker"
SINK: Final = "sink"
READER: Final = "reader"
IDENTITIES: Final = (PRODUCER, WORKER, SINK, READER)

SINK_GROUP: Final = "outcomes-sink"
SINK_EVENTS_GROUP: Final = f"{SINK_GROUP}-events"  # sinks/events.py group_for
READER_GROUP_PREFIX: Final = "outcomes-reader"
NOTIFICATION_TOPICS: Final = (
    OUTPUT_TOPICS["notification"],
    OUTPUT_TOPICS["claim_notification"],
)


@dataclass(frozen=True)
class Grant:
    """One allow rule: `user` may do `operations` on the resource."""

    user: str
    resource: str  # "topic" or "group"
    name: str
    prefixed: bool
    operations: tuple[str, ...]

    def describe(self) -> str:
        kind = "prefixed" if self.prefixed else "literal"
        return f"User:{self.user} {'/'.join(self.operations)} {self.resource} {self.name} ({kind})"


_READ = ("READ", "DESCRIBE")
_WRITE = ("WRITE", "DESCRIBE")
_OWN = ("READ", "WRITE", "CREATE", "DESCRIBE", "DESCRIBE_CONFIGS")


def acl_table(app_id: str = DEFAULT_APP_ID) -> tuple[Grant, ...]:
    """Every allow rule of the secure profile, for a worker deployment named `app_id`."""
    grants: list[Grant] = []
    for topic in INPUT_TOPICS:
        grants.append(Grant(PRODUCER, "topic", topic, False, _WRITE))
        grants.append(Grant(WORKER, "topic", topic, False, _READ))
    # The run log of the default app id has a name of its own; any other app id's run
    # log and changelog start with the app id, as does its consumer group.
    grants.append(Grant(WORKER, "topic", RUN_LOG_TOPIC, False, _OWN))
    grants.append(Grant(WORKER, "topic", app_id, True, _OWN))
    grants.append(Grant(WORKER, "group", app_id, True, ("READ", "DESCRIBE")))
    for topic in OUTPUT_TOPICS.values():
        grants.append(Grant(WORKER, "topic", topic, False, _WRITE))
        grants.append(Grant(SINK, "topic", topic, False, _READ))
    grants.append(Grant(SINK, "group", SINK_GROUP, False, ("READ", "DESCRIBE")))
    grants.append(Grant(SINK, "topic", run_log_topic(app_id), False, _READ))
    grants.append(Grant(SINK, "group", SINK_EVENTS_GROUP, False, ("READ", "DESCRIBE")))
    for topic in NOTIFICATION_TOPICS:
        grants.append(Grant(READER, "topic", topic, False, _READ))
    grants.append(Grant(READER, "group", READER_GROUP_PREFIX, True, ("READ", "DESCRIBE")))
    return tuple(grants)


def acl_bindings(grants: Iterable[Grant]) -> list[Any]:
    """confluent-kafka `AclBinding`s (allow, any host) for `grants`."""
    from confluent_kafka.admin import (  # lazy: confluent_kafka loads librdkafka
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    kinds = {"topic": ResourceType.TOPIC, "group": ResourceType.GROUP}
    bindings = []
    for grant in grants:
        pattern = ResourcePatternType.PREFIXED if grant.prefixed else ResourcePatternType.LITERAL
        for operation in grant.operations:
            bindings.append(
                AclBinding(
                    kinds[grant.resource],
                    grant.name,
                    pattern,
                    f"User:{grant.user}",
                    "*",
                    AclOperation[operation],
                    AclPermissionType.ALLOW,
                )
            )
    return bindings


def apply_acls(admin: Any, grants: Sequence[Grant], timeout: float = 30.0) -> int:
    """Create the ACLs of `grants` with an AdminClient (idempotent); return how many."""
    bindings = acl_bindings(grants)
    for future in admin.create_acls(bindings, request_timeout=timeout).values():
        future.result()
    return len(bindings)


def apply_scram_users(
    admin: Any, passwords: Mapping[str, str], mechanism: str = "SCRAM-SHA-512"
) -> None:
    """Create or replace one SCRAM credential per user with the AdminClient."""
    from confluent_kafka.admin import (  # lazy: confluent_kafka loads librdkafka
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    scram = ScramMechanism[mechanism.replace("-", "_")]
    upserts = [
        UserScramCredentialUpsertion(user, ScramCredentialInfo(scram, 8192), password.encode())
        for user, password in passwords.items()
    ]
    for future in admin.alter_user_scram_credentials(upserts).values():
        future.result()
