"""What a command does beyond the workspace's files: commits, pushes, pull requests,
publishes, deploys, installs, messages, servers, and the state its output settles.

The tools with an effect are rows of the catalogue (`outcomes.importers.catalogue`): the
effect's class, local or remote, which system, and the lines that show it completed or
failed. A row's effect is `completed` when its done line is in the output, `failed` on a
non-zero exit status of its own or its failure line, `unknown` otherwise. Git commits and
pushes, forge CLIs, HTTP clients with a method, mailers, chat tools, schedules and
services keep a reader each here, because their target is read from their arguments.

Effect classes are the ones the claim checker reads a narrative's words against:
`write` (local commits and tags), `git_push` (pushes, commits made on a remote through
its API), `pull_request`, `issue`, `deployment` (deploys, preview sandboxes),
`publication` (repositories, releases, packages, images), `email`, `message` (chat),
`upload`, and for what is not an effect on others' systems `install` (packages, new
projects from a scaffolder), `fetch` (downloads), `service` (a server started),
`schedule`.

Pure: strings in, values out.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Literal

from outcomes.importers.catalogue import TOOLS, EffectSpec, Tool, find_tool, invocation
from outcomes.importers.checks import Scripts
from outcomes.importers.shell import Simple, split_command

EffectOutcome = Literal["completed", "failed", "denied", "unknown"]


@dataclass(frozen=True, slots=True)
class Effect:
    """An effect a command or tool call attempted: its class, a target handle, and the
    state its output settles (`unknown` when it does not), with the line that says so."""

    effect_class: str
    target: str
    outcome: EffectOutcome
    evidence: str
    receipt: str | None = None  # the provider's own id (commit sha, repo id, URL)
    consequential: bool = True
    kind: str = ""


_COMMIT_LINE = re.compile(
    r"^[^\[\n]{0,20}\[([^\]\n]+?)(?: \(root-commit\))? ([0-9a-f]{7,40})\] .*$", re.M
)
_URL = re.compile(r"https?://[^\s)>\]\"']+")
_NOT_FOUND = re.compile(r"(command not found|No such file or directory|not recognized as)", re.I)
_GIT_GLOBAL_WITH_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})
_FORGE_ACTS = frozenset(
    {"create", "merge", "comment", "edit", "close", "upload", "deploy", "run", "reopen"}
    | {"note", "approve", "review", "fork", "delete", "ready"}
)
_MAILERS = frozenset({"mail", "mailx", "sendmail", "mutt", "msmtp", "swaks"})
_CHAT = re.compile(r"(chat|message|notify|slack|discord|telegram|sms)")
_SERVER_SCRIPTS = frozenset({"dev", "start", "serve", "preview", "develop"})


def _status(simple: Simple, exit_code: int | None) -> int | None:
    return None if simple.piped_out or simple.background else exit_code


@functools.lru_cache(maxsize=4)
def _memo(text: str) -> dict[object, object]:
    """What has been asked of one output so far. A line of many commands shares one
    output and each command's reader asks the same questions of it; the answers are kept
    for the last few outputs only (Python keeps a string's hash, so finding the memo of
    the same output again costs nothing)."""
    return {}


def _find(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    memo = _memo(text)
    if pattern not in memo:
        memo[pattern] = pattern.search(text)
    found = memo[pattern]
    return found if isinstance(found, re.Match) else None


def _find_all(pattern: re.Pattern[str], text: str) -> tuple[re.Match[str], ...]:
    memo = _memo(text)
    key = ("all", pattern)
    if key not in memo:
        memo[key] = tuple(pattern.finditer(text))
    found = memo[key]
    return found if isinstance(found, tuple) else ()


def _search(pattern: str, text: str, flags: int = 0) -> re.Match[str] | None:
    return _find(re.compile(pattern, flags), text)


def _last_lines(text: str, n: int = 2) -> str:
    memo = _memo(text)
    key = ("last", n)
    if key not in memo:
        memo[key] = _tail(text, n)
    found = memo[key]
    return found if isinstance(found, str) else ""


def _tail(text: str, n: int) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:])[:300]


def _git_args(words: tuple[str, ...]) -> list[str]:
    """git's words after its global options (`git -C dir --no-pager commit`)."""
    args = list(words[1:])
    while args and args[0].startswith("-"):
        args = args[2:] if args[0] in _GIT_GLOBAL_WITH_VALUE else args[1:]
    return args


def git_effects(simple: Simple, output: str | None, exit_code: int | None) -> list[Effect]:
    """The effects of one git, gh or glab command (commit, tag, push, pr/mr/issue/release
    /repo create and merge)."""
    if not simple.words:
        return []
    prog = simple.program
    text = output or ""
    status = _status(simple, exit_code)
    if prog == "git":
        args = _git_args(simple.words)
        verb = args[0] if args else ""
        if verb == "commit":
            if not _find(_COMMIT_LINE, text) and _find(_NOTHING_TO_COMMIT, text):
                return []  # git had nothing to write: no write was attempted
            return [_commit(text, status)]
        if verb == "push":
            return [_push(args, text, status)]
        if verb == "tag":
            return _spec_effects(simple, text, exit_code, program="git", args=args)
        return []
    if prog in {"gh", "glab"}:
        sub = [a for a in simple.words[1:] if not a.startswith("-")]
        if len(sub) < 2 or sub[1] not in _FORGE_ACTS:
            return []
        tool = find_tool(prog, sub, checks=False)
        if tool is None or tool.effect is None:
            return []
        spec = tool.effect
        target = f"{prog}:{sub[0]}-{sub[1]}"
        kind = f"{sub[0]} {sub[1]}"
        if status not in (None, 0):
            evidence = _last_lines(text) or f"exit code {status}"
            return [Effect(spec.effect_class, target, "failed", evidence, kind=kind)]
        bad = _find(spec.failed, text) if spec.failed else None
        if bad:
            return [Effect(spec.effect_class, target, "failed", bad.group(0).strip(), kind=kind)]
        done = _find(spec.done, text) if spec.done else None
        url = _URL.search(done.group(0) if done else text)
        if done or url:  # the forge prints the created or changed object's address
            evidence = (done.group(0) if done else url.group(0) if url else "").strip()
            receipt = url.group(0) if url else None
            return [
                Effect(spec.effect_class, target, "completed", evidence[:300], receipt, kind=kind)
            ]
        return [Effect(spec.effect_class, target, "unknown", "the output shows no URL", kind=kind)]
    return []


def _commit(text: str, status: int | None) -> Effect:
    lines = _find_all(_COMMIT_LINE, text)
    if lines:
        line = lines[-1]
        return Effect(
            "write",
            f"git:{line.group(1)}",
            "completed",
            line.group(0).strip(),
            line.group(2),
            kind="commit",
        )
    if status not in (None, 0):
        return Effect(
            "write",
            "git:commit",
            "failed",
            _last_lines(text) or f"exit code {status}",
            kind="commit",
        )
    return Effect("write", "git:commit", "unknown", "no commit line in the output", kind="commit")


_NOTHING_TO_COMMIT = re.compile(r"nothing (added )?to commit|no changes added to commit")


def _push(args: list[str], text: str, status: int | None) -> Effect:
    spec = _GIT_PUSH.effect
    assert spec is not None and spec.done is not None and spec.failed is not None
    target = "git-push:" + (
        " ".join(a for a in args[1:] if not a.startswith("-")) or "default remote"
    )
    fail = _find(spec.failed, text)
    ok = _find(spec.done, text)
    if fail and not ok:
        return Effect("git_push", target, "failed", fail.group(0).strip(), kind="push")
    if ok and status in (None, 0):
        return Effect("git_push", target, "completed", ok.group(0).strip(), kind="push")
    if status not in (None, 0):
        return Effect("git_push", target, "failed", f"exit code {status}", kind="push")
    return Effect(
        "git_push", target, "unknown", "the output does not show the push's result", kind="push"
    )


_GIT_PUSH = find_tool("git", ["push"], checks=False) or Tool("git push", "any", ("git",))


def shell_effects(
    simple: Simple,
    output: str | None,
    exit_code: int | None,
    scripts: Scripts | None = None,
) -> list[Effect]:
    """Effects of one simple command: git and forges, catalogue rows (publishes,
    deploys, installs, scaffolders, servers), HTTP requests with a method, downloads,
    mail and chat messages, schedules and services."""
    effects = git_effects(simple, output, exit_code)
    if effects or simple.program in {"git", "gh", "glab"}:
        return effects
    prog = simple.program
    w = simple.words
    text = output or ""
    status = _status(simple, exit_code)
    missing = _find(_NOT_FOUND, text)
    if missing and prog in text[: missing.end() + 40]:
        failed_line = next(
            (ln for ln in text.splitlines() if _NOT_FOUND.search(ln)), missing.group(0)
        )
        klass = _effect_program(simple)
        if klass:
            return [Effect(klass, prog, "failed", failed_line.strip(), kind=prog)]
        return []
    if prog in _MAILERS:
        return [_mail(w, status)]
    if _CHAT.search(prog) and len(w) > 1:
        return [_chat(w, text, status)]
    http = _http_effect(simple, text, status)
    if http is not None:
        return [http]
    found = _spec_effects(simple, text, exit_code)
    if found and found[0].kind == "server":
        return found
    effects.extend(found)
    if not found:
        server = _server_script(simple, scripts)
        if server:
            return [_ready_server(server[0], text, status)]
        remote = _copy_effect(simple, text, status)
        if remote is not None:
            return [remote]
    if found and found[0].effect_class == "install":
        for m in _find_all(_POLICY_DENIED, text):
            pkgs = found[0].target.removeprefix("install:")
            effects.append(
                Effect(
                    "service",
                    f"service:{m.group(1)}:{pkgs}",
                    "denied",
                    m.group(0).strip(),
                    consequential=False,
                    kind="service",
                )
            )
    if prog in {"apt-get", "apt", "yum", "dnf", "apk", "brew"} and not found:
        effects.extend(_system_install(simple, text, status))
    if prog in {"curl", "wget"}:
        effects.extend(_download(simple, text, status))
    if prog == "crontab" and not _lists_crontab(w):
        effects.append(
            Effect(
                "schedule",
                "crontab",
                "failed" if status not in (None, 0) else "unknown",
                "crontab installed nothing it reports"
                if status in (None, 0)
                else f"exit code {status}",
                kind="schedule",
            )
        )
    if prog in {"systemctl", "service"} and any(a in {"start", "restart", "enable"} for a in w[1:]):
        effects.append(
            Effect(
                "service",
                f"service:{' '.join(w[1:])}",
                "failed" if status not in (None, 0) else "unknown",
                f"exit code {status}" if status is not None else "no status shown",
                consequential=False,
                kind="service",
            )
        )
    if simple.background and not found and _serves(simple):
        effects.append(
            Effect(
                "service",
                f"server:{simple.text[:80]}",
                "unknown",
                _last_lines(text) or "started in the background; its state is not shown",
                consequential=False,
                kind="server",
            )
        )
    return effects


_POLICY_DENIED = re.compile(r"^invoke-rc\.d: policy-rc\.d denied execution of (\w+)\.\s*$", re.M)


def _system_install(simple: Simple, text: str, status: int | None) -> list[Effect]:
    """apt-get, yum, dnf, apk, brew: operating-system packages."""
    args = [a for a in simple.words[1:] if not a.startswith("-")]
    if not args or args[0] not in {"install", "add"} or len(args) < 2:
        return []
    pkgs = " ".join(args[1:])
    if status not in (None, 0) or _search(r"^(E:|ERROR:|Error:)", text, re.M):
        outcome: EffectOutcome = "failed"
        evidence = _last_lines(text) or f"exit code {status}"
    else:
        done = _search(
            r"^(Setting up .*|Installed:.*|OK: .*|==> Pouring .*|Complete!)$", text, re.M
        )
        outcome = "completed" if done else "unknown"
        evidence = (
            done.group(0).strip() if done else "the output does not show the install's result"
        )
    effects = [
        Effect("install", f"install:{pkgs}", outcome, evidence, consequential=False, kind="install")
    ]
    for m in _find_all(_POLICY_DENIED, text):
        effects.append(
            Effect(
                "service",
                f"service:{m.group(1)}:{pkgs}",
                "denied",
                m.group(0).strip(),
                consequential=False,
                kind="service",
            )
        )
    return effects


def _mail(w: tuple[str, ...], status: int | None) -> Effect:
    rcpt = next((a for a in reversed(w[1:]) if "@" in a), "recipient")
    if status not in (None, 0):
        return Effect("email", f"mail:{rcpt}", "failed", f"exit code {status}", kind="email")
    # a local mailer's success only says the message was handed over, not delivered
    return Effect(
        "email",
        f"mail:{rcpt}",
        "unknown",
        "handed to the local mailer; delivery not shown",
        kind="email",
    )


def _chat(w: tuple[str, ...], text: str, status: int | None) -> Effect:
    rcpt = w[1]
    reply = _search(rf"^\s*{re.escape(rcpt)}\s*:\s*\S.*$", text, re.M | re.I) if rcpt else None
    if status not in (None, 0):
        return Effect("message", f"message:{rcpt}", "failed", f"exit code {status}", kind="message")
    if reply:
        return Effect(
            "message", f"message:{rcpt}", "completed", reply.group(0).strip()[:200], kind="message"
        )
    return Effect(
        "message", f"message:{rcpt}", "unknown", "no reply or receipt in the output", kind="message"
    )


_SENDING_FLAGS = frozenset(
    {"-X", "--request", "-d", "--data", "--data-raw", "--data-binary", "--data-urlencode"}
    | {"-F", "--form", "-T", "--upload-file", "--json", "--method", "--post-data", "--post-file"}
    | {"--body-data", "--body-file"}
)
_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _method(simple: Simple) -> str | None:
    """The HTTP method a curl, wget or httpie call sends, None for a plain read."""
    w = simple.words
    prog = simple.program
    if prog in {"http", "https", "xh"}:
        verb = w[1].upper() if len(w) > 1 else ""
        return verb if verb in _WRITE_METHODS else None
    method: str | None = None
    for flag, value in zip(w[1:], [*w[2:], ""], strict=False):
        if flag in {"-X", "--request", "--method"}:
            method = value.upper()
        elif flag.startswith("--method=") or flag.startswith("--request="):
            method = flag.split("=", 1)[1].upper()
        elif flag.startswith("-X") and len(flag) > 2:
            method = flag[2:].upper()
        elif method is None and (
            flag in _SENDING_FLAGS or flag.startswith(("--data", "--post-", "--form", "-d", "-F"))
        ):
            method = "POST"
    if method in _READ_METHODS:
        return None
    return method


def _http_effect(simple: Simple, text: str, status: int | None) -> Effect | None:
    """A request that changes something on an HTTP service: `curl -X POST`, `wget
    --method=PUT`, `http POST url`."""
    if simple.program not in {"curl", "wget", "http", "https", "xh"}:
        return None
    method = _method(simple)
    if method is None:
        return None
    w = simple.words
    address = next((a for a in w[1:] if re.match(r"https?://", a)), "url")
    host = re.sub(r"^https?://([^/:]+).*$", r"\1", address)
    effect_class = (
        "message"
        if re.search(r"(slack|discord|chat|teams|telegram|webhook)", host + address)
        else "upload"
    )
    target = f"http:{host}"
    if status not in (None, 0) or _search(r"^curl: \(\d+\)", text, re.M):
        return Effect(
            effect_class, target, "failed", _last_lines(text) or f"exit code {status}", kind="http"
        )
    answer = _search(r"HTTP/[\d.]+ (\d{3})|awaiting response\.\.\. (\d{3})", text)
    code = (answer.group(1) or answer.group(2)) if answer else None
    if answer and code and code.startswith("2"):
        return Effect(effect_class, target, "completed", answer.group(0), kind="http")
    if answer:
        return Effect(effect_class, target, "failed", answer.group(0), kind="http")
    return Effect(
        effect_class, target, "unknown", "the response's status is not shown", kind="http"
    )


def _download(simple: Simple, text: str, status: int | None) -> list[Effect]:
    """A file saved by curl or wget (`-o`, `-O`, wget's default)."""
    w = simple.words
    saves = simple.program == "wget" or any(
        a in {"-O", "-o", "--output", "--remote-name", "-LO", "-OL"} or a.startswith("-o")
        for a in w[1:]
    )
    if not saves:
        return []
    address = next((a for a in w[1:] if a.startswith(("http://", "https://"))), "url")
    if status not in (None, 0) or _search(r"^curl: \(\d+\)|ERROR \d{3}", text, re.M):
        outcome: EffectOutcome = "failed"
        evidence = _last_lines(text) or f"exit code {status}"
    elif _search(r"^\s*100\s+\d+\S*\s+100\s+\d+|saved \[|100%", text, re.M):
        done = _search(r"^.*(100\s+\d+\S*\s+100\s+\d+|saved \[|100%).*$", text, re.M)
        outcome, evidence = "completed", done.group(0).strip()[-120:] if done else "100%"
    else:
        outcome, evidence = "unknown", "the output does not show the transfer's result"
    return [
        Effect(
            "fetch", f"download:{address}", outcome, evidence, consequential=False, kind="download"
        )
    ]


def _copy_effect(simple: Simple, text: str, status: int | None) -> Effect | None:
    """Copies to another machine or a bucket: `aws s3 cp`, `gsutil cp`, `scp`, `rsync`."""
    w = simple.words
    prog = simple.program
    sub = next((a for a in w[1:] if not a.startswith("-")), "")
    if (prog == "aws" and any(a.startswith("s3://") for a in w[2:])) or (
        prog == "gsutil" and sub in {"cp", "rsync"}
    ):
        target = f"{prog} {sub}"
        if status not in (None, 0):
            return Effect(
                "upload", target, "failed", _last_lines(text) or f"exit code {status}", kind=target
            )
        done = _search(r"^upload: \S+ to s3://.*$|Operation completed.*", text, re.M)
        if done:
            return Effect("upload", target, "completed", done.group(0).strip()[:300], kind=target)
        return Effect(
            "upload", target, "unknown", "the output does not show the result", kind=target
        )
    if prog in {"scp", "rsync"} and any(re.match(r"^[\w.@-]+:", a) for a in w[-1:]):
        target = f"{prog}:{w[-1]}"[:200]
        if status not in (None, 0):
            return Effect("upload", target, "failed", f"exit code {status}", kind=prog)
        return Effect(
            "upload", target, "unknown", "a copy's output does not show it arrived", kind=prog
        )
    return None


def _effect_program(simple: Simple) -> str | None:
    """The effect class a program exists for, when a missing program failed it."""
    prog = simple.program
    if prog in _MAILERS:
        return "email"
    if _CHAT.search(prog):
        return "message"
    tool = find_tool(prog, list(simple.words[1:]), checks=False)
    if tool is not None and tool.effect is not None and tool.effect.effect_class == "deployment":
        return "deployment"
    if prog == "crontab" and not _lists_crontab(simple.words):
        return "schedule"
    return None


def _lists_crontab(words: tuple[str, ...]) -> bool:
    """`crontab -l` only prints the table: no schedule changes."""
    return words[1:2] == ("-l",)


def _serves(simple: Simple) -> bool:
    return bool(
        re.search(
            r"(http\.server|serve|server|runserver|uvicorn|gunicorn|flask run|"
            r"npm (run )?(start|dev)|node |vite|next (dev|start))",
            simple.text,
        )
    )


# -- catalogue rows with an effect -----------------------------------------------------


def _spec_effects(
    simple: Simple,
    text: str,
    exit_code: int | None,
    *,
    program: str | None = None,
    args: list[str] | None = None,
) -> list[Effect]:
    """The effect of a catalogue row `simple` runs, read by the row's own lines."""
    if program is None or args is None:
        program, args = invocation(simple.words)
    prog, words = program, args
    tool = find_tool(prog, words, checks=False)
    if tool is None or tool.effect is None or tool.name in _OWN_READERS:
        return []
    spec = tool.effect
    plain = [a for a in words if not a.startswith("-")]
    used = 1 if tool.sub else 0
    if tool.sub and plain[:1] and plain[0] in {"pip", "nuget"}:
        used = 2  # `uv pip install x`, `dotnet nuget push x`
    rest = plain[used:]
    if spec.needs_argument and not rest:
        return []
    return [_settle(spec, prog, plain, rest, text, _status(simple, exit_code), simple)]


def _target(spec: EffectSpec, prog: str, plain: list[str], rest: list[str]) -> str:
    sub = plain[0] if plain else ""
    if spec.kind == "install":
        return f"install:{' '.join(rest) or 'packages'}"[:200]
    if spec.kind == "scaffold":
        return f"scaffold:{prog} {' '.join(plain)}".strip()[:200]
    if spec.kind == "deploy":
        return f"deploy:{prog} {sub}".strip()
    if spec.kind == "tag":
        return f"git:tag:{' '.join(rest)}"[:200]
    return f"{prog} {sub}".strip()


def _settle(
    spec: EffectSpec,
    prog: str,
    plain: list[str],
    rest: list[str],
    text: str,
    status: int | None,
    simple: Simple,
) -> Effect:
    target = _target(spec, prog, plain, rest)
    if spec.kind == "server":
        target = f"server:{simple.text[:80]}"
    kind = spec.kind if spec.kind in {"install", "server", "scaffold", "deploy"} else target
    done = _find(spec.done, text) if spec.done is not None else None
    bad = _find(spec.failed, text) if spec.failed is not None else None

    def make(outcome: EffectOutcome, evidence: str, receipt: str | None = None) -> Effect:
        return Effect(
            spec.effect_class, target, outcome, evidence[:300], receipt, spec.consequential, kind
        )

    if status not in (None, 0):
        return make(
            "failed", (bad.group(0).strip() if bad else _last_lines(text)) or f"exit code {status}"
        )
    if bad and not done:
        return make("failed", bad.group(0).strip())
    if done:
        line = done.group(0).strip()
        url = _URL.search(line)
        return make("completed", line, url.group(0) if url else None)
    if spec.done is None and status == 0:
        return make("completed", "exit code 0")  # a tool that prints nothing when it acts
    if spec.kind == "server":
        return make("unknown", _last_lines(text) or "started; the output does not show it ready")
    return make("unknown", f"the output does not show the {spec.kind}'s result")


# Rows whose effect has a reader of its own in this module (their target comes from the
# arguments in a way a row does not describe).
_OWN_READERS = frozenset(
    {"git commit", "git push", "curl", "wget", "httpie"}
    | {"gh pr create/merge", "gh issue create", "gh release/repo create"}
    | {"glab mr create/merge", "glab issue create"}
)


def _server_script(simple: Simple, scripts: Scripts | None) -> list[Effect]:
    """`npm run dev`, `npm start`, `yarn dev`: a development server, read through the
    script's body when the trace showed package.json."""
    prog = simple.program
    if prog not in {"npm", "yarn", "pnpm", "bun"} or len(simple.words) < 2:
        return []
    args = [a for a in simple.words[1:] if not a.startswith("-")]
    name = (
        args[1]
        if args[:1] in (["run"], ["run-script"]) and len(args) > 1
        else args[0]
        if args
        else ""
    )
    if prog == "npm" and args[:1] not in (["run"], ["run-script"], ["start"]):
        return []
    body = (scripts.package.get(name) if scripts else None) if name else None
    if body is not None:
        for inner in split_command(body):
            found = _spec_effects(inner, "", None)
            if found and found[0].kind == "server":
                return [_as_server(simple, found[0])]
        return []
    if re.split(r"[:_-]", name, maxsplit=1)[0] not in _SERVER_SCRIPTS:  # dev, dev:web
        return []
    return [
        Effect(
            "service",
            f"server:{simple.text[:80]}",
            "unknown",
            "started; the output does not show it ready",
            consequential=False,
            kind="server",
        )
    ]


def _as_server(simple: Simple, inner: Effect) -> Effect:
    return Effect(
        inner.effect_class,
        f"server:{simple.text[:80]}",
        inner.outcome,
        inner.evidence,
        inner.receipt,
        False,
        "server",
    )


_READY = tuple(
    t.effect.done
    for t in TOOLS
    if t.effect is not None and t.effect.kind == "server" and t.effect.done is not None
)


def _ready_server(effect: Effect, text: str, status: int | None) -> Effect:
    """A server script's state from any documented ready line in its output."""
    if status not in (None, 0):
        return Effect(
            "service",
            effect.target,
            "failed",
            _last_lines(text) or f"exit code {status}",
            consequential=False,
            kind="server",
        )
    for pattern in _READY:
        m = _find(pattern, text)
        if m:
            return Effect(
                "service",
                effect.target,
                "completed",
                m.group(0).strip()[:300],
                consequential=False,
                kind="server",
            )
    return effect


# -- tools that are effects by name (MCP servers, agent tool sets) ---------------------

_TOOL_EFFECTS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"(create|fork)_?(repository|repo)$"), "publication", "repo create"),
    (re.compile(r"push(_files)?$|^push_"), "git_push", "push"),
    (
        re.compile(r"create_or_update_file$|(create|update|delete)_file_contents?$"),
        "git_push",
        "remote commit",
    ),
    (re.compile(r"(create|merge|update)_(pull_request|pr)$"), "pull_request", "pull request"),
    (
        re.compile(r"create_(issue|comment)$|add_(issue_)?comment$|(create|update)_issue"),
        "issue",
        "issue",
    ),
    (re.compile(r"(create|publish)_release$"), "publication", "release"),
    (re.compile(r"deploy|create_(app_)?preview|publish"), "deployment", "deploy"),
    (re.compile(r"send_(email|mail)"), "email", "email"),
    (
        re.compile(r"send_message|post_message|chat_post|slack|(send|reply)_?(dm|sms)"),
        "message",
        "message",
    ),
    (re.compile(r"(upload)"), "upload", "upload"),
    (re.compile(r"(^|[._])commit$"), "write", "commit"),
)


def tool_effect(
    tool: str, arguments: dict[str, object] | None, output: str | None, failed: bool | None
) -> Effect | None:
    """The effect of a non-shell tool named like one (`create_repository`,
    `mcp__github__push_files`, `create_app_preview`, `send_email`), its state from the
    tool's own result."""
    name = tool.rsplit("__", 1)[-1].lower()
    match = next(((c, k) for p, c, k in _TOOL_EFFECTS if p.search(name)), None)
    if match is None:
        return None
    effect_class, kind = match
    args = arguments or {}
    target_bits = [
        str(args[k])
        for k in (
            "owner",
            "organization",
            "repo",
            "name",
            "branch",
            "path",
            "task_id",
            "channel",
            "to",
        )
        if args.get(k)
    ]
    target = f"{name}:{'/'.join(target_bits)[:200]}" if target_bits else name
    text = output or ""
    if output is None:
        return Effect(effect_class, target, "unknown", "the call has no result", kind=kind)
    error = re.search(
        r'"status"\s*:\s*"(error|failed)"'
        r"|\b(\d{3}) [A-Z][\w ]*(failed|empty|Not Found|Unprocessable|Forbidden|Conflict)"
        r"|reported tool error|^(Error|error|failed)\b",
        text,
        re.M,
    )
    if kind == "commit":  # a local commit the tool made: its receipt is the commit id
        sha = re.search(r"\b[0-9a-f]{7,40}\b", text)
        if sha and not failed:
            return Effect("write", "git:commit", "completed", text[:300], sha.group(0), kind=kind)
        return Effect(
            "write", "git:commit", "failed" if failed else "unknown", text[:300], kind=kind
        )
    if failed or error:
        line = error.group(0) if error else _last_lines(text)
        detail = next(
            (
                ln.strip()
                for ln in text.splitlines()
                if re.search(r"(error|failed|\d{3} )", ln, re.I)
            ),
            line,
        )
        return Effect(effect_class, target, "failed", detail[:300], kind=kind)
    receipt = re.search(r'"(?:sha|id|html_url|url|preview_url|commit)"\s*:\s*"?([\w:/.\-]+)', text)
    running = re.search(r'"status"\s*:\s*"(running|success|ok|created|sent|delivered)"', text)
    if receipt or running:
        evidence = (
            (running.group(0) if running else "")
            + (" | " if running and receipt else "")
            + (receipt.group(0) if receipt else "")
        )
        return Effect(
            effect_class,
            target,
            "completed",
            evidence[:300],
            receipt.group(1) if receipt else None,
            kind=kind,
        )
    return Effect(
        effect_class, target, "unknown", "the result does not show the outcome", kind=kind
    )
