"""A long list to pick from, narrowed by typing: the session pickers of `/session` and `iota resume`.

    Resume which session?
    ⌕ parser▏  3 of 300
    ❯ Fix the parser · gpt · 2h ago · 12 msgs · coder
      ├─ Try the regex way · gpt · 1h ago · 14 msgs · coder
      Parser benchmarks · gpt · 3d ago · 40 msgs · coder

Each option comes with a text to search (a session's title and id). What the person types
narrows the list to the options whose text holds every word typed, in any case; Backspace takes
a character back, Esc clears what was typed (and, with nothing typed, answers None). Up/Down,
PgUp/PgDn, Home/End move; Enter answers with the option's index in the full list. Only the
rows the screen can give it are drawn (`limit_rows`, from the layout), a window that follows the
selection, so three hundred sessions cost as much to draw as ten; a row wider than the screen
ends in `…`. Rows are drawn escaped, like every option (ui.widgets.controls).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ui.widgets.chooser import Chooser
from ui.widgets.controls import escape_controls

# The rows shown when the layout has not said how many it can give (and never fewer).
DEFAULT_ROWS = 12
MIN_ROWS = 3
HINT = "type to filter"


class FilterChooser(Chooser):
    def __init__(self, title: str, options: Sequence[str], search: Sequence[str],
                 on_answer: Callable[[int | None], None]):
        self._search = [text.lower() for text in search]
        self._query = ""
        self._shown = list(range(len(options)))
        self._top = 0
        super().__init__(title, options, on_answer)
        self._text.set_wrap_mode("ellipsis")  # one row an option, however narrow the screen

    @property
    def query(self) -> str:
        return self._query

    @property
    def shown(self) -> list[int]:
        """The indices of the options the filter lets through, in order."""
        return list(self._shown)

    def limit_rows(self, rows: int | None) -> None:
        if rows != self._limit:
            self._limit = rows
            self._redraw()

    def keypress(self, size: tuple[int], key: str) -> str | None:
        if key in ("up", "down", "page up", "page down", "home", "end"):
            self._move(key)
        elif key == "enter":
            if self._shown:
                self._answer(self._shown[self._selected])
        elif key == "esc":
            if self._query:
                self._filter("")
            else:
                self._answer(None)
        elif key == "backspace":
            self._filter(self._query[:-1])
        elif len(key) == 1 and key.isprintable():
            self._filter(self._query + key)
        else:
            return key
        return None

    def _move(self, key: str) -> None:
        page = self._window()
        step = {"up": -1, "down": 1, "page up": -page, "page down": page,
                "home": -len(self._shown), "end": len(self._shown)}[key]
        self._selected = max(0, min(len(self._shown) - 1, self._selected + step))
        self._redraw()

    def _filter(self, query: str) -> None:
        self._query = query
        words = query.lower().split()
        self._shown = [index for index, text in enumerate(self._search) if all(word in text for word in words)]
        self._selected = 0
        self._top = 0
        self._redraw()

    def _window(self) -> int:
        """How many option rows fit: the limit less the title, the filter line and the position line."""
        rows = DEFAULT_ROWS if self._limit is None else self._limit - 3
        return max(MIN_ROWS, rows)

    def _redraw(self) -> None:
        window = self._window()
        self._top = min(max(self._top, self._selected - window + 1), self._selected)
        self._top = max(0, min(self._top, max(0, len(self._shown) - window)))
        count = f"{len(self._shown)} of {len(self._options)}"
        typed = f"⌕ {escape_controls(self._query)}▏" if self._query else f"⌕ {HINT}"
        markup: list[str | tuple[str, str]] = [("choice_title", escape_controls(self._title)), "\n",
                                               ("choice" if self._query else "dim", f"{typed}  {count}")]
        for position in range(self._top, min(len(self._shown), self._top + window)):
            chosen = position == self._selected
            label = escape_controls(self._label(self._shown[position]))
            markup += ["\n", ("choice_selected" if chosen else "choice", f"{'❯' if chosen else ' '} {label}")]
        if not self._shown:
            markup += ["\n", ("dim", "  nothing matches; Backspace or Esc to widen")]
        hidden_above, hidden_below = self._top, len(self._shown) - self._top - window
        if hidden_above > 0 or hidden_below > 0:
            where = [f"{hidden_above} above" if hidden_above > 0 else "", f"{hidden_below} below" if hidden_below > 0 else ""]
            markup += ["\n", ("dim", f"  … {', '.join(part for part in where if part)}")]
        self._text.set_text(markup)
