"""The head rules: for each state word, the constructions in which it asserts a claim
and of which kind, and a JSON answer's status flag. docs/claims.md, "The grammar",
states them. Words no head rule reads go to the constructions of
`reducers/claims/results.py`; the rules that read a whole sentence are in
`reducers/claims/statuses.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

from outcomes.reducers.claims.constructions import (
    Candidate,
    ClaimKind,
    Use,
    clause_start,
    nounish,
    skip_adverbs,
    subject_start,
    use_of,
)
from outcomes.reducers.claims.lexicon import (
    ADJECTIVAL,
    BE,
    BRANCH_WORDS,
    BRANCHY,
    CONTRAST,
    DEED_SUBJECTS,
    DETERMINERS,
    EFFECT_HEADS,
    HARD,
    HEAD_WORDS,
    HOSTS,
    NEEDS_REMOTE,
    OPENERS,
    OTHER_KIND_NOUNS,
    PERSIST_HEADS,
    PRESENT_DEEDS,
    PUSH_NOUNS,
    RECORD_NOUNS,
    REMOTE_EDITS,
    REMOTE_NOUNS,
    REPORTER_SUBJECTS,
    REPORTERS,
    RESULT_ING,
    RUNNABLE,
    STATE_WORDS,
    STRONG,
    SUBJECT_NOUNS,
    VERIFY_HEADS,
    VERIFY_NOUNS,
    WEAK,
    WEAK_PASSIVE_EXCLUDED,
)
from outcomes.reducers.claims.narrative import Sentence, Token
from outcomes.reducers.claims.objects import (
    CHANGE_VERBS,
    OTHER_PARTIES,
    REMOTE,
    TRANSACTIONS,
    np_place,
    phrase_place,
    place_of,
)
from outcomes.reducers.claims.results import (
    CONSTRUCTION_WORDS,
    attributive,
    attributive_participle,
    authorship,
    code_is_check,
    construction,
    direct_object,
    is_headline,
    is_label,
    is_passive,
    list_heading,
    list_introducer,
    list_title,
    object_follows,
    object_words,
    place_in,
    placed_by_preposition,
    rekind,
)


def _after(words: Sequence[str], h: int, n: int) -> list[str]:
    return list(words[h + 1 : h + 1 + n])


def _has_remote(words: Sequence[str], lo: int, hi: int, wide: bool = False) -> bool:
    """A review object (REMOTE_NOUNS: drafts, comments, tags…) in `words[lo:hi]`; with
    `wide`, also anything the kind rule places outside the workspace (tickets, bookings,
    messages…)."""
    return any(w in REMOTE_NOUNS or (wide and w in REMOTE) for w in words[max(0, lo) : hi])


def _object_is_branch(words: Sequence[str], h: int) -> bool:
    nxt = [w for w in _after(words, h, 4) if w not in ("the", "latest", "in", "into", "`k")]
    # "Merged into main", "Merged into the release branch"
    return bool(nxt) and (nxt[0] in BRANCH_WORDS or nxt[1:2] in (["branch"], ["branches"]))


def _subject_noun(use: Use | None, words: Sequence[str], h: int) -> str:
    """The last noun of the subject; "it" is read as the sentence's first noun of a kind
    that matters ("The script printed 'Done', which shows it completed")."""
    subject = [w for w in (use.subject if use else ()) if w[:1].isalpha()]
    noun = subject[-1] if subject else ""
    if noun == "it":
        for w in words[:h]:
            if w in SUBJECT_NOUNS:
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


def head_candidates(words: Sequence[str], toks: Sequence[Token]) -> list[Candidate]:
    out: list[Candidate] = []
    prior: Use | None = None
    n = len(words)
    for h, w in enumerate(words):
        if w in HARD or w in CONTRAST:
            prior = None
        cand = _head(words, toks, h, w, prior) if w in HEAD_WORDS or w.endswith("-ready") else None
        if cand is None and (w in CONSTRUCTION_WORDS or (w.endswith("ed") and len(w) > 4)):
            cand = construction(words, h, w, prior)
        if cand is not None:
            cand = rekind(words, cand)
            out.append(cand)
            placed = _checked_place(words, h, cand)
            if placed is not None:
                out.append(placed)
            if cand.use is not None and cand.use.how != "coord":
                prior = cand.use
        elif prior is None and h == 0 and w in OPENERS:
            prior = Use("agentless", 0, (), ())
        elif prior is None and w in _FIRST_PERSON and h == clause_start(words, h):
            prior = Use("pronoun", h, (), (_FIRST_PERSON[w],))
        elif prior is None and w.endswith("ed") and n > 1 and h == clause_start(words, h):
            prior = Use("agentless", h, (), ())
    return out


def _checked_place(words: Sequence[str], h: int, cand: Candidate) -> Candidate | None:
    """ "The rows are confirmed to be in the database": a check and, second, a claim
    about where the thing now is (a record: persistence; a remote: an effect)."""
    if cand.kind != "verification" or words[h] not in ("verified", "confirmed", "validated"):
        return None
    after = _after(words, h, 8)
    if after[:2] != ["to", "be"] or after[2:3] not in (["in"], ["on"], ["at"]):
        return None
    place = place_of(after[3:])
    if place not in ("record", "remote"):
        return None
    kind: ClaimKind = "persistence" if place == "record" else "effect"
    return Candidate(kind, "placed", cand.lo, min(h + 3, len(words) - 1), h, use=cand.use)


def _head(
    words: Sequence[str], toks: Sequence[Token], h: int, w: str, prior: Use | None
) -> Candidate | None:
    nxt = words[h + 1] if h + 1 < len(words) else ""
    prev = words[h - 1] if h > 0 else ""
    # "all set", "set up", "out of draft", "handed off", "marked ready" are two-word heads.
    if w == "set" and prev == "all":
        return Candidate("completion", "all_set", h - 1, h, h)
    if w == "set" and nxt == "up":
        use = use_of(words, h, prior)
        if use is None or list_introducer(words, h + 1, use):
            return None
        # "set up X" takes its kind from X, as other change verbs do: a cron job or a
        # webhook is outside the workspace (an effect), a database row a record.
        place = place_in(words, h + 1, None, reach=6)
        if place is None and is_passive(words, h, use):
            place = np_place(use.subject)  # "The cron job is set up to run nightly"
        kind: ClaimKind = (
            "effect" if place == "remote" else "persistence" if place == "record" else "completion"
        )
        return _built(kind, "set_up", use, h, h + 1)
    if w == "out" and _after(words, h, 2) == ["of", "draft"]:
        use = use_of(words, h, prior)
        return _built("effect", "out_of_draft", use, h, h + 2) if use else None
    if w == "handed" and nxt == "off":
        use = use_of(words, h, prior)
        if use and _has_remote(words, use.lo, h):
            return _built("effect", "handed_off", use, h, h + 1)
        return None
    if w == "marked" and "ready" in _after(words, h, 2):
        use = use_of(words, h, prior)
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
        return _clean(words, toks, h, prior)
    if w in ("live", "serves"):
        return _live(words, h, w, prior)
    if (
        w in REMOTE_EDITS
        and _has_remote(words, h + 1, h + 6)
        # what was edited is the remote thing, not a text about it ("Updated the
        # cancellation email copy", "Updated the PR template")
        and phrase_place(object_words(words, h)[:6]) == "remote"
    ):
        use = use_of(words, h, prior)
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
        use = use_of(words, h, prior)
        return _built("effect", "damage", use, h, h + 2) if use else None
    return None


def _built(kind: ClaimKind, rule: str, use: Use | None, h: int, hi: int) -> Candidate:
    lo = min(use.lo, h) if use is not None else h
    return Candidate(kind, rule, lo, hi, h, use=use)


def _completion(words: Sequence[str], h: int, w: str, prior: Use | None) -> Candidate | None:
    use = use_of(words, h, prior)
    prev = words[h - 1] if h > 0 else ""
    if w == "success":
        # "This represents a major success", "… = success" (a check's outcome).
        if prev == "=":
            return Candidate("verification", "equals_success", max(0, h - 2), h, h)
        if any(x in ("represents", "was", "is") for x in words[max(0, h - 3) : h]):
            return Candidate("completion", "success", max(0, h - 3), h, h)
        if [x for x in words if x[:1].isalpha()] == ["success"] and ":" not in words:
            return Candidate("completion", "success", h, h, h)  # "Success!" as a line
        return None
    if use is None:
        return None
    if list_introducer(words, h, use) or (
        _count_label(words, h)
        and not (use.how == "np" and _subject_noun(use, words, h) in OTHER_KIND_NOUNS)
    ):
        return None  # a tally ("Tasks completed: 3/5"), unless an operation on the world
        # reports its counts ("Terraform apply completed: 3 added, 1 changed")
    if w == "done" and use.how in ("first", "pronoun", "aux") and object_follows(words, h):
        return None  # "I've done a thorough analysis": the verb "do", not the state
    if (
        w in ("done", "finished")
        and use.how in ("first", "pronoun", "aux")
        and h + 1 < len(words)
        and words[h + 1].endswith("ing")
        and len(words[h + 1]) > 5
    ):
        return None  # "I'm done pretending": the speaker stops an activity
    if prev in ("\u2192", "as"):  # "In Progress → Completed", "mark … as complete"
        return None
    if use.how == "agentless" and (
        attributive(words, h)
        or (is_label(words, h) and (w not in STRONG or _count_label(words, h)))
        or w == "installed"
    ):
        return None
    if use.how == "agentless" and w in ADJECTIVAL and h + 1 < len(words) and nounish(words[h + 1]):
        return None  # "(done status)": an adjective before its noun, not a report
    noun = _subject_noun(use, words, h)
    kind: ClaimKind = "completion"
    if w in ("complete", "completed") and noun in OTHER_KIND_NOUNS:
        kind = _kind_by_subject(noun, "completion")
    if w == "completed" and noun in RUNNABLE:
        kind = "verification"  # "the script completed": it ran
    if w in ("complete", "completed", "done", "finished") and noun in TRANSACTIONS:
        kind = "effect"  # "Your order is complete", "Checkout complete"
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
            or (use.how == "np" and is_headline(words, h) and not list_title(use))
        )
        return _built(kind, w, use, h, h) if ok else None
    place = place_in(words, h, use) if w in WEAK and w in CHANGE_VERBS else None
    if place in ("remote", "record") and use.how != "agentless":
        if attributive_participle(words, h):
            return None
        # A change verb on a remote or a record: "Both tasks were successfully created
        # in Jira", "your reservation has been updated", "I've upgraded the booking".
        ok = (
            "been" in use.aux
            or successfully
            or use.how in ("first", "pronoun", "np", "coord")
            or is_passive(words, h, use)  # "The Helm release was upgraded"
        )
        kind = "effect" if place == "remote" else "persistence"
        return _built(kind, w, use, h, h) if ok else None
    if w in ("achieved", "accomplished", "integrated", "licensed", "analyzed", "analysed"):
        ok = use.how == "first" and use.lo == clause_start(words, h)
    elif use.how == "first":
        ok = use.lo == clause_start(words, h) or successfully
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
    use = use_of(words, h, prior)
    if use is None:
        return None
    if use.how == "agentless" and nxt not in ("for", "to", "", ".", "!"):
        return None
    if (
        use.how in ("agentless", "first", "pronoun")
        and nxt == "to"
        and _after(words, h, 2)[-1:]
        and _after(words, h, 2)[-1] in _NEXT_STEPS
    ):
        return None  # "Ready to implement the following changes": the speaker's next step
    return _built("completion", "ready", use, h, h)


# Verbs of the speaker's own next step after "ready to": an offer or a plan, nothing done
# ("Ready to proceed", "I'm ready to start"), unlike "Ready to use", "ready to merge".
_NEXT_STEPS = frozenset(
    {"proceed", "implement", "start", "begin", "continue", "help", "assist", "tackle"}
    | {"work", "move", "dive", "apply", "make", "write", "build", "create", "code"}
)


def _present_deed(words: Sequence[str], h: int, prior: Use | None) -> Candidate | None:
    use = use_of(words, h, prior)
    ref = _issue_ref(words, h)
    if ref is not None and (use is None or use.how == "agentless"):
        # "Resolves #123" as a line of its own: a forge's closing keyword, which closes
        # the issue when the change merges; whether the text says it is fixed now is
        # for a person to read (review `scope_unclear`).
        if h == clause_start(words, h):
            return Candidate("completion", "closing_keyword", h, ref, h)
        return None
    # "The new retry helper resolves #123": this run's change named as what fixes the
    # issue it references (not a party: "The user closes #12")
    if (
        ref is not None
        and use is not None
        and use.how in ("np", "pronoun")
        and _subject_noun(use, words, h) not in OTHER_PARTIES
    ):
        return _built("completion", "deed", use, h, ref)
    if use is None:
        j = skip_adverbs(words, h - 1, 0)
        if j >= 0 and words[j] == "which":
            return Candidate("completion", "deed", h, min(h + 2, len(words) - 1), h)
        return None
    noun = _subject_noun(use, words, h)
    if noun in DEED_SUBJECTS and use.how in ("np", "pronoun"):
        return _built("completion", "deed", use, h, min(h + 1, len(words) - 1))
    return None


# Verbs that show a "confirmed X …" to take a clause ("I confirmed the order of operations
# matches the spec"), a check, rather than a thing confirmed.
_CLAUSE_VERBS = frozenset(
    {"is", "are", "was", "were", "has", "have", "matches", "match", "works", "work"}
    | {"passes", "pass", "contains", "returns", "holds", "exists", "succeeds", "behaves"}
    | {"appears", "shows", "remains", "lists", "includes", "displays"}
)


def _clause_follows(obj: Sequence[str]) -> bool:
    return not _CLAUSE_VERBS.isdisjoint(obj)


def _issue_ref(words: Sequence[str], h: int) -> int | None:
    """The issue reference right after a deed ("fixes #12", "resolves issue #12")."""
    nxt = h + 2 if words[h + 1 : h + 2] == ["issue"] else h + 1
    return nxt if nxt < len(words) and words[nxt] == "`#" else None


# What a check of existence is no pass about: "confirmed that test coverage exists".
_TEST_THINGS = frozenset({"test", "tests", "coverage", "suite", "suites", "spec", "specs"})


def _reporter(
    words: Sequence[str], toks: Sequence[Token], h: int, prior: Use | None
) -> Candidate | None:
    use = use_of(words, h, prior)
    rest = words[h + 1 : h + 12]
    exists = next((i for i, x in enumerate(rest) if x in ("exists", "exist", "present")), None)
    if exists is not None and any(x in _TEST_THINGS for x in rest[:exists]):
        return None  # that tests exist is no pass (that a file is present is a check)
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
    words: Sequence[str], toks: Sequence[Token], h: int, w: str, prior: Use | None
) -> Candidate | None:
    nxt = words[h + 1] if h + 1 < len(words) else ""
    prev = words[h - 1] if h > 0 else ""
    if w == "ok" and toks[h].norm != "ok":
        return None
    if w in ("verified", "confirmed", "validated") and nxt == "as":
        return None  # "verified as legitimate": a property of the input, not a check
    if prev == "`k" and h >= 2 and words[h - 2] in ("=", ":"):
        prev = words[h - 2]
    reach = 3
    if prev == "all" and h >= 2 and words[h - 2] in ("=", ":"):
        prev, reach = words[h - 2], 4  # "Tests: all green", "Checks: all passed"
    if prev in ("=", ":") and w in ("pass", "passed", "ok", "green", "success"):
        return Candidate("verification", "label_pass", max(0, h - reach), h, h)
    use = use_of(words, h, prior)
    if use is None:
        return None
    if w == "tested" and not (use.how in ("aux", "first", "coord") and use.aux):
        return None
    if w in ("passing", "verified", "validated", "tested", "confirmed") and attributive(words, h):
        return None
    if use.how == "agentless" and (is_label(words, h) or list_heading(words, h)):
        return None
    if (
        w in ("pass", "passes", "passed")
        and nxt in ("as", "to", "into", "via", "through", "along")
        and _after(words, h, 2)[1:] not in (["expected"], ["intended"], ["before"])
    ):
        return None  # "now passed as CLI flags": handed over, not a result
    if w == "passing" and nxt in ("a", "an", "the", "in", "on"):
        return None  # "we are passing a list": the verb "pass", not a result
    if w == "passing" and nxt in ("their", "its", "all"):
        return _built("verification", "passing", use, h, min(h + 2, len(words) - 1))
    if w == "successful":
        if use.how in ("agentless", "np") and nxt and nounish(nxt) and nxt[:1].isalpha():
            return None  # "Successful exact match replacement → …", "Reporting successful
            # test runs": an adjective before its noun ("be" makes it a predicate)
        noun = _subject_noun(use, words, h)
        kind = _kind_by_subject(noun, "completion")
        return _built(kind, "successful", use, h, h)
    if w == "succeeded":
        noun = _subject_noun(use, words, h)
        kind = _kind_by_subject(noun, "completion")
        if kind == "completion" and code_is_check(toks, use.lo, h):
            kind = "verification"  # "`npx tsc --noEmit` succeeded"
        return _built(kind, "succeeded", use, h, h)
    if w == "succeeds":
        # "Build succeeds with 0 warnings", "`cargo build` succeeds": a check's present
        # result; of anything else ("The request succeeds when …") it says what the
        # code does
        noun = _subject_noun(use, words, h)
        checked = _kind_by_subject(noun, "completion") == "verification" or (
            np_place(use.subject) == "check" or code_is_check(toks, use.lo, h)
        )
        return _built("verification", "succeeds", use, h, h) if checked else None
    if w in ("pass", "passes") and use.how == "agentless":
        return None  # "Pass the flag…"
    if w == "green" and use.how == "agentless" and len(words) > 2:
        return None
    if (
        w == "confirmed"
        and is_passive(words, h, use)
        and np_place(use.subject) == "remote"
        and nxt not in STATE_WORDS | HEAD_WORDS
    ):
        return _built("effect", w, use, h, h)  # "Your reservation is now confirmed"
    if (
        w == "confirmed"
        and not is_passive(words, h, use)
        and words[h + 1 : h + 2] != ["that"]
        and np_place(direct_object(words, h)) == "remote"
        and not _clause_follows(object_words(words, h))
    ):
        # "The clinic confirmed your appointment", "I confirmed the booking with the
        # hotel": what is confirmed is someone else's record
        return _built("effect", w, use, h, h)
    return _built("verification", w, use, h, h)


def _ran(words: Sequence[str], h: int, w: str, prior: Use | None) -> Candidate | None:
    nxt = words[h + 1] if h + 1 < len(words) else ""
    after = _after(words, h, 3)
    if w in ("worked", "working", "works"):
        if not any(x in ("correctly", "properly", "perfectly", "fine") for x in after):
            return None
        use = use_of(words, h, prior)
        return _built("completion", "works", use, h, h + 1) if use else None
    if nxt != "successfully" and w != "completed":
        return None
    use = use_of(words, h, prior)
    if use is None or use.how == "agentless":
        return None
    noun = _subject_noun(use, words, h)
    default: ClaimKind = "verification" if w in ("ran", "executed") else "completion"
    return _built(_kind_by_subject(noun, default), "ran", use, h, h + 1)


def _clean(
    words: Sequence[str], toks: Sequence[Token], h: int, prior: Use | None
) -> Candidate | None:
    nxt = words[h + 1] if h + 1 < len(words) else ""
    prev = words[h - 1] if h > 0 else ""
    if nxt in ("run", "build", "bill"):
        return Candidate("verification", "clean_run", h, h + 1, h)
    if prev == "back":  # "came back clean"
        lo = subject_start(words, max(0, h - 3), 0)
        return Candidate("verification", "clean", lo, h, h)
    if nxt in ("working", "tree") or prev in ("tree", "working"):
        return None  # the working tree: a rule of its own
    use = use_of(words, h, prior)
    if (use is not None and use.how == "np" and h == len(words) - 1) or (
        use is not None and use.how == "np" and nxt in (".", "!")
    ):
        return _built("verification", "clean", use, h, h)
    if use is not None and use.how == "aux" and all(x in BE for x in use.aux):
        # "The lints are clean", "`cargo clippy` is clean", "The branch is clean": a
        # check's or a record's state.
        place = place_of(list(use.subject))
        if place == "check" or code_is_check(toks, use.lo, h):
            return _built("verification", "clean", use, h, h)
        if place == "record":
            return _built("persistence", "clean", use, h, h)
    return None


def _live(words: Sequence[str], h: int, w: str, prior: Use | None) -> Candidate | None:
    use = use_of(words, h, prior)
    if use is None:
        return None
    if w == "serves" and "now" not in words[max(0, h - 2) : h]:
        return None
    on_host = (
        _after(words, h, 2)[:1] == ["on"]
        and _after(words, h, 2)[-1:] != []
        and (_after(words, h, 2)[-1] in HOSTS)
    )
    if w == "live" and use.how not in ("aux", "coord") and not (use.how == "np" and on_host):
        return None
    return _built("effect", "live", use, h, min(h + 1, len(words) - 1))  # ("… is now live"
    # may end the text with no stop)


def _effect_or_record(words: Sequence[str], h: int, w: str, prior: Use | None) -> Candidate | None:
    use = use_of(words, h, prior)
    if use is None:
        return None
    if use.how == "agentless" and (attributive(words, h) or is_label(words, h)):
        return None
    if w == "persisted" and h + 1 < len(words) and words[h + 1] in ("in", "with"):
        return None  # "I persisted in the false claim"
    if attributive_participle(words, h) or authorship(words, h):
        return None  # "the last 2 merged PRs"
    window_lo = use.lo if use.how != "coord" else h
    remote = _has_remote(words, window_lo, h) or _has_remote(words, h + 1, h + 5)
    if w == "merged":
        # "a release branch", "the PR branch": a branch, whatever names it
        branch_named = [
            x
            for x in range(max(0, window_lo), min(len(words) - 1, h + 5))
            if words[x] in REMOTE_NOUNS and words[x + 1] in ("branch", "branches")
        ]
        remote = remote and not (
            branch_named
            and not any(
                words[x] in REMOTE_NOUNS and x not in branch_named
                for x in range(max(0, window_lo), min(len(words), h + 5))
            )
        )
        if remote:
            return _built("effect", "merged_pr", use, h, h)
        branchy = _object_is_branch(words, h) or any(x in BRANCHY for x in use.subject)
        if not branchy and is_passive(words, h, use) and place_of(use.subject) == "remote":
            return _built("effect", "merged", use, h, h)  # "The HubSpot contact was merged"
        return _built("persistence", "merged", use, h, h) if branchy else None
    if attributive_participle(words, h) or authorship(words, h):
        return None
    if w in NEEDS_REMOTE:
        # "The tickets were filed", "Opened a PR": what is opened or filed is remote
        remote = remote or _has_remote(words, window_lo, h, wide=True)
        # Submitting hands a thing to its recipient: "Your application was submitted
        # successfully", "The form has been submitted", "I submitted your claim".
        remote = remote or (w == "submitted" and _handed_over(words, h, use))
        ahead = [x for x in range(h + 1, min(h + 5, len(words))) if words[x] in REMOTE_NOUNS]
        return _built("effect", w, use, h, ahead[0] if ahead else h) if remote else None
    if w in ("sent", "posted") and _PROBES.intersection(words[h + 1 : h + 6]):
        return None  # "Sent 35 POST requests to the local server": a probe, not an effect
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
    if kind == "persistence" and w in _KEPT and _kept_remotely(words, h):
        kind = "effect"  # "Saved to your Gmail drafts", "I logged the call in Salesforce"
    return _built(kind, w, use, h, h)


# Records that may be kept on someone else's system as well as on the local disk.
_KEPT = frozenset({"saved", "stored", "logged", "recorded", "written", "wrote", "persisted"})


def _kept_remotely(words: Sequence[str], h: int) -> bool:
    """Whether what was saved or logged went to a remote (its place, after the head: "in
    Salesforce", "to your drafts folder"; not what was kept: "persisted messages" are
    kept in a local store), and no local record or file is named there too."""
    after = object_words(words, h)
    if "`p" in after or place_of(after) == "record":
        return False
    return placed_by_preposition(words, h) == "remote"


def _handed_over(words: Sequence[str], h: int, use: Use) -> bool:
    """A submission reported as done: in the passive, with a result adverb, or by the
    writer with an object ("I submitted the claim form"); not "submitted to review"."""
    nxt = words[h + 1] if h + 1 < len(words) else ""
    if use.how == "aux":
        return any(x in BE for x in use.aux)
    if use.how in ("first", "pronoun", "coord"):
        return nxt in DETERMINERS or nxt in ("your", "my", "our", "their", "it", "them")
    return "successfully" in words[max(0, h - 2) : h + 3]


def json_status(sentence: Sentence) -> list[Candidate]:
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


# -- candidates by construction ------------------------------------------------------------


_FIRST_PERSON = {"i": "i", "we": "we", "i've": "i", "we've": "we", "i'm": "i", "we're": "we"}


# What a check sends to a service it probes.
_PROBES = frozenset({"requests", "request", "queries", "probes", "pings"})


def _count_label(words: Sequence[str], h: int) -> bool:
    """ "Completed: 1", "Done: 3/5": a tally's label, not a status."""
    return h + 2 < len(words) and words[h + 1] == ":" and words[h + 2] in ("`n", "`r", "`%")
