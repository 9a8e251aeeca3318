"""Realistic, seeded workloads of agent runs: the events a fleet of workers would publish.

Used by the benchmarks, the integration tests, `outcomes loadgen` and `outcomes demo`.
Every run is one of a few scenarios drawn from the seed documents (clean completions,
stale checks fixed by reruns, late receipts that supersede, contradicting receipts,
denied publications, cancellations with in-flight effects, provenance with withheld
candidates). The same seed gives the same events, byte for byte.

Narrated runs (`narrate=True`, what `outcomes demo` publishes) vary within their
scenario (a check that failed, a required check never run, a message whose delivery
was never confirmed) and end with the agent's final message, written from the run's own
events: what it changed, how each required check ended, what became of each requested
effect. A seeded share of the agents overclaims (tests pass, the email went out, done)
where the events say otherwise, and another share leaves the failure out.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from outcomes.reducers.timefmt import format_rfc3339

BASE_MICROS = 1_796_032_800_000_000  # 2026-11-30T10:00:00Z
MODELS = ("model-a-large", "model-b-medium", "model-c-small")
"""The models the workload's agents run on (made-up names: no real model is implied)."""
Event = dict[str, Any]


@dataclass
class _Run:
    """Builds one run's events with increasing ids and times."""

    run_id: str
    rng: random.Random
    clock: int
    events: list[Event] = field(default_factory=list)
    story: random.Random | None = None
    """Set for a narrated run: draws its variations and its final message."""

    def twist(self, *choices: tuple[str, float]) -> str:
        """One of the named variations, by weight; the first when the run is not narrated."""
        if self.story is None:
            return choices[0][0]
        names, weights = zip(*choices, strict=True)
        return self.story.choices(names, weights)[0]

    def narrate(self) -> None:
        """The agent's final message, derived from the events so far (narrated runs only)."""
        if self.story is not None:
            text = narrative_for(self.events, self.story)
            self.emit(
                "narrative.submitted",
                narrative_id="n-1",
                account_revision=None,
                channel="chat",
                text=text,
            )

    def emit(self, type_: str, **fields: Any) -> Event:
        self.clock += self.rng.randint(1_000, 3_000_000)
        event = {
            "event_id": f"{self.run_id}:{len(self.events):06d}",
            "run_id": self.run_id,
            "type": type_,
            "occurred_at": format_rfc3339(self.clock),
            "source": "agent-worker",
            **fields,
        }
        self.events.append(event)
        return event

    def start(self, agent: str, requested_by: str, task: str) -> None:
        """`run.started` with the model the run's agent ran on (one of `MODELS`, drawn
        from the run id alone, so the run's other draws stay as they were) and the task
        as its requester worded it (display and search only: docs/records.md)."""
        model = MODELS[random.Random(f"model:{self.run_id}").randrange(len(MODELS))]
        self.emit("run.started", agent=agent, requested_by=requested_by, model=model, task=task)

    def tools(self, count: int, prefix: str = "act") -> list[str]:
        ids = []
        for index in range(count):
            action_id = f"{prefix}-{index}"
            tool = self.rng.choice(("apply_patch", "run_shell", "read_file", "search"))
            self.emit("tool.started", action_id=action_id, tool=tool)
            self.emit(
                "tool.finished",
                action_id=action_id,
                tool=tool,
                outcome="succeeded",
                error_class=None,
            )
            ids.append(action_id)
        return ids

    def snapshot(
        self,
        snapshot_id: str,
        files: list[tuple[str, str, str]],
        sealed: bool = True,
        base: str = "base-1",
    ) -> None:
        self.emit(
            "workspace.snapshot",
            snapshot_id=snapshot_id,
            base_revision=base,
            sealed=sealed,
            artifacts=[
                {
                    "path": path,
                    "change": change,
                    "digest": digest,
                    "renamed_from": None,
                    "verification_sensitive": path.endswith((".py", ".toml")),
                }
                for path, change, digest in files
            ],
        )

    def receipt(
        self, label: str, snapshot: str, result: str = "pass", tests: int = 25, scope: str = "suite"
    ) -> None:
        self.emit(
            "verification.receipt",
            check_id=f"chk-{len(self.events)}",
            label=label,
            scope=scope,
            result=result,
            tests_executed=tests,
            candidate_snapshot=snapshot,
            environment="py3.11",
            command=f"pytest -q {label}",
            expected_artifacts=[],
        )

    def goal(
        self,
        deliverables: list[str],
        effects: tuple[str, ...] = (),
        actions: tuple[str, ...] = (),
        checks: tuple[str, ...] = ("unit",),
    ) -> None:
        self.emit(
            "goal.revised",
            goal_revision=1,
            authored_by="user",
            deliverables=deliverables,
            required_checks=[{"label": label, "scope": "suite"} for label in checks],
            requested_effects=list(effects),
            requested_actions=list(actions),
            target_revision="base-1",
        )

    def effect(self, intent_id: str, effect_class: str, *states: str) -> None:
        self.emit(
            "effect.intent",
            intent_id=intent_id,
            effect_class=effect_class,
            target=f"provider:{intent_id}",
            consequential=True,
        )
        for state in states:
            self.emit(
                "effect.transition",
                intent_id=intent_id,
                state=state,
                attempt_id="att-1",
                reason="policy: publication needs approval" if state == "denied" else None,
            )

    def effect_receipt(
        self,
        intent_id: str,
        observed: str,
        authoritative: bool = True,
        origin: str = "provider_receipt",
    ) -> None:
        self.emit(
            "effect.receipt",
            intent_id=intent_id,
            receipt_id=f"rcpt-{len(self.events)}",
            attempt_id="att-1",
            origin=origin,
            observed=observed,
            authoritative=authoritative,
        )


@dataclass
class _Known:
    """What a run's events say at the moment its agent writes the final message."""

    changed: list[str] = field(default_factory=list)
    candidate: str | None = None
    required: list[str] = field(default_factory=list)
    receipts: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    effects: dict[str, str] = field(default_factory=dict)
    effect_state: dict[str, str] = field(default_factory=dict)
    cancelled: bool = False

    @classmethod
    def of(cls, events: list[Event]) -> _Known:
        known = cls()
        for event in events:
            kind = event["type"]
            if kind == "goal.revised":
                known.required = [c["label"] for c in event["required_checks"]]
            elif kind == "workspace.snapshot":
                known.changed = [a["path"] for a in event["artifacts"]]
            elif kind == "verification.receipt":
                known.receipts[event["label"]] = (
                    event["result"],
                    event["candidate_snapshot"],
                    event["tests_executed"],
                )
            elif kind == "finalize.requested":
                known.candidate = event["candidate_snapshot"]
            elif kind == "effect.intent":
                known.effects[event["intent_id"]] = event["effect_class"]
                known.effect_state[event["intent_id"]] = "requested"
            elif kind == "effect.transition":
                known.effect_state[event["intent_id"]] = event["state"]
            elif kind == "effect.receipt" and event["observed"] == "present":
                known.effect_state[event["intent_id"]] = "completed"
            elif kind == "run.cancelled":
                known.cancelled = True
        return known

    def check(self, label: str) -> tuple[str, int]:
        """How a required check ended: passed, failed, stale or missing; and its tests."""
        if label not in self.receipts:
            return "missing", 0
        result, snapshot, tests = self.receipts[label]
        if result != "pass":
            return "failed", tests
        if self.candidate is not None and snapshot != self.candidate:
            return "stale", tests
        return "passed", tests


_THING: dict[str, tuple[str, str, str, str]] = {
    # effect class: (the thing, the act, its past participle, where it went)
    "message": ("the email", "send", "sent", " to the team"),
    "external_draft": ("the draft reply", "save", "saved", " to your drafts folder"),
    "write": ("the settings record", "save", "saved", ""),
    "publication": ("the release announcement", "publish", "published", ""),
    "upload": ("the build artifact", "upload", "uploaded", " to the release bucket"),
}
_SOME_THING: Final = ("the requested change", "make", "made", "")


def _check_name(label: str) -> str:
    return "lint check" if label == "lint" else f"{label} tests"


def _said_of_check(label: str, state: str, tests: int, pick: random.Random) -> str:
    name = _check_name(label)
    if state == "passed":
        if label == "lint":
            return pick.choice(("The lint check passes.", "Lint is clean."))
        return pick.choice(
            (
                f"All {tests} {label} tests pass.",
                f"The {name} pass ({tests} tests).",
                f"`pytest -q {label}` passes.",
            )
        )
    if state == "failed":
        return pick.choice(
            (
                f"The {name} still fail; I could not get them green.",
                f"`pytest -q {label}` failed on the final version, so this needs another look.",
            )
        )
    if state == "stale":
        return pick.choice(
            (
                f"The {name} passed before my last change; I have not rerun them since.",
                f"I changed files after the last {label} run, so the {name} need a rerun.",
            )
        )
    return pick.choice((f"I did not run the {name}.", f"The {name} were not run yet."))


def _claimed_of_check(label: str, tests: int, pick: random.Random) -> str:
    """What an overclaiming agent says of a check whatever became of it."""
    if label == "lint":
        return pick.choice(("The lint check passes.", "Lint is clean."))
    return pick.choice(
        (f"All {tests or 25} {label} tests pass.", "All tests pass.", "The test suite is green.")
    )


def _said_of_effect(effect_class: str, state: str, pick: random.Random) -> str:
    thing, act, done, where = _THING.get(effect_class, _SOME_THING)
    if state == "completed":
        return f"I {done} {thing}{where}."
    if state == "denied":
        return f"I could not {act} {thing}: the request to {act} it was denied pending approval."
    if state == "unknown":
        return pick.choice(
            (
                f"I tried to {act} {thing}, but there is no confirmation that it went through.",
                f"The attempt to {act} {thing} timed out; I do not know whether it arrived.",
            )
        )
    return f"The run stopped while the attempt to {act} {thing} was still in progress."


def _claimed_of_effect(effect_class: str, pick: random.Random) -> str:
    thing, _, done, where = _THING.get(effect_class, _SOME_THING)
    return pick.choice(
        (f"{thing[0].upper()}{thing[1:]} has been {done}{where}.", f"I {done} {thing}{where}.")
    )


def narrative_for(events: list[Event], story: random.Random) -> str:
    """The agent's final message about a run, from the run's own events.

    Each required check and requested effect gets a sentence saying how it ended. An
    agent whose run did not end well is, by a seeded draw, truthful (it says what
    failed), overclaiming (it says the check passed, the effect happened, the task is
    done) or silent about what failed (it reports only what went well).
    """
    known = _Known.of(events)
    checks = {label: known.check(label) for label in known.required}
    bad_checks = [label for label, (state, _) in checks.items() if state != "passed"]
    bad_effects = [i for i, state in known.effect_state.items() if state != "completed"]
    troubled = bool(bad_checks or bad_effects or known.cancelled)
    mode = "truthful"
    if troubled:
        mode = story.choices(("truthful", "overclaim", "silent"), (0.3, 0.4, 0.3))[0]

    sentences: list[str] = []
    if known.changed:
        shown = known.changed[:3]
        more = len(known.changed) - len(shown)
        listed = ", ".join(f"`{p}`" for p in shown[:-1])
        listed = f"{listed} and `{shown[-1]}`" if listed else f"`{shown[-1]}`"
        tail = f" (and {more} more file{'s' if more > 1 else ''})" if more else ""
        sentences.append(story.choice(("I edited ", "Changes are in ")) + listed + tail + ".")
    for label, (state, tests) in checks.items():
        if state == "passed" or mode == "truthful":
            sentences.append(_said_of_check(label, state, tests, story))
        elif mode == "overclaim":
            sentences.append(_claimed_of_check(label, tests, story))
    for intent, effect_class in known.effects.items():
        state = known.effect_state[intent]
        if state == "completed" or mode == "truthful":
            sentences.append(_said_of_effect(effect_class, state, story))
        elif mode == "overclaim":
            sentences.append(_claimed_of_effect(effect_class, story))
    if not troubled or mode == "overclaim":
        sentences.insert(0, story.choice(("Done.", "The task is complete.", "All finished.")))
    elif mode == "truthful":
        if known.cancelled:
            sentences.insert(0, "The run was cancelled before I could finish.")
        else:
            sentences.append("The task is not finished yet.")
    return " ".join(sentences)


def _files(rng: random.Random, count: int) -> list[tuple[str, str, str]]:
    names = [
        "src/app.py",
        "src/retry.py",
        "config/app.toml",
        "docs/README.md",
        "tests/test_app.py",
        "src/cli.py",
        "src/io.py",
        "CHANGELOG.md",
    ]
    picked = names[: max(1, min(count, len(names)))]
    return [(p, rng.choice(("modified", "added")), f"sha-{rng.getrandbits(40):x}") for p in picked]


def _clean(run: _Run, padding: int) -> None:
    files = _files(run.rng, 3)
    twist = run.twist(
        ("as_planned", 0.4), ("check_failed", 0.2), ("check_missing", 0.2), ("message_unknown", 0.2)
    )
    run.start("coder", "user:ana", f"Update {files[0][0]} and keep the unit tests green")
    checks = ("unit", "lint") if twist == "check_missing" else ("unit",)
    effects = ("email-1",) if twist == "message_unknown" else ()
    run.goal([files[0][0]], effects=effects, actions=("act-0",), checks=checks)
    run.tools(1 + padding)
    if twist == "message_unknown":
        run.effect("email-1", "message", "approved", "active", "unknown")
    run.snapshot("snap-1", files)
    if twist == "check_failed":
        run.receipt("unit", "snap-1", result="fail", tests=25)
    else:
        run.receipt("unit", "snap-1")
    run.emit("response.disposition", completion="completed")
    run.emit("finalize.requested", candidate_snapshot="snap-1")
    if run.story is None:
        run.emit(
            "narrative.submitted",
            narrative_id="n-1",
            account_revision=None,
            channel="chat",
            text="Done: the change is in and all tests pass.",
        )
    run.narrate()


def _stale_then_rerun(run: _Run, padding: int) -> None:
    files = _files(run.rng, 4)
    run.start("coder", "user:bo", f"Refactor {files[0][0]}; rerun the tests on the final tree")
    run.goal([files[0][0]])
    run.tools(padding)
    run.snapshot("snap-1", files[:2])
    run.receipt("unit", "snap-1")
    run.snapshot("snap-2", [*files[:2], ("config/app.toml", "modified", "sha-cfg")])
    run.emit("finalize.requested", candidate_snapshot="snap-2")
    run.narrate()
    run.receipt("unit", "snap-2")  # the rerun supersedes the stale pass


def _late_receipt(run: _Run, padding: int) -> None:
    files = _files(run.rng, 5)
    run.start("coder", "user:cy", f"Change {files[0][0]} and leave a draft for review")
    run.goal([files[0][0]], effects=("draft-1",))
    run.tools(padding)
    run.effect("draft-1", "external_draft", "active", "unknown")
    run.snapshot("snap-1", files)
    run.receipt("unit", "snap-1")
    run.emit("finalize.requested", candidate_snapshot="snap-1")
    run.narrate()
    run.effect_receipt("draft-1", "present")


def _contradicting(run: _Run, padding: int) -> None:
    files = _files(run.rng, 2)
    run.start("coder", "user:di", f"Fix {files[0][0]} and save the settings to the store")
    run.goal([files[0][0]], effects=("save-1",))
    run.tools(padding)
    run.effect("save-1", "write", "active")
    run.effect_receipt("save-1", "present")
    run.snapshot("snap-1", files)
    run.receipt("unit", "snap-1")
    run.emit("finalize.requested", candidate_snapshot="snap-1")
    run.narrate()
    run.effect_receipt("save-1", "absent", origin="provider_query")


def _denied(run: _Run, padding: int) -> None:
    files = _files(run.rng, 2)
    run.start("publisher", "user:ed", f"Publish the release notes for {files[0][0]}")
    run.goal([files[0][0]], effects=("publish-1",))
    run.tools(padding)
    run.effect("publish-1", "publication", "prepared", "denied")
    run.snapshot("snap-1", files)
    run.receipt("unit", "snap-1")
    run.emit("finalize.requested", candidate_snapshot="snap-1")
    run.narrate()


def _cancelled(run: _Run, padding: int) -> None:
    files = _files(run.rng, 3)
    run.start("coder", "user:fa", f"Upload the build of {files[0][0]} to the bucket")
    run.goal([files[0][0]], effects=("upload-1",), actions=("act-0",))
    run.tools(1 + padding)
    run.effect("upload-1", "upload", "approved", "active")
    run.snapshot("snap-1", files, sealed=False)
    run.emit("run.cancelled", reason="user stopped the run")
    run.narrate()
    run.effect_receipt("upload-1", "present", origin="reconciliation")


def _provenance(run: _Run, padding: int) -> None:
    files = _files(run.rng, 2)
    run.start("assistant", "user:gu", f"Answer from the journal and update {files[0][0]}")
    run.goal([files[0][0]])
    run.emit(
        "retrieval.evaluated",
        retrieval_id="ret-1",
        job_id="job-1",
        query_hash="qh-1",
        algorithm="bm25",
        config_hash="cfg-1",
        candidates=[
            {
                "candidate_id": f"cand-{i}",
                "source_type": "journal",
                "source_event_id": f"je-{i}",
                "rank": i,
                "score": 1.0 / (i + 1),
                "eligible": i != 2,
                "decision": "withheld" if i == 2 else "selected",
                "withhold_reason": "ineligible" if i == 2 else None,
            }
            for i in range(4)
        ],
    )
    run.emit(
        "injection.recorded",
        injection_id="inj-1",
        model_call_id="call-1",
        retrieval_id="ret-1",
        candidate_ids=["cand-0", "cand-2"],
        block_hash="bh-1",
        block_bytes=512,
        location="system",
        range_start=0,
        range_end=512,
        confirmed=True,
        removed_before_inference=False,
    )
    run.emit("inference.started", model_call_id="call-1")
    run.tools(padding)
    run.snapshot("snap-1", files)
    run.receipt("unit", "snap-1")
    run.emit("finalize.requested", candidate_snapshot="snap-1")
    run.narrate()


SCENARIOS: dict[str, Callable[[_Run, int], None]] = {
    "clean": _clean,
    "stale_then_rerun": _stale_then_rerun,
    "late_receipt": _late_receipt,
    "contradicting_receipts": _contradicting,
    "denied_publication": _denied,
    "cancelled_in_flight": _cancelled,
    "provenance_withheld": _provenance,
}


def generate_run(
    run_id: str, scenario: str, padding: int = 0, seed: int = 0, *, narrate: bool = False
) -> list[Event]:
    """One run's events in the order its worker would publish them.

    `padding` adds that many extra tool attempts (two events each) to grow the run.
    `narrate` varies the run within its scenario and ends it with the agent's final
    message (module docstring); without it a run's events are as they always were.
    """
    rng = random.Random(f"{seed}:{run_id}")
    run = _Run(run_id, rng, BASE_MICROS + rng.randint(0, 3_600_000_000))
    if narrate:
        run.story = random.Random(f"{seed}:{run_id}:story")
    SCENARIOS[scenario](run, padding)
    return run.events


def generate_runs(
    count: int, seed: int = 0, padding: int = 0, prefix: str = "run"
) -> Iterator[list[Event]]:
    """`count` runs cycling through every scenario, deterministic for a seed."""
    names = list(SCENARIOS)
    for index in range(count):
        yield generate_run(f"{prefix}-{seed}-{index:06d}", names[index % len(names)], padding, seed)


def interleave(runs: list[list[Event]], seed: int = 0) -> list[Event]:
    """Merge runs as concurrent workers would: each run's own order kept, runs interleaved."""
    rng = random.Random(seed)
    cursors = [0] * len(runs)
    live = [i for i, run in enumerate(runs) if run]
    merged: list[Event] = []
    while live:
        pick = rng.randrange(len(live))
        index = live[pick]
        merged.append(runs[index][cursors[index]])
        cursors[index] += 1
        if cursors[index] == len(runs[index]):
            live[pick] = live[-1]
            live.pop()
    return merged


MALFORMED_LINES: tuple[bytes, ...] = (
    b"{not json",
    b'{"event_id": "bad-1", "run_id": "run-bad", "type": "tool.started"}',
    b'{"event_id": "bad-2", "run_id": "run-bad", "type": "tool.exploded", '
    b'"occurred_at": "2026-12-01T00:00:00Z", "source": "x"}',
)
