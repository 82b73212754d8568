"""The reaper: what an unsandboxed command runs under, so that nothing it starts outlives it.

A sandboxed command gets this from its PID namespace. An unsandboxed one (`sandbox: off`, no
bubblewrap, an iota self-call) runs as

    python -I -S reaper.py <iota's pid> bash -c COMMAND

and this small process, in its own session as every command's leader is:

- becomes a *child subreaper* (PR_SET_CHILD_SUBREAPER): whatever the command leaves behind
  when its parent exits — `cmd &`, `nohup`, `setsid`, a double fork — is re-parented to the
  reaper instead of to init, so the reaper can still find it;
- asks for SIGTERM when iota dies (PR_SET_PDEATHSIG), even by `kill -9`; iota stops a command
  the same way (SIGTERM to the leader, then SIGKILL to its process group);
- runs the command, and when the command's shell has exited, or on SIGTERM, SIGHUP or SIGINT,
  kills everything that is left (each child it has, until it has none), then exits as the
  command's shell did.

What no reaper can catch: a process that asks another program to start something (systemd-run,
at, a tmux server that was already running, a container daemon). Those run outside the command,
and an unsandboxed command has the user's full permissions to ask.

Run with -I -S, it imports only the standard library and starts in about 10 ms.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def reaper_argv(argv: list[str]) -> list[str]:
    """`argv` run under the reaper, on behalf of this process; as it is where there is no prctl
    (anything but Linux), where only the process group kill stops a command."""
    if not sys.platform.startswith("linux"):
        return argv
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), str(os.getpid()), *argv]


class _Stopped(Exception):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, frame: object) -> None:
    raise _Stopped(signum)


def main(parent: int, argv: list[str]) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    for signum in STOP_SIGNALS:
        signal.signal(signum, _stop)
    # iota may have died before the death signal was asked for: then nobody waits for this.
    if os.getppid() != parent:
        return
    status = None
    try:
        try:
            # The child gets default handlers for what Python sets up for itself (SIGPIPE and
            # SIGXFSZ ignored, SIGINT and the stop signals caught), as if bash had been started
            # directly.
            command = os.posix_spawnp(argv[0], argv, os.environ,
                                      setsigdef=(*STOP_SIGNALS, signal.SIGPIPE, signal.SIGXFSZ))
        except OSError as error:
            print(f"cannot run {argv[0]}: {error.strerror}", file=sys.stderr)
            sys.exit(127)
        while status is None:
            pid, wait_status = os.wait()
            if pid == command:
                status = wait_status
    except _Stopped as stopped:
        _kill_everything()
        _exit_like(signal_number=stopped.signum)
    _kill_everything()
    _exit_like(status=status)


def _kill_everything() -> None:
    """SIGKILL to every child until there are none: each one killed hands its own children to
    the reaper, so generation after generation is reached."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    while True:
        for pid in _children():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.wait()
        except ChildProcessError:
            return


def _children() -> list[int]:
    """The reaper's children: from /proc/self/task/<pid>/children where the kernel offers it (it
    is single-threaded), else by reading every process's parent."""
    me = os.getpid()
    try:
        with open(f"/proc/self/task/{me}/children") as listing:
            return [int(pid) for pid in listing.read().split()]
    except OSError:
        pass
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                children.append(int(entry))
    return children


def _exit_like(*, status: int | None = None, signal_number: int | None = None) -> None:
    """Exits as the command did: its exit code, or death by its signal."""
    if status is not None:
        if os.WIFEXITED(status):
            sys.exit(os.WEXITSTATUS(status))
        signal_number = os.WTERMSIG(status)
    signal.signal(signal_number, signal.SIG_DFL)
    os.kill(os.getpid(), signal_number)
    sys.exit(128 + signal_number)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2:])
