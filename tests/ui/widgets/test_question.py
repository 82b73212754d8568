"""The model's questions on screen: rendered row by row, answered with the keys a person presses."""

from __future__ import annotations

import trio
import urwid

from actors.events import Ask, Choose, Interrupt, TurnEnded
from iota.tools.ask import Answer, Question
from ui.widgets.layout import ChatLayout
from ui.widgets.question import QuestionForm

DATABASE = Question("Which database?", ("PostgreSQL", "SQLite"))
CHECKS = Question("Which checks?", ("lint", "tests", "bench"), multi=True)
CONFIRM = Question("Overwrite notes.md?", ("Yes", "No"), other=False)


def rendered(widget: urwid.Widget, cols: int = 60) -> list[str]:
    return [line.decode().rstrip() for line in widget.render((cols,), True).text]


class Form:
    """A QuestionForm and what it answered."""

    def __init__(self, *questions: Question):
        self.answers: list[tuple[Answer, ...] | None] = []
        self.widget = QuestionForm(questions, self.answers.append)

    def keys(self, *keys: str) -> None:
        for key in keys:
            self.widget.keypress((60,), key)

    @property
    def screen(self) -> list[str]:
        return rendered(self.widget)


# ---- single select -----------------------------------------------------------------------------

def test_a_single_select_lists_its_options_and_other_and_answers_the_row_on_enter():
    form = Form(DATABASE)
    assert form.screen == ["Which database?", "❯ 1. PostgreSQL", "  2. SQLite", "  3. Other…"]
    form.keys("down")
    assert form.screen[1:] == ["  1. PostgreSQL", "❯ 2. SQLite", "  3. Other…"]
    form.keys("enter", "enter")
    assert form.answers == [(Answer(("SQLite",)),)]


def test_a_digit_answers_its_row_at_once():
    form = Form(DATABASE)
    form.keys("1")
    assert form.answers == [(Answer(("PostgreSQL",)),)]


def test_a_yes_or_no_has_no_other_row():
    form = Form(CONFIRM)
    assert form.screen == ["Overwrite notes.md?", "❯ 1. Yes", "  2. No"]
    form.keys("down", "down", "enter")  # the cursor wraps around
    assert form.answers == [(Answer(("Yes",)),)]


def test_esc_declines_and_keys_after_the_answer_change_nothing():
    form = Form(DATABASE)
    form.keys("esc", "enter", "1")
    assert form.answers == [None]


# ---- multi select ------------------------------------------------------------------------------

def test_space_ticks_rows_of_a_multi_select_and_enter_confirms_them_in_listed_order():
    form = Form(CHECKS)
    assert form.screen == ["Which checks?  Space selects · Enter confirms",
                           "❯ 1. [ ] lint", "  2. [ ] tests", "  3. [ ] bench", "  4. [ ] Other…"]
    form.keys("down", "down", " ", "up", "up", " ", " ", " ")
    assert form.screen[1:4] == ["❯ 1. [x] lint", "  2. [ ] tests", "  3. [x] bench"]
    form.keys("2", "2", "2")  # a digit ticks its row too, and moves the cursor there
    assert form.screen[2] == "❯ 2. [x] tests"
    assert form.answers == []
    form.keys("enter")
    assert form.answers == [(Answer(("lint", "tests", "bench")),)]


def test_enter_on_a_multi_select_with_nothing_ticked_takes_the_selected_row():
    form = Form(CHECKS)
    form.keys("down", "enter")
    assert form.answers == [(Answer(("tests",)),)]


# ---- Other… ------------------------------------------------------------------------------------

def test_other_opens_a_line_to_type_in_and_enter_answers_with_the_text():
    form = Form(DATABASE)
    form.keys("down", "down", "enter")
    assert form.screen == ["Which database?", "  1. PostgreSQL", "  2. SQLite", "❯ 3. Other:"]
    form.keys(*"DuckDB 1", "backspace", "backspace")
    assert form.screen[-1] == "❯ 3. Other: DuckDB"
    canvas = form.widget.render((60,), True)
    assert canvas.cursor == (len("❯ 3. Other: DuckDB"), 3)  # the terminal's cursor sits on the line
    form.keys("enter")
    assert form.answers == [(Answer(typed="DuckDB"),)]


def test_esc_on_the_line_goes_back_to_the_rows_keeping_the_text_and_a_second_esc_declines():
    form = Form(DATABASE)
    form.keys("3", *"Duck", "esc")
    assert form.screen[-1] == "❯ 3. Other…" and form.answers == []
    form.keys("enter")
    assert form.screen[-1] == "❯ 3. Other: Duck"
    form.keys("esc", "esc")
    assert form.answers == [None]


def test_an_empty_line_answers_nothing_and_up_leaves_the_line_for_the_rows():
    form = Form(DATABASE)
    form.keys("3", " ", "enter")
    assert form.answers == [] and form.screen[-1] == "❯ 3. Other…"
    form.keys("enter", "up")
    assert form.screen[1:] == ["  1. PostgreSQL", "❯ 2. SQLite", "  3. Other…"]
    form.keys("enter")
    assert form.answers == [(Answer(("SQLite",)),)]


def test_a_multi_select_answer_can_tick_rows_and_type_one_more():
    form = Form(CHECKS)
    form.keys(" ", "4")  # tick lint, then open the Other line
    assert form.screen[-1] == "❯ 4. Other:"
    form.keys(*"type checks", "enter")
    assert form.answers == [(Answer(("lint",), typed="type checks"),)]


def test_digits_and_space_on_the_line_are_text():
    form = Form(CHECKS)
    form.keys("down", "down", "down", " ", *"2 more", "enter")
    assert form.answers == [(Answer(typed="2 more"),)]


# ---- several questions -------------------------------------------------------------------------

def test_several_questions_are_asked_one_after_another_numbered_and_answered_together():
    form = Form(DATABASE, CHECKS)
    assert form.screen[0] == "(1/2) Which database?"
    form.keys("enter")
    assert form.answers == []
    assert form.screen[0] == "(2/2) Which checks?  Space selects · Enter confirms"
    form.keys(" ", "down", " ", "enter")
    assert form.answers == [(Answer(("PostgreSQL",)), Answer(("lint", "tests")))]


def test_esc_on_a_later_question_declines_them_all():
    form = Form(DATABASE, CHECKS)
    form.keys("enter", "esc")
    assert form.answers == [None]


# ---- in the chat screen ------------------------------------------------------------------------

class Screen:
    def __init__(self) -> None:
        self.inputs: list[object] = []
        self.answers: list[tuple[object, object]] = []
        self.layout = ChatLayout(home="/home/me", clock=lambda: 0.0, on_input=self.inputs.append,
                                 on_answer=lambda prompt, answer: self.answers.append((prompt, answer)))

    def keys(self, *keys: str) -> None:
        for key in keys:
            self.layout.keypress((60, 20), key)

    def bottom(self, rows: int) -> list[str]:
        return [line.decode().rstrip() for line in self.layout.render((60, 20), True).text][-rows:]


async def test_an_ask_shows_above_the_composer_takes_the_keys_and_its_answers_go_back_with_it():
    reply, _ = trio.open_memory_channel(1)
    screen = Screen()
    ask = Ask((DATABASE,), reply)
    screen.layout.apply(ask)
    assert screen.bottom(9)[:5] == ["", "Which database?", "❯ 1. PostgreSQL", "  2. SQLite", "  3. Other…"]
    screen.keys("3", *"hello", "ctrl c", "enter")
    assert screen.answers == [(ask, (Answer(typed="hello"),))]
    assert screen.inputs == [Interrupt()]                 # Ctrl+C still reaches the chat
    assert screen.layout.composer.edit_text == ""         # the typing went to the question
    assert screen.layout.chooser is None


async def test_questions_and_selects_wait_their_turn_and_an_ended_turn_withdraws_them():
    reply, _ = trio.open_memory_channel(3)
    screen = Screen()
    first, second = Ask((CONFIRM,), reply), Choose("allow?", ("Allow once", "Deny"), reply)
    third = Ask((DATABASE,), reply)
    for prompt in (first, second, third):
        screen.layout.apply(prompt)
    screen.keys("enter")
    assert screen.answers == [(first, (Answer(("Yes",)),))]
    assert "allow?" in screen.bottom(8)
    screen.layout.apply(TurnEnded(interrupted=True))
    assert screen.answers[1:] == [(second, None), (third, None)]
    assert screen.layout.chooser is None
