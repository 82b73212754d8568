"""Pasting into the chat, end to end in tmux: a paste of any size is one message, never one a
line, and shows compactly in the composer until it is sent."""

from __future__ import annotations

from tests.e2e.test_chat import chat, saved_records  # noqa: F401  (the fixture)
from tests.support.terminal import terminal  # noqa: F401  (the fixture under `chat`)

PANE = "=test:"


def lines(count: int) -> str:
    return "\n".join(f"line {n} of the pasted log" for n in range(1, count + 1))


def test_a_300_line_paste_without_paste_markers_is_one_message(iota, chat):
    """tmux's send-keys gives the keys without markers, as a terminal without bracketed paste
    does: 300 lines arriving together are one paste, not 300 messages."""
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("Got all of it.")
    screen = chat("run", "chat")
    pasted = lines(300)
    screen.type(pasted)
    shown = screen.wait_for("❯ [Pasted text #1 +300 lines]")
    assert "line 2 of" not in shown  # the composer holds the placeholder, not the 300 lines
    assert not iota.model.requests  # nothing was sent by the paste's own line breaks
    screen.send_keys("Enter")
    screen.wait_for("Got all of it.")
    assert len(iota.model.requests) == 1
    sent = [m["content"] for m in iota.model.requests[0].body["messages"] if m["role"] == "user"]
    assert sent == [pasted]  # the placeholder is expanded when sent


def test_a_bracketed_paste_of_1000_lines_lands_at_once_and_is_edited_around(iota, chat, tmp_path):
    """The chat turns bracketed paste on itself (tmux 3.3 answers no mode query), so tmux's
    paste-buffer -p wraps the paste in markers; text typed around it stays."""
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("Read the log.")
    screen = chat("run", "chat")
    pasted = lines(1000) + "\n"
    (tmp_path / "paste.txt").write_text(pasted)
    screen.type("Why does this fail? ")
    screen.wait_for("❯ Why does this fail?")
    screen._tmux("load-buffer", "-b", "log", str(tmp_path / "paste.txt"))
    screen._tmux("paste-buffer", "-p", "-b", "log", "-t", PANE)
    screen.wait_for("❯ Why does this fail? [Pasted text #1 +1000 lines]")
    screen.type(" Thanks.")
    screen.send_keys("Enter")
    screen.wait_for("Read the log.")
    sent = [m["content"] for m in iota.model.requests[0].body["messages"] if m["role"] == "user"]
    assert sent == [f"Why does this fail? {pasted} Thanks."]
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    _, records = saved_records()
    assert records[0]["content"] == f"Why does this fail? {pasted} Thanks."


def test_a_short_paste_lands_as_its_text_and_waits_for_enter(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("Two lines, yes.")
    screen = chat("run", "chat")
    screen.type("first line\nsecond line")
    screen.wait_for("❯ first line\n  second line")
    assert not iota.model.requests
    screen.send_keys("Enter")
    screen.wait_for("Two lines, yes.")
    assert [m["content"] for m in iota.model.requests[0].body["messages"] if m["role"] == "user"] == [
        "first line\nsecond line"]


def test_a_pasted_end_marker_followed_by_a_line_sends_nothing(iota, chat, tmp_path):
    """A pasted text holding the end marker itself, then a command and a CR: tmux passes it on
    as it is, so the terminal's own end marker comes after the CR. It is all one paste, sent
    only when the person presses Enter."""
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("Noted.")
    screen = chat("run", "chat")
    (tmp_path / "paste.txt").write_bytes(b"harmless\x1b[201~rm -rf ~\r")
    screen._tmux("load-buffer", "-b", "trap", str(tmp_path / "paste.txt"))
    screen._tmux("paste-buffer", "-p", "-b", "trap", "-t", PANE)
    screen.wait_for("❯ harmless[201~rm -rf ~\n")
    screen.type("!")  # the paste is in; this would come after a message sent
    screen.wait_for("  !")
    assert not iota.model.requests
    screen.send_keys("Enter")
    screen.wait_for("Noted.")
    sent = [m["content"] for m in iota.model.requests[0].body["messages"] if m["role"] == "user"]
    assert sent == ["harmless[201~rm -rf ~\n!"]
