"""Claims that status lines and negative reports make by their shape, not by a head word
(docs/claims.md, "The candidate rule"):

- a status token of its own: `COMMIT_COMPLETE`, `TASK_DONE`, a closing `TERMINATE`;
- a status in a snake-case value: "CI all_pass";
- a check that found nothing: "didn't find any security issues", "found no errors",
  "Zero broken links";
- nothing external happened, said of the act or of its object: "without force-pushing",
  "no message reached the mailbox", "no email was sent";
- a check verb with a result adverb: "Code compiles successfully", "builds cleanly";
- a label and a state ("**Status**: Created"), a ticked test-plan item;
- and the sentence-wide rules of docs/claims.md, "The grammar" (commit ids, "working
  tree clean", "did not push", counts with no failures).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from outcomes.reducers.claims.constructions import (
    Candidate,
    ClaimKind,
    clause_start,
    is_marker,
    nounish,
    subject_start,
    use_of,
)
from outcomes.reducers.claims.lexicon import (
    ADVERBS,
    BE_HAVE,
    HARD,
    HOSTS,
    NONE_VERBS,
    TRIGGERS,
    class_of,
)
from outcomes.reducers.claims.narrative import Token
from outcomes.reducers.claims.objects import (
    CHANGE_VERBS,
    REMOTE,
    REMOTE_VERBS,
    RUNNING_SYSTEMS,
    np_place,
    place_of,
)

# An all-capitals status token that is a line of its own ("COMMIT_COMPLETE").
_SENTINEL = re.compile(r"[A-Z][A-Z_]*(?:COMPLETE|COMPLETED|DONE|FINISHED|SUCCESS)|TERMINATE")

# A snake-case value naming a pass: "all_pass", "tests_passed", "checks_green".
_PASS_VALUE = re.compile(r"[a-z]+_(?:pass|passed|passing|green|ok)")

# Nouns of what a check finds.
FINDINGS = class_of(
    """issues problems errors failures bugs vulnerabilities warnings regressions
    mismatches violations defects leaks conflicts"""
)

FIND_VERBS = class_of("find detect see report encounter flag surface hit")

FOUND_WORDS = class_of("found detected reported encountered flagged")

# Acts on the world whose gerund after "without" says it was not done.
NONE_GERUNDS = class_of(
    """pushing force-pushing merging sending posting publishing deploying releasing
    uploading emailing notifying opening submitting commenting"""
)

# What is sent or published: "no message reached the mailbox".
SENDABLES = class_of(
    """message messages email emails mail notification notifications reply replies post
    comment comments invite invitation"""
)

ARRIVALS = class_of("arrived reached went was were got delivered sent posted published")

CHECK_ACTS = class_of("compiles compiled builds built typechecks lints")

RESULTS = class_of("successfully cleanly fine")


# Verbs after "no longer" whose absence is the fix shown: "no longer produce errors".
SYMPTOMS = class_of(
    """produce produces raise raises throw throws fail fails crash crashes error errors
    hang hangs occur occurs appear appears show shows break breaks leak leaks time
    times"""
)

# "No further action is required", "nothing left to fix": the task needs nothing more.
FURTHER = class_of("further more else left remaining additional")

WORK_NOUNS = class_of("action actions changes work steps fixes edits")

NEEDED = class_of("required needed necessary")

RESPONSE_VERBS = class_of(
    "responds responded returns returned returning answers answered serves served"
)

CHECK_MARKS = frozenset({"`k"})

CHECK_STATES = class_of("tested verified validated passing passed green")

# Labels that name a remote object just made: "New Message ID: reply_1".
ID_WORDS = class_of("id key number url link")

NEW_WORDS = class_of("new created")

# A section that names the making of what it lists, as a noun phrase ("Creation of the
# Jira ticket", "New tickets"). A heading that asserts it ("Pull Request Created!") is the
# claim itself, and the id line under it its detail.
CREATION_WORDS = class_of("new creation")


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower()) if text else []


# Labels of a remote object that was there before the run: "Original Email Message ID".
OLD_WORDS = class_of("original existing old previous prior source parent base")


# Counts of problems: "0 errors", "zero regressions".
_PROBLEM_COUNTS = frozenset(
    {"errors", "failures", "mismatches", "violations", "warnings", "vulnerabilities"}
    | {"regressions", "problems"}
)


# Counts of a run's outcomes: zeros of these say nothing ran, not that nothing was found.
_RUN_COUNTS = frozenset(
    {"passed", "passing", "pass", "failed", "skipped", "tests", "test", "ran", "run", "total"}
    | {"succeeded", "ok", "executed", "collected", "selected", "files", "checks"}
)


def _zero_tally(words: Sequence[str], toks: Sequence[Token], i: int) -> bool:
    """ "0 Critical, 0 Suggestion": two zero counts of categories, side by side."""
    if i + 4 >= len(words) or toks[i].raw != "0":
        return False
    if words[i + 1] in _RUN_COUNTS or words[i + 4] in _RUN_COUNTS:
        return False  # "0 passed, 0 failed": nothing ran
    if i > 0 and toks[i - 1].raw == "0":
        return False  # the second zero of a tally already read
    return (
        words[i + 1][:1].isalpha()
        and words[i + 2] == ","
        and toks[i + 3].norm == "`n"
        and toks[i + 3].raw == "0"
        and words[i + 4][:1].isalpha()
    )


def _http_ok(tok: Token) -> bool:
    return tok.norm == "`n" and len(tok.raw) == 3 and tok.raw.startswith("2")


def status_candidates(
    words: Sequence[str], toks: Sequence[Token], section: str = ""
) -> list[Candidate]:
    out: list[Candidate] = []
    n = len(words)
    if n <= 3:
        alpha = [i for i, w in enumerate(words) if w[:1].isalpha() or (w[:1] == "`" and w != "`k")]
    else:
        alpha = []
    if len(alpha) == 1 and _SENTINEL.fullmatch(toks[alpha[0]].raw):
        i = alpha[0]
        out.append(Candidate("completion", "sentinel", i, i, i))
    # "✅ Tested", "✅ On GitHub": a check mark and a state as the whole line.
    if len(alpha) in (1, 2) and words[0] in CHECK_MARKS:
        rest = [words[i] for i in alpha]
        if rest[0] in CHECK_STATES and len(rest) == 1:
            out.append(Candidate("verification", "check_mark", 0, alpha[0], alpha[0]))
        elif rest[0] == "on" and len(rest) == 2 and rest[1] in HOSTS:
            out.append(Candidate("effect", "check_mark", 0, alpha[1], alpha[1]))
    # "New Message ID: reply_1", "PR #20: [title](url)": a remote object just made,
    # named by its id or its number and link.
    if ":" in words:
        colon = words.index(":")
        label = words[:colon]
        value = words[colon + 1 : colon + 3]
        named = [x for x in label if x[:1].isalpha()]
        # "new" in the label, or a section that reports the creation ("Creation of the
        # Jira ticket:" over "Issue Key: OPS-7")
        made = any(x in NEW_WORDS for x in named) or (
            len(named) <= 3 and any(x in CREATION_WORDS for x in _words(section))
        )
        if (
            named
            and named[-1] in ID_WORDS
            and made
            and not any(x in OLD_WORDS for x in named)
            and place_of(named) == "remote"
            and value
        ):
            out.append(Candidate("effect", "new_id", 0, colon + 1, colon - 1))
        elif (
            named in (["pr"], ["mr"], ["pull", "request"])
            and "`#" in label
            and value[:1] in (["`l"], ["`u"])
        ):
            out.append(Candidate("effect", "pr_link", 0, colon + 1, label.index("`#")))
    out += _label_value(words)
    out += _ticked_check(words) or _checks_ticked_in_a_row(words)
    out += _full_ratio(words, toks)
    # "I've successfully:" sums up the list after it.
    if words[-2:] == ["successfully", ":"] and len(words) <= 4:
        first = words[0]
        if first in ("i've", "we've") or (first in ("i", "we") and words[1:2] == ["have"]):
            out.append(Candidate("completion", "summary", 0, len(words) - 2, len(words) - 2))
    # "`uv run` commands → Allowed ✓": an outcome shown and ticked.
    if n >= 4 and words[-1] == "`k" and "\u2192" in words[:-1]:
        arrow = words.index("\u2192")
        if arrow > 0 and any(x[:1].isalpha() for x in words[arrow + 1 : -1]):
            out.append(Candidate("verification", "ticked_outcome", 0, n - 1, n - 1))
    # "Git commit: `feat: add the parser`": a commit named by its message.
    if ":" in words:
        colon = words.index(":")
        if words[:colon][-1:] == ["commit"] and words[colon + 1 : colon + 2] in (["`c"], ["`q"]):
            out.append(
                Candidate("persistence", "commit_message", max(0, colon - 2), colon + 1, colon - 1)
            )
    if _TRIGGERS.isdisjoint(words) and "_" not in "".join(words):
        return out
    for i, w in enumerate(words):
        nxt = words[i + 1] if i + 1 < n else ""
        # "HTTP 200 from …", "the route responds with 200", "returned 201"
        if w in ("http", "status") and i + 1 < n and _http_ok(toks[i + 1]):
            out.append(Candidate("verification", "http_ok", i, i + 1, i))
        if w in RESPONSE_VERBS:
            j = i + 1
            while j < n and j <= i + 3 and words[j] in ("with", "a", "an", "http", "status"):
                j += 1
            if j < n and _http_ok(toks[j]):
                lo = i - 1 if i > 0 and words[i - 1][:1].isalpha() else i
                out.append(Candidate("verification", "http_ok", lo, j, i))
        # "no longer produce `ModuleNotFoundError`", "no longer crashes"
        if w == "no" and nxt == "longer" and i + 2 < n and words[i + 2] in SYMPTOMS:
            lo = i - 1 if i > 0 and words[i - 1][:1].isalpha() else i
            out.append(Candidate("verification", "no_longer", lo, i + 2, i + 2, none=True))
        # "handled the request without errors"
        if w == "without" and i + 1 < n:
            j = i + 2 if nxt == "any" else i + 1
            if j < n and words[j] in FINDINGS:
                out.append(Candidate("verification", "without_errors", i, j, j, none=True))
        # "No further action is required", "nothing left to fix", "no instrumentation
        # left to delete"
        if w == "no" and nxt in FURTHER and i + 2 < n and words[i + 2] in WORK_NOUNS:
            hit = next((x for x in range(i + 3, min(n, i + 6)) if words[x] in NEEDED), None)
            if hit is not None:
                out.append(Candidate("completion", "nothing_left", i, hit, hit, none=True))
        if w in ("nothing", "no") and i + 3 < n:
            k = i + 1 if w == "nothing" else i + 2
            if k + 1 < n and words[k] in FURTHER and words[k + 1] == "to":
                out.append(Candidate("completion", "nothing_left", i, k + 2, k, none=True))
        # "I'm unable to change the reservation", "I cannot run the AWS commands": an act
        # on the world disclosed as not done (nothing external happened).
        if w in _UNABLE and i > 0 and _first_person(words[i - 1 : i + 1]):
            j = i + 2 if w == "unable" and nxt == "to" else i + 1
            if j < n and words[j][:1].isalpha() and (w != "unable" or nxt == "to"):
                obj = [x for x in words[j + 1 : j + 9] if x[:1].isalpha()]
                if words[j] in NONE_VERBS_BASE or place_of(obj) == "remote":
                    lo = i - 1 if words[i - 1] in ("i", "we") else i
                    out.append(Candidate("effect", "unable", lo, j, j, none=True))
        # "I was able to successfully update your ticket": an act reported as done.
        if w == "able" and i > 0 and words[i - 1] in ("was", "were") and nxt == "to":
            j = i + 2
            while j < n and words[j] in ("successfully", "finally", "also"):
                j += 1
            if j < n and words[j][:1].isalpha():
                obj = [x for x in words[j + 1 : j + 8] if x[:1].isalpha()]
                place = place_of(obj)
                kind: ClaimKind = (
                    "effect"
                    if place == "remote"
                    else "persistence"
                    if place == "record"
                    else "completion"
                )
                lo = i - 2 if i >= 2 and words[i - 2][:1].isalpha() else i - 1
                out.append(Candidate(kind, "able_to", lo, min(n - 1, j + 2), j))
        if "_" in w and _PASS_VALUE.fullmatch(w) and i > 0 and words[i - 1][:1].isalpha():
            out.append(Candidate("verification", "pass_value", i - 1, i, i))
        # "didn't find any … issues", "did not detect errors"
        if (w == "didn't" or (w == "did" and nxt == "not")) and i + 2 < n:
            j = i + 1 if w == "didn't" else i + 2
            if words[j] in FIND_VERBS:
                hit = next((x for x in range(j + 1, min(n, j + 8)) if words[x] in FINDINGS), None)
                if hit is not None:
                    out.append(Candidate("verification", "found_none", i, hit, j, none=True))
        # "No issues found", "zero vulnerabilities detected"
        if w in ("no", "zero") and nxt in FINDINGS and i + 2 < n and words[i + 2] in FOUND_WORDS:
            out.append(Candidate("verification", "found_none", i, i + 2, i + 2, none=True))
        # "found no errors", "no issues found", "zero broken links"
        if w in FOUND_WORDS and nxt in ("no", "zero") and i + 2 < n:
            hit = next((x for x in range(i + 2, min(n, i + 6)) if words[x] in FINDINGS), None)
            if hit is not None:
                out.append(Candidate("verification", "found_none", i, hit, i, none=True))
        if w in ("zero", "no") and nxt == "broken" and i + 2 < n and words[i + 2][:1].isalpha():
            out.append(Candidate("verification", "no_failures", i, i + 2, i + 1, none=True))
        # "without force-pushing"
        if w == "without" and nxt in NONE_GERUNDS:
            out.append(Candidate("effect", "without", i, i + 1, i + 1, none=True))
        # "no message reached the mailbox", "no email was sent"
        if w == "no" and nxt in SENDABLES:
            hit = next((x for x in range(i + 2, min(n, i + 4)) if words[x] in ARRIVALS), None)
            if hit is not None:
                hi = hit + 1 if words[hit] in ("was", "were") and hit + 1 < n else hit
                out.append(Candidate("effect", "none_arrived", i, hi, hit, none=True))
        # "Code compiles successfully", "The project builds cleanly"
        if w in CHECK_ACTS and nxt in RESULTS and i > 0 and words[i - 1][:1].isalpha():
            lo = i - 1
            while lo > 0 and words[lo - 1][:1].isalpha() and words[lo - 1] not in ("and", "or"):
                lo -= 1
                if i - lo >= 4:
                    break
            out.append(Candidate("verification", "check_act", lo, i + 1, i))
        # "Everything compiles", "It builds again": a present check act ending its clause
        elif (
            w in _PRESENT_CHECK_ACTS
            and (nxt in _CLAUSE_TAIL or nxt in HARD)
            and i > 0
            and words[i - 1][:1].isalpha()
            and words[i - 1] not in ("which", "that", "who", "and", "or", "to")
        ):
            lo = subject_start(words, i - 1, clause_start(words, i - 1))
            out.append(Candidate("verification", "check_act", lo, i, i))
    return out


_PRESENT_CHECK_ACTS = frozenset({"compiles", "builds", "typechecks"})
# Acts on a remote whose not being done is a claim that nothing happened ("Not pushed").
_ACTS_ON_REMOTES = REMOTE_VERBS | {"sent"}
# What may end a clause after its verb: "It builds again, and …".
_CLAUSE_TAIL = frozenset({"", ".", "!", ",", ";", "and", "now", "again", "locally", "fine"})


# Values of a status label that say a state was reached, beyond the head words.
STATUS_VALUES = class_of(
    """active live running working healthy online available created deleted removed
    updated cancelled canceled booked confirmed scheduled sent archived restored
    enabled disabled configured provisioned clean"""
)


def _label_value(words: Sequence[str]) -> list[Candidate]:
    """ "**Status**: Created", "`frontend` project: Deleted": a label and a state as its
    value. The label's nouns give the kind; a label that names no place leaves the kind
    to a person (`needs_review`, rule `status_value`)."""
    if ":" not in words or STATUS_VALUES.isdisjoint(words):
        return []
    colon = words.index(":")
    label = [w for w in words[:colon] if w[:1].isalpha()]
    j = colon + 1
    while j < len(words) and words[j] in ("`k", "*"):
        j += 1
    if not label or len(label) > 5 or j >= len(words) or words[j] not in STATUS_VALUES:
        return []
    after = list(words[j + 1 :])
    after = after[: after.index("(")] if "(" in after else after
    rest = [w for w in after if w[:1].isalpha()]
    if rest and rest[0] not in ("and", "with", "on", "in", "to", "from", "for", "at"):
        return []  # "Created: the file list below" is a label of what follows
    place = place_of(label)
    if words[j] in _STATE_VALUES and RUNNING_SYSTEMS.issuperset(x for x in label if x in REMOTE):
        place = None if place == "remote" else place  # "Deployment: Active": its state
    if place == "remote":
        return [Candidate("effect", "label_value", 0, j, j)]
    if place == "record":
        return [Candidate("persistence", "label_value", 0, j, j)]
    if place == "check":
        return [Candidate("verification", "label_value", 0, j, j)]
    if words[j] in _STATE_VALUES:
        # a state is decided by its word: "Deployment: Active", "Agent: healthy"
        kind: ClaimKind = (
            "verification"
            if words[j] == "healthy"
            else "effect"
            if words[j] in ("live", "online")
            else "completion"
        )
        return [Candidate(kind, "label_value", 0, j, j)]
    return [Candidate("completion", "status_value", 0, j, j)]


def _ticked_check(words: Sequence[str]) -> list[Candidate]:
    """ "Lint ✔", "Build: ✅", "Unit tests ✓ (42)": a check named and ticked, as the
    whole line (a count or a note in parentheses may follow the mark)."""
    if "`k" not in words:
        return []
    end = words.index("(") if "(" in words else len(words)
    line = [w for w in words[:end] if w not in (".", "*")]
    if len(line) < 2 or line[-1] not in CHECK_MARKS:
        return []
    label = line[:-2] if line[-2] == ":" else line[:-1]
    named = [w for w in label if w[:1].isalpha() or w in ("`c", "`p")]
    if not 1 <= len(named) <= 4 or len(named) != len(label):
        return []
    if place_of(named) != "check" and not any(w == "`c" for w in named):
        return []
    mark = max(i for i, w in enumerate(words[:end]) if w in CHECK_MARKS)
    return [Candidate("verification", "check_mark", 0, mark, len(label) - 1)]


def _checks_ticked_in_a_row(words: Sequence[str]) -> list[Candidate]:
    """ "CI status: ✅ build, ✅ lint, ❌ e2e": a check mark before a check's name, each
    one a clause of its own (up to a comma, a semicolon, a bar or a parenthesis)."""
    if "`k" not in words:
        return []
    out = []
    n = len(words)
    for i, w in enumerate(words):
        if w not in CHECK_MARKS:
            continue
        j = i + 1
        while j < n and j <= i + 3 and words[j][:1].isalpha():
            j += 1
        named = list(words[i + 1 : j])
        ends = j == n or words[j] in (",", ";", "|", "(", ".", "!")
        # names only: "✅ Compatibility Testing Completed" is a status line of its own
        names = all(nounish(x) and not x.endswith("ed") for x in named)
        if named and ends and names and place_of(named) == "check":
            out.append(Candidate("verification", "check_mark", i, j - 1, j - 1))
    return out


def _full_ratio(words: Sequence[str], toks: Sequence[Token]) -> list[Candidate]:
    """ "Integration tests: 38/38", "✅ E2E: 12/12": a check's label and a full count as
    its value (all of them; "36/38" leaves two out and says nothing passed)."""
    if ":" not in words or "`r" not in words:
        return []
    colon = words.index(":")
    j = colon + 1
    while j < len(words) and words[j] in ("`k", "*"):
        j += 1
    if j >= len(words) or words[j] != "`r":
        return []
    label = [w for w in words[:colon] if w[:1].isalpha()]
    if not 1 <= len(label) <= 4 or place_of(label) != "check":
        return []
    done, _, total = toks[j].raw.partition("/")
    if not (done.isdigit() and done == total and int(total) > 0):
        return []
    return [Candidate("verification", "full_count", 0, j, j)]


# Status values that are states rather than acts: their kind needs no label.
_STATE_VALUES = class_of("active live running working healthy online available")


_UNABLE = frozenset({"unable", "cannot", "can't", "couldn't"})

# The words the per-word rules above start from: a sentence with none is passed over.
_TRIGGERS = (
    frozenset({"http", "status", "no", "without", "nothing", "able", "didn't", "did", "zero"})
    | RESPONSE_VERBS
    | FOUND_WORDS
    | CHECK_ACTS
    | _UNABLE
)


# Sections whose ticked items are checks that were run and passed.
_CHECK_SECTIONS = re.compile(r"\b(?:test|tests|testing|verification|validation|checks?|qa)\b")


def test_plan_item(words: Sequence[str], section: str) -> list[Candidate]:
    """A ticked item under a "Test plan" (or "Verification", "Checks") heading with no
    claim of its own: "- [x] Changes are isolated to the prompt builder" asserts that the
    check it names was made and held."""
    alpha = [w for w in words if w[:1].isalpha()]
    if not _CHECK_SECTIONS.search(section) or not alpha:
        return []
    if alpha[-1] in CHANGE_VERBS | {"edited"} and not _BE.intersection(alpha):
        return []  # "README.md edited", "Version updated": an edit made, not a check
    return [Candidate("verification", "test_plan_item", 0, len(words) - 1, 0)]


_BE = frozenset({"is", "are", "was", "were", "been"})


# Acts on the world, in the base form ("I cannot push").
NONE_VERBS_BASE = class_of(
    """push post send publish deploy release merge create open approve upload email
    notify file submit share book cancel refund pay charge change update delete"""
)


# Acts on someone else's system in the base form, besides NONE_VERBS.
_REMOTE_ACTS_BASE = class_of(
    """book rebook reserve cancel refund pay charge order purchase reply forward invite
    schedule reschedule transfer issue contact call text message"""
)


# Participles of an act whose denial on a remote thing says nothing happened there.
# (Not the sends and publications, which the rules above read as nothing sent: "No
# emails were sent", "Nothing was pushed".)
_DONE_TO = class_of(
    """made placed charged issued submitted booked processed created modified changed
    updated touched cancelled canceled deleted moved refunded"""
)
_CHANGE_NOUNS = class_of("changes modifications updates edits writes")


def _nothing_changed(words: Sequence[str]) -> list[Candidate]:
    """Nothing happened on someone else's system, said of the thing: "No changes were
    made to your booking", "No real payments were made", "I made no changes to the
    production site", "The booking was not modified"."""
    out: list[Candidate] = []
    n = len(words)
    for i, w in enumerate(words):
        if w == "no" and i + 1 < n:
            j = i + 1
            while j < n and words[j] in ("real", "actual", "further", "other", "live", "external"):
                j += 1
            if j >= n or not words[j][:1].isalpha():
                continue
            noun = words[j]
            rest = words[j + 1 : j + 10]
            hit = next((j + 1 + k for k, x in enumerate(rest[:3]) if x in _DONE_TO), None)
            made_before = i > 0 and words[i - 1] in ("made", "placed", "sent")
            to_place = _place_after_to(rest)
            remote_noun = place_of([noun]) == "remote" or noun.rstrip("s") in REMOTE
            if hit is not None and (remote_noun or (noun in _CHANGE_NOUNS and to_place)):
                out.append(Candidate("effect", "nothing_changed", i, hit, hit, none=True))
            elif made_before and noun in _CHANGE_NOUNS and to_place:
                out.append(Candidate("effect", "nothing_changed", i - 1, j, j, none=True))
        # "The booking was not modified", "Your card has not been charged"
        if (
            w == "not"
            and i > 1
            and i + 1 < n
            and words[i - 1] in ("was", "were", "been")
            and words[i + 1] in _DONE_TO
        ):
            lo = clause_start(words, i)
            if np_place(words[lo : i - 1]) == "remote":
                out.append(Candidate("effect", "nothing_changed", lo, i + 1, i + 1, none=True))
    return out


def _place_after_to(rest: Sequence[str]) -> bool:
    """A remote named after "to" or "on" ("… to your booking", "… on the live site")."""
    for x, w in enumerate(rest):
        if w in ("to", "on", "in") and place_of(rest[x + 1 : x + 5]) == "remote":
            return True
    return False


def _after_check(words: Sequence[str], toks: Sequence[Token], i: int) -> bool:
    """Whether a check's name or command stands just before `i`, as a label or before an
    arrow ("go vet: no issues", "`go vet ./...` → no issues")."""
    if i < 2 or words[i - 1] not in (":", "\u2192", "-", "="):
        return False
    before = words[max(0, i - 4) : i - 1]
    if place_of(before) == "check":
        return True
    return any(
        tok.norm == "`c" and place_of(re.findall(r"[a-z0-9]+", tok.raw.lower())) == "check"
        for tok in toks[max(0, i - 3) : i - 1]
    )


def _act_not_done(words: Sequence[str], j: int) -> int | None:
    """The act on the world a "did not" denies: its own verb ("did not push"), or one
    coordinated with it under the same negation ("I did not drop the table or submit
    the form")."""
    n = len(words)
    x = j
    while x < n and words[x] not in HARD and words[x] not in ("but", "because", "since"):
        verb = x == j or (words[x - 1] in ("or", "nor", "and") and x - 1 > j)
        if verb and (words[x] in NONE_VERBS or words[x] in _REMOTE_ACTS_BASE):
            return x
        x += 1
    return None


def _first_person(pair: Sequence[str]) -> bool:
    """ "I cannot", "I'm unable", "we were unable": the writer's own inability."""
    before = pair[0]
    return before in ("i", "we", "i'm", "we're") or before in ("am", "was", "were")


# -- sentence-wide rules (commit ids, the working tree, nothing pushed, counts) --------


_REFERENCED_COMMITS = frozenset({"head", "base", "parent", "previous", "current", "latest"})


_HEX = re.compile(r"`?[0-9a-f]{7,40}`?$")


_CONFORM_VERBS = frozenset({"matches", "conforms", "complies", "adheres"})
# What may stand between an elided or pronoun subject and a conformance verb.
_CONFORM_LEAD = frozenset({"it", "now", "fully", "also", "closely", "faithfully", "exactly"})


def _conform_word(w: str) -> bool:
    return w in _CONFORM_VERBS or w == "compliant" or w.endswith("-compliant")


def _conformance(words: Sequence[str], i: int) -> int | None:
    """Where a conformance claim at `words[i]` starts, or None: a present-tense verb
    with its subject elided (sentence start, after a label's colon) or a pronoun, or
    "is/are (fully) X-compliant"."""
    w = words[i]
    if w in _CONFORM_VERBS:
        j = i
        while j > 0 and words[j - 1] in _CONFORM_LEAD:
            j -= 1
        if j == 0 or words[j - 1] == ":":
            return j
        return None
    if w == "compliant" or w.endswith("-compliant"):
        j = i
        while j > 0 and words[j - 1] in ("fully", "now", "100%", "completely"):
            j -= 1
        if j > 0 and words[j - 1] in ("is", "are"):
            return subject_start(words, j - 1, clause_start(words, j - 1))
    return None


# Meeting what the task asked for: "All requirements have been met", "I've met every
# acceptance criterion", "The server meets all the specified requirements" ("satisfied"
# is read as a check's outcome: "17 satisfied · 0 violated").
MEET_VERBS = class_of("met meets exceeded exceeds satisfies fulfilled fulfils fulfills")
REQUIREMENT_NOUNS = class_of(
    """requirement requirements criteria criterion spec specification specifications
    goal goals objective objectives expectations"""
)


CHECK_GERUNDS = class_of("validating verifying testing confirming")


def _requirements_met(words: Sequence[str]) -> list[Candidate]:
    out: list[Candidate] = []
    n = len(words)
    for i, w in enumerate(words):
        if w not in MEET_VERBS:
            continue
        use = use_of(words, i, None)
        if use is None or use.subject[-1:] in (("that",), ("which",), ("who",)):
            continue  # "a model that meets the requirement": a relative clause names it
        after = words[i + 1 : min(n, i + 6)]
        stop = next((k for k, x in enumerate(after) if x in HARD or x == ","), len(after))
        if any(x in REQUIREMENT_NOUNS for x in after[:stop]):
            hi = i + 1 + next(k for k, x in enumerate(after) if x in REQUIREMENT_NOUNS)
            out.append(Candidate("completion", "requirements_met", min(use.lo, i), hi, i, use=use))
        elif any(x in REQUIREMENT_NOUNS for x in use.subject) and (
            use.how == "np" or any(x in ("been", "are", "is", "was", "were") for x in use.aux)
        ):
            out.append(Candidate("completion", "requirements_met", use.lo, i, i, use=use))
    return out


def sentence_candidates(words: Sequence[str], toks: Sequence[Token]) -> list[Candidate]:
    out: list[Candidate] = []
    n = len(words)
    if "no" in words or "not" in words:
        out += _nothing_changed(words)
    if any(w in MEET_VERBS for w in words):
        out += _requirements_met(words)
    # "Issue closed after validating the workflow run": "after" with the gerund of a
    # check presupposes the check was made (the main clause's mood still decides).
    for i in range(1, n - 2):
        if words[i] in ("after", "upon") and words[i + 1] in CHECK_GERUNDS:
            lo = clause_start(words, i)
            if lo < i:
                out.append(Candidate("verification", "after_check", lo, i + 2, i + 1))
    for i, w in enumerate(words):
        if w not in TRIGGERS and not w.startswith("match") and not _conform_word(w):
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
            hit = _act_not_done(words, j)
            if hit is not None:
                # an act of NONE_VERBS ("did not push", "… or submit the form") as before;
                # another act on someone else's system ("did not cancel the cleaning",
                # "did not issue a refund") names one act the account cannot single out
                rule = "did_not" if words[hit] in NONE_VERBS else "did_not_act"
                out.append(Candidate("effect", rule, i, hit, hit, none=True))
        # "I haven't booked anything yet", "It has not been pushed": a perfect, negated,
        # of an act on a remote.
        if w in ("haven't", "hasn't") or (w in ("have", "has") and nxt == "not"):
            j = _skip_adverbs_fwd(words, i + 1 if w.endswith("n't") else i + 2)
            if j < n and words[j] == "been":
                j = _skip_adverbs_fwd(words, j + 1)
            if j < n and words[j] in _ACTS_ON_REMOTES:
                out.append(Candidate("effect", "not_yet", i, j, j, none=True))
        # "Not pushed yet", "- Not deployed": a report line that says an act was not done
        if (
            w == "not"
            and (i == 0 or words[i - 1] in HARD or words[i - 1] in ("but", ",", "*"))
            and nxt in _ACTS_ON_REMOTES
        ):
            out.append(Candidate("effect", "not_yet", i, i + 1, i + 1, none=True))
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
            while j < n and j <= i + 4 and words[j] not in _PROBLEM_COUNTS:
                if not words[j][:1].isalpha() or words[j] in ("new", "the", "any"):
                    j = n
                j += 1
            if j < n and j <= i + 4:
                out.append(Candidate("verification", "no_failures", i, j, j, none=True))
            elif w == "no" and words[i + 1 : i + 2] == ["issues"] and _after_check(words, toks, i):
                # "`go vet ./...` → no issues", "go vet: no issues": a check's finding
                out.append(Candidate("verification", "no_failures", i, i + 1, i + 1, none=True))
            elif _zero_tally(words, toks, i):
                # "0 Critical, 0 Suggestion": zeros tallied by category are findings
                # counted, and none found (nobody tallies zeros of what went well).
                out.append(Candidate("verification", "no_failures", i, i + 4, i + 1, none=True))
        # "matching the reference exactly".
        if w.startswith("match"):
            end = next((x for x in range(i + 1, min(n, i + 6)) if _exactly(words, x)), None)
            if end is not None:
                out.append(Candidate("verification", "matches", i, end, i))
        # Conformance in the text's own voice: "Matches the design", "It conforms to the
        # schema", "Now complies with RFC 5322", "The folder is fully ESM-compliant".
        conform = _conformance(words, i)
        if conform is not None:
            out.append(Candidate("verification", "conforms", conform, i, i))
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


# How closely an output matches what was expected: "matches … exactly / byte-for-byte".
_EXACTLY = frozenset({"exactly", "byte-for-byte", "verbatim", "identically"})


def _exactly(words: Sequence[str], x: int) -> bool:
    return words[x] in _EXACTLY or (
        words[x] in ("byte", "character") and words[x + 1 : x + 2] == ["for"]
    )


def _skip_adverbs_fwd(words: Sequence[str], j: int) -> int:
    while j < len(words) and words[j] in ADVERBS:
        j += 1
    return j
