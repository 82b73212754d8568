"""`iota bots watch` in a real tmux: a bot started in another window shows up, changes state,
and Enter goes to its pane; outside tmux Enter prints the command that opens it."""

from __future__ import annotations

import re
import shlex
import time

from tests.e2e.conftest import IOTA
from tests.support.fake_model import Gate
from tests.support.terminal import terminal  # noqa: F401  (the fixture)

BOT = "  coder:\n    mode: bot\n    model: m\n    tools:\n      code:\n"


def current_pane(screen) -> str:
    return screen.tmux("display-message", "-p", "-t", "=test:", "#{pane_id}").strip()


def test_watch_follows_a_bot_and_enter_goes_to_its_pane(iota, terminal):
    iota.write_config(BOT + "  idle-one:\n    mode: bot\n    model: m\n")
    gate = Gate()
    iota.model.reply("Done.", gate=gate)
    screen = terminal.start([IOTA, "bots", "watch"], cols=120, rows=20, env=iota.env(), cwd=iota.cwd)
    screen.wait_for(re.compile(r"^  coder\s+not running$", re.MULTILINE))
    watch_pane = current_pane(screen)

    # The bot in a window of its own on the same tmux server (which has the test's environment).
    bot_pane = screen.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "-c", str(iota.cwd),
                           shlex.join([IOTA, "run", "coder"])).strip()
    screen.wait_for(re.compile(r"^  coder\s+~?\S*project\s+idle\s+\d+s", re.MULTILINE))
    screen.tmux("send-keys", "-t", bot_pane, "-l", "go")
    screen.tmux("send-keys", "-t", bot_pane, "Enter")
    screen.wait_for(re.compile(r"^  coder\s+\S+\s+working\s+\d+s", re.MULTILINE))
    gate.open()
    screen.wait_for(re.compile(r"^  coder\s+\S+\s+idle\s+\d+s", re.MULTILINE))
    assert re.search(r"^  idle-one\s+not running$", screen.capture(), re.MULTILINE)

    screen.send_keys("Enter")   # coder is the first row, and has the focus
    deadline = time.monotonic() + 10
    while current_pane(screen) != bot_pane:
        assert time.monotonic() < deadline, "Enter did not go to the bot's pane"
        time.sleep(0.05)
    assert current_pane(screen) != watch_pane
    screen.tmux("select-window", "-t", watch_pane)
    screen.send_keys("q")
    assert screen.wait_for_exit() == 0


def test_outside_tmux_enter_prints_the_command_that_opens_the_bot(iota, terminal):
    iota.write_config(BOT)
    screen = terminal.start(["sh", "-c", f"TMUX= exec {IOTA} bots watch"], cols=120, rows=20,
                            env=iota.env(), cwd=iota.cwd)
    screen.wait_for(re.compile(r"^  coder\s+not running$", re.MULTILINE))
    bot_pane = screen.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "-c", str(iota.cwd),
                           shlex.join([IOTA, "run", "coder"])).strip()
    screen.wait_for(re.compile(r"^  coder\s+\S+\s+idle", re.MULTILINE))
    socket = screen.tmux("display-message", "-p", "#{socket_path}").strip()
    screen.send_keys("Enter")
    assert screen.wait_for_exit() == 0
    shown = screen.tmux("capture-pane", "-p", "-t", "=test:0")   # the watch's window
    assert shown.splitlines()[0] == f"tmux -S {socket} attach-session -t {bot_pane}", shown
    screen.tmux("send-keys", "-t", bot_pane, "C-d")


def test_q_leaves_a_watch_of_no_bots(iota, terminal):
    iota.write_config("  chat: {model: m}\n")
    screen = terminal.start([IOTA, "bots", "watch"], cols=100, rows=10, env=iota.env(), cwd=iota.cwd)
    screen.wait_for("q: quit")
    screen.send_keys("q")
    assert screen.wait_for_exit() == 0
