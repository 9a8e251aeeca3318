"""The data tables' definitions: columns, identity keys, partitions, and the views that
show the old tables' names (sinks/schema.py makes them; docs/clickhouse.md).

A module of its own, importing nothing else of the sink, so that the row builder
(sinks/rows.py) and the schema's migrations can both use the layouts without importing
each other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

TS = "DateTime64(6, 'UTC')"
LC = "LowCardinality(String)"
LCN = "LowCardinality(Nullable(String))"

# ClickHouse remembers this many recent insert blocks per table for deduplication by
# `insert_deduplication_token` (it is 0, i.e. off, on non-replicated MergeTree unless set).
DEDUP_WINDOW = 10_000


@dataclass(frozen=True)
class Table:
    """One data table: its columns (in insert order), identity key and partitioning."""

    name: str
    columns: tuple[tuple[str, str], ...]
    order_by: tuple[str, ...]
    partition_by: str | None
    comment: str
    has_run_id: bool = True

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)

    @property
    def column_types(self) -> tuple[str, ...]:
        return tuple(kind for _, kind in self.columns)

    def ddl(self, database: str) -> str:
        cols = ",\n    ".join(f"`{n}` {t}" for n, t in self.columns)
        # Lets the writer's read-back of stored row ids skip granules without them.
        cols += ",\n    INDEX row_id_bf row_id TYPE bloom_filter(0.01) GRANULARITY 1"
        partition = f"\nPARTITION BY {self.partition_by}" if self.partition_by else ""
        return (
            f"CREATE TABLE IF NOT EXISTS `{database}`.`{self.name}` (\n    {cols}\n)\n"
            f"ENGINE = ReplacingMergeTree{partition}\n"
            f"ORDER BY ({', '.join(self.order_by)})\n"
            f"SETTINGS non_replicated_deduplication_window = {DEDUP_WINDOW}\n"
            f"COMMENT '{self.comment}'"
        )


ACCOUNT_REVISIONS = Table(
    "account_revisions",
    (
        ("run_id", "String"),
        ("revision", "UInt32"),
        ("supersedes", "Nullable(UInt32)"),
        ("row_id", "String"),
        ("status", LC),
        ("workflow_status", LC),
        ("created_at", TS),
        ("trigger_event_id", "String"),
        ("state_revision", "String"),
        ("goal_revision", "Nullable(UInt32)"),
        ("candidate_snapshot", "Nullable(String)"),
        ("schema_version", "UInt16"),
        ("assembler_version", LC),
        ("response_completion", LCN),
        ("requested_action_outcome", LCN),
        ("verification", LCN),
        ("review", LCN),
        ("durability", LCN),
        ("changes", "Array(LowCardinality(String))"),
        ("account", "String CODEC(ZSTD(1))"),
    ),
    ("run_id", "revision"),
    "toYYYYMM(created_at)",
    "One row per account revision; created_at is the observation_cutoff (event time).",
)

# Columns of `account_revision_rows` beyond the Table's (migration 15): computed by
# ClickHouse from the stored account JSON on insert (MATERIALIZED), so the row builder and
# the writer's column list are unchanged, and rows stored before read theirs from their
# JSON (null: the field did not exist). The `account_revisions` view shows them.
REQUIREMENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("requirement_policy", LCN),
    ("requirement_source", "Nullable(String)"),
)

PREDICATE_RESULTS = Table(
    "predicate_results",
    (
        ("run_id", "String"),
        ("revision", "UInt32"),
        ("predicate_id", "String"),
        ("row_id", "String"),
        ("predicate_kind", LC),
        ("required", "Bool"),
        ("state", LC),
        ("reason", LC),
        ("evidence", "Array(String)"),
        ("created_at", TS),
    ),
    ("run_id", "revision", "predicate_id"),
    "toYYYYMM(created_at)",
    "One row per predicate per account revision.",
)

CONTRADICTIONS = Table(
    "contradictions",
    (
        ("run_id", "String"),
        ("revision", "UInt32"),
        ("subject", "String"),
        ("kind", LC),
        ("row_id", "String"),
        ("evidence_event_ids", "Array(String)"),
        ("evidence_values", "Array(String)"),
        ("evidence_occurred_at", f"Array({TS})"),
        ("created_at", TS),
    ),
    ("run_id", "revision", "subject", "kind"),
    "toYYYYMM(created_at)",
    "One row per contradiction per account revision, with all its evidence.",
)

EFFECT_STATES = Table(
    "effect_states",
    (
        ("run_id", "String"),
        ("revision", "UInt32"),
        ("intent_id", "String"),
        ("row_id", "String"),
        ("effect_class", LCN),
        ("state", LC),
        ("receipts", "Array(String)"),
        ("unresolved", "Bool"),
        ("created_at", TS),
    ),
    ("run_id", "revision", "intent_id"),
    "toYYYYMM(created_at)",
    "One row per effect per account revision.",
)

JOURNAL_RETRIEVAL_EVENTS = Table(
    "journal_retrieval_events",
    (
        ("run_id", "String"),
        ("retrieval_id", "String"),
        ("candidate_id", "String"),
        ("row_id", "String"),
        ("event_id", "String"),
        ("occurred_at", TS),
        ("job_id", "String"),
        ("query_hash", "String"),
        ("algorithm", LC),
        ("config_hash", "String"),
        ("source_type", LC),
        ("source_event_id", "String"),
        ("rank", "Int32"),
        ("score", "Float64"),
        ("eligible", "Bool"),
        ("decision", LC),
        ("withhold_reason", LCN),
    ),
    ("run_id", "retrieval_id", "candidate_id"),
    "toYYYYMM(occurred_at)",
    "One row per evaluated retrieval candidate. Records evaluation only, not use.",
)

JOURNAL_CONTEXT_INJECTIONS = Table(
    "journal_context_injections",
    (
        ("run_id", "String"),
        ("injection_id", "String"),
        ("event_id", "String"),
        ("row_id", "String"),
        ("occurred_at", TS),
        ("model_call_id", "String"),
        ("retrieval_id", "String"),
        ("candidate_ids", "Array(String)"),
        ("block_hash", "String"),
        ("block_bytes", "UInt64"),
        ("location", "String"),
        ("range_start", "Int64"),
        ("range_end", "Int64"),
        ("confirmed", "Bool"),
        ("removed_before_inference", "Bool"),
    ),
    ("run_id", "injection_id", "event_id"),
    "toYYYYMM(occurred_at)",
    "One row per recorded context injection at a model-call boundary. Not proof of use.",
)

PROVENANCE_FINDINGS = Table(
    "provenance_findings",
    (
        ("run_id", "String"),
        ("kind", LC),
        ("subject", "String"),
        ("revision", "UInt32"),
        ("row_id", "String"),
        ("change", LC),
        ("evidence", "Array(String)"),
        ("event_id", "String"),
        ("occurred_at", TS),
    ),
    ("run_id", "kind", "subject", "revision"),
    "toYYYYMM(occurred_at)",
    "Provenance findings raised or withdrawn by an account revision.",
)

NOTIFICATIONS = Table(
    "notifications",
    (
        ("run_id", "String"),
        ("revision", "UInt32"),
        ("row_id", "String"),
        ("kind", LC),
        ("supersedes", "Nullable(UInt32)"),
        ("status", LC),
        ("previous_status", LCN),
        ("completion_automation", "Bool"),
        ("observation_cutoff", TS),
    ),
    ("run_id", "revision"),
    "toYYYYMM(observation_cutoff)",
    "account.final and account.superseded notifications.",
)

# As migration 1 made it. Migration 5 adds the settlement columns (below).
CLAIM_VERDICTS_V1 = Table(
    "claim_verdicts",
    (
        ("run_id", "String"),
        ("narrative_id", "String"),
        ("verdict_index", "UInt32"),
        ("row_id", "String"),
        ("event_id", "String"),
        ("account_revision", "Nullable(UInt32)"),
        ("claim_kind", LC),
        ("verdict", LC),
        ("subject", "Nullable(String)"),
        ("span_start", "Nullable(Int32)"),
        ("span_end", "Nullable(Int32)"),
        ("span_text", "Nullable(String)"),
        ("reason", LC),
    ),
    ("run_id", "narrative_id", "verdict_index"),
    None,
    "Claim-checker verdicts on narratives, one row per claim or omission.",
)

# No DEFAULT clauses: ClickHouse only lets a column join the sorting key in the ALTER that
# adds it when it has none. Rows stored before migration 5 read '' and 0 for the key
# columns (the current_claim_verdicts view takes such a row's row_id as its claim_id).
CLAIM_SETTLEMENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("claim_id", "String"),
    ("settlement", "UInt32"),
    ("supersedes", "Nullable(String)"),
    ("withdrawn", "Bool"),
)

# Migration 9: the supported formulation of a contradicted claim or an omission (null in
# rows stored before it, and for other verdicts).
CLAIM_FORMULATION_COLUMNS: tuple[tuple[str, str], ...] = (("supported", "Nullable(String)"),)

CLAIM_VERDICTS = dataclasses.replace(
    CLAIM_VERDICTS_V1,
    columns=CLAIM_VERDICTS_V1.columns + CLAIM_SETTLEMENT_COLUMNS + CLAIM_FORMULATION_COLUMNS,
    order_by=(*CLAIM_VERDICTS_V1.order_by, "claim_id", "settlement"),
    comment="Claim-checker verdicts on narratives: one row per settlement of a claim or omission.",
)

CLAIM_NOTIFICATIONS = Table(
    "claim_notifications",
    (
        ("run_id", "String"),
        ("revision", "UInt32"),
        ("trigger_event_id", "String"),
        ("row_id", "String"),
        ("status", LC),
        ("observation_cutoff", TS),
        ("narrative_ids", "Array(String)"),
        ("verdict_ids", "Array(String)"),
        ("superseded", "UInt32"),
        ("withdrawn", "UInt32"),
    ),
    ("run_id", "revision", "trigger_event_id"),
    "toYYYYMM(observation_cutoff)",
    "Claim verdicts that a later account revision settled anew.",
)

DEAD_LETTERS = Table(
    "dead_letters",
    (
        ("row_id", "String"),
        ("recorded_by", LC),
        ("reason", LC),
        ("message", "String"),
        ("raw", "String CODEC(ZSTD(1))"),
        ("origin_topic", LCN),
        ("origin_partition", "Nullable(Int32)"),
        ("origin_offset", "Nullable(Int64)"),
        ("origin_file", "Nullable(String)"),
        ("origin_line", "Nullable(Int64)"),
        ("run_id", "Nullable(String)"),
        ("event_id", "Nullable(String)"),
    ),
    ("row_id",),
    None,
    "Inputs the pipeline could not apply and outputs the sink could not decode.",
    has_run_id=False,
)

# The tables migration 1 (and 5) made, one per row type. Since migration 13 most of them
# are views of the two record tables below, under the same names and columns.
LEGACY_TABLES: tuple[Table, ...] = (
    ACCOUNT_REVISIONS,
    PREDICATE_RESULTS,
    CONTRADICTIONS,
    EFFECT_STATES,
    JOURNAL_RETRIEVAL_EVENTS,
    JOURNAL_CONTEXT_INJECTIONS,
    PROVENANCE_FINDINGS,
    NOTIFICATIONS,
    CLAIM_VERDICTS,
    CLAIM_NOTIFICATIONS,
    DEAD_LETTERS,
)
LEGACY_BY_NAME = {t.name: t for t in LEGACY_TABLES}
# The tables as migration 1 created them (claim_verdicts without its settlement columns).
_V1_TABLES = tuple(
    CLAIM_VERDICTS_V1 if t is CLAIM_VERDICTS else t
    for t in LEGACY_TABLES
    if t is not CLAIM_NOTIFICATIONS
)

# Migration 13 (issue 28): chDB pays ~5-10 ms per INSERT, i.e. per part written, so a
# flush that wrote ten tables now writes three: an account revision is one row with its
# predicates, contradictions and effects as Nested columns, and notifications, claim
# notifications and provenance rows share one table. The old names are views.
REVISION_DETAILS: tuple[tuple[str, Table, tuple[str, ...]], ...] = (
    # (Nested column, the view it feeds, that view's columns the Nested column holds)
    (
        "predicates",
        PREDICATE_RESULTS,
        ("predicate_id", "predicate_kind", "required", "state", "reason", "evidence"),
    ),
    (
        "contradictions",
        CONTRADICTIONS,
        ("subject", "kind", "evidence_event_ids", "evidence_values", "evidence_occurred_at"),
    ),
    ("effects", EFFECT_STATES, ("intent_id", "effect_class", "state", "receipts", "unresolved")),
)


def _nested(nest: str, table: Table, names: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    kinds = dict(table.columns)
    return tuple((f"{nest}.{name}", f"Array({kinds[name]})") for name in names)


ACCOUNT_REVISION_ROWS = Table(
    "account_revision_rows",
    ACCOUNT_REVISIONS.columns
    + tuple(col for nest, table, names in REVISION_DETAILS for col in _nested(nest, table, names)),
    ACCOUNT_REVISIONS.order_by,
    ACCOUNT_REVISIONS.partition_by,
    "One row per account revision with its predicates, contradictions and effects "
    "(Nested); read through account_revisions, predicate_results, contradictions, "
    "effect_states.",
)

# The row types that share `output_rows` since migration 13, each shown by the view of
# its old name.
OUTPUT_ROW_TABLES_V13: tuple[Table, ...] = (
    NOTIFICATIONS,
    CLAIM_NOTIFICATIONS,
    JOURNAL_RETRIEVAL_EVENTS,
    JOURNAL_CONTEXT_INJECTIONS,
    PROVENANCE_FINDINGS,
)

# Migration 16 (SPEC 8 "Record"): one row per `answer_check` record, in `output_rows`
# (no table of its own: a flush writes no more parts), shown by the `answer_checks` view.
# It never was a table: it is not a legacy table nor a record view of migration 13.
ANSWER_CHECKS = Table(
    "answer_checks",
    (
        ("run_id", "String"),
        ("answer_chain_id", "String"),
        ("attempt", "UInt32"),
        ("row_id", "String"),
        ("event_id", "String"),
        ("occurred_at", TS),
        ("source", LC),
        ("decision", LC),
        ("account_revision", "Nullable(UInt32)"),
        ("text_digest", "String"),
        ("supported", "UInt32"),
        ("contradicted", "UInt32"),
        ("unverifiable", "UInt32"),
        ("needs_review", "UInt32"),
        ("omitted", "UInt32"),
    ),
    ("run_id", "answer_chain_id", "attempt"),
    "toYYYYMM(occurred_at)",
    "One row per check of an answer before display (SPEC 8): its chain, attempt, "
    "decision and claims by verdict; the text shown is the run's narrative.",
)
# The columns migration 16 adds to `output_rows` (the others it shares already).
ANSWER_CHECK_COLUMNS: tuple[tuple[str, str], ...] = tuple(
    (n, t)
    for n, t in ANSWER_CHECKS.columns
    if n not in {"run_id", "row_id", "event_id", "occurred_at"}
)
OUTPUT_ROW_TABLES: tuple[Table, ...] = (*OUTPUT_ROW_TABLES_V13, ANSWER_CHECKS)
OUTPUT_ROW_TABLES_BY_NAME = {t.name: t for t in OUTPUT_ROW_TABLES}


def _union_columns(tables: Iterable[Table]) -> tuple[tuple[str, str], ...]:
    """Every column of the tables, once, in order of first appearance (a name must have
    one type wherever it appears)."""
    seen: dict[str, str] = {}
    for table in tables:
        for name, kind in table.columns:
            if seen.setdefault(name, kind) != kind:
                raise AssertionError(f"{table.name}.{name}: {kind} against {seen[name]}")
    return tuple(seen.items())


# `output_rows` as migration 13 made it (what its move writes).
OUTPUT_ROWS_V13 = Table(
    "output_rows",
    (("record_table", LC), *_union_columns(OUTPUT_ROW_TABLES_V13)),
    ("record_table", "run_id", "row_id"),
    None,
    "Notifications, claim notifications and provenance rows, one row each; record_table "
    "names the view that shows it.",
)
# Since migration 16 it holds answer checks too, their columns after the others.
OUTPUT_ROWS = dataclasses.replace(
    OUTPUT_ROWS_V13, columns=_union_columns([OUTPUT_ROWS_V13, *OUTPUT_ROW_TABLES])
)

# The physical data tables: what the writer inserts into and the purge deletes from.
DATA_TABLES: tuple[Table, ...] = (ACCOUNT_REVISION_ROWS, OUTPUT_ROWS, CLAIM_VERDICTS, DEAD_LETTERS)
TABLES_BY_NAME = {t.name: t for t in DATA_TABLES}
# Old table names that are views of DATA_TABLES since migration 13.
RECORD_VIEWS: tuple[str, ...] = (
    ACCOUNT_REVISIONS.name,
    *(table.name for _, table, _ in REVISION_DETAILS),
    *(table.name for table in OUTPUT_ROW_TABLES_V13),
)

_V1_VIEWS: tuple[str, ...] = (
    "current_accounts",
    "unresolved_effects",
    "open_contradictions",
    "stale_or_missing_checks",
    "current_provenance_findings",
    "supersession_history",
)
VIEWS: tuple[str, ...] = (
    *_V1_VIEWS,
    "current_claim_verdicts",
    *RECORD_VIEWS,
    ANSWER_CHECKS.name,
)


# -- the columns against the Avro schemas (issue 36, "declared once") --------------------
# Each table's rows come from one output record (docs/records.md): `FIELD_COLUMNS` says
# which field each column holds, as a path in the record (`dimensions.verification`; a
# path through a list gives an Array column, one element per entry). `column_drift` holds
# them to the schemas: every field is stored or named as not stored, and every column's
# type fits its field's. The migration for a new field takes its column from
# `new_columns`, so a field is declared in its schema and nowhere else by hand.


@dataclass(frozen=True)
class FieldColumns:
    """Where one table's rows come from: an output record kind; `each`, an array field
    of it giving one row per entry (None: one row per record); the column -> field path
    map (paths inside `each` are relative to its entry, `^name` is the record's own
    field); the columns the sink computes (not a field: why); the fields not stored as
    columns (why); and the columns of optional fields that store a null as the type's
    empty value (a sorting key column cannot be Nullable)."""

    record: str
    columns: Mapping[str, str]
    computed: Mapping[str, str] = dataclasses.field(default_factory=dict)
    unstored: Mapping[str, str] = dataclasses.field(default_factory=dict)
    each: str | None = None
    null_as_empty: frozenset[str] = frozenset()
    # Which records give this table rows: a field and its value (None: every record).
    where: tuple[str, str] | None = None


_IN_ACCOUNT = "kept in the account JSON (the `account` column)"
_ROW = "computed by the sink from the record's id"
_OUTPUT_ENVELOPE = {
    "run_id": "^run_id",
    "revision": "^revision",
    "created_at": "^observation_cutoff",
}

FIELD_COLUMNS: Mapping[str, FieldColumns] = {
    ACCOUNT_REVISIONS.name: FieldColumns(
        "account_revision",
        {
            "run_id": "run_id",
            "revision": "revision",
            "supersedes": "supersedes",
            "row_id": "revision_id",
            "status": "status",
            "workflow_status": "workflow_status",
            "created_at": "observation_cutoff",
            "trigger_event_id": "trigger_event_id",
            "state_revision": "state_revision",
            "goal_revision": "goal_revision",
            "candidate_snapshot": "candidate_snapshot",
            "schema_version": "schema_version",
            "assembler_version": "assembler_version",
            "response_completion": "dimensions.response_completion",
            "requested_action_outcome": "dimensions.requested_action_outcome",
            "verification": "dimensions.verification",
            "review": "dimensions.review",
            "durability": "dimensions.durability",
            "changes": "changes",
        },
        {"account": "the record's canonical JSON"},
        {
            # Migration 15 reads these from the account JSON (REQUIREMENT_COLUMNS).
            "requirement_policy": "a MATERIALIZED column from the account JSON",
            "requirement_source": "a MATERIALIZED column from the account JSON",
            **dict.fromkeys(
                (
                    "artifacts",
                    "checks",
                    "actions",
                    "provenance_findings",
                    "ignored_goal_proposals",
                ),
                _IN_ACCOUNT,
            ),
            **dict.fromkeys(("predicates", "contradictions", "effects"), "rows of their own"),
        },
    ),
    PREDICATE_RESULTS.name: FieldColumns(
        "account_revision",
        {
            **_OUTPUT_ENVELOPE,
            "predicate_id": "id",
            "required": "required",
            "state": "state",
            "reason": "reason",
            "evidence": "evidence",
        },
        {"row_id": _ROW, "predicate_kind": "the predicate id's first part"},
        each="predicates",
    ),
    CONTRADICTIONS.name: FieldColumns(
        "account_revision",
        {
            **_OUTPUT_ENVELOPE,
            "subject": "subject",
            "kind": "kind",
            "evidence_event_ids": "evidence.event_id",
            "evidence_values": "evidence.value",
            "evidence_occurred_at": "evidence.occurred_at",
        },
        {"row_id": _ROW},
        each="contradictions",
    ),
    EFFECT_STATES.name: FieldColumns(
        "account_revision",
        {
            **_OUTPUT_ENVELOPE,
            "intent_id": "intent_id",
            "effect_class": "effect_class",
            "state": "state",
            "receipts": "receipts",
            "unresolved": "unresolved",
        },
        {"row_id": _ROW},
        each="effects",
    ),
    JOURNAL_RETRIEVAL_EVENTS.name: FieldColumns(
        "provenance_row",
        {
            "run_id": "run_id",
            "row_id": "row_id",
            "event_id": "event_id",
            "occurred_at": "occurred_at",
            **{
                name: f"retrieval.{name}"
                for name, _ in JOURNAL_RETRIEVAL_EVENTS.columns
                if name not in {"run_id", "row_id", "event_id", "occurred_at"}
            },
        },
        unstored={"row_type": "the table is the row type", "injection": "", "finding": ""},
        where=("row_type", "retrieval_candidate"),
    ),
    JOURNAL_CONTEXT_INJECTIONS.name: FieldColumns(
        "provenance_row",
        {
            "run_id": "run_id",
            "row_id": "row_id",
            "event_id": "event_id",
            "occurred_at": "occurred_at",
            **{
                name: f"injection.{name}"
                for name, _ in JOURNAL_CONTEXT_INJECTIONS.columns
                if name not in {"run_id", "row_id", "event_id", "occurred_at"}
            },
        },
        unstored={"row_type": "the table is the row type", "retrieval": "", "finding": ""},
        where=("row_type", "context_injection"),
    ),
    PROVENANCE_FINDINGS.name: FieldColumns(
        "provenance_row",
        {
            "run_id": "run_id",
            "row_id": "row_id",
            "event_id": "event_id",
            "occurred_at": "occurred_at",
            **{
                name: f"finding.{name}"
                for name in ("kind", "subject", "revision", "change", "evidence")
            },
        },
        unstored={"row_type": "the table is the row type", "retrieval": "", "injection": ""},
        where=("row_type", "finding"),
    ),
    NOTIFICATIONS.name: FieldColumns(
        "notification",
        {
            "row_id": "notification_id",
            **{n: n for n in NOTIFICATIONS.column_names if n != "row_id"},
        },
    ),
    CLAIM_VERDICTS.name: FieldColumns(
        "claim_verdict",
        {
            "row_id": "verdict_id",
            **{n: n for n in CLAIM_VERDICTS.column_names if n not in {"row_id", "verdict_index"}},
        },
        {"verdict_index": "the verdict id's last part (its place in the narrative)"},
        null_as_empty=frozenset({"claim_id"}),  # in the sorting key since migration 5
    ),
    CLAIM_NOTIFICATIONS.name: FieldColumns(
        "claim_notification",
        {
            "row_id": "notification_id",
            **{n: n for n in CLAIM_NOTIFICATIONS.column_names if n != "row_id"},
        },
    ),
    DEAD_LETTERS.name: FieldColumns(
        "dead_letter",
        {
            "row_id": "dead_letter_id",
            **{n: n for n in DEAD_LETTERS.column_names if n not in {"row_id", "recorded_by"}},
        },
        {"recorded_by": "which stage wrote it (pipeline or sink)"},
    ),
    ANSWER_CHECKS.name: FieldColumns(
        "answer_check",
        {"row_id": "check_id", **{n: n for n in ANSWER_CHECKS.column_names if n != "row_id"}},
    ),
}

# An Avro type's column type (the ClickHouse family any stored value of it fits).
_COLUMN_FAMILIES: Mapping[str, frozenset[str]] = {
    "string": frozenset({"String"}),
    "bytes": frozenset({"String"}),
    "enum": frozenset({"String"}),
    "boolean": frozenset({"Bool"}),
    "int": frozenset({"Int32", "Int64", "UInt16", "UInt32", "UInt64"}),
    "long": frozenset({"Int64", "UInt64"}),
    "float": frozenset({"Float32", "Float64"}),
    "double": frozenset({"Float64"}),
    "timestamp-micros": frozenset({TS}),
}
_NEW_COLUMN = {
    "string": "String",
    "bytes": "String",
    "enum": LC,
    "boolean": "Bool",
    "int": "Int32",
    "long": "Int64",
    "float": "Float32",
    "double": "Float64",
    "timestamp-micros": TS,
}


@dataclass(frozen=True)
class _Leaf:
    kind: str  # a key of _COLUMN_FAMILIES, or "record"
    optional: bool
    lists: int  # lists crossed on the way (each an Array level)


def _definitions() -> Mapping[str, Mapping[str, Any]]:
    from outcomes.schemas import current_definitions  # lazy: the schema files, read once

    return current_definitions()


def _named(definitions: Mapping[str, Mapping[str, Any]], name: str) -> Mapping[str, Any]:
    from outcomes.schemas import NAMESPACE  # lazy: as above

    return definitions[name if "." in name else f"{NAMESPACE}.{name}"]


def _record_fields(
    definitions: Mapping[str, Mapping[str, Any]], record: Mapping[str, Any]
) -> dict[str, Any]:
    return {f["name"]: f["type"] for f in record["fields"]}


def _leaf(
    definitions: Mapping[str, Mapping[str, Any]], node: Any, lists: int = 0
) -> tuple[_Leaf, Mapping[str, Any] | None]:
    """What a field's type is, and the record it names (to walk into), if any."""
    optional = False
    if isinstance(node, list):
        branches = [b for b in node if b != "null"]
        optional, node = len(branches) < len(node), branches[0]
    if isinstance(node, dict):
        if node.get("logicalType") == "timestamp-micros":
            return _Leaf("timestamp-micros", optional, lists), None
        if node.get("type") == "array":
            inner, record = _leaf(definitions, node["items"], lists + 1)
            return _Leaf(inner.kind, optional or inner.optional, inner.lists), record
        node = node["type"]
    if node in _COLUMN_FAMILIES:
        return _Leaf(node, optional, lists), None
    named = _named(definitions, node)
    if named["type"] == "enum":
        return _Leaf("enum", optional, lists), None
    return _Leaf("record", optional, lists), named


def _resolve(
    definitions: Mapping[str, Mapping[str, Any]], record: Mapping[str, Any], path: str
) -> _Leaf:
    """The leaf a field path names; a record on the way may be absent (the row exists
    only when it is there), so only the last field's optionality counts."""
    lists = 0
    leaf: _Leaf | None = None
    current: Mapping[str, Any] | None = record
    for part in path.split("."):
        if current is None:
            raise KeyError(path)
        fields = _record_fields(definitions, current)
        if part not in fields:
            raise KeyError(path)
        leaf, current = _leaf(definitions, fields[part], lists)
        lists = leaf.lists
    assert leaf is not None
    return leaf


def _fits(leaf: _Leaf, column_type: str, null_as_empty: bool = False) -> bool:
    kind = column_type
    for _ in range(leaf.lists):
        if not (kind.startswith("Array(") and kind.endswith(")")):
            return False
        kind = kind[len("Array(") : -1]
    nullable = False
    for wrapper in ("LowCardinality(", "Nullable("):
        if kind.startswith(wrapper) and kind.endswith(")"):
            nullable = nullable or wrapper == "Nullable("
            kind = kind[len(wrapper) : -1]
    if kind.startswith("LowCardinality(") and kind.endswith(")"):
        kind = kind[len("LowCardinality(") : -1]
    kind = kind.split(" CODEC(")[0]
    if leaf.optional and not nullable and leaf.lists == 0 and not null_as_empty:
        return False  # a null would not fit (a Nullable column may hold a required field)
    return kind in _COLUMN_FAMILIES.get(leaf.kind, frozenset())


def _row_record(
    definitions: Mapping[str, Mapping[str, Any]], source: FieldColumns
) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """(the output record, the record one row is made from: an entry of `each`, or it)."""
    from outcomes.schemas import OUTPUT_SCHEMAS  # lazy: as above

    record = definitions[OUTPUT_SCHEMAS[source.record]]
    if source.each is None:
        return record, record
    leaf, entry = _leaf(definitions, _record_fields(definitions, record)[source.each])
    if entry is None or leaf.lists != 1:
        raise AssertionError(f"{source.each}: not a list of records")
    return record, entry


def column_drift(
    definitions: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[str]:
    """Where a table's columns and the schemas disagree, one line each (empty: none): a
    column naming no field, a column whose type does not fit its field's, a field neither
    stored nor named as not stored."""
    definitions = _definitions() if definitions is None else definitions
    problems = []
    for table in (*LEGACY_TABLES, ANSWER_CHECKS):
        source = FIELD_COLUMNS[table.name]
        record, row = _row_record(definitions, source)
        for name, kind in table.columns:
            path = source.columns.get(name)
            if path is None:
                if name not in source.computed:
                    problems.append(f"{table.name}.{name}: no field and not computed")
                continue
            parent = path.startswith("^")
            try:
                leaf = _resolve(definitions, record if parent else row, path.lstrip("^"))
            except KeyError:
                problems.append(f"{table.name}.{name}: no field {path} in {source.record}")
                continue
            if not _fits(leaf, kind, name in source.null_as_empty):
                problems.append(f"{table.name}.{name}: {kind} does not fit the field {path}")
        problems += [
            f"{table.name}: field {name} of {source.record} has no column"
            for name, _ in new_columns(table, definitions)
        ]
    return problems


def new_columns(
    table: Table, definitions: Mapping[str, Mapping[str, Any]] | None = None
) -> tuple[tuple[str, str], ...]:
    """The columns a migration adds for the fields of `table`'s rows that have none (a
    field added to the schema): named as the field, typed from it."""
    definitions = _definitions() if definitions is None else definitions
    source = FIELD_COLUMNS[table.name]
    _, row = _row_record(definitions, source)
    stored = {p.split(".")[0] for p in source.columns.values() if not p.startswith("^")}
    added = []
    for name, node in _record_fields(definitions, row).items():
        if name in stored or name in source.unstored:
            continue
        leaf, _ = _leaf(definitions, node)
        if leaf.kind == "record":
            added.append((name, "String"))  # a record: its canonical JSON
            continue
        kind = _NEW_COLUMN[leaf.kind]
        if leaf.optional and leaf.lists == 0:
            kind = LCN if kind == LC else f"Nullable({kind})"
        for _ in range(leaf.lists):
            kind = f"Array({kind})"
        added.append((name, kind))
    return tuple(added)


def _strip_low_cardinality(kind: str) -> str:
    while (start := kind.find("LowCardinality(")) >= 0:
        depth, end = 0, start + len("LowCardinality(")
        while depth >= 0:  # to the matching parenthesis
            depth += {"(": 1, ")": -1}.get(kind[end], 0)
            end += 1
        kind = kind[:start] + kind[start + len("LowCardinality(") : end - 1] + kind[end:]
    return kind.split(" CODEC(")[0]


def json_shape(kind: str, definitions: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """The ClickHouse type that reads what `kind`'s tables need from its canonical JSON
    (`JSONExtract(json, '<this>')`): a named Tuple of the fields FIELD_COLUMNS maps (and
    `where` tests), each typed as its column holds it, a list of records an Array of
    Tuples. Derived from the declaration above, so a sink that makes rows in ClickHouse
    (sinks/json_insert.py) need not spell the records out again."""
    from outcomes.schemas import OUTPUT_SCHEMAS  # lazy: as above

    definitions = _definitions() if definitions is None else definitions
    record = definitions[OUTPUT_SCHEMAS[kind]]
    tree: dict[str, Any] = {}  # field -> its column type, or a subtree (list: `[]` key)

    def insert(parts: list[str], column_type: str, null_as_empty: bool, each: bool) -> None:
        # A table with `each` has a row per entry: that list is no Array in its columns.
        node, current, crossed = tree, record, -1 if each else 0
        for i, part in enumerate(parts):
            leaf, named = _leaf(definitions, _record_fields(definitions, current)[part])
            if i == len(parts) - 1:
                for _ in range(crossed):  # the Arrays of the record lists on the way
                    column_type = column_type[len("Array(") : -1]
                typed = _strip_low_cardinality(column_type)
                if leaf.optional and not typed.startswith("Nullable(") and null_as_empty:
                    typed = f"Nullable({typed})"
                node.setdefault(part, typed)
                return
            assert named is not None, f"{kind}: {'.'.join(parts)}"
            node = node.setdefault(part, {"[]": leaf.lists > 0})
            current, crossed = named, crossed + leaf.lists

    for table in (*LEGACY_TABLES, ANSWER_CHECKS):
        source = FIELD_COLUMNS[table.name]
        if source.record != kind:
            continue
        for name, column_type in table.columns:
            path = source.columns.get(name)
            if path is None:
                continue
            inner = [source.each] if source.each and not path.startswith("^") else []
            parts = [*inner, *path.lstrip("^").split(".")]
            insert(parts, column_type, name in source.null_as_empty, bool(inner))
        if source.where is not None:
            insert([source.where[0]], "String", False, False)

    def render(node: Mapping[str, Any]) -> str:
        parts = []
        for name, value in node.items():
            if name == "[]":
                continue
            if isinstance(value, str):
                parts.append(f"{name} {value}")
            else:
                inner = render(value)
                parts.append(f"{name} {f'Array({inner})' if value['[]'] else inner}")
        return f"Tuple({', '.join(parts)})"

    return render(tree)
