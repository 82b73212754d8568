"""What the six `code` tools share: the project root with its jail (`paths`), the
read-before-write ledger, the caps, and the small text helpers they all format with.

One `CodeSet` is made per toolset instance, so the ledger is shared by that set's readers and
writers and by nothing else: a file read through another chat's tools does not count here.

The tools do their filesystem work in a worker thread (`CodeTool.run`) so a grep over a large
tree or a 20 MB read never stalls the chat loop. Readers may run side by side, so the ledger
is guarded by a lock.
"""

from __future__ import annotations

import os
import re
import threading
import unicodedata
from typing import Any

import trio

from iota.tools.base import Tool, ToolResult
from iota.errors import ToolError
from iota.tools.code.paths import Jail, Target

# Every cap below is the Rust iota's, so the model sees the same limits whichever iota it runs in.
MAX_OUTPUT = 65536  # bytes of tool output per call
MAX_FILE_BYTES = 20 * 1024 * 1024  # read_file serves at most this much; edit_file refuses bigger files
BINARY_SNIFF = 8000  # a NUL in this many leading bytes makes a file binary
# A listing cut short by the output cap keeps this much room for its footer.
FOOTER_ROOM = 256


class CodeSet(Jail):
    """The jail, the approval policy and the read ledger of one `code` toolset."""

    def __init__(self, root: os.PathLike[str] | str, *, auto_write: bool):
        super().__init__(root)
        self.auto_write = auto_write
        self._reads: dict[str, int] = {}
        self._lock = threading.Lock()

    def note_read(self, target: Target, seen: os.stat_result) -> None:
        """Record the mtime of a file read_file served (or a writer just wrote), from the stat
        of the descriptor it was read or written through."""
        with self._lock:
            self._reads[target.path] = seen.st_mtime_ns

    def require_fresh_read(self, target: Target, current: os.stat_result) -> None:
        """Refuse to modify a file the model has not read, or that changed since it read it;
        `current` is the stat of the descriptor the write is about to go through.

        Writing blind is how an agent clobbers a person's edits; comparing the mtime catches both
        a file never looked at and one that an editor or a command changed after the read.
        """
        with self._lock:
            stamp = self._reads.get(target.path)
        if stamp is None:
            raise ToolError(
                f"{target.shown} has not been read in this session — read it with read_file before modifying it"
            )
        if current.st_mtime_ns != stamp:
            raise ToolError(
                f"{target.shown} changed on disk after it was read — read it again before modifying it"
            )


class CodeTool(Tool):
    """A code tool: its body is a plain function run in a worker thread."""

    def __init__(self, code: CodeSet):
        self.code = code

    async def run(self, args: dict[str, Any]) -> ToolResult:
        # A reader cancelled by Ctrl+C is abandoned: its thread finishes unseen and only stamps
        # the ledger. A writer is waited for, so a file is never left half-written behind a turn
        # that already reported it cancelled.
        return await trio.to_thread.run_sync(self.call, args, abandon_on_cancel=self.parallel)

    def call(self, args: dict[str, Any]) -> ToolResult:
        raise NotImplementedError

    def target(self, args: dict[str, Any]) -> str:
        """The file or directory the call is about, as the results name it: the real one."""
        try:
            return self.code.locate(text_arg(args, "path") or ".").shown
        except ToolError:
            return text_arg(args, "path")


# ---- arguments: models send odd types now and then, and a wrong type reads as "absent" ----


def text_arg(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    return value if isinstance(value, str) else ""


def int_arg(args: dict[str, Any], key: str) -> int:
    value = args.get(key)
    if isinstance(value, bool):
        return 0
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return 0
    return 0


def flag_arg(args: dict[str, Any], key: str) -> bool:
    value = args.get(key)
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


# ---- text ----


def byte_count(n: int) -> str:
    """`3.4 MB`, `1.2 KB` or `512 B`."""
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MB"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.1f} KB"
    return f"{n} B"


def looks_binary(data: bytes) -> bool:
    return b"\0" in data[:BINARY_SNIFF]


# Anything but a tab and printable ASCII is looked at; most text has little of it.
_UNUSUAL = re.compile(r"[^\t\x20-\x7e]")
# Controls, format characters (bidi overrides, zero-width and tag characters) and line and
# paragraph separators: what a terminal does not show as itself.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})


def visible(text: str) -> str:
    """`text` with the characters that would not show as themselves written as escapes
    (`\\x1b`, `\\u202e`), for what the person approves: an escape sequence or a bidi override
    in a diff line must not hide what the line says."""
    return _UNUSUAL.sub(_escape_hidden, text)


def _escape_hidden(match: re.Match[str]) -> str:
    char = match.group()
    if unicodedata.category(char) in _HIDDEN_CATEGORIES:
        return char.encode("unicode_escape").decode("ascii")
    return char


def split_lines(text: str) -> list[str]:
    """Lines without their endings (`\\r\\n` or `\\n`); a final newline does not start another line."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines


def numbered(n: int, line: str) -> str:
    return f"{n:>6}\t{line}"


def clip_utf8(text: str, limit: int) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, never inside a character."""
    encoded = text.encode()
    if len(encoded) <= limit:
        return text
    return encoded[:limit].decode(errors="ignore")


def join_within_cap(rows: list[str]) -> tuple[str, int]:
    """Rows joined by newlines while they fit the output cap (less room for a footer),
    and how many made it."""
    budget = MAX_OUTPUT - FOOTER_ROOM
    used = 0
    for count, row in enumerate(rows):
        used += len(row.encode()) + 1
        if used > budget:
            return "\n".join(rows[:count]), count
    return "\n".join(rows), len(rows)
