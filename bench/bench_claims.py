"""Claim checking's cost per narrative. Prints figures; asserts nothing.

Run: `.venv/bin/python -m outcomes.bench.bench_claims [CORPUS_DIR]`. Measures, in this process:
1. reading (Markdown, sentences, grammar) and judging each text of the claims corpus
   (default `../shared/claims-corpus`, read where it lies, never copied) against an
   account that makes every claim checkable: median and p99 per narrative;
2. the same for 20,000-character narratives: one made of this project's own test
   sentences, and three shaped to stress the tokenizer and the grammar (one unbroken
   line of words with no sentence end, unclosed quotes and backticks, deeply nested
   parentheses and list markers, and a run of dotted names), so a regex catastrophe would
   show here.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from outcomes.reducers.claims.checker import judge_reading, read

SENTENCES = (
    "## Migration Complete\n\n"
    "- [x] Unit tests pass\n- [ ] Deployed to staging\n\n"
    "The parser bug has been successfully resolved. 310/310 tests passed. "
    "I did not push or open a PR. Committed as 4f2a9c1. "
    "Completed items are shown in grey. We could retry later, but the upload is done. "
    "The results were written to out/summary.json and the branch has been pushed.\n\n"
)


def _account() -> dict[str, Any]:
    """An account with a failing required check and an open write: every claim kind is
    checkable against it (the fields the checker reads, as docs/records.md has them)."""
    return {
        "revision": 1,
        "status": "unresolved",
        "dimensions": {"verification": "fail", "durability": "indeterminate"},
        "predicates": [
            {"id": "check:unit", "state": "unsatisfied", "reason": "failing", "required": True},
            {"id": "effect:w-1", "state": "unsatisfied", "reason": "pending", "required": True},
        ],
        "checks": [{"label": "unit", "state": "failing"}],
        "effects": [
            {"intent_id": "w-1", "effect_class": "write", "state": "active", "unresolved": True}
        ],
        "artifacts": [{"path": "src/app.py", "change": "modified"}],
        "contradictions": [],
    }


def _cost(text: str, account: dict[str, Any], repeat: int) -> float:
    """Seconds for one read-and-judge of `text`, the best of `repeat`."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        judge_reading(read(text), account)
        best = min(best, time.perf_counter() - started)
    return best


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str]) -> int:
    corpus = (
        Path(argv[0]) if argv else Path(__file__).resolve().parents[2] / "shared" / "claims-corpus"
    )
    account = _account()
    texts = [
        entry["text"]
        for pattern in ("corpus*.json", "batch-*.json")
        for path in sorted(corpus.glob(pattern))
        for entry in json.loads(path.read_text(encoding="utf-8"))
    ]
    if texts:
        costs = [_cost(t, account, 5) * 1e3 for t in texts]
        chars = [len(t) for t in texts]
        print(
            f"corpus: {len(texts)} texts, median {statistics.median(chars):.0f} chars; "
            f"per narrative median {statistics.median(costs):.2f} ms, "
            f"p99 {_pct(costs, 0.99):.2f} ms, max {max(costs):.2f} ms"
        )
    else:
        print(f"corpus: none at {corpus}")
    for name, unit in STRESS:
        big = (unit * (20_000 // len(unit) + 1))[:20_000]
        cost = _cost(big, account, 3) * 1e3
        print(f"20,000-character narrative ({name}): {cost:.1f} ms")
    return 0


STRESS = (
    ("test sentences", SENTENCES),
    ("one line, no sentence end", "the cache has been fixed and pushed and committed "),
    ("unclosed quotes and backticks", 'it "was `done and \'saved the `x "y '),
    ("nested parentheses and markers", "- (([`a` (b: ✅ PASS (c) → done]) — "),
    # a run of dotted names with no path separator (a minified bundle, a log of module
    # names): each name is tried as a path; unbounded, this cost quadratic time
    ("dotted names", "a.b.c.d.e.f.g.h.i.j.k.l."),
    ("@-joined names", "a@b@c@d@e@f@"),
)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
