"""Telling a paste from typing (ui.paste): what is judged a paste, what stays keys."""

from __future__ import annotations

import pytest

from ui.paste import BEGIN_PASTE, END_PASTE, GATHER_SECONDS, MARKED_PASTE_SECONDS, InputGatherer


def judged(*reads: bytes) -> list:
    gatherer = InputGatherer()
    for read in reads:
        gatherer.feed(read)
    return gatherer.take()


@pytest.mark.parametrize("read", [b"h", b"hello", b"\r", b"\n", b"\x1b\r", b"\x1b[A", b"\x1b[<64;10;5M"])
def test_typing_a_key_or_an_escape_sequence_is_passed_on_at_once(read):
    gatherer = InputGatherer()
    assert gatherer.feed(read) is None
    assert gatherer.take() == [("keys", read)]


def test_text_with_a_line_break_waits_for_the_rest_of_a_paste():
    gatherer = InputGatherer()
    assert gatherer.feed(b"line 1\nline") == GATHER_SECONDS
    assert gatherer.feed(b" 2\n") == GATHER_SECONDS  # a later read joins it, whatever it holds
    assert gatherer.take() == [("paste", "line 1\nline 2\n")]


def test_text_ending_in_its_only_enter_is_typing_then_enter():
    assert judged(b"hello there\r") == [("keys", b"hello there\r")]


def test_a_paste_split_where_a_read_ends_in_enter_is_still_one_paste():
    assert judged(b"one\rtwo\r", b"three\r") == [("paste", "one\ntwo\nthree\n")]


def test_a_marked_paste_is_one_piece_whatever_it_holds():
    gatherer = InputGatherer()
    assert gatherer.feed(b"x\x1b[200~a\r\x1b[Ab") == MARKED_PASTE_SECONDS  # waits for its end
    assert gatherer.feed(b"\tc\x1b[201~y") == GATHER_SECONDS  # what follows the end may be the paste's
    assert gatherer.take() == [("keys", b"x"), ("paste", "a\n[Ab\tc"), ("keys", b"y")]


def test_keys_with_escape_sequences_are_never_a_paste():
    assert judged(b"ab\rcd", b"\x1b[A", b"e\rf") == [("paste", "ab\ncd"), ("keys", b"\x1b[A"), ("paste", "e\nf")]


def test_a_paste_loses_its_control_characters_and_keeps_its_text():
    assert judged(b"caf\xc3\xa9\r\n\x07bell\x00") == [("paste", "café\nbell")]


def test_an_end_marker_inside_a_marked_paste_is_text_and_what_follows_it_is_no_keys():
    """A terminal that passes a pasted `ESC [201~` on: the text after it, with its CR, is still
    the paste (up to the terminal's own end), never keys that would send it."""
    gatherer = InputGatherer()
    assert gatherer.feed(b"\x1b[200~harmless\x1b[201~rm -rf ~\r") == GATHER_SECONDS  # the real end may follow
    assert gatherer.feed(b"\x1b[201~") is None
    assert gatherer.take() == [("paste", "harmless[201~rm -rf ~\n")]


def test_keys_after_a_marked_paste_stay_keys():
    assert judged(b"\x1b[200~a\nb\x1b[201~\r") == [("paste", "a\nb"), ("keys", b"\r")]


def test_a_second_paste_waits_for_its_own_end():
    gatherer = InputGatherer()
    assert gatherer.feed(b"\x1b[200~a\x1b[201~\x1b[200~b") == MARKED_PASTE_SECONDS


@pytest.mark.parametrize("split", range(1, len(END_PASTE)))
def test_an_end_marker_split_between_two_reads_is_still_found(split):
    """A long paste comes in many reads, and its end marker may be cut between two of them: each
    read is searched with the bytes before it, so the end is not missed (nor waited for)."""
    gatherer = InputGatherer()
    assert gatherer.feed(BEGIN_PASTE + b"a\rb" + END_PASTE[:split]) == MARKED_PASTE_SECONDS
    assert gatherer.feed(END_PASTE[split:]) is None  # the end found: taken at once
    assert gatherer.take() == [("paste", "a\nb")]
