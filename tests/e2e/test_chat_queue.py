"""The queue, end to end in tmux: what is typed while a reply streams is shown, can be taken back
to edit, waits after Ctrl+C until Enter sends it, and slash commands are not counted in it."""

from __future__ import annotations

import re

from tests.e2e.test_chat import chat  # noqa: F401  (the fixture)
from tests.support.fake_model import Gate
from tests.support.terminal import terminal  # noqa: F401  (the fixture under `chat`)


def user_texts(iota, request: int) -> list[str]:
    return [m["content"] for m in iota.model.requests[request].body["messages"] if m["role"] == "user"]


def streaming(iota, chat, gate: Gate):
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("one two three", pieces=3, gate=gate)
    screen = chat("run", "chat")
    screen.type("first question")
    screen.send_keys("Enter")
    gate.release(1)
    screen.wait_for("one")
    return screen


def test_queued_messages_are_shown_and_the_last_can_be_taken_back_to_edit(iota, chat):
    gate = Gate()
    screen = streaming(iota, chat, gate)
    iota.model.reply("the second answer")
    for text in ("second question", "third qestion"):
        screen.type(text)
        screen.send_keys("Enter")
        # Keys that arrive together with a line break inside are a paste: wait as a person would.
        shown = screen.wait_for(f"↳ {text}")
    assert "↳ second question\n↳ third qestion\n  sent when the reply ends · ↑ edits the last" in shown
    assert "· 2 queued" in shown
    screen.send_keys("Up")  # on the empty composer: the last queued message comes back
    shown = screen.wait_for("❯ third qestion")
    assert "↳ third" not in shown and "· 1 queued" in shown
    screen.send_keys("C-w")
    screen.type("question")
    screen.send_keys("Enter")
    screen.wait_for("↳ third question")
    iota.model.reply("the third answer")
    gate.open()
    screen.wait_for("the third answer")
    assert user_texts(iota, 1) == ["first question", "second question"]
    assert user_texts(iota, 2) == ["first question", "second question", "third question"]


def test_esc_on_an_empty_composer_takes_a_queued_message_back(iota, chat):
    gate = Gate()
    screen = streaming(iota, chat, gate)
    screen.type("never mind this")
    screen.send_keys("Enter")
    screen.wait_for("↳ never mind this")
    screen.send_keys("Escape")
    screen.wait_for("❯ never mind this")
    screen.send_keys("C-u")
    gate.open()
    screen.wait_for("one two three")
    assert len(iota.model.requests) == 1  # the reply went on, and nothing queued was sent


def test_ctrl_c_stops_the_turn_and_the_queue_waits_for_enter(iota, chat):
    gate = Gate()
    screen = streaming(iota, chat, gate)
    screen.type("and then this")
    screen.send_keys("Enter")
    screen.wait_for("↳ and then this")
    screen.send_keys("C-c")
    shown = screen.wait_for("(interrupted)")
    shown = screen.wait_for("stopped · Enter sends 1 queued")
    assert "↳ and then this" in shown
    assert len(iota.model.requests) == 1  # nothing was sent by itself
    iota.model.reply("now the queued one")
    screen.send_keys("Enter")
    screen.wait_for("now the queued one")
    assert user_texts(iota, 1) == ["first question", "and then this"]


def test_ctrl_c_on_a_held_queue_drops_it(iota, chat):
    gate = Gate()
    screen = streaming(iota, chat, gate)
    screen.type("and then this")
    screen.send_keys("Enter")
    screen.wait_for("↳ and then this")
    screen.send_keys("C-c")
    screen.wait_for("stopped · Enter sends 1 queued")
    screen.send_keys("C-c")
    shown = screen.wait_for("Dropped 1 queued message")
    assert "↳ and then this" not in shown and "queued ·" not in shown
    assert len(iota.model.requests) == 1


def test_a_slash_command_is_not_counted_as_queued(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    screen = chat("run", "chat")
    screen.type("/status")
    screen.send_keys("Enter")
    shown = screen.wait_for("Title")
    assert "queued" not in shown.splitlines()[-1]
    gate = Gate()
    iota.model.reply("slow", pieces=2, gate=gate)
    screen.type("hello")
    screen.send_keys("Enter")
    gate.release(1)
    # What comes together with a line break inside is a paste: wait, as a person would.
    screen.wait_for(re.compile(r"^sl$", re.MULTILINE))
    screen.type("/status")
    screen.send_keys("Enter")
    shown = screen.wait_for(re.compile(r"Responding"))
    assert "queued" not in shown.splitlines()[-1]  # the command waits its turn, uncounted
    gate.open()
    screen.wait_for(re.compile(r"Title.*\n.*\n(.*\n)*.*Title", re.S))  # the second /status ran after the reply
