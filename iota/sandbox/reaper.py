"""The reaper: what every process iota starts runs under, so that nothing outlives iota.

A sandboxed command gets this from its PID namespace and bwrap's `--die-with-parent`. Everything
else iota starts — an unsandboxed command (`sandbox: off`, no bubblewrap, an iota self-call), an
MCP stdio server, `$EDITOR`, a terminal host's status command — runs as

    python -I -S reaper.py <iota's pid> [--foreground] COMMAND ARG…

and this small process (the leader of the command's session, or, with `--foreground`, a member
of iota's own process group on the terminal):

- becomes a *child subreaper* (PR_SET_CHILD_SUBREAPER): whatever the command leaves behind
  when its parent exits — `cmd &`, `nohup`, `setsid`, a double fork — is re-parented to the
  reaper instead of to init, so the reaper can still find it;
- asks the kernel for a signal when its parent dies (PR_SET_PDEATHSIG), which comes even when
  iota is killed with `kill -9`. The kernel sends it when the parent *thread* exits, not the
  parent process: a process started from one of trio's worker threads (`trio.run_process`, the
  MCP SDK's `anyio.open_process`) gets it when that idle thread ends, ten seconds later, and is
  handed to another thread of iota. So the signal is one of its own, PARENT_GONE, and says only
  "look": the reaper stops the command when its parent is no longer iota, and otherwise waits
  for the next one (it comes again when the new parent thread ends);
- runs the command, and when the command has exited, or on SIGTERM, SIGHUP or SIGINT (iota
  stops a command with SIGTERM to the leader, then SIGKILL to its process group), or when iota
  is gone, kills everything that is left (each child it has, until it has none), then exits as
  the command did.

`--foreground` is for a program that takes over the terminal ($EDITOR): the keys the terminal
turns into signals for its whole foreground group (Ctrl+C, Ctrl+\\) are the program's, so the
reaper ignores SIGINT and SIGQUIT and lets the program decide; the terminal going away (SIGHUP)
still ends both.

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
# The keys of a terminal, which a --foreground reaper leaves to its program.
TERMINAL_KEY_SIGNALS = (signal.SIGINT, signal.SIGQUIT)
# What the kernel sends when the parent thread exits: a signal nobody else sends a reaper, so
# that it is never taken for an order to stop (see the module docstring).
PARENT_GONE = signal.SIGUSR1
FOREGROUND = "--foreground"


def reaper_argv(argv: list[str], *, foreground: bool = False) -> list[str]:
    """`argv` run under the reaper, on behalf of this process; as it is where there is no prctl
    (anything but Linux), where only the process group kill stops a command."""
    if not sys.platform.startswith("linux"):
        return argv
    mode = [FOREGROUND] if foreground else []
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), str(os.getpid()), *mode, *argv]


def raise_unless_runnable(command: str, search_path: str, cwd: str | os.PathLike[str]) -> None:
    """FileNotFoundError or PermissionError naming `command`, as exec would fail on it: a name
    with a slash is a path from `cwd`, any other is looked for in `search_path`. Under the reaper
    the spawn itself always succeeds (the reaper is what is spawned), so a caller that wants to
    say "command not found" asks this first."""
    import errno
    import shutil

    if "/" in command:
        path = os.path.join(cwd, command)
        if not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), command)
    elif shutil.which(command, path=search_path) is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)


class _Stopped(Exception):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, frame: object) -> None:
    raise _Stopped(signum)


def main(parent: int, argv: list[str]) -> None:
    foreground = argv[:1] == [FOREGROUND]
    if foreground:
        argv = argv[1:]

    def look_at_parent(signum: int, frame: object) -> None:
        # Handed from an exited thread of iota to another: iota is still there.
        if os.getppid() != parent:
            raise _Stopped(signal.SIGTERM)

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    signal.signal(PARENT_GONE, look_at_parent)
    libc.prctl(PR_SET_PDEATHSIG, PARENT_GONE, 0, 0, 0)
    for signum in STOP_SIGNALS:
        signal.signal(signum, _stop)
    if foreground:
        for signum in TERMINAL_KEY_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)
    # iota may have died before the death signal was asked for: then nobody waits for this.
    if os.getppid() != parent:
        return
    status = None
    try:
        try:
            # The child gets default handlers for what Python sets up for itself (SIGPIPE and
            # SIGXFSZ ignored, SIGINT caught) and for what the reaper catches or ignores, as if
            # it had been started directly.
            command = os.posix_spawnp(argv[0], argv, os.environ,
                                      setsigdef=(*STOP_SIGNALS, *TERMINAL_KEY_SIGNALS, PARENT_GONE,
                                                 signal.SIGPIPE, signal.SIGXFSZ))
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
    for signum in (*STOP_SIGNALS, PARENT_GONE):
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
    if signal_number != signal.SIGKILL:  # whose handler cannot be set, nor need be
        signal.signal(signal_number, signal.SIG_DFL)
    os.kill(os.getpid(), signal_number)
    sys.exit(128 + signal_number)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2:])
