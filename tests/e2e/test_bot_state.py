"""A running bot's state.json, and `iota bots` reading it: the real `iota` in tmux, killed with
SIGKILL at the end so that its state file is left behind stale."""

from __future__ import annotations

import json
import os
import re
import signal
import time

from iota.bots.bot import bot_dir
from iota.bots.state_file import STATE_NAME, read_state
from iota.bots.tasks import TaskBook
from tests.e2e.conftest import IOTA, READY
from tests.support.fake_model import Gate
from tests.support.terminal import terminal  # noqa: F401  (the fixture)

BOT = "  coder:\n    mode: bot\n    model: m\n    tools:\n      code:\n"


def wait_for_state(directory, state: str, timeout: float = 10.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        try:
            record = json.loads((directory / STATE_NAME).read_text())
            if record["state"] == state:
                return record
        except (OSError, ValueError):
            pass
        assert time.monotonic() < deadline, f"state.json never said {state!r}"
        time.sleep(0.05)


def test_state_json_follows_the_bot_and_a_killed_bots_file_is_ignored(iota, terminal):
    iota.write_config(BOT + "    auto_continue: 0\n")   # the task waits for the person
    directory = bot_dir("coder")
    directory.mkdir(parents=True)
    tasks = TaskBook(directory)
    tasks.create("migrate db", ["dump", "convert", "load", "check", "switch"])
    tasks.update_step(tasks.load()[0].id, 1, status="succeeded")
    gate = Gate()
    iota.model.reply("Done.", gate=gate)

    screen = terminal.start([IOTA, "run", "coder"], cols=120, rows=36, env=iota.env(), cwd=iota.cwd)
    screen.wait_for(READY)
    idle = wait_for_state(directory, "idle")
    pane = screen.tmux("display-message", "-p", "#{pane_id}").strip()
    assert idle["agent"] == "coder" and idle["project"] == str(iota.cwd)
    assert idle["task"] == "migrate db" and idle["step"] == "2/5"
    assert idle["tmux_pane"] == pane and idle["last_activity"] is None

    screen.type("go on")
    screen.send_keys("Enter")
    working = wait_for_state(directory, "working")
    assert working["pid"] == idle["pid"] and working["last_activity"] is not None
    listing = iota("bots")
    assert listing.returncode == 0, listing.stderr
    assert re.search(rf'^  coder  working · \d+s · task "migrate db" 2/5 · pid {idle["pid"]} · m · ',
                     listing.stdout, re.MULTILINE), listing.stdout
    gate.open()
    screen.wait_for("Done.")
    wait_for_state(directory, "idle")

    os.kill(working["pid"], signal.SIGKILL)
    screen.wait_for_exit()
    assert (directory / STATE_NAME).exists()   # nobody was there to remove it
    assert read_state(directory) is None
    listing = iota("bots").stdout
    assert "idle" not in listing and "running" not in listing and "pid" not in listing, listing


def test_a_state_file_is_removed_when_the_bot_leaves(iota, terminal):
    iota.write_config(BOT)
    screen = terminal.start([IOTA, "run", "coder"], cols=120, rows=36, env=iota.env(), cwd=iota.cwd)
    screen.wait_for(READY)
    wait_for_state(bot_dir("coder"), "idle")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    assert not (bot_dir("coder") / STATE_NAME).exists()


def test_no_bots_says_how_to_make_one(iota):
    iota.write_config("  chat: {model: m}\n")
    assert iota("bots").stdout == "No bots yet. Make one with `iota bots new <name>`, then start it with `iota run <name>`.\n"
