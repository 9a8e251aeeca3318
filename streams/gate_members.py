"""Which worker owns a run, for a gate check sent to any of them (SPEC 8).

Kafka Streams answers an interactive query on any instance by looking up the key's owner
in the group's metadata. The same here, with nothing but Kafka's own group protocol: each
worker joins its group with a `client.id` that carries its door's URL
(`outcomes-worker@http://host:port`), the run's run-log partition is the key's murmur2
partition (what the worker's producer and Java clients use), and the group's description
(an admin request, ~1 ms on a local broker) says which member holds that partition. The
owners are cached briefly and looked up again when a forward finds the cache wrong.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

CLIENT_ID_PREFIX = "outcomes-worker@"
OWNERS_TTL = 2.0  # seconds a group description is trusted


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 hash (the default partitioner of the Java client), as a signed
    32-bit value."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    rest = length % 4
    if rest >= 3:
        h ^= data[whole + 2] << 16
    if rest >= 2:
        h ^= data[whole + 1] << 8
    if rest >= 1:
        h ^= data[whole]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_of(key: str, partitions: int) -> int:
    """The partition Kafka's murmur2 partitioner gives a non-empty key."""
    return (murmur2(key.encode()) & 0x7FFFFFFF) % partitions


def client_id(url: str) -> str:
    """The `client.id` a worker joins its group with, naming its door."""
    return f"{CLIENT_ID_PREFIX}{url}"


def url_of(member_client_id: str) -> str | None:
    if not member_client_id.startswith(CLIENT_ID_PREFIX):
        return None
    url = member_client_id[len(CLIENT_ID_PREFIX) :]
    return url if url.startswith(("http://", "https://")) else None


Describe = Callable[[], Mapping[int, str]]


def group_owners(admin: Any, group: str, topic: str, timeout: float = 5.0) -> dict[int, str]:
    """partition -> door URL of the member that holds it, for one topic of a group
    (`admin` is a confluent-kafka AdminClient)."""
    description = admin.describe_consumer_groups([group], request_timeout=timeout)[group].result(
        timeout=timeout
    )
    owners: dict[int, str] = {}
    for member in description.members:
        url = url_of(member.client_id or "")
        if url is None or member.assignment is None:
            continue
        for tp in member.assignment.topic_partitions:
            if tp.topic == topic:
                owners[tp.partition] = url
    return owners


class Owners:
    """The owners of a topic's partitions, described at most every `OWNERS_TTL` seconds
    (or again at once when asked to `forget`)."""

    def __init__(self, describe: Describe, clock: Callable[[], float] = time.monotonic) -> None:
        self._describe = describe
        self._clock = clock
        self._lock = threading.Lock()
        self._owners: Mapping[int, str] = {}
        self._at = float("-inf")

    def owner(self, partition: int) -> str | None:
        with self._lock:
            if self._clock() - self._at > OWNERS_TTL or partition not in self._owners:
                self._owners = dict(self._describe())
                self._at = self._clock()
            return self._owners.get(partition)

    def forget(self) -> None:
        with self._lock:
            self._at = float("-inf")
