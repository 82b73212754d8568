"""What the six `code` tools share: the project root with its lexical jail, the read-before-write
ledger, the caps, and the small text helpers they all format with.

One `CodeSet` is made per toolset instance, so the ledger is shared by that set's readers and
writers and by nothing else: a file read through another chat's tools does not count here.

The tools do their filesystem work in a worker thread (`CodeTool.run`) so a grep over a large
tree or a 20 MB read never stalls the chat loop. Readers may run side by side, so the ledger
is guarded by a lock.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import trio

from iota.tools.base import Tool, ToolError, ToolResult

# Every cap below is the Rust iota's, so the model sees the same limits whichever iota it runs in.
MAX_OUTPUT = 65536  # bytes of tool output per call
MAX_FILE_BYTES = 20 * 1024 * 1024  # read_file serves at most this much; edit_file refuses bigger files
BINARY_SNIFF = 8000  # a NUL in this many leading bytes makes a file binary
# A listing cut short by the output cap keeps this much room for its footer.
FOOTER_ROOM = 256


class CodeSet:
    """The root, the approval policy and the read ledger of one `code` toolset."""

    def __init__(self, root: os.PathLike[str] | str, *, auto_write: bool):
        # abspath cleans `..` and `.` lexically; symlinks are deliberately left unresolved so the
        # jail judges the path the model wrote, and a root reached through a link stays that root.
        self.root = os.path.abspath(root)
        self.auto_write = auto_write
        self._reads: dict[str, int] = {}
        self._lock = threading.Lock()

    def resolve(self, arg: str) -> str:
        """The absolute, cleaned path for a model's `path` argument, or a refusal if it leaves the root.

        Lexical only: the target need not exist (write_file creates it) and links are not followed.
        """
        cleaned = arg.strip()
        if not cleaned:
            raise ToolError("missing required argument: path")
        path = os.path.normpath(os.path.join(self.root, cleaned))
        if os.path.commonpath([self.root, path]) != self.root:
            raise ToolError(f"path is outside the project root ({self.root}): {arg}")
        return path

    def shown(self, path: str) -> str:
        """How a path inside the root is named in results: relative to the root, `.` for the root."""
        return os.path.relpath(path, self.root)

    def note_read(self, path: str) -> None:
        """Record the mtime of a file read_file served (or a writer just wrote)."""
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            return
        with self._lock:
            self._reads[path] = mtime

    def require_fresh_read(self, path: str) -> None:
        """Refuse to modify a file the model has not read, or that changed since it read it.

        Writing blind is how an agent clobbers a person's edits; comparing the mtime catches both
        a file never looked at and one that an editor or a command changed after the read.
        """
        with self._lock:
            stamp = self._reads.get(path)
        shown = self.shown(path)
        if stamp is None:
            raise ToolError(
                f"{shown} has not been read in this session — read it with read_file before modifying it"
            )
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError as error:
            raise ToolError(f"cannot access {shown}: {error.strerror}") from None
        if mtime != stamp:
            raise ToolError(f"{shown} changed on disk after it was read — read it again before modifying it")


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
        """The file or directory the call is about, as the results name it."""
        try:
            return self.code.shown(self.code.resolve(text_arg(args, "path") or "."))
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


def read_prefix(path: str, limit: int) -> tuple[bytes, int]:
    """The first `limit` bytes of a file and its whole size."""
    with open(path, "rb") as file:
        return file.read(limit), os.fstat(file.fileno()).st_size


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
