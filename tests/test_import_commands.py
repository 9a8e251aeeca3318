"""What a shell command is and what its output says (outcomes.importers.commands):
checks judged by their runner's summary or exit status, never guessed; commits, pushes
and other effects with the state their output settles. Strings written for these tests.
"""

from __future__ import annotations

import pytest

from outcomes.importers.commands import (
    Scripts,
    check_of,
    read_command,
    split_command,
    summary_of,
    tool_effect,
)


def checks(line: str, output: str | None, exit_code: int | None) -> list[tuple[str, str, int]]:
    reading = read_command(line, output, exit_code)
    return [(c.label, v.result, v.tests_executed) for c, v in reading.checks]


@pytest.mark.parametrize(
    ("line", "label"),
    [
        ("pytest -q tests/test_a.py", "pytest -q tests/test_a.py"),
        ("python3 -m pytest tests", "pytest tests"),
        ("cd /repo && uv run pytest", "pytest"),
        ("FOO=1 timeout 60 cargo test --all 2>&1 | tail -5", "cargo test --all"),
        ("./tests/runtests.py queries", "./tests/runtests.py queries"),
        ("python manage.py test app", "python manage.py test app"),
        ("go test ./...", "go test ./..."),
        ("npm test", "npm test"),
        ("npm run build", "npm run build"),
        ("yarn lint", "yarn lint"),
        ("pnpm run typecheck", "pnpm run typecheck"),
        ("npx vitest run", "vitest run"),
        ("mvn -q test", "mvn -q test"),
        ("./gradlew check", "./gradlew check"),
        ("make test", "make test"),
        ("just check", "just check"),
        ("tsc --noEmit", "tsc --noEmit"),
        ("ruff check .", "ruff check ."),
        ("mypy src", "mypy src"),
        ("eslint src", "eslint src"),
    ],
)
def test_checks_are_found_by_the_program_they_run(line: str, label: str) -> None:
    found = [check_of(s) for s in split_command(line)]
    assert [c.label for c in found if c is not None] == [label]


@pytest.mark.parametrize(
    "line",
    [
        "git status",
        "ls -la",
        "cat tests/test_a.py",
        "grep -rn pytest .",
        "npm install",
        "npm start",
        "npm run dev",
        "just format",
        "ruff format .",
        "cargo fmt",
        "make clean",
        "echo pytest",
        "python reproduce.py",
    ],
)
def test_commands_that_are_not_checks_make_no_receipt(line: str) -> None:
    assert read_command(line, "whatever it printed\n1 passed in 0.1s", 0).checks == ()


def test_the_runner_summary_decides_with_its_counts() -> None:
    assert checks("pytest", "..F\n===== 1 failed, 2 passed in 0.30s =====", 1) == [
        ("pytest", "fail", 3)
    ]
    assert checks("pytest -q", "...\n3 passed, 1 warning in 0.05s", 0) == [("pytest -q", "pass", 3)]
    assert checks("python -m unittest", "...\nRan 3 tests in 0.001s\n\nOK", 0)[0][1:] == (
        "pass",
        3,
    )
    assert checks("./runtests.py x", "Ran 9 tests in 1.2s\n\nFAILED (failures=1)", 1)[0][1] == (
        "fail"
    )
    cargo = "test result: ok. 4 passed; 0 failed; 0 ignored\ntest result: ok. 2 passed; 0 failed"
    assert checks("cargo test", cargo, 0) == [("cargo test", "pass", 6)]
    assert checks("npx jest", "Tests:       1 failed, 4 passed, 5 total", 1)[0][1:] == ("fail", 5)
    assert checks(
        "mvn test", "Tests run: 12, Failures: 0, Errors: 0, Skipped: 1\n[INFO] BUILD SUCCESS", 0
    )[0][1:] == ("pass", 12)
    assert checks("tsc", "src/a.ts(3,1): error TS2304: Cannot find name 'x'.", 2)[0][1] == "fail"
    assert checks("ruff check .", "All checks passed!", 0)[0][1] == "pass"
    assert checks("mypy .", "Success: no issues found in 3 source files", 0)[0][1] == "pass"


def test_no_tests_collected_is_no_pass_and_no_failure() -> None:
    # pytest's exit 5: nothing collected, so nothing passed and nothing failed
    result = checks("pytest x.py", "===== no tests ran in 0.01s =====", 5)
    assert result == [("pytest x.py", "indeterminate", 0)]
    assert checks("pytest -q x.py", "", 5) == [("pytest -q x.py", "indeterminate", 0)]
    # another runner's exit 5 is a failure like any other non-zero status
    assert checks("cargo test", "", 5) == [("cargo test", "fail", 0)]


def test_a_tool_asked_for_its_version_or_help_runs_no_check() -> None:
    assert checks("pylint --version", "pylint 3.0.0", 0) == []
    assert checks("pytest --help", "usage: pytest [options]", 0) == []
    assert checks("mypy -V", "mypy 1.8.0", 0) == []
    assert checks("mypy -V src", "Success: no issues found in 3 source files", 0) != []


def test_an_unknown_outcome_is_indeterminate_never_pass() -> None:
    # no output and no exit status (aider records neither)
    assert checks("pytest", None, None) == [("pytest", "indeterminate", 0)]
    # an exit status taken away by a pipe, and no summary in the tail
    assert checks("pytest 2>&1 | tail -3", "collected 3 items", 0)[0][1] == "indeterminate"
    # a build that was cut off before it finished
    assert checks("npm run build", "> vite build\nbuilding for production...", None)[0][1] == (
        "indeterminate"
    )
    # a timeout
    assert checks("npm test", "Command timed out after 10s", None)[0][1] == "indeterminate"


def test_exit_status_decides_when_there_is_no_summary() -> None:
    assert checks("make build", "cc -o app main.c", 0) == [("make build", "pass", 1)]
    assert checks("make build", "main.c:3: error", 2) == [("make build", "fail", 0)]
    # a non-zero status overrides a passing summary (a coverage gate after the tests)
    assert checks("pytest --cov", "5 passed in 1.0s\nFAIL Required test coverage of 90%", 1)[0][
        1
    ] == ("fail")


def test_summaries_are_read_only_from_runner_lines() -> None:
    assert summary_of("the test said: 2 passed in 0.1s, kind of") is None
    assert summary_of("nothing to see") is None


def test_a_local_commit_is_a_write_whose_receipt_is_the_commit_line() -> None:
    out = "[main 3f2a1bc] Add the helper\n 1 file changed, 3 insertions(+)"
    (effect,) = read_command("git add -A && git commit -m 'Add'", out, 0).effects
    assert (effect.effect_class, effect.outcome, effect.receipt) == (
        "write",
        "completed",
        "3f2a1bc",
    )
    assert read_command("git commit -m x", "nothing to commit, working tree clean", 1).effects == ()
    (failed,) = read_command("git commit -m x", "error: pre-commit hook failed", 1).effects
    assert failed.outcome == "failed"


def test_pushes_take_their_state_from_the_output() -> None:
    ok = read_command("git push origin main", "To host:r.git\n   1a2b3c4..5d6e7f8  main -> main", 0)
    assert [(e.effect_class, e.outcome) for e in ok.effects] == [("git_push", "completed")]
    rejected = read_command("git push", " ! [rejected]        main -> main (fetch first)", 1)
    assert rejected.effects[0].outcome == "failed"
    unknown = read_command("git push origin main", None, None)
    assert unknown.effects[0].outcome == "unknown"


def test_pull_requests_mail_and_messages() -> None:
    pr = read_command("gh pr create --fill", "https://example.test/o/r/pull/7", 0).effects[0]
    assert (pr.effect_class, pr.outcome, pr.receipt) == (
        "pull_request",
        "completed",
        "https://example.test/o/r/pull/7",
    )
    missing = read_command(
        "echo hi | mail -s x ann@example.test", "bash: mail: command not found", 127
    )
    assert [(e.effect_class, e.outcome) for e in missing.effects] == [("email", "failed")]
    handed = read_command("echo hi | mail -s x ann@example.test", "", 0)
    assert handed.effects[0].outcome == "unknown"  # a local mailer's 0 is not a delivery
    reply = read_command('chat_user "Ann" "the file is ready"', "Ann: thanks, got it", 0)
    assert [(e.effect_class, e.outcome) for e in reply.effects] == [("message", "completed")]


def test_installs_and_refused_services() -> None:
    out = "Setting up tool (1.0)\ninvoke-rc.d: policy-rc.d denied execution of start.\n"
    effects = read_command("apt-get install -y tool", out, 0).effects
    assert [(e.effect_class, e.outcome) for e in effects] == [
        ("install", "completed"),
        ("service", "denied"),
    ]


def test_tools_named_like_effects_take_their_state_from_their_result() -> None:
    created = tool_effect(
        "mcp__github__create_repository",
        {"name": "r"},
        '{"id":"9","url":"https://example.test/r"}',
        False,
    )
    assert created is not None and (created.effect_class, created.outcome) == (
        "publication",
        "completed",
    )
    refused = tool_effect("push_files", {"repo": "r"}, "409 Git Repository is empty.", None)
    assert refused is not None and refused.outcome == "failed"
    pending = tool_effect("create_app_preview", {}, None, None)
    assert pending is not None and (pending.effect_class, pending.outcome) == (
        "deployment",
        "unknown",
    )
    assert tool_effect("read_file", {}, "text", False) is None


def test_redirections_heredocs_and_wrappers() -> None:
    (simple,) = split_command("cat <<'EOF' > notes.txt\nline one\nEOF\n")
    assert simple.words == ("cat",) and simple.writes == ("notes.txt",)
    first, second = split_command("python3 -m http.server 8000 > log.txt 2>&1 &\nls")
    assert first.background and first.writes == ("log.txt",) and second.words == ("ls",)


def test_remote_operations_take_their_state_from_the_line_that_shows_them() -> None:
    pushed = read_command("docker push reg.example.test/app:1", "1: digest: sha256:ab12 size: 9", 0)
    assert [(e.effect_class, e.outcome) for e in pushed.effects] == [("publication", "completed")]
    applied = read_command("terraform apply -auto-approve", "Apply complete! Resources: 1 added", 0)
    assert [(e.effect_class, e.outcome) for e in applied.effects] == [("deployment", "completed")]
    quiet = read_command("kubectl apply -f app.yaml", "", 0)
    assert [(e.effect_class, e.outcome) for e in quiet.effects] == [("deployment", "unknown")]
    posted = read_command("curl -si -X POST -d a=1 https://api.example.test/v1/x", "HTTP/2 201", 0)
    assert [(e.effect_class, e.outcome) for e in posted.effects] == [("upload", "completed")]
    assert read_command("curl -s https://api.example.test/v1/x", "{}", 0).effects == ()


def test_more_runners_by_their_subcommand() -> None:
    for line in ("bazel test //pkg:all", "dotnet test", "swift build", "mix test", "deno lint"):
        assert read_command(line, "", 0).checks, line
    assert read_command("dotnet run", "", 0).checks == ()


def test_listing_the_crontab_schedules_nothing() -> None:
    line = "crontab -l > /tmp/jobs; echo '0 * * * * /opt/sweep.sh' >> /tmp/jobs; crontab /tmp/jobs"
    installed = read_command(line, "", 0)
    assert [(e.effect_class, e.target, e.outcome) for e in installed.effects] == [
        ("schedule", "crontab", "unknown")
    ]
    assert read_command("crontab -l", "0 3 * * * /opt/backup.sh", 0).effects == ()
    missing = read_command("crontab -l", "bash: crontab: command not found", 127)
    assert missing.effects == ()
    refused = read_command("crontab /tmp/jobs", "bash: crontab: command not found", 127)
    assert [(e.effect_class, e.outcome) for e in refused.effects] == [("schedule", "failed")]


@pytest.mark.parametrize(
    ("line", "focused"),
    [
        ("go test ./...", False),
        ("go test ./internal/parse/...", True),
        ("pytest", False),
        ("pytest tests/test_a.py", True),
        ("cargo test -p core", True),
    ],
)
def test_a_check_is_focused_when_it_names_particular_tests(line: str, focused: bool) -> None:
    (simple,) = split_command(line)
    check = check_of(simple)
    assert check is not None and check.focused is focused


def test_a_chain_of_piped_checks_reads_each_tools_own_summary() -> None:
    line = "npm run lint 2>&1 | tail -20 && npm run build | tail -5"
    out = (
        "> app@0.1.0 lint\n> next lint\n\n✔ No ESLint warnings or errors\n"
        "> app@0.1.0 build\n> next build\n\n ✓ Compiled successfully\n"
        " ✓ Generating static pages (5/5)\n"
    )
    assert checks(line, out, 0) == [
        ("npm run lint", "pass", 1),
        ("npm run build", "pass", 1),
    ]
    # the linter failed, the build passed: each keeps its own line
    failing = (
        "> app lint\n> eslint .\n\n✖ 2 problems (2 errors, 0 warnings)\n"
        "> app build\n✓ built in 1.10s\n"
    )
    assert [r for _, r, _ in checks(line, failing, 0)] == ["fail", "pass"]
    # no summary of the linter's and no status of its own: indeterminate, as ever
    silent = "> app build\n> vite build\n✓ built in 1.10s\n"
    assert [r for _, r, _ in checks(line, silent, 0)] == ["indeterminate", "pass"]


def test_a_silent_linter_before_and_and_passed_when_the_line_did() -> None:
    # without pipes, a command joined by `&&` exited 0 when the whole line did
    line = "npx eslint src && npx tsc --noEmit && npm run build"
    assert [r for _, r, _ in checks(line, "> app build\n✓ built in 1.1s", 0)] == ["pass"] * 3
    # after `;` or `||` nothing is known of the earlier command
    assert [r for _, r, _ in checks("npx eslint src; npx tsc --noEmit", "", 0)] == [
        "indeterminate",
        "pass",
    ]
    # the type check's own line shows it failed: the build after `&&` never ran, so the
    # line's status is not the build's
    assert [r for _, r, _ in checks(line, "src/a.ts(1,1): error TS2304: x", 2)] == [
        "indeterminate",
        "fail",
        "indeterminate",
    ]
    # with no line of its own a failure is the last command's, as the status says
    assert [r for _, r, _ in checks(line, "", 2)] == ["indeterminate", "indeterminate", "fail"]


def test_two_runs_of_one_runner_in_a_line_each_take_their_own_summary() -> None:
    out = "===== 3 passed in 0.10s =====\n===== 1 failed, 2 passed in 0.20s ====="
    assert checks("pytest tests/a; pytest tests/b", out, 1) == [
        ("pytest tests/a", "pass", 3),
        ("pytest tests/b", "fail", 3),
    ]


@pytest.mark.parametrize(
    ("line", "out"),
    [
        ("git commit -am 'Fix'", "[detached HEAD 1a2b3c4] Fix\n 1 file changed"),
        ("git --no-pager commit -m 'Fix'", "[feature/parser 1a2b3c4] Fix\n 1 file changed"),
        ("git commit -m 'Init'", "[main (root-commit) 1a2b3c4] Init\n 3 files changed"),
        ("git add -A && git commit -m x | cat", "[main 1a2b3c4] x\n 1 file changed"),
    ],
)
def test_a_commit_line_in_the_output_is_a_completed_local_commit(line: str, out: str) -> None:
    (effect,) = [e for e in read_command(line, out, None).effects if e.kind == "commit"]
    assert (effect.effect_class, effect.outcome, effect.receipt) == (
        "write",
        "completed",
        "1a2b3c4",
    )


def test_package_scripts_are_read_through_their_body() -> None:
    scripts = Scripts(
        {"verify": "tsc --noEmit && eslint .", "dev": "vite", "fmt": "prettier --check ."}, {}
    )
    ((check, verdict),) = read_command(
        "npm run verify",
        "src/a.ts(1,1): error TS2304: Cannot find name 'x'.",
        None,
        scripts=scripts,
    ).checks
    assert (check.kind, verdict.result) == ("typecheck", "fail")
    assert "tsc" in check.tools and "eslint" in check.tools
    ((fmt, _),) = read_command("npm run fmt", "", 0, scripts=scripts).checks
    assert fmt.kind == "format-check"
    # the same name without its body is no check: `verify` is a check name, `dev` is not
    assert read_command("npm run dev", "", None, scripts=Scripts.empty()).checks == ()
    served = read_command(
        "npm run dev",
        "  VITE v5.0.0  ready in 300 ms\n  ➜  Local:   http://localhost:5173/",
        None,
        scripts=scripts,
    )
    assert [(e.effect_class, e.outcome) for e in served.effects] == [("service", "completed")]


def test_recipes_are_read_through_the_makefile() -> None:
    scripts = Scripts({}, {"all": "pytest -q", "serve": "python -m http.server"})
    ((check, verdict),) = read_command("make all", "2 passed in 0.1s", None, scripts=scripts).checks
    assert (check.kind, verdict.result, verdict.tests_executed) == ("test", "pass", 2)
    assert read_command("make serve", "", None, scripts=scripts).checks == ()


def test_starting_a_dev_server_is_a_local_service_effect() -> None:
    started = read_command("npm run dev", "  ➜  Local:   http://localhost:5173/", None)
    assert [(e.effect_class, e.outcome, e.consequential) for e in started.effects] == [
        ("service", "completed", False)
    ]
    quiet = read_command("npm start", "", None)
    assert [(e.effect_class, e.outcome) for e in quiet.effects] == [("service", "unknown")]


def test_scaffolders_and_dependency_installs_are_install_effects() -> None:
    out = (
        "Creating a new React app in /w/app.\n\nadded 1480 packages in 40s\n\n"
        "Success! Created app at /w/app"
    )
    made = read_command("npx create-react-app app", out, 0)
    assert [(e.effect_class, e.kind, e.outcome) for e in made.effects] == [
        ("install", "scaffold", "completed")
    ]
    deps = read_command("npm ci", "added 120 packages in 3s", 0)
    assert [(e.effect_class, e.outcome) for e in deps.effects] == [("install", "completed")]
    assert (
        read_command("pip install", "ERROR: You must give at least one requirement", 1).effects
        == ()
    )


def test_workspace_files_name_their_scripts() -> None:
    from outcomes.importers.scripts import (
        just_recipes,
        make_recipes,
        package_scripts,
        pyproject_scripts,
        task_recipes,
    )

    assert package_scripts('{"scripts": {"test": "vitest run", "lint": "eslint ."}}') == {
        "test": "vitest run",
        "lint": "eslint .",
    }
    # a fragment (a file tool showed part of the file) still gives its pairs
    assert package_scripts('  "scripts": {\n    "build": "tsc -b"\n  },\n  "dep') == {
        "build": "tsc -b"
    }
    assert make_recipes("ci: lint test\nlint:\n\t@ruff check .\ntest:\n\tpytest -q\n") == {
        "ci": "ruff check . && pytest -q",
        "lint": "ruff check .",
        "test": "pytest -q",
    }
    assert just_recipes("set shell := ['bash']\n\ntest *args:\n    cargo test {{args}}\n") == {
        "test": "cargo test {{args}}"
    }
    taskfile = "version: '3'\ntasks:\n  lint:\n    cmds:\n      - golangci-lint run\n"
    assert task_recipes(taskfile) == {"lint": "golangci-lint run"}
    pyproject = (
        '[tool.pdm.scripts]\nlint = "ruff check ."\n'
        '[tool.hatch.envs.default.scripts]\ntest = "pytest {args}"\n'
        '[tool.poe.tasks]\ntypes = {cmd = "mypy src"}\n'
    )
    assert pyproject_scripts(pyproject) == {
        "lint": "ruff check .",
        "test": "pytest {args}",
        "types": "mypy src",
    }


def test_python_project_scripts_and_package_executors() -> None:
    scripts = Scripts({}, {}, {"lint": "ruff check .", "types": "mypy src"})
    ((check, verdict),) = read_command(
        "pdm run lint", "All checks passed!", None, scripts=scripts
    ).checks
    assert (check.kind, verdict.result) == ("lint", "pass")
    ((types, _),) = read_command(
        "poe types", "Success: no issues found in 3 source files", None, scripts=scripts
    ).checks
    assert types.kind == "typecheck"
    for line in ("npm exec -- jest", "pnpm exec jest", "bun x jest", "yarn dlx jest"):
        ((found, result),) = read_command(line, "Tests:       2 passed, 2 total", None).checks
        assert (found.runner, result.result) == ("jest", "pass"), line


def test_a_cut_turbo_summary_fails_when_not_every_task_succeeded() -> None:
    # only the last lines survived `| tail -3`: the count line alone decides
    cut = " Tasks:    1 successful, 2 total\nCached:    0 cached, 2 total\n  Time:    2.1s"
    assert checks("npx turbo run build | tail -3", cut, 0)[0][1] == "fail"
    ok = " Tasks:    2 successful, 2 total\nCached:    1 cached, 2 total\n  Time:    2.1s"
    assert checks("npx turbo run build | tail -3", ok, 0)[0][1] == "pass"


def test_yarn_pnpm_and_bun_run_a_packages_binary_when_no_script_has_its_name() -> None:
    assert checks("pnpm vitest run", "      Tests  3 passed (3)", None) == [
        ("pnpm vitest run", "pass", 3)
    ]
    assert checks("yarn eslint src", "", 0) == [("yarn eslint src", "pass", 1)]
    # a script of that name is run instead, and read through its body
    scripts = Scripts({"eslint": "eslint . --max-warnings 0"}, {})
    ((check, _),) = read_command("yarn eslint", "", 0, scripts=scripts).checks
    assert check.tools == ("eslint", "yarn scripts")


def test_make_targets_are_checks_unless_every_one_is_housekeeping() -> None:
    assert checks("make clean test", "2 passed in 0.1s", 0) == [("make clean test", "pass", 2)]
    assert checks("make all", "", 0) == [("make all", "pass", 1)]
    assert checks("make clean install", "", 0) == []
    # a housekeeping name whose recipe runs a check is read through the recipe
    scripts = Scripts({}, {"install": "pip install -e . && pytest -q"})
    assert [c.kind for c, _ in read_command("make install", "", 0, scripts=scripts).checks] == [
        "test"
    ]


def test_forge_comments_and_merges_take_their_state_from_the_output() -> None:
    url = "https://github.com/o/r/pull/7#issuecomment-123"
    (comment,) = read_command("gh pr comment 7 --body ok", url, 0).effects
    assert (comment.effect_class, comment.outcome, comment.receipt) == (
        "pull_request",
        "completed",
        url,
    )
    (merged,) = read_command(
        "gh pr merge 7 --squash", "✓ Squashed and merged pull request #7", 0
    ).effects
    assert merged.outcome == "completed"
    assert read_command("gh pr view 7", "title: x", 0).effects == ()
    (mr,) = read_command("glab mr merge 12", "✓ Merged!", None).effects
    assert (mr.effect_class, mr.outcome) == ("pull_request", "completed")


def test_one_line_makes_at_most_a_bounded_number_of_receipts() -> None:
    from outcomes.importers.commands import MAX_CHECKS_PER_LINE

    line = "pytest -q; " * (MAX_CHECKS_PER_LINE * 3) + "git push origin main"
    reading = read_command(line, "To host:r.git\n   1a2b3c4..5d6e7f8  main -> main", 0)
    assert len(reading.checks) == MAX_CHECKS_PER_LINE
    # the commands past the bound are still read for their effects
    assert [(e.effect_class, e.outcome) for e in reading.effects] == [("git_push", "completed")]


def test_a_server_script_is_known_by_its_name_or_its_prefix() -> None:
    for line in ("npm run dev:web", "yarn start", "pnpm serve", "bun run preview"):
        effects = read_command(line, "", None).effects
        assert [(e.effect_class, e.kind) for e in effects] == [("service", "server")], line
    assert read_command("npm run devtools-check", "", None).effects == ()
