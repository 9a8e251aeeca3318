"""The data tables' definitions: columns, identity keys, partitions, and the views that
show the old tables' names (sinks/schema.py makes them; docs/clickhouse.md).

A module of its own, importing nothing else of the sink, so that the row builder
(sinks/rows.py) and the schema's migrations can both use the layouts without importing
each other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

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
