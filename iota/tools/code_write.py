"""The two writers of the `code` toolset: `edit_file` and `write_file`.

Both ask the person first unless the set has `auto_write`, both refuse to touch an existing file
the model has not read (or that changed since), and both run one at a time. The model reads a
short result; the person sees the change as a unified diff.
"""

from __future__ import annotations

import difflib
import os
import stat
from typing import Any

from iota.tools.base import ToolError, ToolResult
from iota.tools.code_set import (
    MAX_FILE_BYTES,
    CodeTool,
    byte_count,
    flag_arg,
    numbered,
    split_lines,
    text_arg,
)

# How many lines either side of the first change edit_file shows the model.
SNIPPET_LINES = 3


class Writer(CodeTool):
    parallel = False

    def approval(self, args: dict[str, Any]) -> str | None:
        """`edit_file src/a.py`, unless the set writes without asking.

        A path outside the root is not asked about: the call is refused without touching anything.
        """
        if self.code.auto_write:
            return None
        try:
            path = self.code.resolve(text_arg(args, "path"))
        except ToolError:
            return None
        return f"{self.name} {self.code.shown(path)}"


class EditFile(Writer):
    name = "edit_file"
    description = (
        "Replace an exact string in a file inside the project root. old_string must match the file content "
        "exactly, whitespace and indentation included, and must occur once unless replace_all is set; add "
        "surrounding lines to make it unique. The file must have been read with read_file first."
    )
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, relative to the project root."},
            "old_string": {"type": "string", "description": "The exact text to replace."},
            "new_string": {"type": "string", "description": "The text to put in its place."},
            "replace_all": {
                "type": "boolean",
                "description": "Replace every occurrence instead of requiring exactly one (default false).",
            },
        },
        "required": ["path", "old_string", "new_string"],
    }

    def call(self, args: dict[str, Any]) -> ToolResult:
        path = self.code.resolve(text_arg(args, "path"))
        shown = self.code.shown(path)
        old_string = text_arg(args, "old_string")
        new_string = text_arg(args, "new_string")
        replace_all = flag_arg(args, "replace_all")
        if not old_string:
            raise ToolError("old_string must not be empty (use write_file to create or replace a whole file)")
        if old_string == new_string:
            raise ToolError("old_string and new_string are identical")
        self.code.require_fresh_read(path)
        try:
            size = os.stat(path).st_size
            if size > MAX_FILE_BYTES:
                raise ToolError(f"{shown} is too large to edit ({byte_count(size)})")
            with open(path, "rb") as file:
                data = file.read()
        except OSError as error:
            raise ToolError(f"cannot read {shown}: {error.strerror}") from None

        # The search and the splice work on bytes. Decoding the file and writing the decoded text
        # back would turn every byte that is not UTF-8 (a Latin-1 é, say) into U+FFFD across the
        # whole file, not just where the edit is. The strings the model sent are valid UTF-8, so
        # their encodings are exactly the bytes to look for.
        needle = old_string.encode()
        count = data.count(needle)
        if count == 0:
            raise ToolError(
                f"old_string not found in {shown} — it must match the file content exactly, whitespace "
                "included; read the file again if unsure"
            )
        if count > 1 and not replace_all:
            raise ToolError(
                f"old_string appears {count} times in {shown}; extend it with surrounding context to make it "
                "unique, or set replace_all"
            )
        replaced = count if replace_all else 1
        updated = data.replace(needle, new_string.encode(), replaced)
        write_bytes(path, updated, shown)
        self.code.note_read(path)

        first_line = data.count(b"\n", 0, data.find(needle)) + 1
        before, after = data.decode(errors="replace"), updated.decode(errors="replace")
        return ToolResult(
            f"{replaced} replacement(s) in {shown}\n\n{_snippet(after, first_line)}",
            display=unified_diff(shown, before, after),
        )


class WriteFile(Writer):
    name = "write_file"
    description = (
        "Create a file inside the project root, or replace one whole (parent directories are created). "
        "Overwriting an existing file requires reading it with read_file first; prefer edit_file for changes "
        "inside an existing file."
    )
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, relative to the project root."},
            "content": {"type": "string", "description": "The complete content of the file."},
        },
        "required": ["path", "content"],
    }

    def call(self, args: dict[str, Any]) -> ToolResult:
        path = self.code.resolve(text_arg(args, "path"))
        content = args.get("content")
        if not isinstance(content, str):  # an empty string is a valid file; a missing one is not
            raise ToolError("missing required argument: content")
        shown = self.code.shown(path)

        # None when there is no old text to show a diff against: the file is new, or too big to
        # read whole (a diff from half a file would lie).
        before: str | None = ""
        try:
            mode = os.stat(path).st_mode
        except OSError:
            created = True  # nothing there (or nothing we can see): a new file needs no read
        else:
            created = False
            if stat.S_ISDIR(mode):
                raise ToolError(f"{shown} is a directory")
            if not stat.S_ISREG(mode):
                raise ToolError(f"{shown} is not a regular file")
            self.code.require_fresh_read(path)
            before = _old_text(path)

        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        except OSError as error:
            raise ToolError(f"cannot create parent directory for {shown}: {error.strerror}") from None
        data = content.encode()
        write_bytes(path, data, shown)
        self.code.note_read(path)
        return ToolResult(
            f"wrote {byte_count(len(data))} to {shown} ({'created' if created else 'overwritten'})",
            display=None if before is None else unified_diff(shown, before, content),
        )


def _old_text(path: str) -> str | None:
    try:
        if os.stat(path).st_size > MAX_FILE_BYTES:
            return None
        with open(path, "rb") as file:
            return file.read().decode(errors="replace")
    except OSError:
        return None


def write_bytes(path: str, data: bytes, shown: str) -> None:
    """Create or truncate and write. A new file gets mode 0644 (less the umask); an existing
    file keeps its mode, owner and inode, so links to it and its permissions survive."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        with open(fd, "wb") as file:
            file.write(data)
    except OSError as error:
        raise ToolError(f"cannot write {shown}: {error.strerror}") from None


def _snippet(text: str, line: int) -> str:
    """Numbered lines around `line`, so the model sees its change in place."""
    lines = split_lines(text)
    first = max(line - SNIPPET_LINES, 1)
    last = min(line + SNIPPET_LINES, len(lines))
    return "\n".join(numbered(n, lines[n - 1]) for n in range(first, last + 1))


def unified_diff(shown: str, before: str, after: str) -> str | None:
    """The change as a unified diff for the person, or None when nothing changed."""
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), fromfile=f"a/{shown}", tofile=f"b/{shown}", lineterm=""
    )
    return "\n".join(lines) or None
