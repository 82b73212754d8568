"""The transcript: what was said and done, as blocks in a `Scroller`.

    ❯ fix the test                                   your message (UserEcho)

    Let me look at it.                               the reply, streamed, drawn as Markdown
                                                     (TextDelta; ui.widgets.markdown), closed
    • shell echo start; ls /nonexistent; exit 3      by TurnEnded or by any other block; a tool
      ⎿ start                                        call (ToolStarted) and what the model read
        ls: cannot access '/nonexistent': No such…   of it (ToolEnded): its first lines, then
        [exit code 3]                                how many more (Ctrl+O shows them all) and
                                                     a closing status line such as the exit code
    • edit_file tests/test_x.py
      ⎿ 1 replacement(s) in tests/test_x.py          an edit's diff is shown in full, coloured
        @@ -1 +1 @@
        -assert x == 1
        +assert x == 2

    ── compacted: 42 messages summarised ──          a compaction (its summary behind Ctrl+O)
    MEMORY.md reloaded                               notices (dim) and errors (red), one line
    ⚠ sandbox unavailable                            each, grouped without blank lines

Every block opens with one blank line, except consecutive notices and consecutive errors.
Everything but the card and the person's own messages comes from the model, a tool or a file,
so it is drawn with its control characters escaped (ui.widgets.controls).

A resumed session's history arrives a page at a time, newest first (`Older`): each page is laid
out like the live transcript and put above what is shown, under the card.
"""

from __future__ import annotations

import itertools

import urwid

from actors.events import (Card, Compaction, ErrorLine, Notice, Panel, TextDelta, ToolEnded, ToolProgress, ToolStarted,
                           TurnEnded, UserEcho)
from ui.widgets import markdown
from ui.widgets.card import CardWidget
from ui.widgets.chooser import DetailView
from ui.widgets.controls import escape_controls
from ui.widgets.diff import diff_attribute
from ui.widgets.markdown import Gutter
from ui.widgets.scroll import Scroller

GROUPED_KINDS = frozenset({"notice", "error"})
INTERRUPTED = "(interrupted)"
# The lines of a tool's output shown before Ctrl+O (one when a diff follows).
PREVIEW_LINES = 4
EXPAND_HINT = "ctrl+o to expand"
RESULT_MARK = "  ⎿ "
INDENT = "    "


class ReplyStream:
    """The model's reply as it streams, drawn as Markdown.

    Its settled blocks — those no more text can change — are blocks of the scroller, a blank row
    apart, each parsed and laid out once, when it is first drawn (`markdown.SettledBlock`). The
    text after them is parsed and drawn again only when the screen is next drawn (`sync`), so a
    burst of deltas costs one parse of the last block, however long the reply has grown; finding
    where the blocks are takes only a parse of the block structure. The text is kept as the
    pieces it came in and joined when the screen is drawn: adding each piece to one string would
    copy all of it again for every piece.

    Only link reference definitions (`[x]: url`) reach back into blocks already settled, so when
    a reply that may hold one ends, its references are gathered from the whole of it and its
    settled blocks are laid out again with them: what is drawn in the end is always what the
    whole reply would draw at once."""

    def __init__(self, scroller: Scroller):
        self._scroller = scroller
        self._settled: list[markdown.SettledBlock] = []
        self._pending: list[str] = []   # the text after them, escaped, in pieces
        self._references: dict = {}     # the reply's link references, once it has ended
        self._may_reference = False     # the text may define one
        self._dirty = False
        self._interrupted = False
        self._tail = urwid.WidgetPlaceholder(urwid.Text(""))
        scroller.append(self._tail)

    def append(self, delta: str) -> bool:
        """Add a piece of the reply. True if the reply was drawn as it stood: the screen must be
        drawn again (later pieces before that draw need not say so)."""
        self._pending.append(escape_controls(delta))
        was_drawn, self._dirty = not self._dirty, True
        return was_drawn

    def mark_interrupted(self) -> None:
        self._interrupted = True
        self._dirty = True

    def sync(self, *, ended: bool = False) -> None:
        """Settle the blocks that are complete and draw the rest afresh. `ended`: no more text
        will come, so the last line is complete too."""
        if not self._dirty:
            return
        self._dirty = False
        source = "".join(self._pending)
        self._may_reference = self._may_reference or _may_define_references(source)
        lines = markdown.settled_blocks(markdown.parse_blocks(source), source, ended)
        if lines:
            offsets = _offsets_of_lines(source, lines)
            settled = [markdown.SettledBlock(source[start:end], self._references)
                       for start, end in itertools.pairwise(offsets)]
            self._scroller.insert(self._tail_index(), [row for block in settled for row in (block, urwid.Divider())])
            self._settled += settled
            source = source[offsets[-1]:]
        self._pending = [source]
        tokens = markdown.parse(source, self._references)
        widgets = markdown.block_widgets(tokens) if tokens else []
        if self._interrupted:
            widgets[-1:] = [_marked_interrupted(widgets[-1] if widgets else urwid.Text(""), bool(widgets))]
        self._tail.original_widget = markdown.stacked(widgets)
        self._scroller.changed()

    def close(self) -> None:
        """Draw the ended reply for good (see the class's note on link references)."""
        self._pending = ["".join(self._pending)]
        if self._may_reference or _may_define_references(self._pending[0]):
            self._references.update(markdown.references("".join([*(b.source for b in self._settled), *self._pending])))
            for block in self._settled:
                block.forget()
            self._dirty = True
        self.sync(ended=True)

    def _tail_index(self) -> int:
        """Where the block being written is in the scroller: the last block but while a page of
        history is put above, so the search starts from the end."""
        blocks = self._scroller.blocks
        return next(i for i in range(len(blocks) - 1, -1, -1) if blocks[i] is self._tail)


def _may_define_references(text: str) -> bool:
    """Whether `text` may hold a link reference definition, `[label]: destination` (it cannot
    without `]:`; a false alarm costs one more parse of the reply's block structure when it ends)."""
    return "]:" in text


def _offsets_of_lines(text: str, lines: list[int]) -> list[int]:
    """Where each of `lines` (ascending) begins in `text`."""
    offsets, offset, line = [], 0, 0
    for wanted in lines:
        while line < wanted:
            offset = text.index("\n", offset) + 1
            line += 1
        offsets.append(offset)
    return offsets


def _marked_interrupted(block: urwid.Widget, has_text: bool) -> urwid.Widget:
    """`text (interrupted)` on a paragraph's last row; a row of its own under anything else."""
    mark = ("dim", f" {INTERRUPTED}" if has_text else INTERRUPTED)
    if not has_text:
        return urwid.Text(mark)
    if type(block) is urwid.Text:
        text, runs = block.get_text()
        markup, position = [], 0
        for attribute, length in runs:
            markup.append((attribute, text[position:position + length]))
            position += length
        if position < len(text):
            markup.append(text[position:])
        return urwid.Text([*markup, mark])
    return urwid.Pile([block, urwid.Text(("dim", INTERRUPTED))])


class ToolBlock(urwid.WidgetWrap):
    """One tool call: `• name target` (and the whole command when the target cuts it), then
    `  ⎿ ` and the first lines of what the model read, and the display (a diff) in full. The
    whole command wraps under its own gutter."""

    def __init__(self, name: str, target: str, command: str = "", expanded: bool = False):
        header: list[str | tuple[str, str]] = [("tool", f"• {escape_controls(name)}")]
        if target:
            header.append(f" {escape_controls(target)}")
        rows: list[urwid.Widget] = [urwid.Text(header)]
        command = command.strip()
        if command and command not in target:
            rows.append(Gutter("  │ ", urwid.Text(escape_controls(command))))
        self._ended: ToolEnded | None = None
        self._expanded = expanded
        self._pile = urwid.Pile(rows)
        self._header_rows = len(rows)
        super().__init__(self._pile)

    def progress(self, text: str) -> None:
        """The call's live line (a helper at work), under the header until the call ends."""
        if self._ended is None:
            self._pile.contents[self._header_rows:] = [(urwid.Text(("dim", f"  ⎿ {escape_controls(text)}")),
                                                        self._pile.options())]

    def finish(self, ended: ToolEnded) -> None:
        self._ended = ended
        self._redraw()

    def set_expanded(self, expanded: bool) -> None:
        if expanded != self._expanded:
            self._expanded = expanded
            self._redraw()

    def _redraw(self) -> None:
        ended = self._ended
        if ended is None:
            return
        lines = escape_controls(ended.output).rstrip().splitlines() or ["(no output)"]
        shown = len(lines) if self._expanded else (1 if ended.display else PREVIEW_LINES)
        closing = lines[-1] if len(lines) > shown and _is_status_line(lines[-1]) else None
        hidden = len(lines) - shown - (closing is not None)
        markup: list[str | tuple[str, str]] = []
        for number, line in enumerate(lines[:shown]):
            error = ended.is_error and (number == 0 or _is_status_line(line))
            markup += ["\n" if number else "", ("tool_error" if error else "tool_result",
                                                 f"{RESULT_MARK if number == 0 else INDENT}{line}")]
        if hidden > 0:
            markup += ["\n", ("dim", f"{INDENT}… +{hidden} lines ({EXPAND_HINT})")]
        if closing is not None:
            markup += ["\n", ("tool_error" if ended.is_error else "tool_result", f"{INDENT}{closing}")]
        for line in escape_controls(ended.display or "").splitlines():
            markup += ["\n", (diff_attribute(line) or "tool_result", f"{INDENT}{line}")]
        if ended.more and self._expanded:
            markup += [("dim", f"\n{INDENT}{line}") for line in escape_controls(ended.more).splitlines()]
        elif ended.more and hidden <= 0:
            markup += ["\n", ("dim", f"{INDENT}… more ({EXPAND_HINT})")]
        self._pile.contents[self._header_rows:] = [(urwid.Text(markup), self._pile.options())]


def _is_status_line(line: str) -> bool:
    """`[exit code 3]`, `[command cancelled]`: a bracketed line that says how a command ended."""
    return line.startswith("[") and line.endswith("]")


class CompactionBlock(urwid.WidgetWrap):
    """`── compacted: 42 messages summarised ──`, and the summary under it when expanded."""

    def __init__(self, compaction: Compaction, expanded: bool = False):
        self._compaction = compaction
        self._text = urwid.Text("")
        self._expanded = None
        super().__init__(self._text)
        self.set_expanded(expanded)

    def set_expanded(self, expanded: bool) -> None:
        if expanded == self._expanded:
            return
        self._expanded = expanded
        line = f"── compacted: {self._compaction.count} messages summarised ──"
        if not expanded:
            self._text.set_text(("dim", f"{line} ({EXPAND_HINT})"))
            return
        self._text.set_text([("dim", line), "\n", ("tool_result", escape_controls(self._compaction.summary.strip()))])


class Transcript(urwid.WidgetWrap):
    def __init__(self, home: str | None, *, expanded: bool = False):
        self._home = home
        self._scroller = Scroller()
        self._last_kind: str | None = None
        self._reply: ReplyStream | None = None
        self._tools: dict[str, ToolBlock] = {}
        self._expanded = expanded  # Ctrl+O: every tool output and summary in full
        self.older_available = False  # a resumed session has history above what is shown
        self.older_requested = False
        super().__init__(self._scroller)

    @property
    def scroller(self) -> Scroller:
        return self._scroller

    def apply(self, event: object) -> bool:
        """Draw `event` if it is the transcript's; False if it is not."""
        match event:
            case Card():
                self.add_card(event)
            case UserEcho(text=text):
                self.add_user(text)
            case TextDelta(text=text):
                self.add_delta(text)
            case ToolStarted():
                self.add_tool_started(event)
            case ToolProgress(call_id=call_id, text=text):
                if call_id in self._tools:
                    self._tools[call_id].progress(text)
                    self._scroller.changed()
            case ToolEnded():
                self.add_tool_ended(event)
            case Notice(text=text, warning=warning):
                self.add_notice(text, warning)
            case ErrorLine(text=text):
                self.add_error(text)
            case Panel():
                self.add_panel(event)
            case Compaction():
                self._add("compaction", CompactionBlock(event, self._expanded))
            case TurnEnded(interrupted=interrupted):
                self.end_turn(interrupted)
            case _:
                return False
        return True

    def _add(self, kind: str, block: urwid.Widget) -> None:
        self._close_reply()
        if self._scroller.blocks and not (kind in GROUPED_KINDS and kind == self._last_kind):
            self._scroller.append(urwid.Divider())
        self._scroller.append(block)
        self._last_kind = kind

    def _close_reply(self) -> None:
        if self._reply is not None:
            self._reply.close()
            self._reply = None

    def render(self, size: tuple[int, int], focus: bool = False) -> urwid.Canvas:
        if self._reply is not None:
            self._reply.sync()
        return super().render(size, focus)

    def add_card(self, card: Card) -> None:
        """The start-up card. The first screen shows one drawn before the chat was loaded; the
        chat's own card replaces it while nothing else has been shown. A fresh card (a new
        conversation) starts the transcript over."""
        if card.fresh:
            self._close_reply()
            self._scroller.clear()
            self._tools.clear()
            self._last_kind = None
            self.older_available = self.older_requested = False
        if self._last_kind == "card" and len(self._scroller.blocks) == 1:
            self._scroller.blocks[0].replace(card)
            self._scroller.changed()
            return
        self._add("card", CardWidget(card, self._home))

    def add_user(self, text: str) -> None:
        self._add("user", urwid.Text([("user_mark", "❯ "), ("user", text)]))

    def add_delta(self, text: str) -> None:
        if self._reply is None:
            if self._scroller.blocks:
                self._scroller.append(urwid.Divider())
            self._last_kind = "reply"
            self._reply = ReplyStream(self._scroller)
        if self._reply.append(text):
            self._scroller.changed()

    def add_tool_started(self, started: ToolStarted) -> None:
        block = ToolBlock(started.name, started.target, started.command, self._expanded)
        self._tools[started.call_id] = block
        self._add("tool", block)

    def add_tool_ended(self, ended: ToolEnded) -> None:
        block = self._tools.pop(ended.call_id, None)
        if block is None:  # an end whose start this face never saw: show it whole
            block = ToolBlock(ended.name, "", expanded=self._expanded)
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
        self._close_reply()

    # ---- Ctrl+O ---------------------------------------------------------------------------------

    @property
    def expanded(self) -> bool:
        return self._expanded

    def toggle_expanded(self) -> None:
        """Every tool output and compaction summary in full, or back to their first lines."""
        self._expanded = not self._expanded
        for block in self._scroller.blocks:
            if isinstance(block, (ToolBlock, CompactionBlock)):
                block.set_expanded(self._expanded)
        self._scroller.changed()

    # ---- a saved session's history --------------------------------------------------------------

    def add_older(self, events: tuple, more: bool) -> None:
        """A page of history, older than everything shown: laid out on its own, then put above
        the rest, under the card."""
        page = Transcript(self._home, expanded=self._expanded)
        for event in events:
            page.apply(event)
        page.end_turn(False)
        blocks = page.scroller.blocks
        self.older_available, self.older_requested = more, False
        if not blocks:
            return
        under_card = bool(self._scroller.blocks) and isinstance(self._scroller.blocks[0], CardWidget)
        if under_card:
            self._scroller.insert(1, [urwid.Divider(), *blocks])
        else:
            self._scroller.insert(0, [*blocks, *([urwid.Divider()] if self._scroller.blocks else [])])
        if self._last_kind is None or self._last_kind == "card":
            self._last_kind = page._last_kind

    def wants_older(self, size: tuple[int, int]) -> bool:
        """Whether to ask for the page before the history shown: there is one, it was not asked
        for yet, and less than a screen of rows is left above the view."""
        if not self.older_available or self.older_requested:
            return False
        columns, height = size
        return self._scroller.rows_above(columns, height, limit=height) < height
