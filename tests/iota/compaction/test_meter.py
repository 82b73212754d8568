"""The context meter (iota.compaction.meter): the thresholds, the local count, the meter itself,
and what of a conversation too long to send a turn that cannot ask first sends."""

from __future__ import annotations

import pytest

from iota.compaction.meter import (
    MIN_BOT_WINDOW,
    Meter,
    TokenCount,
    bot_reserve,
    bot_threshold,
    fitting_tail,
    go_value,
    message_tokens,
    normal_threshold,
    snoozed,
)
from iota.messages import Message, ToolCall, Usage
from iota.sessions.log import left_out_note, summary_preamble
from tests.iota.compaction.test_summary import assistant, system, user


# -- thresholds ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("window, threshold", [
    (1_000_000, 750_000), (200_000, 150_000), (128_000, 96_000), (64_000, 32_000), (32_000, 16_000), (20_000, 10_000),
])
def test_the_bot_threshold_keeps_a_quarter_or_32k_free_but_never_more_than_half(window, threshold):
    assert bot_threshold(window) == threshold
    assert bot_reserve(window) == window - threshold


@pytest.mark.parametrize("window, threshold", [
    (1_000_000, 984_000), (200_000, 184_000), (128_000, 112_000), (64_000, 51_200), (20_000, 16_000),
])
def test_the_agent_threshold_is_80_percent_or_16k_short_of_the_window_whichever_is_later(window, threshold):
    assert normal_threshold(window) == threshold


def test_a_snooze_raises_the_threshold_to_5_percent_of_the_window_above_where_it_was_snoozed():
    assert MIN_BOT_WINDOW == 32_000
    assert snoozed(96_000, 128_000, None) == 96_000
    assert snoozed(96_000, 128_000, 100_000) == 106_400
    assert snoozed(96_000, 128_000, 10_000) == 96_000  # never below the threshold itself


# -- the local count and the meter ---------------------------------------------------------------------


def words(n: int) -> str:
    """`n` tokens of o200k_base: "word word …" (bytes/4 would make it 1.25 n)."""
    return " ".join(["word"] * n)


def test_the_local_count_is_the_o200k_count_of_each_piece_plus_4_per_message():
    assert message_tokens([user(words(40))]).exact() == 40 + 4
    assert message_tokens([user("你好世界")]).exact() == 2 + 4
    reasoning = Message("assistant", "x" * 8, reasoning="y" * 12)
    assert message_tokens([reasoning]).exact() == 1 + 3 + 4
    call = assistant(calls=[ToolCall("c1", "read_file", {"path": "src/app/main.py", "limit": 1000})])
    # "read_file" → 2; "path" → 1, "src/app/main.py" → 4; "limit" → 1, "1000" → 2
    assert message_tokens([call]).exact() == 4 + 2 + 1 + 4 + 1 + 2
    assert message_tokens([]).exact() == 0


def test_argument_values_are_printed_as_go_prints_them():
    assert [go_value(v) for v in ("plain", 3, 3.5, True, None, [1, 2], {"k": "v"})] == [
        "plain", "3", "3.5", "true", "<nil>", "[1,2]", '{"k":"v"}']


def test_the_meter_is_the_last_usage_plus_an_estimate_of_what_was_added_since():
    meter = Meter(128_000)
    assert meter.estimated and meter.status() == "≈0 / 128k (0%)"
    meter.settle(Usage(input=90_000, output=6_000))
    assert meter.used == 96_000 and not meter.estimated
    assert meter.status() == "96k / 128k (75%)"
    meter.add([user(words(1000))])
    assert meter.used == 96_000 + 1004 and meter.estimated
    assert meter.status() == "≈97k / 128k (75%)"
    meter.settle(Usage(input=97_500, output=500, total=98_200))
    assert meter.used == 98_200 and not meter.estimated  # the provider's total wins, the estimate is gone


def test_a_response_without_usage_folds_the_estimate_into_a_local_figure():
    meter = Meter(128_000)
    meter.settle(Usage(input=1000))
    meter.add([user(words(100))])
    meter.settle(None)
    assert meter.used == 1104 and meter.pending.exact() == 0 and meter.estimated
    meter.settle(Usage())
    assert meter.used == 1104 and meter.estimated


def test_reaches_counts_the_message_about_to_be_sent():
    meter = Meter(128_000)
    meter.settle(Usage(input=95_990))
    assert not meter.reaches(96_000)
    assert meter.reaches(96_000, adding=[user(words(10))])
    assert meter.used == 95_990  # asking added nothing


def test_a_resumed_meter_starts_from_the_last_usage_plus_what_came_after_it():
    view = [system(), user("hi"), assistant("hello", usage=Usage(5_000, 100)), user(words(100)), Message(
        "tool", words(10), tool_call_id="c1")]
    meter = Meter(128_000)
    meter.seed(view, Usage(5_000, 100))
    assert meter.settled.exact() == 5_100 and meter.pending.exact() == (100 + 4) + (10 + 4) and meter.estimated
    meter.seed(view[:3], Usage(5_000, 100))
    assert meter.used == 5_100 and not meter.estimated


def test_a_resumed_meter_without_a_usage_counts_everything_plus_the_overhead():
    view = [system(words(100)), user(words(10))]
    meter = Meter(64_000)
    meter.seed(view, None, overhead=TokenCount(2_000))
    assert meter.used == (100 + 4) + (10 + 4) + 2_000 and meter.estimated
    meter.settle(Usage(input=10))
    meter.reseed([user(words(10))], overhead=TokenCount(6))
    assert meter.used == 20 and meter.estimated


# -- a conversation too long to send --------------------------------------------------------------------


def test_a_tail_that_must_fit_keeps_whole_rounds_and_the_last_round_always():
    note = summary_preamble(left_out_note(7))
    rounds = [Message("user", note + "q0 " + "x" * 400), Message("assistant", "a0"),
              Message("user", "q1 " + "x" * 400), Message("user", "job done", notice=True), Message("assistant", "a1"),
              Message("user", "q2 " + "x" * 400), Message("assistant", "a2")]
    kept, left_out = fitting_tail(rounds, 7, budget=250)  # two rounds fit (about 110 tokens each)
    assert left_out == 9 and [m.content for m in kept[1:]] == ["job done", "a1", "q2 " + "x" * 400, "a2"]
    assert kept[0].content == summary_preamble(left_out_note(9)) + "q1 " + "x" * 400
    kept, left_out = fitting_tail(rounds, 7, budget=10)  # the last round alone is over: it goes whole
    assert left_out == 12 and [m.content for m in kept] == [summary_preamble(left_out_note(12)) + "q2 " + "x" * 400, "a2"]
    assert fitting_tail(rounds, 7, budget=10 ** 6) == (rounds, 7)
