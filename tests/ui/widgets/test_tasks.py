"""The open tasks above the composer (ui.widgets.tasks, ui.widgets.layout)."""

from __future__ import annotations

from actors.events import OpenTasks
from ui.widgets.layout import ChatLayout


def rows_of(layout: ChatLayout, width: int = 60) -> list[str]:
    canvas = layout.render((width, 12))
    return [line.decode().rstrip() for line in canvas.text]


def test_tasks_in_progress_show_above_the_composer_and_go_when_none_is():
    layout = ChatLayout(home=None, clock=lambda: 0.0, on_input=lambda _: None, on_answer=lambda *_: None)
    layout.apply(OpenTasks(("Migrate CI · step 2/3 · Update workflows",)))
    shown = rows_of(layout)
    at = shown.index("◆ Migrate CI · step 2/3 · Update workflows")
    assert shown[at + 2].startswith("❯")  # the rule, then the composer
    layout.apply(OpenTasks(()))
    assert not any("Migrate" in row for row in rows_of(layout))


def test_a_title_cannot_write_escape_sequences_to_the_terminal():
    layout = ChatLayout(home=None, clock=lambda: 0.0, on_input=lambda _: None, on_answer=lambda *_: None)
    layout.apply(OpenTasks(("Evil\x1b[2J\x1b]0;pwned\x07 · step 1/1 · x",)))
    row = next(row for row in rows_of(layout, 80) if row.startswith("◆"))
    assert "\\x1b[2J" in row and "\x1b" not in row
