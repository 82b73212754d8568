"""One command's process, from spawn to reaping: `spawn` it, then `run_to_end`, which waits for
it to exit, keeps its log small meanwhile, and stops it if cancelled.

Commands are spawned from the main thread, on purpose. bwrap's `--die-with-parent` uses
PR_SET_PDEATHSIG, which fires when the *thread* that spawned the process exits, not the process:
spawned from one of trio's worker threads (as `trio.run_process` does), a sandboxed command was
killed ten seconds after that thread went idle and exited. The main thread lives as long as iota,
so the signal now means what it says: iota is gone. (The reaper copes with either thread: see
reaper.py.) `Popen` uses vfork here, so the event loop waits a millisecond or so per spawn.

The log is opened for appending by the caller, and one that passes `MAX_LOG_BYTES` is cut back
to its first `LOG_HEAD_BYTES` and a marker, then grows again (a background `yes` writes 150 MB a
second).
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO

import trio

# How long a stopped command's leader (bwrap, or the reaper) gets to take its processes down
# after SIGTERM before the whole group gets SIGKILL.
STOP_GRACE_SECONDS = 1.0

# The log of a command is kept under this size: past it, everything after the first
# LOG_HEAD_BYTES is dropped. It is checked every LOG_CHECK_SECONDS while it grows, so a fast
# writer overshoots by what it writes in that time (`yes`: some 20 MB), and less often while
# it is quiet.
MAX_LOG_BYTES = 16 * 1024 * 1024
LOG_HEAD_BYTES = 64 * 1024
LOG_CHECK_SECONDS = 0.1
LOG_QUIET_SECONDS = 2.0
LOG_CUT = "\n[... at least {} bytes of output dropped: a command's log is kept under {} MiB ...]\n"


def spawn(argv: list[str], cwd: Path, env: Mapping[str, str] | None, log: BinaryIO) -> subprocess.Popen[bytes]:
    """Starts a command in a session of its own, output to `log`, from the calling (main) thread;
    see the module docstring for why. `env` None is iota's own environment."""
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env={**(os.environ if env is None else env), "PWD": str(cwd)},
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


async def run_to_end(process: subprocess.Popen[bytes], log: BinaryIO) -> int:
    """Waits for the process to exit, keeping its log small meanwhile, and reaps it; when
    cancelled, stops it first (shielded: the process is reaped before this returns or raises)."""
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_keep_log_small, log)
            await _exited(process)
            nursery.cancel_scope.cancel()
    finally:
        if process.poll() is None:  # cancelled while it runs
            with trio.CancelScope(shield=True):
                await _stop(process)
            process.wait()
    return process.wait()


async def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the leader — bwrap, whose exit takes its PID namespace down, or the reaper,
    which kills what it adopted — then SIGKILL to the whole process group, then wait for the end.
    The leader is waited for without being reaped, so its pid (the group's id) cannot be reused
    before the group is killed."""
    try:
        os.kill(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    with trio.move_on_after(STOP_GRACE_SECONDS):
        await _exited(process)
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    await _exited(process)


async def _exited(process: subprocess.Popen[bytes]) -> None:
    """Returns once the process has exited, leaving it unreaped (a zombie holds its pid)."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):
        # No pidfd (macOS, or a Linux before 5.3): a thread waits, and is abandoned if cancelled.
        await trio.to_thread.run_sync(_wait_without_reaping, process, abandon_on_cancel=True)
        return
    try:
        await trio.lowlevel.wait_readable(pidfd)
    finally:
        os.close(pidfd)


def _wait_without_reaping(process: subprocess.Popen[bytes]) -> None:
    if not hasattr(os, "waitid"):
        process.wait()  # Reaps it: where there is no waitid, the group kill may come a moment late.
        return
    try:
        os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)
    except ChildProcessError:
        pass  # Already reaped.


async def _keep_log_small(log: BinaryIO) -> None:
    """Cuts a log past MAX_LOG_BYTES back to its first LOG_HEAD_BYTES (at a line end) and a
    marker saying how much was dropped; runs until cancelled. It looks every LOG_CHECK_SECONDS
    while the log grows, less and less often (up to LOG_QUIET_SECONDS) while it does not.

    The command writes through a descriptor opened for appending, so its next write lands after
    the cut; the marker is written through a second descriptor at the cut itself, over whatever
    the command managed to append in between."""
    fd = log.fileno()
    with open(log.name, "r+b", buffering=0) as editor:
        head: int | None = None
        marker_length = dropped = last_size = 0
        delay = LOG_CHECK_SECONDS
        while True:
            await trio.sleep(delay)
            size = os.fstat(fd).st_size
            delay = LOG_CHECK_SECONDS if size != last_size else min(delay * 2, LOG_QUIET_SECONDS)
            last_size = size
            if size <= MAX_LOG_BYTES:
                continue
            if head is None:
                start = os.pread(fd, LOG_HEAD_BYTES, 0)
                head = start.rfind(b"\n") + 1 or len(start)
            dropped += size - head - marker_length
            os.ftruncate(fd, head)
            marker = LOG_CUT.format(dropped, MAX_LOG_BYTES // (1024 * 1024)).encode()
            os.pwrite(editor.fileno(), marker, head)
            marker_length = len(marker)
