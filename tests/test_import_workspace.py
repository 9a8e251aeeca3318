"""What outcomes.importers.derive and its workspace inventory make of a trace's steps:
what git only lists tells nothing about when a path changed, a linter on a scratch file
is no check, the clock starts at the trace's first time. Paths, outputs and times
written for these tests."""

from __future__ import annotations

from dataclasses import replace

from outcomes.importers.derive import derive
from outcomes.importers.trace import Finish, Message, ToolCall, Trace
from outcomes.importers.workspace import Inventory


def sensitive(inv: Inventory) -> dict[str, tuple[object, object]]:
    return {str(a["path"]): (a["change"], a["verification_sensitive"]) for a in inv.artifacts()}


def test_a_path_only_git_lists_is_not_verification_sensitive() -> None:
    inv = Inventory("/repo")
    inv.write("src/lib.rs", True, "step-1")
    inv.apply_git_listing(
        "git add -A && git commit -m port",
        "[main 1a2b3c4] port\n 3 files changed\n create mode 100644 Cargo.lock\n"
        " delete mode 100644 tests/test_old.py\n create mode 100644 src/lib.rs\n",
        "step-2",
    )
    assert sensitive(inv) == {
        "Cargo.lock": ("added", False),
        "src/lib.rs": ("added", True),
        "tests/test_old.py": ("deleted", False),
    }


def test_a_step_that_changes_a_listed_path_makes_it_sensitive_again() -> None:
    inv = Inventory("/repo")
    inv.apply_git_listing(
        "git status", "Changes not staged for commit:\n\tmodified:   app.py\n", "s1"
    )
    assert sensitive(inv) == {"app.py": ("modified", False)}
    inv.edit("app.py", "s2")
    assert sensitive(inv) == {"app.py": ("modified", True)}
    # and listing it again afterwards does not make it insensitive
    inv.apply_git_listing("git status -s", " M app.py\n", "s3")
    assert sensitive(inv) == {"app.py": ("modified", True)}


def shell(n: int, command: str, output: str = "", exit_code: int | None = 0) -> ToolCall:
    return ToolCall(
        f"c{n}",
        "bash",
        "shell",
        f"step {n}",
        n,
        command=command,
        output=output,
        exit_code=exit_code,
    )


def receipts(steps: list[ToolCall]) -> list[tuple[object, object]]:
    trace = Trace("test", "agent", "trace.json", (*steps, Finish("end", 99)), root="/repo")
    return [
        (e["label"], e["result"])
        for e in derive(trace, "run-1")
        if e["type"] == "verification.receipt"
    ]


def test_a_linter_run_only_on_a_scratch_file_makes_no_receipt() -> None:
    steps = [
        shell(1, "echo 'x = 1' > probe.py"),
        shell(2, "pylint probe.py", "C0103: Constant name", 16),
        shell(3, "pylint src/app.py probe.py", "C0103: Constant name", 16),
        shell(4, "rm probe.py"),
        shell(5, "ruff check src/app.py", "All checks passed!", 0),
    ]
    assert receipts(steps) == [
        ("pylint src/app.py probe.py", "fail"),
        ("ruff check src/app.py", "pass"),
    ]


def test_a_test_run_on_a_scratch_file_still_makes_a_receipt() -> None:
    steps = [
        shell(1, "echo 'def test_x(): pass' > test_probe.py"),
        shell(2, "pytest test_probe.py", "==== 1 passed in 0.01s ====", 0),
        shell(3, "rm test_probe.py"),
    ]
    assert receipts(steps) == [("pytest test_probe.py", "pass")]


def test_steps_before_the_first_time_are_dated_just_before_it() -> None:
    first = 1_769_750_000_000_000  # a time in 2026, in microseconds
    build = replace(shell(2, "npm run build", "built in 1.2s", 0), at=first)
    steps = (Message("user", "Build the page.", None, "line 1"), build, Finish("end", None))
    events = derive(Trace("test", "agent", "t.jsonl", steps, root="/repo"), "run-1")
    started = next(e for e in events if e["type"] == "run.started")
    assert started["occurred_at"].startswith("2026-01-30T")
    times = [e["occurred_at"] for e in events]
    assert times == sorted(times)
    # a trace without any time still counts from the epoch
    untimed = (steps[0], replace(build, at=None), steps[2])
    events = derive(Trace("test", "agent", "t.jsonl", untimed, root="/repo"), "run-1")
    assert events[0]["occurred_at"].startswith("1970-01-01T")


def digests(inv: Inventory) -> dict[str, object]:
    return {str(a["path"]): a["digest"] for a in inv.artifacts()}


def test_a_reapplied_identical_change_after_a_restore_gives_the_same_digest() -> None:
    inv = Inventory("/repo")
    fix = "sed -i 's/return a/return b/' lib/core.py"
    inv.apply_shell(fix, "", "/repo", "step 1")
    fixed = digests(inv)
    inv.apply_shell("git checkout -- lib/core.py", "", "/repo", "step 2")
    assert digests(inv) == {}  # back to the base: no change
    inv.apply_shell(fix, "", "/repo", "step 3")
    assert digests(inv) == fixed
    # a different change after the restore is a different digest
    inv.apply_shell("git checkout -- lib/core.py", "", "/repo", "step 4")
    inv.apply_shell("sed -i 's/return a/return c/' lib/core.py", "", "/repo", "step 5")
    assert digests(inv) != fixed and set(digests(inv)) == {"lib/core.py"}


def test_a_restore_then_the_same_edit_makes_an_earlier_check_eligible_again() -> None:
    steps = [
        shell(1, "sed -i 's/x/y/' pkg/mod.py"),
        shell(2, "pytest tests/test_mod.py", "==== 3 passed in 0.02s ====", 0),
        shell(3, "git checkout pkg/mod.py"),
        shell(4, "sed -i 's/x/y/' pkg/mod.py"),
    ]
    trace = Trace("test", "agent", "t.json", (*steps, Finish("end", 99)), root="/repo")
    events = derive(trace, "run-1")
    (receipt,) = [e for e in events if e["type"] == "verification.receipt"]
    snapshots = {
        e["snapshot_id"]: e["artifacts"] for e in events if e["type"] == "workspace.snapshot"
    }
    final = next(e for e in events if e["type"] == "finalize.requested")
    assert snapshots[receipt["candidate_snapshot"]] == snapshots[final["candidate_snapshot"]]


def test_a_package_script_is_read_through_the_package_json_the_trace_showed() -> None:
    package = (
        '{\n  "name": "app",\n  "scripts": {\n'
        '    "verify": "tsc --noEmit",\n    "dev": "vite"\n  }\n}'
    )
    numbered = "\n".join(f"{i:>6}→{line}" for i, line in enumerate(package.splitlines(), 1))
    read = ToolCall("c0", "Read", "read", "step 0", 0, path="/repo/package.json", output=numbered)
    before = shell(1, "npm run verify", "", 0)
    steps = [before, read, shell(2, "npm run verify", "src/a.ts(1,1): error TS2304: x", 2)]
    trace = Trace("test", "agent", "t.json", (*steps, Finish("end", 99)), root="/repo")
    got = [
        (e["label"], e["result"])
        for e in derive(trace, "run-1")
        if e["type"] == "verification.receipt"
    ]
    # before the file was seen `verify` is read by its name (a check name); after, by its body
    assert got == [("npm run verify", "pass"), ("npm run verify", "fail")]


def test_a_makefile_printed_by_cat_names_what_a_recipe_runs() -> None:
    makefile = "all: lint\n\nlint:\n\truff check .\n\nserve:\n\tpython -m http.server\n"
    steps = [
        shell(1, "cat Makefile", makefile, 0),
        shell(2, "make all", "All checks passed!", None),
        shell(3, "make serve", "", 0),
    ]
    assert receipts(steps) == [("make all", "pass")]


def test_the_first_lines_of_a_package_json_printed_by_head_name_its_scripts() -> None:
    shown = '{\n  "name": "web",\n  "scripts": {\n    "qa": "vitest run",\n'
    steps = [
        shell(1, "cd web && head -20 package.json", shown, 0),
        shell(2, "npm run qa", "      Tests  1 failed | 3 passed (4)", None),
    ]
    assert receipts(steps) == [("npm run qa", "fail")]


def test_a_directory_holds_what_is_below_it_and_nothing_that_only_shares_its_prefix() -> None:
    inv = Inventory("/repo")
    for path in ("web/a.ts", "web/lib/b.ts", "webapp/c.ts", "web.config"):
        inv.write(path, True, "s1")
    inv.apply_shell("rm -r web", "", "/repo", "s2")
    # `web/` itself stays as a removed directory (it may have held files of the base)
    assert sorted(str(a["path"]) for a in inv.artifacts()) == ["web.config", "web/", "webapp/c.ts"]
    inv.apply_shell("mv webapp site", "", "/repo", "s3")
    assert sorted(str(a["path"]) for a in inv.artifacts()) == ["site/c.ts", "web.config", "web/"]


def test_a_long_file_list_is_applied_whole() -> None:
    names = [f"out/f{i}.txt" for i in range(12_000)]  # 180 KB, within the line's cap
    inv = Inventory("/repo")
    inv.apply_shell("touch " + " ".join(names), "", "/repo", "s1")
    assert len(inv.artifacts()) == 12_000
    inv.apply_shell("rm " + " ".join(names[:6_000]) + " && rm -r out", "", "/repo", "s2")
    assert [a["path"] for a in inv.artifacts()] == ["out/"]
