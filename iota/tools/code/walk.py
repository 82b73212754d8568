"""Walking the project tree the way git sees it, and the glob patterns the walk is filtered with.

One translator turns a glob into a regular expression over `/`-separated paths: `*` and `?`
stay inside one path component, `**` as a whole component crosses any number of them,
`[...]` is a character class and `{a,b}` an alternation. The `glob` tool, grep's `include`
filter and the root `.gitignore` all use it, so a pattern means the same thing everywhere.

Only the root `.gitignore` is honoured (nested ones and git's global excludes are not), and it
is read again on every call so an edit to it applies at once. `.git` is skipped at any depth.
The walk goes through directory descriptors from the jail (`paths`) and follows no link.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from iota.errors import ToolError
from iota.tools.code.paths import DIRECTORY_FLAGS, Jail, Target

# Rules past this much of a `.gitignore` are not read (one of that size is not a real one).
GITIGNORE_MAX_BYTES = 1024 * 1024


def glob_regex(pattern: str) -> re.Pattern[str]:
    """The compiled, fully anchored regex for a glob; ValueError if the glob is malformed."""
    return re.compile(f"(?s:{_translate(pattern)})\\Z")


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if pattern.startswith("**", i) and (i == 0 or pattern[i - 1] == "/") and (i + 2 == n or pattern[i + 2] == "/"):
            if i + 2 == n:
                out.append(".*")  # a trailing `**`: everything below
                i += 2
            else:
                out.append("(?:.*/)?")  # `**/`: zero or more whole directories
                i += 3
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        elif char == "[":
            negate = pattern.startswith(("!", "^"), i + 1)
            start = i + 2 if negate else i + 1
            end = pattern.find("]", start + 1)  # a `]` first in the class is a member
            if end < 0:
                raise ValueError(f"unclosed [ in {pattern}")
            members = "".join(c if c == "-" else re.escape(c) for c in pattern[start:end])
            out.append(f"[{'^' if negate else ''}{members}]")
            i = end
        elif char == "{":
            end = pattern.find("}", i)
            if end < 0:
                raise ValueError(f"unclosed {{ in {pattern}")
            choices = pattern[i + 1 : end].split(",")
            out.append("(?:" + "|".join(_translate(choice) for choice in choices) + ")")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class _Rule:
    regex: re.Pattern[str]
    negated: bool
    directories_only: bool


class GitIgnore:
    """The rules of one `.gitignore`; the last rule matching a path decides, as in git."""

    def __init__(self, text: str = ""):
        self._rules: list[_Rule] = []
        for raw in text.splitlines():
            line = raw.rstrip()
            if raw.endswith("\\ "):  # an escaped trailing space is kept
                line += " "
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            line = line[1:] if negated else line
            if line.startswith(("\\#", "\\!")):
                line = line[1:]
            directories_only = line.endswith("/")
            line = line.rstrip("/")
            # A slash before the end anchors the pattern to the root; without one it matches
            # the name at any depth.
            if "/" in line:
                line = line.lstrip("/")
            else:
                line = "**/" + line
            try:
                self._rules.append(_Rule(glob_regex(line), negated, directories_only))
            except (ValueError, re.error):
                continue  # git ignores a line it cannot parse, and so do we

    @classmethod
    def of_root(cls, jail: Jail) -> GitIgnore:
        """The root's `.gitignore`, read through the jail: a FIFO there, or a link out of the
        project, counts as no `.gitignore` rather than hanging or leaking every walk."""
        try:
            data, _ = jail.read(jail.locate(".gitignore"), GITIGNORE_MAX_BYTES)
        except (OSError, ToolError):
            return cls()
        return cls(data.decode(errors="replace"))

    def ignores(self, rel: str, is_dir: bool) -> bool:
        """Whether the root-relative path `rel` (with `/` separators) is ignored."""
        for rule in reversed(self._rules):
            if rule.directories_only and not is_dir:
                continue
            if rule.regex.match(rel):
                return not rule.negated
        return False


@dataclass(frozen=True)
class Found:
    """One file or link a walk found. `dir_fd` is its directory, open only while the walk
    stands at this entry: it is what the file is opened relative to, never its whole name."""

    entry: os.DirEntry[str]  # from a scan of `dir_fd`: its type needs no system call
    rel: str  # root-relative, with `/` separators
    dir_fd: int

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def is_link(self) -> bool:
        return self.entry.is_symlink()

    def stat(self) -> os.stat_result:
        """The entry's own stat (a link's, not its target's)."""
        return self.entry.stat(follow_symlinks=False)


def _visible(ignore: GitIgnore, dir_fd: int, rel_dir: str) -> list[tuple[os.DirEntry[str], str, bool]]:
    """The entries of one open directory in name order, as (entry, root-relative path, is a
    directory), without `.git` and what `.gitignore` ignores."""
    with os.scandir(dir_fd) as scan:
        entries = sorted(scan, key=lambda entry: entry.name)
    visible = []
    for entry in entries:
        rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if entry.name != ".git" and not ignore.ignores(rel, is_dir):
            visible.append((entry, rel, is_dir))
    return visible


def walk_files(jail: Jail, base: Target) -> Iterator[Found]:
    """Every regular file and link under `base` (a directory inside the root), depth first in
    name order. FIFOs, sockets and devices are not yielded.

    The walk goes by directory descriptors and never follows a link, so a link to `/` or to the
    home directory is one entry, not a way out, and a cycle of links is no cycle. `.git` and the
    directories `.gitignore` ignores are not entered, but `base` itself always is: a search the
    model points into an ignored directory on purpose is honoured. Unreadable directories, and
    one swapped for a link while the walk runs, are skipped quietly.
    """
    ignore = GitIgnore.of_root(jail)

    def walk(dir_fd: int, rel_dir: str) -> Iterator[Found]:
        try:
            visible = _visible(ignore, dir_fd, rel_dir)
        except OSError:
            return
        for entry, rel, is_dir in visible:
            if is_dir:
                try:
                    child = os.open(entry.name, DIRECTORY_FLAGS, dir_fd=dir_fd)
                except OSError:
                    continue
                try:
                    yield from walk(child, rel)
                finally:
                    os.close(child)
            elif entry.is_symlink() or entry.is_file(follow_symlinks=False):
                yield Found(entry, rel, dir_fd)

    try:
        base_fd = jail.open_directory(base)
    except OSError:
        return
    try:
        yield from walk(base_fd, _relative(base))
    finally:
        os.close(base_fd)


def listing(jail: Jail, directory: Target, limit: int) -> tuple[list[tuple[str, os.stat_result | None]], int]:
    """The first `limit` entries of one directory level as (name, its own stat, None if it
    vanished), filtered like the walk, and how many there are in all; OSError if the directory
    cannot be opened."""
    dir_fd = jail.open_directory(directory)
    try:
        visible = _visible(GitIgnore.of_root(jail), dir_fd, _relative(directory))
        return [(entry.name, _own_stat(entry)) for entry, _, _ in visible[:limit]], len(visible)
    finally:
        os.close(dir_fd)


def _own_stat(entry: os.DirEntry[str]) -> os.stat_result | None:
    try:
        return entry.stat(follow_symlinks=False)
    except OSError:
        return None


def _relative(target: Target) -> str:
    """A target's root-relative path with `/` separators, or "" for the root itself."""
    return "" if target.shown == "." else target.shown.replace(os.sep, "/")
