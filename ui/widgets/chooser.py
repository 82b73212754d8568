"""A select shown above the composer: the approval prompt, the pickers.

    write_file notes.md wants to modify files — allow?
    ❯ 1. Allow once
      2. Allow for this session
      3. Deny

Up and Down move, Enter answers with the option's index, a digit answers with that option at
once, Esc answers None. The answer goes to `on_answer` exactly once; keys after it are ignored.

An approval carries a detail — the whole command, the diff — shown in full between the title and
the options, each of its rows behind a `│` so nothing in it can pass for the question or an
option, its control characters escaped (ui.widgets.controls), wrapped at any character so every
one of them is on screen:

    shell echo safe … wants to run a command — allow?
    │ echo safe
    │ rm -rf ~/precious
    ❯ 1. Allow once

A diff (an edit's, a new file's) is coloured line by line, as in the transcript.

When it is taller than the rows the chat can give it (`limit_rows`, set by the layout from the
screen's height), it shows a window of it with a line saying where the window is, and PgUp/PgDn
move the window.

The last row may be a line to type in (`line=`, the approval's "Deny and say why", the model's
questions' "Other…"): picking it turns the row into a line editor, where Enter answers
`(row, what was typed)`, and Esc, Up/Down or Enter on an empty line go back to the rows:

    ❯ 4. Deny and say why: use the fixture instead▏

The model's questions (ui.widgets.question) extend it: what picking a row does (`_pick`), how
a row reads (`_label`) and what a typed line answers (`_answer_line`) are theirs to change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import urwid

from ui.widgets.controls import escape_controls
from ui.widgets.diff import diff_markup, looks_like_diff

GUTTER = "│ "
# However short the screen, the detail keeps a row of itself and its line of where it is.
MIN_DETAIL_ROWS = 2


class DetailView(urwid.Widget):
    """The detail of an approval, whole or through a window of `limit` rows."""

    _sizing = frozenset([urwid.Sizing.FLOW])
    _selectable = False

    def __init__(self, text: str):
        super().__init__()
        shown = escape_controls(text)
        self._body = urwid.Text(diff_markup(shown) if looks_like_diff(shown) else shown, wrap="any")
        self.limit: int | None = None  # rows it may take, its position line included; None: all it needs
        self._top = 0
        self._window = 1  # the rows of the window last drawn, which a page of scrolling is

    def set_limit(self, rows: int | None) -> None:
        if rows != self.limit:
            self.limit = rows
            self._invalidate()

    def _total(self, columns: int) -> int:
        return self._body.rows((max(1, columns - len(GUTTER)),))

    def overflows(self, columns: int) -> bool:
        return self.limit is not None and self._total(columns) > self.limit

    def rows(self, size: tuple[int], focus: bool = False) -> int:
        (columns,) = size
        return max(self.limit, MIN_DETAIL_ROWS) if self.overflows(columns) else self._total(columns)

    def scroll_page(self, pages: int) -> None:
        self._top = max(0, self._top + pages * max(1, self._window - 1))
        self._invalidate()

    def render(self, size: tuple[int], focus: bool = False) -> urwid.Canvas:
        (columns,) = size
        width = max(1, columns - len(GUTTER))
        body = self._body.render((width,))
        total = body.rows()
        gutter = urwid.Text(("dim", "\n".join([GUTTER] * total))).render((len(GUTTER),))
        shown = urwid.CompositeCanvas(urwid.CanvasJoin([(gutter, None, False, len(GUTTER)),
                                                        (body, None, False, width)]))
        if not self.overflows(columns):
            return shown
        self._window = max(self.limit, MIN_DETAIL_ROWS) - 1
        self._top = min(self._top, total - self._window)
        shown.trim(self._top, self._window)
        last = self._top + self._window
        below = f", {total - last} more below" if last < total else ""
        where = f"╰ rows {self._top + 1}–{last} of {total}{below} · PgUp/PgDn scroll"
        position = urwid.Text(("choice_title", where), wrap="ellipsis").render((columns,))
        return urwid.CanvasCombine([(shown, None, False), (position, None, False)])


class Chooser(urwid.WidgetWrap):
    def __init__(self, title: str, options: Sequence[str], on_answer: Callable[[object], None],
                 detail: str = "", *, line: int | None = None):
        """`line`: the row (the last) whose pick opens a line to type in, or None."""
        self._title = title
        self._options = list(options)
        self._on_answer: Callable[[object], None] | None = on_answer
        self._selected = 0
        if line is not None and line != len(self._options) - 1:
            raise ValueError("the line to type in must be the last row")
        self._line_row = line
        self._line = urwid.Edit()
        self._editing = False
        self._text = urwid.Text("")  # the title and the options; only the options when there is a detail
        self._rows_area = urwid.WidgetPlaceholder(self._text)  # the options, or the options and the line
        self._detail = DetailView(detail) if detail else None
        if self._detail is None:
            super().__init__(self._rows_area)
        else:
            self._title_text = urwid.Text(("choice_title", escape_controls(title)))
            self._pile = urwid.Pile([self._title_text, self._detail, self._rows_area])
            super().__init__(self._pile)
        self._limit: int | None = None
        self._redraw()

    def selectable(self) -> bool:
        return True

    @property
    def selected(self) -> int:
        return self._selected

    def limit_rows(self, rows: int | None) -> None:
        """At most `rows` rows for the whole chooser (None: as many as it needs). Only a detail
        gives way; the title and the options are always shown."""
        if rows != self._limit:
            self._limit = rows
            self._invalidate()

    def _fit(self, columns: int) -> None:
        if self._detail is not None:
            rest = self._title_text.rows((columns,)) + self._text.rows((columns,))
            self._detail.set_limit(None if self._limit is None else self._limit - rest)

    def rows(self, size: tuple[int], focus: bool = False) -> int:
        self._fit(size[0])
        return super().rows(size, focus)

    def render(self, size: tuple[int], focus: bool = False) -> urwid.Canvas:
        self._fit(size[0])
        return super().render(size, focus)

    def keypress(self, size: tuple[int], key: str) -> str | None:
        if self._editing:
            return self._edit_keypress(size, key)
        if key in ("up", "down") and self._options:
            self._selected = (self._selected + (-1 if key == "up" else 1)) % len(self._options)
            self._redraw()
        elif key == "enter" and self._options:
            self._pick(self._selected)
        elif key == "esc":
            self._answer(None)
        elif key.isdigit() and 1 <= int(key) <= len(self._options):
            self._pick(int(key) - 1)
        elif key in ("page up", "page down") and self._detail is not None and self._detail.overflows(size[0]):
            self._detail.scroll_page(-1 if key == "page up" else 1)
            self._invalidate()
        else:
            return key
        return None

    def _pick(self, position: int) -> None:
        """Enter on a row, or the row's digit: here, the row is the answer (or its line opens)."""
        if position == self._line_row:
            self._selected = position
            self._editing = True
            self._redraw()
            return
        self._answer(position)

    def _edit_keypress(self, size: tuple[int], key: str) -> str | None:
        if key == "enter":
            typed = " ".join(self._line.edit_text.split())
            if typed:
                self._answer_line(typed)
                return None
            self._editing = False
        elif key == "esc":
            self._editing = False
        elif key in ("up", "down"):
            self._editing = False
            return Chooser.keypress(self, size, key)
        else:
            return self._line.keypress((max(1, size[0] - len(self._line_prompt())),), key)
        self._redraw()
        return None

    def _answer_line(self, typed: str) -> None:
        """Enter on a line with something in it."""
        self._answer((self._line_row, typed))

    def _line_prompt(self) -> str:
        return f"❯ {len(self._options)}. {self._options[-1].rstrip('…')}: "

    def _answer(self, answer: object) -> None:
        on_answer, self._on_answer = self._on_answer, None
        if on_answer is not None:
            on_answer(answer)

    def _label(self, position: int) -> str:
        return self._options[position]

    def _redraw(self) -> None:
        # The line to type in, when open, is the last row: an editor with the terminal's cursor.
        markup = self._markup(len(self._options) - 1 if self._editing else len(self._options))
        self._text.set_text(markup if self._detail is None else markup[2:])  # the title is drawn above the detail
        if not self._editing:
            self._rows_area.original_widget = self._text
            return
        prompt = urwid.Text(("choice_selected", escape_controls(self._line_prompt())))
        self._rows_area.original_widget = urwid.Pile([self._text, urwid.Columns([("pack", prompt), self._line])],
                                                     focus_item=1)
        if self._detail is not None:
            self._pile.focus_position = 2

    def _markup(self, rows: int) -> list[str | tuple[str, str]]:
        """The title and the first `rows` options, the selected one marked."""
        markup: list[str | tuple[str, str]] = [("choice_title", escape_controls(self._title))]
        for position in range(rows):
            chosen = position == self._selected
            markup += ["\n", ("choice_selected" if chosen else "choice",
                              f"{'❯' if chosen else ' '} {position + 1}. {escape_controls(self._label(position))}")]
        return markup
