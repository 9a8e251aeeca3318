"""The Schema Registry client the codec uses when one is configured (optional)."""

from __future__ import annotations

from typing import Protocol

from outcomes.common.errors import SchemaRegistryUnavailable


class RegistryClient(Protocol):
    """The two Schema Registry calls the codec needs (register, look up by id)."""

    def register(self, subject: str, schema_str: str) -> int: ...

    def lookup(self, schema_id: int) -> str: ...


class ConfluentRegistry:
    """:class:`RegistryClient` over confluent-kafka's `schema_registry` client.

    Needs `confluent-kafka[schemaregistry]` (httpx, authlib, ...); imported on first use.
    """

    def __init__(self, url: str) -> None:
        try:
            from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
        except ImportError as exc:
            raise SchemaRegistryUnavailable(
                f"schema registry {url} configured, but its client is missing ({exc}): "
                "install confluent-kafka[schemaregistry]"
            ) from None
        self._schema_type = Schema
        self._client = SchemaRegistryClient({"url": url})

    def register(self, subject: str, schema_str: str) -> int:
        return int(self._client.register_schema(subject, self._schema_type(schema_str, "AVRO")))

    def lookup(self, schema_id: int) -> str:
        return str(self._client.get_schema(schema_id).schema_str)
