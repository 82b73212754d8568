"""Slash commands, end to end in tmux: /help, /clear and /new, a partial or unknown command,
/session's confirmations and card, /tools and /export."""

from __future__ import annotations

import re
import subprocess

from iota import paths
from tests.e2e.conftest import IOTA
from tests.e2e.test_chat import chat, make_chat_session, saved_records  # noqa: F401  (the fixture)
from tests.support.terminal import terminal  # noqa: F401  (the fixture under `chat`)

SESSION_ID = re.compile(r"session ([0-9a-z]{12})")


def send(screen, text: str) -> None:
    screen.type(text)
    screen.send_keys("Enter")


def test_help_lists_every_command_and_key_on_one_screen(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    screen = chat("run", "chat", cols=110, rows=32)
    send(screen, "/help")
    shown = screen.wait_for("Commands and keys")
    panel = shown[shown.index("Commands and keys"):]
    for command in ("/help", "/clear", "/new", "/model", "/status", "/save", "/compact", "/session", "/export",
                    "/tools", "/quit"):
        assert re.search(rf"^{command} +\S", panel, re.MULTILINE), command
    keys = " ".join(panel.split())  # its title and its last key on the screen at once: it fits one screen
    for key in ("Enter send", "Ctrl+J", "Esc cancel", "Ctrl+C clear the draft", "Ctrl+O", "PgUp / PgDn",
                "Tab complete", "Ctrl+D leave", "Ctrl+Z suspend"):
        assert key in keys, key


def test_clear_starts_a_new_session_and_keeps_the_old_one(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("Noted, you like tea.")
    iota.model.reply("A fresh start.")
    screen = chat("run", "chat")
    first = SESSION_ID.search(screen.wait_for(SESSION_ID)).group(1)
    send(screen, "I like tea")
    screen.wait_for("Noted, you like tea.")
    send(screen, "/clear")
    shown = screen.wait_for(f"the last one is kept as {first} (iota resume {first})")
    second = SESSION_ID.search(shown).group(1)
    assert second != first and "I like tea" not in shown  # a fresh card, the old transcript gone
    send(screen, "what do I like?")
    screen.wait_for("A fresh start.")
    assert [m["content"] for m in iota.model.requests[1].body["messages"] if m["role"] != "system"] == [
        "what do I like?"]
    send(screen, "/new")  # the same as /clear
    screen.wait_for(f"the last one is kept as {second}")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    kept = {bundle.name for bundle in paths.sessions_dir().iterdir()}
    assert {first, second} <= kept


def test_clear_in_a_bot_says_a_bot_has_one_conversation(iota, chat):
    iota.write_config("  coder:\n    mode: bot\n    model: m\n")
    screen = chat("run", "coder")
    send(screen, "/clear")
    screen.wait_for("a bot keeps one conversation that never ends: there is no /clear or /new in bot coder")


def test_enter_on_a_command_with_one_match_runs_it(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    screen = chat("run", "chat")
    send(screen, "/stat")
    screen.wait_for(re.compile(r"^Title +\(untitled\)$", re.MULTILINE))
    assert not iota.model.requests


def test_an_unknown_command_asks_before_it_is_sent_as_a_message(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("That is not a command.")
    screen = chat("run", "chat")
    send(screen, "/frobnicate the widget")
    screen.wait_for("/frobnicate is not a command — send it as a message?")
    screen.send_keys("Down", "Enter")  # Edit it
    screen.wait_for("❯ /frobnicate the widget")
    assert not iota.model.requests
    screen.send_keys("Enter")
    screen.wait_for("/frobnicate is not a command — send it as a message?")
    screen.send_keys("Enter")  # Send it as a message
    screen.wait_for("That is not a command.")
    assert iota.model.requests[0].body["messages"][-1]["content"] == "/frobnicate the widget"


def test_a_path_is_a_message_without_a_question(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("That is a path.")
    screen = chat("run", "chat")
    send(screen, "/etc/hosts is missing a line")
    screen.wait_for("That is a path.")


def test_session_resume_shows_the_resumed_session_on_a_fresh_card(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    other = make_chat_session("Other", "the other question", "the other answer")
    screen = chat("run", "chat")
    send(screen, "/session")
    screen.wait_for("❯ 1. Resume")
    screen.send_keys("Enter")
    screen.wait_for("Resume which session?")
    screen.send_keys("Enter")
    shown = screen.wait_for(f"│ chat · resumed {other}")
    assert "the other question" in shown and "the other answer" in shown


def test_session_open_in_another_process_is_refused_in_the_chat(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("ok")
    iota.model.reply("still going")
    holder = chat("run", "chat")
    send(holder, "hello")
    holder.wait_for("ok")
    held, _ = saved_records()
    screen = chat("run", "chat")
    send(screen, "/session")
    screen.wait_for("❯ 1. Resume")
    screen.send_keys("Enter")
    screen.wait_for("Resume which session?")
    screen.send_keys("Enter")
    screen.wait_for(f"session {held.name} is open in another iota process")
    send(screen, "are you still here?")
    screen.wait_for("still going")  # the chat went on


def test_tools_shows_each_toolset_its_settings_and_its_tools_in_a_line_each(iota, chat):
    (iota.cwd / ".git").mkdir()
    iota.write_config("  coder:\n    mode: agent\n    model: m\n    tools:\n      code: {auto_write: true}\n"
                      "      shell: {sandbox: off}\n")
    screen = chat("run", "coder", cols=130, rows=40)
    send(screen, "/tools")
    shown = screen.wait_for("ask  on")
    assert "code  on · writes without asking (auto_write: true)" in shown
    assert "shell  on · without a sandbox (sandbox: off) · every command asks first" in shown
    assert re.search(r"^  read_file +\S.{10,}$", shown, re.MULTILINE)
    assert re.search(r"^  shell +\S", shown, re.MULTILINE)
    tools = shown[shown.index("Tools"):]
    assert all(len(row) <= 130 for row in tools.splitlines())
    assert len([row for row in tools.splitlines() if row.strip()]) < 20  # a line a tool, not its whole text


def test_export_writes_outside_the_repository_and_says_where(iota, chat):
    subprocess.run(["git", "init", "-q", str(iota.cwd)], check=True)
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("Exported soon.")
    (iota.home / "Downloads").mkdir()
    screen = chat("run", "chat")
    send(screen, "hello")
    screen.wait_for("Exported soon.")
    send(screen, "/export")
    shown = screen.wait_for("Exported 2 messages to ")
    path = re.search(r"Exported 2 messages to (\S+?\.html)", shown.replace("\n", "")).group(1)
    assert path.startswith(str(iota.home / "Downloads") + "/") and path.endswith(".html")
    assert "hello" in open(path).read()
    assert not list(iota.cwd.glob("iota-*"))  # nothing in the project


def test_the_resume_picker_says_a_session_is_open_elsewhere_and_asks_again(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("ok")
    holder = chat("run", "chat")
    send(holder, "hello")
    holder.wait_for("ok")
    held, _ = saved_records()
    other = make_chat_session("Other", "the other question", "the other answer")
    screen = chat.terminals.start([IOTA, "resume"], cols=110, rows=32, env=iota.env(), cwd=iota.cwd)
    shown = screen.wait_for("Resume which session?")
    rows = [row for row in shown.splitlines() if row.startswith(("❯ ", "  ")) and " · fake-model · " in row]
    held_row = next(n for n, row in enumerate(rows) if "Other" not in row)
    screen.send_keys(*["Down"] * held_row, "Enter")
    screen.wait_for(f"session {held.name} is open in another iota process")
    screen.wait_for("— resume which session?")  # asked again, the app still up
    screen.send_keys(*["Down"] * (1 - held_row), "Enter")
    screen.wait_for(f"│ chat · resumed {other}")
