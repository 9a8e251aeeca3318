"""Output records as canonical JSON -> their tables' rows, made by ClickHouse.

The same mapping as sinks/rows.py, written as ClickHouse expressions over each record's
canonical JSON (docs/records.md; the `outcomes-json` header, common/output_headers.py):
a flush hands ClickHouse the records' JSON bytes, newline-joined, as one table of
`JSONAsString` lines per kind (`Connection.insert_select`: a file on chDB, external
data on a server), and one `INSERT … SELECT` per table makes the rows,
so the sink's Python neither decodes the records nor builds their rows. The `account`
column is the JSON as it came, byte for byte; timestamps go from their RFC 3339 text
straight into `DateTime64(6, 'UTC')` (ClickHouse parses them: no integer step).

ClickHouse reads each kind's records as `JSONEachRow` with the typed fields its rows
need (`structure`: objects as named Tuples, missing or null fields as the type's
default or NULL, other keys skipped), and every column is an expression over those
fields (an array of tuples' field is `array.field`, no lambda: ~5 ms less analysis per
statement). Columns of `output_rows` that a record table does not have hold their
type's default, as `rows.output_row_packer` gives them. Measured on chDB: reading the
JSON into one named Tuple with `JSONExtract` instead cost ~40 ms of query analysis per
statement. tests/test_json_insert.py holds both mappings to the same stored rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from outcomes.reducers.catalog import OUTPUT_KINDS
from outcomes.sinks import tables

_TS: Final = "DateTime64(6, 'UTC')"

# What each kind's canonical JSON holds that its rows need, as the named Tuple
# JSONExtract reads it into: derived from the tables' declared fields and the Avro
# schemas (`tables.json_shape`), never spelled out here.
_SHAPES: Final[Mapping[str, str]] = {kind: tables.json_shape(kind) for kind in OUTPUT_KINDS}


@dataclass(frozen=True)
class _Variant:
    """The rows of one record table a kind's records make: a condition on the record
    (None: every record of the kind) and an expression per column of that table."""

    table: tables.Table
    exprs: tuple[str, ...]
    when: str | None = None
    # The object only this variant's records hold (the others' is null, so its fields
    # read as their defaults there): a column only it fills needs no condition.
    own: str | None = None

    def __post_init__(self) -> None:
        if len(self.exprs) != len(self.table.columns):
            raise AssertionError(f"{self.table.name}: {len(self.exprs)} expressions")


_REVISION = _Variant(
    tables.ACCOUNT_REVISION_ROWS,
    (
        "run_id",
        "revision",
        "supersedes",
        "revision_id",
        "status",
        "workflow_status",
        "observation_cutoff",
        "trigger_event_id",
        "state_revision",
        "goal_revision",
        "candidate_snapshot",
        "schema_version",
        "assembler_version",
        "dimensions.response_completion",
        "dimensions.requested_action_outcome",
        "dimensions.verification",
        "dimensions.review",
        "dimensions.durability",
        "changes",
        "canonical.json",  # the canonical account, as it came
        "predicates.id",
        "arrayMap(p -> splitByChar(':', p.id)[1], predicates)",
        "predicates.required",
        "predicates.state",
        "predicates.reason",
        "predicates.evidence",
        "contradictions.subject",
        "contradictions.kind",
        "contradictions.evidence.event_id",
        "contradictions.evidence.value",
        "contradictions.evidence.occurred_at",
        "effects.intent_id",
        "effects.effect_class",
        "effects.state",
        "effects.receipts",
        "effects.unresolved",
    ),
)

_BY_NAME = tables.OUTPUT_ROW_TABLES_BY_NAME

_NOTIFICATION = _Variant(
    _BY_NAME["notifications"],
    (
        "run_id",
        "revision",
        "notification_id",
        "kind",
        "supersedes",
        "status",
        "previous_status",
        "completion_automation",
        "observation_cutoff",
    ),
)

_CLAIM_NOTIFICATION = _Variant(
    _BY_NAME["claim_notifications"],
    (
        "run_id",
        "revision",
        "trigger_event_id",
        "notification_id",
        "status",
        "observation_cutoff",
        "narrative_ids",
        "verdict_ids",
        "superseded",
        "withdrawn",
    ),
)

_ANSWER_CHECK = _Variant(
    _BY_NAME["answer_checks"],
    (
        "run_id",
        "answer_chain_id",
        "attempt",
        "check_id",
        "event_id",
        "occurred_at",
        "source",
        "decision",
        "account_revision",
        "text_digest",
        "supported",
        "contradicted",
        "unverifiable",
        "needs_review",
        "omitted",
    ),
)

_RETRIEVAL = _Variant(
    _BY_NAME["journal_retrieval_events"],
    (
        "run_id",
        "retrieval.retrieval_id",
        "retrieval.candidate_id",
        "row_id",
        "event_id",
        "occurred_at",
        "retrieval.job_id",
        "retrieval.query_hash",
        "retrieval.algorithm",
        "retrieval.config_hash",
        "retrieval.source_type",
        "retrieval.source_event_id",
        "retrieval.rank",
        "retrieval.score",
        "retrieval.eligible",
        "retrieval.decision",
        "retrieval.withhold_reason",
    ),
    "row_type = 'retrieval_candidate'",
    "retrieval",
)

_INJECTION = _Variant(
    _BY_NAME["journal_context_injections"],
    (
        "run_id",
        "injection.injection_id",
        "event_id",
        "row_id",
        "occurred_at",
        "injection.model_call_id",
        "injection.retrieval_id",
        "injection.candidate_ids",
        "injection.block_hash",
        "injection.block_bytes",
        "injection.location",
        "injection.range_start",
        "injection.range_end",
        "injection.confirmed",
        "injection.removed_before_inference",
    ),
    "row_type = 'context_injection'",
    "injection",
)

_FINDING = _Variant(
    _BY_NAME["provenance_findings"],
    (
        "run_id",
        "finding.kind",
        "finding.subject",
        "finding.revision",
        "row_id",
        "finding.change",
        "finding.evidence",
        "event_id",
        "occurred_at",
    ),
    "row_type = 'finding'",
    "finding",
)

# A claim's position among its narrative's claims (rows._verdict_index): from its
# claim_id's key after "<run_id>:<narrative_id>:", 0 if that is not a number (an
# omission); records from before settlements (no claim_id) count from their id's last part.
_VERDICT_INDEX = (
    "if(isNull(claim_id), toUInt32OrZero(splitByChar(':', verdict_id)[-1]), "
    "toUInt32OrZero(substringUTF8(assumeNotNull(claim_id), "
    "lengthUTF8(run_id) + lengthUTF8(narrative_id) + 3)))"
)

_VERDICT = _Variant(
    tables.CLAIM_VERDICTS,
    (
        "run_id",
        "narrative_id",
        _VERDICT_INDEX,
        "verdict_id",
        "event_id",
        "account_revision",
        "claim_kind",
        "verdict",
        "subject",
        "span_start",
        "span_end",
        "span_text",
        "reason",
        "ifNull(claim_id, '')",
        "settlement",
        "supersedes",
        "withdrawn",
        "supported",
    ),
)

_DEAD_LETTER = _Variant(
    tables.DEAD_LETTERS,
    (
        "dead_letter_id",
        "'pipeline'",
        "reason",
        "message",
        "base64Decode(raw)",
        "origin_topic",
        "origin_partition",
        "origin_offset",
        "origin_file",
        "origin_line",
        "run_id",
        "event_id",
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


def _default(kind: str) -> str:
    """The literal of a column type's default (as `rows._default` gives it in Python)."""
    if kind.startswith("Array("):
        return "[]"
    if "Nullable(" in kind:
        return "NULL"
    if "String" in kind:
        return "''"
    if kind == "Bool":
        return "false"
    if kind.startswith("DateTime64"):
        return "toDateTime64(0, 6, 'UTC')"
    if kind.startswith("Float"):
        return "0."
    return "0"


def _column(name: str, kind: str, variants: Sequence[_Variant], target: tables.Table) -> str:
    """One column's expression over a kind's typed fields: the same for every record
    when its variants agree, else chosen by each variant's condition."""
    if target is tables.OUTPUT_ROWS and name == "record_table":
        cases = [(v.when, f"'{v.table.name}'") for v in variants]
    else:
        cases = [
            (v.when, v.exprs[v.table.column_names.index(name)])
            if name in v.table.column_names
            else (v.when, _default(kind))
            for v in variants
        ]
    if len({expr for _, expr in cases}) == 1:
        return cases[0][1]
    filled = [
        (v, expr) for v, (_, expr) in zip(variants, cases, strict=True) if expr != _default(kind)
    ]
    if len(filled) == 1:
        variant, expr = filled[0]
        if variant.own is not None and expr.startswith(f"{variant.own}.") and expr.count("(") == 0:
            return expr
    args = ", ".join(f"{when}, {expr}" for when, expr in cases[:-1])
    return f"multiIf({args}, {cases[-1][1]})"


def structure(kind: str) -> str:
    """The typed fields a kind's records are read with (`JSONEachRow`): what its rows
    need of its canonical JSON; other keys are skipped, missing ones take defaults."""
    shape = _SHAPES[kind]
    return shape[len("Tuple(") : -1]


def select_sql(kind: str, typed: str, canonical: str) -> str:
    """`SELECT` of the rows (all columns of the kind's data table, in its order) the
    kind's records make: `typed` is a table of the records read with `structure(kind)`
    (`JSONEachRow`), `canonical` one of their lines as they came (a String column
    `json`, `JSONAsString`), which only an account revision reads (its `account`)."""
    target, variants = VARIANTS[kind]
    # Positional aliases (the INSERT takes columns by position): each column needs a
    # name of its own, and one no field of the records has (an alias named after a
    # field would shadow it in the other expressions).
    columns = ",\n  ".join(
        f"{_column(name, kind_type, variants, target)} AS outcomes_c{index}"
        for index, (name, kind_type) in enumerate(target.columns)
    )
    where = ""
    if any(v.when is not None for v in variants):
        # A record no variant takes fails the insert (and the write is retried, then
        # the sink stops): never dropped in silence. (The Avro enum a worker encodes
        # each record with first makes it unreachable.)
        known = " OR ".join(f"({v.when})" for v in variants if v.when is not None)
        where = f" WHERE throwIf(NOT ({known}), 'a {kind} record of no known row type') = 0"
    source = typed
    if NEEDS_CANONICAL[kind]:
        source = (
            f"{typed} AS typed INNER JOIN (SELECT json, JSONExtractString(json, "
            f"'{_ID_FIELDS[kind]}') AS canonical_id FROM {canonical}) AS canonical "
            f"ON typed.{_ID_FIELDS[kind]} = canonical.canonical_id"
        )
    return f"SELECT\n  {columns}\nFROM {source}{where}"


# The id field of the kinds whose rows hold their canonical JSON.
_ID_FIELDS: Final[Mapping[str, str]] = {"account_revision": "revision_id"}
# Whether a kind's rows hold its canonical JSON as it came (then `select_sql` reads it).
NEEDS_CANONICAL: Final[Mapping[str, bool]] = {
    kind: any("canonical.json" in v.exprs for v in variants)
    for kind, (_, variants) in VARIANTS.items()
}
assert {k for k, needs in NEEDS_CANONICAL.items() if needs} == set(_ID_FIELDS)
