"""A sample outcomes database on chDB for the query, purge and CLI tests."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from outcomes.devtools import samples
from outcomes.sinks import clickhouse, schema
from outcomes.sinks.writer import ClickHouseWriter

PURGE_SECRET = "correct horse battery staple 4f9a"
"""The purge credential the sample database is configured with."""


@contextmanager
def sample_database(tmp_path: Path) -> Iterator[str]:
    """A fresh chDB directory holding the sample outputs, migrated, with the purge
    credential `PURGE_SECRET`; yields its DSN and releases the engine afterwards."""
    clickhouse.close_all()
    dsn = f"chdb://{tmp_path}/chdb"
    writer = ClickHouseWriter(dsn)
    writer.write(samples.sample_records())
    digest = hashlib.sha256(PURGE_SECRET.encode()).hexdigest()
    schema.migrate(writer.conn, credential_sha256=digest)
    try:
        yield dsn
    finally:
        clickhouse.close_all()
