"""Drive a program in a real terminal through tmux, for end-to-end tests.

Each terminal is a detached tmux session on a tmux server of its own (its own socket, no user
config), of a fixed size, running one command with the environment and directory given. Keys go
in with `send_keys` (tmux key names: `Enter`, `C-c`, `Up`, `S-Enter`, or plain text) or `type`
(text, sent literally); what the terminal shows comes out with `capture`. The shell around the
command stays after it exits (see `Terminal`), so its last screen can still be read.

The exit status is written to a file by the shell that runs the command (`sh -c 'command; echo
$? > file'`), because tmux (3.3a) under load sometimes never collects a pane's exit status: the
pane reads as dead with no status and its process stays a zombie. That shell traps SIGINT with
`:`, so a Ctrl+C that reaches the command (which still gets the default handler: a trap, unlike
an ignore, is not inherited) does not also end the shell before it has written the status.

    from tests.support.terminal import terminal  # noqa: F401  (the fixture)

    def test_echo(terminal):
        screen = terminal.start([sys.executable, "-m", "tests.ui.echo_chat"], cols=100, rows=30,
                                env={"PYTHONPATH": REPO}, cwd=project)
        screen.wait_for("ι> iota")
        screen.type("hello")
        screen.send_keys("Enter")
        screen.wait_for(re.compile(r"^echo: hello$", re.MULTILINE))
        screen.send_keys("C-d")
        assert screen.wait_for_exit() == 0

`capture` gives the screen's rows with their trailing blanks removed. `wait_for` polls it until
the text (or regex) is on it, and on timeout fails the test with the screen it last saw, so a
failure shows what the person would have seen. The fixture kills every server it started when
the test ends, however it ends.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

try:
    import pytest
except ImportError:  # the benchmarks drive terminals from a plain install, without the test extras
    pytest = None

POLL_SECONDS = 0.02
SESSION = "test"
PANE = f"={SESSION}:"
TMUX_CONFIG = """\
set -g remain-on-exit on
set -g history-limit 5000
set -sg escape-time 0
set -g status off
set -g default-shell /bin/sh
"""

_server_numbers = itertools.count()


class Terminal:
    """One tmux session: a pane of `cols` × `rows` running a command."""

    def __init__(self, server: str, config: Path, command: Sequence[str], cols: int, rows: int,
                 env: Mapping[str, str], cwd: Path):
        self._server = server
        self._config = config
        self._socket: Path | None = None
        # tmux marks a pane dead when its pty closes but may learn the exit status much later, or
        # never, so a small shell around the command writes the status to a file of our own. The
        # shell then stays (a sleep the server's end takes along): tmux 3.3a under load drops
        # what a command wrote just before its pane died (28 of 30 quick `echo`s showed a blank
        # screen), so a pane that never dies keeps a last screen such as an `Error:` line.
        self._status_file = config.parent / f"exit-status-{server}"
        wrapped = (f"trap : INT; {shlex.join(command)}; echo $? > {shlex.quote(str(self._status_file))}; "
                   "exec sleep 86400")
        try:
            # A server of its own, started by this call with `env`, which the session inherits.
            self._tmux("new-session", "-d", "-s", SESSION, "-x", str(cols), "-y", str(rows), "-c", str(cwd),
                       wrapped, env=env)
            self._socket = Path(self._tmux("display-message", "-p", "#{socket_path}").strip())
        except BaseException:
            self.kill()
            raise

    def _tmux(self, *arguments: str, env: Mapping[str, str] | None = None) -> str:
        done = subprocess.run(["tmux", "-L", self._server, "-f", str(self._config), *arguments],
                              capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(arguments)} failed: {done.stderr.strip()}")
        return done.stdout

    def tmux(self, *arguments: str) -> str:
        """Any tmux command on this terminal's server; its output (`display -p -t … '#{pane_title}'`)."""
        return self._tmux(*arguments)

    def pane_pid(self) -> int:
        """The process id of the shell that runs the command (the command is its child)."""
        return int(self._tmux("display-message", "-p", "-t", PANE, "#{pane_pid}").strip())

    def send_keys(self, *keys: str) -> None:
        """tmux key names (`Enter`, `C-c`, `Escape`, `Up`, `M-Enter`, …); other words go in as text."""
        self._tmux("send-keys", "-t", PANE, *keys)

    def type(self, text: str) -> None:
        """Exactly this text, each character a key (a newline in it is a line feed, Ctrl+J)."""
        self._tmux("send-keys", "-t", PANE, "-l", text)

    def capture(self) -> str:
        """The text on the screen now, one line per row, trailing blanks removed."""
        shown = self._tmux("capture-pane", "-p", "-t", PANE)
        return "\n".join(line.rstrip() for line in shown.splitlines())

    def wait_for(self, expected: str | re.Pattern[str], timeout: float = 10.0) -> str:
        """Wait until `expected` (a substring, or a regex to search for) is on the screen; return the screen."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.capture()
            found = expected.search(screen) if isinstance(expected, re.Pattern) else expected in screen
            if found:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{expected!r} did not appear within {timeout}s; the screen:\n{screen}")
            time.sleep(POLL_SECONDS)

    def wait_for_gone(self, text: str, timeout: float = 10.0) -> str:
        """Wait until `text` is no longer on the screen (a status row redrawn); return the screen."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.capture()
            if text not in screen:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} was still on the screen after {timeout}s:\n{screen}")
            time.sleep(POLL_SECONDS)

    def wait_for_exit(self, timeout: float = 10.0) -> int:
        """Wait until the command has exited; return its exit status."""
        deadline = time.monotonic() + timeout
        while True:
            status = self._status_file.read_text() if self._status_file.exists() else ""
            if status.endswith("\n"):
                return int(status)
            if time.monotonic() > deadline:
                raise AssertionError(f"the command did not exit within {timeout}s; the screen:\n{self.capture()}")
            time.sleep(POLL_SECONDS)

    def kill(self) -> None:
        """End the server and everything running in it; tmux leaves its socket file behind."""
        subprocess.run(["tmux", "-L", self._server, "kill-server"], capture_output=True, check=False)
        if self._socket is not None:
            self._socket.unlink(missing_ok=True)


def say(screen: Terminal, text: str, answer: str | re.Pattern[str]) -> str:
    """One message of a conversation: type `text`, press Enter, wait for `answer`; return the screen."""
    screen.type(text)
    screen.send_keys("Enter")
    return screen.wait_for(answer)


class Terminals:
    """What the `terminal` fixture gives a test: `start(...)` opens a terminal."""

    def __init__(self, directory: Path):
        self._directory = directory
        self._started: list[Terminal] = []

    def start(self, command: Sequence[str], *, cols: int = 100, rows: int = 30,
              env: Mapping[str, str] | None = None, cwd: Path | str | None = None) -> Terminal:
        """Run `command` in a new terminal. `env` is added to this process's environment."""
        config = self._directory / "tmux.conf"
        config.write_text(TMUX_CONFIG)
        server = f"iota-test-{os.getpid()}-{next(_server_numbers)}"
        environment = {**os.environ, **(env or {})}
        environment.pop("TMUX", None)  # a test run from inside tmux still starts servers of its own
        terminal = Terminal(server, config, command, cols, rows, environment, Path(cwd or self._directory))
        self._started.append(terminal)
        return terminal

    def kill_all(self) -> None:
        for terminal in self._started:
            terminal.kill()


if pytest is not None:
    @pytest.fixture
    def terminal(tmp_path: Path) -> Iterator[Terminals]:
        if shutil.which("tmux") is None:
            pytest.skip("tmux is not installed (Debian: apt-get install tmux)")
        terminals = Terminals(tmp_path)
        try:
            yield terminals
        finally:
            terminals.kill_all()
