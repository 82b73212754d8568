"""The `@` list above the composer: the project's files, narrowed by what follows the `@`.

    ❯ README.md
      docs/readme-old.md
      … 3 more · Tab or Enter completes · Esc hides
    ──────────────────────────────────────────────
    ❯ see @READ▏

It shows while the word at the cursor starts with `@` (at the start of the text, or after a
space or an opening bracket or quote). The files come whole from the actors (`ProjectFiles`, the
same listing `/file` picks from) once per ask, and are filtered here in memory at each key: the
best matches first — the file name starting with what was typed, then the path starting with
it, then the path containing it, then the letters in order anywhere in it (`rdme` finds
`README.md`) — at most `MATCHES` of them kept, at most `ROWS` drawn. Up and Down move; Tab or
Enter replaces the word with `@path ` (a message whose `@word` matches nothing is sent by Enter
as typed); Esc hides the list until the word changes.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate

import urwid

from ui.widgets.controls import escape_controls

ROWS = 8
MATCHES = 50
# How many paths containing the query are ranked, at most.
CONTAINING = 5000
# The `@word` the cursor is in: `@` at the start or after a space or an opening bracket or quote
# (the same rule as actors.mentions), up to the cursor.
MENTION_AT_CURSOR = re.compile(r"(?<![^\s(\[{\"'])@(\S*)\Z")


class FileIndex:
    """The listing as one lowered text, a path a line, searched in C (`str.find`, one regular
    expression that starts with a literal letter) rather than by a Python loop per file: a key
    costs a few milliseconds on 50,000 files (benchmarks/bench_mentions.py)."""

    def __init__(self, paths: Sequence[str]):
        self.paths = list(paths)
        self._text = "\n".join(path.lower() for path in self.paths)
        self._starts = list(accumulate((len(path) + 1 for path in self.paths[:-1]), initial=0))

    def __len__(self) -> int:
        return len(self.paths)

    def rank(self, query: str, limit: int = MATCHES) -> list[str]:
        """The best `limit` paths for `query`, best first (see the module's order), each kind in
        path order. The first `CONTAINING` paths that contain the query are the ones ranked: a
        query that common is narrowed by its next key anyway."""
        if not query:
            return self.paths[:limit]
        lowered = query.lower()
        containing = self._containing(lowered)
        name_first = sorted(containing, key=lambda index: (not self._name(index).startswith(lowered),
                                                          not self._line(index).startswith(lowered)))
        found = name_first[:limit]
        if len(found) < limit:  # then the letters in order, each followed by anything but the next
            letters = re.escape(lowered[0]) + "".join(f"[^\n{re.escape(c)}]*{re.escape(c)}" for c in lowered[1:])
            taken = set(found)
            for match in re.finditer(letters, self._text):
                index = self._index_at(match.start())
                if index not in taken:
                    taken.add(index)
                    found.append(index)
                    if len(found) == limit:
                        break
        return [self.paths[index] for index in found]

    def _containing(self, lowered: str) -> list[int]:
        found: list[int] = []
        position = self._text.find(lowered)
        while position >= 0 and len(found) < CONTAINING:
            index = self._index_at(position)
            found.append(index)
            position = self._text.find(lowered, self._line_end(index) + 1)
        return found

    def _index_at(self, position: int) -> int:
        return bisect_right(self._starts, position) - 1

    def _line_end(self, index: int) -> int:
        return self._starts[index] + len(self.paths[index])

    def _line(self, index: int) -> str:
        return self._text[self._starts[index]:self._line_end(index)]

    def _name(self, index: int) -> str:
        return self._line(index).rsplit("/", 1)[-1]


def mention_at(text: str, cursor: int) -> tuple[int, int, str] | None:
    """(start, end, query) of the `@word` at the cursor, the word's end being where its run of
    non-spaces ends; None when the cursor is not in one."""
    match = MENTION_AT_CURSOR.search(text, 0, cursor)
    if match is None:
        return None
    end = cursor
    while end < len(text) and not text[end].isspace():
        end += 1
    return match.start(), end, match.group(1)


class MentionList(urwid.WidgetWrap):
    """The rows of the `@` list. The layout tells it the composer's text (`follow`) and asks
    it for the completion (`chosen`)."""

    def __init__(self) -> None:
        self._index: FileIndex | None = None  # None until the listing arrives
        self._at: tuple[int, int, str] | None = None
        self._query: str | None = None  # what the matches are for
        self._matches: list[str] = []
        self._selected = 0
        self._hidden_at: tuple[int, str] | None = None  # Esc: hidden until the word changes
        self._text = urwid.Text("", wrap=urwid.WrapMode.ELLIPSIS)
        super().__init__(self._text)

    @property
    def showing(self) -> bool:
        return self._at is not None

    @property
    def listed(self) -> bool:
        return self._index is not None

    @property
    def matches(self) -> list[str]:
        return list(self._matches)

    def set_files(self, paths: Sequence[str]) -> None:
        self._index = FileIndex(paths)
        self._query = None
        self._refresh()

    def follow(self, text: str, cursor: int) -> None:
        """The composer's text or cursor changed: show the list for the `@word` at the cursor."""
        at = mention_at(text, cursor)
        if at is not None and self._hidden_at == (at[0], at[2]):
            at = None
        self._at = at
        self._refresh()

    def hide(self) -> None:
        """Esc: away until the word at the cursor changes."""
        if self._at is not None:
            self._hidden_at = (self._at[0], self._at[2])
        self._at = None
        self._refresh()

    def move(self, step: int) -> None:
        if self._matches:
            self._selected = (self._selected + step) % len(self._matches)
            self._redraw()

    def completion(self, text: str) -> tuple[str, int] | None:
        """`text` with the `@word` replaced by the selected path (and a space), and where the
        cursor goes; None when nothing matches."""
        if self._at is None or not self._matches:
            return None
        start, end, _ = self._at
        inserted = f"@{self._matches[self._selected]} "
        rest = text[end:]
        if rest.startswith(" "):
            rest = rest[1:]
        return text[:start] + inserted + rest, start + len(inserted)

    def _refresh(self) -> None:
        query = self._at[2] if self._at is not None else None
        if query != self._query:
            self._query = query
            self._selected = 0
            self._matches = self._index.rank(query) if self._index is not None and query is not None else []
        self._redraw()

    def _redraw(self) -> None:
        if self._at is None:
            self._text.set_text("")
            return
        if self._index is None:
            self._text.set_text(("dim", "  listing the project's files…"))
            return
        if not self._matches:
            self._text.set_text(("dim", f"  no file matches @{escape_controls(self._query or '')}"))
            return
        top = max(0, self._selected - ROWS + 1)  # the window follows the selection
        markup: list[str | tuple[str, str]] = []
        for position in range(top, min(len(self._matches), top + ROWS)):
            chosen = position == self._selected
            if markup:
                markup.append("\n")
            markup.append(("choice_selected" if chosen else "choice",
                           f"{'❯' if chosen else ' '} {escape_controls(self._matches[position])}"))
        more = len(self._matches) - ROWS
        tail = f"… {more}{'+' if len(self._matches) == MATCHES else ''} more · " if more > 0 else ""
        markup += ["\n", ("dim", f"  {tail}Tab or Enter completes · Esc hides")]
        self._text.set_text(markup)
