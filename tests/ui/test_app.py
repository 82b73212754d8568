"""The chat app in a terminal: on a pseudo-terminal in this process (keys in, inputs out, the
terminal's settings while it runs and after), then end to end in tmux, driven like a person
would, against a scripted stand-in for the actors (tests/ui/echo_chat.py)."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import sys
import termios
from contextlib import suppress
from pathlib import Path

import pytest
import trio

from actors.events import Card, Interrupt, Leave, Status, Submit, TextDelta
from tests.support.terminal import terminal  # noqa: F401  (the fixture)
from ui.app import ChatApp, ChatTerminal

REPO = Path(__file__).resolve().parents[2]
SHELL_PROMPT = "test$"
STATUS = Status(model="model-x", context_used=10, context_window=1000)


class PseudoTerminal:
    """A pty whose far end this test plays: it presses keys and reads (and discards) the screen."""

    def __init__(self, cols: int = 80, rows: int = 24):
        self.master, self.slave = os.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        os.set_blocking(self.master, False)
        self.output = bytearray()
        self.screen = ChatTerminal(input=open(self.slave, "rb", buffering=0, closefd=False),
                                   output=open(self.slave, "w", encoding="utf-8", closefd=False))

    def press(self, keys: bytes) -> None:
        os.write(self.master, keys)

    async def read_output(self) -> None:
        """Keep the pty's buffer from filling, which would block the app's writes."""
        while True:
            await trio.lowlevel.wait_readable(self.master)
            try:
                self.output += os.read(self.master, 65536)
            except BlockingIOError:
                continue

    def read_the_rest(self) -> bytes:
        with suppress(BlockingIOError):
            while True:
                self.output += os.read(self.master, 65536)
        return bytes(self.output)

    async def wait_for_output(self, expected: bytes) -> None:
        with trio.fail_after(10):
            while expected not in self.output:
                await trio.sleep(0.01)

    def close(self) -> None:
        os.close(self.master)
        os.close(self.slave)


@pytest.fixture
def pty():
    pseudo_terminal = PseudoTerminal()
    yield pseudo_terminal
    pseudo_terminal.close()


async def start_app(nursery: trio.Nursery, pty: PseudoTerminal, no_color: bool = False):
    """The app on `pty`, drawn once. Returns the channel ends the actors would hold, and an
    event set when the app's `run` has returned."""
    events_send, events_receive = trio.open_memory_channel[object](0)
    inputs_send, inputs_receive = trio.open_memory_channel[object](10)
    returned = trio.Event()

    async def run_app(task_status=trio.TASK_STATUS_IGNORED) -> None:
        app = ChatApp(screen=pty.screen, home="/nowhere", no_color=no_color)
        await app.run(events_receive, inputs_send, task_status=task_status)
        returned.set()

    nursery.start_soon(pty.read_output)
    await nursery.start(run_app)
    await events_send.send(STATUS)
    await pty.wait_for_output(b"model-x")
    return events_send, inputs_receive, returned


async def test_keys_become_inputs_and_the_terminal_is_given_back_as_it_was(pty):
    before = termios.tcgetattr(pty.slave)
    async with trio.open_nursery() as nursery:
        events, inputs, returned = await start_app(nursery, pty)
        running = termios.tcgetattr(pty.slave)
        assert not running[0] & termios.ICRNL, "Enter and Ctrl+J must arrive as different bytes"
        assert running[6][termios.VINTR] == bytes([os.fpathconf(pty.slave, "PC_VDISABLE")]), "Ctrl+C is a key"
        pty.press(b"one\ntwo")  # keys that come together with a newline inside: a paste, not sent
        await pty.wait_for_output(b"two")
        for keys, sent in ((b"\r", Submit("one\ntwo")), (b"hello\r", Submit("hello")),
                           (b"\x03", Interrupt()), (b"\x04", Leave(0))):
            pty.press(keys)
            with trio.fail_after(10):
                assert await inputs.receive() == sent
        await events.aclose()  # the actors are done: the app returns
        with trio.fail_after(10):
            await returned.wait()
        nursery.cancel_scope.cancel()  # the pty reader
    assert termios.tcgetattr(pty.slave) == before
    shown = pty.read_the_rest()
    assert shown.count(b"\x1b[>4;1m") == shown.count(b"\x1b[>4m") == 1  # modifyOtherKeys asked for, then reset
    # bracketed paste on without asking the terminal first, then off
    assert shown.count(b"\x1b[?2004h") == shown.count(b"\x1b[?2004l") == 1
    # the mouse: presses and the wheel in SGR form, but not every motion of a held button
    assert b"\x1b[?1000h" in shown and b"\x1b[?1006h" in shown and b"\x1b[?1002h" not in shown
    assert b"\x1b[?1000l" in shown


async def test_keys_typed_before_the_start_are_kept(pty):
    before = termios.tcgetattr(pty.slave)
    pty.press(b"typed early")  # the terminal still edits a line: no read returns it before Enter
    async with trio.open_nursery() as nursery:
        events, inputs, returned = await start_app(nursery, pty)
        pty.press(b"\r")
        with trio.fail_after(10):
            assert await inputs.receive() == Submit("typed early")
        await events.aclose()
        with trio.fail_after(10):
            await returned.wait()
        nursery.cancel_scope.cancel()
    assert termios.tcgetattr(pty.slave) == before


async def test_an_enter_typed_as_the_first_frame_hands_over_still_sends(pty):
    # Between the first frame's raw mode and urwid's, the terminal has its own modes back for a
    # moment, and its ICRNL turns an Enter typed then into a line feed: it must still send.
    before = termios.tcgetattr(pty.slave)
    pty.screen = ChatTerminal(input=open(pty.slave, "rb", buffering=0, closefd=False),
                              output=open(pty.slave, "w", encoding="utf-8", closefd=False),
                              typed_ahead=lambda: b"sent on the frame\r")
    pty.press(b"typed in between\r")  # the driver hands it on as `typed in between\n`
    async with trio.open_nursery() as nursery:
        events, inputs, returned = await start_app(nursery, pty)
        with trio.fail_after(10):
            assert await inputs.receive() == Submit("sent on the frame")
            assert await inputs.receive() == Submit("typed in between")
        await events.aclose()
        with trio.fail_after(10):
            await returned.wait()
        nursery.cancel_scope.cancel()
    assert termios.tcgetattr(pty.slave) == before


async def test_the_terminal_is_given_back_when_the_app_fails(pty):
    before = termios.tcgetattr(pty.slave)
    with pytest.RaisesGroup(pytest.RaisesExc(TypeError, match="no way to draw"), flatten_subgroups=True):
        async with trio.open_nursery() as nursery:
            events, _, _ = await start_app(nursery, pty)
            await events.send("not an event")
    assert termios.tcgetattr(pty.slave) == before


async def test_the_app_returns_when_the_surrounding_scope_is_cancelled(pty):
    before = termios.tcgetattr(pty.slave)
    async with trio.open_nursery() as nursery:
        events, _, _ = await start_app(nursery, pty)
        await events.send(TextDelta("streaming"))
        await pty.wait_for_output(b"streaming")
        nursery.cancel_scope.cancel()
    assert termios.tcgetattr(pty.slave) == before


def foreground_colours(output: bytes) -> set[int]:
    """The foreground colours the SGR sequences in `output` set (39, the default, is none)."""
    colours = set()
    for parameters in re.findall(rb"\x1b\[([0-9;]*)m", output):
        colours |= {int(p) for p in parameters.split(b";") if p and (30 <= int(p) <= 38 or 90 <= int(p) <= 97)}
    return colours


@pytest.mark.parametrize("no_color", [False, True])
async def test_no_color_draws_the_card_without_colour(pty, no_color):
    async with trio.open_nursery() as nursery:
        events, _, _ = await start_app(nursery, pty, no_color=no_color)
        await events.send(Card(version="0.1.0", mode="agent", session="not saved", host=None, directory="/x"))
        await pty.wait_for_output("╰".encode())
        nursery.cancel_scope.cancel()
    assert bool(foreground_colours(pty.output)) is not no_color
    assert "ι> iota".encode() in pty.output


# ---- end to end, in tmux ---------------------------------------------------------------------------

@pytest.fixture
def chat(terminal, tmp_path, fake_home):
    """A shell in tmux, in a project under the (fake) home, that has started the echo chat."""
    project = fake_home / "project"
    project.mkdir()
    rcfile = tmp_path / "bashrc"
    rcfile.write_text(f"PS1='{SHELL_PROMPT} '\n")  # bash sets its own PS1 over one from the environment
    screen = terminal.start(["bash", "--noprofile", "--rcfile", str(rcfile), "-i"], cols=80, rows=24,
                            cwd=project, env={"PYTHONPATH": str(REPO), "HOME": str(fake_home)})
    screen.wait_for(SHELL_PROMPT)
    screen.type(f"{sys.executable} -m tests.ui.echo_chat")
    screen.send_keys("Enter")
    screen.wait_for("echo-model")
    return screen


def send(screen, text: str) -> None:
    screen.type(text)
    screen.send_keys("Enter")


def test_a_message_is_echoed_under_the_card(chat):
    shown = chat.wait_for("chat · not saved · /save keeps it")
    assert "│ ~/project" in shown and "⚠ skills skipped: none found" in shown
    send(chat, "hello")
    shown = chat.wait_for(re.compile(r"^echo: hello$", re.MULTILINE))
    assert "❯ hello" in shown
    assert shown.splitlines()[-1] == "echo-model · ≈1.2k / 200k (0%)"


def test_ctrl_j_alt_enter_and_shift_enter_make_new_lines(chat):
    chat.type("one")
    chat.send_keys("C-j")
    chat.type("two")
    chat.send_keys("M-Enter")
    chat.type("three")
    chat.send_keys("S-Enter")
    chat.type("four")
    chat.wait_for(re.compile(r"❯ one\n  two\n  three\n  four"))
    chat.send_keys("Enter")
    chat.wait_for(re.compile(r"^echo: one\ntwo\nthree\nfour$", re.MULTILINE))


def test_ctrl_c_interrupts_a_streaming_reply_which_keeps_its_text(chat):
    chat.send_keys("C-c")
    chat.wait_for("interrupt received")
    send(chat, "/slow")
    # The status arrives once, reading <1s; seconds on the row mean the timer ticks by itself.
    chat.wait_for(re.compile(r"echo-model · 1\.2k / 200k \(0%\) · Waiting for the model · [1-9]\d*s"))
    chat.wait_for("tick tick")
    chat.send_keys("C-c")
    shown = chat.wait_for("(interrupted)")
    assert re.search(r"tick \(interrupted\)$", shown, re.MULTILINE)
    assert shown.splitlines()[-1] == "echo-model · 1.2k / 200k (0%)"


def test_the_approval_prompt_is_answered_with_the_arrow_keys_and_enter(chat):
    send(chat, "/choose")
    chat.wait_for("write_file notes.md wants to modify files — allow?\n❯ 1. Allow once")
    chat.send_keys("Down", "Down", "Up")
    chat.wait_for("❯ 2. Allow for this session")
    chat.send_keys("Enter")
    chat.wait_for("answer: 1")
    send(chat, "/choose")
    chat.wait_for("❯ 1. Allow once")
    chat.send_keys("Escape")
    chat.wait_for("answer: None")


def test_ctrl_z_suspends_and_fg_redraws(chat):
    chat.send_keys("C-z")
    chat.wait_for("Stopped")
    chat.type("fg")
    chat.send_keys("Enter")
    chat.wait_for("echo-model")
    send(chat, "back again")
    chat.wait_for("echo: back again")


def test_the_process_exits_with_the_code_of_the_leave(terminal, fake_home):
    screen = terminal.start([sys.executable, "-m", "tests.ui.echo_chat"], cols=60, rows=20, cwd=fake_home,
                            env={"PYTHONPATH": str(REPO), "HOME": str(fake_home)})
    screen.wait_for("│ ~ ")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0


def test_ctrl_d_leaves_and_the_shell_gets_its_terminal_back(chat):
    send(chat, "hello")
    chat.wait_for("echo: hello")
    chat.send_keys("C-c", "C-d")
    shown = chat.wait_for(re.compile(r"^Leave\(code=0\)\ntest\$$", re.MULTILINE))
    assert "Submit(text='hello')\nInterrupt()\nLeave(code=0)" in shown
    assert "-m tests.ui.echo_chat" in shown  # the shell's own screen is back, not the app's
    send(chat, "clear; stty -a")
    settings = chat.wait_for(re.compile(r"extproc\ntest\$$", re.MULTILINE)).replace(";", " ").split()
    assert "intr = ^C" in " ".join(settings)
    for setting in ("icrnl", "ixon", "isig", "icanon", "echo"):
        assert setting in settings and f"-{setting}" not in settings, setting
    send(chat, "echo typed")
    chat.wait_for(re.compile(r"^test\$ echo typed\ntyped$", re.MULTILINE))
