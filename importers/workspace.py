"""The workspace inventory a run's steps imply: each path against the run's base.

Fed by file tools (write, edit, delete), by the file operations of shell commands that
succeeded (`rm`, `mv`, `cp`, `touch`, redirections, `sed -i`, `git mv/rm`), and by what
git itself lists (`git status`, the mode lines of `git commit`). A path first seen being
created counts as absent from the base; one first seen being edited, moved away or
deleted counts as present in it. The inventory is the base comparison: a file created and
removed again is not in it. Each path's digest is a hash of the changes the trace shows
to it, so two inventories differ exactly where a file was touched in between.
"""

from __future__ import annotations

import fnmatch
import hashlib
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

from outcomes.importers.commands import Simple, split_command


@dataclass(slots=True)
class _Entry:
    at_base: bool
    exists: bool
    history: str
    directory: bool = False
    reverted: bool = False  # restored to its base content (`git checkout -- f`)
    # Known only from what git listed (status, commit mode lines), never from a step that
    # changed it: nothing tells when it changed, so it makes no check stale.
    listed_only: bool = False


class _Paths(dict[str, _Entry]):
    """The inventory's entries, with an index of the paths under each directory, so
    finding what a directory holds costs what it holds, not the whole inventory."""

    def __init__(self) -> None:
        super().__init__()
        self._below: dict[str, dict[str, None]] = {}

    @staticmethod
    def _ancestors(path: str) -> list[str]:
        return [path[:i] for i, ch in enumerate(path) if ch == "/" and i > 0]

    def __setitem__(self, path: str, entry: _Entry) -> None:
        if path not in self:
            for directory in self._ancestors(path):
                self._below.setdefault(directory, {})[path] = None
        super().__setitem__(path, entry)

    def __delitem__(self, path: str) -> None:
        super().__delitem__(path)
        for directory in self._ancestors(path):
            below = self._below.get(directory)
            if below is not None:
                below.pop(path, None)

    def under(self, directory: str) -> list[str]:
        """The known paths below `directory` (`a/b` holds `a/b/c`, not `a/bc`)."""
        return list(self._below.get(directory.rstrip("/"), ()))


# Glob words expanded against the known files per command; later ones stay a pattern
# (a bound on the work one command line can cause).
_GLOB_LIMIT = 256


class Inventory:
    """Mutable while a trace is read; `artifacts()` is the inventory at that moment."""

    def __init__(self, root: str | None, scratch: frozenset[str] = frozenset()) -> None:
        self.root = root.rstrip("/") if root else None
        self._paths = _Paths()
        self.scratch = scratch
        self._settled_scratch: set[str] = set()
        self._globs = 0  # glob words expanded in the current command line

    # -- paths -------------------------------------------------------------------------

    def relative(self, path: str, cwd: str | None = None) -> str:
        """`path` relative to the workspace root when under it (else as given, absolute)."""
        p = path.strip()
        if p.startswith("~"):
            return p
        if not p.startswith("/"):
            base = cwd or self.root
            p = posixpath.normpath(posixpath.join(base, p)) if base else posixpath.normpath(p)
        else:
            p = posixpath.normpath(p)
        if self.root and (p == self.root or p.startswith(self.root + "/")):
            p = p[len(self.root) + 1 :] or "."
        return p

    def _touch(
        self, path: str, *, created: bool | None, exists: bool, note: str, listed: bool = False
    ) -> None:
        entry = self._paths.get(path)
        if entry is None:
            at_base = not created if created is not None else not exists
            entry = _Entry(at_base=at_base, exists=exists, history="", listed_only=listed)
            self._paths[path] = entry
        elif not listed:
            entry.listed_only = False
        entry.exists = exists
        entry.reverted = False
        entry.history = hashlib.sha256(f"{entry.history}|{note}".encode()).hexdigest()

    # -- what happened -----------------------------------------------------------------

    def write(self, path: str, created: bool | None, note: str) -> None:
        """A file was written whole or edited. `created`: was it new?"""
        if path in self._paths and created is None:
            created = not self._paths[path].at_base and not self._paths[path].exists
        self._touch(path, created=created, exists=True, note=note)

    def edit(self, path: str, note: str) -> None:
        known = self._paths.get(path)
        self._touch(path, created=None if known else False, exists=True, note=note)

    def delete(self, path: str, note: str) -> None:
        under = self._paths.under(path)
        for p in under:
            self._touch(p, created=None, exists=False, note=note)
        if path in self._paths or not under:
            known = self._paths.get(path)
            if known is None:
                self._paths[path] = _Entry(at_base=True, exists=False, history="")
            self._touch(path, created=None, exists=False, note=note)

    def delete_directory(self, path: str, note: str) -> None:
        """A directory removed whole: its known files, or the directory as `dir/`."""
        d = path.rstrip("/")
        under = self._paths.under(d)
        for p in under:
            self._touch(p, created=None, exists=False, note=note)
        if not any(self._paths[p].at_base for p in under):
            key = d + "/"
            if key not in self._paths:
                self._paths[key] = _Entry(at_base=True, exists=False, history="", directory=True)
            self._touch(key, created=None, exists=False, note=note)

    def move(self, source: str, target: str, note: str) -> None:
        under = self._paths.under(source)
        if under:
            for p in under:
                self.move(p, target.rstrip("/") + p[len(source.rstrip("/")) :], note)
            return
        self.delete(source, note)
        self.write(target, None if target in self._paths else True, note)

    def observed(self, path: str, change: str, note: str) -> None:
        """What git lists for a path: `modified`, `deleted`, `added`."""
        entry = self._paths.get(path)
        if change == "modified":
            if entry is None:
                self._touch(path, created=False, exists=True, note=note, listed=True)
            elif not entry.exists:
                entry.exists = True
        elif change == "deleted":
            if entry is None:
                self._paths[path] = _Entry(at_base=True, exists=False, history="", listed_only=True)
            self._touch(path, created=None, exists=False, note=note, listed=True)
        elif change == "added" and (entry is None or not entry.exists):
            created = entry is None or not entry.at_base
            self._touch(path, created=created, exists=True, note=note, listed=True)

    def settle(self, final: Sequence[tuple[str, str]], note: str) -> None:
        """The run's own final diff against its base: its paths take its change; other
        relative paths (inside the repository it covers) are unchanged after all."""
        listed = {path for path, _ in final}
        for path in list(self._paths):
            if not path.startswith(("/", "~")) and path not in listed:
                if not self._paths[path].at_base:
                    self._settled_scratch.add(path)
                del self._paths[path]
        for path, change in final:
            at_base = change != "added"
            exists = change != "deleted"
            old = self._paths.get(path)
            if old is not None and (old.at_base, old.exists) == (at_base, exists):
                continue  # the diff agrees with what the steps showed
            history = hashlib.sha256(f"{old.history if old else ''}|{note}".encode()).hexdigest()
            self._paths[path] = _Entry(at_base=at_base, exists=exists, history=history)

    def created_and_removed(self) -> frozenset[str]:
        """Paths the run created and removed again (scratch files)."""
        gone = {p for p, e in self._paths.items() if not e.at_base and not e.exists}
        return frozenset(gone | self._settled_scratch)

    def known_files(self) -> list[str]:
        return [p for p, e in self._paths.items() if e.exists and not e.directory]

    # -- the inventory -----------------------------------------------------------------

    def artifacts(self) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for path in sorted(self._paths):
            e = self._paths[path]
            if e.reverted:
                continue  # back to its base content: no change
            if e.at_base and e.exists:
                change = "modified"
            elif e.at_base:
                change = "deleted"
            elif e.exists:
                change = "added"
            else:
                continue  # created and removed again: not a change against the base
            out.append(
                {
                    "path": path,
                    "change": change,
                    "digest": None if change == "deleted" else f"trace:{e.history[:32]}",
                    "renamed_from": None,
                    "verification_sensitive": path not in self.scratch and not e.listed_only,
                }
            )
        return out

    def fingerprint(self) -> str:
        return hashlib.sha256(repr(self.artifacts()).encode()).hexdigest()[:16]

    # -- shell commands ----------------------------------------------------------------

    def apply_shell(self, command: str, output: str | None, cwd: str | None, note: str) -> None:
        """Apply the file operations of a command line that ran without an error. The
        change each makes is noted by the whole line (heredoc bodies included), not by
        where it stands: the same line re-run after a restore gives the same digest."""
        here = cwd
        # the line's digest, taken once: each path it changes hashes this, not the line
        change = "sh:" + hashlib.sha256(f"{cwd or ''}:{command}".encode()).hexdigest()
        self._globs = 0
        for simple in split_command(command):
            if simple.program == "cd" and len(simple.words) > 1:
                here = posixpath.normpath(posixpath.join(here or self.root or "/", simple.words[1]))
                continue
            self._apply_simple(simple, here, change)
        if output:
            self.apply_git_listing(command, output, note)

    def _paths_of(self, words: list[str], cwd: str | None) -> list[str]:
        out: list[str] = []
        for w in words:
            if w.startswith("-") or not w or "$" in w:
                continue
            rel = self.relative(w, cwd)
            if any(ch in w for ch in "*?[") and self._globs < _GLOB_LIMIT:
                self._globs += 1
                pattern = re.compile(fnmatch.translate(rel))
                known = [p for p in self.known_files() if pattern.match(p)]
                # names the trace never showed stay a pattern (`charts/*`): the files it
                # matched, whatever they were called
                out.extend(known or [rel])
            else:
                out.append(rel)
        return out

    def _apply_simple(self, simple: Simple, cwd: str | None, note: str) -> None:
        w = list(simple.words)
        prog = simple.program
        for target in simple.writes:
            if "$" not in target:
                self.write(self.relative(target, cwd), None, note)
        if prog == "git" and len(w) > 1 and w[1] in {"checkout", "restore"}:
            self._restore(w[1:], cwd, note)
            return
        if prog == "git" and len(w) > 1 and w[1] in {"mv", "rm"}:
            prog, w = w[1], w[1:]
            if prog == "rm" and "--cached" in w:
                return
        flags = {a for a in w[1:] if a.startswith("-")}
        if prog == "rm":
            recursive = any(re.fullmatch(r"-\w*[rR]\w*|--recursive", f) for f in flags)
            for p in self._paths_of(w[1:], cwd):
                if recursive or p.endswith("/"):
                    self.delete_directory(p, note)
                else:
                    self.delete(p, note)
        elif prog == "rmdir":
            return
        elif prog in {"mv", "cp"}:
            args = [a for a in w[1:] if not a.startswith("-")]
            if len(args) < 2:
                return
            dest = self.relative(args[-1], cwd)
            sources = self._paths_of(args[:-1], cwd)
            into = (
                len(args) > 2
                or args[-1].endswith("/")
                or any(ch in a for a in args[:-1] for ch in "*?")
            )
            for s in sources:
                name = posixpath.basename(s)
                target = posixpath.join(dest, name) if into else dest
                if prog == "mv":
                    self.move(s, target, note)
                else:
                    self.write(target, None, note)
        elif prog == "touch":
            for p in self._paths_of(w[1:], cwd):
                if p not in self._paths or not self._paths[p].exists:
                    self.write(p, None, note)
        elif prog in {"curl", "wget"}:
            self._download(w, cwd, note)
        elif prog == "tee":
            for p in self._paths_of(w[1:], cwd):
                self.write(p, None, note)
        elif prog in {"sed", "perl"} and any(
            f.startswith("-i") or f == "--in-place" for f in flags
        ):
            args = [a for a in w[1:] if not a.startswith("-")]
            if prog == "sed" and not any(f in {"-e", "--expression"} for f in flags):
                args = args[1:]  # the script
            for p in self._paths_of(args, cwd):
                self.edit(p, note)

    def _restore(self, args: list[str], cwd: str | None, note: str) -> None:
        """`git checkout [--] paths`, `git restore paths`: tracked files back to HEAD.
        Without `--`, checkout arguments count only when they name a changed file (a
        branch name is no path)."""
        if "--staged" in args and "--worktree" not in args:
            return
        rest = args[1:]
        explicit = "--" in rest
        names = (
            rest[rest.index("--") + 1 :] if explicit else [a for a in rest if not a.startswith("-")]
        )
        for p in self._paths_of(names, cwd):
            entry = self._paths.get(p)
            if entry is None and not (explicit or args[0] == "restore"):
                continue
            if entry is None:
                entry = _Entry(at_base=True, exists=True, history="")
                self._paths[p] = entry
            if entry.at_base:
                entry.exists = True
                entry.reverted = True
                entry.history = ""  # the base content again: its history starts over

    def _download(self, words: list[str], cwd: str | None, note: str) -> None:
        """The file `curl -o F` / `curl -O URL` / `wget [-O F] URL` writes."""
        urls = [w for w in words[1:] if re.match(r"https?://", w)]
        target: str | None = None
        for flag, value in zip(words, [*words[1:], ""], strict=False):
            if flag in {"-o", "--output"} or (words[0].endswith("wget") and flag == "-O"):
                target = value
        remote = words[0].endswith("wget") or any(
            re.fullmatch(r"-[a-zA-Z]*O[a-zA-Z]*|--remote-name", w) for w in words[1:]
        )
        if target is None and remote and urls:
            target = posixpath.basename(urls[-1].split("?", 1)[0].rstrip("/")) or None
        if target and target != "-" and not target.startswith("/dev/"):
            self.write(self.relative(target, cwd), None, note)

    _STATUS_LONG = re.compile(
        r"^\s+(modified|deleted|new file|renamed):\s+(.+?)(?: -> (.+))?\s*$", re.M
    )
    _STATUS_SHORT = re.compile(r"^([ MADRCU?]{2}) (.+?)(?: -> (.+))?$", re.M)
    _MODE = re.compile(r"^ (create|delete) mode \d+ (.+)$", re.M)
    _RENAME = re.compile(r"^ rename (.+) \(\d+%\)$", re.M)

    def apply_git_listing(self, command: str, output: str, note: str) -> None:
        """What `git status` and `git commit` print about paths."""
        simples = split_command(command)
        gits = [s.words[1] for s in simples if s.program == "git" and len(s.words) > 1]
        if "status" in gits:
            short = any(
                "--short" in s.words or "-s" in s.words or "--porcelain" in s.words for s in simples
            )
            if short:
                for m in self._STATUS_SHORT.finditer(output):
                    code, path, renamed = m.group(1), m.group(2), m.group(3)
                    if "?" in code:
                        continue
                    if "R" in code and renamed:
                        self.observed(self.relative(path), "deleted", note)
                        self.observed(self.relative(renamed), "added", note)
                    elif "D" in code:
                        self.observed(self.relative(path), "deleted", note)
                    elif "A" in code:
                        self.observed(self.relative(path), "added", note)
                    elif "M" in code:
                        self.observed(self.relative(path), "modified", note)
            else:
                for m in self._STATUS_LONG.finditer(output):
                    what, path, renamed = m.group(1), m.group(2), m.group(3)
                    if what == "renamed" and renamed:
                        self.observed(self.relative(path), "deleted", note)
                        self.observed(self.relative(renamed), "added", note)
                    elif what == "new file":
                        self.observed(self.relative(path), "added", note)
                    else:
                        self.observed(self.relative(path), what, note)
        if "commit" in gits:
            for m in self._MODE.finditer(output):
                change = "added" if m.group(1) == "create" else "deleted"
                self.observed(self.relative(m.group(2)), change, note)
            for m in self._RENAME.finditer(output):
                source, target = _expand_rename(m.group(1))
                self.observed(self.relative(source), "deleted", note)
                self.observed(self.relative(target), "added", note)


def _expand_rename(text: str) -> tuple[str, str]:
    """`{a => b}/x.ts` or `a/x => b/x` as its two paths."""
    m = re.match(r"^(.*)\{(.*) => (.*)\}(.*)$", text)
    if m:
        pre, a, b, post = m.groups()
        return posixpath.normpath(pre + a + post), posixpath.normpath(pre + b + post)
    a, _, b = text.partition(" => ")
    return a.strip(), b.strip()
