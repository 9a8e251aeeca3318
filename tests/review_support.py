"""`needs_review` verdicts on demand, for tests of the layers that carry them.

Which candidate the rules cannot decide is the claim reader's business
(`outcomes.reducers.claims.checker`); the layers after it (settlement, notifications,
records, sinks, reports) must carry a `needs_review` verdict whatever produced it. So
these tests judge with `judge_with_review`: the reader's verdicts, except that every
claim of a text holding `MARK` (a token no rule of the reader knows) needs review while
the account has an odd number of entries (predicates, checks, effects, actions,
artifacts, contradictions, findings). That is a pure function of (reading, account),
like the real judgement, and it flips with almost every new entry, so claims settle into
`needs_review` and out of it again as a run goes on. (The reader's own needs_review
verdicts do not depend on the account; tests/test_needs_review_verdicts.py uses them too.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

from outcomes.reducers.claims import verdicts
from outcomes.reducers.claims.checker import Account, Judged, Judgement, Reading, judge_reading

MARK = "[r]"
REASON = "marked_for_review"
# Texts whose claims the wrapper sends to review (the grammar finds claims in them).
MARKED_TEXTS = ("All tests pass. [r]", "Done. [r] I saved src/a.py.")


SECTIONS = (
    "predicates",
    "checks",
    "effects",
    "actions",
    "artifacts",
    "contradictions",
    "provenance_findings",
)


def entries(account: Account) -> int:
    return sum(len(account.get(section) or ()) for section in SECTIONS)


def needs_review(reading: Reading, account: Account | None) -> bool:
    return MARK in reading.text and account is not None and entries(account) % 2 == 1


def judge_with_review(reading: Reading, account: Account | None) -> list[Judged]:
    judged = judge_reading(reading, account)
    if not needs_review(reading, account):
        return judged
    review = Judgement("needs_review", None, REASON)
    return [dataclasses.replace(j, judgement=review) if j.span is not None else j for j in judged]


@contextmanager
def reviewing() -> Iterator[None]:
    """Settle narratives with `judge_with_review` (the engine's settlement calls it)."""
    with mock.patch.object(verdicts, "judge_reading", judge_with_review):
        yield
