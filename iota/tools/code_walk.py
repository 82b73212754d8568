"""Walking the project tree the way git sees it, and the glob patterns the walk is filtered with.

One translator turns a glob into a regular expression over `/`-separated paths: `*` and `?`
stay inside one path component, `**` as a whole component crosses any number of them,
`[...]` is a character class and `{a,b}` an alternation. The `glob` tool, grep's `include`
filter and the root `.gitignore` all use it, so a pattern means the same thing everywhere.

Only the root `.gitignore` is honoured (nested ones and git's global excludes are not), and it
is read again on every call so an edit to it applies at once. `.git` is skipped at any depth.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass


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
    def of_root(cls, root: str) -> GitIgnore:
        try:
            with open(os.path.join(root, ".gitignore"), encoding="utf-8", errors="replace") as file:
                return cls(file.read())
        except OSError:
            return cls()

    def ignores(self, rel: str, is_dir: bool) -> bool:
        """Whether the root-relative path `rel` (with `/` separators) is ignored."""
        for rule in reversed(self._rules):
            if rule.directories_only and not is_dir:
                continue
            if rule.regex.match(rel):
                return not rule.negated
        return False


def relative_to(root: str, path: str) -> str:
    """`path` relative to `root` with `/` separators, or "" for the root itself."""
    rel = os.path.relpath(path, root)
    return "" if rel == "." else rel.replace(os.sep, "/")


def _visible(ignore: GitIgnore, directory: str, rel_dir: str) -> list[tuple[os.DirEntry[str], str, bool]]:
    """The entries of one directory in name order, as (entry, root-relative path, is a directory),
    without `.git` and what `.gitignore` ignores."""
    with os.scandir(directory) as scan:
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


def walk_files(root: str, base: str) -> Iterator[tuple[os.DirEntry[str], str]]:
    """Every file under `base` (a directory inside `root`), depth first in name order, as
    (entry, root-relative path).

    `.git` and the directories `.gitignore` ignores are not entered, but `base` itself always is:
    a search the model points into an ignored directory on purpose is honoured. Links are not
    followed; a link is yielded like a file. Unreadable directories are skipped quietly.
    """
    ignore = GitIgnore.of_root(root)

    def walk(directory: str, rel_dir: str) -> Iterator[tuple[os.DirEntry[str], str]]:
        try:
            visible = _visible(ignore, directory, rel_dir)
        except OSError:
            return
        for entry, rel, is_dir in visible:
            if is_dir:
                yield from walk(entry.path, rel)
            else:
                yield entry, rel

    return walk(base, relative_to(root, base))


def listing(root: str, directory: str) -> list[tuple[os.DirEntry[str], bool]]:
    """One directory level as (entry, is a directory), filtered like the walk."""
    visible = _visible(GitIgnore.of_root(root), directory, relative_to(root, directory))
    return [(entry, is_dir) for entry, _, is_dir in visible]
