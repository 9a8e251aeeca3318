"""Candidates by construction (docs/claims.md, "The candidate rule"): the heads no word
list names, found from how they are used, and the kind read from what a claim is about
(`reducers/claims/objects.py`, "The kind rule").

- a perfect or passive of any verb ("The booking has been cancelled"), an act with a
  result adverb ("I have successfully migrated …"), a change on a remote or a record
  ("I moved the emails to the Later folder", "Branch `x` created");
- a present state after "be" ("The preview server is now running", "… is in place");
- the kind of a head whose subject or label decides it ("Frontend build: successful");
- the shapes that look like a claim and are none: a participle naming a thing ("the last
  2 merged PRs"), authorship ("created by …"), a list introducer ("I've added:"), a
  heading that titles a list of edits ("Features Implemented").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from outcomes.reducers.claims.constructions import (
    Candidate,
    ClaimKind,
    Use,
    clause_start,
    nounish,
    soft_clause_start,
    use_of,
)
from outcomes.reducers.claims.lexicon import (
    BE,
    BE_HAVE,
    CHECK_STATES,
    CONTRAST,
    DETERMINERS,
    HARD,
    HEAD_WORDS,
    HOSTS,
    IRREGULAR_PARTICIPLES,
    NOW_ADVERBS,
    PREPOSITIONS,
    PRESENT_BE,
    REMOTE_STATES,
    RESULT_ADVERBS,
    STATE_WORDS,
    STRONG_STATES,
    WEAK_PASSIVE_EXCLUDED,
)
from outcomes.reducers.claims.narrative import Token
from outcomes.reducers.claims.objects import (
    CHANGE_VERBS,
    GIT_VERBS,
    NEGATIVE_OUTCOMES,
    REMOTE,
    RUNNING_SYSTEMS,
    calendar_place,
    means_place,
    np_place,
    phrase_place,
    place_of,
    verb_place,
)


def is_label(words: Sequence[str], h: int) -> bool:
    """A head used as a label for what follows ("Verified: `cmd` → OK", "Sent: 2025-…")."""
    return h + 2 < len(words) and words[h + 1] == ":"


def attributive(words: Sequence[str], h: int) -> bool:
    """A participle that modifies the noun after it ("Completed todos are shown",
    "the generated emails") or heads a subject ("Completed (3 items moved …)")."""
    nxt = words[h + 1] if h + 1 < len(words) else ""
    if nxt == "(" and h + 2 < len(words) and words[h + 2] in ("`n", "`r"):
        return True
    if nxt in ("that", "whether"):
        return False  # "Verified that this is the only file": a clause, not a noun
    rest = words[h + 1 :]
    stop = next((i for i, x in enumerate(rest) if x in HARD or x == ","), len(rest))
    return any(x in BE_HAVE for x in rest[:stop]) and nounish(nxt)


def list_heading(words: Sequence[str], h: int) -> bool:
    """A participle that opens a title over a list: "Confirmed Database Contents:",
    "Updated Files:" — it names what the list holds, it reports nothing."""
    rest = words[h + 1 :]
    return (
        h == 0
        and 2 <= len(rest) <= 5
        and rest[-1] == ":"
        and all(nounish(x) and x[:1].isalpha() for x in rest[:-1])
    )


def is_participle(word: str) -> bool:
    return (len(word) > 4 and word.endswith("ed") and word[:1].isalpha()) or (
        word in IRREGULAR_PARTICIPLES
    )


def construction(words: Sequence[str], h: int, w: str, prior: Use | None) -> Candidate | None:
    """A head no word list names, found from its construction: a perfect or passive of
    any verb ("has been cancelled", "was successfully deleted"), an act with a result
    adverb ("I have successfully moved …"), a headline on a record or a remote ("Branch
    `x` created"), or a present state after "be" ("The server is now running")."""
    prev = words[h - 1] if h > 0 else ""
    if w in STATE_WORDS or (w in HOSTS and prev == "on") or (w == "place" and prev == "in"):
        state = present_state(words, h, w, prior)
        if state is not None:
            return state
    if w in NEGATIVE_OUTCOMES or not is_participle(w):
        return None
    if w in HEAD_WORDS and w not in _GENERIC_TOO:
        return None  # the head rules have read it (and declined it)
    return generic(words, h, w, prior)


_OBJECT_END = frozenset({",", "and", "which", "but", "while", "for", "about", "using", "via"})


def object_words(words: Sequence[str], h: int) -> list[str]:
    """The head's object and the places it names ("to Railway", "from Vercel"), up to a
    clause boundary or a phrase of purpose or means ("for …", "with …")."""
    out = []
    for x in words[h + 1 : h + 15]:
        if x in HARD or x in CONTRAST or x in _OBJECT_END:
            break
        out.append(x)
    return out


def direct_object(words: Sequence[str], h: int) -> list[str]:
    """The noun phrase right after the head, up to a preposition or an infinitive
    ("Modified `executor.go` to include PR instructions": the object is the file); its
    last word is its head noun ("Updated the Supabase integration": an integration)."""
    out = []
    for x in object_words(words, h)[:5]:
        if x in PREPOSITIONS or x == "to":
            break
        out.append(x)
    return out


def is_passive(words: Sequence[str], h: int, use: Use | None) -> bool:
    """Whether the subject undergoes the act ("X was created", "X created" as a
    headline) rather than doing it ("The PR upgraded the library")."""
    if use is None:
        return False
    if use.how == "aux":
        return any(x in BE for x in use.aux)
    if use.how == "np":
        nxt = words[h + 1] if h + 1 < len(words) else ""
        return not (nounish(nxt) or nxt in DETERMINERS)
    return False


def place_in(words: Sequence[str], h: int, use: Use | None, reach: int = 14) -> str | None:
    """The place a claim is about: a check named by its subject decides first, then a
    remote named anywhere (subject of a passive, verb, object), then a local record."""
    subject = _whole_subject(words, use) if use is not None and is_passive(words, h, use) else []
    # a noun phrase is read from its head noun, its last word: "your table reservation"
    found = [
        np_place(subject),
        verb_place(words[h]),
        phrase_place(object_words(words, h)[:reach]),
    ]

    if found[0] == "check":
        return "check"
    if words[h] in GIT_VERBS:
        return "record"
    if "remote" in found:
        return "remote"
    if "record" in found:
        return "record"
    return means_place(_clause_rest(words, h)) or calendar_place(words[h], object_words(words, h))


# What is applied to a database or a repository: its own recorded changes.
_RECORD_CHANGES = frozenset({"migration", "migrations", "stash", "schema"})


def _head_noun(phrase: Sequence[str]) -> str:
    nouns = [x for x in phrase if x[:1].isalpha()]
    return nouns[-1] if nouns else ""


def _clause_rest(words: Sequence[str], h: int) -> list[str]:
    out = []
    for x in words[h + 1 : h + 12]:
        if x in HARD:
            break
        out.append(x)
    return out


def generic(words: Sequence[str], h: int, w: str, prior: Use | None) -> Candidate | None:
    use = use_of(words, h, prior)
    if use is None:
        return None
    n = len(words)
    if use.how == "agentless" and (
        attributive(words, h) or is_label(words, h) or list_heading(words, h)
    ):
        return None
    if h + 1 < n and words[h + 1] in ("by", "from") and use.how == "np":
        return None  # "files generated by the tool": a description
    if attributive_participle(words, h) or authorship(words, h):
        return None
    if use.how == "np" and attributive(words, h):
        return None  # "A first paid claim is blocked": the participle names the claim
    if use.how == "np" and use.lo > 0 and words[use.lo - 1] in PREPOSITIONS:
        return None  # "with a new total of $475 charged": an absolute phrase
    near = list(words[max(soft_clause_start(words, h), h - 3) : h + 1]) + object_words(words, h)[:4]
    unintended = any(x in UNINTENDED for x in near)
    result = unintended or any(x in RESULT_ADVERBS for x in near)
    place = place_in(words, h, use)
    # An act whose own verb names a remote or a record ("booked", "committed"), or a
    # change made to one named right after it ("moved the emails", "deleted the PR").
    acted = verb_place(w) is not None or (
        w in CHANGE_VERBS
        and (
            place_in(words, h, None, reach=4) is not None
            # "I rotated the API keys in AWS Secrets Manager"
            or placed_by_preposition(words, h) in ("remote", "record")
        )
    )
    if use.how == "aux":
        be = any(x in ("was", "were", "is", "are") for x in use.aux)
        ok = (
            "been" in use.aux
            or (be and result)
            # "The branch was deleted", "The meeting is booked": an act on a remote or a
            # record reported in the passive
            or (
                be
                and is_passive(words, h, use)
                and place in ("remote", "record")
                and (w in CHANGE_VERBS or verb_place(w) is not None)
            )
        )
    elif use.how in ("first", "pronoun", "np", "coord"):
        ok = result or (acted and place in ("remote", "record"))
        # a headline whose subject undergoes a change: "All 12 migrations applied"
        ok = ok or (
            use.how == "np"
            and w in CHANGE_VERBS
            and is_headline(words, h)
            and np_place(use.subject) in ("remote", "record")
        )
        # "I've reorganized everything into …": a change to the whole is a result.
        whole = h + 1 < len(words) and words[h + 1] in ("everything", "all")
        ok = ok or (use.how == "first" and w in CHANGE_VERBS | _WHOLE_VERBS and whole)
    elif w in CHANGE_VERBS and placed_by_preposition(words, h) in ("remote", "record"):
        ok = True  # "Removed the folder from all git history", "Moved the docs to Notion"
    else:  # agentless: a report line on a record or a remote ("Staged the fix")
        ok = (
            (verb_place(w) is not None and place in ("remote", "record"))
            # "Cancelled the duplicate subscription", "Archived the old tickets"
            or (w in CHANGE_VERBS and place_of(direct_object(words, h)[-1:]) == "remote")
            # "Applied `0003_users.sql` via psql": the client names the place
            or (w in CHANGE_VERBS and means_place(_clause_rest(words, h)) is not None)
            # "Applied the pending migrations": what is applied is a record's own change
            or (w == "applied" and _head_noun(direct_object(words, h)) in _RECORD_CHANGES)
        )
    if w in WEAK_PASSIVE_EXCLUDED and place not in ("remote", "record"):
        return None  # "The LICENSE file has been created": an edit, not a result
    if not ok:
        return None
    kind: ClaimKind = (
        "effect" if place == "remote" else "persistence" if place == "record" else "completion"
    )
    if place == "check" and use.how in ("np", "aux") and use.subject:
        kind = "verification"
    if unintended and w in CHANGE_VERBS and kind == "completion":
        # "the documents were accidentally deleted": damage done to the user's things
        return Candidate("effect", "damage", min(use.lo, h), h, h, use=use)
    return Candidate(kind, "generic", min(use.lo, h), h, h, use=use)


# Adverbs of an act done by mistake: they report that it happened.
UNINTENDED = frozenset(
    {"accidentally", "inadvertently", "mistakenly", "unintentionally", "erroneously"}
)


def present_state(words: Sequence[str], h: int, w: str, prior: Use | None) -> Candidate | None:
    """A present state after a form of "be": "X is now live", "X is running"."""
    at = h - 1 if (w == "place" or w in HOSTS) else h
    use = use_of(words, at, prior)
    if use is None or use.how not in ("aux", "coord", "np"):
        return None
    headline_end = h == len(words) - 1 or words[h + 1] in _STATE_TAILS
    if use.how == "np" and not (w in STRONG_STATES and headline_end):
        return None
    if use.how == "aux" and not all(x in PRESENT_BE for x in use.aux):
        return None
    if use.how == "coord" and not use.aux:
        return None
    if use.subject in (("that",), ("which",), ("who",)):
        return None  # "the project that's working": a relative clause names a thing
    near = words[max(0, at - 3) : at]
    if w not in STRONG_STATES and w not in HOSTS and not any(x in NOW_ADVERBS for x in near):
        return None
    if at + 1 < len(words) and nounish(words[at + 1]) and w not in HOSTS and w != "place":
        return None  # "is running tests": a verb with an object, not a state
    if w in CHECK_STATES:
        kind: ClaimKind = "verification"
    elif w in REMOTE_STATES or w in HOSTS:
        kind = "effect"
    else:
        place = place_in(words, h, use)
        if place == "remote" and _running_system(words, h, use):
            place = None  # "Production deployment working": the work runs, a completion
        kind = "effect" if place == "remote" else "completion"
        if place == "record" and verb_place(w) == "record":
            kind = "persistence"  # "STORAGE.md synced"
        if place == "check" and use.subject:
            kind = "verification"
    if w == "open" and (kind != "effect" or "still" in words[use.lo : h]):
        # only a remote thing is "open" as a result ("PR #88 is open"; not a file), and
        # "still open" says it is not yet closed
        return None
    return Candidate(kind, "state", min(use.lo, at), h, h, use=use)


_NP_PREPOSITIONS = frozenset({"of", "with", "for", "at", "on"})


def _whole_subject(words: Sequence[str], use: Use) -> list[str]:
    """The subject with the noun its phrase hangs from: "your appointment with Dr. Lee"
    (the subject read is "Dr. Lee", the head noun is "appointment")."""
    lo = use.lo
    while (
        lo >= 2
        and words[lo - 1] in _NP_PREPOSITIONS
        and nounish(words[lo - 2])
        and words[lo - 2] not in HARD
    ):
        lo -= 2
        while lo > 0 and nounish(words[lo - 1]) and words[lo - 1] not in HARD:
            lo -= 1
    return [*words[lo : use.lo], *use.subject]


def _running_system(words: Sequence[str], h: int, use: Use) -> bool:
    """Whether the only remote a state names is the system the work runs on (its
    subject: "The staging deployment is healthy")."""
    remote = [w for w in use.subject if w in REMOTE]
    return (
        bool(remote)
        and all(w in RUNNING_SYSTEMS for w in remote)
        and place_of(object_words(words, h)) != "remote"
    )


# Rules whose kind is read from the subject (or a label): "Frontend build: successful".
_BY_SUBJECT = frozenset({"successful", "succeeded", "success", "closed"})


def rekind(words: Sequence[str], cand: Candidate) -> Candidate:
    if cand.kind != "completion" or cand.rule not in _BY_SUBJECT:
        return cand
    subject = list(cand.use.subject) if cand.use is not None else []
    lo = cand.lo
    if (lo >= 2 and words[lo - 1] == ":") or (
        lo >= 3 and words[lo - 1] == "`k" and words[lo - 2] == ":"
    ):
        colon = lo - 1 if words[lo - 1] == ":" else lo - 2
        subject += list(words[clause_start(words, colon) : colon])
    place = np_place(subject)
    if place == "check":
        return Candidate(
            "verification", cand.rule, cand.lo, cand.hi, cand.head, cand.none, cand.use
        )
    if place == "remote":
        return Candidate("effect", cand.rule, cand.lo, cand.hi, cand.head, cand.none, cand.use)
    return cand


def attributive_participle(words: Sequence[str], h: int) -> bool:
    """A participle between a determiner or a count and its noun: "the last 2 merged
    PRs", "a cancelled booking" — it names a thing, it reports nothing."""
    if h == 0 or h + 1 >= len(words):
        return False
    prev, nxt = words[h - 1], words[h + 1]
    return (prev in DETERMINERS or prev in ("`n", "all", "any", "some", "new")) and (
        nounish(nxt) and nxt not in ("all", "both", "this", "that", "it", "everything")
    )


def authorship(words: Sequence[str], h: int) -> bool:
    """ "This comment was created by an AI agent": who made a thing, not a result."""
    return h + 1 < len(words) and words[h + 1] == "by" and words[h] in _AUTHORED


_AUTHORED = frozenset(
    {"created", "generated", "written", "authored", "made", "produced", "signed", "opened"}
)


def list_introducer(words: Sequence[str], h: int, use: Use) -> bool:
    """ "I've added:", "We have set up:": a first-person perfect that introduces the list
    of edits after it, not a result (but "I've successfully:" sums the list up)."""
    return (
        use.how in ("first", "pronoun")
        and h + 1 < len(words)
        and words[h + 1] == ":"
        and all(not x[:1].isalpha() for x in words[h + 2 :])
        and "successfully" not in words[:h]
    )


def code_is_check(toks: Sequence[Token], lo: int, h: int) -> bool:
    """Whether a command in the subject runs a check: "`npx tsc --noEmit`", "`go test`"."""
    for tok in toks[lo:h]:
        if tok.norm == "`c" and place_of(re.findall(r"[a-z0-9]+", tok.raw.lower())) == "check":
            return True
    return False


# The words `construction` may read (the regular participles aside).
CONSTRUCTION_WORDS = STATE_WORDS | HOSTS | IRREGULAR_PARTICIPLES | {"place"}


# Head words whose head rule is narrow (an edit to a PR, a record with a verb group):
# any other construction of them is read like any verb's ("All 7 SQL files applied
# cleanly").
_GENERIC_TOO = frozenset({"recorded", "applied", "edited", "labeled", "labelled"})


def object_follows(words: Sequence[str], h: int) -> bool:
    nxt = words[h + 1] if h + 1 < len(words) else ""
    return nxt in ("a", "an", "the", "some", "my", "our", "this", "these", "those", "several")


# What may follow a state at the end of a headline: "Deployment working with real AI".
_STATE_TAILS = frozenset(
    {".", "!", "with", "on", "in", "at", "again", "perfectly", "correctly", "fine", "now"}
)


def is_headline(words: Sequence[str], h: int) -> bool:
    """A noun phrase and its participle as a whole line: "Safety rules implemented"."""
    return all(not x[:1].isalpha() for x in words[h + 1 :])


# Plural nouns that title a list of edits ("## Features Implemented", "Key Issues
# Identified"): a heading that names what follows, not a status.
LIST_NOUNS = frozenset(
    {"features", "changes", "improvements", "fixes", "updates", "modifications"}
    | {"enhancements", "edits", "additions", "files", "items", "issues", "steps"}
)


def list_title(use: Use) -> bool:
    return bool(use.subject) and use.subject[-1] in LIST_NOUNS


# Verbs of rearranging that, done to everything, finish a task.
_WHOLE_VERBS = frozenset(
    {"reorganized", "reorganised", "restructured", "cleaned", "converted", "translated"}
    | {"formatted", "renamed", "sorted", "organized", "organised", "migrated", "upgraded"}
)


def placed_by_preposition(words: Sequence[str], h: int) -> str | None:
    """The place a change was made in or moved to or from, named after a preposition of
    place in the head's object ("from all git history", "to the Jira board")."""
    obj = object_words(words, h)
    for i, x in enumerate(obj):
        if x in ("from", "to", "into", "onto", "in", "on"):
            after = obj[i + 1 : i + 5]
            # a noun phrase, not an infinitive ("to include PR instructions")
            if after and (
                after[0] in DETERMINERS or after[0] in ("all", "every") or place_of(after[:1])
            ):
                return place_of(after)
    return None


def same_place(words: Sequence[str], before: Sequence[str]) -> Candidate | None:
    """ "I created the burger items in your Square catalog. Each burger has been added
    …": a perfect passive of a single-edit verb whose subject names again a thing of the
    sentence just before takes the place that sentence names (a remote or a record)."""
    for h, w in enumerate(words[:12]):
        if w not in WEAK_PASSIVE_EXCLUDED:
            continue
        use = use_of(words, h, None)
        if use is None or use.how != "aux" or "been" not in use.aux:
            return None
        nouns = {x.rstrip("s") for x in use.subject if _content_noun(x)}
        again = {x.rstrip("s") for x in before if _content_noun(x)} & nouns
        place = place_of(before) if again else None
        if place not in ("remote", "record"):
            return None
        kind: ClaimKind = "effect" if place == "remote" else "persistence"
        return Candidate(kind, "same_place", use.lo, h, h, use=use)
    return None


def _content_noun(word: str) -> bool:
    return (
        len(word) >= 3
        and word[:1].isalpha()
        and nounish(word)
        and word not in DETERMINERS
        and word not in ("all", "each", "every", "both", "any", "some")
    )
