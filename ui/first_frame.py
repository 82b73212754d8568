"""The first frame: a few bytes of ANSI drawn before the chat imports trio and urwid.

Python takes a quarter of a second or more to import what urwid's screen needs, and the person
should not look at their shell meanwhile. So once the checks that need no screen have passed,
iota switches to the alternate screen and draws where urwid's first frame will draw them the
card's mark and `starting…`, and at the bottom the composer's prompt between its two rules,
with the cursor in the composer after what was typed since the launch (read, and kept in
`typed`). The terminal's modes are left as they are: it still edits a line and echoes it, so
what the person types shows in the composer at once. urwid's screen takes all of it over (it is
given `typed`, and ui.app.ChatTerminal reads what was typed since) and draws everything again.

    frame = FirstFrame.draw(version)     # None when stdout is not a terminal
    ChatApp(typed_ahead=frame.typed)
    ... the chat, whose urwid screen takes the alternate screen over (and leaves it)
    frame.close(taken=…)                 # leaves the alternate screen unless urwid took it (once)

Until `close`, a SIGTERM or SIGHUP stops iota as Ctrl+C does (exit 130) rather than killing it,
so that the alternate screen is left however the start ends; while the chat runs, trio's signal
receivers take them over (and give them back).
"""

from __future__ import annotations

import os
import signal
import sys
import termios
from contextlib import suppress

MARK = "ι> iota"
ENTER_ALTERNATE_SCREEN = "\x1b[?1049h"
LEAVE_ALTERNATE_SCREEN = "\x1b[?1049l"
CLEAR = "\x1b[H\x1b[2J"
PROMPT = "❯ "
# Where urwid's layout puts them: the card's rows inside its frame ("│ " before each), and the
# composer above its rule and the status row, the last rows of the screen.
CARD_ROW, CARD_COLUMN = 2, 3
COMPOSER_FROM_BOTTOM = 2


def take_typed_ahead(fd: int) -> bytes:
    """What has been typed on the terminal `fd` and not read yet, read without waiting.

    Until a program takes the terminal, its driver keeps typed keys in a line being edited, which
    no read returns before Enter; in cbreak mode they are readable at once. So the terminal is set
    to cbreak without echo for the read (TCSANOW: nothing is flushed), then put back as it was."""
    before = termios.tcgetattr(fd)
    reading = termios.tcgetattr(fd)
    reading[3] &= ~(termios.ICANON | termios.ECHO)
    reading[6][termios.VMIN], reading[6][termios.VTIME] = 0, 0  # a read returns what there is
    termios.tcsetattr(fd, termios.TCSANOW, reading)
    try:
        typed = b""
        with suppress(BlockingIOError):  # how a non-blocking descriptor says there is no more
            while piece := os.read(fd, 4096):
                typed += piece
        return typed
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, before)


def position(row: int, column: int) -> str:
    return f"\x1b[{row};{column}H"


class FirstFrame:
    def __init__(self, typed: bytes) -> None:
        self.typed = typed
        self._closed = False
        self._signals = {number: signal.signal(number, _interrupt) for number in (signal.SIGTERM, signal.SIGHUP)}

    @classmethod
    def draw(cls, version: str) -> FirstFrame | None:
        """Draw the frame on the terminal stdout is (None, drawing nothing, when it is not one)."""
        try:
            columns, rows = os.get_terminal_size(sys.stdout.fileno())
        except OSError:
            return None
        typed = take_typed_ahead(sys.stdin.fileno()) if os.isatty(sys.stdin.fileno()) else b""
        shown = "".join(char for char in typed.decode("utf-8", "replace") if char.isprintable())
        rule = "─" * columns
        composer = rows - COMPOSER_FROM_BOTTOM
        frame = (ENTER_ALTERNATE_SCREEN + CLEAR
                 + position(CARD_ROW, CARD_COLUMN) + f"{MARK}  v{version}"
                 + position(CARD_ROW + 1, CARD_COLUMN) + "starting…"
                 + position(composer - 1, 1) + rule + position(composer + 1, 1) + rule
                 + position(composer, 1) + PROMPT + shown[:columns - len(PROMPT) - 1])
        os.write(sys.stdout.fileno(), frame.encode())
        return cls(typed)

    def close(self, *, taken: bool) -> None:
        """Put the signals back; leave the alternate screen unless urwid's screen `taken` it
        (urwid has left it then, and leaving it twice would move the cursor back). The first
        close counts: the chat closes it knowing whether its screen came up, and the start
        closes it if the chat never got that far."""
        if self._closed:
            return
        self._closed = True
        for number, handler in self._signals.items():
            signal.signal(number, handler)
        if not taken:
            os.write(sys.stdout.fileno(), LEAVE_ALTERNATE_SCREEN.encode())


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
