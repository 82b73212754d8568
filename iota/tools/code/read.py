"""The four readers of the `code` toolset: `glob`, `grep`, `list_dir` and `read_file`.

They change nothing but the read ledger, so they may run side by side (`parallel = True`).
Every answer fits the 64 KiB output cap and says, in a footer, when it was cut and how to see
the rest.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from typing import Any

from iota.tools.base import ToolResult
from iota.errors import ToolError
from iota.tools.code.shared import (
    FOOTER_ROOM,
    MAX_FILE_BYTES,
    MAX_OUTPUT,
    CodeTool,
    byte_count,
    clip_utf8,
    int_arg,
    join_within_cap,
    looks_binary,
    numbered,
    split_lines,
    text_arg,
)
from iota.tools.code.paths import Target, open_failure, open_regular_at, read_prefix
from iota.tools.code.walk import Found, glob_regex, listing, walk_files

GLOB_RESULTS = 200  # glob shows this many of its newest matches
GLOB_CANDIDATES = 10_000  # and stops collecting matches past this many
GREP_MATCHES = 100
GREP_MAX_FILE_BYTES = 10 * 1024 * 1024
GREP_LINE_BYTES = 500
GREP_MAX_CONTEXT = 10
DIR_ENTRIES = 500

_SEARCH_BASE = {
    "type": "string",
    "description": "Directory to search, relative to the project root (default: the root).",
}
_FILE_PATH = {"type": "string", "description": "File path, relative to the project root."}


def search_base(tool: CodeTool, args: dict[str, Any]) -> Target:
    """The directory a glob, grep or list_dir call works in: the root unless `path` names another.

    Resolved like every path, so a link to `/` or to the home directory is refused, not searched."""
    raw = text_arg(args, "path")
    base = tool.code.locate(raw if raw.strip() else ".")
    try:
        os.close(tool.code.open_directory(base))
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ENOTDIR):
            raise ToolError(f"not a directory: {raw}") from None
        raise ToolError(f"cannot list {base.shown}: {error.strerror}") from None
    return base


class Reader(CodeTool):
    parallel = True
    read_only = True


class Glob(Reader):
    name = "glob"
    description = (
        "Find files by name pattern under the project root. Patterns match root-relative paths and support "
        '* ? [abc] {a,b} and ** (a pattern without "/" matches at any depth, e.g. "*.py"). Results are '
        "newest first. .git and paths ignored by the root .gitignore are left out."
    )
    parameters = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": 'Glob pattern, e.g. "**/*.py" or "src/*.py".'},
            "path": _SEARCH_BASE,
        },
        "required": ["pattern"],
    }

    def target(self, args: dict[str, Any]) -> str:
        return text_arg(args, "pattern")

    def call(self, args: dict[str, Any]) -> ToolResult:
        raw = text_arg(args, "pattern").strip()
        if not raw:
            raise ToolError("missing required argument: pattern")
        pattern = raw if "/" in raw else f"**/{raw}"
        try:
            regex = glob_regex(pattern)
        except (ValueError, re.error):
            raise ToolError(f"invalid glob pattern: {pattern}") from None
        base = search_base(self, args)

        hits: list[tuple[int, str]] = []
        for found in walk_files(self.code, base):
            if regex.match(found.rel):
                try:
                    mtime = found.stat().st_mtime_ns
                except OSError:
                    mtime = 0
                hits.append((mtime, found.rel))
                if len(hits) >= GLOB_CANDIDATES:
                    break
        if not hits:
            return ToolResult(f"no files match {pattern}")
        # A stable sort, so files of equal age keep the walk's name order.
        hits.sort(key=lambda hit: hit[0], reverse=True)
        text, shown = join_within_cap([rel for _, rel in hits[:GLOB_RESULTS]])
        if shown < len(hits):
            text += f"\n[showing the {shown} newest of {len(hits)} matches; narrow the pattern to see the rest]"
        return ToolResult(text)


class Grep(Reader):
    name = "grep"
    description = (
        "Search file contents under the project root with a regular expression (Python re syntax), line by "
        'line. Output lines are "path:line: text"; context lines use "-" instead of ":". Binary files, files '
        "over 10 MB, symlinks, .git and paths ignored by the root .gitignore are skipped. Stops after 100 "
        "matches."
    )
    parameters = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regular expression to search for (Python re syntax)."},
            "path": _SEARCH_BASE,
            "include": {
                "type": "string",
                "description": 'Only search files matching this glob, e.g. "*.py" (the file name) or "src/**" '
                "(the root-relative path).",
            },
            "context": {"type": "integer", "description": "Lines of context around each match (0-10, default 0)."},
        },
        "required": ["pattern"],
    }

    def target(self, args: dict[str, Any]) -> str:
        return text_arg(args, "pattern")

    def call(self, args: dict[str, Any]) -> ToolResult:
        # Not stripped: a leading space is part of the expression.
        pattern = text_arg(args, "pattern")
        if not pattern:
            raise ToolError("missing required argument: pattern")
        try:
            regex = re.compile(pattern)
        except re.error as error:
            raise ToolError(f"invalid regular expression: {error}") from None
        base = search_base(self, args)
        include = text_arg(args, "include").strip()
        try:
            include_regex = glob_regex(include) if include else None
        except (ValueError, re.error):
            raise ToolError(f"invalid include pattern: {include}") from None
        context = min(max(int_arg(args, "context"), 0), GREP_MAX_CONTEXT)

        rows: list[str] = []
        used = 0
        matches = 0
        stopped = False
        for found in walk_files(self.code, base):
            rel = found.rel
            if include_regex and not include_regex.match(rel if "/" in include else found.name):
                continue
            lines = _searchable_lines(found)
            if lines is None:
                continue
            hits = []
            for index, line in enumerate(lines):
                if regex.search(line):
                    hits.append(index)
                    if matches + len(hits) >= GREP_MATCHES:
                        break
            if not hits:
                continue
            matches += len(hits)
            for row in _grep_rows(rel, lines, hits, context):
                used += len(row.encode()) + 1
                if used > MAX_OUTPUT - FOOTER_ROOM:
                    stopped = True
                    break
                rows.append(row)
            if stopped or matches >= GREP_MATCHES:
                stopped = True
                break

        if not matches:
            return ToolResult(f"no matches for {pattern}")
        text = "\n".join(rows)
        if stopped:
            text += f"\n[stopped after {matches} matches; refine the pattern or use include to narrow the search]"
        return ToolResult(text)


def _searchable_lines(found: Found) -> list[str] | None:
    """A file's lines for grep, or None for one it skips: a link (grep reads no file through
    one, like ripgrep), too big, binary or unreadable."""
    if found.is_link:
        return None
    try:
        if found.stat().st_size > GREP_MAX_FILE_BYTES:
            return None
        fd = open_regular_at(found.dir_fd, found.name, os.O_RDONLY, seen_regular=True)
        data = read_prefix(fd, GREP_MAX_FILE_BYTES)
    except OSError:
        return None
    if looks_binary(data):
        return None
    return split_lines(data.decode(errors="replace"))


def _grep_rows(rel: str, lines: list[str], hits: list[int], context: int) -> list[str]:
    """One file's match rows and context rows, in line order, each line shown once."""
    shown: set[int] = set()
    for hit in hits:
        shown.update(range(max(hit - context, 0), min(hit + context + 1, len(lines))))
    matched = set(hits)
    rows = []
    for index in sorted(shown):
        line = lines[index]
        if len(line.encode()) > GREP_LINE_BYTES:
            line = clip_utf8(line, GREP_LINE_BYTES) + "…"
        rows.append(f"{rel}:{index + 1}{':' if index in matched else '-'} {line}")
    return rows


class ListDir(Reader):
    name = "list_dir"
    description = (
        'List one directory level under the project root: directories end with "/", files show their size. '
        "Defaults to the root itself. .git and paths ignored by the root .gitignore are left out."
    )
    parameters = {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "Directory to list, relative to the project root (default: the root).",
            },
        },
    }

    def call(self, args: dict[str, Any]) -> ToolResult:
        directory = search_base(self, args)
        try:
            entries, total = listing(self.code, directory, DIR_ENTRIES)
        except OSError as error:
            raise ToolError(f"cannot list {directory.shown}: {error.strerror}") from None
        if not entries:
            return ToolResult("[directory is empty]")
        rows = [_entry_row(name, seen) for name, seen in entries]
        text, shown = join_within_cap(rows)
        if shown < total:
            text += f"\n[showing {shown} of {total} entries]"
        return ToolResult(text)


def _entry_row(name: str, seen: os.stat_result | None) -> str:
    """`src/`, `a.py (1.2 KB)`, or `pipe (fifo)` for what is neither file nor directory.

    A link shows its own size, and a link to a directory is not listed as one: links are not
    followed."""
    if seen is None:
        return name  # gone since the scan
    mode = seen.st_mode
    if stat.S_ISDIR(mode):
        return f"{name}/"
    if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
        return f"{name} ({byte_count(seen.st_size)})"
    if stat.S_ISFIFO(mode):
        return f"{name} (fifo)"
    if stat.S_ISSOCK(mode):
        return f"{name} (socket)"
    return f"{name} (device)"


class ReadFile(Reader):
    name = "read_file"
    description = (
        "Read a text file inside the project root. Lines come numbered; use offset (1-based first line) and "
        "limit (line count) to read a window of a long file. Reading a file is required before editing it."
    )
    parameters = {
        "type": "object",
        "properties": {
            "path": _FILE_PATH,
            "offset": {"type": "integer", "description": "1-based line number to start from (default 1)."},
            "limit": {"type": "integer", "description": "Most lines to return (default: the rest of the file)."},
        },
        "required": ["path"],
    }

    def call(self, args: dict[str, Any]) -> ToolResult:
        target = self.code.locate(text_arg(args, "path"))
        shown = target.shown
        try:
            data, seen = self.code.read(target, MAX_FILE_BYTES)
        except OSError as error:
            raise open_failure("read", shown, error) from None
        size = seen.st_size
        if looks_binary(data):
            raise ToolError(f"{shown} looks like a binary file ({byte_count(size)}); read_file only serves text")
        # Stamped before the window is checked: an offset past the end still showed the model
        # how long the file is, which is a read.
        self.code.note_read(target, seen)
        if not data:
            return ToolResult("[file is empty]")
        text = _numbered_window(split_lines(data.decode(errors="replace")), args, shown)
        if size > MAX_FILE_BYTES:
            text += f"\n[file is {byte_count(size)}; only the first {MAX_FILE_BYTES >> 20} MB was read]"
        return ToolResult(text)


def _numbered_window(lines: list[str], args: dict[str, Any], shown: str) -> str:
    total = len(lines)
    start = max(int_arg(args, "offset"), 1)
    if start > total:
        raise ToolError(f"offset {start} is past the end of {shown} ({total} lines)")
    limit = int_arg(args, "limit")
    end = min(start - 1 + limit, total) if limit > 0 else total

    rows: list[str] = []
    used = 0
    for n in range(start, end + 1):
        row = numbered(n, lines[n - 1])
        size = len(row.encode()) + 1
        if size > MAX_OUTPUT:
            # One line longer than the whole cap is cut to fit, ellipsis and newline included;
            # refusing it would leave a window the model could never move past.
            row = clip_utf8(row, MAX_OUTPUT - 4) + "…"
            size = len(row.encode()) + 1
        if used + size > MAX_OUTPUT:
            break
        rows.append(row)
        used += size
    last = start - 1 + len(rows)
    text = "\n".join(rows)
    if last < end:
        text += (
            f"\n[output truncated — showing lines {start}-{last} of {total}; "
            f"call read_file with offset={last + 1} to continue]"
        )
    elif start > 1 or end < total:
        text += f"\n[showing lines {start}-{end} of {total}]"
    return text
