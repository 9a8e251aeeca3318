"""Hypothesis strategies: whole runs of events over small domains, so that events collide.

Small id pools (three actions, two intents, three snapshots…) and a narrow time range
make the interesting cases frequent: reruns, conflicting outcomes, disagreeing
receipts, snapshot conflicts, ties in `occurred_at` broken by `event_id`.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from outcomes.reducers.timefmt import format_rfc3339

RUN_ID = "run-prop"
BASE = 1_796_032_800_000_000
PATHS = ("src/a.py", "src/b.py", "conf/c.toml", "README.md")
SNAPSHOTS = ("s1", "s2", "s3")
LABELS = ("unit", "lint")
ACTIONS = ("a1", "a2", "a3")
INTENTS = ("i1", "i2")
CALLS = ("c1", "c2")
RETRIEVALS = ("r1", "r2")
CANDIDATES = ("k1", "k2", "k3")

Body = dict[str, Any]


def _subset(items: tuple[str, ...]) -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(items), unique=True, max_size=len(items)).map(sorted)


artifact = st.fixed_dictionaries(
    {
        "path": st.sampled_from(PATHS),
        "change": st.sampled_from(
            ["added", "modified", "deleted", "renamed", "generated", "excluded", "quarantined"]
        ),
        "digest": st.sampled_from([None, "d1", "d2"]),
        "renamed_from": st.none(),
        "verification_sensitive": st.booleans(),
    }
)

BODIES: dict[str, st.SearchStrategy[Body]] = {
    "goal.revised": st.fixed_dictionaries(
        {
            "goal_revision": st.integers(1, 3),
            "authored_by": st.sampled_from(["user", "product_rule", "model"]),
            "deliverables": _subset(PATHS),
            "required_checks": st.lists(
                st.fixed_dictionaries(
                    {
                        "label": st.sampled_from(LABELS),
                        "scope": st.sampled_from(["focused", "suite"]),
                    }
                ),
                max_size=2,
            ),
            "requested_effects": _subset(INTENTS),
            "requested_actions": _subset(ACTIONS),
            "target_revision": st.sampled_from([None, "b1", "b2"]),
        }
    ),
    "tool.started": st.fixed_dictionaries(
        {"action_id": st.sampled_from(ACTIONS), "tool": st.sampled_from(["edit", "shell"])}
    ),
    "tool.finished": st.fixed_dictionaries(
        {
            "action_id": st.sampled_from(ACTIONS),
            "tool": st.sampled_from(["edit", "shell"]),
            "outcome": st.sampled_from(["succeeded", "failed", "indeterminate", "not_applicable"]),
            "error_class": st.sampled_from([None, "Timeout"]),
        }
    ),
    "effect.intent": st.fixed_dictionaries(
        {
            "intent_id": st.sampled_from(INTENTS),
            "effect_class": st.sampled_from(["write", "publication", "upload"]),
            "target": st.just("t"),
            "consequential": st.booleans(),
        }
    ),
    "effect.transition": st.fixed_dictionaries(
        {
            "intent_id": st.sampled_from(INTENTS),
            "state": st.sampled_from(
                [
                    "prepared",
                    "denied",
                    "approved",
                    "active",
                    "unknown",
                    "observed",
                    "completed",
                    "contradicted",
                    "compensated",
                ]
            ),
            "attempt_id": st.sampled_from([None, "t1"]),
            "reason": st.sampled_from([None, "policy"]),
        }
    ),
    "effect.receipt": st.fixed_dictionaries(
        {
            "intent_id": st.sampled_from(INTENTS),
            "receipt_id": st.sampled_from(["p1", "p2", "p3"]),
            "attempt_id": st.none(),
            "origin": st.sampled_from(["provider_receipt", "provider_query", "reconciliation"]),
            "observed": st.sampled_from(["present", "absent", "failed"]),
            "authoritative": st.booleans(),
        }
    ),
    "verification.receipt": st.fixed_dictionaries(
        {
            "check_id": st.sampled_from(["k1", "k2"]),
            "label": st.sampled_from(LABELS),
            "scope": st.sampled_from(["focused", "suite"]),
            "result": st.sampled_from(["pass", "fail", "indeterminate"]),
            "tests_executed": st.integers(0, 3),
            "candidate_snapshot": st.sampled_from(SNAPSHOTS),
            "environment": st.just("py"),
            "command": st.just("pytest"),
            "expected_artifacts": _subset(PATHS),
        }
    ),
    "workspace.snapshot": st.fixed_dictionaries(
        {
            "snapshot_id": st.sampled_from(SNAPSHOTS),
            "base_revision": st.sampled_from([None, "b1", "b2"]),
            "sealed": st.booleans(),
            "artifacts": st.lists(artifact, max_size=3, unique_by=lambda a: a["path"]),
        }
    ),
    "response.disposition": st.fixed_dictionaries(
        {"completion": st.sampled_from(["completed", "contained", "cancelled"])}
    ),
    "review.recorded": st.fixed_dictionaries(
        {"state": st.sampled_from(["pass", "fail", "indeterminate", "revise"])}
    ),
    "finalize.requested": st.fixed_dictionaries(
        {"candidate_snapshot": st.sampled_from([None, *SNAPSHOTS])}
    ),
    "run.cancelled": st.fixed_dictionaries({"reason": st.none()}),
    "run.interrupted": st.fixed_dictionaries({"reason": st.just("crash")}),
    "run.started": st.fixed_dictionaries({"agent": st.just("a"), "requested_by": st.just("u")}),
    "inference.started": st.fixed_dictionaries({"model_call_id": st.sampled_from(CALLS)}),
    "retrieval.evaluated": st.fixed_dictionaries(
        {
            "retrieval_id": st.sampled_from(RETRIEVALS),
            "job_id": st.just("j"),
            "query_hash": st.just("q"),
            "algorithm": st.just("bm25"),
            "config_hash": st.just("c"),
            "candidates": st.lists(
                st.fixed_dictionaries(
                    {
                        "candidate_id": st.sampled_from(CANDIDATES),
                        "source_type": st.just("journal"),
                        "source_event_id": st.just("je"),
                        "rank": st.integers(0, 3),
                        "score": st.sampled_from([0.5, 1.0]),
                        "eligible": st.booleans(),
                        "decision": st.sampled_from(["selected", "withheld"]),
                        "withhold_reason": st.none(),
                    }
                ),
                max_size=3,
                unique_by=lambda c: c["candidate_id"],
            ),
        }
    ),
    "injection.recorded": st.fixed_dictionaries(
        {
            "injection_id": st.sampled_from(["j1", "j2"]),
            "model_call_id": st.sampled_from(CALLS),
            "retrieval_id": st.sampled_from(RETRIEVALS),
            "candidate_ids": _subset(CANDIDATES),
            "block_hash": st.just("h"),
            "block_bytes": st.integers(0, 100),
            "location": st.just("system"),
            "range_start": st.just(0),
            "range_end": st.just(10),
            "confirmed": st.booleans(),
            "removed_before_inference": st.booleans(),
        }
    ),
    "narrative.submitted": st.fixed_dictionaries(
        {
            "narrative_id": st.just("n1"),  # run_events makes it unique in the run
            "account_revision": st.sampled_from([None, 1, 2, 3]),
            "channel": st.just("chat"),
            "text": st.sampled_from(
                [
                    "Done.",
                    "All tests pass.",
                    "Done: unit and lint pass, i1 was published and I saved src/a.py.",
                    "No external changes were made.",
                    "The lint check fails and i2 was denied.",
                    # The reader sends the first claim to review (needs_review), whatever
                    # the account; the second it judges.
                    "It looks like the job completed. All tests pass.",
                    "",
                ]
            ),
        }
    ),
}


@st.composite
def run_events(draw: st.DrawFn, min_size: int = 1, max_size: int = 30) -> list[Body]:
    """A run's events with unique ids, in a random arrival order."""
    types = draw(st.lists(st.sampled_from(sorted(BODIES)), min_size=min_size, max_size=max_size))
    # Make an account likely: most runs end with some way of opening one.
    if draw(st.integers(0, 4)) > 0:
        types.append(draw(st.sampled_from(["finalize.requested", "run.cancelled"])))
    events = []
    for index, type_ in enumerate(types):
        body = draw(BODIES[type_])
        if type_ == "narrative.submitted":
            body["narrative_id"] = f"n{index}"
        events.append(
            {
                "event_id": f"e{index:03d}",
                "run_id": RUN_ID,
                "type": type_,
                # A narrow range of times so ties (broken by event_id) happen often.
                "occurred_at": format_rfc3339(BASE + draw(st.integers(0, 8)) * 1_000_000),
                "source": "prop",
                **body,
            }
        )
    return events


@st.composite
def runs_with_narratives(draw: st.DrawFn, max_size: int = 30) -> list[Body]:
    """A run's events (as `run_events`) with one to three more narratives among them."""
    events = draw(run_events(max_size=max_size))
    for index in range(draw(st.integers(1, 3))):
        body = draw(BODIES["narrative.submitted"])
        narrative = {
            "event_id": f"n{index:03d}",
            "run_id": RUN_ID,
            "type": "narrative.submitted",
            "occurred_at": format_rfc3339(BASE + draw(st.integers(0, 8)) * 1_000_000),
            "source": "prop",
            **body,
            "narrative_id": f"nar-{index}",
        }
        events.insert(draw(st.integers(0, len(events))), narrative)
    return events
