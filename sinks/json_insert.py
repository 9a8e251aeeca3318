"""Output records as canonical JSON -> their tables' rows, made by ClickHouse.

The same mapping as sinks/rows.py, written as ClickHouse expressions over each record's
canonical JSON (docs/records.md; the `outcomes-json` header, common/output_headers.py):
a flush hands ClickHouse the records' JSON bytes, newline-joined, as one
`format(JSONAsString, …)` per kind, and one `INSERT … SELECT` per table makes the rows,
so the sink's Python neither decodes the records nor builds their rows. The `account`
column is the JSON as it came, byte for byte; timestamps go from their RFC 3339 text
straight into `DateTime64(6, 'UTC')` (ClickHouse parses them: no integer step).

Each record is read once into a named Tuple (`JSONExtract(json, 'Tuple(…)')`, fields
matched by name, missing or null ones as the type's default or NULL), and every column
is an expression over that tuple, cast to the column's type. Columns of `output_rows`
that a record table does not have hold their type's default, as `rows.output_row_packer`
gives them. tests/test_json_insert.py holds both mappings to the same stored rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from outcomes.sinks import tables

_TS: Final = "DateTime64(6, 'UTC')"

# What each kind's canonical JSON holds that its rows need (docs/records.md), as the
# named Tuple JSONExtract reads it into.
_SHAPES: Final[Mapping[str, str]] = {
    "account_revision": (
        "Tuple(run_id String, revision UInt32, supersedes Nullable(UInt32), "
        "revision_id String, status String, workflow_status String, "
        f"observation_cutoff {_TS}, trigger_event_id String, state_revision String, "
        "goal_revision Nullable(UInt32), candidate_snapshot Nullable(String), "
        "schema_version UInt16, assembler_version String, "
        "dimensions Tuple(response_completion Nullable(String), "
        "requested_action_outcome Nullable(String), verification Nullable(String), "
        "review Nullable(String), durability Nullable(String)), changes Array(String), "
        "predicates Array(Tuple(id String, required Bool, state String, reason String, "
        "evidence Array(String))), "
        "contradictions Array(Tuple(subject String, kind String, "
        f"evidence Array(Tuple(event_id String, value String, occurred_at {_TS})))), "
        "effects Array(Tuple(intent_id String, effect_class Nullable(String), "
        "state String, receipts Array(String), unresolved Bool)))"
    ),
    "notification": (
        "Tuple(run_id String, revision UInt32, notification_id String, kind String, "
        "supersedes Nullable(UInt32), status String, previous_status Nullable(String), "
        f"completion_automation Bool, observation_cutoff {_TS})"
    ),
    "claim_notification": (
        "Tuple(run_id String, revision UInt32, trigger_event_id String, "
        f"notification_id String, status String, observation_cutoff {_TS}, "
        "narrative_ids Array(String), verdict_ids Array(String), superseded UInt32, "
        "withdrawn UInt32)"
    ),
    "answer_check": (
        "Tuple(run_id String, answer_chain_id String, attempt UInt32, check_id String, "
        f"event_id String, occurred_at {_TS}, source String, decision String, "
        "account_revision Nullable(UInt32), text_digest String, supported UInt32, "
        "contradicted UInt32, unverifiable UInt32, needs_review UInt32, omitted UInt32)"
    ),
    "provenance_row": (
        "Tuple(run_id String, row_id String, row_type String, event_id String, "
        f"occurred_at {_TS}, "
        "retrieval Tuple(retrieval_id String, candidate_id String, job_id String, "
        "query_hash String, algorithm String, config_hash String, source_type String, "
        "source_event_id String, rank Int32, score Float64, eligible Bool, "
        "decision String, withhold_reason Nullable(String)), "
        "injection Tuple(injection_id String, model_call_id String, retrieval_id String, "
        "candidate_ids Array(String), block_hash String, block_bytes UInt64, "
        "location String, range_start Int64, range_end Int64, confirmed Bool, "
        "removed_before_inference Bool), "
        "finding Tuple(kind String, subject String, revision UInt32, change String, "
        "evidence Array(String)))"
    ),
    "claim_verdict": (
        "Tuple(run_id String, narrative_id String, verdict_id String, event_id String, "
        "account_revision Nullable(UInt32), claim_kind String, verdict String, "
        "subject Nullable(String), span_start Nullable(Int32), span_end Nullable(Int32), "
        "span_text Nullable(String), reason String, claim_id Nullable(String), "
        "settlement UInt32, supersedes Nullable(String), withdrawn Bool, "
        "supported Nullable(String))"
    ),
    "dead_letter": (
        "Tuple(dead_letter_id String, reason String, message String, raw String, "
        "origin_topic Nullable(String), origin_partition Nullable(Int32), "
        "origin_offset Nullable(Int64), origin_file Nullable(String), "
        "origin_line Nullable(Int64), run_id Nullable(String), event_id Nullable(String))"
    ),
}


@dataclass(frozen=True)
class _Variant:
    """The rows of one record table a kind's records make: a condition on the record
    (None: every record of the kind) and an expression per column of that table."""

    table: tables.Table
    exprs: tuple[str, ...]
    when: str | None = None

    def __post_init__(self) -> None:
        if len(self.exprs) != len(self.table.columns):
            raise AssertionError(f"{self.table.name}: {len(self.exprs)} expressions")


_REVISION = _Variant(
    tables.ACCOUNT_REVISION_ROWS,
    (
        "j.run_id",
        "j.revision",
        "j.supersedes",
        "j.revision_id",
        "j.status",
        "j.workflow_status",
        "j.observation_cutoff",
        "j.trigger_event_id",
        "j.state_revision",
        "j.goal_revision",
        "j.candidate_snapshot",
        "j.schema_version",
        "j.assembler_version",
        "j.dimensions.response_completion",
        "j.dimensions.requested_action_outcome",
        "j.dimensions.verification",
        "j.dimensions.review",
        "j.dimensions.durability",
        "j.changes",
        "json",  # the canonical account, as it came
        "arrayMap(p -> p.id, j.predicates)",
        "arrayMap(p -> splitByChar(':', p.id)[1], j.predicates)",
        "arrayMap(p -> p.required, j.predicates)",
        "arrayMap(p -> p.state, j.predicates)",
        "arrayMap(p -> p.reason, j.predicates)",
        "arrayMap(p -> p.evidence, j.predicates)",
        "arrayMap(c -> c.subject, j.contradictions)",
        "arrayMap(c -> c.kind, j.contradictions)",
        "arrayMap(c -> arrayMap(e -> e.event_id, c.evidence), j.contradictions)",
        "arrayMap(c -> arrayMap(e -> e.value, c.evidence), j.contradictions)",
        "arrayMap(c -> arrayMap(e -> e.occurred_at, c.evidence), j.contradictions)",
        "arrayMap(e -> e.intent_id, j.effects)",
        "arrayMap(e -> e.effect_class, j.effects)",
        "arrayMap(e -> e.state, j.effects)",
        "arrayMap(e -> e.receipts, j.effects)",
        "arrayMap(e -> e.unresolved, j.effects)",
    ),
)

_BY_NAME = tables.OUTPUT_ROW_TABLES_BY_NAME

_NOTIFICATION = _Variant(
    _BY_NAME["notifications"],
    (
        "j.run_id",
        "j.revision",
        "j.notification_id",
        "j.kind",
        "j.supersedes",
        "j.status",
        "j.previous_status",
        "j.completion_automation",
        "j.observation_cutoff",
    ),
)

_CLAIM_NOTIFICATION = _Variant(
    _BY_NAME["claim_notifications"],
    (
        "j.run_id",
        "j.revision",
        "j.trigger_event_id",
        "j.notification_id",
        "j.status",
        "j.observation_cutoff",
        "j.narrative_ids",
        "j.verdict_ids",
        "j.superseded",
        "j.withdrawn",
    ),
)

_ANSWER_CHECK = _Variant(
    _BY_NAME["answer_checks"],
    (
        "j.run_id",
        "j.answer_chain_id",
        "j.attempt",
        "j.check_id",
        "j.event_id",
        "j.occurred_at",
        "j.source",
        "j.decision",
        "j.account_revision",
        "j.text_digest",
        "j.supported",
        "j.contradicted",
        "j.unverifiable",
        "j.needs_review",
        "j.omitted",
    ),
)

_RETRIEVAL = _Variant(
    _BY_NAME["journal_retrieval_events"],
    (
        "j.run_id",
        "j.retrieval.retrieval_id",
        "j.retrieval.candidate_id",
        "j.row_id",
        "j.event_id",
        "j.occurred_at",
        "j.retrieval.job_id",
        "j.retrieval.query_hash",
        "j.retrieval.algorithm",
        "j.retrieval.config_hash",
        "j.retrieval.source_type",
        "j.retrieval.source_event_id",
        "j.retrieval.rank",
        "j.retrieval.score",
        "j.retrieval.eligible",
        "j.retrieval.decision",
        "j.retrieval.withhold_reason",
    ),
    "j.row_type = 'retrieval_candidate'",
)

_INJECTION = _Variant(
    _BY_NAME["journal_context_injections"],
    (
        "j.run_id",
        "j.injection.injection_id",
        "j.event_id",
        "j.row_id",
        "j.occurred_at",
        "j.injection.model_call_id",
        "j.injection.retrieval_id",
        "j.injection.candidate_ids",
        "j.injection.block_hash",
        "j.injection.block_bytes",
        "j.injection.location",
        "j.injection.range_start",
        "j.injection.range_end",
        "j.injection.confirmed",
        "j.injection.removed_before_inference",
    ),
    "j.row_type = 'context_injection'",
)

_FINDING = _Variant(
    _BY_NAME["provenance_findings"],
    (
        "j.run_id",
        "j.finding.kind",
        "j.finding.subject",
        "j.finding.revision",
        "j.row_id",
        "j.finding.change",
        "j.finding.evidence",
        "j.event_id",
        "j.occurred_at",
    ),
    "j.row_type = 'finding'",
)

# A claim's position among its narrative's claims (rows._verdict_index): from its
# claim_id's key after "<run_id>:<narrative_id>:", 0 if that is not a number (an
# omission); records from before settlements (no claim_id) count from their id's last part.
_VERDICT_INDEX = (
    "if(isNull(j.claim_id), toUInt32OrZero(splitByChar(':', j.verdict_id)[-1]), "
    "toUInt32OrZero(substringUTF8(assumeNotNull(j.claim_id), "
    "lengthUTF8(j.run_id) + lengthUTF8(j.narrative_id) + 3)))"
)

_VERDICT = _Variant(
    tables.CLAIM_VERDICTS,
    (
        "j.run_id",
        "j.narrative_id",
        _VERDICT_INDEX,
        "j.verdict_id",
        "j.event_id",
        "j.account_revision",
        "j.claim_kind",
        "j.verdict",
        "j.subject",
        "j.span_start",
        "j.span_end",
        "j.span_text",
        "j.reason",
        "ifNull(j.claim_id, '')",
        "j.settlement",
        "j.supersedes",
        "j.withdrawn",
        "j.supported",
    ),
)

_DEAD_LETTER = _Variant(
    tables.DEAD_LETTERS,
    (
        "j.dead_letter_id",
        "'pipeline'",
        "j.reason",
        "j.message",
        "base64Decode(j.raw)",
        "j.origin_topic",
        "j.origin_partition",
        "j.origin_offset",
        "j.origin_file",
        "j.origin_line",
        "j.run_id",
        "j.event_id",
    ),
)

# Per output kind: the data table its rows go to, and the record tables they make.
VARIANTS: Final[Mapping[str, tuple[tables.Table, tuple[_Variant, ...]]]] = {
    "account_revision": (tables.ACCOUNT_REVISION_ROWS, (_REVISION,)),
    "claim_verdict": (tables.CLAIM_VERDICTS, (_VERDICT,)),
    "notification": (tables.OUTPUT_ROWS, (_NOTIFICATION,)),
    "claim_notification": (tables.OUTPUT_ROWS, (_CLAIM_NOTIFICATION,)),
    "answer_check": (tables.OUTPUT_ROWS, (_ANSWER_CHECK,)),
    "provenance_row": (tables.OUTPUT_ROWS, (_RETRIEVAL, _INJECTION, _FINDING)),
    "dead_letter": (tables.DEAD_LETTERS, (_DEAD_LETTER,)),
}
assert set(VARIANTS) == set(_SHAPES)

# The data table each kind's rows land in.
TABLE_OF_KIND: Final[Mapping[str, str]] = {kind: t.name for kind, (t, _) in VARIANTS.items()}
# Per kind, the `record_table` values its rows may carry in `output_rows` (its read-back).
RECORD_TABLES: Final[Mapping[str, tuple[str, ...]]] = {
    kind: tuple(v.table.name for v in variants)
    for kind, (target, variants) in VARIANTS.items()
    if target is tables.OUTPUT_ROWS
}


def _plain(kind: str) -> str:
    """A column type without LowCardinality (what expressions are cast to)."""
    if kind.startswith("LowCardinality(") and kind.endswith(")"):
        return kind[len("LowCardinality(") : -1]
    if kind.startswith("Array(LowCardinality("):
        return "Array(" + _plain(kind[len("Array(") : -1]) + ")"
    return kind.removesuffix(" CODEC(ZSTD(1))")


def _column(name: str, kind: str, variants: Sequence[_Variant], target: tables.Table) -> str:
    """One column's expression over `j` (and `json`) for a kind's records."""
    typed = _plain(kind)
    cases: list[tuple[str | None, str]] = []
    for variant in variants:
        if target is tables.OUTPUT_ROWS and name == "record_table":
            expr = f"'{variant.table.name}'"
        elif name in variant.table.column_names:
            expr = variant.exprs[variant.table.column_names.index(name)]
        else:
            expr = f"defaultValueOfTypeName('{_quote(typed)}')"
        cases.append((variant.when, f"CAST({expr}, '{_quote(typed)}')"))
    if len(cases) == 1:
        return cases[0][1]
    distinct = {expr for _, expr in cases}
    if len(distinct) == 1:
        return cases[0][1]
    args = ", ".join(f"{when}, {expr}" for when, expr in cases[:-1])
    return f"multiIf({args}, {cases[-1][1]})"


def _quote(typed: str) -> str:
    return typed.replace("'", "\\'")


def select_sql(kind: str, source: str) -> str:
    """`SELECT` of the rows (all columns of the kind's data table, in its order) the
    kind's records in `source` (a table expression with one String column `json`) make."""
    target, variants = VARIANTS[kind]
    columns = ",\n  ".join(
        _column(name, kind_type, variants, target) for name, kind_type in target.columns
    )
    where = ""
    if any(v.when is not None for v in variants):
        where = " WHERE " + " OR ".join(f"({v.when})" for v in variants if v.when is not None)
    shape = _quote(_SHAPES[kind])
    return (
        f"SELECT\n  {columns}\nFROM (SELECT json, JSONExtract(json, '{shape}') AS j "
        f"FROM {source}){where}"
    )
