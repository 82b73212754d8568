"""The first frame's line editor (ui.early_keys), fed what a terminal in raw mode sends."""

from ui.early_keys import LineEditor


def test_printable_keys_backspace_ctrl_u_and_enter():
    editor = LineEditor()
    editor.feed(b"helo\x7flo\x08o wrong\x15hello world\r")
    editor.feed(b"next")
    assert editor.handed_over() == b"hello world\rnext"
    assert editor.shown == "next"


def test_arrows_and_other_sequences_are_let_go_even_split_across_reads():
    editor = LineEditor()
    editor.feed(b"ab\x1b[")
    editor.feed(b"Acd\x1bOD\x1b[1;5C")
    assert editor.handed_over() == b"abcd" and editor.shown == "abcd"


def test_a_utf8_character_split_across_reads_is_one_character():
    editor = LineEditor()
    editor.feed("é".encode()[:1])
    editor.feed("é".encode()[1:] + b"\x7f")
    assert editor.handed_over() == b""


def test_a_paste_is_kept_whole_and_shown_as_the_chat_will():
    editor = LineEditor()
    editor.feed(b"Why? \x1b[200~one\rtwo\r")
    assert editor.shown == "Why? "  # the paste has not ended yet
    editor.feed(b"three\r\x1b[201~ ok")
    assert editor.handed_over() == b"Why? \x1b[200~one\rtwo\rthree\r\x1b[201~ ok"
    assert editor.shown == "Why? [Pasted text +3 lines] ok"


def test_ctrl_c_is_reported_and_a_line_feed_sends_only_before_raw_mode():
    editor = LineEditor()
    assert editor.feed(b"typed\n", line_feed_sends=True) is False
    assert editor.feed(b"a\nb") is False  # in raw mode a line feed is Ctrl+J: a new line
    assert editor.handed_over() == b"typed\ra\nb" and editor.shown == "b"
    assert editor.feed(b"\x03") is True
