"""Command splitting (outcomes.importers.shell): one pass over the line, so the work
grows with its length and no faster, and a cap past which a line is read no further
and marked. Work is counted in scanner steps (each consumes at least one character),
never timed. Command lines written for these tests."""

from __future__ import annotations

import pytest

from outcomes.importers.shell import MAX_COMMAND_CHARS, split_command, tokenize


def quoted_echo(size: int) -> str:
    return "echo '" + ("a b;c|d&&e " * (size // 11 + 1))[:size] + "' && ls"


@pytest.mark.parametrize(
    "make",
    [
        quoted_echo,
        lambda n: "echo " + "word " * (n // 5),
        lambda n: 'echo "' + 'x\\"y ' * (n // 5) + '"',
        lambda n: "cat <<'EOF' > out.txt\n" + "line\n" * (n // 5) + "EOF\nls",
        lambda n: "echo $(printf '%s' " + "'a) b' " * (n // 7) + ")",
    ],
    ids=["quoted", "words", "escapes", "heredoc", "substitution"],
)
def test_splitting_work_grows_linearly_with_the_line(make: object) -> None:
    assert callable(make)
    steps = []
    for size in (4_096, 16_384, 65_536):
        line = make(size)
        read = tokenize(line)
        assert not read.truncated
        assert read.steps <= len(line) + 1  # every step consumes a character or more
        steps.append(read.steps)
    # four times the line, at most about four times the work (quadratic would be 16x)
    assert steps[1] <= 4 * steps[0] + 8 and steps[2] <= 4 * steps[1] + 8


def test_a_one_mebibyte_quoted_argument_costs_a_handful_of_steps_and_is_cut_at_the_cap() -> None:
    line = quoted_echo(1 << 20)
    read = tokenize(line)
    assert read.truncated and read.steps < 10
    (simple,) = split_command(line)  # the `&& ls` lies past the cap: not read
    assert simple.truncated and simple.program == "echo"
    assert len(simple.words[1]) == MAX_COMMAND_CHARS - len("echo '")
    # a line of many words is bounded by the cap, whatever its length
    words = "echo " + "w " * (1 << 20)
    assert tokenize(words).steps <= MAX_COMMAND_CHARS + 1


def test_a_line_within_the_cap_is_not_marked() -> None:
    simples = split_command("pytest -q && ruff check .")
    assert [s.truncated for s in simples] == [False, False]
    assert [s.then for s in simples] == ["&&", ""]


@pytest.mark.parametrize(
    ("line", "words"),
    [
        (
            "git commit -m \"$(cat <<'EOF'\nfix (x) && y\nEOF\n)\" && git push",
            [("git", "commit", "-m"), ("git", "push")],
        ),
        ("echo 'a && b' # then && comment\nls", [("echo", "a && b"), ("ls",)]),
        ("(cd web && npm test) || true", [("cd", "web"), ("npm", "test"), ("true",)]),
        ("FOO=1 sudo -E timeout 60 pytest 2>/dev/null", [("pytest",)]),
        (
            "sed -i 's/a/b/' x.py && \\\nsed -i 's/c/d/' y.py",
            [("sed", "-i", "s/a/b/", "x.py"), ("sed", "-i", "s/c/d/", "y.py")],
        ),
        ("echo 'unbalanced && ls", [("echo", "'unbalanced"), ("ls",)]),
    ],
)
def test_shell_words_separators_heredocs_and_comments(
    line: str, words: list[tuple[str, ...]]
) -> None:
    got = [s.words[: len(w)] for s, w in zip(split_command(line), words, strict=False)]
    assert got == words and len(split_command(line)) == len(words)


def test_redirections_name_the_files_written() -> None:
    (simple,) = split_command("npm run build > build.log 2>&1")
    assert simple.writes == ("build.log",) and simple.words == ("npm", "run", "build")
    (both,) = split_command("make &> make.log")
    assert both.writes == ("make.log",)
    first, _ = split_command("pytest 2>&1 | tee out.txt")
    assert first.piped_out and first.writes == ()


def test_a_heredoc_inside_a_substitution_is_text_whatever_its_quotes() -> None:
    line = "git commit -m \"$(cat <<'EOF'\nit's the fix (for #12\nEOF\n)\" && git push origin main"
    commit, push = split_command(line)
    assert commit.words[:2] == ("git", "commit") and "it's the fix" in commit.words[3]
    assert push.words == ("git", "push", "origin", "main")


@pytest.mark.parametrize("wrapper", ["sudo -E", "timeout 5", "A=1", "npx -y"])
def test_many_wrapper_words_are_removed(wrapper: str) -> None:
    # 20,000 wrapper words before the program: removed by moving an index, not by
    # copying the rest of the words once per word removed
    line = (wrapper + " ") * 20_000 + "pytest -q"
    (simple,) = split_command(line)
    assert simple.words == ("pytest", "-q")
