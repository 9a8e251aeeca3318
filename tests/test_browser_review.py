"""A `needs_review` claim on the report page, in a real headless Chromium (the harness of
tests/test_browser_report.py): written "needs review", styled in a colour and marker of
its own (never the failure red), listed in its own captioned table, every link whole.
The screenshot is kept as `.state/artifacts/report-review.png`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_browser_report import Browser, browser, render
from tests.test_report_needs_review import view

__all__ = ["browser"]  # the module-scoped fixture, shared with the harness


def test_needs_review_is_written_and_styled_apart_from_failure(
    browser: Browser, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found, requests = render(browser, view(), "report-review", tmp_path, capsys)
    assert requests == [(tmp_path / "report-review.html").as_uri()]
    states = found["states"]
    failed = {s["color"] for s in states if "tone-failed" in s["cls"]}
    review = [s for s in states if "tone-review" in s["cls"]]
    assert review and {s["text"] for s in review} == {"needs review"}
    assert all(s["marker"] == '"?"' for s in review)
    assert failed and all(s["color"] not in failed for s in review)
    marks = {m["text"]: (m["cls"], m["tag"]) for m in found["marks"]}
    assert marks == {
        "All tests pass": ("tone-failed", "contradicted"),
        "Done": ("tone-review", "needs review"),
    }
    review_marks = [m for m in found["marks"] if m["cls"] == "tone-review"]
    assert all(m["underline"] not in failed for m in review_marks)
    tables = {t["caption"]: t for t in found["tables"]}
    assert tables["Claims for review"]["rows"] == 1
    assert all(t["caption"] and t["rowHeaders"] == t["rows"] for t in found["tables"])
    assert found["headings"] == ["Status block", "Revision timeline", "Narratives", "Evidence"]
    assert found["brokenLinks"] == []
