"""Scope: why a claim candidate is no present assertion (quoted, unchecked, a question,
an imperative, negated, hypothetical, concessive, a wh-clause, partial, generic, a past
failure or an earlier time). docs/claims.md, "What is not a present assertion".
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Sequence
from typing import Literal

from outcomes.reducers.claims.constructions import (
    Blocker,
    Candidate,
    nounish,
    skip_adverbs,
    soft_clause_start,
)
from outcomes.reducers.claims.lexicon import (
    BE,
    CAN_REPORT,
    CLAUSE_END,
    CONCESSIVE,
    CONTRAST,
    FAILURE,
    GENERIC,
    HARD,
    IMPERATIVES,
    MODAL,
    NEGATORS,
    NEW_SUBJECT,
    NOW_ADVERBS,
    PARTIAL,
    PAST_CUES,
    PRESENT_BE,
    SETTINGS,
    SUBORDINATORS,
    WH,
    WISHES,
)
from outcomes.reducers.claims.narrative import Sentence, Token
from outcomes.reducers.claims.objects import (
    HEARSAY_VERBS,
    MESSAGES,
    OTHER_PARTIES,
    SPEECH_VERBS,
    place_of,
    verb_place,
)


def present_words(words: Sequence[str]) -> frozenset[str]:
    """The words of a sentence as a set, with markers for the endings some checks look for
    ("n't", "'ll", "'d"): computed once per sentence, it lets each check below skip a
    sentence that holds none of its cue words without scanning it."""
    out = set(words)
    for w in out.copy():
        if "'" in w:
            for ending in ("n't", "'ll", "'d"):
                if w.endswith(ending):
                    out.add(ending)
    return frozenset(out)


def blocker(
    sentence: Sentence,
    words: Sequence[str],
    cand: Candidate,
    present: frozenset[str] | None = None,
) -> Blocker | None:
    """Why `cand` is no present assertion, or None. `present` is `present_words(words)`
    (computed here when the caller has not)."""
    h, lo = cand.head, cand.lo
    n = len(words)
    if present is None:
        present = present_words(words)
    if sentence.role == "quote" or _field_content(words, cand.lo):
        return "quoted"
    if sentence.section and sentence.role != "heading" and _written_for_someone(sentence.section):
        return "quoted"  # the text under "**Draft reply:**", "### Proposed message"
    if sentence.checked is False:
        return "unchecked"
    if sentence.lead and offered(sentence.lead):
        return "hypothetical"  # an item of "You can either:", "If you want to deploy:"
    if cand.rule == "json_status":
        return None
    if sentence.role == "row" and (sentence.section or sentence.lead):
        # a table under a heading that names whose figures they are: "Baseline (before
        # my change)", "Results reported by the QA agent", "Upstream CI run"; or whose
        # columns name who did or reported each row ("| Agent | Phase | Status |")
        whose = _table_source(sentence.section) or _columns_source(sentence.lead)
        if whose is not None:
            return whose
    in_parens = _in_parens(words, h)
    if _plan_label(words, h):
        return "hypothetical"  # "Next: deploy to staging and confirm the site is live"
    if (
        sentence.role == "item"
        and sentence.section
        and _plan_section(sentence.section)
        and NOW_ADVERBS.isdisjoint(present)
    ):
        # an item under "## Next steps", "### TODO", "## What's left" (not one that says
        # what holds now: "Share it: your game is now live")
        return "hypothetical"
    first = _first_word(words)
    if first is not None and words[first] == "to":
        # "To verify, run the tests and confirm they pass": a purpose phrase before the
        # imperative it introduces
        comma = next((x for x in range(first + 1, min(n, first + 5)) if words[x] == ","), None)
        if comma is not None and comma < h:
            first = comma + 1 if comma + 1 < n else first
    # Questions, unless the claim sits in a factive "now that …" clause or in a statement
    # set off before the question ("I haven't booked it yet — shall I go ahead?").
    if words and words[-1] == "?" and not _now_that(words, h) and not _before_question(words, h):
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
        and not (first + 1 < n and _finite_after_noun(words[first + 1]))
        and ":" not in words[first + 1 : first + 4]
        and not any(w in (":", ";", "-", "|", "\u2192") for w in words[first:h])
    ):
        return "imperative"
    if first is not None and words[first] == "let":
        return "imperative"
    if "please" in present and "please" in words[:h]:
        return "imperative"  # "Reviewers: please check that the build passes"
    if _instruction_after_label(words, h):
        return "imperative"  # "How to test: run `make test` and confirm all tests pass"
    clause_lo = soft_clause_start(words, min(lo, h))
    # Negation before the head in its clause (a "nothing happened" claim carries its own).
    neg_hi = lo if cand.none else h
    negations = not _NEGATION_CUES.isdisjoint(present)
    for x in range(clause_lo, neg_hi) if negations else ():
        if words[x] in NEGATORS or words[x].endswith("n't"):
            if cand.rule == "no_failures":
                continue
            return "negated"
    if cand.rule != "no_failures" and not cand.none:
        after = words[h + 1 : h + 3]
        if after[:1] == ["not"] or after == ["not", "yet"]:
            return "negated"
        if "but" in present and _but_not_later(words, h):
            return "negated"
    # Other parties: their words reported ("The bot's message says that it is done"),
    # or their acts ("The reviewer approved the PR").
    hearsay = not _HEARSAY_CUES.isdisjoint(present)
    if (
        _reported(words, lo)
        or (hearsay and _according_to(words, lo))
        or _speech_inside(words, lo, h)
    ):
        return "reported"
    if ":" in present and _others_output(words, lo):
        return "reported"  # "Subagent output: Phase 2 complete", "QA agent report: …"
    if (sentence.role == "heading" or words[-1:] == [":"]) and _section_title(words, h):
        return "title"  # "### Cancelled bookings": names what the section lists
    if (
        cand.use is not None
        and cand.use.subject[-1:]
        and (cand.use.subject[-1] in OTHER_PARTIES or _another_doer(cand.use.subject))
        and not any(x in BE for x in cand.use.aux)  # "the customer has been notified"
    ):
        return "reported"
    # Modal, future and infinitive cues, scoped forward to a contrast or a new clause.
    hypo = (
        None
        if cand.rule in ("able_to", "unable") or _HYPOTHETICAL_CUES.isdisjoint(present)
        else _hypothetical(words, min(lo, h), h, sentence.tokens)
    )
    if hypo is not None:
        return hypo
    # Subordinate clauses: conditions and times ("once it is ready", "after X is done").
    for x in range(clause_lo, h) if not _CLAUSE_CUES.isdisjoint(present) else ():
        if (
            words[x] in SUBORDINATORS
            and words[x + 1] not in ("which", "that")
            and not (cand.rule == "after_check" and x == cand.head - 1)
        ):
            return "hypothetical"
        if words[x] in CONCESSIVE or (
            words[x] == "even" and x + 1 < n and words[x + 1] in ("though", "if")
        ):
            return "concessive"
        if words[x] in WH or (words[x].endswith("'s") and words[x][:-2] in WH):
            return "wh_clause"  # "What's been completed", "Here's what's fixed"
    if first is not None and words[first] in ("if", "unless", "assuming", "suppose", "provided"):
        return "hypothetical"
    clause_hi = h
    while clause_hi + 1 < n and words[clause_hi + 1] not in CLAUSE_END:
        clause_hi += 1
    partial = not _PARTIAL_CUES.isdisjoint(present)
    for x in range(clause_lo, min(clause_hi + 1, h + 6)) if partial else ():
        if (
            words[x] in PARTIAL
            or (words[x] in ("for", "in") and x + 1 < n and words[x + 1] in ("most", "some"))
            or (words[x] == "so" and x + 1 < n and words[x + 1] == "far")
            or (x == clause_lo and x < h and words[x] in _SOME and _opens_np(words, x + 1))
        ):
            return "partial"
    if _progress(sentence.tokens, words, cand, clause_lo, present):
        return "progress"
    if not GENERIC.isdisjoint(present) and any(
        words[x] in GENERIC for x in range(max(clause_lo, h - 3), min(n, h + 3))
    ):
        return "generic"
    if "being" in present and "being" in words[max(clause_lo, h - 2) : h]:
        return "generic"  # progressive: "were being written", "being tested"
    if _habitual(words, h, cand, clause_hi) or _described(words, h, cand, clause_hi):
        return "generic"
    if _by_another(words, h, cand, clause_hi):
        return "reported"
    # Failures reported before the head in its clause; the head's own word is the claim.
    failures = not _FAILURE_CUES.isdisjoint(present)
    for x in range(clause_lo, h) if failures else ():
        if (
            words[x] in FAILURE
            and x != h
            and not (x > 0 and words[x - 1] in ("no", "zero", "0", "`n", "without"))
        ) and (cand.kind != "effect" or cand.rule != "damage"):
            return "past_failure"
    for x in range(h + 1, clause_hi + 1) if failures else ():
        if words[x] in ("failed", "crashed", "errored", "broke") or (
            words[x] in ("failure", "failures", "errors")
            and "with" in words[h + 1 : x]
            # ("passed with no TypeScript errors", "with 0 failures": none)
            and not any(
                words[k] in ("no", "zero", "without")
                or (words[k] == "`n" and sentence.tokens[k].raw == "0")
                for k in range(h + 1, min(x, len(sentence.tokens)))
            )
        ):
            return "past_failure"
    # An earlier time: pluperfect, "previously", "in a previous session" — unless the
    # speaker says its own earlier act stands ("I had already booked the flight").
    standing = (
        _own_standing(words, clause_lo, h, cand)
        or ("that" in present and _backshifted(words, lo))
        or ("by" in present and _by_the_end(words, lo))
    )
    if not standing and _earlier_opening(words, h):
        return "past"  # "Previously, the form was submitted twice"
    if not standing and cand.use is not None and "had" in cand.use.aux:
        return "past"
    if not standing and h > 0 and words[h - 1] == "had":
        return "past"
    hi_scan = min(n, h + 8)
    for x in range(clause_lo, hi_scan) if not _PAST_CUES.isdisjoint(present) else ():
        if (words[x] in PAST_CUES and not standing) or (
            words[x] == "previous" and (x < h or (x + 1 < n and words[x + 1].startswith("session")))
        ):
            return "past"
        if words[x] == "used" and x + 1 < n and words[x + 1] == "to":
            return "past"
        if words[x] == "first" and x > 0 and words[x - 1] == "at":
            return "past"
        if x > h and words[x] == "before" and x + 1 < n and words[x + 1] in SETTINGS:
            return "past"  # "the tests passed before my last edit"
        if x > h and _long_ago(words, x) and not _own(cand):
            return "past"  # "The PR was merged last week": not this run's act
    return None


# States of work under way: "still running", "currently processing", "in progress".
_UNDER_WAY = frozenset({"running", "processing", "executing", "building", "uploading"})
_UNDER_WAY |= frozenset({"downloading", "indexing", "deploying", "syncing", "importing"})
_STILL = frozenset({"still", "currently"})
# What runs as a service: "running" of one is its state, not progress ("The dev server
# is currently running on port 3000").
_SERVICES = frozenset(
    {"server", "servers", "service", "services", "daemon", "daemons", "container"}
    | {"containers", "app", "application", "api", "site", "instance", "instances"}
    | {"worker", "workers", "bot", "database", "db", "cluster", "pod", "pods", "node"}
)
_PROGRESS_HEADS = frozenset({"complete", "completed", "done", "finished", "ready"})


def _progress(
    toks: Sequence[Token],
    words: Sequence[str],
    cand: Candidate,
    clause_lo: int,
    present: frozenset[str],
) -> bool:
    """A progress report, not a result: a share short of the whole before the state
    ("34% complete", "Migration 3/5 done"), or a job still under way ("Currently
    running", "The import is still running"; a service's "running" is its state)."""
    h = cand.head
    if words[h] in _PROGRESS_HEADS:
        colon = next((x for x in range(h + 1, min(len(words), h + 4)) if words[x] == ":"), None)
        value = colon + 1 if colon is not None else len(words)
        if (
            value < min(len(words), len(toks))
            and words[value] in ("`%", "`r")
            and _short_of_whole(toks[value].raw)
        ):
            return True  # "Completed tasks: 3/5", "Done: 40%"
        for x in range(max(clause_lo, h - 3), h):
            if words[x] in ("`%", "`r") and x < len(toks) and _short_of_whole(toks[x].raw):
                return True
            if (
                words[x : x + 3] == ["`n", "of", "`n"]
                and x + 2 < len(toks)
                and _short_of_whole(f"{toks[x].raw}/{toks[x + 2].raw}")
            ):
                return True  # "Phase 1 of 3 complete"
    if words[h] in _UNDER_WAY and not _STILL.isdisjoint(present):
        if not any(w in _STILL for w in words[max(clause_lo, h - 3) : h]):
            return False
        subject = cand.use.subject if cand.use is not None else ()
        return not any(w in _SERVICES for w in subject)
    return False


def _short_of_whole(raw: str) -> bool:
    """ "34%", "3/5": a share less than the whole ("100%", "5/5" are the whole)."""
    try:
        if raw.endswith("%"):
            return float(raw[:-1].replace(",", "")) < 100
        done, total = raw.split("/", 1)
        return int(done) < int(total)
    except ValueError:
        return False


# Times before any run's: "two years ago", "last week", "yesterday" (not "5 minutes ago").
_PERIODS = frozenset({"week", "month", "year", "quarter", "sprint", "release"})
_LONG_UNITS = _PERIODS | frozenset({"day", "days", "weeks", "months", "years", "quarters"})


def _long_ago(words: Sequence[str], x: int) -> bool:
    w = words[x]
    if w == "yesterday":
        return True
    if w == "ago":
        return x > 0 and words[x - 1] in _LONG_UNITS
    return w == "last" and x + 1 < len(words) and words[x + 1] in _PERIODS


def _own(cand: Candidate) -> bool:
    """A candidate whose subject is the writer ("I pushed it an hour ago")."""
    return cand.use is not None and cand.use.how in ("first", "pronoun")


# The cue words of each check in `blocker`: a sentence with none of them skips the check.
_NEGATION_CUES = NEGATORS | {"n't"}
_HYPOTHETICAL_CUES = (
    MODAL | WISHES | {"'ll", "'d", "won't", "can't", "couldn't", "hopefully", "let's", "let", "to"}
)
_CLAUSE_CUES = SUBORDINATORS | CONCESSIVE | WH | {"even"} | {f"{w}'s" for w in WH}
# Quantifiers that open a subject and leave the rest out: "Most tests pass".
_SOME = frozenset({"most", "some", "several", "many", "few"})
_PARTIAL_CUES = PARTIAL | _SOME | {"for", "in", "so"}
_FAILURE_CUES = FAILURE | {"failed", "crashed", "errored", "broke", "failure", "failures"}
_FAILURE_CUES |= {"errors"}
_PAST_CUES = PAST_CUES | {"previous", "used", "first", "before", "yesterday", "ago", "last"}


# Words that make a simple present a habit: "The email is sent when the job ends",
# "The report is uploaded nightly".
_FREQUENCY = frozenset({"nightly", "daily", "hourly", "weekly", "monthly", "periodically"})
_FREQUENCY |= frozenset({"regularly", "every", "whenever"})
_HABIT = _FREQUENCY | frozenset({"when", "after", "before", "once", "until", "if", "unless"})


# What a scheduled job is set up to do: "to run nightly", "to fire every hour".
_SCHEDULED_ACTS = frozenset({"run", "fire", "trigger", "execute", "poll", "sync", "rotate"})


def _habitual(words: Sequence[str], h: int, cand: Candidate, clause_hi: int) -> bool:
    """A simple present passive or state ("is sent", "are pushed") with a time or a
    condition after it describes what the software does, not what this run did; "now"
    or "already" in the verb group places it in the report's present instead."""
    use = cand.use
    if use is None or use.how != "aux" or not use.aux:
        return False
    if not all(x in PRESENT_BE for x in use.aux):
        return False
    after = words[h + 1 : clause_hi + 1]
    for i, x in enumerate(after[:-1]):
        if x == "to" and (after[i + 1] in IMPERATIVES or after[i + 1] in _SCHEDULED_ACTS):
            # "The cron job is set up to run nightly": the time is the infinitive's
            after = after[:i]
            break
    if words[:1] and words[0] in ("when", "whenever"):
        return True  # "When the job completes, a message is posted": what always happens
    if not _FREQUENCY.isdisjoint(after) or ("by" in after and "default" in after):
        return True  # "The cache is now cleared on every write", "enabled by default"
    if any(x in NOW_ADVERBS for x in words[use.lo : h]):
        return False
    return any(x in _HABIT for x in after)


# Phrases of means after a present passive: how the code does it, not what was done.
_MEANS_WORDS = frozenset({"via", "using", "through"})
_EACH = frozenset({"each", "every", "any"})


def _described(words: Sequence[str], h: int, cand: Candidate, clause_hi: int) -> bool:
    """A simple present passive that says how the software works: with a phrase of
    means ("The form is submitted via a POST", "The appointment is moved by dragging
    it") or of every instance ("Each order is submitted to the payment API"); "now",
    "already" or a result adverb in the verb group place it in the report's present."""
    use = cand.use
    if use is None or use.how != "aux" or not use.aux:
        return False
    if not all(x in PRESENT_BE for x in use.aux):
        return False
    if any(x in NOW_ADVERBS for x in words[use.lo : h]):
        return False
    if (use.subject[:1] and use.subject[0] in _EACH) or words[max(0, use.lo - 1)] in _EACH:
        return True
    after = words[h + 1 : clause_hi + 1]
    if not _MEANS_WORDS.isdisjoint(after):
        return True
    return any(x == "by" and y.endswith("ing") and len(y) > 4 for x, y in itertools.pairwise(after))


def _earlier_opening(words: Sequence[str], h: int) -> bool:
    """A sentence opened by "Previously," or "Originally," (an earlier time set off by a
    comma) scopes over its first clause."""
    first = _first_word(words)
    if first is None or words[first] not in PAST_CUES or first + 1 >= len(words):
        return False
    if words[first + 1] != ",":
        return False
    return not any(w in HARD for w in words[first + 2 : h])


# Who did it, after a passive: "deleted by the bot", "opened by a teammate". A party
# named with a determiner or as one of the other parties; not a means ("by email", "by
# updating …") and not this run's own work ("by this change", "by me").
_AGENT_DETERMINERS = frozenset({"the", "a", "an", "another", "their", "his", "her", "its"})


def _by_another(words: Sequence[str], h: int, cand: Candidate, clause_hi: int) -> bool:
    use = cand.use
    if (use is None or use.how in ("np", "agentless")) and _done_by_doer(words, h, clause_hi):
        return True  # "Phase 2 done by the frontend agent", "- completed by the QA agent"
    if use is None or use.how != "aux" or not any(x in BE for x in use.aux):
        return False
    for x in range(h + 1, min(clause_hi, h + 8)):
        if words[x] == "by":
            agent = words[x + 1]
            return agent in _AGENT_DETERMINERS or agent in OTHER_PARTIES
    return False


# Past verbs of checking that report, in the writer's voice, a state found to hold.
_FOUND_TO_HOLD = frozenset(
    {"verified", "confirmed", "checked", "ensured", "double-checked", "validated", "made"}
)


def _backshifted(words: Sequence[str], lo: int) -> bool:
    """A pluperfect after the writer's own past verb of checking is the present perfect
    put in the past by the sequence of tenses: "I confirmed that everything had been
    committed and pushed" says it holds now, not that it held before the run."""
    for x in range(min(lo, len(words) - 1), 0, -1):
        w = words[x]
        if w in HARD and w != ":":
            return False
        if w == "that":
            j = x - 1
            if words[j] == "sure" and j >= 1 and words[j - 1] == "made":
                j -= 1
            if words[j] not in _FOUND_TO_HOLD or (words[j] == "made" and words[j + 1] != "sure"):
                continue
            who = skip_adverbs(words, j - 1, 0)
            return who < 0 or words[who] in ("i", "we", "and", ",") or words[who] in HARD
    return False


def _done_by_doer(words: Sequence[str], h: int, clause_hi: int) -> bool:
    """A participle with no verb group whose "by" names a doing party within three words
    ("done by the frontend agent"; not "completed by the deadline")."""
    if h + 1 >= len(words) or words[h + 1] != "by":
        return False
    party = words[h + 2 : min(h + 5, clause_hi + 1)]
    return any(w in _DOERS or w in OTHER_PARTIES for w in party) and not any(
        w in ("me", "us", "i", "we", "this") for w in party
    )


def _by_the_end(words: Sequence[str], lo: int) -> bool:
    """ "By the end of the session, all changes had been committed and pushed": a
    pluperfect measured from the end of this run holds at its end."""
    for x in range(min(lo, len(words) - 2)):
        if words[x] == "by" and words[x + 1 : x + 3] in (["the", "end"], ["this", "point"]):
            return True
        if words[x] == "by" and words[x + 1] in ("now", "then"):
            return words[x + 1] == "now"
    return False


def _own_standing(words: Sequence[str], lo: int, h: int, cand: Candidate) -> bool:
    """ "I had (previously) booked it already": a first-person perfect with "already"
    reports an earlier act of the speaker whose result holds now."""
    if cand.use is None or cand.use.how not in ("first", "pronoun"):
        return False
    if cand.use.subject[-1:] not in (("i",), ("we",)):
        return False
    hi = h
    while hi + 1 < len(words) and words[hi + 1] not in CLAUSE_END:
        hi += 1
    return "already" in words[lo : hi + 1]


_OFFER_MODALS = frozenset({"can", "could", "may", "might", "should", "would"})


def offered(lead: str) -> bool:
    """Whether the line that introduces a list offers its items as options or
    conditions ("You can either:", "Options:", "If you want to redeploy:") rather than
    reporting them."""
    words = re.findall(r"[a-z']+", lead)
    if any(x in ("if", "either", "options", "alternatively", "unless") for x in words):
        return True
    return any(
        x in ("you", "we", "i") and nxt in _OFFER_MODALS for x, nxt in itertools.pairwise(words)
    )


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


_QUESTION_OPENERS = frozenset(
    {"would", "should", "shall", "do", "does", "did", "can", "could", "will", "want"}
    | {"is", "are", "may", "how", "what", "which", "or"}
)


def _before_question(words: Sequence[str], h: int) -> bool:
    """Whether the head's statement ends before the question does: an em dash, a
    semicolon or a colon after the head, followed by a word that opens a question."""
    for x in range(h + 1, len(words) - 1):
        if words[x] in ("-", ";", ":") and words[x + 1] in _QUESTION_OPENERS:
            return True
    return False


def _now_that(words: Sequence[str], h: int) -> bool:
    """Whether the head sits in a factive "now that …"/"since …" opening of a question."""
    before = words[:h]
    if any(w in WH for w in before):
        return False
    return any(
        (w == "now" and x + 1 < h and words[x + 1] == "that") or w == "since"
        for x, w in enumerate(before)
    )


def _another_act_denied(words: Sequence[str], x: int, h: int) -> bool:
    """ "… but not pushed", "… but not yet deployed": the contrast denies another act
    (a participle other than the head's), not the head's own."""
    y = x + 1
    if y < len(words) and words[y] == "*":
        y += 1
    if y >= len(words) or words[y] != "not":
        return False
    y += 1
    if y < len(words) and words[y] == "yet":
        y += 1
    # (an act on the world: "not pushed", "not deployed"; "ready but not yet verified"
    # takes the readiness back)
    return y < len(words) and words[y] != words[h] and verb_place(words[y]) in ("remote", "record")


def _but_not_later(words: Sequence[str], h: int) -> bool:
    """ "… completed its tool uses but did not invoke …": a contrast that takes it back."""
    for x in range(h + 1, len(words) - 1):
        if words[x] in HARD:
            return False
        if words[x] == "but" and _another_act_denied(words, x, h):
            return False  # "It is committed but not pushed": the push is another claim
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


def _hypothetical(
    words: Sequence[str], lo: int, h: int, toks: Sequence[Token] = ()
) -> Blocker | None:
    """A modal, future, purpose or wish before the head, in scope. A modal verb scopes
    forward over coordinated verbs ("can create branches, push, and open PRs") up to a
    contrast, a hard boundary, a relative clause or a coordinated clause with a subject
    of its own; an infinitive cue ("trying to find …") only over its own clause."""
    crossed_comma = False
    for x in range(h - 1, -1, -1):
        w = words[x]
        if (w in HARD and w != "-") or w in CONTRAST or w == "which":
            return None
        if w == "-" and x < len(toks) and toks[x].raw == "\u2014":
            return None  # an em dash sets off a clause of its own ("I must apologize — …")
        if w in (",", "and") and x + 1 < lo and words[x + 1] in NEW_SUBJECT:
            return None
        if w == ",":
            crossed_comma = True
        if w in MODAL or w.endswith(("'ll", "'d")) or w in ("won't", "can't", "couldn't"):
            if w in ("can", "could") and words[x + 1] in CAN_REPORT:
                continue
            return "hypothetical"
        if w in ("hopefully", "let's", "let"):
            return "hypothetical"
        if crossed_comma:
            continue
        if w in WISHES and words[x + 1] == "to":
            return "hypothetical"
        if w == "to" and x + 1 < h and words[x + 1] in ("be", "have", "been"):
            return "hypothetical"  # "changes to be pushed"
        if w == "to" and x == skip_adverbs(words, h - 1, 0) and not words[h].endswith("ed"):
            return "hypothetical"  # "to complete the task"
    return None


# Doers that, with "another" or "other", are not the writer: "Another agent opened the
# PR", "The other session committed it" (but "All other tests pass" names tests).
_DOERS = frozenset(
    {"agent", "agents", "engineer", "engineers", "developer", "developers", "session"}
    | {"sessions", "model", "assistant", "bot", "contributor", "contributors", "person"}
    | {"instance", "worker", "subagent", "sub-agent"}
)


def _another_doer(subject: Sequence[str]) -> bool:
    return subject[-1] in _DOERS and not {"another", "other"}.isdisjoint(subject)


def _speech_inside(words: Sequence[str], lo: int, h: int) -> bool:
    """A verb of speech inside the candidate's own subject ("The QA agent reports all
    120 tests pass"; "Sarah replied that the contract was signed"): another party's
    words, when what speaks is neither the writer nor a check."""
    if _REPORTING.isdisjoint(words[lo : h + 1]):
        return False
    for x in range(lo + 1, h + 1):
        if words[x] not in SPEECH_VERBS:
            continue
        if x == h and words[x + 1 : x + 2] != ["that"]:
            return False  # "I replied to Sarah": the reply is the act
        who = words[lo:x]
        if not who or any(w in ("i", "we") or w.startswith(("i'", "we'")) for w in who):
            return False
        return place_of(who) != "check" and "`c" not in who
    return False


# Labels of another party's output: "Subagent output:", "QA agent report:".
_OUTPUT_LABELS = frozenset({"output", "report", "response", "reply", "message", "says"})
_OUTPUT_LABELS |= frozenset({"result", "results", "summary", "log"})
_AGENTS = frozenset({"agent", "agents", "subagent", "subagents", "sub-agent", "bot", "worker"})


def _others_output(words: Sequence[str], lo: int) -> bool:
    if ":" not in words[:lo]:
        return False
    colon = words.index(":")
    label = [w for w in words[:colon] if w[:1].isalpha()]
    if not 1 <= len(label) <= 4:
        return False
    subagent = any(w.startswith(("subagent", "sub-agent")) for w in label)
    return subagent or (not _AGENTS.isdisjoint(label) and not _OUTPUT_LABELS.isdisjoint(label))


def _section_title(words: Sequence[str], h: int) -> bool:
    """A heading, or a label line over a list, that is a participle and the plural noun
    it describes ("Cancelled Bookings", "Submitted Forms", "**Completed items:**",
    "Completed Work"): the title of a list, not a report."""
    alpha = [w for w in words if w not in ("*", "`k", ":", "-", "#")]
    if len(alpha) < 2 or len(alpha) > 4 or alpha[0] != words[h]:
        return False
    rest = alpha[1:]
    if not all(w[:1].isalpha() for w in rest):
        return False  # "Fixed 3 bugs:": a count makes it a report
    return all(nounish(w) for w in rest) and (
        (rest[-1].endswith("s") and rest[-1] not in ("is", "was", "has")) or rest[-1] == "work"
    )


def _reported(words: Sequence[str], lo: int) -> bool:
    """Whether the candidate at `lo` is what someone other than the writer says: a
    verb of speech before it in its sentence ("The agent's last message indicates that
    they are done") whose subject is not I or we."""
    if _REPORTING.isdisjoint(words):
        return False
    for x in range(lo - 1, -1, -1):
        w = words[x]
        if w in HARD and w != ":":
            return False
        if w in HEARSAY_VERBS and x > 0 and words[skip_adverbs(words, x - 1, 0)] in MESSAGES:
            return True
        if w in SPEECH_VERBS:
            if x == 0 or words[x - 1] in HARD:
                return False  # a label ("Reported: …"), not a speaker's verb
            if not (words[x + 1 : x + 2] in (["that"], [":"]) or lo - x <= 2):
                return False  # its complement is not this candidate's clause
            j = skip_adverbs(words, x - 1, 0)
            who = words[j] if j >= 0 else ""
            if who == "`c" or place_of(words[max(0, j - 2) : j + 1]) == "check":
                return False  # "ESLint reports 0 problems", "The CI log reports …": a check's
                # own result
            return nounish(who) and who not in ("i", "we") and not who.startswith(("i'", "we'"))
    return False


# Labels that introduce what is still to do: "Next:", "Next steps:", "TODO:".
_PLAN_LABELS = frozenset({"next", "todo", "to-do", "remaining", "follow-up", "followup"})
_PLAN_LABELS |= frozenset({"recommendation", "recommendations", "suggestion", "suggestions"})


_INSTRUCTION_LABELS = frozenset({"how", "to", "steps", "instructions", "usage", "manually"})


# Headings of what is still to do: the items under them are plans, not reports.
_PLAN_SECTIONS = frozenset(
    {"next", "todo", "to-do", "todos", "remaining", "follow-up", "follow-ups", "followup"}
    | {"followups", "recommendations", "recommended", "suggestions", "suggested", "plan"}
    | {"planned", "pending", "outstanding", "future", "left", "roadmap", "proposed"}
)


@functools.lru_cache(maxsize=512)
def _plan_section(section: str) -> bool:
    words = re.findall(r"[a-z][a-z'-]*", section)
    # (a "Test plan" lists the checks made: its ticked items are reports)
    return (
        not _PLAN_SECTIONS.isdisjoint(words[:4])
        and "done" not in words
        and _CHECK_WORDS.isdisjoint(words)
    )


_CHECK_WORDS = frozenset({"test", "tests", "testing", "verification", "validation", "qa"})


def _instruction_after_label(words: Sequence[str], h: int) -> bool:
    """A label that introduces instructions ("How to test:", "To reproduce:", "Steps:")
    whose value opens with an imperative, before the head. (A label that is an id or a
    name, "m7y: Apply mappings at ingest (closed)", titles a task: not instructions.)"""
    if ":" not in words[1:6]:
        return False
    colon = words.index(":")
    nxt = colon + 1
    label = [w for w in words[:colon] if w[:1].isalpha()]
    return (
        1 <= len(label) <= 4
        and not _INSTRUCTION_LABELS.isdisjoint(label)
        and nxt < h
        and words[nxt] in IMPERATIVES
        and nxt + 1 < len(words)
        and words[nxt + 1] not in (":", ".", ",")
        and not _finite_after_noun(words[nxt + 1])
    )


def _plan_label(words: Sequence[str], h: int) -> bool:
    if ":" not in words[1:5]:
        return False
    colon = words.index(":")
    label = [w for w in words[:colon] if w[:1].isalpha()]
    return colon < h and 1 <= len(label) <= 3 and label[0] in _PLAN_LABELS


def _opens_np(words: Sequence[str], x: int) -> bool:
    return x < len(words) and (words[x] == "of" or nounish(words[x]))


def _according_to(words: Sequence[str], lo: int) -> bool:
    """ "According to the log, the deploy succeeded", "Per the backend agent, phase 3 is
    complete", "Phase 3 complete (as reported by the QA agent)": what a source says,
    not the writer's own assertion."""
    if any(words[x] == "according" and words[x + 1] == "to" for x in range(lo - 1)):
        return True
    n = len(words)
    for x, w in enumerate(words):
        opens = x == 0 or words[x - 1] in HARD or words[x - 1] in (",", "(")
        if w == "per" and opens and any(y in _SOURCES for y in words[x + 1 : x + 5]):
            return True
        if (
            w == "reported"
            and x + 1 < n
            and words[x + 1] == "by"
            and (x == 0 or words[x - 1] in ("as", "(", ","))
        ):
            return True
    return False


# Headings of a table of figures that are not this run's: an earlier state, or another
# party's report.
_EARLIER_TABLES = PAST_CUES | frozenset({"baseline", "before", "previous", "upstream", "old"})
_OTHERS_TABLES = frozenset({"reported", "according", "their", "agent's", "team's", "user's"})


@functools.lru_cache(maxsize=512)
def _table_source(section: str) -> Blocker | None:
    heading = set(re.findall(r"[a-z][a-z'-]*", section))
    if not _EARLIER_TABLES.isdisjoint(heading):
        return "past"
    if not _OTHERS_TABLES.isdisjoint(heading) or ("per" in heading and heading & _SOURCES):
        return "reported"
    return None


# The words `_according_to` starts from.
_HEARSAY_CUES = frozenset({"according", "per", "reported"})


# Columns that say who did or reported each row of a table.
_WHO_COLUMNS = frozenset(
    {"agent", "agents", "subagent", "sub-agent", "owner", "assignee", "reporter", "source"}
    | {"author", "team", "reviewer", "worker"}
)


@functools.lru_cache(maxsize=512)
def _columns_source(columns: str) -> Blocker | None:
    names = set(re.findall(r"[a-z][a-z-]*", columns))
    return "reported" if not _WHO_COLUMNS.isdisjoint(names) else None


# Parties and their records that a "per …" names as the source of what follows.
_SOURCES = OTHER_PARTIES | frozenset(
    {"agent", "agents", "subagent", "subagents", "sub-agent", "bot", "report", "reports"}
    | {"log", "logs", "dashboard"}
)


def _finite_after_noun(word: str) -> bool:
    """Whether `word`, right after an opening word that could be a verb, shows that word
    to be a noun with its own verb: "Build succeeded", "Test passes", "Deploy is live"."""
    return (
        (word.endswith("ed") and len(word) > 4 and "-" not in word)
        or word
        in (
            "is",
            "are",
            "was",
            "were",
            "has",
            "have",
            "passes",
            "works",
            "runs",
        )
        or word in _PRESENT_OUTCOMES
    )


# Present verbs of an outcome after a noun that could open an imperative: "Build
# succeeds with 0 warnings", "Deploy completes in 40s", "Lint reports no problems".
_PRESENT_OUTCOMES = frozenset(
    {"succeeds", "fails", "completes", "finishes", "compiles", "returns", "reports", "exits"}
    | {"shows", "prints", "builds", "deploys", "loads", "starts", "responds"}
)


Review = Literal["hedged", "kind_unclear", "inability", "scope_unclear", "one_act_denied"]

# Words that hedge what follows: the writer does not assert it, nor deny it.
HEDGES = frozenset(
    {"seems", "seem", "seemed", "appears", "appear", "appeared", "apparently", "probably"}
    | {"likely", "presumably", "supposedly", "possibly", "perhaps", "maybe"}
)


def review_reason(words: Sequence[str], cand: Candidate) -> Review | None:
    """Why a candidate with no blocker is still for a person to decide, or None."""
    if cand.rule == "status_value":
        return "kind_unclear"
    if cand.rule == "closing_keyword":
        return "scope_unclear"
    if cand.rule in ("did_not_act", "nothing_changed"):
        # "I did not cancel the Friday cleaning", "No changes were made to your booking":
        # that one act on someone else's system did not happen, while the judge of a
        # "nothing happened" claim counts every effect of the run (the rescheduling the
        # same message reports would contradict it)
        return "one_act_denied"
    if cand.rule == "unable":
        # "I can't submit the form", "I cannot push without credentials": a statement of
        # what the writer is unable to do; whether it reports that nothing happened or
        # only a limit is for a person to read.
        return "inability"
    h = cand.head
    if _HEDGE_CUES.isdisjoint(words):
        return None
    start = h
    while start > 0 and words[start - 1] not in HARD:
        start -= 1
    for y in range(start, h):
        w = words[y]
        if w in HEDGES or (w in ("looks", "look", "looked") and words[y + 1] in ("like", "as")):
            return "hedged"
        if w in _BELIEFS and y > 0 and words[y - 1] in ("i", "we"):
            return "hedged"  # "I believe the issue is fixed", "We think the tests pass"
    return None


# Verbs of belief that, said by the writer before a claim, hedge it.
_BELIEFS = frozenset({"believe", "think", "expect", "assume", "suspect", "guess", "suppose"})


_REPORTING = SPEECH_VERBS | HEARSAY_VERBS

_HEDGE_CUES = HEDGES | {"looks", "look", "looked"} | _BELIEFS


# Labels of a field whose value is content written for someone, not the writer's report:
# "Description: A reply was sent to the client …" describes a ticket. (Not "Subject:" or
# "Title:": an agent's own mail subject, "Subject: Completed bead ke5", is its report.)
FIELD_LABELS = frozenset({"description", "body", "content"})


# A section that holds a text written for someone else to read: a draft, a template, a
# proposed message. What it says is the message's, not the writer's report.
_FOR_SOMEONE = frozenset({"draft", "drafted", "proposed", "suggested", "sample", "template"})
_MESSAGE_WORDS = frozenset(
    {"reply", "message", "email", "response", "comment", "post", "announcement", "note"}
    | {"text", "body", "copy", "letter", "tweet", "update"}
)


@functools.lru_cache(maxsize=512)
def _written_for_someone(section: str) -> bool:
    words = set(re.findall(r"[a-z]+", section))
    return not _FOR_SOMEONE.isdisjoint(words) and not _MESSAGE_WORDS.isdisjoint(words)


def _field_content(words: Sequence[str], lo: int) -> bool:
    if ":" not in words[:lo]:
        return False
    colon = words.index(":")
    label = [w for w in words[:colon] if w[:1].isalpha()]
    return 0 < len(label) <= 3 and label[-1] in FIELD_LABELS
