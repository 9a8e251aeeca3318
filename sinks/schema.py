"""The ClickHouse schema as versioned, idempotent migrations (docs/clickhouse.md).

Data tables are ReplacingMergeTree whose ORDER BY key is the row's identity, derived
from the record's deterministic id: a redelivered row has the same key and identical
content, so the table can never show two versions of it through FINAL (which every
view uses). The writer additionally drops rows whose key is already stored, so retries
and replays do not even add physical duplicates. See sinks/writer.py.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import orjson

from outcomes.common.settings import Settings
from outcomes.sinks import purge_attempts
from outcomes.sinks.clickhouse import Connection
from outcomes.sinks.exceptions import PurgeDenied, SchemaNotMigrated
from outcomes.sinks.tables import (
    _V1_TABLES as _V1_TABLES,
)
from outcomes.sinks.tables import (
    _V1_VIEWS as _V1_VIEWS,
)
from outcomes.sinks.tables import (
    ACCOUNT_REVISION_ROWS as ACCOUNT_REVISION_ROWS,
)
from outcomes.sinks.tables import (
    ACCOUNT_REVISIONS as ACCOUNT_REVISIONS,
)
from outcomes.sinks.tables import (
    ANSWER_CHECK_COLUMNS as ANSWER_CHECK_COLUMNS,
)
from outcomes.sinks.tables import (
    ANSWER_CHECKS as ANSWER_CHECKS,
)
from outcomes.sinks.tables import (
    CLAIM_FORMULATION_COLUMNS as CLAIM_FORMULATION_COLUMNS,
)
from outcomes.sinks.tables import (
    CLAIM_NOTIFICATIONS as CLAIM_NOTIFICATIONS,
)
from outcomes.sinks.tables import (
    CLAIM_SETTLEMENT_COLUMNS as CLAIM_SETTLEMENT_COLUMNS,
)
from outcomes.sinks.tables import (
    CLAIM_VERDICTS as CLAIM_VERDICTS,
)
from outcomes.sinks.tables import (
    CLAIM_VERDICTS_V1 as CLAIM_VERDICTS_V1,
)
from outcomes.sinks.tables import (
    CONTRADICTIONS as CONTRADICTIONS,
)
from outcomes.sinks.tables import (
    DATA_TABLES as DATA_TABLES,
)
from outcomes.sinks.tables import (
    DEAD_LETTERS as DEAD_LETTERS,
)
from outcomes.sinks.tables import (
    DEDUP_WINDOW as DEDUP_WINDOW,
)
from outcomes.sinks.tables import (
    EFFECT_STATES as EFFECT_STATES,
)
from outcomes.sinks.tables import (
    JOURNAL_CONTEXT_INJECTIONS as JOURNAL_CONTEXT_INJECTIONS,
)
from outcomes.sinks.tables import (
    JOURNAL_RETRIEVAL_EVENTS as JOURNAL_RETRIEVAL_EVENTS,
)
from outcomes.sinks.tables import (
    LC as LC,
)
from outcomes.sinks.tables import (
    LCN as LCN,
)
from outcomes.sinks.tables import (
    LEGACY_BY_NAME as LEGACY_BY_NAME,
)
from outcomes.sinks.tables import (
    LEGACY_TABLES as LEGACY_TABLES,
)
from outcomes.sinks.tables import (
    NOTIFICATIONS as NOTIFICATIONS,
)
from outcomes.sinks.tables import (
    OUTPUT_ROW_TABLES as OUTPUT_ROW_TABLES,
)
from outcomes.sinks.tables import (
    OUTPUT_ROW_TABLES_V13 as OUTPUT_ROW_TABLES_V13,
)
from outcomes.sinks.tables import (
    OUTPUT_ROWS as OUTPUT_ROWS,
)
from outcomes.sinks.tables import (
    OUTPUT_ROWS_V13 as OUTPUT_ROWS_V13,
)
from outcomes.sinks.tables import (
    PREDICATE_RESULTS as PREDICATE_RESULTS,
)
from outcomes.sinks.tables import (
    PROVENANCE_FINDINGS as PROVENANCE_FINDINGS,
)
from outcomes.sinks.tables import (
    RECORD_VIEWS as RECORD_VIEWS,
)
from outcomes.sinks.tables import (
    REQUIREMENT_COLUMNS as REQUIREMENT_COLUMNS,
)
from outcomes.sinks.tables import (
    REVISION_DETAILS as REVISION_DETAILS,
)
from outcomes.sinks.tables import (
    TABLES_BY_NAME as TABLES_BY_NAME,
)
from outcomes.sinks.tables import (
    TS as TS,
)
from outcomes.sinks.tables import (
    VIEWS as VIEWS,
)
from outcomes.sinks.tables import (
    Table as Table,
)

log = logging.getLogger(__name__)


def _bookkeeping_ddl(db: str) -> list[str]:
    return [
        f"""CREATE TABLE IF NOT EXISTS `{db}`.`purge_log` (
    `purge_id` UUID,
    `run_id` String,
    `phase` LowCardinality(String),
    `purged_at` {TS},
    `purged_by` String,
    `clickhouse_user` String,
    `reason` String,
    `row_counts` Map(String, UInt64)
)
ENGINE = MergeTree
ORDER BY (run_id, purged_at)
COMMENT 'Every privacy purge: who, when, why and how many rows per table.'""",
        f"""CREATE TABLE IF NOT EXISTS `{db}`.`purge_credentials` (
    `credential_sha256` String,
    `configured_at` {TS}
)
ENGINE = MergeTree
ORDER BY configured_at
COMMENT 'SHA-256 of the purge credential; the latest row is in force.'""",
    ]


def _current(db: str) -> str:
    # (run_id, revision) of each run's newest revision; duplicates cannot change a max.
    return (
        "(run_id, revision) IN "
        f"(SELECT run_id, max(revision) FROM `{db}`.account_revisions GROUP BY run_id)"
    )


def _views_ddl(db: str) -> list[str]:
    cur = _current(db)
    return [
        f"""CREATE VIEW IF NOT EXISTS `{db}`.current_accounts AS
SELECT * FROM `{db}`.account_revisions FINAL
ORDER BY run_id, revision DESC
LIMIT 1 BY run_id""",
        f"""CREATE VIEW IF NOT EXISTS `{db}`.unresolved_effects AS
SELECT run_id, revision, intent_id, effect_class, state, receipts, created_at
FROM `{db}`.effect_states FINAL
WHERE unresolved AND {cur}""",
        f"""CREATE VIEW IF NOT EXISTS `{db}`.open_contradictions AS
SELECT run_id, revision, subject, kind, evidence_event_ids, evidence_values,
       evidence_occurred_at, created_at
FROM `{db}`.contradictions FINAL
WHERE {cur}""",
        f"""CREATE VIEW IF NOT EXISTS `{db}`.stale_or_missing_checks AS
SELECT run_id, revision, substring(predicate_id, 7) AS label, reason, state, evidence,
       created_at
FROM `{db}`.predicate_results FINAL
WHERE predicate_kind = 'check' AND required AND reason IN ('stale', 'missing') AND {cur}""",
        f"""CREATE VIEW IF NOT EXISTS `{db}`.current_provenance_findings AS
SELECT run_id, kind, subject,
       max(revision) AS last_changed_revision,
       argMax(evidence, revision) AS evidence,
       argMax(occurred_at, revision) AS observed_at
FROM `{db}`.provenance_findings FINAL
GROUP BY run_id, kind, subject
HAVING argMax(change, revision) = 'raised'""",
        f"""CREATE VIEW IF NOT EXISTS `{db}`.supersession_history AS
SELECT run_id, revision, supersedes, status,
       lagInFrame(status) OVER (PARTITION BY run_id ORDER BY revision
           ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS previous_status,
       workflow_status, changes, trigger_event_id, created_at,
       (run_id, revision) IN (SELECT run_id, revision FROM `{db}`.notifications) AS notified
FROM `{db}`.account_revisions FINAL""",
    ]


def _claim_settlement_ddl(db: str) -> list[str]:
    """Migration 5: claim verdicts settle (SPEC 6). The settlement columns join
    claim_verdicts' identity, since a claim now has one row per settlement."""
    added = ",\n    ".join(
        f"ADD COLUMN IF NOT EXISTS `{n}` {t}" for n, t in CLAIM_SETTLEMENT_COLUMNS
    )
    return [
        f"ALTER TABLE `{db}`.`claim_verdicts`\n    {added},\n"
        f"    MODIFY ORDER BY ({', '.join(CLAIM_VERDICTS.order_by)})",
        f"ALTER TABLE `{db}`.`claim_verdicts` MODIFY COMMENT '{CLAIM_VERDICTS.comment}'",
        CLAIM_NOTIFICATIONS.ddl(db),
        _current_claim_verdicts_view(db, "CREATE VIEW IF NOT EXISTS", extra=""),
    ]


def _current_claim_verdicts_view(db: str, create: str, extra: str) -> str:
    """The latest settlement of every claim, unless it withdrew an omission: what each
    narrative says against its run's latest revision (`extra`: columns after the first
    release's, each followed by a comma)."""
    return f"""{create} `{db}`.current_claim_verdicts AS
SELECT run_id, narrative_id, claim AS claim_id, settled AS settlement, verdict_id,
       supersedes, event_id, account_revision, claim_kind, verdict, subject, span_start,
       span_end, span_text, reason, {extra}verdict_index
FROM (
    SELECT run_id, narrative_id, row_id AS verdict_id, supersedes, event_id,
           account_revision, claim_kind, verdict, subject, span_start, span_end,
           span_text, reason, {extra}verdict_index, withdrawn,
           if(claim_id = '', row_id, claim_id) AS claim,
           greatest(settlement, 1) AS settled
    FROM `{db}`.claim_verdicts FINAL
    ORDER BY run_id, claim, settled DESC
    LIMIT 1 BY run_id, claim
)
WHERE NOT withdrawn"""


def _supported_in_current_verdicts_ddl(db: str) -> list[str]:
    """Migration 10: the current verdicts view shows each verdict's supported
    formulation (migration 9's column)."""
    return [_current_claim_verdicts_view(db, "CREATE OR REPLACE VIEW", extra="supported, ")]


# -- migration 15: the requirement policy of each revision (SPEC 3.2) ------------------------


def _requirement_policy_ddl(db: str) -> list[str]:
    """Migration 15: `account_revision_rows` gains `requirement_policy` and
    `requirement_source`, MATERIALIZED from the account JSON (so rows stored before show
    theirs: null), and the `account_revisions` and `current_accounts` views show them."""
    rev = f"`{db}`.`{ACCOUNT_REVISION_ROWS.name}`"
    added = [
        f"ALTER TABLE {rev} ADD COLUMN IF NOT EXISTS `{name}` {kind} "
        f"MATERIALIZED JSONExtract(account, '{name}', 'Nullable(String)')"
        for name, kind in REQUIREMENT_COLUMNS
    ]
    shown = _cols([*ACCOUNT_REVISIONS.column_names, *(n for n, _ in REQUIREMENT_COLUMNS)])
    return [
        *added,
        f"CREATE OR REPLACE VIEW `{db}`.`{ACCOUNT_REVISIONS.name}` AS SELECT {shown} FROM {rev}",
        f"""CREATE OR REPLACE VIEW `{db}`.current_accounts AS
SELECT {shown} FROM {rev} FINAL
ORDER BY run_id, revision DESC
LIMIT 1 BY run_id""",
    ]


# -- migration 16: answers checked before display (SPEC 8 "Record") -----------------------


def _answer_checks_ddl(db: str) -> list[str]:
    """Migration 16: `output_rows` gains the columns of an answer check (rows of other
    kinds hold their defaults), and the `answer_checks` view shows its rows, as the
    other record views do (`record_view_select`)."""
    out = f"`{db}`.`{OUTPUT_ROWS.name}`"
    return [
        *(
            f"ALTER TABLE {out} ADD COLUMN IF NOT EXISTS `{name}` {kind}"
            for name, kind in ANSWER_CHECK_COLUMNS
        ),
        f"CREATE OR REPLACE VIEW `{db}`.`{ANSWER_CHECKS.name}` AS\n"
        + record_view_select(db, ANSWER_CHECKS),
    ]


def _answer_checks_roles_ddl(db: str) -> list[str]:
    """Migration 17: analysts read the `answer_checks` view (the sink and purge roles
    already hold `output_rows`)."""
    return _analyst_grants(db, [ANSWER_CHECKS.name])


# -- migration 18: the input events (the run browser, issue 37) ----------------------------

EVENTS_TABLE = "events"
EVENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "String"),
    ("event_id", "String"),
    ("type", LC),
    ("occurred_at", TS),
    ("source", LC),
    # The event as canonical JSON (docs/records.md), every field as the producer gave it.
    ("event", "String"),
    # Where the worker's run log held it: with `occurred_at`, a run's order of events.
    ("log_partition", "UInt32"),
    ("log_offset", "UInt64"),
    # run.started's fields the browser shows and filters on ('' on other events).
    ("agent", LC),
    ("model", LC),
    ("task", "String"),
    ("recorded_at", f"{TS} DEFAULT now64(6)"),
)


def _events_ddl(db: str) -> list[str]:
    """Migration 18: every valid input event of the run log, one row per event id (the
    events recorder, sinks/events.py, inserts only ids not yet stored; ReplacingMergeTree
    on the id makes a racing second copy invisible through FINAL)."""
    cols = ",\n    ".join(f"`{n}` {t}" for n, t in EVENT_COLUMNS)
    return [
        f"CREATE TABLE IF NOT EXISTS `{db}`.`{EVENTS_TABLE}` (\n    {cols},\n"
        "    INDEX event_id_bf event_id TYPE bloom_filter(0.01) GRANULARITY 1\n)\n"
        "ENGINE = ReplacingMergeTree\n"
        "ORDER BY (run_id, event_id)\n"
        f"SETTINGS non_replicated_deduplication_window = {DEDUP_WINDOW}\n"
        "COMMENT 'input events of the run log, by run and event id (issue 37)'"
    ]


def _events_roles_ddl(db: str) -> list[str]:
    """Migration 19: analysts read the events; the sink role inserts them and reads back
    their keys; purge removes a run's."""
    roles = role_names(db)
    table = f"`{db}`.`{EVENTS_TABLE}`"
    return [
        *_analyst_grants(db, [EVENTS_TABLE]),
        f"GRANT INSERT ON {table} TO `{roles['sink']}`",
        f"GRANT SELECT(run_id, event_id) ON {table} TO `{roles['sink']}`",
        f"GRANT SELECT, ALTER DELETE ON {table} TO `{roles['purge']}`",
    ]


# -- migration 13: the record tables (issue 28) -------------------------------------------


def _cols(names: Iterable[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def record_view_select(db: str, table: Table) -> str:
    """The SELECT of the view that shows an old table's rows since migration 13: its
    columns, in its order, with the row ids and keys it had.

    Like the table it replaces it shows physical rows, not FINAL: `outcomes query` reads
    it with `final = 1` (the setting reaches the table inside the view), `--no-final`
    shows a not-yet-merged duplicate as before. (`FROM view FINAL` does not reach it.)
    """
    if table is ACCOUNT_REVISIONS:
        return f"SELECT {_cols(table.column_names)} FROM `{db}`.`{ACCOUNT_REVISION_ROWS.name}`"
    for nest, shown, names in REVISION_DETAILS:
        if shown is not table:
            continue
        # The item's id was the revision's id, then the key columns after (run, revision).
        keys = [k for k in table.order_by if k not in ("run_id", "revision")]
        exprs = []
        for name in table.column_names:
            if name == "row_id":
                expr = "concat(r.row_id, " + ", ".join(f"':', `{k}`" for k in keys) + ")"
            elif name in names:
                expr = f"`{name}`"
            else:
                expr = f"r.`{name}`"
            exprs.append(f"{expr} AS `{name}`")
        return (
            f"SELECT {', '.join(exprs)}\nFROM `{db}`.`{ACCOUNT_REVISION_ROWS.name}` AS r\n"
            f"ARRAY JOIN {_joined(nest, names, 'r.')}"
        )
    if table in OUTPUT_ROW_TABLES:
        return (
            f"SELECT {_cols(table.column_names)} FROM `{db}`.`{OUTPUT_ROWS.name}`\n"
            f"WHERE record_table = '{table.name}'"
        )
    raise ValueError(f"{table.name} is not shown by a record view")


def _joined(nest: str, names: Iterable[str], qualifier: str = "") -> str:
    """`ARRAY JOIN` expressions of a Nested column's arrays, one per array, each named
    as its element. (Joining the Nested column whole, `ARRAY JOIN r.predicates AS p`,
    materializes every array even where a query reads two: measured 2-3 times slower.)"""
    return ", ".join(f"{qualifier}`{nest}.{n}` AS `{n}`" for n in names)


def _details(detail: tuple[str, Table, tuple[str, ...]]) -> str:
    """The columns a current-revision view reads: the revision's key and time and one
    Nested column's arrays (never `account`, the big JSON, which `*` would read). Its
    PREWHERE skips revisions without such items before FINAL reads the rest: sound on
    these tables, whose copies of a row are identical, so a filter keeps all or none."""
    nest, _, names = detail
    return ", ".join(["run_id", "revision", "created_at", *(f"`{nest}.{n}`" for n in names)])


def _current13(db: str) -> str:
    return (
        "(run_id, revision) IN (SELECT run_id, max(revision) "
        f"FROM `{db}`.`{ACCOUNT_REVISION_ROWS.name}` GROUP BY run_id)"
    )


def _record_tables_ddl(db: str) -> list[str]:
    """Migration 13's statements: the two record tables, and the analysts' views read
    them directly (same names, same columns). The old tables become views of them in
    `_move_into_record_tables`, after their rows are moved."""
    rev, out, cur = (
        f"`{db}`.`{ACCOUNT_REVISION_ROWS.name}`",
        f"`{db}`.`{OUTPUT_ROWS.name}`",
        _current13(db),
    )
    return [
        ACCOUNT_REVISION_ROWS.ddl(db),
        OUTPUT_ROWS_V13.ddl(db),  # as it was then: migration 16 adds the answer checks
        f"""CREATE OR REPLACE VIEW `{db}`.current_accounts AS
SELECT {_cols(ACCOUNT_REVISIONS.column_names)} FROM {rev} FINAL
ORDER BY run_id, revision DESC
LIMIT 1 BY run_id""",
        f"""CREATE OR REPLACE VIEW `{db}`.unresolved_effects AS
SELECT run_id, revision, intent_id, effect_class, state, receipts, created_at
FROM (SELECT {_details(REVISION_DETAILS[2])} FROM {rev} FINAL
      PREWHERE has(`effects.unresolved`, true) WHERE {cur})
ARRAY JOIN {_joined("effects", REVISION_DETAILS[2][2])}
WHERE unresolved""",
        f"""CREATE OR REPLACE VIEW `{db}`.open_contradictions AS
SELECT run_id, revision, subject, kind, evidence_event_ids, evidence_values,
       evidence_occurred_at, created_at
FROM (SELECT {_details(REVISION_DETAILS[1])} FROM {rev} FINAL
      PREWHERE notEmpty(`contradictions.subject`) WHERE {cur})
ARRAY JOIN {_joined("contradictions", REVISION_DETAILS[1][2])}""",
        f"""CREATE OR REPLACE VIEW `{db}`.stale_or_missing_checks AS
SELECT run_id, revision, substring(predicate_id, 7) AS label, reason, state, evidence,
       created_at
FROM (SELECT {_details(REVISION_DETAILS[0])} FROM {rev} FINAL
      PREWHERE has(`predicates.predicate_kind`, 'check') WHERE {cur})
ARRAY JOIN {_joined("predicates", REVISION_DETAILS[0][2])}
WHERE predicate_kind = 'check' AND required AND reason IN ('stale', 'missing')""",
        f"""CREATE OR REPLACE VIEW `{db}`.current_provenance_findings AS
SELECT run_id, kind, subject,
       max(revision) AS last_changed_revision,
       argMax(evidence, revision) AS evidence,
       argMax(occurred_at, revision) AS observed_at
FROM {out} FINAL
WHERE record_table = 'provenance_findings'
GROUP BY run_id, kind, subject
HAVING argMax(change, revision) = 'raised'""",
        f"""CREATE OR REPLACE VIEW `{db}`.supersession_history AS
SELECT run_id, revision, supersedes, status,
       lagInFrame(status) OVER (PARTITION BY run_id ORDER BY revision
           ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS previous_status,
       workflow_status, changes, trigger_event_id, created_at,
       (run_id, revision) IN (SELECT run_id, revision FROM {out}
                              WHERE record_table = 'notifications') AS notified
FROM {rev} FINAL""",
    ]


# Runs per step when migration 13 moves rows (each step is one exactly-once write).
_MOVE_RUNS = 2_000


def _engines(conn: Connection) -> dict[str, str]:
    rows = conn.rows(
        "SELECT name, engine FROM system.tables WHERE database = {db:String}",
        {"db": conn.database},
    )
    return {str(name): str(engine) for name, engine in rows}


def _count(conn: Connection, sql: str) -> int:
    return int(conn.rows(sql)[0][0] or 0)


def _move_into_record_tables(conn: Connection) -> None:
    """Migration 13's second half: every old table's rows move into the record tables,
    then the old table is dropped and a view of its name and columns takes its place.

    Revisions are rebuilt from their stored account JSON (the record body, byte for
    byte) by the sink's own row builder; the other rows are copied column by column.
    Each step reads back which of its rows the target already holds and inserts only
    the others (the writer's read-before-insert, sinks/writer.py), so a migration
    interrupted anywhere is re-run from the start and adds nothing twice. An old table
    is dropped only once the record tables show as many of its rows (FINAL) as it
    holds; otherwise this raises and leaves it in place.
    """
    # lazy: only migration 13 builds rows (rows.py needs no schema, only sinks.tables)
    from outcomes.sinks import rows as row_builder

    engines = _engines(conn)
    legacy = [ACCOUNT_REVISIONS, *(t for _, t, _ in REVISION_DETAILS), *OUTPUT_ROW_TABLES_V13]
    for table in legacy:
        if engines.get(table.name, "View") == "View":
            continue  # moved already (or never made): only the view may be missing
        if table is ACCOUNT_REVISIONS:
            # The account JSON is the record body: rebuild the row as the sink would.
            _move_rows(conn, table, "SELECT account", ACCOUNT_REVISION_ROWS, _revision_of)
        elif table in OUTPUT_ROW_TABLES_V13:
            exprs = [
                f"toUnixTimestamp64Micro(`{n}`)" if t == TS else f"`{n}`" for n, t in table.columns
            ]
            # output_rows as migration 13 makes it: migration 16's columns come after.
            pack = row_builder.output_row_packer(table.name, OUTPUT_ROWS_V13)
            _move_rows(conn, table, f"SELECT {', '.join(exprs)}", OUTPUT_ROWS_V13, pack)
        # (a revision's details are rebuilt with the revision above)
        _check_moved(conn, table)
        conn.command(f"DROP TABLE IF EXISTS {conn.table(table.name)} SYNC")
    for table in legacy:
        view = record_view_select(conn.database, table)
        conn.command(f"CREATE VIEW IF NOT EXISTS {conn.table(table.name)} AS\n{view}")


def _revision_of(account: object) -> tuple[object, ...]:
    from outcomes.sinks import rows as row_builder  # lazy: as in _move_into_record_tables

    return row_builder.revision_row(orjson.loads(str(account)))


def _move_rows(
    conn: Connection,
    table: Table,
    select: str,
    target: Table,
    convert: Callable[..., tuple[object, ...]],
) -> None:
    """Write every row of an old table into `target`, `_MOVE_RUNS` runs at a time (each
    row's selected values are `convert`'s arguments), skipping rows already there."""
    name = conn.table(table.name)
    runs = [str(r[0]) for r in conn.rows(f"SELECT DISTINCT run_id FROM {name} ORDER BY run_id")]
    names = target.column_names
    row_idx = names.index("row_id")
    of_runs = "run_id IN {runs:Array(String)}"
    stored_sql = f"SELECT row_id FROM {conn.table(target.name)} WHERE {of_runs}"
    if "record_table" in names:
        stored_sql += f" AND record_table = '{table.name}'"
    for start in range(0, len(runs), _MOVE_RUNS):
        chunk = {"runs": runs[start : start + _MOVE_RUNS]}
        moved = [
            convert(*row) for row in conn.rows(f"{select} FROM {name} FINAL WHERE {of_runs}", chunk)
        ]
        stored = {str(r[0]) for r in conn.rows(stored_sql, chunk)}
        fresh = [row for row in moved if row[row_idx] not in stored]
        if fresh:
            conn.insert(target.name, fresh, names, column_types=target.column_types)


def _check_moved(conn: Connection, table: Table) -> None:
    """Raise unless the record tables hold as many of `table`'s rows as it does."""
    held = _count(conn, f"SELECT count() FROM {conn.table(table.name)} FINAL")
    rev, out = conn.table(ACCOUNT_REVISION_ROWS.name), conn.table(OUTPUT_ROWS.name)
    if table is ACCOUNT_REVISIONS:
        moved = _count(conn, f"SELECT count() FROM {rev} FINAL")
    elif table in OUTPUT_ROW_TABLES:
        moved = _count(conn, f"SELECT count() FROM {out} FINAL WHERE record_table = '{table.name}'")
    else:
        nest, names = next((n, c) for n, t, c in REVISION_DETAILS if t is table)
        moved = _count(conn, f"SELECT sum(length(`{nest}.{names[0]}`)) FROM {rev} FINAL")
    if moved != held:
        raise SchemaNotMigrated(
            f"migration 13: {table.name} holds {held:,} rows but the record tables "
            f"{moved:,} of them; {table.name} was left in place (nothing dropped)"
        )


def _record_tables_roles_ddl(db: str) -> list[str]:
    """Migration 14: the roles' grants on what migration 13 made (the old names, now
    views, are granted again: a server may have dropped their grants with the tables)."""
    return [
        *_analyst_grants(db, [ACCOUNT_REVISION_ROWS.name, OUTPUT_ROWS.name, *RECORD_VIEWS]),
        *_table_grants(db, [ACCOUNT_REVISION_ROWS, OUTPUT_ROWS]),
    ]


def role_names(db: str) -> dict[str, str]:
    """The three roles a server migration creates, by purpose."""
    return {"analyst": f"{db}_analyst", "sink": f"{db}_sink", "purge": f"{db}_purge"}


def _analyst_grants(db: str, names: Iterable[str]) -> list[str]:
    analyst = role_names(db)["analyst"]
    return [f"GRANT SELECT ON `{db}`.`{name}` TO `{analyst}`" for name in names]


def _table_grants(db: str, tables: Iterable[Table]) -> list[str]:
    roles = role_names(db)
    stmts = []
    for table in tables:
        key_cols = "run_id, row_id" if table.has_run_id else "row_id"
        if "record_table" in table.column_names:  # part of output_rows' identity
            key_cols = f"record_table, {key_cols}"
        stmts.append(f"GRANT INSERT ON `{db}`.`{table.name}` TO `{roles['sink']}`")
        # The writer reads back keys (never data) to drop rows already stored.
        stmts.append(f"GRANT SELECT({key_cols}) ON `{db}`.`{table.name}` TO `{roles['sink']}`")
        stmts.append(f"GRANT SELECT, ALTER DELETE ON `{db}`.`{table.name}` TO `{roles['purge']}`")
    return stmts


def _roles_ddl(db: str) -> list[str]:
    roles = role_names(db)
    stmts = [f"CREATE ROLE IF NOT EXISTS `{r}`" for r in roles.values()]
    names = [t.name for t in _V1_TABLES]
    stmts += _analyst_grants(db, [*names, *_V1_VIEWS, "purge_log", "schema_migrations"])
    stmts += _table_grants(db, _V1_TABLES)
    stmts += [
        f"GRANT SELECT(run_id) ON `{db}`.`purge_log` TO `{roles['sink']}`",
        f"GRANT SELECT ON `{db}`.`schema_migrations` TO `{roles['sink']}`",
        f"GRANT SELECT, INSERT ON `{db}`.`purge_log` TO `{roles['purge']}`",
        f"GRANT SELECT ON `{db}`.`purge_credentials` TO `{roles['purge']}`",
        f"GRANT SELECT ON `{db}`.`schema_migrations` TO `{roles['purge']}`",
    ]
    return stmts


def _claim_settlement_roles_ddl(db: str) -> list[str]:
    """Migration 6: the roles' grants on what migration 5 made."""
    return [
        *_analyst_grants(db, [CLAIM_NOTIFICATIONS.name, "current_claim_verdicts"]),
        *_table_grants(db, [CLAIM_NOTIFICATIONS]),
    ]


# The purge credential at rest (migration 7): scrypt of the credential's SHA-256 (hex)
# with a random salt, the parameters in the row beside the hash, so a dump of the table
# gives nothing short of an scrypt per guess. The analyst path refuses the table
# (sinks/guard.py) and, on a server, only the purge role may select it.
CREDENTIAL_TABLE = "purge_credential_hashes"
SCRYPT_N, SCRYPT_R, SCRYPT_P, SCRYPT_DKLEN = 2**15, 8, 1, 32
_SCRYPT_MAXMEM = 128 * SCRYPT_N * SCRYPT_R * 2


@dataclass(frozen=True)
class CredentialHash:
    """One stored purge credential: scrypt parameters, salt and derived key."""

    n: int
    r: int
    p: int
    dklen: int
    salt: bytes
    digest: bytes

    @classmethod
    def of_sha256(cls, sha256_hex: str, salt: bytes | None = None) -> CredentialHash:
        """Hash the credential's SHA-256 (hex) with the current parameters."""
        salt = salt if salt is not None else os.urandom(16)
        params = (SCRYPT_N, SCRYPT_R, SCRYPT_P, SCRYPT_DKLEN)
        return cls(*params, salt, _scrypt(sha256_hex, salt, *params))

    def matches_sha256(self, sha256_hex: str) -> bool:
        """Whether a credential with this SHA-256 (hex) is the stored one (constant time)."""
        derived = _scrypt(sha256_hex, self.salt, self.n, self.r, self.p, self.dklen)
        return hmac.compare_digest(derived, self.digest)


def _scrypt(sha256_hex: str, salt: bytes, n: int, r: int, p: int, dklen: int) -> bytes:
    return hashlib.scrypt(
        sha256_hex.encode(), salt=salt, n=n, r=r, p=p, dklen=dklen,
        maxmem=max(_SCRYPT_MAXMEM, 128 * n * r * 2),
    )  # fmt: skip


def _credential_hash_ddl(db: str) -> list[str]:
    """Migration 7: the purge credential as a salted scrypt hash (see `then`)."""
    return [
        f"""CREATE TABLE IF NOT EXISTS `{db}`.`{CREDENTIAL_TABLE}` (
    `algorithm` LowCardinality(String),
    `n` UInt32,
    `r` UInt32,
    `p` UInt32,
    `dklen` UInt32,
    `salt` String,
    `hash` String,
    `configured_at` {TS}
)
ENGINE = MergeTree
ORDER BY configured_at
COMMENT 'scrypt of the purge credential SHA-256 (hex); the latest row is in force.'"""
    ]


def _rehash_old_credential(conn: Connection) -> None:
    """Migration 7's second half: the SHA-256 in force in `purge_credentials` (migration
    2) is stored salted and slow, then that table, which held it bare, is dropped."""
    exists = conn.rows(
        "SELECT count() FROM system.tables WHERE database = {db:String} "
        "AND name = 'purge_credentials'",
        {"db": conn.database},
    )
    if not exists[0][0]:
        return
    rows = conn.rows(
        f"SELECT credential_sha256, configured_at FROM {conn.table('purge_credentials')} "
        "ORDER BY configured_at DESC LIMIT 1"
    )
    if rows:
        _store_credential(conn, CredentialHash.of_sha256(str(rows[0][0])), rows[0][1])
    conn.command(f"DROP TABLE IF EXISTS {conn.table('purge_credentials')}")


def analyst_user(db: str) -> str:
    """The login a server migration creates for analysts (role `<db>_analyst`)."""
    return f"{db}_analyst_user"


def _analyst_user_ddl(db: str) -> list[str]:
    """Migration 8: the purge role reads the hashed credential; an analyst login whose
    only rights are the analyst role's SELECTs (no CREATE TEMPORARY TABLE, so no table
    function that reaches files, URLs or other servers; no FILE, URL, REMOTE, S3 or
    dictionary sources; no SHOW USERS). It is created locked (HOST NONE); the operator
    gives it a password and hosts with ALTER USER (docs/clickhouse.md)."""
    roles = role_names(db)
    user = analyst_user(db)
    return [
        f"REVOKE ALL ON `{db}`.`purge_credentials` FROM `{roles['purge']}`",
        f"GRANT SELECT ON `{db}`.`{CREDENTIAL_TABLE}` TO `{roles['purge']}`",
        f"CREATE USER IF NOT EXISTS `{user}` IDENTIFIED WITH no_password HOST NONE",
        f"REVOKE ALL ON *.* FROM `{user}`",
        f"GRANT `{roles['analyst']}` TO `{user}`",
        f"ALTER USER `{user}` DEFAULT ROLE `{roles['analyst']}`",
    ]


@dataclass(frozen=True)
class Migration:
    """One schema version: its statements, and whether it needs a server."""

    version: int
    name: str
    statements: Callable[[str], list[str]]
    server_only: bool = False
    # Runs after the statements, for what SQL cannot do (e.g. hash with scrypt).
    then: Callable[[Connection], None] | None = None

    def checksum(self, db: str) -> str:
        return hashlib.sha256("\n;\n".join(self.statements(db)).encode()).hexdigest()


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "data tables", lambda db: [t.ddl(db) for t in _V1_TABLES]),
    Migration(2, "purge log and credential", _bookkeeping_ddl),
    Migration(3, "analyst views", _views_ddl),
    Migration(4, "roles: analyst, sink, purge", _roles_ddl, server_only=True),
    Migration(5, "claim verdict settlements", _claim_settlement_ddl),
    Migration(6, "roles: claim verdict settlements", _claim_settlement_roles_ddl, server_only=True),
    Migration(
        7, "purge credential: salted scrypt", _credential_hash_ddl, then=_rehash_old_credential
    ),
    Migration(8, "roles: credential hashes, analyst user", _analyst_user_ddl, server_only=True),
    Migration(
        9,
        "claim verdicts: supported formulations",
        lambda db: [
            f"ALTER TABLE `{db}`.`claim_verdicts` ADD COLUMN IF NOT EXISTS `{n}` {t}"
            for n, t in CLAIM_FORMULATION_COLUMNS
        ],
    ),
    Migration(10, "current claim verdicts: supported", _supported_in_current_verdicts_ddl),
    Migration(12, "purge attempts", purge_attempts.ddl, then=purge_attempts.grant),
    Migration(
        13,
        "record tables: revisions with their details, output rows",
        _record_tables_ddl,
        then=_move_into_record_tables,
    ),
    Migration(14, "roles: record tables", _record_tables_roles_ddl, server_only=True),
    Migration(15, "account revisions: requirement policy", _requirement_policy_ddl),
    Migration(16, "answer checks", _answer_checks_ddl),
    Migration(17, "roles: answer checks", _answer_checks_roles_ddl, server_only=True),
    Migration(18, "input events", _events_ddl),
    Migration(19, "roles: input events", _events_roles_ddl, server_only=True),
)
# Applied in version order, whatever order the lines above are in.
MIGRATIONS = tuple(sorted(MIGRATIONS, key=lambda m: m.version))
LATEST_VERSION = MIGRATIONS[-1].version


@dataclass
class MigrationReport:
    """What `migrate` did: versions applied now, skipped (chDB), already present."""

    applied: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    present: list[int] = field(default_factory=list)
    credential_configured: bool = False


def _migrations_table(db: str) -> str:
    return f"""CREATE TABLE IF NOT EXISTS `{db}`.`schema_migrations` (
    `version` UInt32,
    `name` String,
    `checksum` String,
    `applied_at` {TS},
    `note` String
)
ENGINE = MergeTree
ORDER BY version
COMMENT 'Applied schema versions of outcomes.'"""


def applied_versions(conn: Connection) -> set[int]:
    """Schema versions recorded in the migrations table (empty if it does not exist)."""
    exists = conn.rows(
        "SELECT count() FROM system.tables WHERE database = {db:String} "
        "AND name = 'schema_migrations'",
        {"db": conn.database},
    )
    if not exists[0][0]:
        return set()
    rows = conn.rows(f"SELECT DISTINCT version FROM {conn.table('schema_migrations')}")
    return {int(r[0]) for r in rows}


def migrate(conn: Connection, *, credential_sha256: str | None = None) -> MigrationReport:
    """Apply every missing migration, in order; safe to run again (and concurrently).

    `credential_sha256` (default: the setting `purge_credential_sha256`, env
    `OUTCOMES_PURGE_CREDENTIAL_SHA256`) becomes the purge credential in force when it
    differs from the stored one.
    """
    db = conn.database
    report = MigrationReport()
    conn.command(f"CREATE DATABASE IF NOT EXISTS `{db}`")
    conn.command(_migrations_table(db))
    done = applied_versions(conn)
    for migration in MIGRATIONS:
        if migration.version in done:
            report.present.append(migration.version)
            continue
        note = ""
        if migration.server_only and conn.target.embedded:
            note = "skipped: chDB has no access control"
            log.info("migration %d (%s) %s", migration.version, migration.name, note)
            report.skipped.append(migration.version)
        else:
            for stmt in migration.statements(db):
                conn.command(stmt)
            if migration.then is not None:
                migration.then(conn)
            report.applied.append(migration.version)
        conn.insert(
            "schema_migrations",
            [[migration.version, migration.name, migration.checksum(db), _now(), note]],
            ["version", "name", "checksum", "applied_at", "note"],
        )
    wanted = credential_sha256 or Settings.load().purge_credential_sha256
    if wanted:
        report.credential_configured = configure_purge_credential(conn, wanted)
    return report


def configure_purge_credential(conn: Connection, sha256_hex: str) -> bool:
    """Put in force the credential whose SHA-256 (hex) is given, stored salted with
    scrypt, unless it is already the one in force."""
    digest = sha256_hex.strip().lower()
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise PurgeDenied("OUTCOMES_PURGE_CREDENTIAL_SHA256 must be 64 hex characters")
    current = current_credential(conn)
    if current is not None and current.matches_sha256(digest):
        return False
    _store_credential(conn, CredentialHash.of_sha256(digest), _now())
    return True


def _store_credential(conn: Connection, cred: CredentialHash, at: datetime) -> None:
    conn.insert(
        CREDENTIAL_TABLE,
        [["scrypt", cred.n, cred.r, cred.p, cred.dklen, cred.salt.hex(), cred.digest.hex(), at]],
        ["algorithm", "n", "r", "p", "dklen", "salt", "hash", "configured_at"],
    )


def current_credential(conn: Connection) -> CredentialHash | None:
    """The purge credential in force (the latest row), or None if none is configured."""
    rows = conn.rows(
        f"SELECT algorithm, n, r, p, dklen, salt, hash FROM {conn.table(CREDENTIAL_TABLE)} "
        "ORDER BY configured_at DESC LIMIT 1"
    )
    if not rows:
        return None
    algorithm, n, r, p, dklen, salt, digest = rows[0]
    if algorithm != "scrypt":
        raise PurgeDenied(f"stored purge credential uses unknown algorithm {algorithm!r}")
    return CredentialHash(
        int(n), int(r), int(p), int(dklen), bytes.fromhex(salt), bytes.fromhex(digest)
    )


def ensure_schema(conn: Connection) -> None:
    """Make sure the tables exist: migrate on chDB; on a server, insist it was done.

    A server's sink user has no DDL rights (migration 4), so there the operator runs
    `outcomes clickhouse migrate` with an admin DSN first.
    """
    needed = {m.version for m in MIGRATIONS if not m.server_only}
    if needed <= applied_versions(conn):
        return
    if conn.target.embedded:
        migrate(conn)
        return
    raise SchemaNotMigrated(
        f"database {conn.database} at {conn.target.display} is not migrated to version "
        f"{LATEST_VERSION}: run `outcomes clickhouse migrate --clickhouse DSN`"
    )


def _now() -> datetime:
    # Wall clock at the edge only: bookkeeping rows, never record content.
    return datetime.now(UTC)
