"""The pre-display gate's judgement (SPEC 8): a candidate answer against the run's account.

`check` reads the answer as §6 reads a narrative, judges each claim against one account
revision and decides what the runtime may show:

- `pass`: no claim is contradicted. What the answer leaves out (§6 `omitted`) comes back
  as an appendix rendered from the account; `needs_review` claims are listed, and do not
  block.
- `repair`: the first check of an answer chain found contradictions. The instruction
  names each one beside the authoritative fact, and the state block is what the final
  voice may explain but not upgrade.
- `contain`: a later check of the same chain still contradicts. The answer to show is
  rendered from the account alone (`contained`).

A claim map (`MappedClaim`) names, for a span of the answer, the account entries it rests
on; such a claim is judged against exactly those entries, and an entry the account does
not hold (another run's, or none) is a `GateInputError`. Text outside the mapped spans is
read as prose. Pure and deterministic: the same account, text, map and attempt give the
same result, byte for byte. Whether the account is current enough (read your writes) is
the caller's question: this module judges the account it is given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from outcomes.reducers.claims.checker import (
    Facts,
    Judged,
    Judgement,
    judge_reading,
    read,
)
from outcomes.reducers.claims.formulation import open_obligations, supported_formulation
from outcomes.reducers.claims.grammar import ClaimKind
from outcomes.reducers.errors import OutcomesError

Decision = Literal["pass", "repair", "contain"]
Account = Mapping[str, Any]

CLAIM_KINDS: tuple[ClaimKind, ...] = ("completion", "verification", "effect", "persistence")
# The families an entry of a claim map may name, as `family:id`.
ENTRY_FAMILIES = ("check", "receipt", "effect", "artifact", "action")
# Bounds on what one check may be asked and what it answers.
MAX_TEXT_CHARS = 60_000
MAX_MAPPED_CLAIMS = 200
MAX_ENTRIES_PER_CLAIM = 50
STATE_BLOCK_ROWS = 12  # rows per section of the state block; the rest is counted
_CHANGED = frozenset({"added", "modified", "generated", "renamed"})


class GateInputError(OutcomesError):
    """The request cannot be judged as given: a span outside the text, an unknown kind,
    an entry the run's account does not hold. Nothing is recorded.

    Callers: fix the claim map (entries are `check:<label>`, `receipt:<check_id>`,
    `effect:<intent_id>`, `artifact:<path>`, `action:<action_id>` of this run).
    """

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


@dataclass(frozen=True, slots=True)
class MappedClaim:
    """One claim of a claim map: the span of the answer it covers, its kind, and the
    account entries it rests on."""

    start: int
    end: int
    kind: ClaimKind
    entries: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CheckedClaim:
    """One claim (or omission) of the answer with its verdict and what decided it.

    `entries` are the account entries it was judged against; `supported` is the sentence
    the account supports in its place (contradicted) or the obligation (omitted);
    `source` says whether the claim map named it (`map`) or the reader found it (`prose`,
    `omission`)."""

    key: str
    kind: ClaimKind
    verdict: str
    reason: str
    source: Literal["map", "prose", "omission"]
    start: int | None
    end: int | None
    text: str | None
    entries: tuple[str, ...]
    supported: str | None


@dataclass(frozen=True, slots=True)
class GateResult:
    """What the gate answers. `instruction` is set for `repair`, `contained` for
    `contain`, `appendix` for a `pass` that leaves obligations out."""

    decision: Decision
    revision: int | None
    claims: tuple[CheckedClaim, ...]
    omissions: tuple[CheckedClaim, ...]
    state_block: str
    instruction: str | None = None
    appendix: str | None = None
    contained: str | None = None

    @property
    def contradicted(self) -> tuple[CheckedClaim, ...]:
        return tuple(c for c in self.claims if c.verdict == "contradicted")

    @property
    def needs_review(self) -> tuple[CheckedClaim, ...]:
        return tuple(c for c in self.claims if c.verdict == "needs_review")

    def counts(self) -> dict[str, int]:
        """Claims by verdict, omissions included, every verdict present (0 or more)."""
        out = dict.fromkeys(
            ("supported", "contradicted", "unverifiable", "needs_review", "omitted"), 0
        )
        for c in (*self.claims, *self.omissions):
            out[c.verdict] = out.get(c.verdict, 0) + 1
        return out


# -- the claim map ---------------------------------------------------------------------------


def parse_claim_map(raw: object, text: str) -> tuple[MappedClaim, ...]:
    """A claim map from its JSON form (a list of `{"start", "end", "kind", "entries"}`),
    checked against the text's length; the entries are checked against the account by
    `check`. Raises `GateInputError` with the first thing wrong."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise GateInputError("bad_claim_map", "the claim map must be a list of claims")
    if len(raw) > MAX_MAPPED_CLAIMS:
        raise GateInputError(
            "bad_claim_map", f"{len(raw)} claims; at most {MAX_MAPPED_CLAIMS} are taken"
        )
    out: list[MappedClaim] = []
    for i, item in enumerate(raw):
        where = f"claim {i}"
        if not isinstance(item, dict):
            raise GateInputError("bad_claim_map", f"{where} is not an object")
        start, end, kind, entries = (item.get(k) for k in ("start", "end", "kind", "entries"))
        if not (type(start) is int and type(end) is int and 0 <= start < end <= len(text)):
            raise GateInputError(
                "bad_claim_map",
                f"{where}: start and end must be whole numbers with 0 <= start < end <= "
                f"{len(text)} (the text's length)",
            )
        if kind not in CLAIM_KINDS:
            raise GateInputError(
                "bad_claim_map", f"{where}: kind must be one of {', '.join(CLAIM_KINDS)}"
            )
        if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
            raise GateInputError("bad_claim_map", f"{where}: entries must be a list of strings")
        if len(entries) > MAX_ENTRIES_PER_CLAIM:
            raise GateInputError(
                "bad_claim_map", f"{where}: at most {MAX_ENTRIES_PER_CLAIM} entries a claim"
            )
        for entry in entries:
            family, sep, ident = entry.partition(":")
            if not sep or family not in ENTRY_FAMILIES or not ident:
                raise GateInputError(
                    "bad_claim_map",
                    f"{where}: entry {entry[:80]!r} is not one of "
                    + ", ".join(f"{f}:<id>" for f in ENTRY_FAMILIES),
                )
        out.append(MappedClaim(start, end, kind, tuple(entries)))
    return tuple(out)


class _Entries:
    """The account's entries by family, and how each one stands."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.receipts: dict[str, str] = {}  # check_id -> label
        for check in facts.account.get("checks") or ():
            if check.get("check_id"):
                self.receipts[str(check["check_id"])] = str(check["label"])
        self.actions = {str(a["action_id"]): a for a in facts.account.get("actions") or ()}

    def holds(self, entry: str) -> bool:
        family, _, ident = entry.partition(":")
        facts = self.facts
        if family == "check":
            return ident in facts.checks or f"check:{ident}" in facts.predicates
        if family == "receipt":
            return ident in self.receipts
        if family == "effect":
            return ident in facts.effects or f"effect:{ident}" in facts.predicates
        if family == "artifact":
            return ident in facts.artifacts
        return ident in self.actions

    def problem(self, entry: str) -> tuple[str, str | None]:
        """(subject, the problem or None) for one entry the account holds."""
        family, _, ident = entry.partition(":")
        facts = self.facts
        if family == "receipt":
            label = self.receipts[ident]
            return f"check:{label}", facts.check_problem(label)
        if family == "check":
            return entry, facts.check_problem(ident)
        if family == "effect":
            return entry, facts.effect_problem(ident)
        if family == "artifact":
            change = facts.artifacts[ident]["change"]
            return entry, None if change in _CHANGED else f"artifact_{change}"
        outcome = self.actions[ident].get("outcome")
        return entry, None if outcome == "succeeded" else f"action_{outcome}"


def _judge_mapped(claim: MappedClaim, entries: _Entries) -> Judgement:
    """A mapped claim against exactly the entries it names: supported when none has a
    problem, contradicted by the first that has. A completion claim with no entries
    rests on the run's status."""
    if not claim.entries:
        status = entries.facts.status
        if claim.kind != "completion" or status is None:
            return Judgement("unverifiable", None, "no_entries")
        if status == "complete":
            return Judgement("supported", None, "status_complete")
        return Judgement("contradicted", None, f"status_{status}")
    for entry in claim.entries:
        subject, problem = entries.problem(entry)
        if problem is not None:
            return Judgement("contradicted", subject, problem)
    only = entries.problem(claim.entries[0])[0] if len(claim.entries) == 1 else None
    return Judgement("supported", only, "entries_hold")


# -- the check ---------------------------------------------------------------------------------


def check(
    account: Account | None,
    text: str,
    claim_map: Sequence[MappedClaim] = (),
    attempt: int = 1,
) -> GateResult:
    """Judge `text` against `account` (a revision body; None when the run has no account
    yet) and decide. `attempt` is the answer's place in its chain: 1 for the first
    answer, 2 or more for a repaired one (whose contradictions end in `contain`)."""
    if attempt < 1:
        raise GateInputError("bad_attempt", "attempt counts from 1")
    if len(text) > MAX_TEXT_CHARS:
        raise GateInputError(
            "text_too_long", f"{len(text)} characters; the gate reads at most {MAX_TEXT_CHARS}"
        )
    facts = Facts(account) if account is not None else None
    mapped: list[CheckedClaim] = []
    if claim_map:
        if facts is None:
            raise GateInputError("no_account", "the run has no account to hold the map's entries")
        entries = _Entries(facts)
        for claim in claim_map:
            unknown = [e for e in claim.entries if not entries.holds(e)]
            if unknown:
                raise GateInputError(
                    "unknown_entry",
                    f"{unknown[0][:120]!r} is not an entry of this run's account",
                )
        for i, claim in enumerate(claim_map):
            judgement = _judge_mapped(claim, entries)
            mapped.append(_checked(f"map:{i}", claim.kind, judgement, "map", claim, text, account))
    spans = [(c.start, c.end) for c in claim_map]
    prose: list[CheckedClaim] = []
    omissions: list[CheckedClaim] = []
    covered_subjects = {c.entries[0] for c in mapped if c.entries}
    for judged in judge_reading(read(text), account):
        if judged.span is None:
            if judged.judgement.subject in covered_subjects:
                continue
            omissions.append(_from_judged(judged, "omission", text, account))
        elif not any(judged.span[0] < hi and lo < judged.span[1] for lo, hi in spans):
            prose.append(_from_judged(judged, "prose", text, account))
    claims = tuple(sorted((*mapped, *prose), key=lambda c: (c.start or 0, c.key)))
    revision = account.get("revision") if account is not None else None
    block = state_block(account)
    owed = tuple(omissions)
    contradicted = [c for c in claims if c.verdict == "contradicted"]
    if not contradicted:
        return GateResult("pass", revision, claims, owed, block, appendix=_appendix(owed))
    if attempt == 1:
        instruction = _instruction(contradicted, owed, block)
        return GateResult("repair", revision, claims, owed, block, instruction=instruction)
    return GateResult("contain", revision, claims, owed, block, contained=contained_answer(account))


def _checked(
    key: str,
    kind: ClaimKind,
    judgement: Judgement,
    source: Literal["map", "prose", "omission"],
    claim: MappedClaim | None,
    text: str,
    account: Account | None,
) -> CheckedClaim:
    start, end = (claim.start, claim.end) if claim is not None else (None, None)
    span = (claim.start, claim.end) if claim is not None else None
    judged = Judged(key, kind, judgement, span)
    entries = claim.entries if claim is not None else _subject_entries(judgement)
    return CheckedClaim(
        key,
        kind,
        judgement.verdict,
        judgement.reason,
        source,
        start,
        end,
        text[start:end] if start is not None else None,
        entries,
        supported_formulation(judged, account),
    )


def _from_judged(
    judged: Judged, source: Literal["prose", "omission"], text: str, account: Account | None
) -> CheckedClaim:
    span = judged.span
    return CheckedClaim(
        f"{source}:{judged.key}",
        judged.kind,
        judged.judgement.verdict,
        judged.judgement.reason,
        source,
        span[0] if span else None,
        span[1] if span else None,
        text[span[0] : span[1]] if span else None,
        _subject_entries(judged.judgement),
        supported_formulation(judged, account),
    )


def _subject_entries(judgement: Judgement) -> tuple[str, ...]:
    subject = judgement.subject
    if subject is None or subject.partition(":")[0] not in ENTRY_FAMILIES:
        return ()
    return (subject,)


# -- what the final voice is given -------------------------------------------------------------


def _rows(items: Sequence[str]) -> list[str]:
    shown = [f"- {item}" for item in items[:STATE_BLOCK_ROWS]]
    if len(items) > STATE_BLOCK_ROWS:
        shown.append(f"- … and {len(items) - STATE_BLOCK_ROWS} more")
    return shown


def state_block(account: Account | None) -> str:
    """The compact, delimited block of machine state the final voice may explain but not
    upgrade: status, checks, effects, changed files and what is still open. Bounded:
    each section shows at most `STATE_BLOCK_ROWS` rows and counts the rest."""
    if account is None:
        empty = ("<outcome-account>", "no account yet: nothing is confirmed", "</outcome-account>")
        return "\n".join(empty)
    run, revision = account.get("run_id", "?"), account.get("revision", "?")
    lines = [f'<outcome-account run="{run}" revision="{revision}">']
    dims = account.get("dimensions") or {}
    shown_dims = ", ".join(f"{k} {v}" for k, v in sorted(dims.items()) if v is not None)
    lines.append(f"status: {account.get('status')}" + (f" ({shown_dims})" if shown_dims else ""))
    checks = [
        f"{c['label']}: {c['state']}"
        + (f", {c['tests_executed']} tests" if c.get("tests_executed") is not None else "")
        + (f", on {c['candidate_snapshot']}" if c.get("candidate_snapshot") else "")
        for c in sorted(account.get("checks") or (), key=lambda c: str(c["label"]))
    ]
    lines += ["checks:", *(_rows(checks) or ["- none reported"])]
    effects = [
        f"{e['intent_id']} ({e.get('effect_class') or 'effect'}): {e['state']}"
        + (f", receipts {', '.join(e['receipts'])}" if e.get("receipts") else ", no receipt")
        for e in sorted(account.get("effects") or (), key=lambda e: str(e["intent_id"]))
    ]
    lines += ["effects:", *(_rows(effects) or ["- none"])]
    artifacts = [
        f"{a['path']}: {a['change']}"
        for a in sorted(account.get("artifacts") or (), key=lambda a: str(a["path"]))
    ]
    lines += ["files:", *(_rows(artifacts) or ["- none in the candidate"])]
    still_open = [sentence for _, sentence in open_obligations(account)]
    lines += ["not confirmed:", *(_rows(still_open) or ["- nothing"])]
    lines.append("</outcome-account>")
    return "\n".join(lines)


def _appendix(omissions: Sequence[CheckedClaim]) -> str | None:
    said = [o.supported for o in omissions if o.supported]
    if not said:
        return None
    return "Not covered above, from the run's account:\n" + "\n".join(f"- {s}" for s in said)


def _instruction(
    contradicted: Sequence[CheckedClaim], omissions: Sequence[CheckedClaim], block: str
) -> str:
    lines = ["The answer contradicts the run's account. Rewrite it once:"]
    for c in contradicted:
        fact = c.supported or f"the account does not support it ({c.reason})"
        lines.append(f'- "{c.text}" is contradicted: {fact}.')
    for o in omissions:
        if o.supported:
            lines.append(f"- not addressed: {o.supported}.")
    lines.append(
        "State only what the account supports. You may explain, apologise and suggest next "
        "steps; do not upgrade a failed, unknown or missing fact."
    )
    lines.append(block)
    return "\n".join(lines)


def contained_answer(account: Account | None) -> str:
    """The answer shown when a repaired answer still contradicts: the account's facts
    alone, in bounded prose."""
    head = (
        "The agent's answer could not be confirmed against the run's record, so this "
        "summary of the record is shown instead."
    )
    if account is None:
        return f"{head}\nNothing about this run is confirmed yet."
    status = account.get("status")
    lines = [head, f"Status: {status}."]
    still_open = [sentence for _, sentence in open_obligations(account)]
    if still_open:
        lines.append("Not confirmed:")
        lines += _rows(still_open)
    changed = [a["path"] for a in account.get("artifacts") or () if a.get("change") in _CHANGED]
    if changed:
        lines.append(f"Files changed in the candidate: {len(changed)}.")
    return "\n".join(lines)
