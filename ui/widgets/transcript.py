"""The transcript: what was said and done, as blocks in a `Scroller`.

    ❯ fix the test                                   your message (UserEcho)

    Let me look at it.                               the reply, streamed into one block
                                                     (TextDelta), closed by TurnEnded or by
    • edit_file tests/test_x.py                      any other block; a tool call (ToolStarted)
      ⎿ 1 edit                                       and what came of it (ToolEnded), with a
        @@ -1 +1 @@                                  diff shown in full, coloured
        -assert x == 1
        +assert x == 2

    shell rm -rf build wants to run a command        an answered approval: the question, its
    — allow? → Deny                                  answer and the whole of its detail
    │ rm -rf build

    Done. (interrupted)                              an interrupted turn's mark
    MEMORY.md reloaded                               notices (dim) and errors (red), one line
    ⚠ sandbox unavailable                            each, grouped without blank lines

Every block opens with one blank line, except consecutive notices and consecutive errors.
Everything but the card and the person's own messages comes from the model, a tool or a file,
so it is drawn with its control characters escaped (ui.widgets.controls).
"""

from __future__ import annotations

import urwid

from actors.events import Card, Panel, ToolEnded, ToolStarted
from ui.widgets.card import CardWidget
from ui.widgets.chooser import DetailView
from ui.widgets.controls import escape_controls
from ui.widgets.scroll import Scroller

GROUPED_KINDS = frozenset({"notice", "error"})
INTERRUPTED = "(interrupted)"


def diff_attribute(line: str) -> str | None:
    if line.startswith(("+++", "---")):
        return "dim"
    if line.startswith("@@"):
        return "diff_hunk"
    if line.startswith("+"):
        return "diff_add"
    if line.startswith("-"):
        return "diff_del"
    return None


class ReplyBlock(urwid.WidgetWrap):
    """The model's reply as it streams. Blank lines at either end wait until text follows them."""

    def __init__(self) -> None:
        self._streamed = ""
        self._interrupted = False
        self._text = urwid.Text("")
        super().__init__(self._text)

    @property
    def text(self) -> str:
        return escape_controls(self._streamed.strip("\n"))

    def append(self, delta: str) -> None:
        self._streamed += delta
        self._redraw()

    def mark_interrupted(self) -> None:
        self._interrupted = True
        self._redraw()

    def _redraw(self) -> None:
        if not self._interrupted:
            self._text.set_text(self.text)
        elif self.text.rstrip():
            self._text.set_text([self.text.rstrip(), ("dim", f" {INTERRUPTED}")])
        else:
            self._text.set_text(("dim", INTERRUPTED))


class ToolBlock(urwid.WidgetWrap):
    """One tool call: `• name target`, then `  ⎿ summary` and the display (a diff) when it ends."""

    def __init__(self, name: str, target: str):
        self._header: list[str | tuple[str, str]] = [("tool", f"• {escape_controls(name)}")]
        if target:
            self._header.append(f" {escape_controls(target)}")
        self._text = urwid.Text(self._header)
        super().__init__(self._text)

    def finish(self, ended: ToolEnded) -> None:
        summary = escape_controls(ended.summary)
        markup = [*self._header, "\n", ("tool_error" if ended.is_error else "tool_result", f"  ⎿ {summary}")]
        for line in escape_controls(ended.display or "").splitlines():
            markup += ["\n", (diff_attribute(line) or "tool_result", f"    {line}")]
        self._text.set_text(markup)


class Transcript(urwid.WidgetWrap):
    def __init__(self, home: str | None):
        self._home = home
        self._scroller = Scroller()
        self._last_kind: str | None = None
        self._reply: ReplyBlock | None = None
        self._tools: dict[str, ToolBlock] = {}
        super().__init__(self._scroller)

    @property
    def scroller(self) -> Scroller:
        return self._scroller

    def _add(self, kind: str, block: urwid.Widget) -> None:
        if self._scroller.blocks and not (kind in GROUPED_KINDS and kind == self._last_kind):
            self._scroller.append(urwid.Divider())
        self._scroller.append(block)
        self._last_kind = kind
        self._reply = None

    def add_card(self, card: Card) -> None:
        """The start-up card. The first screen shows one drawn before the chat was loaded; the
        chat's own card replaces it while nothing else has been shown."""
        if self._last_kind == "card" and len(self._scroller.blocks) == 1:
            self._scroller.blocks[0].replace(card)
            self._scroller.changed()
            return
        self._add("card", CardWidget(card, self._home))

    def add_user(self, text: str) -> None:
        self._add("user", urwid.Text([("user_mark", "❯ "), ("user", text)]))

    def add_delta(self, text: str) -> None:
        if self._reply is None:
            reply = ReplyBlock()
            self._add("reply", reply)
            self._reply = reply
        self._reply.append(text)
        self._scroller.changed()

    def add_tool_started(self, started: ToolStarted) -> None:
        block = ToolBlock(started.name, started.target)
        self._tools[started.call_id] = block
        self._add("tool", block)

    def add_tool_ended(self, ended: ToolEnded) -> None:
        block = self._tools.pop(ended.call_id, None)
        if block is None:  # an end whose start this face never saw: show it whole
            block = ToolBlock(ended.name, "")
            self._add("tool", block)
        block.finish(ended)
        self._scroller.changed()

    def add_notice(self, text: str, warning: bool = False) -> None:
        text = escape_controls(text)
        self._add("notice", urwid.Text(("notice", f"⚠ {text}" if warning else text)))

    def add_error(self, text: str) -> None:
        self._add("error", urwid.Text(("error", escape_controls(text))))

    def add_panel(self, panel: Panel) -> None:
        self._add("panel", urwid.Text([("panel_title", escape_controls(panel.title)), "\n",
                                       escape_controls(panel.text)]))

    def add_answered(self, title: str, detail: str, answer: str) -> None:
        """An approval once answered: what was asked, the answer, and the whole detail."""
        question = urwid.Text([("dim", f"{escape_controls(title)} → "), ("choice_title", answer)])
        self._add("answered", urwid.Pile([question, DetailView(detail)]))

    def end_turn(self, interrupted: bool) -> None:
        """Close the streaming reply; an interrupted one keeps its text, marked."""
        if interrupted:
            if self._reply is not None:
                self._reply.mark_interrupted()
                self._scroller.changed()
            else:
                self._add("interrupted", urwid.Text(("dim", INTERRUPTED)))
        self._reply = None
