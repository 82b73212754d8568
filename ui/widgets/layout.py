"""The chat screen: the transcript above, the composer and its rows below, and where keys go.

    ┌──────────────────────────────────────────┐
    │ transcript (scrolls, follows the bottom) │
    │ …                                        │
    │ chooser   (while a Choose or Ask is open)│
    │ slash suggestions   (text starts with /) │
    │ ◆ open tasks        (a bot's, if any)    │
    │ ──────────────────────────────────────── │
    │ ❯ composer                               │
    │ ──────────────────────────────────────── │
    │ status row                               │
    └──────────────────────────────────────────┘

`ChatLayout.apply` draws one event from the actors; what the person does comes out as the four
inputs of `actors.events` through `on_input`, and the answer to a `Choose` (an index) or an `Ask`
(its answers) through `on_answer`. Both wait in one queue and show one at a time.
The layout never holds a channel: sending is the app's (ui.app), so no widget can block.

An approval's detail (the whole command, the diff) may be taller than the screen: the chooser is
given the rows the screen has left above the composer (keeping a few of the transcript), and
scrolls its detail within them. Once answered, the question, its detail and the answer stay in
the transcript, a record of exactly what was allowed.

Keys, in order: Ctrl+C interrupts, always (also over an open chooser, where it interrupts the
turn that asked). While a chooser is open every other key goes to it (PgUp/PgDn scroll its
detail, or the transcript when the detail fits). Otherwise Esc cancels the innermost scope,
PgUp/PgDn scroll the transcript, Ctrl+D on an empty composer leaves, and the rest goes to the
composer.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from functools import partial

import urwid

from actors.events import (Ask, Card, CancelInnermost, Choose, ComposerText, ErrorLine, Focus, Interrupt, JobsUpdate,
                           JobsView, Leave, Notice, OpenTasks, Panel, SlashCommands, Status, Submit, TextDelta,
                           ToolEnded, ToolStarted, TurnEnded, UserEcho)
from ui.widgets.chooser import Chooser
from ui.widgets.composer import Composer, SlashSuggestions
from ui.widgets.jobs import JobsBrowser
from ui.widgets.picker import FilterChooser
from ui.widgets.question import QuestionForm
from ui.widgets.status import StatusRow
from ui.widgets.tasks import OpenTasksRows
from ui.widgets.transcript import Transcript

PROMPT = "❯ "
# The transcript rows an open chooser leaves in view, however tall its detail.
TRANSCRIPT_ROWS_KEPT = 3


class ChatLayout(urwid.WidgetWrap):
    def __init__(self, *, home: str | None, clock: Callable[[], float],
                 on_input: Callable[[object], None],
                 on_answer: Callable[[Choose | Ask, object], None]):
        self._on_input = on_input
        self._on_answer = on_answer
        self.transcript = Transcript(home)
        self.suggestions = SlashSuggestions()
        self.composer = Composer(self._submit, self.suggestions)
        self._composer_row = urwid.Columns([(len(PROMPT), urwid.Text(("composer_mark", PROMPT))), self.composer],
                                           focus_column=1)
        self.status_row = StatusRow(clock)
        self.open_tasks = OpenTasksRows()
        self._choices: deque[Choose | Ask | JobsView] = deque()
        self._chooser: Chooser | QuestionForm | JobsBrowser | None = None
        self._last_sent = ""  # the message of the turn in progress, offered again if it fails
        self._rules = (urwid.AttrMap(urwid.Divider("─"), "rule"), urwid.AttrMap(urwid.Divider("─"), "rule"))
        self._bottom = urwid.Pile([])
        self._arrange_bottom()
        super().__init__(urwid.Frame(body=self.transcript, footer=self._bottom, focus_part="footer"))

    @property
    def chooser(self) -> Chooser | QuestionForm | JobsBrowser | None:
        return self._chooser

    def _arrange_bottom(self) -> None:
        rows: list[urwid.Widget] = []
        if self._chooser is not None:
            rows += [urwid.Divider(), self._chooser]
        if self.suggestions.showing:
            rows.append(self.suggestions)
        if self.open_tasks.showing:
            rows.append(self.open_tasks)
        rows += [self._rules[0], self._composer_row, self._rules[1], self.status_row]
        self._bottom.contents = [(row, self._bottom.options("pack")) for row in rows]
        self._bottom.focus_position = rows.index(self._chooser or self._composer_row)

    # ---- events from the actors ----------------------------------------------------------------

    def apply(self, event: object) -> None:
        match event:
            case Card():
                self.transcript.add_card(event)
            case UserEcho(text=text):
                self.transcript.add_user(text)
                self._last_sent = text
            case TextDelta(text=text):
                self.transcript.add_delta(text)
            case ToolStarted():
                self.transcript.add_tool_started(event)
            case ToolEnded():
                self.transcript.add_tool_ended(event)
            case Notice(text=text, warning=warning):
                self.transcript.add_notice(text, warning)
            case ErrorLine(text=text):
                self.transcript.add_error(text)
            case Panel():
                self.transcript.add_panel(event)
            case TurnEnded(interrupted=interrupted, failed=failed):
                self.transcript.end_turn(interrupted)
                self._withdraw_choices()
                if failed and self._last_sent:  # the message stays one Up away
                    self.composer.offer_again(self._last_sent)
                self._last_sent = ""  # a turn the person did not type (a bot's own) offers nothing
            case Status():
                self.status_row.show(event)
            case OpenTasks(rows=rows):
                self.open_tasks.show(rows)
                self._arrange_bottom()
            case Choose() | Ask() | JobsView():
                self._choices.append(event)
                self._show_next_choice()
            case JobsUpdate():
                self._update_jobs(event)
            case ComposerText(text=text):
                self.composer.set_edit_text(text)
                self.composer.set_edit_pos(len(text))
            case SlashCommands(commands=commands):
                self.suggestions.set_commands(commands)
                self.suggestions.follow(self.composer.edit_text)
                self._arrange_bottom()
            case _:
                raise TypeError(f"the chat screen has no way to draw {event!r}")

    def _show_next_choice(self) -> None:
        if self._chooser is None and self._choices:
            prompt = self._choices[0]
            answered = partial(self._answered, prompt)
            if isinstance(prompt, JobsView):
                self._chooser = JobsBrowser(prompt.jobs, answered)
            elif isinstance(prompt, Choose) and prompt.search:
                self._chooser = FilterChooser(prompt.title, prompt.options, prompt.search, answered)
            elif isinstance(prompt, Choose):
                self._chooser = Chooser(prompt.title, prompt.options, answered, prompt.detail)
            else:
                self._chooser = QuestionForm(prompt.questions, answered)
            self._arrange_bottom()

    def _update_jobs(self, update: JobsUpdate) -> None:
        """`/jobs` read again, or gone (its browser closes as if Esc were pressed)."""
        browser = self._chooser
        if isinstance(browser, JobsBrowser) and update.closed:
            browser.close()
        elif isinstance(browser, JobsBrowser):
            browser.update(update)
        elif update.closed:  # still waiting behind another prompt: it will never be answered
            self._choices = deque(prompt for prompt in self._choices if not isinstance(prompt, JobsView))

    def _answered(self, prompt: Choose | Ask | JobsView, answer: object) -> None:
        self._choices.popleft()
        self._chooser = None
        if isinstance(prompt, Choose) and prompt.detail:
            chosen = prompt.options[answer] if isinstance(answer, int) else "Esc"
            self.transcript.add_answered(prompt.title, prompt.detail, chosen)
        self._on_answer(prompt, answer)
        self._show_next_choice()
        self._arrange_bottom()

    def _withdraw_choices(self) -> None:
        """The turn that asked has ended (interrupted, most likely): its questions are moot.
        Each still gets None, as if Esc were pressed, so nothing waits on an answer forever."""
        if not self._choices:
            return
        self._chooser = None
        while self._choices:
            self._on_answer(self._choices.popleft(), None)
        self._arrange_bottom()

    def render(self, size: tuple[int, int], focus: bool = False) -> urwid.Canvas:
        if isinstance(self._chooser, (Chooser, JobsBrowser)):
            columns, rows = size
            below = sum(widget.rows((columns,)) for widget, _ in self._bottom.contents if widget is not self._chooser)
            self._chooser.limit_rows(max(0, rows - below - TRANSCRIPT_ROWS_KEPT))
        return super().render(size, focus)

    # ---- keys from the person ------------------------------------------------------------------

    def keypress(self, size: tuple[int, int], key: str) -> str | None:
        columns = size[0]
        if key in ("focus in", "focus out"):  # the terminal's focus reports: the host pings follow them
            self._on_input(Focus(key == "focus in"))
        elif key == "ctrl c":
            self._on_input(Interrupt())
        elif self._chooser is not None:
            if self._chooser.keypress((columns,), key) in ("page up", "page down"):
                self.transcript.scroller.scroll_page(-1 if key == "page up" else 1)
        elif key == "esc":
            self._on_input(CancelInnermost())
        elif key in ("page up", "page down"):
            self.transcript.scroller.scroll_page(-1 if key == "page up" else 1)
        elif key == "ctrl d" and not self.composer.edit_text:
            self._on_input(Leave(0))
        else:
            unhandled = self._composer_row.keypress((columns,), key)
            self._arrange_bottom()
            return unhandled
        return None

    def _submit(self, text: str) -> None:
        self.transcript.scroller.follow()
        self._on_input(Submit(text))
