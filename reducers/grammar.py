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

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from reducers.narrative import Sentence, Token_, sentences

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
    "past_failure",
    "past",
    "generic",
    "wh_clause",
]
Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Found:
    """A claim candidate in the text, where it sits and, if it is no assertion, why not.

    `phrase` names the rule that found it; `none` marks a claim that nothing external
    happened. `clause` and `sentence` are the spans used to find what it is about.
    """

    kind: ClaimKind
    phrase: str
    none: bool
    start: int
    end: int
    clause: Span
    sentence: Span
    blocked: Blocker | None


def _class_of(text: str) -> frozenset[str]:
    """A word class from a whitespace-separated list."""
    return frozenset(text.split())


# -- word classes ------------------------------------------------------------------------

BE = frozenset({"is", "are", "was", "were", "been", "be", "am", "'s", "'re", "'m", "got", "gets"})
HAVE = frozenset({"has", "have", "'ve", "had"})
MODAL = frozenset(
    {"will", "would", "should", "could", "can", "might", "may", "must", "shall", "'ll", "'d"}
)
# Words that may stand inside a verb group or between a subject and its head.
ADVERBS = frozenset(
    {
        "now",
        "all",
        "also",
        "just",
        "successfully",
        "fully",
        "already",
        "correctly",
        "properly",
        "finally",
        "independently",
        "completely",
        "officially",
        "both",
        "each",
        "indeed",
        "actually",
        "then",
        "again",
        "truly",
        "really",
        "thus",
        "cleanly",
        "perfectly",
        "entirely",
        "only",
        "safely",
        "directly",
        "here",
        "since",
        "`k",
    }
)
NEGATORS = frozenset(
    {"not", "no", "never", "nothing", "none", "neither", "nor", "without", "unable", "cannot"}
)
PRONOUNS = frozenset({"i", "we", "you", "it", "they", "he", "she", "everything", "this", "that"})
DETERMINERS = frozenset(
    {"the", "a", "an", "this", "that", "these", "those", "my", "our", "your", "its", "their"}
)
PREPOSITIONS = frozenset(
    {
        "of",
        "from",
        "in",
        "on",
        "at",
        "to",
        "for",
        "with",
        "by",
        "into",
        "onto",
        "about",
        "via",
        "over",
        "under",
        "after",
        "before",
        "during",
        "against",
        "as",
        "than",
        "per",
    }
)
CONJUNCTIONS = frozenset({"and", "or", "but", "&", "+", "nor", "so", "yet"})
WH = frozenset({"what", "why", "how", "where", "who", "whom", "whose"})
# Subordinators whose clause is a condition or a time not yet reached (or not this run's).
SUBORDINATORS = frozenset(
    {"if", "unless", "once", "when", "whenever", "until", "whether", "before", "after", "lest"}
)
CONCESSIVE = frozenset({"although", "though"})
CONTRAST = frozenset({"but", "however", "although", "though", "whereas", "while", "yet"})
# Hard clause boundaries (tokens): nothing scopes across them.
HARD = frozenset({";", ":", "(", ")", "[", "]", "|", "-", "\u2192", "\u00b7", "="})
GENERIC = frozenset({"automatically", "always", "usually", "typically", "generally", "normally"})
PAST_CUES = frozenset({"earlier", "previously", "initially", "originally", "formerly", "prior"})
PARTIAL = frozenset({"partially", "partly", "mostly", "almost", "nearly", "half"})
FAILURE = frozenset(
    {
        "fail",
        "fails",
        "failed",
        "failing",
        "failure",
        "failures",
        "errored",
        "crashed",
        "broke",
        "broken",
        "rejected",
        "lost",
    }
)
# Base-form verbs that open an imperative sentence ("Verify the output…", "Run tests").
IMPERATIVES = _class_of(
    """verify validate run mark check create add fix push merge send release trigger test
    review begin let give make update install deploy publish open close ensure execute
    monitor watch wait remove delete write use try go please see read connect skip
    implement build commit submit upload post apply provide include document configure
    consider refer follow rerun re-run retry restart start stop launch click navigate
    type enter select copy paste compile confirm set keep avoid call do"""
)
# Past forms a sentence may open with in a report ("Ran all unit tests", "Fixed …").
PAST_OPENERS = _class_of("ran made wrote built sent set put got did found took gave kept read")

# Nouns that make a "completed successfully"/"ran" subject a verification, an effect or
# a durable record rather than a task.
VERIFY_NOUNS = _class_of(
    """script scripts solution program test tests suite suites check checks build builds
    validation validations verification run runs ci pipeline lint linter linting
    typecheck stylecheck preflight"""
)
PUSH_NOUNS = frozenset({"push", "deploy", "deployment", "release", "upload"})
RECORD_NOUNS = frozenset({"commit", "merge"})
REMOTE_NOUNS = frozenset(
    {"pr", "prs", "pull", "issue", "issues", "ticket", "mr", "draft", "email", "message"}
    | {"post", "comment", "release", "notification", "tag"}
)
BRANCH_WORDS = frozenset(
    {"main", "master", "origin", "upstream", "branch", "changes", "`c", "`p", "develop", "trunk"}
)

# -- heads ---------------------------------------------------------------------------------

# Completion heads that assert a result in any construction.
STRONG = _class_of(
    """complete completed done finished fixed resolved solved fulfilled addressed ready
    installed closed"""
)
# Change verbs: a result only in the perfect passive ("has been generated"), in a
# first-person perfect that opens its clause ("I've created …"), or with
# "successfully" ("The PR successfully upgraded …").
WEAK = _class_of(
    """added generated computed filled revised upgraded created analyzed analysed
    identified integrated licensed built achieved accomplished updated migrated
    refactored"""
)
WEAK_PASSIVE_EXCLUDED = frozenset({"created", "updated", "added"})
VERIFY_HEADS = _class_of(
    """pass passes passed passing green verified validated tested confirmed successful
    succeeded ok satisfied"""
)
EFFECT_HEADS = _class_of(
    """opens pushed uploaded sent emailed posted published deployed released shipped
    notified opened created filed merged submitted destroyed"""
)
PERSIST_HEADS = _class_of(
    """committed saved written wrote stored persisted populated logged recorded merged
    versioned"""
)
# Effect heads that need a remote object (a PR, an issue) next to them to be effects.
NEEDS_REMOTE = frozenset({"opened", "opens", "created", "filed", "submitted", "merged"})
# "-ing" forms that report a result after a comma: ", thus resolving the issue".
RESULT_ING = frozenset({"resolving", "fixing", "addressing", "completing", "closing"})
# Present-tense heads, with the subjects that make them a claim about this run.
PRESENT_DEEDS = frozenset({"fixes", "addresses", "resolves", "completes", "implements"})
DEED_SUBJECTS = frozenset(
    {"this", "it", "which", "pr", "request", "change", "changes", "commit", "fix", "patch"}
)
REPORTERS = frozenset({"confirms", "shows", "verifies", "confirmed", "showed", "verified"})
REPORTER_SUBJECTS = frozenset(
    {"verification", "agent", "i", "we", "test", "tests", "check", "checks", "suite", "run"}
)


def _words(toks: Sequence[Token_]) -> list[str]:
    return [t.norm for t in toks]


def _is_marker(word: str) -> bool:
    return word.startswith("`") and word not in ("`k", "`q")


def _nounish(word: str) -> bool:
    """Whether a token may end a noun phrase (a subject)."""
    if _is_marker(word) or word == "`#":
        return True
    if not word[:1].isalpha():
        return False
    if word in _VERB_FORMS or (len(word) > 4 and word.endswith("ed")):
        return False
    return word not in _NOT_NOUN or word in {
        "everything",
        "all",
        "both",
        "this",
        "that",
        "it",
        "nothing",
        "none",
    }


def _is_pastish(word: str) -> bool:
    return word.endswith("ed") or word in PAST_OPENERS or word in _RECORD_OR_EFFECT


# Heads that are adjectives, never verbs taking an object ("done status").
_ADJECTIVAL = frozenset({"done", "complete", "ready"})
_RUNNABLE = frozenset({"script", "scripts", "program", "solution", "test", "tests", "suite"})
# Edits that, made to a pull request or an issue, are effects on a remote.
_REMOTE_EDITS = frozenset({"added", "updated", "applied", "labeled", "labelled", "edited"})
_SOFT = frozenset({",", "and", "or", "but", "so", "because", "which", "that", "after"})
_BE_HAVE = BE | HAVE
_FINITE = BE | HAVE | MODAL
_AUX_CHAIN = BE | HAVE | MODAL | PARTIAL | GENERIC | {"not", "never", "being"}
_PAREN_HEADS = VERIFY_HEADS | STRONG
_SUBJECT_NOUNS = VERIFY_NOUNS | PUSH_NOUNS | RECORD_NOUNS
_OTHER_KIND_NOUNS = PUSH_NOUNS | RECORD_NOUNS
_OPENERS = PAST_OPENERS | {"successfully"}
_BRANCHY = BRANCH_WORDS | {"feature"}
_CLAUSE_END = HARD | {","} | CONTRAST
_RECORD_OR_EFFECT = EFFECT_HEADS | PERSIST_HEADS
_NOT_NOUN = (
    (BE | HAVE | MODAL | ADVERBS | NEGATORS | DETERMINERS | PREPOSITIONS | CONJUNCTIONS | WH)
    | SUBORDINATORS
    | {"that", "which", "to", "there"}
)
_VERB_FORMS = STRONG | WEAK | EFFECT_HEADS | PERSIST_HEADS | PAST_OPENERS | {"implemented"}


# -- constructions -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Use:
    """How a head is used: `how` names the construction; `lo` is the first token of the
    claim's span (its subject, or the head itself); `aux` the verb group's words."""

    how: Literal["aux", "first", "np", "agentless", "coord", "pronoun"]
    lo: int
    aux: tuple[str, ...]
    subject: tuple[str, ...]


def _clause_start(words: Sequence[str], i: int) -> int:
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


def _skip_adverbs(words: Sequence[str], j: int, floor: int) -> int:
    while j >= floor and words[j] in ADVERBS:
        j -= 1
    return j


def _subject_start(words: Sequence[str], end: int, floor: int) -> int:
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
        elif depth == 0 and not (_nounish(w) or w in DETERMINERS or w in {"of", "+", "&", "'s"}):
            break
        if depth == 0 and w in DETERMINERS:
            j -= 1
            break
        j -= 1
    return j


def _use(words: Sequence[str], h: int, prior: Use | None, sentence_lo: int = 0) -> Use | None:
    """The construction of the head at `h`, or None when it is not used as a predicate."""
    floor = _clause_start(words, h)
    j = _skip_adverbs(words, h - 1, floor)
    aux: list[str] = []
    k = j
    while k >= floor and (
        words[k] in _AUX_CHAIN
        or words[k] in ADVERBS
        or words[k].endswith("n't")
        or (words[k] == "to" and words[k + 1] in _BE_HAVE)
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
        if k < floor or not (_nounish(words[k]) or words[k] == ")" or words[k] in WH):
            return None
        lo = _subject_start(words, k, floor)
        subject = tuple(words[lo : k + 1])
        how: Literal["aux", "first"] = "first" if subject[-1:] in (("i",), ("we",)) else "aux"
        return Use(how, lo, tuple(reversed(aux)), subject)
    if j < floor:
        if floor > 0 and words[floor - 1] == "(":
            # "npm run build (passes; …)": a parenthetical about what precedes it.
            if words[h] not in _PAREN_HEADS or words[h + 1 : h + 2] not in ([")"], [";"]):
                return None
            before = floor - 2
            if before >= 0 and _nounish(words[before]):
                return Use(
                    "np", _subject_start(words, before, _clause_start(words, before)), (), ()
                )
            return None
        return Use("agentless", h, (), ())
    left = words[j]
    if left in ("and", ",", "or", "&") and prior is not None:
        return Use("coord", h, prior.aux, prior.subject)
    if left in ("and", ",", "&") and j - 1 >= floor and _is_pastish(words[j - 1]):
        # "Diagnosed and Fixed", "I identified and fixed": the verb before shares it all.
        shared = _use(words, j - 1, None)
        if shared is not None:
            return Use("coord", h, shared.aux, shared.subject)
    if left == ",":
        return _after_comma(words, h, j, floor)
    if left in ("i", "we", "you", "they", "he", "she", "it"):
        return Use("pronoun", j, (), (left,))
    if left == "(":
        # "npm run build (passes; …)": the head is a parenthetical about what precedes.
        if words[h] not in _PAREN_HEADS or words[h + 1 : h + 2] not in ([")"], [";"]):
            return None
        if j - 1 >= 0 and _nounish(words[j - 1]):
            return Use("np", _subject_start(words, j - 1, _clause_start(words, j - 1)), (), ())
        return None
    if _nounish(left) or left == ")":
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
            if end < floor or not _nounish(words[end]):
                return None
        lo = _subject_start(words, end, floor)
        soft = max([floor] + [x + 1 for x in range(floor, lo) if words[x] in _SOFT])
        if any(words[x] in _FINITE for x in range(soft, lo)):
            return None
        if any(_is_pastish(words[x]) and x > soft for x in range(soft, lo)):
            return None
        return Use("np", lo, (), tuple(words[lo : end + 1]))
    return None


def _after_comma(words: Sequence[str], h: int, j: int, floor: int) -> Use | None:
    """A head after a comma: an appositive subject ("Two conflicts, both in append-only
    files, resolved") or a reduced clause about the noun before it (", resolved by …")."""
    k = j - 1
    while k >= floor and words[k] != ",":
        if words[k] in _FINITE or _is_pastish(words[k]):
            break
        k -= 1
    if k >= floor and words[k] == "," and k - 1 >= floor and _nounish(words[k - 1]):
        lo = _subject_start(words, k - 1, floor)
        return Use("np", lo, (), tuple(words[lo:k]))
    if h + 1 < len(words) and words[h + 1] in ("by", "with"):
        return Use("np", h, (), ())
    return None


# -- the rules -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Candidate:
    kind: ClaimKind
    rule: str
    lo: int  # first token of the span
    hi: int  # last token of the span (inclusive)
    head: int
    none: bool = False
    use: Use | None = None


def _after(words: Sequence[str], h: int, n: int) -> list[str]:
    return list(words[h + 1 : h + 1 + n])


def _has_remote(words: Sequence[str], lo: int, hi: int) -> bool:
    return any(w in REMOTE_NOUNS for w in words[max(0, lo) : hi])


def _object_is_branch(words: Sequence[str], h: int) -> bool:
    nxt = [w for w in _after(words, h, 3) if w not in ("the", "latest", "in", "`k")]
    return bool(nxt) and nxt[0] in BRANCH_WORDS


def _subject_noun(use: Use | None, words: Sequence[str], h: int) -> str:
    """The last noun of the subject; "it" is read as the sentence's first noun of a kind
    that matters ("The script printed 'Done', which shows it completed")."""
    subject = [w for w in (use.subject if use else ()) if w[:1].isalpha()]
    noun = subject[-1] if subject else ""
    if noun == "it":
        for w in words[:h]:
            if w in _SUBJECT_NOUNS:
                return w
    return noun


def _kind_by_subject(noun: str, default: ClaimKind) -> ClaimKind:
    if noun in VERIFY_NOUNS:
        return "verification"
    if noun in PUSH_NOUNS:
        return "effect"
    if noun in RECORD_NOUNS:
        return "persistence"
    return default


# Every word `_head` looks at: the rest cannot start a claim, and are passed over.
_HEAD_WORDS = (
    STRONG
    | WEAK
    | VERIFY_HEADS
    | EFFECT_HEADS
    | PERSIST_HEADS
    | RESULT_ING
    | PRESENT_DEEDS
    | REPORTERS
    | _REMOTE_EDITS
    | _class_of("set out handed marked ready ran executed worked working works clean live")
    | _class_of("serves implemented success broke")
)


def _head_candidates(words: Sequence[str], toks: Sequence[Token_]) -> list[Candidate]:
    out: list[Candidate] = []
    prior: Use | None = None
    n = len(words)
    for h, w in enumerate(words):
        if w in HARD or w in CONTRAST:
            prior = None
        cand = _head(words, toks, h, w, prior) if w in _HEAD_WORDS or w.endswith("-ready") else None
        if cand is not None:
            out.append(cand)
            if cand.use is not None and cand.use.how != "coord":
                prior = cand.use
        elif prior is None and h == 0 and w in _OPENERS:
            prior = Use("agentless", 0, (), ())
        elif prior is None and w in ("i", "we") and h == _clause_start(words, h):
            prior = Use("pronoun", h, (), (w,))
        elif prior is None and h == 0 and w.endswith("ed") and n > 1:
            prior = Use("agentless", 0, (), ())
    return out


def _head(
    words: Sequence[str], toks: Sequence[Token_], h: int, w: str, prior: Use | None
) -> Candidate | None:
    nxt = words[h + 1] if h + 1 < len(words) else ""
    prev = words[h - 1] if h > 0 else ""
    # "all set", "set up", "out of draft", "handed off", "marked ready" are two-word heads.
    if w == "set" and prev == "all":
        return Candidate("completion", "all_set", h - 1, h, h)
    if w == "set" and nxt == "up":
        use = _use(words, h, prior)
        return _built("completion", "set_up", use, h, h + 1) if use else None
    if w == "out" and _after(words, h, 2) == ["of", "draft"]:
        use = _use(words, h, prior)
        return _built("effect", "out_of_draft", use, h, h + 2) if use else None
    if w == "handed" and nxt == "off":
        use = _use(words, h, prior)
        if use and _has_remote(words, use.lo, h):
            return _built("effect", "handed_off", use, h, h + 1)
        return None
    if w == "marked" and "ready" in _after(words, h, 2):
        use = _use(words, h, prior)
        return _built("effect", "marked_ready", use, h, h + 1) if use else None
    if w.endswith("-ready") or w == "ready":
        return _ready(words, h, prior)
    if w in RESULT_ING:
        if prev in (",", "thus", "hence", "thereby"):
            return Candidate("completion", "result_ing", h, min(h + 2, len(words) - 1), h)
        return None
    if w in PRESENT_DEEDS:
        return _present_deed(words, h, prior)
    if w in REPORTERS and (nxt == "that" or w in ("confirms", "shows")):
        return _reporter(words, toks, h, prior)
    if w in VERIFY_HEADS:
        return _verification(words, toks, h, w, prior)
    if w in ("ran", "executed", "worked", "working", "works") or (
        w in ("completed", "complete") and nxt == "successfully"
    ):
        return _ran(words, h, w, prior)
    if w == "clean":
        return _clean(words, h, prior)
    if w in ("live", "serves"):
        return _live(words, h, w, prior)
    if w in _REMOTE_EDITS and _has_remote(words, h + 1, h + 6):
        use = _use(words, h, prior)
        if use is not None and use.how in ("agentless", "first", "pronoun", "coord"):
            return _built("effect", "remote_edit", use, h, h)
    if w in EFFECT_HEADS or w in PERSIST_HEADS:
        cand = _effect_or_record(words, h, w, prior)
        if cand is not None:
            return cand
    if w in STRONG or w in WEAK or w in ("implemented", "success"):
        return _completion(words, h, w, prior)
    if (
        w == "broke"
        and _after(words, h, 2)[-1:]
        and _after(words, h, 2)[-1]
        in (
            "system",
            "production",
            "site",
            "database",
        )
    ):
        use = _use(words, h, prior)
        return _built("effect", "damage", use, h, h + 2) if use else None
    return None


def _built(kind: ClaimKind, rule: str, use: Use | None, h: int, hi: int) -> Candidate:
    lo = min(use.lo, h) if use is not None else h
    return Candidate(kind, rule, lo, hi, h, use=use)


def _label(words: Sequence[str], h: int) -> bool:
    """A head used as a label for what follows ("Verified: `cmd` → OK", "Sent: 2025-…")."""
    return h + 2 < len(words) and words[h + 1] == ":"


def _attributive(words: Sequence[str], h: int) -> bool:
    """A participle that modifies the noun after it ("Completed todos are shown",
    "the generated emails") or heads a subject ("Completed (3 items moved …)")."""
    nxt = words[h + 1] if h + 1 < len(words) else ""
    if nxt == "(" and h + 2 < len(words) and words[h + 2] in ("`n", "`r"):
        return True
    rest = words[h + 1 :]
    stop = next((i for i, x in enumerate(rest) if x in HARD or x == ","), len(rest))
    return any(x in _BE_HAVE for x in rest[:stop]) and _nounish(nxt)


def _completion(words: Sequence[str], h: int, w: str, prior: Use | None) -> Candidate | None:
    use = _use(words, h, prior)
    prev = words[h - 1] if h > 0 else ""
    if w == "success":
        # "This represents a major success", "… = success" (a check's outcome).
        if prev == "=":
            return Candidate("verification", "equals_success", max(0, h - 2), h, h)
        if any(x in ("represents", "was", "is") for x in words[max(0, h - 3) : h]):
            return Candidate("completion", "success", max(0, h - 3), h, h)
        return None
    if use is None:
        return None
    if prev in ("\u2192", "as"):  # "In Progress → Completed", "mark … as complete"
        return None
    if use.how == "agentless" and (
        _attributive(words, h) or (_label(words, h) and w not in STRONG) or w == "installed"
    ):
        return None
    if (
        use.how == "agentless"
        and w in _ADJECTIVAL
        and h + 1 < len(words)
        and _nounish(words[h + 1])
    ):
        return None  # "(done status)": an adjective before its noun, not a report
    noun = _subject_noun(use, words, h)
    kind: ClaimKind = "completion"
    if w in ("complete", "completed") and noun in _OTHER_KIND_NOUNS:
        kind = _kind_by_subject(noun, "completion")
    if w == "completed" and noun in _RUNNABLE:
        kind = "verification"  # "the script completed": it ran
    if w in ("filled", "populated"):
        kind = "persistence" if "`p" in words else "completion"
    if w in STRONG:
        return _built(kind, w, use, h, h)
    near = words[max(0, h - 2) : h + 2]
    successfully = "successfully" in near
    if w == "implemented":
        ok = (
            use.how in ("aux", "first")
            or successfully
            or (use.how in ("np", "pronoun") and any(x in ("agent", "ai") for x in use.subject))
        )
        return _built(kind, w, use, h, h) if ok else None
    if w in ("achieved", "accomplished", "integrated", "licensed", "analyzed", "analysed"):
        ok = use.how == "first" and use.lo == _clause_start(words, h)
    elif use.how == "first":
        ok = use.lo == _clause_start(words, h) or successfully
    elif use.how == "aux":
        fully = "fully" in near
        ok = ("been" in use.aux and w not in WEAK_PASSIVE_EXCLUDED) or successfully or fully
    else:
        ok = successfully and use.how in ("np", "pronoun")
    return _built(kind, w, use, h, h) if ok else None


def _ready(words: Sequence[str], h: int, prior: Use | None) -> Candidate | None:
    nxt = words[h + 1] if h + 1 < len(words) else ""
    if words[h] != "ready":  # "Ship-ready" as a line of its own
        return Candidate("completion", "ready", h, h, h) if len(words) <= 2 else None
    if h > 0 and words[h - 1] in ("marked", "as", "get", "getting"):
        return None
    use = _use(words, h, prior)
    if use is None:
        return None
    if use.how == "agentless" and nxt not in ("for", "to", "", ".", "!"):
        return None
    return _built("completion", "ready", use, h, h)


def _present_deed(words: Sequence[str], h: int, prior: Use | None) -> Candidate | None:
    use = _use(words, h, prior)
    if use is None:
        j = _skip_adverbs(words, h - 1, 0)
        if j >= 0 and words[j] == "which":
            return Candidate("completion", "deed", h, min(h + 2, len(words) - 1), h)
        return None
    noun = _subject_noun(use, words, h)
    if noun in DEED_SUBJECTS and use.how in ("np", "pronoun"):
        return _built("completion", "deed", use, h, min(h + 1, len(words) - 1))
    return None


def _reporter(
    words: Sequence[str], toks: Sequence[Token_], h: int, prior: Use | None
) -> Candidate | None:
    use = _use(words, h, prior)
    rest = words[h + 1 : h + 12]
    if any(x in ("exists", "exist", "present") for x in rest):
        return None  # that something exists is no pass
    if words[h] in ("verified", "confirmed"):
        return _verification(words, toks, h, words[h], prior)
    if (
        use is not None
        and use.how in ("np", "pronoun")
        and _subject_noun(use, words, h) in (REPORTER_SUBJECTS)
    ):
        return _built("verification", "reports", use, h, h)
    return None


def _verification(
    words: Sequence[str], toks: Sequence[Token_], h: int, w: str, prior: Use | None
) -> Candidate | None:
    nxt = words[h + 1] if h + 1 < len(words) else ""
    prev = words[h - 1] if h > 0 else ""
    if w == "ok" and toks[h].norm != "ok":
        return None
    if w in ("verified", "confirmed", "validated") and nxt == "as":
        return None  # "verified as legitimate": a property of the input, not a check
    if prev in ("=", ":") and w in ("pass", "passed", "ok", "green", "success"):
        return Candidate("verification", "label_pass", max(0, h - 2), h, h)
    use = _use(words, h, prior)
    if use is None:
        return None
    if w == "tested" and not (use.how in ("aux", "first", "coord") and use.aux):
        return None
    if w in ("passing", "verified", "validated", "tested", "confirmed") and _attributive(words, h):
        return None
    if use.how == "agentless" and _label(words, h):
        return None
    if w == "passing" and nxt in ("a", "an", "the", "in", "on"):
        return None  # "we are passing a list": the verb "pass", not a result
    if w == "passing" and nxt in ("their", "its", "all"):
        return _built("verification", "passing", use, h, min(h + 2, len(words) - 1))
    if w == "successful":
        noun = _subject_noun(use, words, h)
        kind = _kind_by_subject(noun, "completion")
        return _built(kind, "successful", use, h, h)
    if w == "succeeded":
        noun = _subject_noun(use, words, h)
        return _built(_kind_by_subject(noun, "completion"), "succeeded", use, h, h)
    if w in ("pass", "passes") and use.how == "agentless":
        return None  # "Pass the flag…"
    if w == "green" and use.how == "agentless" and len(words) > 2:
        return None
    return _built("verification", w, use, h, h)


def _ran(words: Sequence[str], h: int, w: str, prior: Use | None) -> Candidate | None:
    nxt = words[h + 1] if h + 1 < len(words) else ""
    after = _after(words, h, 3)
    if w in ("worked", "working", "works"):
        if not any(x in ("correctly", "properly", "perfectly", "fine") for x in after):
            return None
        use = _use(words, h, prior)
        return _built("completion", "works", use, h, h + 1) if use else None
    if nxt != "successfully" and w != "completed":
        return None
    use = _use(words, h, prior)
    if use is None or use.how == "agentless":
        return None
    noun = _subject_noun(use, words, h)
    default: ClaimKind = "verification" if w in ("ran", "executed") else "completion"
    return _built(_kind_by_subject(noun, default), "ran", use, h, h + 1)


def _clean(words: Sequence[str], h: int, prior: Use | None) -> Candidate | None:
    nxt = words[h + 1] if h + 1 < len(words) else ""
    prev = words[h - 1] if h > 0 else ""
    if nxt in ("run", "build", "bill"):
        return Candidate("verification", "clean_run", h, h + 1, h)
    if prev == "back":  # "came back clean"
        lo = _subject_start(words, max(0, h - 3), 0)
        return Candidate("verification", "clean", lo, h, h)
    if nxt in ("working", "tree") or prev in ("tree", "working"):
        return None  # the working tree: a rule of its own
    use = _use(words, h, prior)
    if (use is not None and use.how == "np" and h == len(words) - 1) or (
        use is not None and use.how == "np" and nxt in (".", "!")
    ):
        return _built("verification", "clean", use, h, h)
    return None


def _live(words: Sequence[str], h: int, w: str, prior: Use | None) -> Candidate | None:
    use = _use(words, h, prior)
    if use is None:
        return None
    if w == "serves" and "now" not in words[max(0, h - 2) : h]:
        return None
    if w == "live" and use.how not in ("aux", "coord"):
        return None
    return _built("effect", "live", use, h, h + 1)


def _effect_or_record(words: Sequence[str], h: int, w: str, prior: Use | None) -> Candidate | None:
    use = _use(words, h, prior)
    if use is None:
        return None
    if use.how == "agentless" and (_attributive(words, h) or _label(words, h)):
        return None
    if w == "persisted" and h + 1 < len(words) and words[h + 1] in ("in", "with"):
        return None  # "I persisted in the false claim"
    window_lo = use.lo if use.how != "coord" else h
    remote = _has_remote(words, window_lo, h) or _has_remote(words, h + 1, h + 5)
    if w == "merged":
        if remote:
            return _built("effect", "merged_pr", use, h, h)
        branchy = _object_is_branch(words, h) or any(x in _BRANCHY for x in use.subject)
        return _built("persistence", "merged", use, h, h) if branchy else None
    if w in NEEDS_REMOTE:
        ahead = [x for x in range(h + 1, min(h + 5, len(words))) if words[x] in REMOTE_NOUNS]
        return _built("effect", w, use, h, ahead[0] if ahead else h) if remote else None
    if w in ("wrote", "written") and not any(
        x in ("to", "into", "`p") for x in words[h + 1 : h + 7]
    ):
        return None  # "the reviewer wrote that …": words, not a record
    if w == "logged" and not (h + 1 < len(words) and words[h + 1] in ("the", "a", "`q")):
        return None
    if w == "saved" and any(x in ("`n", "`%") for x in [*use.subject, *words[h + 1 : h + 2]]):
        return None  # "9,600 tokens saved": a quantity, not a record
    if w in ("recorded",) and use.how != "aux":
        return None
    kind: ClaimKind = "effect" if w in EFFECT_HEADS else "persistence"
    return _built(kind, w, use, h, h)


# -- rules over the whole sentence ---------------------------------------------------------

_HEX = re.compile(r"`?[0-9a-f]{7,40}`?$")
_NONE_VERBS = _class_of(
    """push post send publish deploy release merge create open approve flip apply upload
    email notify file submit share"""
)


# The words a sentence-wide rule below starts from.
_TRIGGERS = _class_of(
    """commit hash sha working version merge did didn't no needs commits nothing zero `n
    rc=0 exit=0 code correctly ("""
)


def _sentence_candidates(words: Sequence[str], toks: Sequence[Token_]) -> list[Candidate]:
    out: list[Candidate] = []
    n = len(words)
    for i, w in enumerate(words):
        if w not in _TRIGGERS and not w.startswith("match"):
            continue
        nxt = words[i + 1] if i + 1 < n else ""
        # "Commit: 47d0420", "Git Commit: 0d292f1e", "(commit `c9d84e46`)".
        if w in ("commit", "hash", "sha") and i + 1 < n:
            j = i + 1
            while j < n and words[j] in (":", "hash", "sha", "id", "as"):
                j += 1
            if j < n and (words[j] == "`h" or (words[j] == "`c" and _HEX.match(toks[j].raw))):
                lo = i - 1 if i > 0 and words[i - 1] in ("git", "commit") else i
                if w != "commit" and (i == 0 or words[i - 1] != "commit"):
                    continue
                out.append(Candidate("persistence", "commit_id", lo, j, i))
        # "clean working tree", "working tree clean".
        if w == "working" and nxt == "tree":
            around = words[max(0, i - 1) : i + 4]
            if "clean" in around:
                lo = i - 1 if i > 0 and words[i - 1] == "clean" else i
                hi = i + 2 if "clean" in words[i + 2 : i + 4] else i + 1
                hi = words.index("clean", i) if "clean" in words[i:] and hi > i + 1 else hi
                out.append(Candidate("persistence", "clean_tree", lo, hi, i))
        # "under version control".
        if w == "version" and nxt == "control" and i > 0 and words[i - 1] == "under":
            out.append(Candidate("persistence", "versioned", i - 1, i + 1, i))
        # "merge succeeded", "commit complete".
        if w in ("merge", "commit") and nxt in ("succeeded", "complete", "completed"):
            lo = i - 1 if i > 0 and words[i - 1] not in HARD else i
            out.append(Candidate("persistence", f"{w}_done", lo, i + 1, i + 1))
        # Nothing external happened: "did not push / post / send …".
        if w in ("did", "didn't") and i + 1 < n:
            j = i + 1 if w == "didn't" else i + 2
            if w == "did" and nxt != "not":
                continue
            j = _skip_adverbs_fwd(words, j)
            if j < n and words[j] in _NONE_VERBS:
                out.append(Candidate("effect", "did_not", i, j, j, none=True))
        if w == "no" and nxt in ("modifications", "changes", "commits", "updates"):
            rest = words[i : i + 12]
            if "push" in rest and "to" in rest:
                out.append(
                    Candidate("effect", "nothing_to_push", i, i + rest.index("push"), i, True)
                )
        if w == "needs" and nxt == "push":
            out.append(Candidate("effect", "needs_push", i, i + 1, i + 1, none=True))
        if (
            w == "commits"
            and nxt == "ahead"
            and i > 0
            and toks[i - 1].raw not in ("0",)
            and words[i - 1] == "`n"
        ):
            out.append(Candidate("effect", "unpushed", i - 1, min(i + 3, n - 1), i, none=True))
        # The SPEC's own wordings of "nothing external happened".
        if w == "no" and nxt in ("external", "side-effects") and i + 2 < n:
            hi = i + 2
            if words[hi + 1 : hi + 2] and words[hi + 1] in _BE_HAVE:
                hi = min(n - 1, hi + (3 if words[hi + 2 : hi + 3] == ["been"] else 2))
            out.append(Candidate("effect", "no_external_changes", i, hi, i, none=True))
        if w == "nothing" and any(
            x in ("sent", "published", "posted", "pushed", "deployed", "uploaded")
            for x in words[i + 1 : i + 5]
        ):
            out.append(Candidate("effect", "nothing_sent", i, min(i + 4, n - 1), i, none=True))
        # Counts with no failures: "zero mismatches", "0 errors", "no SSL errors".
        if w in ("zero", "no") or (w == "`n" and toks[i].raw == "0"):
            j = i + 1
            while (
                j < n
                and j <= i + 4
                and words[j]
                not in (
                    "errors",
                    "failures",
                    "mismatches",
                    "violations",
                    "warnings",
                )
            ):
                if not words[j][:1].isalpha() or words[j] in ("new", "the", "any"):
                    j = n
                j += 1
            if j < n and j <= i + 4:
                out.append(Candidate("verification", "no_failures", i, j, j, none=True))
        # "matching the reference exactly".
        if w.startswith("match") and "exactly" in words[i + 1 : i + 6]:
            out.append(Candidate("verification", "matches", i, words.index("exactly", i), i))
        # "rc=0", "exit code 0".
        if w in ("rc=0", "exit=0") or (w == "code" and nxt == "`n" and toks[i + 1].raw == "0"):
            lo = i - 1 if i > 0 and _is_marker(words[i - 1]) else i
            out.append(Candidate("verification", "exit_zero", lo, i, i))
        # "now correctly produces …": behaviour that is now right.
        if w == "correctly" and i > 0 and words[i - 1] == "now" and nxt.endswith("s"):
            out.append(Candidate("completion", "now_correct", i - 1, i + 1, i + 1))
        # "(closed)", "(done)": a status in parentheses after an item.
        statuses = ("closed", "done", "complete", "completed", "fixed", "merged")
        if w == "(" and nxt in statuses and i + 2 < n and words[i + 2] == ")":
            lo = _subject_start(words, i - 1, _clause_start(words, i - 1)) if i else i
            kind: ClaimKind = "persistence" if nxt == "merged" else "completion"
            out.append(Candidate(kind, "status_in_parens", lo, i + 2, i + 1))
    return out


def _skip_adverbs_fwd(words: Sequence[str], j: int) -> int:
    while j < len(words) and words[j] in ADVERBS:
        j += 1
    return j


def _json_status(sentence: Sentence) -> list[Candidate]:
    """`"task_complete": true`: a status field of the agent's own JSON answer."""
    toks = sentence.tokens
    if len(toks) != 3 or toks[0].norm != "`q" or toks[2].norm != "true":
        return []
    key = toks[0].raw.lower()
    if any(k in key for k in ("complete", "done", "finished", "success")):
        return [Candidate("completion", "json_status", 0, 2, 2)]
    if any(k in key for k in ("pass", "tests_ok", "verified")):
        return [Candidate("verification", "json_status", 0, 2, 2)]
    return []


# -- blockers --------------------------------------------------------------------------------


def _blocker(sentence: Sentence, words: Sequence[str], cand: Candidate) -> Blocker | None:
    h, lo = cand.head, cand.lo
    n = len(words)
    if sentence.role == "quote":
        return "quoted"
    if sentence.checked is False:
        return "unchecked"
    if cand.rule == "json_status":
        return None
    in_parens = _in_parens(words, h)
    first = _first_word(words)
    # Questions, unless the claim sits in a factive "now that …" clause.
    if words and words[-1] == "?" and not _now_that(words, h):
        return "question"
    # Imperatives scope over the whole sentence ("Verify X and the task is complete"),
    # but not over a parenthetical, nor over a headline whose subject opens it.
    if (
        first is not None
        and words[first] in IMPERATIVES
        and not in_parens
        and not (cand.use is not None and cand.use.how == "np" and cand.use.lo <= first)
        and h != first
        and not (first + 1 < n and words[first + 1] in ("`n", "`r"))
        and ":" not in words[first + 1 : first + 4]
        and not any(w in (":", ";", "-", "|", "\u2192") for w in words[first:h])
    ):
        return "imperative"
    if first is not None and words[first] == "let":
        return "imperative"
    clause_lo = _soft_clause_start(words, min(lo, h))
    # Negation before the head in its clause (a "nothing happened" claim carries its own).
    neg_hi = lo if cand.none else h
    for x in range(clause_lo, neg_hi):
        if words[x] in NEGATORS or words[x].endswith("n't"):
            if cand.rule == "no_failures":
                continue
            return "negated"
    if cand.rule != "no_failures" and not cand.none:
        after = words[h + 1 : h + 3]
        if after[:1] == ["not"] or after == ["not", "yet"]:
            return "negated"
        if _but_not_later(words, h):
            return "negated"
    # Modal, future and infinitive cues, scoped forward to a contrast or a new clause.
    hypo = _hypothetical(words, min(lo, h), h)
    if hypo is not None:
        return hypo
    # Subordinate clauses: conditions and times ("once it is ready", "after X is done").
    for x in range(clause_lo, h):
        if (
            words[x] in SUBORDINATORS
            and words[x + 1] not in ("which", "that")
            and not (words[x] == "after" and x + 1 < h and words[x + 1] in ("`n", "the") and False)
        ):
            return "hypothetical"
        if words[x] in CONCESSIVE or (
            words[x] == "even" and x + 1 < n and words[x + 1] in ("though", "if")
        ):
            return "concessive"
        if words[x] in WH:
            return "wh_clause"
    if first is not None and words[first] in ("if", "unless", "assuming", "suppose", "provided"):
        return "hypothetical"
    clause_hi = h
    while clause_hi + 1 < n and words[clause_hi + 1] not in _CLAUSE_END:
        clause_hi += 1
    for x in range(clause_lo, min(clause_hi + 1, h + 6)):
        if words[x] in PARTIAL or (
            words[x] in ("for", "in") and x + 1 < n and words[x + 1] in ("most", "some")
        ):
            return "partial"
    if any(words[x] in GENERIC for x in range(max(clause_lo, h - 3), min(n, h + 3))):
        return "generic"
    if "being" in words[max(clause_lo, h - 2) : h]:
        return "generic"  # progressive: "were being written", "being tested"
    # Failures reported before the head in its clause; the head's own word is the claim.
    for x in range(clause_lo, h):
        if (
            words[x] in FAILURE
            and x != h
            and not (x > 0 and words[x - 1] in ("no", "zero", "0", "`n", "without"))
        ) and (cand.kind != "effect" or cand.rule != "damage"):
            return "past_failure"
    for x in range(h + 1, clause_hi + 1):
        if words[x] in ("failed", "crashed", "errored", "broke") or (
            words[x] in ("failure", "failures", "errors") and "with" in words[h + 1 : x]
        ):
            return "past_failure"
    # An earlier time: pluperfect, "previously", "in a previous session".
    if cand.use is not None and "had" in cand.use.aux:
        return "past"
    if h > 0 and words[h - 1] == "had":
        return "past"
    hi_scan = min(n, h + 8)
    for x in range(clause_lo, hi_scan):
        if words[x] in PAST_CUES or (
            words[x] == "previous" and x + 1 < n and words[x + 1].startswith("session")
        ):
            return "past"
        if words[x] == "used" and x + 1 < n and words[x + 1] == "to":
            return "past"
        if words[x] == "first" and x > 0 and words[x - 1] == "at":
            return "past"
        if x > h and words[x] == "before" and x + 1 < n and words[x + 1] in _SETTINGS:
            return "past"  # "the tests passed before my last edit"
    return None


def _first_word(words: Sequence[str]) -> int | None:
    for i, w in enumerate(words):
        if w[:1].isalpha():
            return i
        if w not in ("`k", "`n", ".", "*", "-", "(", ")", ":"):
            return None
    return None


def _in_parens(words: Sequence[str], h: int) -> bool:
    depth = 0
    for x in range(h - 1, -1, -1):
        if words[x] == ")":
            depth += 1
        elif words[x] == "(":
            if depth == 0:
                return True
            depth -= 1
    return False


def _soft_clause_start(words: Sequence[str], i: int) -> int:
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


def _now_that(words: Sequence[str], h: int) -> bool:
    """Whether the head sits in a factive "now that …"/"since …" opening of a question."""
    before = words[:h]
    if any(w in WH for w in before):
        return False
    return any(
        (w == "now" and x + 1 < h and words[x + 1] == "that") or w == "since"
        for x, w in enumerate(before)
    )


def _but_not_later(words: Sequence[str], h: int) -> bool:
    """ "… completed its tool uses but did not invoke …": a contrast that takes it back."""
    for x in range(h + 1, len(words) - 1):
        if words[x] in HARD:
            return False
        if words[x] == "but" and (
            words[x + 1] in ("not", "never")
            or words[x + 1].endswith("n't")
            or (
                words[x + 1] in ("did", "does", "was", "is", "has")
                and x + 2 < len(words)
                and (words[x + 2] == "not" or words[x + 2].endswith("n't"))
            )
            or words[x + 1] == "failed"
        ):
            return True
    return False


_NEW_SUBJECT = frozenset(
    {"i", "we", "you", "they", "it", "the", "this", "that", "everything", "all", "both"}
)


_SETTINGS = DETERMINERS | {"i", "we", "it", "you"}
_WISHES = frozenset(
    {"need", "needs", "needed", "want", "wants", "plan", "plans", "going", "have", "has"}
    | {"hope", "expect", "expects", "supposed", "try", "trying", "asked", "requested"}
)
_CAN_REPORT = frozenset({"confirm", "verify", "see", "say", "report"})


def _hypothetical(words: Sequence[str], lo: int, h: int) -> Blocker | None:
    """A modal, future, purpose or wish before the head, in scope. A modal verb scopes
    forward over coordinated verbs ("can create branches, push, and open PRs") up to a
    contrast, a hard boundary, a relative clause or a coordinated clause with a subject
    of its own; an infinitive cue ("trying to find …") only over its own clause."""
    crossed_comma = False
    for x in range(h - 1, -1, -1):
        w = words[x]
        if (w in HARD and w != "-") or w in CONTRAST or w == "which":
            return None
        if w in (",", "and") and x + 1 < lo and words[x + 1] in _NEW_SUBJECT:
            return None
        if w == ",":
            crossed_comma = True
        if w in MODAL or w.endswith(("'ll", "'d")) or w in ("won't", "can't", "couldn't"):
            if w in ("can", "could") and words[x + 1] in _CAN_REPORT:
                continue
            return "hypothetical"
        if w in ("hopefully", "let's", "let"):
            return "hypothetical"
        if crossed_comma:
            continue
        if w in _WISHES and words[x + 1] == "to":
            return "hypothetical"
        if w == "to" and x + 1 < h and words[x + 1] in ("be", "have", "been"):
            return "hypothetical"  # "changes to be pushed"
        if w == "to" and x == _skip_adverbs(words, h - 1, 0) and not words[h].endswith("ed"):
            return "hypothetical"  # "to complete the task"
    return None


# -- scanning --------------------------------------------------------------------------------


def _spans(sentence: Sentence, cand: Candidate) -> tuple[int, int]:
    toks = sentence.tokens
    return toks[cand.lo].start, toks[cand.hi].end


def _clause_span(sentence: Sentence, words: Sequence[str], h: int) -> Span:
    toks = sentence.tokens
    lo = _soft_clause_start(words, h)
    hi = h
    while hi + 1 < len(words) and words[hi + 1] not in HARD and words[hi + 1] != ",":
        hi += 1
    return toks[lo].start, toks[hi].end


def scan_sentence(sentence: Sentence) -> list[Found]:
    """Every claim candidate of one sentence, with its blocker (None: an assertion)."""
    words = _words(sentence.tokens)
    if not words:
        return []
    cands = _json_status(sentence) if sentence.role == "json" else []
    cands += _head_candidates(words, sentence.tokens)
    cands += _sentence_candidates(words, sentence.tokens)
    out: list[Found] = []
    taken: list[tuple[int, int, str]] = []
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
                _blocker(sentence, words, cand),
            )
        )
    return out


def scan_sentences(all_sentences: Iterable[Sentence]) -> list[Found]:
    found = [f for s in all_sentences for f in scan_sentence(s)]
    return sorted(found, key=lambda f: (f.start, f.end))


def scan(text: str) -> list[Found]:
    """Every claim candidate in `text`, in text order, each marked with why it is not a
    present assertion (`blocked`) or None when it is one."""
    return scan_sentences(sentences(text))
