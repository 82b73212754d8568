"""The first frame: a few bytes of ANSI drawn before the chat imports trio and urwid.

Python takes a quarter of a second or more to import what urwid's screen needs, and the person
should not look at their shell meanwhile. So once the checks that need no screen have passed,
iota switches to the alternate screen and draws where urwid's first frame will draw them the
card's mark and `starting…`, and at the bottom the composer's prompt between its two rules,
with the cursor in the composer after what was typed since the launch. From then on the keys are
read in raw mode and the line is edited by iota itself (ui.early_keys), with bracketed paste on,
so Enter sends, Backspace works and arrows do not echo as `^[[A` even before urwid is imported.
urwid's screen takes all of it over — it calls `take_over` as it starts, and reads first the
text and each Enter typed — and draws everything again.

    frame = FirstFrame.draw(version)     # None when stdout is not a terminal
    ChatApp(typed_ahead=frame.take_over)
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

from ui.early_keys import EarlyKeys

MARK = "ι> iota"
ENTER_ALTERNATE_SCREEN = "\x1b[?1049h"
LEAVE_ALTERNATE_SCREEN = "\x1b[?1049l"
CLEAR = "\x1b[H\x1b[2J"
BRACKETED_PASTE_ON, BRACKETED_PASTE_OFF = "\x1b[?2004h", "\x1b[?2004l"
ERASE_TO_END_OF_LINE = "\x1b[K"
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
    def __init__(self, keys: EarlyKeys | None, signals: dict) -> None:
        self._keys = keys
        self._closed = False
        self._signals = signals  # the handlers before the frame's, put back at `close`

    @classmethod
    def draw(cls, version: str) -> FirstFrame | None:
        """Draw the frame on the terminal stdout is (None, drawing nothing, when it is not one)."""
        out = sys.stdout.fileno()
        try:
            columns, rows = os.get_terminal_size(out)
        except OSError:
            return None
        stdin = sys.stdin.fileno()
        composer = rows - COMPOSER_FROM_BOTTOM
        # Before anything is drawn: a signal sent once the frame shows must find it leaving
        # the alternate screen as Ctrl+C does, not killing iota with the terminal still taken.
        signals = {number: signal.signal(number, _interrupt) for number in (signal.SIGTERM, signal.SIGHUP)}

        def draw_line(shown: str) -> None:
            os.write(out, (position(composer, 1) + PROMPT + shown[-(columns - len(PROMPT) - 1):]
                           + ERASE_TO_END_OF_LINE).encode())

        keys = None
        try:
            keys = EarlyKeys(stdin, draw_line, take_typed_ahead(stdin)) if os.isatty(stdin) else None
            rule = "─" * columns
            frame = (ENTER_ALTERNATE_SCREEN + BRACKETED_PASTE_ON + CLEAR
                     + position(CARD_ROW, CARD_COLUMN) + f"{MARK}  v{version}"
                     + position(CARD_ROW + 1, CARD_COLUMN) + "starting…"
                     + position(composer - 1, 1) + rule + position(composer + 1, 1) + rule)
            os.write(out, frame.encode())
            draw_line(keys.editor.shown if keys is not None else "")
            if keys is not None:
                keys.start()
        except BaseException:  # a signal while drawing: the frame closes as it would later
            cls(keys, signals).close(taken=False)
            raise
        return cls(keys, signals)

    def take_over(self) -> bytes:
        """urwid's screen starts: the keys stop being read here, the terminal is as it was, and
        what was typed (the text, and each Enter) is returned for urwid to read first."""
        keys, self._keys = self._keys, None
        return keys.take_over() if keys is not None else b""

    def close(self, *, taken: bool) -> None:
        """Put the signals back (and the terminal, if urwid never took it over); leave the
        alternate screen unless urwid's screen `taken` it (urwid has left it then, and leaving it
        twice would move the cursor back). The first close counts: the chat closes it knowing
        whether its screen came up, and the start closes it if the chat never got that far."""
        if self._closed:
            return
        self._closed = True
        if self._keys is not None:
            self._keys.stop()
            self._keys = None
        for number, handler in self._signals.items():
            signal.signal(number, handler)
        if not taken:
            os.write(sys.stdout.fileno(), (BRACKETED_PASTE_OFF + LEAVE_ALTERNATE_SCREEN).encode())


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
