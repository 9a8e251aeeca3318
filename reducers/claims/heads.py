"""The head rules: for each state word, the constructions in which it asserts a claim
and of which kind; and the rules that read a whole sentence (commit ids, "working tree
clean", "did not push", counts with no failures, a JSON answer's status flag).
docs/claims.md, "The grammar", states them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from outcomes.reducers.claims.constructions import (
    Candidate,
    ClaimKind,
    Use,
    clause_start,
    is_marker,
    nounish,
    skip_adverbs,
    soft_clause_start,
    subject_start,
    use_of,
)
from outcomes.reducers.claims.lexicon import (
    ADJECTIVAL,
    ADVERBS,
    BE,
    BE_HAVE,
    BRANCH_WORDS,
    BRANCHY,
    CHECK_STATES,
    CONTRAST,
    DEED_SUBJECTS,
    DETERMINERS,
    EFFECT_HEADS,
    HARD,
    HEAD_WORDS,
    HOSTS,
    IRREGULAR_PARTICIPLES,
    NEEDS_REMOTE,
    NONE_VERBS,
    NOW_ADVERBS,
    OPENERS,
    OTHER_KIND_NOUNS,
    PERSIST_HEADS,
    PREPOSITIONS,
    PRESENT_BE,
    PRESENT_DEEDS,
    PUSH_NOUNS,
    RECORD_NOUNS,
    REMOTE_EDITS,
    REMOTE_NOUNS,
    REMOTE_STATES,
    REPORTER_SUBJECTS,
    REPORTERS,
    RESULT_ADVERBS,
    RESULT_ING,
    RUNNABLE,
    STATE_WORDS,
    STRONG,
    STRONG_STATES,
    SUBJECT_NOUNS,
    TRIGGERS,
    VERIFY_HEADS,
    VERIFY_NOUNS,
    WEAK,
    WEAK_PASSIVE_EXCLUDED,
)
from outcomes.reducers.claims.narrative import Sentence, Token
from outcomes.reducers.claims.objects import CHANGE_VERBS, NEGATIVE_OUTCOMES, place_of, verb_place


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
        if cand is None and (w in _CONSTRUCTION_WORDS or (w.endswith("ed") and len(w) > 4)):
            cand = _construction(words, h, w, prior)
        if cand is not None:
            cand = _rekind(words, cand)
            out.append(cand)
            if cand.use is not None and cand.use.how != "coord":
                prior = cand.use
        elif prior is None and h == 0 and w in OPENERS:
            prior = Use("agentless", 0, (), ())
        elif prior is None and w in _FIRST_PERSON and h == clause_start(words, h):
            prior = Use("pronoun", h, (), (_FIRST_PERSON[w],))
        elif prior is None and w.endswith("ed") and n > 1 and h == clause_start(words, h):
            prior = Use("agentless", h, (), ())
    return out


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
        if use is None or _introducer(words, h + 1, use):
            return None
        return _built("completion", "set_up", use, h, h + 1)
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
        return _clean(words, h, prior)
    if w in ("live", "serves"):
        return _live(words, h, w, prior)
    if w in REMOTE_EDITS and _has_remote(words, h + 1, h + 6):
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
    return any(x in BE_HAVE for x in rest[:stop]) and nounish(nxt)


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
    if _introducer(words, h, use) or _count_label(words, h):
        return None
    if w == "done" and use.how in ("first", "pronoun", "aux") and _object_follows(words, h):
        return None  # "I've done a thorough analysis": the verb "do", not the state
    if prev in ("\u2192", "as"):  # "In Progress → Completed", "mark … as complete"
        return None
    if use.how == "agentless" and (
        _attributive(words, h)
        or (_label(words, h) and (w not in STRONG or _count_label(words, h)))
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
            or (use.how == "np" and _headline(words, h) and not _list_title(use))
        )
        return _built(kind, w, use, h, h) if ok else None
    place = _place(words, h, use) if w in WEAK and w in CHANGE_VERBS else None
    if place in ("remote", "record") and use.how != "agentless":
        if _attributive_participle(words, h):
            return None
        # A change verb on a remote or a record: "Both tasks were successfully created
        # in Jira", "your reservation has been updated", "I've upgraded the booking".
        ok = "been" in use.aux or successfully or use.how in ("first", "pronoun", "np", "coord")
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
    return _built("completion", "ready", use, h, h)


def _present_deed(words: Sequence[str], h: int, prior: Use | None) -> Candidate | None:
    use = use_of(words, h, prior)
    if use is None:
        j = skip_adverbs(words, h - 1, 0)
        if j >= 0 and words[j] == "which":
            return Candidate("completion", "deed", h, min(h + 2, len(words) - 1), h)
        return None
    noun = _subject_noun(use, words, h)
    if noun in DEED_SUBJECTS and use.how in ("np", "pronoun"):
        return _built("completion", "deed", use, h, min(h + 1, len(words) - 1))
    return None


def _reporter(
    words: Sequence[str], toks: Sequence[Token], h: int, prior: Use | None
) -> Candidate | None:
    use = use_of(words, h, prior)
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
    if prev in ("=", ":") and w in ("pass", "passed", "ok", "green", "success"):
        return Candidate("verification", "label_pass", max(0, h - 3), h, h)
    use = use_of(words, h, prior)
    if use is None:
        return None
    if w == "tested" and not (use.how in ("aux", "first", "coord") and use.aux):
        return None
    if w in ("passing", "verified", "validated", "tested", "confirmed") and _attributive(words, h):
        return None
    if use.how == "agentless" and _label(words, h):
        return None
    if w in ("pass", "passes", "passed") and nxt in ("as", "to", "into", "via", "through", "along"):
        return None  # "now passed as CLI flags": handed over, not a result
    if w == "passing" and nxt in ("a", "an", "the", "in", "on"):
        return None  # "we are passing a list": the verb "pass", not a result
    if w == "passing" and nxt in ("their", "its", "all"):
        return _built("verification", "passing", use, h, min(h + 2, len(words) - 1))
    if w == "successful":
        if use.how == "agentless" and nxt and nounish(nxt):
            return None  # "Successful exact match replacement → …": an adjective
        noun = _subject_noun(use, words, h)
        kind = _kind_by_subject(noun, "completion")
        return _built(kind, "successful", use, h, h)
    if w == "succeeded":
        noun = _subject_noun(use, words, h)
        kind = _kind_by_subject(noun, "completion")
        if kind == "completion" and _code_is_check(toks, use.lo, h):
            kind = "verification"  # "`npx tsc --noEmit` succeeded"
        return _built(kind, "succeeded", use, h, h)
    if w in ("pass", "passes") and use.how == "agentless":
        return None  # "Pass the flag…"
    if w == "green" and use.how == "agentless" and len(words) > 2:
        return None
    if (
        w == "confirmed"
        and _passive(words, h, use)
        and place_of(list(use.subject)) == "remote"
        and nxt not in STATE_WORDS | HEAD_WORDS
    ):
        return _built("effect", w, use, h, h)  # "Your reservation is now confirmed"
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


def _clean(words: Sequence[str], h: int, prior: Use | None) -> Candidate | None:
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
        # "The lints are clean", "The branch is clean": a check's or a record's state.
        place = place_of(list(use.subject))
        if place == "check":
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
    return _built("effect", "live", use, h, h + 1)


def _effect_or_record(words: Sequence[str], h: int, w: str, prior: Use | None) -> Candidate | None:
    use = use_of(words, h, prior)
    if use is None:
        return None
    if use.how == "agentless" and (_attributive(words, h) or _label(words, h)):
        return None
    if w == "persisted" and h + 1 < len(words) and words[h + 1] in ("in", "with"):
        return None  # "I persisted in the false claim"
    if _attributive_participle(words, h) or _authorship(words, h):
        return None  # "the last 2 merged PRs"
    window_lo = use.lo if use.how != "coord" else h
    remote = _has_remote(words, window_lo, h) or _has_remote(words, h + 1, h + 5)
    if w == "merged":
        if remote:
            return _built("effect", "merged_pr", use, h, h)
        branchy = _object_is_branch(words, h) or any(x in BRANCHY for x in use.subject)
        return _built("persistence", "merged", use, h, h) if branchy else None
    if _attributive_participle(words, h) or _authorship(words, h):
        return None
    if w in NEEDS_REMOTE:
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
    return _built(kind, w, use, h, h)


_REFERENCED_COMMITS = frozenset({"head", "base", "parent", "previous", "current", "latest"})

_HEX = re.compile(r"`?[0-9a-f]{7,40}`?$")


def sentence_candidates(words: Sequence[str], toks: Sequence[Token]) -> list[Candidate]:
    out: list[Candidate] = []
    n = len(words)
    for i, w in enumerate(words):
        if w not in TRIGGERS and not w.startswith("match"):
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
                if i > 0 and words[i - 1] in _REFERENCED_COMMITS:
                    continue  # "on the current head commit 840c617": a reference
                out.append(Candidate("persistence", "commit_id", lo, j, i))
        # "clean working tree", "working tree clean".
        if w == "working" and nxt == "tree":
            around = words[max(0, i - 1) : i + 5]
            if "clean" in around:
                lo = i - 1 if i > 0 and words[i - 1] == "clean" else i
                hi = i + 2 if "clean" in words[i + 2 : i + 5] else i + 1
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
            if j < n and words[j] in NONE_VERBS:
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
            if words[hi + 1 : hi + 2] and words[hi + 1] in BE_HAVE:
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
            lo = i - 1 if i > 0 and is_marker(words[i - 1]) else i
            out.append(Candidate("verification", "exit_zero", lo, i, i))
        # "now correctly produces …": behaviour that is now right.
        if w == "correctly" and i > 0 and words[i - 1] == "now" and nxt.endswith("s"):
            out.append(Candidate("completion", "now_correct", i - 1, i + 1, i + 1))
        # "(closed)", "(done)": a status in parentheses after an item.
        statuses = ("closed", "done", "complete", "completed", "fixed", "merged")
        if w == "(" and nxt in statuses and i + 2 < n and words[i + 2] == ")":
            lo = subject_start(words, i - 1, clause_start(words, i - 1)) if i else i
            kind: ClaimKind = "persistence" if nxt == "merged" else "completion"
            out.append(Candidate(kind, "status_in_parens", lo, i + 2, i + 1))
    return out


def _skip_adverbs_fwd(words: Sequence[str], j: int) -> int:
    while j < len(words) and words[j] in ADVERBS:
        j += 1
    return j


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


def is_participle(word: str) -> bool:
    return (len(word) > 4 and word.endswith("ed") and word[:1].isalpha()) or (
        word in IRREGULAR_PARTICIPLES
    )


def _construction(words: Sequence[str], h: int, w: str, prior: Use | None) -> Candidate | None:
    """A head no word list names, found from its construction: a perfect or passive of
    any verb ("has been cancelled", "was successfully deleted"), an act with a result
    adverb ("I have successfully moved …"), a headline on a record or a remote ("Branch
    `x` created"), or a present state after "be" ("The server is now running")."""
    prev = words[h - 1] if h > 0 else ""
    if w in STATE_WORDS or (w in HOSTS and prev == "on") or (w == "place" and prev == "in"):
        state = _state(words, h, w, prior)
        if state is not None:
            return state
    if w in NEGATIVE_OUTCOMES or not is_participle(w):
        return None
    if w in HEAD_WORDS and w not in _GENERIC_TOO:
        return None  # the head rules have read it (and declined it)
    return _generic(words, h, w, prior)


_OBJECT_END = frozenset({",", "and", "which", "but", "while", "for", "about", "using", "via"})


def _object_words(words: Sequence[str], h: int) -> list[str]:
    """The head's object and the places it names ("to Railway", "from Vercel"), up to a
    clause boundary or a phrase of purpose or means ("for …", "with …")."""
    out = []
    for x in words[h + 1 : h + 15]:
        if x in HARD or x in CONTRAST or x in _OBJECT_END:
            break
        out.append(x)
    return out


def _passive(words: Sequence[str], h: int, use: Use | None) -> bool:
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


def _place(words: Sequence[str], h: int, use: Use | None, reach: int = 14) -> str | None:
    """The place a claim is about: a check named by its subject decides first, then a
    remote named anywhere (subject of a passive, verb, object), then a local record."""
    subject = list(use.subject) if use is not None and _passive(words, h, use) else []
    found = [place_of(subject), verb_place(words[h]), place_of(_object_words(words, h)[:reach])]

    if found[0] == "check":
        return "check"
    if "remote" in found:
        return "remote"
    if "record" in found:
        return "record"
    return None


def _generic(words: Sequence[str], h: int, w: str, prior: Use | None) -> Candidate | None:
    use = use_of(words, h, prior)
    if use is None:
        return None
    n = len(words)
    if use.how == "agentless" and (_attributive(words, h) or _label(words, h)):
        return None
    if h + 1 < n and words[h + 1] in ("by", "from") and use.how == "np":
        return None  # "files generated by the tool": a description
    if _attributive_participle(words, h) or _authorship(words, h):
        return None
    if use.how == "np" and use.lo > 0 and words[use.lo - 1] in PREPOSITIONS:
        return None  # "with a new total of $475 charged": an absolute phrase
    near = (
        list(words[max(soft_clause_start(words, h), h - 3) : h + 1]) + _object_words(words, h)[:4]
    )
    result = any(x in RESULT_ADVERBS for x in near)
    place = _place(words, h, use)
    # An act whose own verb names a remote or a record ("booked", "committed"), or a
    # change made to one named right after it ("moved the emails", "deleted the PR").
    acted = verb_place(w) is not None or (
        w in CHANGE_VERBS and _place(words, h, None, reach=4) is not None
    )
    if use.how == "aux":
        ok = "been" in use.aux or (
            result and any(x in ("was", "were", "is", "are") for x in use.aux)
        )
    elif use.how in ("first", "pronoun", "np", "coord"):
        ok = result or (acted and place in ("remote", "record"))
        # "I've reorganized everything into …": a change to the whole is a result.
        whole = h + 1 < len(words) and words[h + 1] in ("everything", "all")
        ok = ok or (use.how == "first" and w in CHANGE_VERBS | _WHOLE_VERBS and whole)
    elif w in CHANGE_VERBS and _placed_by_preposition(words, h) in ("remote", "record"):
        ok = True  # "Removed the folder from all git history", "Moved the docs to Notion"
    else:  # agentless: a report line on a record or a remote ("Staged the fix")
        ok = verb_place(w) is not None and place in ("remote", "record")
    if w in WEAK_PASSIVE_EXCLUDED and place not in ("remote", "record"):
        return None  # "The LICENSE file has been created": an edit, not a result
    if not ok:
        return None
    kind: ClaimKind = (
        "effect" if place == "remote" else "persistence" if place == "record" else "completion"
    )
    if place == "check" and use.how in ("np", "aux") and use.subject:
        kind = "verification"
    return Candidate(kind, "generic", min(use.lo, h), h, h, use=use)


def _state(words: Sequence[str], h: int, w: str, prior: Use | None) -> Candidate | None:
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
        place = _place(words, h, use)
        kind = "effect" if place == "remote" else "completion"
        if place == "record" and verb_place(w) == "record":
            kind = "persistence"  # "STORAGE.md synced"
        if place == "check" and use.subject:
            kind = "verification"
    return Candidate(kind, "state", min(use.lo, at), h, h, use=use)


# Rules whose kind is read from the subject (or a label): "Frontend build: successful".
_BY_SUBJECT = frozenset({"successful", "succeeded", "success", "closed"})


def _rekind(words: Sequence[str], cand: Candidate) -> Candidate:
    if cand.kind != "completion" or cand.rule not in _BY_SUBJECT:
        return cand
    subject = list(cand.use.subject) if cand.use is not None else []
    lo = cand.lo
    if (lo >= 2 and words[lo - 1] == ":") or (
        lo >= 3 and words[lo - 1] == "`k" and words[lo - 2] == ":"
    ):
        colon = lo - 1 if words[lo - 1] == ":" else lo - 2
        subject += list(words[clause_start(words, colon) : colon])
    place = place_of(subject)
    if place == "check":
        return Candidate(
            "verification", cand.rule, cand.lo, cand.hi, cand.head, cand.none, cand.use
        )
    if place == "remote":
        return Candidate("effect", cand.rule, cand.lo, cand.hi, cand.head, cand.none, cand.use)
    return cand


def _attributive_participle(words: Sequence[str], h: int) -> bool:
    """A participle between a determiner or a count and its noun: "the last 2 merged
    PRs", "a cancelled booking" — it names a thing, it reports nothing."""
    if h == 0 or h + 1 >= len(words):
        return False
    prev, nxt = words[h - 1], words[h + 1]
    return (prev in DETERMINERS or prev in ("`n", "all", "any", "some", "new")) and (
        nounish(nxt) and nxt not in ("all", "both", "this", "that", "it", "everything")
    )


def _authorship(words: Sequence[str], h: int) -> bool:
    """ "This comment was created by an AI agent": who made a thing, not a result."""
    return h + 1 < len(words) and words[h + 1] == "by" and words[h] in _AUTHORED


_AUTHORED = frozenset(
    {"created", "generated", "written", "authored", "made", "produced", "signed", "opened"}
)


def _introducer(words: Sequence[str], h: int, use: Use) -> bool:
    """ "I've added:", "We have set up:": a first-person perfect that introduces the list
    of edits after it, not a result (but "I've successfully:" sums the list up)."""
    return (
        use.how in ("first", "pronoun")
        and h + 1 < len(words)
        and words[h + 1] == ":"
        and all(not x[:1].isalpha() for x in words[h + 2 :])
        and "successfully" not in words[:h]
    )


def _code_is_check(toks: Sequence[Token], lo: int, h: int) -> bool:
    """Whether a command in the subject runs a check: "`npx tsc --noEmit`", "`go test`"."""
    for tok in toks[lo:h]:
        if tok.norm == "`c" and place_of(re.findall(r"[a-z0-9]+", tok.raw.lower())) == "check":
            return True
    return False


# The words `_construction` may read (the regular participles aside).
_CONSTRUCTION_WORDS = STATE_WORDS | HOSTS | IRREGULAR_PARTICIPLES | {"place"}


_FIRST_PERSON = {"i": "i", "we": "we", "i've": "i", "we've": "we", "i'm": "i", "we're": "we"}


# Head words whose head rule is narrow (an edit to a PR, a record with a verb group):
# any other construction of them is read like any verb's ("All 7 SQL files applied
# cleanly").
_GENERIC_TOO = frozenset({"recorded", "applied", "edited", "labeled", "labelled"})


def _object_follows(words: Sequence[str], h: int) -> bool:
    nxt = words[h + 1] if h + 1 < len(words) else ""
    return nxt in ("a", "an", "the", "some", "my", "our", "this", "these", "those", "several")


# What may follow a state at the end of a headline: "Deployment working with real AI".
_STATE_TAILS = frozenset(
    {".", "!", "with", "on", "in", "at", "again", "perfectly", "correctly", "fine", "now"}
)


def _headline(words: Sequence[str], h: int) -> bool:
    """A noun phrase and its participle as a whole line: "Safety rules implemented"."""
    return all(not x[:1].isalpha() for x in words[h + 1 :])


# Plural nouns that title a list of edits ("## Features Implemented", "Key Issues
# Identified"): a heading that names what follows, not a status.
LIST_NOUNS = frozenset(
    {"features", "changes", "improvements", "fixes", "updates", "modifications"}
    | {"enhancements", "edits", "additions", "files", "items", "issues", "steps"}
)


def _list_title(use: Use) -> bool:
    return bool(use.subject) and use.subject[-1] in LIST_NOUNS


# What a check sends to a service it probes.
_PROBES = frozenset({"requests", "request", "queries", "probes", "pings"})


# Verbs of rearranging that, done to everything, finish a task.
_WHOLE_VERBS = frozenset(
    {"reorganized", "reorganised", "restructured", "cleaned", "converted", "translated"}
    | {"formatted", "renamed", "sorted", "organized", "organised", "migrated", "upgraded"}
)


def _count_label(words: Sequence[str], h: int) -> bool:
    """ "Completed: 1", "Done: 3/5": a tally's label, not a status."""
    return h + 2 < len(words) and words[h + 1] == ":" and words[h + 2] in ("`n", "`r", "`%")


def _placed_by_preposition(words: Sequence[str], h: int) -> str | None:
    """The place a change was made in or moved to or from, named after a preposition of
    place in the head's object ("from all git history", "to the Jira board")."""
    obj = _object_words(words, h)
    for i, x in enumerate(obj):
        if x in ("from", "to", "into", "onto", "in", "on"):
            after = obj[i + 1 : i + 5]
            # a noun phrase, not an infinitive ("to include PR instructions")
            if after and (
                after[0] in DETERMINERS or after[0] in ("all", "every") or place_of(after[:1])
            ):
                return place_of(after)
    return None
