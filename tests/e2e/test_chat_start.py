"""Start-up and exit, end to end in tmux: a card that names the agent and what it loaded, a meter
that counts the prompt and tools from the first screen, errors said before any screen, the last
screen left in the terminal on exit, and a mouse that scrolls without taking every motion."""

from __future__ import annotations

import re
import sys

from tests.e2e.conftest import IOTA, READY
from tests.e2e.test_chat import chat, saved_records  # noqa: F401  (the fixture)
from tests.support.terminal import terminal  # noqa: F401  (the fixture under `chat`)

PANE = "=test:"
ALTERNATE_SCREEN = "\x1b[?1049h"
SHELL_PROMPT = "test$"


def shell(iota, chat, tmp_path, cols: int = 110, rows: int = 32):
    """A shell in tmux whose every output byte is recorded, in the project with iota's HOME."""
    rcfile = tmp_path / "bashrc"
    rcfile.write_text(f"PS1='{SHELL_PROMPT} '\n")
    screen = chat.terminals.start(["bash", "--noprofile", "--rcfile", str(rcfile), "-i"], cols=cols, rows=rows,
                                  env=iota.env(), cwd=iota.cwd)
    screen.wait_for(SHELL_PROMPT)
    screen.output = tmp_path / "pane-output"
    screen._tmux("pipe-pane", "-o", "-t", PANE, f"cat >> {screen.output}")
    return screen


def run(screen, command: str) -> None:
    screen.type(command)
    screen.send_keys("Enter")


def test_the_card_names_the_agent_and_what_agent_mode_loaded(iota, chat):
    (iota.cwd / ".git").mkdir()
    (iota.cwd / "AGENTS.md").write_text("Be brief.\n")
    skill = iota.cwd / ".agents" / "skills" / "release"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: release\ndescription: Cut a release.\n---\nSteps.\n")
    iota.write_config(f"  coder:\n    mode: agent\n    model: m\n"
                      f"mcp_servers:\n  time: {{command: {sys.executable}, args: [-m, mcp_server_time]}}\n")
    screen = chat("run", "coder")
    shown = screen.wait_for(re.compile(r"│ coder · agent · session [0-9a-z]{12}"))
    assert "│ 1 AGENTS.md · 1 skill · MCP: time" in shown


def test_two_bots_side_by_side_are_told_apart(iota, chat):
    iota.write_config("  alpha:\n    mode: bot\n    model: m\n  beta:\n    mode: bot\n    model: m\n")
    first, second = chat("run", "alpha"), chat("run", "beta")
    first.wait_for(re.compile(r"│ alpha · bot · session [0-9a-z]{12}"))
    second.wait_for(re.compile(r"│ beta · bot · session [0-9a-z]{12}"))


def test_the_meter_counts_the_system_prompt_and_tools_from_the_first_screen(iota, chat):
    (iota.cwd / ".git").mkdir()
    iota.write_config("  coder:\n    mode: agent\n    model: m\n    tools:\n      code:\n      shell:\n")
    screen = chat("run", "coder")
    # the tools' definitions alone weigh over 1k (counted as the chat opens, before any reply)
    screen.wait_for(re.compile(r"^m · ≈[1-9][\d.]*k / 200k", re.MULTILINE))
    assert not iota.model.requests


def test_on_exit_the_last_screen_stays_with_how_to_continue(iota, chat, tmp_path):
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("The answer is **42**.")
    screen = shell(iota, chat, tmp_path)
    run(screen, f"{IOTA} run chat")
    screen.wait_for(READY)
    run(screen, "what is the answer?")
    screen.wait_for("The answer is 42.")
    screen.send_keys("C-d")
    shown = screen.wait_for(re.compile(rf"Continue with: iota resume [0-9a-z]{{12}}\n{re.escape(SHELL_PROMPT)}"))
    assert "❯ what is the answer?\n\nThe answer is 42.\n\nContinue with: iota resume" in shown
    bundle, _ = saved_records()
    assert f"iota resume {bundle.name}" in shown


def test_a_bot_says_how_to_come_back_to_it(iota, chat, tmp_path):
    iota.write_config("  coder:\n    mode: bot\n    model: m\n")
    screen = shell(iota, chat, tmp_path)
    run(screen, f"{IOTA} run coder")
    screen.wait_for(READY)
    screen.send_keys("C-d")
    screen.wait_for(f"Continue with: iota run coder\n{SHELL_PROMPT}")


def test_errors_known_before_the_screen_are_said_without_it(iota, chat, tmp_path):
    iota.write_config("  coder:\n    mode: bot\n    model: m\n")
    running = chat("run", "coder")  # the bot, in another terminal
    screen = shell(iota, chat, tmp_path)
    run(screen, f"{IOTA} resume nosuchsession")
    screen.wait_for(re.compile(rf'Error: no session matches "nosuchsession"\n{re.escape(SHELL_PROMPT)}$', re.M))
    run(screen, f"{IOTA} run coder")
    screen.wait_for(re.compile(rf"Error: bot coder is open in another iota process \(pid \d+\)\n"
                               rf"{re.escape(SHELL_PROMPT)}$", re.M))
    assert ALTERNATE_SCREEN not in screen.output.read_text(errors="replace")  # no screen flashed up
    running.send_keys("C-d")
    assert running.wait_for_exit() == 0


def test_iota_with_run_flags_is_iota_run(iota, chat):
    iota.write_config("  default: {model: m}\n")
    screen = chat("--no-save")
    screen.wait_for("default · chat · not saved · /save keeps it")


def test_the_mouse_wheel_scrolls_and_held_button_motion_is_not_asked_for(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("\n\n".join(f"paragraph {n}" for n in range(1, 61)))
    screen = chat("run", "chat")
    screen.type("sixty paragraphs")
    screen.send_keys("Enter")
    screen.wait_for("paragraph 60")
    flags = screen._tmux("display-message", "-p", "-t", PANE,
                         "#{mouse_standard_flag}#{mouse_button_flag}#{mouse_all_flag}#{mouse_sgr_flag}")
    assert flags.strip() == "1001"  # presses and the wheel, SGR-encoded; not every motion
    for _ in range(10):
        screen._tmux("send-keys", "-t", PANE, "-l", "\x1b[<64;10;10M")  # the wheel, up
    shown = screen.wait_for("paragraph 40")
    assert "paragraph 60" not in shown
