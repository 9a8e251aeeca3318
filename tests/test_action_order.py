"""A run's actions are listed as people count them (message-2 before message-10) in the
status block, `outcomes show`'s text and Markdown, the HTML report and the full report;
the account itself keeps its own order (ids as text)."""

from __future__ import annotations

import re
from typing import Any

import orjson

from outcomes.reducers.engine import Engine
from outcomes.reducers.limits import Limits
from outcomes.reducers.timefmt import format_rfc3339
from outcomes.reports import report
from outcomes.reports.html import page
from outcomes.reports.model import RunView
from outcomes.reports.status import natural_key, render, status_block
from outcomes.streams.replay import ReplayStats, SourceItem, replay_items

RUN = "run-actions"
IDS = [f"message-{n}" for n in (1, 2, 3, 9, 10, 11, 20, 100)]


def _view() -> RunView:
    """A run that sent eleven messages as tool calls, the goal requiring three of them."""
    events: list[dict[str, Any]] = []

    def emit(type_: str, **fields: Any) -> None:
        events.append(
            {
                "event_id": f"{RUN}:{len(events):04d}",
                "run_id": RUN,
                "type": type_,
                "occurred_at": format_rfc3339(1_796_032_800_000_000 + len(events) * 1_000_000),
                "source": "test",
                **fields,
            }
        )

    emit("run.started", agent="mailer", requested_by="user:ana")
    emit(
        "goal.revised",
        goal_revision=1,
        authored_by="user",
        deliverables=[],
        required_checks=[],
        requested_effects=[],
        requested_actions=["message-10", "message-2", "message-100"],
        target_revision="base-1",
    )
    for action_id in IDS:
        emit("tool.started", action_id=action_id, tool="send_message")
        emit(
            "tool.finished",
            action_id=action_id,
            tool="send_message",
            outcome="succeeded",
            error_class=None,
        )
    emit("response.disposition", completion="completed")
    emit(
        "workspace.snapshot",
        snapshot_id="snap-1",
        base_revision="base-1",
        sealed=True,
        artifacts=[],
    )
    emit("finalize.requested", candidate_snapshot="snap-1")
    items = [SourceItem("t", n, orjson.dumps(e), value=e) for n, e in enumerate(events, 1)]
    revisions = [
        {**r.body, "record": r.kind}
        for r in replay_items(items, Engine(), Limits(), ReplayStats())
        if r.kind == "account_revision"
    ]
    return RunView.of(RUN, revisions, [])


def test_natural_key_counts_digits_as_numbers() -> None:
    ids = ["message-10", "message-2", "message-1", "act-01", "act-1", "a", "message-2b"]
    assert sorted(ids, key=natural_key) == [
        "a",
        "act-01",
        "act-1",
        "message-1",
        "message-2",
        "message-2b",
        "message-10",
    ]


def test_the_account_lists_actions_as_text_the_block_as_numbers() -> None:
    view = _view()
    assert [a["action_id"] for a in view.latest["actions"]] == sorted(IDS)  # as text
    block = status_block(view)
    assert [a["action_id"] for a in block["actions"]] == IDS
    action_predicates = [p["id"] for p in block["predicates"] if p["id"].startswith("action:")]
    assert action_predicates == ["action:message-2", "action:message-10", "action:message-100"]


def _order_in(text: str) -> list[str]:
    return [m for m in re.findall(r"message-\d+", text) if m in IDS]


def test_every_report_lists_them_in_that_order() -> None:
    view = _view()
    block = status_block(view)
    for fmt in ("text", "markdown"):
        shown = render(block, fmt)
        assert _order_in(shown[shown.index("Actions") :])[: len(IDS)] == IDS, fmt
    html = page(view)
    table = html[html.index("Actions") :]
    assert _order_in(table)[: len(IDS)] == IDS
    full = report.markdown(view)
    actions = full[full.index("Actions") :]
    assert _order_in(actions)[: len(IDS)] == IDS
