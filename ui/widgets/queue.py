"""The messages waiting to be sent, dim, between the transcript and the composer.

    ↳ and then run the tests
    ↳ also update the changelog
      sent when the reply ends · ↑ edits the last

    ↳ and then run the tests
      stopped · Enter sends 1 queued · ↑ edits it · Ctrl+C drops it

The second form is the queue held after Ctrl+C stopped the running turn: nothing more is sent
until the person says so. Each message shows its first line, cut to the width.
"""

from __future__ import annotations

import urwid

from actors.events import Status
from ui.widgets.controls import escape_controls

SHOWN = 5  # messages listed before `… and N more`


class QueueView(urwid.WidgetWrap):
    """What `Status.queued_messages` and `Status.held` say, drawn when they change."""

    def __init__(self) -> None:
        self.messages: tuple[str, ...] = ()
        self.held = False
        self._pile = urwid.Pile([])
        super().__init__(self._pile)

    @property
    def showing(self) -> bool:
        return bool(self.messages)

    def show(self, status: Status) -> bool:
        """Follow `status`; whether what is shown changed."""
        if (status.queued_messages, status.held) == (self.messages, self.held):
            return False
        self.messages, self.held = status.queued_messages, status.held
        rows: list[urwid.Widget] = []
        for text in self.messages[:SHOWN]:
            first = escape_controls(text.strip().splitlines()[0] if text.strip() else "")
            rows.append(urwid.Text(("queued", f"↳ {first}"), wrap="ellipsis"))
        if len(self.messages) > SHOWN:
            rows.append(urwid.Text(("queued", f"  … and {len(self.messages) - SHOWN} more")))
        if self.messages:
            rows.append(urwid.Text(("dim", f"  {hint(len(self.messages), self.held)}"), wrap="ellipsis"))
        self._pile.contents = [(row, self._pile.options()) for row in rows]
        return True


def hint(count: int, held: bool) -> str:
    if held:
        return f"stopped · Enter sends {count} queued · ↑ edits the last · Ctrl+C drops {'it' if count == 1 else 'them'}"
    return "sent when the reply ends · ↑ edits the last"
