"""The reaper run for real: it outlives the thread that spawned it (the kernel's parent-death
signal follows threads, and trio and the MCP SDK spawn from worker threads), it leaves a
terminal's keys to a --foreground program, and it says "not found" before it is spawned."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from iota.sandbox.reaper import raise_unless_runnable, reaper_argv

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the reaper is Linux-only")


def wait_until(condition, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout}s"
        time.sleep(0.01)


def test_a_command_spawned_from_a_thread_that_ends_keeps_running(tmp_path):
    started, go = tmp_path / "started", tmp_path / "go"
    # The command says it has started (so the reaper has asked for the parent-death signal), waits
    # for the test's go, then exits 7; the reaper exits as it did.
    argv = reaper_argv(["sh", "-c", f"touch {started}; while [ ! -e {go} ]; do sleep 0.01; done; exit 7"])
    spawned: list[subprocess.Popen] = []

    def spawn_and_end() -> None:
        spawned.append(subprocess.Popen(argv))
        wait_until(started.exists, "the command's start")

    thread = threading.Thread(target=spawn_and_end)
    thread.start()
    thread.join()
    # The kernel sends the parent-death signal when it releases the thread, a moment after join
    # returns; the thread's /proc entry goes then.
    wait_until(lambda: not Path(f"/proc/self/task/{thread.native_id}").exists(), "the thread's end")
    go.touch()
    assert spawned[0].wait(timeout=10) == 7


def test_a_foreground_program_gets_the_terminals_ctrl_c(tmp_path):
    ready = tmp_path / "ready"
    # A program that catches Ctrl+C (as Emacs does for C-g) and exits 3 on it.
    program = f"trap 'exit 3' INT; touch {ready}; while :; do sleep 0.01; done"
    process = subprocess.Popen(reaper_argv(["sh", "-c", program], foreground=True), start_new_session=True)
    wait_until(ready.exists, "the program's start")
    os.killpg(process.pid, signal.SIGINT)  # what the terminal does with Ctrl+C: the whole group
    assert process.wait(timeout=10) == 3


def test_a_background_command_is_stopped_by_sigint(tmp_path):
    ready = tmp_path / "ready"
    program = f"trap 'exit 3' INT; touch {ready}; while :; do sleep 0.01; done"
    process = subprocess.Popen(reaper_argv(["sh", "-c", program]), start_new_session=True)
    wait_until(ready.exists, "the program's start")
    os.kill(process.pid, signal.SIGINT)  # to the reaper alone: it kills the command
    assert process.wait(timeout=10) == -signal.SIGINT


def test_runnable_commands_and_the_errors_exec_would_give(tmp_path):
    script = tmp_path / "tool"
    script.write_text("#!/bin/sh\n")
    raise_unless_runnable("sh", os.defpath, tmp_path)
    with pytest.raises(PermissionError) as refused:
        raise_unless_runnable("./tool", os.defpath, tmp_path)  # not executable
    assert (refused.value.errno, refused.value.filename) == (errno.EACCES, "./tool")
    script.chmod(0o755)
    raise_unless_runnable("./tool", os.defpath, tmp_path)
    raise_unless_runnable("tool", str(tmp_path), "/")
    with pytest.raises(FileNotFoundError) as missing:
        raise_unless_runnable("no-such-command-anywhere", os.defpath, tmp_path)
    assert missing.value.filename == "no-such-command-anywhere"
    with pytest.raises(FileNotFoundError):
        raise_unless_runnable("./missing", os.defpath, tmp_path)


def test_a_command_killed_by_sigkill_leaves_the_reaper_killed_by_it_too():
    process = subprocess.run(reaper_argv(["sh", "-c", "kill -9 $$"]), capture_output=True, timeout=10)
    assert (process.returncode, process.stderr) == (-signal.SIGKILL, b"")
