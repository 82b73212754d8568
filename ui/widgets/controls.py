"""Text from the model or a tool, made safe to draw: every invisible control character escaped.

A command line, a file's content or a tool's output can carry characters that are not text to
a terminal: `\\r` returns to the start of the row, ESC opens a sequence (`ESC ] … BEL` is even
swallowed whole, with the words inside it, by urwid), bidirectional overrides reorder what
follows. Drawn raw, they could make `rm -rf ~` look like `echo safe` in the very question that
asks whether to run it. So whatever comes from outside iota goes through `escape_controls`
before it is drawn: each such character becomes its visible escape (`\\r`, `\\x1b`, `\\u202e`),
so the person sees every character there is. Line feeds and tabs stay, being layout that hides
nothing (urwid wraps at the one and expands the other).
"""

from __future__ import annotations

import unicodedata

# Controls, format characters (bidi overrides, zero-width joiners), surrogates that could not
# even be encoded, and the Unicode line and paragraph separators.
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
KEPT = frozenset("\n\t")


def escape_controls(text: str) -> str:
    if text.isprintable():  # the common case, in one pass of C
        return text
    return "".join(_escaped(char) for char in text)


def _escaped(char: str) -> str:
    if char in KEPT or unicodedata.category(char) not in HIDDEN_CATEGORIES:
        return char
    if char == "\r":
        return "\\r"
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
