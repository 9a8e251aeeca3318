"""One run's records read back from ClickHouse, as the output records carried them
(docs/records.md): for `outcomes show` and `outcomes export` (docs/reports.md).

Account revisions come back byte for byte from `account_revision_rows.account` (the
table behind the `account_revisions` view; the sink stores each body as canonical
JSON); claim verdicts are rebuilt from their columns of `claim_verdicts`. Every table
is read with FINAL, so a redelivered row is read once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from outcomes import schemas
from outcomes.reducers.answers import COUNT_FIELDS
from outcomes.sinks import clickhouse, schema

# claim_verdicts columns in the order of a verdict record's fields (its Avro schema;
# the table names `verdict_id` `row_id`, as every table names its record's id).
_VERDICT_COLUMNS = tuple(
    "row_id" if f["name"] == "verdict_id" else f["name"]
    for f in schemas.schema_json(schemas.OUTPUT_SCHEMAS["claim_verdict"])["fields"]
)


# answer_checks columns in the order of an answer check record's fields (`check_id` is
# the view's `row_id`); times come back as RFC 3339 text, as the record carries them.
_ANSWER_COLUMNS = tuple(
    "row_id" if f["name"] == "check_id" else f["name"]
    for f in schemas.schema_json(schemas.OUTPUT_SCHEMAS["answer_check"])["fields"]
)


@dataclass(frozen=True)
class RunRecords:
    """A run's account revisions (by revision), every settlement of its verdicts, and
    the answers checked before display (SPEC 8)."""

    revisions: list[dict[str, Any]]
    verdicts: list[dict[str, Any]]
    answers: list[dict[str, Any]] = field(default_factory=list)


def read_run(dsn: str, run_id: str) -> RunRecords:
    """The run's revisions and verdicts in the outcomes database at `dsn`.

    A mistyped chDB path is refused, not created (`SchemaNotMigrated`); a chDB directory
    a running `outcomes sink` holds is read through its query endpoint. An embedded
    database made by an older version is migrated first, as the writer would.
    """
    conn = clickhouse.require_database(dsn, live=True)
    if not conn.live:
        schema.ensure_schema(conn)
    revisions = conn.rows(
        f"SELECT account FROM {conn.table(schema.ACCOUNT_REVISION_ROWS.name)} FINAL "
        "WHERE run_id = {run:String} ORDER BY revision",
        {"run": run_id},
    )
    verdicts = conn.rows(
        f"SELECT {', '.join(_VERDICT_COLUMNS)} FROM {conn.table('claim_verdicts')} FINAL "
        "WHERE run_id = {run:String} ORDER BY narrative_id, claim_id, settlement, row_id",
        {"run": run_id},
    )
    answers = conn.rows(
        f"SELECT {', '.join(_answer_column(c) for c in _ANSWER_COLUMNS)} "
        f"FROM {conn.table(schema.ANSWER_CHECKS.name)} FINAL "
        "WHERE run_id = {run:String} ORDER BY answer_chain_id, attempt, row_id",
        {"run": run_id},
    )
    return RunRecords(
        [orjson.loads(row[0]) for row in revisions],
        [_verdict(row) for row in verdicts],
        [_answer(row) for row in answers],
    )


def _answer_column(name: str) -> str:
    if name == "occurred_at":
        return "formatDateTime(occurred_at, '%Y-%m-%dT%H:%i:%S.%fZ', 'UTC') AS occurred_at"
    return name


def _answer(row: tuple[Any, ...]) -> dict[str, Any]:
    body = dict(zip(_ANSWER_COLUMNS, row, strict=True))
    body["check_id"] = body.pop("row_id")
    for key in ("attempt", "account_revision", *COUNT_FIELDS):
        if body.get(key) is not None:
            body[key] = int(body[key])
    return body


def _verdict(row: tuple[Any, ...]) -> dict[str, Any]:
    body = dict(zip(_VERDICT_COLUMNS, row, strict=True))
    body["verdict_id"] = body.pop("row_id")
    # Rows stored before settlements existed (migration 5) read '' and 0 there.
    body["claim_id"] = body["claim_id"] or None
    body["settlement"] = int(body["settlement"]) or 1
    body["withdrawn"] = bool(body["withdrawn"])
    for key in ("account_revision", "span_start", "span_end"):
        if body[key] is not None:
            body[key] = int(body[key])
    return body
