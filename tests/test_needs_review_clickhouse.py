"""`needs_review` verdicts in ClickHouse (chDB): the sink stores them as they come
(`claim_verdicts.verdict` is a LowCardinality(String), so no migration is needed),
`current_claim_verdicts` shows a claim's current `needs_review`, and the analysts'
query of claims the account does not bear out (docs/analyst-queries.md) never counts
them among the contradicted."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pytest
from confluent_kafka import Message

from outcomes.common.codec import Codec
from outcomes.reducers.records import OutputRecord
from outcomes.sinks import clickhouse, schema
from outcomes.sinks.consumer import to_output_record
from outcomes.sinks.query import run_query
from outcomes.sinks.writer import ClickHouseWriter
from tests.builders import Replay, RunBuilder
from tests.review_support import REASON, reviewing

pytestmark = pytest.mark.clickhouse
DOC = Path(__file__).resolve().parent.parent / "docs" / "analyst-queries.md"


@pytest.fixture
def chdb_dsn(tmp_path: Path) -> Iterator[str]:
    clickhouse.close_all()
    yield f"chdb://{tmp_path}/chdb"
    clickhouse.close_all()


@dataclass
class Delivered:
    """What the sink reads from Kafka: one record's framed Avro bytes and where it was."""

    raw: bytes
    at: int

    def topic(self) -> str:
        return "outcomes.claim-verdicts.v1"

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self.at

    def value(self) -> bytes:
        return self.raw


def run_records() -> list[OutputRecord]:
    """A run with one marked narrative whose claim settles: needs review (five entries in
    the account), decided (six), needs review again (seven); and a plain narrative whose
    claim the account contradicts."""
    b = RunBuilder("run-q")
    replay = Replay()
    with reviewing():
        replay.apply(
            b.goal(checks=["unit"]),
            b.snapshot(),
            b.receipt("unit", "fail"),
            b.finalize(),
            b.narrative("Done. [r]", narrative_id="marked"),
            b.narrative("All tests pass.", narrative_id="plain"),
            b.tool_started("act-1"),
            b.tool_started("act-2"),
        )
    return replay.outputs


def through_the_codec(records: list[OutputRecord]) -> list[OutputRecord]:
    """Each record as the sink gets it: Avro-encoded, then decoded from its message."""
    codec = Codec()
    out = []
    for at, record in enumerate(records):
        message = cast(Message, Delivered(codec.encode_output(record), at))
        decoded, dead = to_output_record(codec, message)
        assert not dead, decoded.body
        out.append(decoded)
    return out


def analyst_query(name: str) -> str:
    for sql in re.findall(r"```sql\n(.*?)```", DOC.read_text(), re.DOTALL):
        if sql.startswith(f"-- name: {name}\n"):
            return str(sql)
    raise AssertionError(f"no query {name} in {DOC}")


def test_the_verdict_column_takes_any_verdict_without_a_migration() -> None:
    assert dict(schema.CLAIM_VERDICTS.columns)["verdict"] == schema.LC


def test_needs_review_is_stored_shown_current_and_never_counted_as_contradicted(
    chdb_dsn: str,
) -> None:
    records = through_the_codec(run_records())
    marked = [
        r.body
        for r in records
        if r.kind == "claim_verdict" and r.body["claim_id"] == "run-q:marked:0"
    ]
    assert [(v["settlement"], v["verdict"]) for v in marked] == [
        (1, "needs_review"),
        (2, "contradicted"),
        (3, "needs_review"),
    ]
    writer = ClickHouseWriter(chdb_dsn)
    schema.migrate(writer.conn)
    writer.write(records)
    conn = writer.conn
    stored = conn.rows(
        f"SELECT settlement, verdict, reason, supported FROM {conn.table('claim_verdicts')} "
        "FINAL WHERE claim_id = 'run-q:marked:0' ORDER BY settlement"
    )
    assert [(s, v, r) for s, v, r, _ in stored] == [
        (1, "needs_review", REASON),
        (2, "contradicted", "status_failed"),
        (3, "needs_review", REASON),
    ]
    assert [s[3] is None for s in stored] == [True, False, True]
    current = conn.rows(
        f"SELECT claim_id, settlement, verdict, supported FROM "
        f"{conn.table('current_claim_verdicts')} ORDER BY claim_id"
    )
    assert ("run-q:marked:0", 3, "needs_review", None) in current
    assert ("run-q:plain:0", 1, "contradicted") in [c[:3] for c in current]
    # The analysts' query lists what the account contradicts or the text leaves out:
    # the plain narrative's claim, never the one a person should review.
    result = run_query(chdb_dsn, analyst_query("unsupported_claims"))
    listed = [dict(zip(result.columns, row, strict=True)) for row in result.rows]
    assert sorted((x["narrative_id"], x["verdict"], x["span_text"]) for x in listed) == [
        ("marked", "omitted", None),  # the failing check it does not disclose
        ("plain", "contradicted", "All tests pass"),
    ]
    counts = run_query(
        chdb_dsn, "SELECT verdict, count() AS n FROM current_claim_verdicts GROUP BY verdict"
    )
    assert dict(counts.rows) == {"needs_review": 1, "contradicted": 1, "omitted": 1}
