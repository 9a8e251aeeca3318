"""Claims that status lines and negative reports make by their shape, not by a head word
(docs/claims.md, "The candidate rule"):

- a status token of its own: `COMMIT_COMPLETE`, `TASK_DONE`, a closing `TERMINATE`;
- a status in a snake-case value: "CI all_pass";
- a check that found nothing: "didn't find any security issues", "found no errors",
  "Zero broken links";
- nothing external happened, said of the act or of its object: "without force-pushing",
  "no message reached the mailbox", "no email was sent";
- a check verb with a result adverb: "Code compiles successfully", "builds cleanly".
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from outcomes.reducers.claims.constructions import Candidate
from outcomes.reducers.claims.lexicon import class_of
from outcomes.reducers.claims.narrative import Token

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


def status_candidates(words: Sequence[str], toks: Sequence[Token]) -> list[Candidate]:
    out: list[Candidate] = []
    n = len(words)
    alpha = [i for i, w in enumerate(words) if w[:1].isalpha() or w.startswith("`")]
    if len(alpha) == 1 and _SENTINEL.fullmatch(toks[alpha[0]].raw):
        i = alpha[0]
        out.append(Candidate("completion", "sentinel", i, i, i))
    for i, w in enumerate(words):
        nxt = words[i + 1] if i + 1 < n else ""
        if _PASS_VALUE.fullmatch(w) and i > 0 and words[i - 1][:1].isalpha():
            out.append(Candidate("verification", "pass_value", i - 1, i, i))
        # "didn't find any … issues", "did not detect errors"
        if (w == "didn't" or (w == "did" and nxt == "not")) and i + 2 < n:
            j = i + 1 if w == "didn't" else i + 2
            if words[j] in FIND_VERBS:
                hit = next((x for x in range(j + 1, min(n, j + 8)) if words[x] in FINDINGS), None)
                if hit is not None:
                    out.append(Candidate("verification", "found_none", i, hit, j, none=True))
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
    return out
