"""The text of memory files, line by line: how a refusal quotes what the model sent, how sizes
are measured and shown, and what a line of a memory file is (a `## ` heading, an entry, a
tagged entry). Pure functions; iota.memory.document builds the document and its edits on them.
"""

from __future__ import annotations

import unicodedata

from iota.errors import ToolError


class MemoryRefusal(ToolError):
    """An edit iota will not make; the message is what the model reads, and nothing was written."""


# -- quoting --------------------------------------------------------------------------------------

_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
               "\\": "\\\\", '"': '\\"'}


def go_quote(text: str) -> str:
    """`text` in double quotes the way Go's `%q` writes it: backslash escapes for quotes, backslashes
    and control characters, `\\uXXXX` for anything else that does not print. The refusals quote what
    the model sent this way, so an invisible character in it shows up instead of hiding."""
    out = ['"']
    for char in text:
        if char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    out.append('"')
    return "".join(out)


# -- sizes ----------------------------------------------------------------------------------------

def byte_length(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def kib(size: int) -> str:
    """`size` bytes in KiB with one decimal, rounded: 6200 → `6.1`."""
    tenths = (size * 10 + 512) // 1024
    return f"{tenths // 10}.{tenths % 10}"


# -- lines ----------------------------------------------------------------------------------------

def split_lines(text: str) -> list[str]:
    """The file's lines without their endings (`\\n` or `\\r\\n`); a final newline ends the last line
    rather than starting an empty one."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def join_lines(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def heading(line: str) -> str | None:
    """The name of a `## <name>` line, else None (`# title` and `### sub` are not sections)."""
    return line[3:].strip() if line.startswith("## ") else None


def is_entry(line: str) -> bool:
    return line.startswith("- ")


def is_tagged(line: str) -> bool:
    """An entry the tool wrote, so one the model may change."""
    return line.startswith(("- [user]", "- [inferred]"))


def breaks_line(char: str) -> bool:
    """A character that has no place inside one line of the file: a control character other than a
    tab (a lone `\\r`, an escape), or a Unicode line or paragraph separator."""
    return (char != "\t" and unicodedata.category(char) == "Cc") or char in "\u2028\u2029"
