"""The open tasks above the composer: a bot's tasks in progress, one dim row each.

    ◆ Migrate CI · step 2/3 · Update workflows

Nothing is drawn while no task is in progress. The rows come from the bot's tasks file (their
titles are the model's words), so they are drawn with control characters escaped.
"""

from __future__ import annotations

import urwid

from ui.widgets.controls import escape_controls

MARK = "◆ "


class OpenTasksRows(urwid.WidgetWrap):
    def __init__(self) -> None:
        self._rows: tuple[str, ...] = ()
        self._text = urwid.Text("", wrap=urwid.WrapMode.ELLIPSIS)
        super().__init__(self._text)

    @property
    def showing(self) -> bool:
        return bool(self._rows)

    def show(self, rows: tuple[str, ...]) -> None:
        self._rows = rows
        markup: list = []
        for index, row in enumerate(rows):
            markup += [("\n" if index else ""), ("tasks_mark", MARK), ("tasks", escape_controls(row))]
        self._text.set_text(markup or "")
