"""Consumer SDK: a ClaimVerdict's `verdict` is typed with exactly the schema's symbols, so a
symbol added to ClaimVerdictValue.avsc (as `needs_review` was) fails here until the SDK
names it; `needs_review` is told apart by a property of its own."""

from __future__ import annotations

import json
import typing
from pathlib import Path

from outcomes import ClaimVerdict
from outcomes.streams.sdk.consumer import ClaimVerdictValue, Origin

SCHEMA = (
    Path(__file__).resolve().parent.parent / "schemas" / "io.outcomes.v1.ClaimVerdictValue.avsc"
)


def test_the_sdk_names_every_verdict_of_the_schema() -> None:
    symbols = json.loads(SCHEMA.read_text())["symbols"]
    assert list(typing.get_args(ClaimVerdictValue)) == symbols
    assert typing.get_type_hints(ClaimVerdict)["verdict"] == ClaimVerdictValue


def _verdict(value: ClaimVerdictValue) -> ClaimVerdict:
    return ClaimVerdict(
        id=f"v-{value}",
        run_id="run-1",
        origin=Origin("outcomes.claim-verdicts.v1", 0, 0),
        body={},
        claim_id="c-1",
        narrative_id="n-1",
        settlement=1,
        verdict=value,
        claim_kind="completion",
        subject=None,
        withdrawn=False,
        supported=None,
    )


def test_needs_review_is_told_apart_from_a_contradiction() -> None:
    assert _verdict("needs_review").needs_review
    assert not _verdict("contradicted").needs_review
    assert not _verdict("unverifiable").needs_review
