"""Titles: what a stored title may hold, the fallback's opening words, the title pass's request
and how its answer is read."""

from __future__ import annotations

from iota.messages import ASSISTANT, USER, Message
from iota.text import TITLE_CAP, clean_title
from iota.titles import (TITLE_INSTRUCTION, Opening, fallback_title, first_exchange, opening_words, title_from_reply,
                         title_request)

PREAMBLE = "[Earlier conversation summary]\nWe planned the garden.\n\n———\n\n"


def test_a_title_is_one_line_of_printable_text():
    # ESC and BEL (an OSC that retitles the window), CSI as one C1 byte, a bidi override that
    # reorders the rest of the row, a zero-width joiner, a second line.
    hostile = "\x1b]0;owned\x07Evil\x1b[2J \x9b31mtitle\u202eabc\u200d\nrm -rf ~\r\tend"
    cleaned = clean_title(hostile)
    assert cleaned == "]0;ownedEvil[2J 31mtitleabc rm -rf ~ end"
    assert all(character.isprintable() for character in cleaned)


def test_a_title_is_cut_to_its_cap_and_spaces_are_collapsed():
    assert clean_title("  many   spaces\n\nhere  ") == "many spaces here"
    assert len(clean_title("word " * 100)) <= TITLE_CAP
    assert clean_title("\x1b\x07\n") == ""


def test_the_fallback_is_the_opening_words_that_fit():
    assert opening_words("help me plan my vegetable garden for spring") == "help me plan my vegetable garden for…"
    assert opening_words("short one") == "short one"
    assert opening_words("x" * 60) == "x" * 40 + "…"
    assert opening_words("line one\nline two") == "line one line two"
    assert opening_words(PREAMBLE + "and the paths?") == "and the paths?"


def test_the_first_exchange_waits_for_a_reply_and_skips_notices():
    notice = Message(USER, "Resumed after 3 hours", notice=True)
    question = Message(USER, "how wide should beds be?")
    assert first_exchange([notice, question]) is None
    calling = Message(ASSISTANT, "", tool_calls=[])
    answer = Message(ASSISTANT, "One metre.")
    assert first_exchange([notice, question, calling, answer]) == Opening("how wide should beds be?", "One metre.")
    assert first_exchange([Message(USER, PREAMBLE + "and the paths?"), answer]) == Opening("and the paths?", "One metre.")
    assert fallback_title([notice, question]) == "how wide should beds be?"
    assert fallback_title([notice]) == ""


def test_the_title_request_is_short_and_has_no_tools():
    request = title_request("small-model", Opening("q" * 2000, "a" * 2000))
    assert (request.model, request.system, request.tools) == ("small-model", "", [])
    [message] = request.messages
    assert message.content.startswith(TITLE_INSTRUCTION)
    assert "q" * 500 in message.content and "q" * 501 not in message.content
    assert "a" * 500 in message.content and "a" * 501 not in message.content
    assert request.max_tokens <= 256


def test_the_title_is_read_out_of_what_the_model_says():
    assert title_from_reply("Spring garden") == "Spring garden"
    assert title_from_reply('<think>the user wants…</think>\n"Title: Spring garden."\nHope that helps!') == "Spring garden"
    assert title_from_reply("**Title:** Spring garden") == "Spring garden"
    assert title_from_reply("<think>never closed") == ""
    assert title_from_reply("\n\n") == ""
