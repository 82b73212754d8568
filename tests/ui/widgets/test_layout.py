"""The chat screen's layout (ui.widgets.layout.ChatLayout), tested through a `Screen` that types
keys into it and records what it sends: the composer and its keys, the questions it shows, and
the events it draws into the transcript and the status row.
"""

from __future__ import annotations

import pytest
import trio

from actors.events import (Card, CancelInnermost, Choose, ErrorLine, Interrupt, Leave, Notice, SlashCommands, Status,
                           Submit, TextDelta, TurnEnded, UserEcho)
from ui.widgets.layout import ChatLayout
from tests.ui.widgets.test_widgets import APPROVAL, OPTIONS, rendered


# ---- the layout: composer, keys, events --------------------------------------------------------

class Screen:
    """A ChatLayout with what it sent recorded."""

    def __init__(self) -> None:
        self.inputs: list[object] = []
        self.answers: list[tuple[Choose, int | None]] = []
        self.layout = ChatLayout(home="/home/me", clock=lambda: 0.0, on_input=self.inputs.append,
                                 on_answer=lambda choose, index: self.answers.append((choose, index)))

    def keys(self, *keys: str) -> None:
        for key in keys:
            self.layout.keypress((60, 20), key)

    def type(self, text: str) -> None:
        self.keys(*text)

    @property
    def composer_text(self) -> str:
        return self.layout.composer.edit_text

    def bottom(self, rows: int) -> list[str]:
        return rendered(self.layout, 60, 20)[-rows:]


def test_enter_sends_the_text_and_empty_text_sends_nothing():
    screen = Screen()
    screen.keys("enter", " ", "enter")
    assert screen.inputs == []
    screen.type("hello")
    screen.keys("enter")
    assert screen.inputs == [Submit(" hello")]
    assert screen.composer_text == ""


def test_ctrl_j_and_the_modified_enters_insert_a_newline_and_a_paste_keeps_its_newlines():
    screen = Screen()
    screen.type("one")
    screen.keys("ctrl j")
    screen.type("two")
    screen.keys("meta enter", "shift enter")
    screen.keys("begin paste", *"three", "enter", *"four", "end paste")
    assert screen.inputs == []
    assert screen.bottom(8)[:6] == ["─" * 60, "❯ one", "  two", "", "  three", "  four"]
    screen.keys("enter")
    assert screen.inputs == [Submit("one\ntwo\n\nthree\nfour")]


def test_enter_on_a_unique_command_start_runs_it_whatever_space_follows_it():
    """`/stat` then a new line is the word `/stat`, as the command line reads it (any whitespace
    ends a command's name), so Enter runs `/status`."""
    screen = Screen()
    screen.layout.apply(SlashCommands((("/session", "Resume or delete"), ("/status", "Show the status"))))
    screen.type("/stat")
    screen.keys("ctrl j")
    screen.type("verbose")
    screen.keys("enter")
    assert screen.inputs == [Submit("/status verbose")]


def test_tab_completes_a_slash_command_from_the_suggestion_row_cycling_through_the_matches():
    screen = Screen()
    screen.layout.apply(SlashCommands((("save", "Save this session"), ("/session", "Resume or delete"),
                                       ("/status", "Show the status"), ("/model", "Pick the model"))))
    screen.type("/s")
    assert screen.bottom(5)[0] == "/save  /session  /status   Save this session"
    screen.keys("tab")
    assert screen.composer_text == "/save"
    screen.keys("tab", "tab")
    assert screen.composer_text == "/status"
    assert screen.bottom(5)[0] == "/save  /session  /status   Show the status"
    screen.keys("tab")
    assert screen.composer_text == "/save"
    screen.type(" now")
    assert screen.bottom(4)[0] == "─" * 60  # the row goes once the command has arguments


def test_up_and_down_recall_what_was_sent():
    screen = Screen()
    for text in ("first", "second"):
        screen.type(text)
        screen.keys("enter")
    screen.keys("up")
    assert screen.composer_text == "second"
    screen.keys("up", "up")
    assert screen.composer_text == "first"
    screen.keys("down")
    assert screen.composer_text == "second"
    screen.keys("down")
    assert screen.composer_text == ""


def test_the_message_of_a_failed_turn_is_the_first_thing_up_recalls():
    """A failed turn's message stays one Up away, also when more was typed while it ran (and
    after a restart, where the resumed round that got no reply ends as failed)."""
    screen = Screen()
    for text in ("fix the test", "and the docs"):
        screen.type(text)
        screen.keys("enter")
    screen.layout.apply(UserEcho("fix the test"))
    screen.layout.apply(TurnEnded(failed=True))
    screen.keys("up")
    assert screen.composer_text == "fix the test"
    screen.keys("up")
    assert screen.composer_text == "and the docs"
    resumed = Screen()
    resumed.layout.apply(UserEcho("from the last run"))
    resumed.layout.apply(TurnEnded(failed=True))
    resumed.keys("up")
    assert resumed.composer_text == "from the last run"


def test_the_line_editing_keys():
    screen = Screen()
    screen.type("git commit -m")
    screen.keys("ctrl w")
    assert screen.composer_text == "git commit "
    screen.keys("ctrl a", "ctrl d", "ctrl k")
    assert screen.composer_text == ""
    screen.type("abc")
    screen.keys("left", "ctrl u")
    assert screen.composer_text == "c"


def test_ctrl_c_clears_a_draft_then_interrupts_esc_cancels_the_innermost_and_ctrl_d_on_an_empty_composer_leaves():
    screen = Screen()
    screen.type("draft")
    screen.keys("ctrl c")
    assert screen.inputs == [] and screen.composer_text == ""  # the draft goes, the chat stays
    screen.keys("up")
    assert screen.composer_text == "draft"  # and Up brings it back
    screen.keys("esc", "ctrl d")
    assert screen.inputs == [CancelInnermost()]
    screen.keys("ctrl a", *["ctrl d"] * 5)
    screen.keys("ctrl c", "ctrl d")
    assert screen.inputs[-2:] == [Interrupt(), Leave(0)]


async def test_while_a_choice_shows_keys_go_to_it_and_its_answer_goes_back_with_the_question():
    reply, _ = trio.open_memory_channel[int | None](1)
    screen = Screen()
    question = Choose(APPROVAL, OPTIONS, reply)
    screen.layout.apply(question)
    assert screen.bottom(9)[:5] == ["", APPROVAL, "❯ 1. Allow once", "  2. Allow for this session", "  3. Deny"]
    screen.keys("x", "down", "ctrl c", "enter")
    assert screen.answers == [(question, 1)]
    assert screen.inputs == [Interrupt()]
    assert screen.composer_text == "x"  # a key the chooser does not take is typed, not swallowed
    assert screen.layout.chooser is None


async def test_esc_answers_a_choice_none_and_the_next_question_waits_its_turn():
    reply, _ = trio.open_memory_channel[int | None](2)
    screen = Screen()
    first, second = Choose("first?", ("yes", "no"), reply), Choose("second?", ("yes", "no"), reply)
    screen.layout.apply(first)
    screen.layout.apply(second)
    screen.keys("esc")
    assert screen.answers == [(first, None)] and screen.inputs == []
    assert "second?" in screen.bottom(8)


async def test_a_turn_that_ends_withdraws_its_open_question_with_none():
    reply, _ = trio.open_memory_channel[int | None](1)
    screen = Screen()
    question = Choose(APPROVAL, OPTIONS, reply)
    screen.layout.apply(question)
    screen.layout.apply(TurnEnded(interrupted=True))
    assert screen.answers == [(question, None)]
    assert screen.layout.chooser is None


def test_events_land_in_the_transcript_and_the_status_row():
    screen = Screen()
    for event in (Card(version="0.1.0", mode="chat", session="not saved", host=None, directory="/home/me/app"),
                  UserEcho("hi"), TextDelta("hello"), TurnEnded(), Notice("MEMORY.md reloaded"),
                  ErrorLine("boom"), Status(model="m", context_used=100, context_window=1000)):
        screen.layout.apply(event)
    shown = rendered(screen.layout, 60, 20)
    assert shown[:5] == ["╭───────────────────────────────────╮", "│ ι> iota  v0.1.0                   │",
                         "│ chat · not saved · /save keeps it │", "│ ~/app                             │",
                         "╰───────────────────────────────────╯"]
    assert shown[6:14] == ["❯ hi", "", "hello", "", "MEMORY.md reloaded", "", "boom", ""]
    assert shown[-1] == "m · 100 / 1k (10%)"


def test_page_up_scrolls_the_transcript_and_sending_follows_the_bottom_again():
    screen = Screen()
    screen.layout.apply(TextDelta("\n".join(f"line {n}" for n in range(1, 41))))
    rendered(screen.layout, 60, 20)
    screen.keys("page up")
    assert not screen.layout.transcript.scroller.following
    screen.type("x")
    screen.keys("enter")
    assert screen.layout.transcript.scroller.following


def test_an_event_the_screen_cannot_draw_is_an_error():
    with pytest.raises(TypeError):
        Screen().layout.apply(object())


def test_focus_reports_become_focus_inputs():
    from actors.events import Focus
    from ui.widgets.layout import ChatLayout

    sent = []
    layout = ChatLayout(home="/home/x", clock=lambda: 0.0, on_input=sent.append, on_answer=lambda c, i: None)
    layout.keypress((80, 24), "focus out")
    layout.keypress((80, 24), "focus in")
    assert sent == [Focus(False), Focus(True)]
