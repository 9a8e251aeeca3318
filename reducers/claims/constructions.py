"""How the words before a claim's head are used: the subject, the verb group, and the
constructions of docs/claims.md ("The grammar"), over a sentence's normalized words
(`reducers/claims/narrative.py`). Shared by the head rules (`reducers/claims/heads.py`)
and the scope rules (`reducers/claims/scope.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from outcomes.reducers.claims.lexicon import (
    ADVERBS,
    AUX_CHAIN,
    BE_HAVE,
    CONTRAST,
    DETERMINERS,
    FINITE,
    HARD,
    NOT_NOUN,
    PAREN_HEADS,
    PAST_OPENERS,
    PRONOUNS,
    RECORD_OR_EFFECT,
    SOFT,
    VERB_FORMS,
    WH,
)
from outcomes.reducers.claims.narrative import Token

ClaimKind = Literal["completion", "verification", "effect", "persistence"]


Blocker = Literal[
    "quoted",
    "unchecked",
    "question",
    "imperative",
    "negated",
    "hypothetical",
    "concessive",
    "partial",
    "progress",
    "past_failure",
    "past",
    "generic",
    "wh_clause",
    "reported",
    "title",
]


Span = tuple[int, int]


def words_of(toks: Sequence[Token]) -> list[str]:
    return [t.norm for t in toks]


def is_marker(word: str) -> bool:
    return word.startswith("`") and word not in ("`k", "`q")


def nounish(word: str) -> bool:
    """Whether a token may end a noun phrase (a subject)."""
    if is_marker(word) or word == "`#":
        return True
    if not word[:1].isalpha():
        return False
    if word in VERB_FORMS or (len(word) > 4 and word.endswith("ed") and "-" not in word):
        return False  # ("PR-modified", "well-tested": compound adjectives stay in)
    return word not in NOT_NOUN or word in {
        "everything",
        "all",
        "both",
        "this",
        "that",
        "it",
        "nothing",
        "none",
    }


def is_pastish(word: str) -> bool:
    if "-" in word:
        return False
    return word.endswith("ed") or word in PAST_OPENERS or word in RECORD_OR_EFFECT


@dataclass(frozen=True, slots=True)
class Use:
    """How a head is used: `how` names the construction; `lo` is the first token of the
    claim's span (its subject, or the head itself); `aux` the verb group's words."""

    how: Literal["aux", "first", "np", "agentless", "coord", "pronoun"]
    lo: int
    aux: tuple[str, ...]
    subject: tuple[str, ...]


def clause_start(words: Sequence[str], i: int) -> int:
    """The first token of the clause holding token `i` (hard boundaries only; a closed
    parenthetical to the left belongs to the clause)."""
    j = i
    while j > 0:
        w = words[j - 1]
        if w == ")":
            depth, k = 0, j - 1
            while k >= 0:
                depth += words[k] == ")"
                depth -= words[k] == "("
                if depth == 0:
                    break
                k -= 1
            if k < 0:
                return j
            j = k
            continue
        if w in HARD:
            break
        j -= 1
    return j


def skip_adverbs(words: Sequence[str], j: int, floor: int) -> int:
    while j >= floor and words[j] in ADVERBS:
        j -= 1
    return j


def subject_start(words: Sequence[str], end: int, floor: int) -> int:
    """The first token of the noun phrase that ends at `end` (inclusive)."""
    j = end
    depth = 0
    while j > floor:
        w = words[j - 1]
        if w == ")":
            depth += 1
        elif w == "(":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and not (nounish(w) or w in DETERMINERS or w in {"of", "+", "&", "'s"}):
            break
        if depth == 0 and w in DETERMINERS:
            j -= 1
            break
        j -= 1
    return j


def use_of(words: Sequence[str], h: int, prior: Use | None, sentence_lo: int = 0) -> Use | None:
    """The construction of the head at `h`, or None when it is not used as a predicate."""
    floor = clause_start(words, h)
    j = skip_adverbs(words, h - 1, floor)
    aux: list[str] = []
    k = j
    while k >= floor and (
        words[k] in AUX_CHAIN
        or words[k] in ADVERBS
        or words[k].endswith("n't")
        or (words[k] == "to" and words[k + 1] in BE_HAVE)
    ):
        if words[k] not in ADVERBS:
            aux.append(words[k])
        k -= 1
    # Contractions carry subject and auxiliary: "I've", "you're", "it's".
    if k >= floor and "'" in words[k] and words[k].split("'", 1)[0] in PRONOUNS:
        who, suffix = words[k].split("'", 1)
        aux.append("'" + suffix)
        return Use("first" if who in ("i", "we") else "aux", k, tuple(aux), (who,))
    if aux:
        if k < floor or not (nounish(words[k]) or words[k] == ")" or words[k] in WH):
            return None
        lo = subject_start(words, k, floor)
        subject = tuple(words[lo : k + 1])
        how: Literal["aux", "first"] = "first" if subject[-1:] in (("i",), ("we",)) else "aux"
        return Use(how, lo, tuple(reversed(aux)), subject)
    if j < floor:
        if floor > 0 and words[floor - 1] == "(":
            # "npm run build (passes; …)": a parenthetical about what precedes it.
            if words[h] not in PAREN_HEADS or words[h + 1 : h + 2] not in ([")"], [";"]):
                return None
            before = floor - 2
            if before >= 0 and nounish(words[before]):
                return Use("np", subject_start(words, before, clause_start(words, before)), (), ())
            return None
        return Use("agentless", h, (), ())
    left = words[j]
    if left in ("and", ",", "or", "&") and prior is not None:
        return Use("coord", h, prior.aux, prior.subject)
    if left in ("and", ",", "&") and j - 1 >= floor and is_pastish(words[j - 1]):
        # "Diagnosed and Fixed", "I identified and fixed": the verb before shares it all.
        shared = use_of(words, j - 1, None)
        if shared is not None:
            return Use("coord", h, shared.aux, shared.subject)
    if left == ",":
        return after_comma(words, h, j, floor)
    if left in ("i", "we", "you", "they", "he", "she", "it"):
        return Use("pronoun", j, (), (left,))
    if left == "(":
        # "npm run build (passes; …)": the head is a parenthetical about what precedes.
        if words[h] not in PAREN_HEADS or words[h + 1 : h + 2] not in ([")"], [";"]):
            return None
        if j - 1 >= 0 and nounish(words[j - 1]):
            return Use("np", subject_start(words, j - 1, clause_start(words, j - 1)), (), ())
        return None
    if nounish(left) or left == ")":
        end = j
        if left == ")":
            depth, end = 0, j
            while end >= floor:
                depth += words[end] == ")"
                depth -= words[end] == "("
                if depth == 0:
                    break
                end -= 1
            end -= 1
            if end < floor or not nounish(words[end]):
                return None
        lo = subject_start(words, end, floor)
        soft = max([floor] + [x + 1 for x in range(floor, lo) if words[x] in SOFT])
        if any(words[x] in FINITE for x in range(soft, lo)):
            return None
        if any(is_pastish(words[x]) and x > soft for x in range(soft, lo)):
            return None
        return Use("np", lo, (), tuple(words[lo : end + 1]))
    return None


def after_comma(words: Sequence[str], h: int, j: int, floor: int) -> Use | None:
    """A head after a comma: an appositive subject ("Two conflicts, both in append-only
    files, resolved") or a reduced clause about the noun before it (", resolved by …")."""
    k = j - 1
    while k >= floor and words[k] != ",":
        if words[k] in FINITE or is_pastish(words[k]):
            break
        k -= 1
    if k >= floor and words[k] == "," and k - 1 >= floor and nounish(words[k - 1]):
        lo = subject_start(words, k - 1, floor)
        return Use("np", lo, (), tuple(words[lo:k]))
    if h + 1 < len(words) and words[h + 1] in ("by", "with"):
        return Use("np", h, (), ())
    return None


@dataclass(frozen=True, slots=True)
class Candidate:
    kind: ClaimKind
    rule: str
    lo: int  # first token of the span
    hi: int  # last token of the span (inclusive)
    head: int
    none: bool = False
    use: Use | None = None


def soft_clause_start(words: Sequence[str], i: int) -> int:
    """The start of the clause holding `i`: after a hard boundary, a comma, or a
    coordinating or contrasting conjunction."""
    j = i
    while j > 0:
        w = words[j - 1]
        if w in HARD or w == ",":
            break
        if w in CONTRAST or w in ("and", "so", "because", "whereas"):
            return j - 1  # the conjunction opens the clause: "even though X was done"
        j -= 1
    return j
