"""A select shown above the composer: the approval prompt, the pickers.

    write_file notes.md wants to modify files — allow?
    ❯ 1. Allow once
      2. Allow for this session
      3. Deny

Up and Down move, Enter answers with the option's index, a digit answers with that option at
once, Esc answers None. The answer goes to `on_answer` exactly once; keys after it are ignored.

The model's questions (ui.widgets.question) extend it: what picking a row does (`_pick`) and how
a row reads (`_label`) are theirs to change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import urwid


class Chooser(urwid.WidgetWrap):
    def __init__(self, title: str, options: Sequence[str], on_answer: Callable[[int | None], None]):
        self._title = title
        self._options = list(options)
        self._on_answer: Callable[[int | None], None] | None = on_answer
        self._selected = 0
        self._text = urwid.Text("")
        super().__init__(self._text)
        self._redraw()

    def selectable(self) -> bool:
        return True

    @property
    def selected(self) -> int:
        return self._selected

    def keypress(self, size: tuple[int], key: str) -> str | None:
        if key in ("up", "down") and self._options:
            self._selected = (self._selected + (-1 if key == "up" else 1)) % len(self._options)
            self._redraw()
        elif key == "enter" and self._options:
            self._pick(self._selected)
        elif key == "esc":
            self._answer(None)
        elif key.isdigit() and 1 <= int(key) <= len(self._options):
            self._pick(int(key) - 1)
        else:
            return key
        return None

    def _pick(self, position: int) -> None:
        """Enter on a row, or the row's digit: here, the row is the answer."""
        self._answer(position)

    def _answer(self, answer: object) -> None:
        on_answer, self._on_answer = self._on_answer, None
        if on_answer is not None:
            on_answer(answer)

    def _label(self, position: int) -> str:
        return self._options[position]

    def _redraw(self) -> None:
        self._text.set_text(self._markup(len(self._options)))

    def _markup(self, rows: int) -> list[str | tuple[str, str]]:
        """The title and the first `rows` options, the selected one marked."""
        markup: list[str | tuple[str, str]] = [("choice_title", self._title)]
        for position in range(rows):
            chosen = position == self._selected
            markup += ["\n", ("choice_selected" if chosen else "choice",
                              f"{'❯' if chosen else ' '} {position + 1}. {self._label(position)}")]
        return markup
