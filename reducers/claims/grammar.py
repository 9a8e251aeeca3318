"""The claim grammar: which sentences of a narrative assert that the run brought about a
state, and which only look as if they do (docs/claims.md states the rules).

A claim is found from its **head**: the state word ("fixed", "complete", "passed",
"pushed", "committed", …). The words to its left decide how it is used:

- a verb group with a subject: "the issue has been fixed", "I've completed bead ke5",
  "All 743 tests pass", "The agent sent the email";
- a headline or report line with no verb: "Build Complete", "Dependencies installed
  successfully", "Fixed flaky tests", "Pushed to main", "Initial commit complete";
- a coordinated verb that shares its subject: "Committed and pushed all changes";
- a label and its value: "Status: all 8 phases completed", "Commit: 47d0420".

A head in attributive use ("Completed todos are shown", "the generated emails"), in the
infinitive ("to complete the task"), or with a tense, mood or subject that does not
assert a present result is no claim. The scope cues (negation, modality, conditions,
imperatives, questions, quotation, earlier times, failures, generic statements) are
checked on every candidate and `Found.blocked` says which one stopped it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from outcomes.reducers.claims.constructions import (
    Blocker,
    Candidate,
    ClaimKind,
    Span,
    soft_clause_start,
    words_of,
)
from outcomes.reducers.claims.heads import head_candidates, json_status
from outcomes.reducers.claims.lexicon import HARD
from outcomes.reducers.claims.narrative import Sentence, sentences
from outcomes.reducers.claims.objects import place_of
from outcomes.reducers.claims.results import same_place
from outcomes.reducers.claims.scope import Review, blocker, present_words, review_reason
from outcomes.reducers.claims.statuses import (
    sentence_candidates,
    status_candidates,
    test_plan_item,
)


@dataclass(frozen=True, slots=True)
class Found:
    """A claim candidate in the text, where it sits and, if it is no assertion, why not.

    `phrase` names the rule that found it; `none` marks a claim that nothing external
    happened. `clause` and `sentence` are the spans used to find what it is about.
    `review` is why an assertion the grammar cannot decide goes to a person
    (`needs_review`): "hedged" ("It looks like the job completed"), "kind_unclear" (a
    status value whose kind its label does not tell: "Status: Created").
    """

    kind: ClaimKind
    phrase: str
    none: bool
    start: int
    end: int
    clause: Span
    sentence: Span
    blocked: Blocker | None
    review: Review | None = None


def _spans(sentence: Sentence, cand: Candidate) -> tuple[int, int]:
    toks = sentence.tokens
    # (a rule that reaches one word past the head stops at the sentence's last token)
    return toks[cand.lo].start, toks[min(cand.hi, len(toks) - 1)].end


def _clause_span(sentence: Sentence, words: Sequence[str], h: int) -> Span:
    toks = sentence.tokens
    lo = soft_clause_start(words, h)
    hi = h
    while hi + 1 < len(words) and words[hi + 1] not in HARD and words[hi + 1] != ",":
        hi += 1
    return toks[lo].start, toks[hi].end


_SHAPE_RULES = frozenset({"status_value", "label_value"})

# Subjects that only name "what was done" ("The operation was successful"): the thing
# done is the one its section's heading names ("Reply to the client's email:").
_GENERIC_ACTS = frozenset(
    {"operation", "operations", "action", "actions", "request", "requests", "call", "calls"}
)


_KIND_OF_PLACE: dict[str, ClaimKind] = {
    "remote": "effect",
    "record": "persistence",
    "check": "verification",
}


def _by_section(cand: Candidate, section: str) -> Candidate:
    """A candidate whose own words do not tell its place, placed by its section: a
    status label's value ("Status: Created" under "Creation of Jira task …") or an act
    named only as "the operation"."""
    generic = (
        cand.use is not None and cand.use.subject[-1:] and cand.use.subject[-1] in _GENERIC_ACTS
    )
    if cand.rule != "status_value" and not (cand.kind == "completion" and generic):
        return cand
    place = place_of(section.replace("'", " ").split())
    kind = _KIND_OF_PLACE.get(place) if place is not None else None
    if kind is None:
        return cand
    rule = "label_value" if cand.rule == "status_value" else cand.rule
    return Candidate(kind, rule, cand.lo, cand.hi, cand.head, cand.none, cand.use)


def _with_no_findings(words: Sequence[str], cands: list[Candidate]) -> list[Candidate]:
    """ "The build passed with no TypeScript errors", "Tests passed with 0 failures": one
    claim, the pass and how it passed; the count of no findings after "with" joins the
    check's own claim instead of making a second one."""
    joined = [
        c for c in cands if c.rule == "no_failures" and c.lo >= 1 and words[c.lo - 1] == "with"
    ]
    if not joined:
        return cands
    out = list(cands)
    for extra in joined:
        for k, c in enumerate(out):
            if (
                c.kind == "verification"
                and c is not extra
                and c.hi < extra.lo
                and all(words[x] not in HARD and words[x] != "," for x in range(c.hi + 1, extra.lo))
            ):
                out[k] = Candidate(c.kind, c.rule, c.lo, extra.hi, c.head, c.none, c.use)
                break
    return out


def scan_sentence(sentence: Sentence, before: Sequence[str] = ()) -> list[Found]:
    """Every claim candidate of one sentence, with its blocker (None: an assertion);
    `before` holds the words of the sentence just before it in its block."""
    words = words_of(sentence.tokens)
    if not words:
        return []
    cands = json_status(sentence) if sentence.role == "json" else []
    cands += head_candidates(words, sentence.tokens)
    cands += sentence_candidates(words, sentence.tokens)
    cands += status_candidates(words, sentence.tokens, sentence.section)
    if not cands and sentence.checked and sentence.first:
        cands = test_plan_item(words, sentence.section)
    if not cands and before:
        again = same_place(words, before)
        cands = [again] if again is not None else []
    # A label's value read by its shape only when no head rule read it.
    if any(c.rule in _SHAPE_RULES for c in cands):
        cands = [
            c
            for c in cands
            if c.rule not in _SHAPE_RULES
            or not any(o.rule not in _SHAPE_RULES and o.lo <= c.head <= o.hi for o in cands)
        ]
    if not cands:
        return []
    cands = _with_no_findings(words, cands)
    # A head read as "nothing happened" ("I haven't booked it") is that claim only, not
    # also the act, negated.
    none_heads = {c.head for c in cands if c.none}
    if none_heads:
        cands = [c for c in cands if c.none or c.head not in none_heads]
    if sentence.section:
        cands = [_by_section(c, sentence.section) for c in cands]
    out: list[Found] = []
    taken: list[tuple[int, int, str]] = []
    present = present_words(words)
    for cand in sorted(cands, key=lambda c: (c.lo, -(c.hi - c.lo))):
        start, end = _spans(sentence, cand)
        # One verdict per stretch of text and kind: a claim inside a longer one of the
        # same kind ("Verified all CI checks are now passing") is the same claim.
        if any(s <= start and end <= e and k == cand.kind for s, e, k in taken):
            continue
        if any(start < e and s < end and k == cand.kind for s, e, k in taken):
            continue
        taken.append((start, end, cand.kind))
        out.append(
            Found(
                cand.kind,
                cand.rule,
                cand.none,
                start,
                end,
                _clause_span(sentence, words, cand.head),
                (sentence.start, sentence.end),
                blocker(sentence, words, cand, present),
                review_reason(words, cand),
            )
        )
    return out


def scan_sentences(all_sentences: Iterable[Sentence]) -> list[Found]:
    found: list[Found] = []
    before: Sentence | None = None
    for s in all_sentences:
        if s.role == "quote":
            found += scan_sentence(s)
            continue
        # The sentence just before in the same block, for what a subject names again.
        near = before if before is not None and _same_block(before, s) else None
        found += scan_sentence(s, words_of(near.tokens) if near is not None else ())
        before = s
    return sorted(found, key=lambda f: (f.start, f.end))


def _same_block(a: Sentence, b: Sentence) -> bool:
    return a.role == b.role and a.section == b.section and b.start - a.end <= 2


def scan(text: str) -> list[Found]:
    """Every claim candidate in `text`, in text order, each marked with why it is not a
    present assertion (`blocked`) or None when it is one."""
    return scan_sentences(sentences(text))
