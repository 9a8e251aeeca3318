"""The deterministic claim checker (SPEC section 6): narrative text against an account.

`read` turns a narrative's text into a `Reading`: its Markdown layout and the present
assertions the grammar finds in it (`reducers/claims/grammar.py`), independent of any account.
`judge_reading` judges a reading against one account revision: each claim `supported`,
`contradicted` or `unverifiable`, then the account's obligations the text never
addresses (`omitted`). No model, no clock: the same text and account always give the
same verdicts. docs/claims.md states the rules and their limits.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from outcomes.reducers.claims.checkkinds import CheckKind, ClaimScope, claimed_checks, label_kinds
from outcomes.reducers.claims.grammar import ClaimKind, Found, Span, scan_sentences
from outcomes.reducers.claims.narrative import sentences

Verdict = Literal["supported", "contradicted", "omitted", "unverifiable", "needs_review"]
Account = Mapping[str, Any]

_FLAGS = re.IGNORECASE
_APOS = "['\u2019]"  # straight and curly apostrophe
# How far past a claim its clause is read for effect-class words.
CUE_REACH = 300

# Words that name the effect classes (SPEC 2 examples), first row that matches wins:
# "I sent the draft" is about the external draft.
EFFECT_CLASS_WORDS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (re.compile(r"\bdraft(?:s|ed)?\b(?!\s+(?:PR|pull))", _FLAGS), ("external_draft",)),
    (re.compile(r"\b(?:push\w*|branch\w*|remote|origin)\b", _FLAGS), ("git_push",)),
    (
        re.compile(r"\b(?:PRs?|pull\s+requests?|issues?|tickets?|merged|reviews?)\b", _FLAGS),
        ("pull_request", "issue", "git_push"),
    ),
    (re.compile(r"\b(?:deploy\w*|live|serves|shipped)\b", _FLAGS), ("deployment",)),
    (re.compile(r"\bupload(?:s|ed)?\b", _FLAGS), ("upload",)),
    (
        re.compile(r"\b(?:publish\w*|publication|posts?|posted|articles?|released?)\b", _FLAGS),
        ("publication",),
    ),
    (
        re.compile(r"\b(?:sent|send|e-?mail\w*|messages?|notif\w*)\b", _FLAGS),
        ("notification", "email", "message"),
    ),
    (re.compile(r"\b(?:schedul\w*|cron\w*|hourly|daily|nightly|weekly)\b", _FLAGS), ("schedule",)),
    (re.compile(r"\b(?:daemons?|services?|systemd)\b", _FLAGS), ("service",)),
    (re.compile(r"\b(?:sav\w+|writes?|written|stored|persist\w*)\b", _FLAGS), ("write",)),
)

# Effect states in which something may have happened in the world.
EFFECT_MADE_STATES = frozenset({"completed", "active", "unknown", "observed", "contradicted"})

# -- what "addressing" an obligation means -------------------------------------------------

# A sentence discloses a problem when it carries one of these words.
DISCLOSURE = re.compile(
    r"\bno\b(?!\s+(?:failures?|errors?|problems?|issues?|regressions?)\b)"
    r"|\b(?:not|never|cannot|unable|nothing|none|stale|outdated|out\s+of\s+date|pending"
    r"|awaiting|waiting|unconfirmed|unverified|unknown|unclear|uncertain|unresolved"
    r"|indeterminate|inconclusive|denied|blocked|rejected|missing|skipped|zero|outstanding"
    r"|incomplete|broken|compensated|rolled\s+back|reverted|insufficient|focused|yet)\b"
    r"|(?<!\bno\s)(?<!\bzero\s)(?<!without\s)\bfail\w*"
    r"|\b(?:conflict|contradict|disagree|inconsisten|mismatch)\w*"
    rf"|n{_APOS}t\b",
    _FLAGS,
)
# Generic words that refer to an item of each subject family ("the tests", "the draft").
FAMILY_NOUNS: Mapping[str, re.Pattern[str]] = {
    "check": re.compile(r"\b(?:tests?|checks?|suites?|verification|verified|CI)\b", _FLAGS),
    "effect": re.compile(r"\b(?:effects?|external)\b", _FLAGS),
    "action": re.compile(r"\b(?:actions?|tools?|steps?|commands?)\b", _FLAGS),
    "snapshot": re.compile(r"\b(?:snapshots?|workspace|files?)\b", _FLAGS),
}


# -- the text's layout --------------------------------------------------------------------


class Layout:
    """A text's sentences (every prose block, quoted ones included) and its claims.

    A narrative's layout is kept for as long as its run (each revision judges it again),
    so it keeps only spans and candidates, not the sentences' tokens."""

    __slots__ = ("_disclosing", "found", "sentences", "text")

    def __init__(self, text: str) -> None:
        parsed = sentences(text)
        self.text = text
        self.sentences: list[Span] = [(s.start, s.end) for s in parsed]
        self.found = scan_sentences(parsed)
        self._disclosing: list[Span] | None = None

    def disclosing(self) -> list[Span]:
        """The sentences that disclose a problem (a DISCLOSURE word), found on the first
        judgement that owes an obligation and kept for the later ones."""
        if self._disclosing is None:
            text = self.text
            self._disclosing = [
                (lo, hi) for lo, hi in self.sentences if DISCLOSURE.search(text, lo, hi)
            ]
        return self._disclosing


# -- where the account's identifiers are named -----------------------------------------------


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char in "_-"


class Mentions:
    """Where identifiers (check labels, intent ids, paths…) occur in a text, matched
    case-insensitively and bounded by non-word characters: `unit` in "unit tests" but not
    in "units". Built once per narrative so each lookup is a bisect."""

    def __init__(self, text: str, identifiers: Iterable[str]) -> None:
        hits: list[tuple[int, int, str]] = []
        lowered = text.lower()
        for ident in sorted(set(identifiers)):
            if not ident:
                continue
            if len(lowered) == len(text) and len(ident.lower()) == len(ident):
                needle, i = ident.lower(), lowered.find(ident.lower())
                while i != -1:
                    j = i + len(needle)
                    before = i == 0 or not _is_word_char(text[i - 1])
                    if before and (j == len(text) or not _is_word_char(text[j])):
                        hits.append((i, j, ident))
                    i = lowered.find(needle, i + 1)
            else:  # lowercasing changed lengths: let the regex engine keep offsets right
                pattern = rf"(?<![\w-]){re.escape(ident)}(?![\w-])"
                hits += [(m.start(), m.end(), ident) for m in re.finditer(pattern, text, _FLAGS)]
        hits.sort()
        self._hits = hits
        self._starts = [h[0] for h in hits]

    def within(self, span: Span) -> list[str]:
        """The identifiers named inside `span`, sorted, without repeats."""
        lo = bisect_right(self._starts, span[0] - 1)
        hi = bisect_right(self._starts, span[1] - 1)
        return sorted({ident for _, end, ident in self._hits[lo:hi] if end <= span[1]})


# -- the account's facts, read once per narrative -----------------------------------------


class Facts:
    """The parts of an account the checker reads, indexed once per narrative."""

    def __init__(self, account: Account) -> None:
        self.account = account
        self.status: str | None = account.get("status")
        dimensions = account.get("dimensions") or {}
        self.verification: str | None = dimensions.get("verification")
        self.durability: str | None = dimensions.get("durability")
        self.predicates: dict[str, Mapping[str, Any]] = {
            p["id"]: p for p in account.get("predicates") or ()
        }
        self.checks: dict[str, Mapping[str, Any]] = {
            c["label"]: c for c in account.get("checks") or ()
        }
        self.effects: dict[str, Mapping[str, Any]] = {
            e["intent_id"]: e for e in sorted(account.get("effects") or (), key=_intent)
        }
        self.artifacts: dict[str, Mapping[str, Any]] = {
            a["path"]: a for a in account.get("artifacts") or ()
        }
        self.required_checks = sorted(self._goal_ids("check"))
        # The goal requires what the run did (SPEC 3.2, a goal without structure): its
        # requirements are inferred, so only a definite failure contradicts a claim; a
        # stale or indeterminate state leaves it unverifiable.
        self.policy: str | None = account.get("requirement_policy")
        self.observed = "observed" in (self.policy or "")
        self.requested_effects = sorted(self._goal_ids("effect"))
        self.writes = [i for i, e in self.effects.items() if e.get("effect_class") == "write"]

    def _goal_ids(self, family: str) -> list[str]:
        return [pid.partition(":")[2] for pid in self.predicates if pid.startswith(f"{family}:")]

    def identifiers(self) -> list[str]:
        """Every name a text may use for an account item."""
        names = [*self.checks, *self.effects, *self.artifacts]
        names += [pid.partition(":")[2] for pid in self.predicates]
        names += [c["subject"].partition(":")[2] for c in self.account.get("contradictions") or ()]
        return names

    def check_problem(self, label: str) -> str | None:
        """None when the check passes, else why not (`check_<predicate reason or state>`)."""
        pred = self.predicates.get(f"check:{label}")
        if pred is not None:
            return None if pred["state"] == "satisfied" else f"check_{pred['reason']}"
        state = self.checks[label]["state"] if label in self.checks else "missing"
        return None if state == "passing" else f"check_{state}"

    def effect_problem(self, intent_id: str) -> str | None:
        """None when the effect is completed, else why not (`effect_<reason or state>`)."""
        pred = self.predicates.get(f"effect:{intent_id}")
        if pred is not None:
            return None if pred["state"] == "satisfied" else f"effect_{pred['reason']}"
        state = self.effects[intent_id]["state"] if intent_id in self.effects else "prepared"
        return None if state == "completed" else f"effect_{state}"

    def effect_class(self, intent_id: str) -> str | None:
        row = self.effects.get(intent_id)
        return row.get("effect_class") if row is not None else None


def _intent(row: Mapping[str, Any]) -> str:
    return str(row["intent_id"])


# -- judging claims against the account ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Judgement:
    """A verdict with its subject and reason."""

    verdict: Verdict
    subject: str | None
    reason: str


def _named(found: Found, mentions: Mentions, identifiers: Iterable[str]) -> list[str]:
    """The identifiers the claim's clause names, else those its sentence names."""
    wanted = set(identifiers)
    for span in (found.clause, found.sentence):
        named = [i for i in mentions.within(span) if i in wanted]
        if named:
            return named
    return []


def _combine(
    subjects: Sequence[str], problem: Callable[[str], str | None], prefix: str, ok_reason: str
) -> Judgement:
    """Supported when no subject has a problem, else contradicted by the first that has."""
    for name in subjects:
        found = problem(name)
        if found is not None:
            return Judgement("contradicted", f"{prefix}:{name}", found)
    only = f"{prefix}:{subjects[0]}" if len(subjects) == 1 else None
    return Judgement("supported", only, ok_reason)


def _judge_completion(facts: Facts) -> Judgement:
    if facts.status is None:
        return Judgement("unverifiable", None, "no_status")
    if facts.status == "complete":
        return Judgement("supported", None, "status_complete")
    if facts.status == "unresolved" and facts.observed:
        # What done requires was inferred from the run, and something it requires is
        # unknown (stale, pending): unknown stays unknown.
        return Judgement("unverifiable", None, "status_unresolved")
    if facts.status == "unresolved" and _only_goal_missing(facts):
        # Nothing says what the run was for: there is nothing to compare completion with.
        return Judgement("unverifiable", None, "no_goal")
    if facts.policy == "observed" and not _failed_checks(facts):
        # Nothing but an attempted effect failed (an install retried another way, a
        # refused command): whether the task needed it, a person decides.
        return Judgement("needs_review", None, f"status_{facts.status}")
    return Judgement("contradicted", None, f"status_{facts.status}")


def _failed_checks(facts: Facts) -> list[str]:
    """The required checks that ran and did not pass on the candidate."""
    return [
        pid
        for pid, p in facts.predicates.items()
        if pid.startswith("check:") and p["required"] and p["state"] == "unsatisfied"
    ]


def _only_goal_missing(facts: Facts) -> bool:
    """True when the one required predicate not satisfied is the missing goal."""
    open_ = [p for p in facts.predicates.values() if p["required"] and p["state"] != "satisfied"]
    return bool(open_) and all(
        p["id"] == "goal.in_force" and p["reason"] == "missing" for p in open_
    )


# Words of a check's command that name no particular check: runners, generic nouns.
_GENERIC_CHECK_WORDS = frozenset(
    """test tests testing python python3 pytest unittest modules module check checks
    build lint linter tool tools file files spec specs main utils util unit suite
    cargo make just npm yarn pnpm npx node run runs""".split()  # noqa: SIM905
)


def _command_words(label: str) -> set[str]:
    """The distinctive words of a check's command (four letters or more, not generic)."""
    words = set()
    for tok in re.split(r"[^a-z0-9_]+", label.lower()):
        tok = tok.strip("_")
        if len(tok) >= 4 and not tok.isdigit() and tok not in _GENERIC_CHECK_WORDS:
            words.add(tok)
            words.update(t for t in tok.split("_") if len(t) >= 4 and t not in _GENERIC_CHECK_WORDS)
    return words


def _said_words(text: str) -> set[str]:
    said = set()
    for w in re.findall(r"[a-z0-9_]+", text.lower()):
        said.add(w)
        if w.endswith("s") and len(w) > 4:
            said.add(w[:-1])  # "doctests" names a --doctest-modules run
    return said


def _named_by_word(text: str, found: Found, facts: Facts) -> list[str]:
    """Checks the claim's own clause names by a distinctive word of their command
    ("the doctests" for `pytest --doctest-modules m.py`, "test_merge" for
    `pytest tests/test_merge.py`); labels themselves rarely appear in prose."""
    lo, hi = min(found.start, found.clause[0]), max(found.end, found.clause[1])
    said = _said_words(text[lo:hi])
    return [label for label in sorted(facts.checks) if _command_words(label) & said]


# Check problems that contradict a claim whatever the goal: the check ran and did not pass.
_DEFINITE = frozenset({"check_failing", "check_zero_tests"})


def _check_problem(facts: Facts) -> Callable[[str], str | None]:
    """The problem of a check that contradicts a claim it backs. A stated goal's required
    check contradicts with its predicate's every reason (stale, missing, …); under the
    observed policy, and for a check no goal requires, only a failure does."""

    def problem(label: str) -> str | None:
        found = facts.check_problem(label)
        if found is None or found in _DEFINITE:
            return found
        if not facts.observed and f"check:{label}" in facts.predicates:
            return found
        return None

    return problem


def _judge_checks(labels: Sequence[str], facts: Facts) -> Judgement:
    """`_combine` over checks: contradicted by the first problem, supported when every
    check passes, else (stale, indeterminate, no problem that contradicts) unverifiable."""
    judged = _combine(labels, _check_problem(facts), "check", "check_passing")
    if judged.verdict == "contradicted":
        return judged
    for label in labels:
        found = facts.check_problem(label)
        if found is not None:
            return _undecided(label, found)
    return judged


def _undecided(label: str, found: str) -> Judgement:
    """A claim backed only by a check that ran but whose latest state says nothing of the
    candidate (stale, indeterminate): the claim may be false, and the account cannot say;
    a person decides (SPEC 6). A check that never ran backs nothing: unverifiable."""
    if found in ("check_stale", "check_indeterminate", "check_contradiction"):
        return Judgement("needs_review", f"check:{label}", found)
    return Judgement("unverifiable", f"check:{label}", found)


def _judge_kinds(
    kinds: Sequence[CheckKind], scope: ClaimScope | None, facts: Facts
) -> Judgement | None:
    """A claim that names kinds of check ("all tests pass", "no type errors") against the
    receipts of those kinds (`checkkinds`); None when a receipt of no known kind could be
    the one meant (the generic rules decide then). Every kind must be backed: the first
    contradiction, else the first verdict short of supported, decides."""
    kinds_of = {label: label_kinds(label) for label in facts.checks}
    if any(primary is None for primary, _ in kinds_of.values()):
        return None
    if not facts.observed and facts.required_checks:
        # A stated goal names the checks that matter: any of them not passing refutes
        # a claim that the checks pass, as a generic claim (below) is refuted.
        judged = _combine(facts.required_checks, _check_problem(facts), "check", "")
        if judged.verdict == "contradicted":
            return judged
    verdicts = []
    for kind in kinds:
        relevant = [label for label, (_, backs) in kinds_of.items() if kind in backs]
        if not relevant:
            verdicts.append(Judgement("unverifiable", None, f"no_{kind}_check"))
            continue
        verdicts.append(_judge_kind(kind, relevant, kinds_of, scope, facts))
    for wanted in ("contradicted", "needs_review", "unverifiable"):
        for judged in verdicts:
            if judged.verdict == wanted:
                return judged
    if facts.verification == "pass":
        return Judgement("supported", None, "verification_pass")
    return verdicts[0]


def _judge_kind(
    kind: CheckKind,
    relevant: Sequence[str],
    kinds_of: Mapping[str, tuple[CheckKind | None, frozenset[CheckKind]]],
    scope: ClaimScope | None,
    facts: Facts,
) -> Judgement:
    """One kind of check named by a claim, against the receipts that back that kind."""
    problem = _check_problem(facts)
    passing = [label for label in relevant if facts.check_problem(label) is None]
    # Only a check whose own kind this is refutes it: a failing `cargo test` says
    # nothing of whether the build or the types are right.
    bad = [
        (label, found)
        for label in relevant
        if (found := problem(label)) is not None and kinds_of[label][0] == kind
    ]
    whole = [label for label in passing if facts.checks[label].get("scope") == "suite"]
    if bad and (scope != "part" or not passing):
        # Each label is its own check (SPEC 3.3): "all tests pass" while one test run's
        # latest receipt fails is refuted, whatever else passed.
        label, found = bad[0]
        return Judgement("contradicted", f"check:{label}", found)
    if passing:
        if scope == "all" and not whole:
            # The suite ran and did not pass (its result unknown): a person decides.
            # It never ran: the focused passes do not back "all".
            unsure = [c for c in relevant if facts.checks[c].get("scope") == "suite"]
            if unsure:
                return _undecided(unsure[0], facts.check_problem(unsure[0]) or "check")
            return Judgement("unverifiable", f"check:{passing[0]}", "scope_insufficient")
        return _passing(passing)
    label = relevant[0]
    return _undecided(label, facts.check_problem(label) or "check")


def _passing(labels: Sequence[str]) -> Judgement:
    return Judgement(
        "supported", f"check:{labels[0]}" if len(labels) == 1 else None, "check_passing"
    )


def _judge_verification(found: Found, facts: Facts, mentions: Mentions, text: str) -> Judgement:
    labels = _named(found, mentions, facts.checks) or _named_by_word(text, found, facts)
    if not labels and found.phrase == "conforms":
        # "Matches the design", "is ESM-compliant": only a check of that property could
        # back it, and none names it; a person decides (SPEC 6).
        return Judgement("needs_review", None, "no_matching_check")
    if not labels and facts.checks:
        lo, hi = min(found.start, found.clause[0]), max(found.end, found.clause[1])
        kinds, scope = claimed_checks(text[lo:hi])
        if kinds:
            judged = _judge_kinds(kinds, scope, facts)
            if judged is not None:
                return judged
    if not labels:
        if facts.verification == "pass":
            return Judgement("supported", None, "verification_pass")
        if facts.verification is None and not facts.checks:
            return Judgement("unverifiable", None, "no_checks")
        # Required checks decide. With none required, the reported checks eligible for
        # the candidate do; a stale receipt is indeterminate (SPEC 3.3): it neither
        # backs nor refutes the claim.
        labels = facts.required_checks or [
            label for label in sorted(facts.checks) if facts.checks[label]["state"] != "stale"
        ]
        if not labels:
            return Judgement("unverifiable", None, "check_stale")
    return _judge_checks(labels, facts)


def _effect_classes(segment: str) -> tuple[str, ...]:
    for pattern, classes in EFFECT_CLASS_WORDS:
        if pattern.search(segment):
            return classes
    return ()


def _judge_effect(text: str, found: Found, facts: Facts, mentions: Mentions) -> Judgement:
    if found.none:
        for intent_id, row in facts.effects.items():
            if row["state"] in EFFECT_MADE_STATES:
                return Judgement("contradicted", f"effect:{intent_id}", f"effect_{row['state']}")
        return Judgement(
            "supported", None, "no_effects_made" if facts.effects else "no_effects_recorded"
        )
    candidates = _named(found, mentions, [*facts.effects, *facts.requested_effects])
    if not candidates:
        clause = text[found.clause[0] : min(found.clause[1], found.end + CUE_REACH)]
        classes = _effect_classes(clause)
        candidates = [i for i, r in facts.effects.items() if r.get("effect_class") in classes]
    if not candidates:
        # The claim names no effect and no known class: it is about what was requested.
        candidates = [i for i in facts.requested_effects if facts.effect_class(i) != "write"]
    if not candidates:
        return Judgement("unverifiable", None, "no_matching_effect")
    return _combine(candidates, facts.effect_problem, "effect", "effect_completed")


def _write_problem(facts: Facts) -> Callable[[str], str | None]:
    def problem(intent_id: str) -> str | None:
        state = facts.effects[intent_id]["state"]
        return None if state == "completed" else f"write_{state}"

    return problem


def _artifact_problem(facts: Facts) -> Callable[[str], str | None]:
    def problem(path: str) -> str | None:
        change = facts.artifacts[path]["change"]
        return (
            None
            if change in ("added", "modified", "generated", "renamed")
            else f"artifact_{change}"
        )

    return problem


def _judge_persistence(found: Found, facts: Facts, mentions: Mentions) -> Judgement:
    named = _named(found, mentions, facts.writes)
    if named:
        return _combine(named, _write_problem(facts), "effect", "write_completed")
    if facts.writes:
        if facts.durability == "confirmed":
            return Judgement("supported", None, "durability_confirmed")
        states = {i: facts.effects[i]["state"] for i in facts.writes}
        failed = [i for i, s in states.items() if s == "failed"]
        open_ = [i for i, s in states.items() if s != "completed"]
        bad = (failed if facts.durability == "failed" else []) or open_
        subject = f"effect:{bad[0]}" if bad else None
        return Judgement("contradicted", subject, f"durability_{facts.durability}")
    # No write effects: a file named from the candidate snapshot's inventory decides.
    paths = _named(found, mentions, facts.artifacts)
    if paths:
        return _combine(paths, _artifact_problem(facts), "artifact", "artifact_present")
    return Judgement("unverifiable", None, "no_write_effects")


def judge(text: str, found: Found, facts: Facts | None, mentions: Mentions) -> Judgement:
    """The verdict on one present assertion (`facts` None: the run has no account). A
    candidate the grammar could not decide (`found.review`) goes to a person whatever
    the account says: `needs_review`, never `contradicted`."""
    if found.review is not None:
        return Judgement("needs_review", None, found.review)
    if facts is None:
        return Judgement("unverifiable", None, "no_account")
    if found.kind == "completion":
        return _judge_completion(facts)
    if found.kind == "verification":
        return _judge_verification(found, facts, mentions, text)
    if found.kind == "effect":
        return _judge_effect(text, found, facts, mentions)
    return _judge_persistence(found, facts, mentions)


# -- omissions -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Obligation:
    """Something the account says the narrative must disclose, and the generic nouns that
    may refer to it ("the tests", "the draft") besides its identifier."""

    subject: str
    family: str
    name: str
    kind: ClaimKind
    reason: str
    nouns: tuple[re.Pattern[str], ...]


def _obligation(subject: str, reason: str, facts: Facts) -> Obligation:
    family, _, name = subject.partition(":")
    if family == "effect":
        effect_class = facts.effect_class(name)
        kind: ClaimKind = "persistence" if effect_class == "write" else "effect"
        nouns = [FAMILY_NOUNS["effect"]]
        nouns += [p for p, classes in EFFECT_CLASS_WORDS if effect_class in classes]
        return Obligation(subject, family, name, kind, reason, tuple(nouns))
    kind = "verification" if family == "check" else "completion"
    return Obligation(subject, family, name, kind, reason, (FAMILY_NOUNS[family],))


def obligations(facts: Facts) -> list[Obligation]:
    """What the text must address, by subject: each required check that is not satisfied,
    each requested effect that is not, each other unresolved effect, each contradiction
    (which replaces a check or effect obligation with the same subject)."""
    owed: dict[str, str] = {}
    for pid, pred in facts.predicates.items():
        family = pid.partition(":")[0]
        if family in ("check", "effect") and pred["required"] and pred["state"] != "satisfied":
            owed[pid] = f"{family}_{pred['reason']}"
    for intent_id, row in facts.effects.items():
        if row.get("unresolved"):
            owed.setdefault(f"effect:{intent_id}", f"effect_{row['state']}")
    for contradiction in facts.account.get("contradictions") or ():
        owed[contradiction["subject"]] = contradiction["kind"]
    return [
        _obligation(subject, reason, facts)
        for subject, reason in sorted(owed.items())
        if subject.partition(":")[0] in FAMILY_NOUNS
    ]


def _unaddressed(
    text: str, owed: Sequence[Obligation], layout: Layout, mentions: Mentions
) -> list[Obligation]:
    """The obligations no sentence addresses. A sentence addresses one when it discloses a
    problem (a DISCLOSURE word) and names it by its identifier, or, naming no other
    obligation of the same family, refers to it with a generic noun."""
    if not owed:
        return []
    family_of = {ob.name: ob.family for ob in owed}
    families = sorted({ob.family for ob in owed})
    nouns = sorted({p for ob in owed for p in ob.nouns}, key=lambda p: p.pattern)
    by_name: set[str] = set()  # subjects named in a disclosing sentence
    by_noun: set[tuple[str, str]] = set()  # (family, noun pattern) usable generically
    for lo, hi in layout.disclosing():
        named = [n for n in mentions.within((lo, hi)) if n in family_of]
        by_name.update(f"{family_of[n]}:{n}" for n in named)
        unnamed_families = [f for f in families if f not in {family_of[n] for n in named}]
        for noun in nouns:
            if noun.search(text, lo, hi):
                by_noun.update((f, noun.pattern) for f in unnamed_families)
    return [
        ob
        for ob in owed
        if ob.subject not in by_name
        and not any((ob.family, p.pattern) in by_noun for p in ob.nouns)
    ]


# -- a narrative's reading and its judgements ----------------------------------------------


@dataclass(frozen=True, slots=True)
class Reading:
    """What a narrative's text asserts, independent of any account: its layout and its
    present assertions in text order. Read once per narrative; judged per revision."""

    text: str
    layout: Layout
    claims: tuple[Found, ...]


def read(text: str) -> Reading:
    """The account-independent analysis of a narrative's text."""
    layout = Layout(text)
    return Reading(text, layout, tuple(f for f in layout.found if f.blocked is None))


@dataclass(frozen=True, slots=True)
class Judged:
    """One verdict of a narrative against one account.

    `key` is stable across accounts: the claim's index among the text's claims
    (`"0"`, `"1"`, …) for a claim, `"omission:<subject>"` for an omission.
    """

    key: str
    kind: ClaimKind
    judgement: Judgement
    span: Span | None = None


def judge_reading(reading: Reading, account: Account | None) -> list[Judged]:
    """The verdicts of a read narrative against `account` (None: the run has none yet):
    claims first in text order, then omissions sorted by subject."""
    text = reading.text
    facts = Facts(account) if account is not None else None
    mentions = Mentions(text, facts.identifiers() if facts is not None else ())
    out = [
        Judged(str(i), found.kind, judge(text, found, facts, mentions), (found.start, found.end))
        for i, found in enumerate(reading.claims)
    ]
    if facts is not None:
        covered = {j.judgement.subject for j in out}
        owed = [ob for ob in obligations(facts) if ob.subject not in covered]
        out += [
            Judged(
                f"omission:{ob.subject}", ob.kind, Judgement("omitted", ob.subject, ob.reason), None
            )
            for ob in _unaddressed(text, owed, reading.layout, mentions)
        ]
    return out
