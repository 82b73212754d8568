"""The two writers of the `code` toolset: `edit_file` and `write_file`.

Both ask the person first unless the set has `auto_write`, naming the real target (links
resolved) and showing the change as a unified diff (`approval_detail`). Both refuse protected
paths, refuse to touch an existing file the model has not read (or that changed since), and run
one at a time. The model reads a short result; the person sees the diff.

The checks and the write go through one descriptor: the file's type, size and mtime are read
from the file that is then written, never from a name that could be swapped in between (see
`paths` for how it is opened).
"""

from __future__ import annotations

import difflib
import os
from dataclasses import replace
from typing import Any, BinaryIO

from iota.tools.base import ApprovalRequest, ToolResult
from iota.errors import ToolError
from iota.tools.code.paths import Target, open_failure
from iota.tools.code.shared import (
    MAX_FILE_BYTES,
    CodeTool,
    byte_count,
    flag_arg,
    join_within_cap,
    numbered,
    split_lines,
    text_arg,
    visible,
)

# How many lines either side of the first change edit_file shows the model.
SNIPPET_LINES = 3


class Writer(CodeTool):
    parallel = False

    def approval(self, args: dict[str, Any]) -> str | None:
        """`edit_file src/a.py`, naming the real target, unless the set writes without asking.

        A path outside the root, or a protected one, is not asked about: the call is refused
        without touching anything.
        """
        if self.code.auto_write:
            return None
        try:
            target = self.writable_target(args)
        except ToolError:
            return None
        return f"{self.name} {visible(target.shown)}"

    def approval_detail(self, args: dict[str, Any]) -> str:
        """The diff a yes would write, computed on the real target as it is now; or, when the
        call is going to fail, why, so the person is not left to guess."""
        try:
            target = self.writable_target(args)
        except ToolError:
            return ""  # refused without asking
        try:
            return self.planned_diff(target, args)
        except ToolError as error:
            return f"[nothing to show: {error}]"

    def preflight(self, args: dict[str, Any]) -> None:
        """Refused before the question: a path outside the root or protected, and what the
        writer's own checks refuse (`check_planned`)."""
        if self.approval(args) is not None:
            self.check_planned(self.writable_target(args), args)

    def check_planned(self, target: Target, args: dict[str, Any]) -> None:
        raise NotImplementedError

    def approval_request(self, args: dict[str, Any]) -> ApprovalRequest | None:
        request = super().approval_request(args)
        return replace(request, edits_files=True) if request is not None else None

    def writable_target(self, args: dict[str, Any]) -> Target:
        target = self.code.locate(text_arg(args, "path"))
        self.code.refuse_protected(target)
        return target

    def planned_diff(self, target: Target, args: dict[str, Any]) -> str:
        raise NotImplementedError


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
        target = self.writable_target(args)
        shown = target.shown
        _edit_strings(args)  # a malformed call is refused before the file is opened
        try:
            fd = self.code.open_file(target, os.O_RDWR)
        except OSError as error:
            raise open_failure("edit", shown, error) from None
        with open(fd, "r+b") as file:
            self.code.require_fresh_read(target, os.fstat(fd))
            data = _whole(file, shown)
            updated, replaced, first_line = _edited(data, args, shown)
            _overwrite(file, updated, shown)
            self.code.note_read(target, os.fstat(fd))

        after = updated.decode(errors="replace")
        return ToolResult(
            f"{replaced} replacement(s) in {shown}\n\n{_snippet(after, first_line)}",
            display=unified_diff(shown, data.decode(errors="replace"), after),
        )

    def check_planned(self, target: Target, args: dict[str, Any]) -> None:
        """The file exists, was read (and not changed since), is not too large, and the edit applies."""
        _edit_strings(args)
        data, seen = self._read_current(target)
        self.code.require_fresh_read(target, seen)
        _edited(data, args, target.shown)

    def planned_diff(self, target: Target, args: dict[str, Any]) -> str:
        data, _ = self._read_current(target)
        updated, _, _ = _edited(data, args, target.shown)
        return unified_diff(target.shown, data.decode(errors="replace"), updated.decode(errors="replace")) or ""

    def _read_current(self, target: Target) -> tuple[bytes, os.stat_result]:
        try:
            data, seen = self.code.read(target, MAX_FILE_BYTES)
        except OSError as error:
            raise open_failure("edit", target.shown, error) from None
        _refuse_too_large(seen.st_size, target.shown)
        return data, seen


def _edit_strings(args: dict[str, Any]) -> tuple[str, str]:
    old_string = text_arg(args, "old_string")
    new_string = text_arg(args, "new_string")
    if not old_string:
        raise ToolError("old_string must not be empty (use write_file to create or replace a whole file)")
    if old_string == new_string:
        raise ToolError("old_string and new_string are identical")
    return old_string, new_string


def _edited(data: bytes, args: dict[str, Any], shown: str) -> tuple[bytes, int, int]:
    """The file's bytes after the edit, how many replacements it made, and the line of the first.

    The search and the splice work on bytes. Decoding the file and writing the decoded text back
    would turn every byte that is not UTF-8 (a Latin-1 é, say) into U+FFFD across the whole
    file, not just where the edit is. The strings the model sent are valid UTF-8, so their
    encodings are exactly the bytes to look for.
    """
    old_string, new_string = _edit_strings(args)
    needle = old_string.encode()
    count = data.count(needle)
    if count == 0:
        raise ToolError(
            f"old_string not found in {shown} — it must match the file content exactly, whitespace "
            "included; read the file again if unsure"
        )
    if count > 1 and not flag_arg(args, "replace_all"):
        raise ToolError(
            f"old_string appears {count} times in {shown}; extend it with surrounding context to make it "
            "unique, or set replace_all"
        )
    replaced = count if flag_arg(args, "replace_all") else 1
    first_line = data.count(b"\n", 0, data.find(needle)) + 1
    return data.replace(needle, new_string.encode(), replaced), replaced, first_line


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
        target = self.writable_target(args)
        shown = target.shown
        content = _content(args)
        try:
            fd = self.code.open_file(target, os.O_RDWR)
            created = False
        except FileNotFoundError:
            fd = self._create(target)
            created = True
        except OSError as error:
            raise open_failure("write", shown, error) from None

        with open(fd, "r+b") as file:
            before: bytes | None = b""
            if not created:
                seen = os.fstat(fd)
                self.code.require_fresh_read(target, seen)
                # A diff from half a file would lie: one too big to read whole gets none.
                before = file.read() if seen.st_size <= MAX_FILE_BYTES else None
            data = content.encode()
            _overwrite(file, data, shown)
            self.code.note_read(target, os.fstat(fd))
        return ToolResult(
            f"wrote {byte_count(len(data))} to {shown} ({'created' if created else 'overwritten'})",
            display=None if before is None else unified_diff(shown, before.decode(errors="replace"), content),
        )

    def _create(self, target: Target) -> int:
        """A new, empty file at `target` (mode 0644 less the umask), its parents created first."""
        try:
            self.code.make_parents(target)
        except OSError as error:
            raise ToolError(f"cannot create parent directory for {target.shown}: {error.strerror}") from None
        try:
            return self.code.open_file(target, os.O_RDWR | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            raise ToolError(
                f"{target.shown} appeared on disk while it was being written — read it, then write again"
            ) from None
        except OSError as error:
            raise open_failure("write", target.shown, error) from None

    def check_planned(self, target: Target, args: dict[str, Any]) -> None:
        """The content is given; a file already there was read (and not changed since)."""
        _content(args)
        try:
            _, seen = self.code.read(target, 0)
        except FileNotFoundError:
            return
        except OSError as error:
            raise open_failure("write", target.shown, error) from None
        self.code.require_fresh_read(target, seen)

    def planned_diff(self, target: Target, args: dict[str, Any]) -> str:
        content = _content(args)
        try:
            data, seen = self.code.read(target, MAX_FILE_BYTES)
        except FileNotFoundError:
            return unified_diff(target.shown, "", content) or "[a new, empty file]"
        except OSError as error:
            raise open_failure("write", target.shown, error) from None
        if seen.st_size > MAX_FILE_BYTES:
            whole = unified_diff(target.shown, "", content) or ""
            return f"[{target.shown} is over {MAX_FILE_BYTES >> 20} MB: its whole content is replaced by]\n{whole}"
        return unified_diff(target.shown, data.decode(errors="replace"), content) or "[no change]"


def _content(args: dict[str, Any]) -> str:
    content = args.get("content")
    if not isinstance(content, str):  # an empty string is a valid file; a missing one is not
        raise ToolError("missing required argument: content")
    return content


def _refuse_too_large(size: int, shown: str) -> None:
    if size > MAX_FILE_BYTES:
        raise ToolError(f"{shown} is too large to edit ({byte_count(size)})")


def _whole(file: BinaryIO, shown: str) -> bytes:
    """All of an open file edit_file may change, or a refusal past 20 MB."""
    _refuse_too_large(os.fstat(file.fileno()).st_size, shown)
    try:
        return file.read()
    except OSError as error:
        raise ToolError(f"cannot read {shown}: {error.strerror}") from None


def _overwrite(file: BinaryIO, data: bytes, shown: str) -> None:
    """Replace an open file's content in place: it keeps its mode, owner and inode, so links to
    it and its permissions survive."""
    try:
        file.seek(0)
        file.truncate()
        file.write(data)
        file.flush()
    except OSError as error:
        raise ToolError(f"cannot write {shown}: {error.strerror}") from None


def _snippet(text: str, line: int) -> str:
    """Numbered lines around `line`, so the model sees its change in place."""
    lines = split_lines(text)
    first = max(line - SNIPPET_LINES, 1)
    last = min(line + SNIPPET_LINES, len(lines))
    return "\n".join(numbered(n, lines[n - 1]) for n in range(first, last + 1))


def unified_diff(shown: str, before: str, after: str, *, context: int = 3) -> str | None:
    """The change as a unified diff for the person, with `context` unchanged lines around each
    change, or None when nothing changed.

    Characters that do not show (controls, bidi and zero-width marks) are written as escapes,
    so no line of the change can hide itself or another. A diff past the output cap is cut, and
    the footer says how many lines were left out."""
    lines = [
        visible(line)
        for line in difflib.unified_diff(
            _diff_lines(before), _diff_lines(after), fromfile=f"a/{shown}", tofile=f"b/{shown}", lineterm="",
            n=context,
        )
    ]
    if not lines:
        return None
    text, kept = join_within_cap(lines)
    if kept < len(lines):
        text += f"\n[diff cut here: {len(lines) - kept} more lines not shown]"
    return text


def _diff_lines(text: str) -> list[str]:
    return split_lines(text) if text else []
