"""A unified diff, coloured line by line: additions green, deletions red, hunk heads cyan."""

from __future__ import annotations


def diff_attribute(line: str) -> str | None:
    """The palette attribute of one line of a unified diff (None: context)."""
    if line.startswith(("+++", "---")):
        return "dim"
    if line.startswith("@@"):
        return "diff_hunk"
    if line.startswith("+"):
        return "diff_add"
    if line.startswith("-"):
        return "diff_del"
    return None


def looks_like_diff(text: str) -> bool:
    """Whether `text` opens like the unified diffs the file tools show (`--- a/…` then `+++ b/…`)."""
    first, _, rest = text.partition("\n")
    return first.startswith("--- ") and rest.startswith("+++ ")


def diff_markup(text: str, default: str | None = None) -> list[str | tuple[str, str]]:
    """`text` (already escaped) as urwid markup, each line in its diff colour."""
    markup: list[str | tuple[str, str]] = []
    for number, line in enumerate(text.split("\n")):
        if number:
            markup.append("\n")
        attribute = diff_attribute(line) or default
        markup.append((attribute, line) if attribute else line)
    return markup
