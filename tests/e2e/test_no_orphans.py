"""Nothing iota starts outlives it: an MCP stdio server still starting, and a background shell
job, are gone within seconds of iota's end — the terminal closed under it, or `kill -9`.

Each test finds the processes by what they wrote (the slow server writes its pid and its
helper's) or by a marker in their command line, and polls until they are gone."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import IOTA, READY
from tests.support import slow_mcp_server
from tests.support.fake_model import tool_call
from tests.support.mcp_servers import is_alive
from tests.support.terminal import terminal  # noqa: F401  (the fixture)

BOT = "  coder:\n    mode: bot\n    model: m\n    tools:\n      code:\n"
# What the orphans get to disappear: the reaper's SIGTERM, and the SDK's own two-second grace
# on a clean exit, with room for a loaded machine.
GONE_SECONDS = 15.0


def slow_server(pids_file: Path) -> str:
    return (f"mcp_servers:\n  slow: {{command: {sys.executable}, "
            f"args: [{slow_mcp_server.__file__}, {pids_file}]}}\n")


def read_pids(path: Path, timeout: float = 30.0) -> list[int]:
    """The pids the slow server wrote, once it has written them."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"the slow MCP server did not start within {timeout}s"
        time.sleep(0.05)
    return [int(line) for line in path.read_text().split()]


def iota_pid(screen) -> int:
    """The iota process in the terminal: the first process under the pane's shell that runs
    the `iota` command."""
    parents: dict[int, int] = {}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                    command = (entry / "cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                pid = int(entry.name)
                parents[pid] = int(stat.rpartition(")")[2].split()[1])
                if IOTA.encode() in command[:2] and screen.pane_pid() in _ancestors(pid, parents):
                    return pid
        time.sleep(0.05)
    raise AssertionError("no iota process under the terminal's shell")


def _ancestors(pid: int, parents: dict[int, int]) -> list[int]:
    found = []
    while pid in parents and pid > 1:
        pid = parents[pid]
        found.append(pid)
    return found


def processes_with(marker: str) -> list[int]:
    """The live processes whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes() and is_alive(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def assert_gone(pids: list[int], what: str) -> None:
    deadline = time.monotonic() + GONE_SECONDS
    while any(is_alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            alive = [pid for pid in pids if is_alive(pid)]
            for pid in alive:  # leave nothing behind for the next test, then fail
                os.kill(pid, signal.SIGKILL)
            raise AssertionError(f"{what} outlived iota: pids {alive} still running after {GONE_SECONDS}s")
        time.sleep(0.05)


@pytest.fixture
def starting_bot(iota, terminal, tmp_path):
    """`iota run coder` with a stdio MCP server that is still starting; gives the terminal and
    the pids of the server and of its helper."""
    pids_file = tmp_path / "slow-server.pids"
    path = iota.write_config(BOT)
    path.write_text(path.read_text() + slow_server(pids_file))
    screen = terminal.start([IOTA, "run", "coder"], cols=120, rows=36, env=iota.env(), cwd=iota.cwd)
    pids = read_pids(pids_file)
    assert all(is_alive(pid) for pid in pids)
    return screen, pids


def test_a_starting_mcp_server_dies_when_the_terminal_goes_away(starting_bot):
    screen, pids = starting_bot
    iota = iota_pid(screen)
    screen.kill()  # the tmux server goes, and with it the terminal: iota gets SIGHUP
    assert_gone([iota], "iota itself")
    assert_gone(pids, "the MCP server and its helper")


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=["kill_9", "term", "int"])
def test_a_starting_mcp_server_dies_with_iota_on_a_signal(starting_bot, signum):
    screen, pids = starting_bot
    iota = iota_pid(screen)
    os.kill(iota, signum)
    assert_gone([iota], "iota itself")
    assert_gone(pids, "the MCP server and its helper")


@pytest.mark.parametrize("sandbox", ["off", "auto"])
def test_a_background_job_dies_with_iota_on_kill_9(iota, terminal, sandbox):
    iota.write_config(f"  chat:\n    model: m\n    tools:\n      shell: {{sandbox: {sandbox}, auto_run: true}}\n")
    marker = f"orphan-check-{sandbox}-{os.getpid()}"
    # `sleep` under a name of its own, in a process group of its own (setsid), so that only
    # something that follows the job's children can still reach it.
    command = f"setsid bash -c 'exec -a {marker} sleep 3600' & echo started; wait"
    iota.model.reply("Starting it.", tool_calls=[tool_call("shell", {"command": command, "background": True})])
    iota.model.reply("It runs in the background.")
    screen = terminal.start([IOTA, "run", "chat"], cols=120, rows=36, env=iota.env(), cwd=iota.cwd)
    screen.wait_for(READY)
    screen.type("start it")
    screen.send_keys("Enter")
    screen.wait_for("It runs in the background.")
    screen.wait_for(re.compile(r"· job b1 "))
    deadline = time.monotonic() + 10
    while not (jobs := processes_with(marker)):
        assert time.monotonic() < deadline, "the background job's process did not start"
        time.sleep(0.05)
    # The marker is in the job's command line too: the reaper or bwrap around it, its shell.
    sandboxed = any(os.readlink(f"/proc/{pid}/ns/pid") != os.readlink("/proc/self/ns/pid") for pid in jobs)
    if sandbox == "auto" and not sandboxed:
        pytest.skip("the sandbox is unavailable here: the job ran unsandboxed")
    assert sandboxed == (sandbox == "auto")
    os.kill(iota_pid(screen), signal.SIGKILL)
    assert_gone(jobs, "the background job")


def test_the_editor_dies_with_iota_on_kill_9(iota, terminal, tmp_path):
    pid_file = tmp_path / "editor.pid"
    editor = tmp_path / "editor.sh"
    # An editor that says where it is, then waits for a key it will never get.
    editor.write_text(f"#!/bin/sh\necho $$ > {pid_file}.partial && mv {pid_file}.partial {pid_file}\n"
                      "printf 'EDITOR OPEN\\n'\nIFS= read -r line\n")
    editor.chmod(0o755)
    iota.write_config("  chat: {model: m}\n")
    # The terminal outlives iota, as a person's does: its shell goes on after iota has ended.
    screen = terminal.start(["sh", "-c", f"{IOTA} run chat; exec sleep 3600"], cols=120, rows=36,
                            env=iota.env(EDITOR=str(editor), VISUAL=""), cwd=iota.cwd)
    screen.wait_for(READY)
    screen.type("/edit")
    screen.send_keys("Enter")
    screen.wait_for("EDITOR OPEN")
    [pid] = read_pids(pid_file)
    os.kill(iota_pid(screen), signal.SIGKILL)
    assert_gone([pid], "the editor")
