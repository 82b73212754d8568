"""Keys, end to end in tmux: Ctrl+C with a draft clears it (the chat stays), twice at an empty
prompt leaves, and keys typed while a chooser is open are not swallowed."""

from __future__ import annotations

import re

from tests.e2e.test_chat import chat  # noqa: F401  (the fixture)
from tests.support.fake_model import tool_call
from tests.support.terminal import terminal  # noqa: F401  (the fixture under `chat`)

EMPTY_COMPOSER = re.compile(r"^─+\n❯$", re.MULTILINE)


def test_ctrl_c_with_a_draft_clears_it_and_the_chat_stays_open(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("Still here.")
    screen = chat("run", "chat")
    screen.type("a long draft I changed my mind about")
    screen.wait_for("❯ a long draft")
    screen.send_keys("C-c")
    shown = screen.wait_for(EMPTY_COMPOSER)
    assert "a long draft" not in shown
    screen.send_keys("Up")  # the draft is not lost either
    screen.wait_for("❯ a long draft I changed my mind about")
    screen.send_keys("C-u")
    screen.type("hello")
    screen.send_keys("Enter")
    screen.wait_for("Still here.")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0


def test_a_single_ctrl_c_at_an_empty_prompt_only_says_how_to_leave(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("Yes.")
    screen = chat("run", "chat")
    screen.send_keys("C-c")
    screen.wait_for("Press Ctrl+C again to exit")
    screen.wait_for("m · ")  # the hint goes after a second; the chat is still here
    screen.type("still there?")
    screen.send_keys("Enter")
    screen.wait_for("Yes.")


def test_keys_typed_while_a_chooser_is_open_go_to_the_composer(iota, chat):
    iota.write_config("  coder:\n    mode: agent\n    model: m\n    tools:\n      code:\n")
    (iota.cwd / ".git").mkdir()
    iota.model.reply(tool_calls=[tool_call("write_file", {"path": "notes.md", "content": "# Notes\n"})])
    iota.model.reply("Written.")
    iota.model.reply("Noted.")
    screen = chat("run", "coder")
    screen.type("write notes")
    screen.send_keys("Enter")
    screen.wait_for("write_file notes.md wants to modify files — allow?")
    screen.type("also add a title")  # typed while the question is open: lands in the composer
    screen.wait_for("❯ also add a title")
    screen.send_keys("Enter")  # Enter is the chooser's
    screen.wait_for("Written.")
    assert (iota.cwd / "notes.md").exists()
    screen.wait_for("❯ also add a title")
    screen.send_keys("Enter")
    screen.wait_for("Noted.")
    sent = [m["content"] for m in iota.model.requests[2].body["messages"] if m["role"] == "user"]
    assert sent[-1] == "also add a title"
