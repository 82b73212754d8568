"""The chat screen: the transcript above, the composer and its rows below, and where keys go.

    ┌──────────────────────────────────────────┐
    │ transcript (scrolls, follows the bottom) │
    │ …                                        │
    │ chooser   (while a Choose or Ask is open)│
    │ queued messages (dim, while any wait)    │
    │ @ files    (the word at the cursor is @…)│
    │ slash suggestions   (text starts with /) │
    │ ◆ open tasks        (a bot's, if any)    │
    │ ──────────────────────────────────────── │
    │ ❯ composer                               │
    │ ──────────────────────────────────────── │
    │ status row (or a short-lived hint)       │
    └──────────────────────────────────────────┘

`ChatLayout.apply` draws one event from the actors; what the person does comes out as the
inputs of `actors.events` through `on_input`, and the answer to a `Choose` (an index) or an `Ask`
(its answers) through `on_answer`. Both wait in one queue and show one at a time, with the
screen's own questions (an unknown `/word`: send it as a message?).
The layout never holds a channel: sending is the app's (ui.app), so no widget can block.

An approval's detail (the whole command, the diff) may be taller than the screen: the chooser is
given the rows the screen has left above the composer (keeping a few of the transcript), and
scrolls its detail within them. Once answered, the question, its detail and the answer stay in
the transcript, a record of exactly what was allowed.

Keys, in order:
- a paste lands in the composer, whole (a chooser or not);
- Ctrl+C over an open chooser interrupts the turn that asked; with a draft in the composer it
  clears the draft (Up brings it back); otherwise it goes to the actors, which cancel what runs,
  drop a held queue, or leave on a second press;
- while a chooser is open it takes the keys it knows (PgUp/PgDn scroll its detail, or the
  transcript when the detail fits), and every other key goes to the composer;
- while the `@` list shows (ui.widgets.mentions), Up/Down move in it, Tab or Enter complete the
  `@word` to the chosen path (Enter sends when nothing matches), Esc hides it;
- Ctrl+O shows every tool output and summary in full, or their first lines again; Shift+Tab
  switches to the next permission mode (actors.modes);
- on an empty composer with messages queued, Up and Esc take the last one back to edit, and
  Enter sends a queue held after Ctrl+C;
- Esc cancels the innermost scope, PgUp/PgDn scroll the transcript, Ctrl+D on an empty
  composer leaves, and the rest goes to the composer.

Enter on `/stat` runs `/status` when no other command starts so; on a `/word` no command starts
it asks first whether to send it as a message.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import urwid

from actors.events import (Ask, CancelInnermost, Choose, ComposerText, CycleMode, Focus, Hint, Interrupt, JobsUpdate,
                           JobsView, Leave, ListFiles, LoadOlder, Older, OpenTasks, ProjectFiles, SendQueued,
                           SlashCommands, Status, Submit, TakeBackQueued, TakenBack, TurnEnded, UserEcho)
from actors.commands import command_and_argument
from ui.widgets.chooser import Chooser
from ui.widgets.composer import Composer, SlashSuggestions
from ui.widgets.jobs import JobsBrowser
from ui.widgets.mentions import MentionList
from ui.widgets.picker import FilterChooser
from ui.widgets.question import QuestionForm
from ui.widgets.queue import QueueView
from ui.widgets.status import StatusRow
from ui.widgets.tasks import OpenTasksRows
from ui.widgets.transcript import Transcript

PROMPT = "❯ "
# The transcript rows an open chooser leaves in view, however tall its detail.
TRANSCRIPT_ROWS_KEPT = 3
# What reads as a command's name: `/status`, `/new-thing`; `/usr/bin/env …` is a message.
COMMAND_WORD = re.compile(r"/[A-Za-z][\w-]*")
SEND_AS_MESSAGE = ("Send it as a message", "Edit it")


@dataclass(frozen=True)
class LocalChoice:
    """A question of the screen's own, answered here rather than by an actor."""

    title: str
    options: tuple[str, ...]
    on_answer: Callable[[int | None], None]
    detail: str = ""


class ChatLayout(urwid.WidgetWrap):
    def __init__(self, *, home: str | None, clock: Callable[[], float],
                 on_input: Callable[[object], None],
                 on_answer: Callable[[Choose | Ask, object], None]):
        self._on_input = on_input
        self._on_answer = on_answer
        self.transcript = Transcript(home)
        self.suggestions = SlashSuggestions()
        self.composer = Composer(self._submit, self.suggestions)
        self.mentions = MentionList()
        self._files_stale = True  # the `@` list's files are asked for again after each message sent
        self._composer_row = urwid.Columns([(len(PROMPT), urwid.Text(("composer_mark", PROMPT))), self.composer],
                                           focus_column=1)
        self.queue = QueueView()
        self.status_row = StatusRow(clock)
        self.open_tasks = OpenTasksRows()
        self._choices: deque[Choose | Ask | JobsView | LocalChoice] = deque()
        self._chooser: Chooser | QuestionForm | JobsBrowser | None = None
        self._last_sent = ""  # the message of the turn in progress, offered again if it fails
        self._rules = (urwid.AttrMap(urwid.Divider("─"), "rule"), urwid.AttrMap(urwid.Divider("─"), "rule"))
        self._bottom = urwid.Pile([])
        self._arrange_bottom()
        self._size = (80, 24)  # the last size drawn at
        super().__init__(urwid.Frame(body=self.transcript, footer=self._bottom, focus_part="footer"))

    @property
    def chooser(self) -> Chooser | QuestionForm | JobsBrowser | None:
        return self._chooser

    def _arrange_bottom(self) -> None:
        rows: list[urwid.Widget] = []
        if self._chooser is not None:
            rows += [urwid.Divider(), self._chooser]
        if self.queue.showing:
            rows.append(self.queue)
        if self.mentions.showing:
            rows.append(self.mentions)
        if self.suggestions.showing:
            rows.append(self.suggestions)
        if self.open_tasks.showing:
            rows.append(self.open_tasks)
        rows += [self._rules[0], self._composer_row, self._rules[1], self.status_row]
        self._bottom.contents = [(row, self._bottom.options("pack")) for row in rows]
        self._bottom.focus_position = rows.index(self._chooser or self._composer_row)

    # ---- events from the actors ----------------------------------------------------------------

    def apply(self, event: object) -> None:
        if self.transcript.apply(event):
            if isinstance(event, UserEcho):
                self._last_sent = event.text
            elif isinstance(event, TurnEnded):
                self._withdraw_choices()
                if event.failed and self._last_sent:  # the message stays one Up away
                    self.composer.offer_again(self._last_sent)
                self._last_sent = ""  # a turn the person did not type (a bot's own) offers nothing
            return
        match event:
            case Status():
                self.status_row.show(event)
                if self.queue.show(event):
                    self._arrange_bottom()
            case Hint(text=text):
                self.status_row.show_hint(text)
            case OpenTasks(rows=rows):
                self.open_tasks.show(rows)
                self._arrange_bottom()
            case TakenBack(text=text):
                self.composer.set_draft(text)
                self._arrange_bottom()
            case Older(events=events, more=more):
                self.transcript.add_older(events, more)
                if events and events[-1] == TurnEnded(failed=True):  # a resumed round that got no reply
                    sent = [event.text for event in events if isinstance(event, UserEcho)]
                    if sent:
                        self.composer.offer_again(sent[-1])
            case Choose() | Ask() | JobsView():
                self._ask(event)
            case JobsUpdate():
                self._update_jobs(event)
            case ComposerText(text=text):
                self.composer.set_draft(text)
                self._arrange_bottom()
            case ProjectFiles(paths=paths):
                self.mentions.set_files(paths)
                self._arrange_bottom()
            case SlashCommands(commands=commands):
                self.suggestions.set_commands(commands)
                self.suggestions.follow(self.composer.edit_text)
                self._arrange_bottom()
            case _:
                raise TypeError(f"the chat screen has no way to draw {event!r}")

    def _ask(self, prompt: Choose | Ask | LocalChoice) -> None:
        self._choices.append(prompt)
        self._show_next_choice()

    def _show_next_choice(self) -> None:
        if self._chooser is None and self._choices:
            prompt = self._choices[0]
            answered = partial(self._answered, prompt)
            if isinstance(prompt, JobsView):
                self._chooser = JobsBrowser(prompt.jobs, answered)
            elif isinstance(prompt, Choose) and prompt.search:
                self._chooser = FilterChooser(prompt.title, prompt.options, prompt.search, answered)
            elif isinstance(prompt, Ask):
                self._chooser = QuestionForm(prompt.questions, answered)
            else:
                line = prompt.line if isinstance(prompt, Choose) else None
                self._chooser = Chooser(prompt.title, prompt.options, answered, prompt.detail, line=line)
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

    def _answered(self, prompt: Choose | Ask | JobsView | LocalChoice, answer: object) -> None:
        self._choices.popleft()
        self._chooser = None
        if isinstance(prompt, Choose) and prompt.detail:
            chosen = (prompt.options[answer] if isinstance(answer, int) else
                      f"{prompt.options[answer[0]]}: {answer[1]}" if isinstance(answer, tuple) else "Esc")
            self.transcript.add_answered(prompt.title, prompt.detail, chosen)
        if isinstance(prompt, LocalChoice):
            prompt.on_answer(answer)
        else:
            self._on_answer(prompt, answer)
        self._show_next_choice()
        self._arrange_bottom()

    def _withdraw_choices(self) -> None:
        """The turn that asked has ended (interrupted, most likely): its questions are moot.
        Each still gets None, as if Esc were pressed, so nothing waits on an answer forever.
        The screen's own questions stay."""
        moot = [prompt for prompt in self._choices if not isinstance(prompt, LocalChoice)]
        if not moot:
            return
        if self._choices[0] in moot:
            self._chooser = None
        self._choices = deque(prompt for prompt in self._choices if isinstance(prompt, LocalChoice))
        for prompt in moot:
            self._on_answer(prompt, None)
        self._show_next_choice()
        self._arrange_bottom()

    def last_transcript_rows(self) -> list[str]:
        """The transcript's bottom as the screen last showed it, as plain rows of text."""
        columns, rows = self._size
        transcript_rows = max(1, rows - self._bottom.rows((columns,)))
        self.transcript.scroller.follow()
        canvas = self.transcript.render((columns, transcript_rows))
        return [row.decode("utf-8", errors="replace") for row in canvas.text]

    def render(self, size: tuple[int, int], focus: bool = False) -> urwid.Canvas:
        columns, rows = size
        self._size = size
        if isinstance(self._chooser, (Chooser, JobsBrowser)):
            below = sum(widget.rows((columns,)) for widget, _ in self._bottom.contents if widget is not self._chooser)
            self._chooser.limit_rows(max(0, rows - below - TRANSCRIPT_ROWS_KEPT))
        canvas = super().render(size, focus)
        transcript_rows = max(1, rows - self._bottom.rows((columns,)))
        if self.transcript.wants_older((columns, transcript_rows)):
            self.transcript.older_requested = True
            self._on_input(LoadOlder())
        return canvas

    # ---- keys from the person ------------------------------------------------------------------

    def keypress(self, size: tuple[int, int], key: str) -> str | None:
        columns = size[0]
        empty = not self.composer.edit_text
        queued = self.queue
        if key in ("focus in", "focus out"):  # the terminal's focus reports: the host pings follow them
            self._on_input(Focus(key == "focus in"))
        elif key == "paste":
            self.composer.paste(key.text)
            self._follow_mentions()
            self._arrange_bottom()
        elif key == "ctrl c":
            self._ctrl_c()
        elif self._chooser is not None:
            unhandled = self._chooser.keypress((columns,), key)
            if unhandled in ("page up", "page down"):
                self.transcript.scroller.scroll_page(-1 if key == "page up" else 1)
            elif unhandled:
                return self._to_composer(columns, unhandled)
        elif self.mentions.showing and key in ("tab", "enter", "up", "down", "esc") and self._mention_key(key):
            self._arrange_bottom()
        elif key == "ctrl o":
            self.transcript.toggle_expanded()
        elif key == "shift tab":
            self._on_input(CycleMode())
        elif key in ("up", "esc") and empty and queued.messages:
            self._on_input(TakeBackQueued())
        elif key == "enter" and empty and queued.held:
            self._on_input(SendQueued())
        elif key == "esc":
            self._on_input(CancelInnermost())
        elif key in ("page up", "page down"):
            self.transcript.scroller.scroll_page(-1 if key == "page up" else 1)
        elif key == "ctrl d" and empty:
            self._on_input(Leave(0))
        else:
            return self._to_composer(columns, key)
        return None

    def _to_composer(self, columns: int, key: str) -> str | None:
        unhandled = self._composer_row.keypress((columns,), key)
        self._follow_mentions()
        self._arrange_bottom()
        return unhandled

    def _follow_mentions(self) -> None:
        """The `@` list follows the word at the cursor; the files are asked for when it opens."""
        self.mentions.follow(self.composer.edit_text, self.composer.edit_pos)
        if self.mentions.showing and self._files_stale:
            self._files_stale = False
            self._on_input(ListFiles())

    def _mention_key(self, key: str) -> bool:
        """A key for the open `@` list; False leaves it to the rest (Enter with no match sends)."""
        if key in ("up", "down"):
            self.mentions.move(-1 if key == "up" else 1)
        elif key == "esc":
            self.mentions.hide()
        else:
            completed = self.mentions.completion(self.composer.edit_text)
            if completed is None:
                return key == "tab"
            text, cursor = completed
            self.composer.set_edit_text(text)
            self.composer.set_edit_pos(cursor)
            self._follow_mentions()
        return True

    def _ctrl_c(self) -> None:
        if isinstance(self._chooser, Chooser) and isinstance(self._choices[0], LocalChoice):
            self._chooser.keypress((1,), "esc")  # the screen's own question: Ctrl+C puts it away
        elif self._chooser is not None or not self.composer.edit_text:
            self._on_input(Interrupt())
        else:
            self.composer.clear_draft()
            self._arrange_bottom()

    def _submit(self, text: str) -> bool:
        """Enter on the composer's text. False keeps the text there: it was not sent (yet)."""
        word, rest = command_and_argument(text)
        if COMMAND_WORD.fullmatch(word):
            matches = self.suggestions.matching(word)
            if len(matches) > 1:
                return False  # the suggestion row shows them: Tab picks one
            if not matches:
                self._ask(LocalChoice(f"{word} is not a command — send it as a message?", SEND_AS_MESSAGE,
                                      partial(self._send_as_message, text)))
                return False
            text = f"{matches[0]} {rest}".rstrip() if matches[0] != word else text
        self._send(text)
        return True

    def _send(self, text: str) -> None:
        self._files_stale = True
        self.transcript.scroller.follow()
        self._on_input(Submit(text))

    def _send_as_message(self, text: str, answer: int | None) -> None:
        """Send: it goes as a message. Edit it: it stays to be changed. Esc: the person let it go,
        so it goes from the composer too — else the next command typed is appended to it."""
        if answer == 0:
            self.composer.set_draft("")
            self._send(text)
        elif answer is None:
            self.composer.set_draft("")
            self._arrange_bottom()
