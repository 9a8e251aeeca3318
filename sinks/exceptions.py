"""Errors of the ClickHouse sink, each saying what the operator should do."""

from __future__ import annotations

from outcomes.reducers.errors import OutcomesError


class SinkError(OutcomesError):
    """Root of the sink's errors. Operators: read the message; it names the fix."""


class InvalidDsn(SinkError):
    """The ClickHouse DSN is not `chdb:///path` or `http(s)://host:port[/database]`.

    Operators: fix `--clickhouse` or `OUTCOMES_CLICKHOUSE`.
    """


class EngineLocked(SinkError):
    """Another process holds the chDB directory (chDB allows one process per path).

    Operators: stop the other process (its PID is in the message), point this command
    at a different `chdb:///path`, or use a ClickHouse server so several processes can
    share the data.
    """


class EngineBusy(SinkError):
    """This process already has chDB open at another path (one engine per process).

    Operators: use one chDB path per process; run the second command separately.
    """


class ClickHouseUnavailable(SinkError):
    """The ClickHouse server or chDB engine could not be reached or refused a statement.

    Operators: check the server is up and the DSN, user and grants are right; the
    sink has not committed the affected Kafka offsets, so restarting it is safe.
    """


class SchemaNotMigrated(SinkError):
    """The database lacks tables this version needs.

    Operators: run `outcomes clickhouse migrate --clickhouse DSN` (with DDL rights).
    """


class UnknownRecordKind(SinkError):
    """An output record has a kind the sink does not know (a newer pipeline?).

    Operators: upgrade the sink to the pipeline's version.
    """


class MalformedRecord(SinkError):
    """An output record's body lacks a field docs/records.md requires.

    Operators: the producer broke the record contract; the sink stores such records
    as dead letters (reason `schema_violation`) and goes on.
    """


class PurgeDenied(SinkError):
    """A purge was refused: no credential, a wrong one, or none configured.

    Operators: supply the purge credential in `OUTCOMES_PURGE_CREDENTIAL` or a file
    (`--credential-file`); configure its SHA-256 with `OUTCOMES_PURGE_CREDENTIAL_SHA256`
    and `outcomes clickhouse migrate`.
    """


class PurgeIncomplete(SinkError):
    """Rows of the purged run remained after the deletes.

    Operators: run the same purge again (it is idempotent); `purge_log` shows the
    attempt as `started` without a `completed` row until it succeeds.
    """


class QueryFailed(SinkError):
    """An analyst query was rejected by ClickHouse (syntax, unknown column, read-only).

    Operators: fix the SQL; `outcomes query` runs read-only.
    """
