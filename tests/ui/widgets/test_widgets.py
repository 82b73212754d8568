"""The chat screen's widgets, tested by rendering them: what a person would see, row by row.

The layout that holds them (ChatLayout, keys and events) is tested in test_layout.py; `rendered`,
`attributes_of` and the approval question here are shared with the other widget tests.
"""

from __future__ import annotations

import pytest
import urwid

from actors.events import Card, Panel, Status, ToolEnded, ToolStarted
from ui import theme
from ui.widgets.card import CardWidget, card_lines, text_of, truncate_middle
from ui.widgets.chooser import Chooser
from ui.widgets.scroll import Scroller
from iota.text import format_elapsed, format_size
from ui.widgets.status import StatusRow, status_text
from ui.widgets.transcript import Transcript

ID = "01hq3z8a9b2c"
LONG = "/Volumes/build/agents/workspaces/2026-09/a-project-with-a-very-long-name/packages/cli"
APPROVAL = "write_file notes.md wants to modify files — allow?"
OPTIONS = ("Allow once", "Allow for this session", "Deny")


def rendered(widget: urwid.Widget, cols: int, rows: int | None = None) -> list[str]:
    canvas = widget.render((cols,) if rows is None else (cols, rows), False)
    return [line.decode().rstrip() for line in canvas.text]


def attributes_of(widget: urwid.Widget, cols: int, rows: int | None = None) -> list[list[tuple[str | None, str]]]:
    """Each row as (attribute, text) runs."""
    canvas = widget.render((cols,) if rows is None else (cols, rows), False)
    return [[(attribute, text.decode()) for attribute, _, text in row] for row in canvas.content()]


def card(**changes) -> Card:
    fields = dict(version="0.1.0", mode="chat", session=f"session {ID}", host=None, directory="/srv/app")
    return Card(**{**fields, **changes})


def plain(lines) -> list[str]:
    return [text_of(line) for line in lines]


# ---- the start-up card -------------------------------------------------------------------------

def test_the_card_frames_the_mark_the_mode_and_the_directory():
    assert plain(card_lines(card(), 80, None)) == [
        "╭─────────────────────────────╮",
        "│ ι> iota  v0.1.0             │",
        f"│ chat · session {ID} │",
        "│ /srv/app                    │",
        "╰─────────────────────────────╯",
    ]


def test_the_card_styles_the_mark_cyan_the_version_the_frame_and_the_dots_dim():
    top, mark_row, mode_row, _, _ = card_lines(card(mode="agent", session="not saved", host="herdr"), 80, None)
    assert top == [("dim", "╭" + "─" * 47 + "╮")]  # the mode row is 45 columns
    assert mark_row[:5] == [("dim", "│"), (None, " "), ("mark", "ι> iota"), (None, "  "), ("dim", "v0.1.0")]
    assert mode_row[2:-2] == [("mode_agent", "agent"), ("dim", " · "), (None, "not saved"), ("dim", " · "),
                              (None, "/save keeps it"), ("dim", " · "), (None, "in herdr")]


@pytest.mark.parametrize(("changes", "row"), [
    ({}, f"chat · session {ID}"),
    ({"session": f"resumed {ID}"}, f"chat · resumed {ID}"),
    ({"mode": "agent", "session": "not saved"}, "agent · not saved · /save keeps it"),
    ({"mode": "bot", "host": "cmux"}, f"bot · session {ID} · in cmux"),
])
def test_the_mode_row(changes, row):
    assert plain(card_lines(card(**changes), 80, None))[2] == f"│ {row} │"


def test_below_the_widest_uncut_row_plus_four_the_rows_stand_bare():
    longest = card(mode="agent", session="not saved")  # its mode row is 34 columns
    assert plain(card_lines(longest, 37, None)) == ["ι> iota  v0.1.0", "agent · not saved · /save keeps it",
                                                   "/srv/app"]
    framed = plain(card_lines(longest, 38, None))
    assert len(framed) == 5 and all(len(row) == 38 for row in framed)


def test_the_home_directory_is_written_as_a_tilde_by_whole_components():
    def directory_row(directory):
        return plain(card_lines(card(directory=directory), 80, "/home/me"))[3].strip("│ ")

    assert directory_row("/home/me/Work/iota") == "~/Work/iota"
    assert directory_row("/home/me") == "~"
    assert directory_row("/home/me2/Work") == "/home/me2/Work"


def test_a_long_directory_is_cut_in_the_middle_to_fit_the_frame_or_the_bare_width():
    at_40 = plain(card_lines(card(directory=LONG), 40, None))
    assert at_40[3] == "│ /Volumes/build/ag…-name/packages/cli │"
    assert all(len(row) == 40 for row in at_40)
    at_30 = plain(card_lines(card(directory=LONG), 30, None))
    assert at_30[2] == "/Volumes/build…me/packages/cli"
    assert truncate_middle("short", 30) == "short"


def test_warnings_follow_the_card_dim():
    lines = card_lines(card(warnings=("sandbox unavailable",)), 80, None)
    assert lines[-1] == [("dim", "⚠ sandbox unavailable")]


def test_the_card_widget_lays_itself_out_again_at_each_width():
    widget = CardWidget(card(directory=LONG), None)
    assert rendered(widget, 40)[3] == "│ /Volumes/build/ag…-name/packages/cli │"
    assert rendered(widget, 120)[3] == f"│ {LONG} │"


# ---- the status row ----------------------------------------------------------------------------

@pytest.mark.parametrize(("seconds", "text"), [
    (0, "<1s"), (0.999, "<1s"), (1, "1s"), (59.9, "59s"), (72, "1m 12s"), (3 * 3600 + 5 * 60 + 9, "3h 5m"),
])
def test_timers_read(seconds, text):
    assert format_elapsed(seconds) == text


@pytest.mark.parametrize(("count", "text"), [
    (842, "842"), (1234, "1.2k"), (128_000, "128k"), (1_000_000, "1m"), (1_500_000, "1.5m"),
])
def test_token_counts_read(count, text):
    assert format_size(count) == text


def test_the_status_row_says_the_model_the_context_what_runs_and_what_is_queued():
    running = Status(model="sonnet", context_used=12_345, context_window=200_000, estimated=True,
                     running="Waiting for the model", running_since=100.0, queued=2)
    assert status_text(running, now=103.4) == "sonnet · ≈12.3k / 200k (6%) · Waiting for the model · 3s · 2 queued"
    idle = Status(model="sonnet", context_used=150_000, context_window=200_000)
    assert status_text(idle, now=0.0) == "sonnet · 150k / 200k (75%)"


def test_the_status_row_reads_the_clock_again_on_refresh():
    now = [10.0]
    row = StatusRow(clock=lambda: now[0])
    assert rendered(row, 60) == [""] and row.timer_started is None
    row.show(Status(model="m", context_used=0, context_window=1000, running="shell ls", running_since=10.0))
    assert row.timer_started == 10.0
    assert rendered(row, 60) == ["m · 0 / 1k (0%) · shell ls · <1s"]
    now[0] = 82.0
    row.refresh()
    assert rendered(row, 60) == ["m · 0 / 1k (0%) · shell ls · 1m 12s"]


# ---- the transcript ----------------------------------------------------------------------------

def test_streamed_deltas_join_into_one_reply_until_the_turn_ends():
    transcript = Transcript(None)
    transcript.add_user("hi")
    for delta in ("Hel", "lo, ", "world\n\n"):
        transcript.add_delta(delta)
    transcript.end_turn(interrupted=False)
    transcript.add_delta("Again")
    assert rendered(transcript, 40, 6) == ["❯ hi", "", "Hello, world", "", "Again", ""]


def test_a_tool_call_is_a_line_with_its_target_then_its_result_and_its_diff_in_full_coloured():
    transcript = Transcript(None)
    transcript.add_delta("Let me fix it.")
    transcript.add_tool_started(ToolStarted("c1", "edit_file", "a.py"))
    assert rendered(transcript, 40, 3) == ["Let me fix it.", "", "• edit_file a.py"]
    transcript.add_tool_ended(ToolEnded("c1", "edit_file", "1 edit", "@@ -1 +1 @@\n-a = 1\n+a = 2", False))
    transcript.add_delta("Fixed.")
    rows = attributes_of(transcript, 40, 9)
    assert [runs[0] for runs in rows[2:7]] == [
        ("tool", "• edit_file"), ("tool_result", "  ⎿ 1 edit"), ("diff_hunk", "    @@ -1 +1 @@"),
        ("diff_del", "    -a = 1"), ("diff_add", "    +a = 2")]
    assert rendered(transcript, 40, 9)[-1] == "Fixed."


def test_a_failed_tool_call_shows_its_result_red():
    transcript = Transcript(None)
    transcript.add_tool_started(ToolStarted("c1", "shell", "make"))
    transcript.add_tool_ended(ToolEnded("c1", "shell", "exit 2", None, True))
    assert attributes_of(transcript, 40, 2)[1][0] == ("tool_error", "  ⎿ exit 2")


def test_an_interrupted_turn_keeps_its_partial_reply_marked():
    transcript = Transcript(None)
    transcript.add_delta("Half a thought ")
    transcript.end_turn(interrupted=True)
    assert attributes_of(transcript, 40, 1)[0][:2] == [(None, "Half a thought"), ("dim", " (interrupted)")]
    transcript.add_tool_started(ToolStarted("c2", "shell", "sleep 60"))
    transcript.end_turn(interrupted=True)
    assert rendered(transcript, 40, 5)[-1] == "(interrupted)"


def test_notices_and_errors_are_one_line_each_grouped_without_blank_lines():
    transcript = Transcript(None)
    transcript.add_notice("MEMORY.md reloaded")
    transcript.add_notice("sandbox unavailable", warning=True)
    transcript.add_error("the model is overloaded; try again")
    transcript.add_error("second error")
    assert rendered(transcript, 40, 5) == ["MEMORY.md reloaded", "⚠ sandbox unavailable", "",
                                           "the model is overloaded; try again", "second error"]
    assert attributes_of(transcript, 40, 5)[0][0] == ("notice", "MEMORY.md reloaded")
    assert attributes_of(transcript, 40, 5)[3][0][0] == "error"


def test_a_panel_is_a_titled_block():
    transcript = Transcript(None)
    transcript.add_panel(Panel("Status", "Model  sonnet\nMode   chat"))
    assert rendered(transcript, 40, 3) == ["Status", "Model  sonnet", "Mode   chat"]


# ---- scrolling ---------------------------------------------------------------------------------

def numbered(scroller: Scroller, first: int, last: int) -> None:
    for number in range(first, last + 1):
        scroller.append(urwid.Text(f"row {number}"))


def test_the_scroller_follows_the_bottom_and_starts_short_content_at_the_top():
    scroller = Scroller()
    numbered(scroller, 1, 2)
    assert rendered(scroller, 20, 4) == ["row 1", "row 2", "", ""]
    numbered(scroller, 3, 10)
    assert rendered(scroller, 20, 4) == ["row 7", "row 8", "row 9", "row 10"]


def test_scrolled_up_the_view_stays_put_while_text_arrives_and_scrolling_back_down_follows_again():
    scroller = Scroller()
    numbered(scroller, 1, 10)
    rendered(scroller, 20, 4)
    scroller.scroll_page(-1)  # a page is the height less one row, kept for context
    assert rendered(scroller, 20, 4) == ["row 4", "row 5", "row 6", "row 7"]
    numbered(scroller, 11, 12)
    assert rendered(scroller, 20, 4) == ["row 4", "row 5", "row 6", "row 7"]
    assert not scroller.following
    scroller.scroll_page(1)
    scroller.scroll_page(1)
    assert scroller.following
    assert rendered(scroller, 20, 4) == ["row 9", "row 10", "row 11", "row 12"]


def test_scrolling_stops_at_the_top_and_moves_inside_a_tall_block():
    scroller = Scroller()
    scroller.append(urwid.Text("\n".join(f"line {n}" for n in range(1, 11))))
    rendered(scroller, 20, 3)
    scroller.scroll(-2)
    assert rendered(scroller, 20, 3) == ["line 6", "line 7", "line 8"]
    scroller.scroll(-100)
    assert rendered(scroller, 20, 3) == ["line 1", "line 2", "line 3"]


def test_the_mouse_wheel_scrolls_three_rows():
    scroller = Scroller()
    numbered(scroller, 1, 10)
    rendered(scroller, 20, 4)
    assert scroller.mouse_event((20, 4), "mouse press", 4, 0, 0, False)
    assert rendered(scroller, 20, 4) == ["row 4", "row 5", "row 6", "row 7"]
    scroller.mouse_event((20, 4), "mouse press", 5, 0, 0, False)
    assert scroller.following


# ---- the chooser -------------------------------------------------------------------------------

def test_the_chooser_moves_with_the_arrows_and_answers_the_index_on_enter_once():
    answers = []
    chooser = Chooser(APPROVAL, OPTIONS, answers.append)
    assert rendered(chooser, 60) == [APPROVAL, "❯ 1. Allow once", "  2. Allow for this session", "  3. Deny"]
    for key in ("down", "down", "down", "up"):
        assert chooser.keypress((60,), key) is None
    assert rendered(chooser, 60)[3] == "❯ 3. Deny"
    chooser.keypress((60,), "enter")
    chooser.keypress((60,), "enter")
    assert answers == [2]


@pytest.mark.parametrize(("key", "answer"), [("esc", None), ("2", 1)])
def test_the_chooser_answers_none_on_esc_and_an_option_by_its_digit(key, answer):
    answers = []
    Chooser(APPROVAL, OPTIONS, answers.append).keypress((60,), key)
    assert answers == [answer]


# ---- the palette -------------------------------------------------------------------------------

@pytest.mark.parametrize("no_color", [False, True])
def test_every_palette_entry_is_one_urwid_understands_and_no_color_has_no_colour(no_color):
    for name, foreground, background in theme.palette(no_color=no_color):
        urwid.AttrSpec(foreground, background, 16)  # raises on what urwid does not understand
        assert background == "default", name
        assert not no_color or foreground.split(",")[0] == "default", name


def test_no_color_is_requested_by_a_non_empty_no_color():
    assert theme.no_color_requested({"NO_COLOR": "1"})
    assert not theme.no_color_requested({"NO_COLOR": ""})
    assert not theme.no_color_requested({})


def test_the_chat_card_replaces_the_first_screen_card():
    from actors.events import Card
    from ui.widgets.transcript import Transcript

    transcript = Transcript(home="/home/x")
    transcript.add_card(Card(version="0.1.0", mode="", session="starting…", host=None, directory="/work/p"))
    transcript.add_card(Card(version="0.1.0", mode="chat", session="session abc", host=None, directory="/work/p"))
    text = b"\n".join(transcript.render((60, 10)).text).decode()
    assert "chat · session abc" in text and "starting…" not in text
    transcript.add_notice("hello", False)
    transcript.add_card(Card(version="0.1.0", mode="bot", session="session def", host=None, directory="/work/p"))
    text = b"\n".join(transcript.render((60, 30)).text).decode()
    assert "chat · session abc" in text and "bot · session def" in text  # later cards are added
