"""Inside tmux the chat names its pane and keeps the pane's state current: the real `iota` in a
real tmux, read back through tmux itself (`#{pane_title}`, `@iota_state`, the bell flag)."""

from __future__ import annotations

import time

from tests.e2e.conftest import IOTA
from tests.support.fake_model import Gate, tool_call
from tests.support.terminal import PANE, terminal  # noqa: F401  (the fixture)


def pane(screen, fmt: str) -> str:
    return screen.tmux("display-message", "-p", "-t", PANE, fmt).rstrip("\n")


def wait_for_pane(screen, fmt: str, expected: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while (seen := pane(screen, fmt)) != expected:
        assert time.monotonic() < deadline, f"{fmt} is {seen!r}, not {expected!r}"
        time.sleep(0.05)


def test_the_pane_title_and_options_follow_idle_working_waiting_idle_and_are_restored(iota, terminal):
    iota.write_config("  coder:\n    mode: agent\n    model: m\n    tools:\n      code:\n")
    gate = Gate()
    iota.model.reply(tool_calls=[tool_call("write_file", {"path": "a.txt", "content": "x"})], gate=gate)
    iota.model.reply("Written.")
    screen = terminal.start(["sh", "-c", f"printf '\\033]2;before iota\\007'; exec {IOTA} run coder"],
                            cols=110, rows=30, env=iota.env(), cwd=iota.cwd)
    wait_for_pane(screen, "#{pane_title}", "ι coder · idle")
    wait_for_pane(screen, "#{@iota_agent}|#{@iota_state}", "coder|idle")

    screen.type("write it")
    screen.send_keys("Enter")
    wait_for_pane(screen, "#{pane_title}", "ι coder · working")   # the reply is held at the gate
    wait_for_pane(screen, "#{@iota_state}", "working")  # set by a tmux command, after the title
    assert pane(screen, "#{window_bell_flag}") == "0"
    gate.open()

    screen.wait_for("wants to modify files")
    wait_for_pane(screen, "#{pane_title}", "ι coder · waiting for you")
    wait_for_pane(screen, "#{@iota_state}", "waiting for you")
    # The attention ping's BEL reaches tmux without passthrough: the window's bell flag.
    wait_for_pane(screen, "#{window_bell_flag}", "1")

    screen.send_keys("Enter")
    screen.wait_for("Written.")
    wait_for_pane(screen, "#{pane_title}", "ι coder · idle")
    wait_for_pane(screen, "#{@iota_state}", "idle")

    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    wait_for_pane(screen, "#{pane_title}", "before iota")
    wait_for_pane(screen, "#{@iota_agent}|#{@iota_state}", "|")
