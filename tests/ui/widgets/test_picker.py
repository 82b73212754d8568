"""The session picker (ui.widgets.picker): a long list narrowed by typing, drawn a window at a time."""

from __future__ import annotations

import trio

from actors.events import Choose
from tests.ui.widgets.test_layout import Screen
from tests.ui.widgets.test_widgets import rendered
from ui.widgets.picker import FilterChooser

TITLES = ["Fix the parser", "├─ Try the regex way", "└─ Keep it by hand", "Kitchen shelves", "Parser benchmarks"]
SEARCH = ["Fix the parser aaaa", "Try the regex way bbbb", "Keep it by hand cccc", "Kitchen shelves dddd",
          "Parser benchmarks eeee"]


def picker(answers: list, titles=TITLES, search=SEARCH) -> FilterChooser:
    return FilterChooser("Resume which session?", titles, search, answers.append)


def test_typing_narrows_the_list_and_enter_answers_the_index_in_the_whole_list():
    answers: list = []
    chooser = picker(answers)
    for key in "PARSER":
        assert chooser.keypress((60,), key) is None
    assert rendered(chooser, 60) == ["Resume which session?", "⌕ PARSER▏  2 of 5", "❯ Fix the parser",
                                     "  Parser benchmarks"]
    chooser.keypress((60,), "down")
    chooser.keypress((60,), "enter")
    assert answers == [4]


def test_every_word_must_match_and_an_id_matches_too():
    chooser = picker([])
    for key in "regex way":
        chooser.keypress((60,), key)
    assert chooser.shown == [1]
    chooser.keypress((60,), "esc")
    for key in "dddd":
        chooser.keypress((60,), key)
    assert chooser.shown == [3]


def test_esc_clears_the_filter_first_then_cancels():
    answers: list = []
    chooser = picker(answers)
    for key in "zzz":
        chooser.keypress((60,), key)
    assert rendered(chooser, 60)[2] == "  nothing matches; Backspace or Esc to widen"
    chooser.keypress((60,), "enter")  # nothing to pick
    chooser.keypress((60,), "backspace")
    assert chooser.query == "zz"
    chooser.keypress((60,), "esc")
    assert (chooser.query, len(chooser.shown), answers) == ("", 5, [])
    chooser.keypress((60,), "esc")
    assert answers == [None]


def test_a_long_list_draws_only_the_rows_the_screen_gives_it_and_follows_the_selection():
    titles = [f"Session {n}" for n in range(300)]
    chooser = picker([], titles, titles)
    chooser.limit_rows(8)
    shown = rendered(chooser, 60)
    assert len(shown) == 8 and shown[2:7] == ["❯ Session 0", "  Session 1", "  Session 2", "  Session 3", "  Session 4"]
    assert shown[7] == "  … 295 below"
    chooser.keypress((60,), "page down")
    chooser.keypress((60,), "down")
    shown = rendered(chooser, 60)
    assert "❯ Session 6" in shown and shown[-1] == "  … 2 above, 293 below"
    chooser.keypress((60,), "end")
    assert rendered(chooser, 60)[-2:] == ["❯ Session 299", "  … 295 above"]


def test_digits_are_typed_not_picked_and_rows_are_drawn_escaped():
    answers: list = []
    chooser = picker(answers, ["Session 1", "Session 2 \x1b[2J"], ["Session 1", "Session 2"])
    chooser.keypress((60,), "2")
    assert answers == [] and chooser.shown == [1]
    assert rendered(chooser, 60)[2] == "❯ Session 2 \\x1b[2J"


async def test_a_choose_with_search_texts_opens_the_picker_in_the_chat_screen():
    reply, _ = trio.open_memory_channel[int | None](1)
    screen = Screen()
    question = Choose("Resume which session?", tuple(TITLES), reply, search=tuple(SEARCH))
    screen.layout.apply(question)
    assert isinstance(screen.layout.chooser, FilterChooser)
    screen.type("kitchen")
    screen.keys("enter")
    assert screen.answers == [(question, 3)]
    assert screen.composer_text == ""


def test_a_row_wider_than_the_screen_is_cut_not_wrapped():
    chooser = picker([], ["x" * 100, "short"], ["a", "b"])
    assert rendered(chooser, 40)[2:] == ["❯ " + "x" * 37 + "…", "  short"]
