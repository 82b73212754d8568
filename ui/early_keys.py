"""The keys typed on the first frame, before urwid reads any: read in raw mode and edited here.

Left to the terminal, a line typed while the chat starts is the terminal driver's: it echoes
arrows as `^[[A`, turns Enter into a line feed (which the chat reads as Ctrl+J, a new line, so
nothing is sent), and a Backspace typed then can be lost when urwid takes the terminal over. So
from the first frame on the terminal is in raw mode and a thread of this module reads the keys
and edits one line itself, drawing it in the first frame's composer:

    printable keys   added to the line           Backspace   the last character goes
    Enter            the line is sent            Ctrl+U      the line is cleared
    Ctrl+C           iota stops (as Ctrl+C does on the first frame: exit 130)
    a paste          kept whole, as one paste    other keys  (arrows, Tab, …) ignored

`take_over` stops the thread, puts the terminal back as it was, and returns what to hand urwid as
if just typed: each line sent, followed by a carriage return (urwid's Enter), then the line
being typed — so what the person saw is exactly what the chat gets, once it is up.
"""

from __future__ import annotations

import codecs
import os
import select
import signal
import termios
import threading
from collections.abc import Callable

from ui.paste import paste_size, paste_text

ENTER, LINE_FEED, BACKSPACE, DELETE, CTRL_C, CTRL_U, ESCAPE = "\r", "\n", "\b", "\x7f", "\x03", "\x15", "\x1b"
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"
POLL_SECONDS = 0.02


class LineEditor:
    """The line typed so far and the lines sent, fed with what the terminal sends (`feed`)."""

    def __init__(self) -> None:
        self.sent: list[str] = []   # lines ended by Enter, and pastes (kept with their markers)
        self.line = ""
        self._since_enter = 0       # the first of `sent` after the last Enter (shown with the line)
        self._pending = ""          # an escape sequence not whole yet
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, data: bytes, *, line_feed_sends: bool = False) -> bool:
        """Apply the keys in `data`; True when Ctrl+C was among them. `line_feed_sends`: a line
        feed is Enter (the terminal's own line editing, before raw mode, turns Enter into one)."""
        text = self._pending + self._decoder.decode(data)
        self._pending = ""
        index = 0
        while index < len(text):
            char = text[index]
            if char == ESCAPE:
                end = _sequence_end(text, index)
                if end is None:  # the rest of it has not arrived yet
                    self._pending = text[index:]
                    return False
                if text.startswith(PASTE_START, index):
                    self._flush_line()
                    self.sent.append(text[index:end])
                index = end
                continue
            if char == ENTER or (char == LINE_FEED and line_feed_sends):
                self.sent.append(self.line + ENTER)
                self.line = ""
                self._since_enter = len(self.sent)
            elif char in (BACKSPACE, DELETE):
                self.line = self.line[:-1]
            elif char == CTRL_U:
                self.line = ""
                del self.sent[self._since_enter:]  # the whole line goes, pastes in it too
            elif char == CTRL_C:
                return True
            elif char == LINE_FEED or char.isprintable():  # a line feed is Ctrl+J: a new line
                self.line += char
            index += 1
        return False

    def _flush_line(self) -> None:
        if self.line:
            self.sent.append(self.line)
            self.line = ""

    def handed_over(self) -> bytes:
        """Everything, in order, as the keys urwid will read."""
        return ("".join(self.sent) + self.line + self._pending).encode()

    @property
    def shown(self) -> str:
        """What the composer row shows: the line being typed (its last row), a paste in it as
        the chat's placeholder will show it."""
        pieces = [f"[Pasted text {paste_size(paste_text(piece[len(PASTE_START):-len(PASTE_END)].encode()))}]"
                  if piece.startswith(PASTE_START) else piece for piece in self.sent[self._since_enter:]]
        return ("".join(pieces) + self.line).rsplit(LINE_FEED, 1)[-1]


def _sequence_end(text: str, start: int) -> int | None:
    """Where the escape sequence at `start` ends (a paste: after its end marker); None when it
    is not whole yet. A lone Escape (nothing after it yet) is taken as the key alone."""
    if text.startswith(PASTE_START, start):
        end = text.find(PASTE_END, start)
        return None if end < 0 else end + len(PASTE_END)
    if start + 1 >= len(text):
        return start + 1
    follower = text[start + 1]
    if follower not in "[O":
        return start + 2  # Alt+key
    for index in range(start + 2, len(text)):
        if "@" <= text[index] <= "~" and not (follower == "[" and text[index] == "[" and index == start + 2):
            return index + 1
    return None


class EarlyKeys:
    """The raw-mode reader of the first frame: `start`, then `take_over` once (or `stop`)."""

    def __init__(self, fd: int, draw: Callable[[str], None], typed_before: bytes = b""):
        self.fd = fd
        self.editor = LineEditor()
        self._draw = draw
        self._saved = termios.tcgetattr(fd)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        if self.editor.feed(typed_before, line_feed_sends=True):
            os.kill(os.getpid(), signal.SIGINT)

    def start(self) -> None:
        raw = termios.tcgetattr(self.fd)
        raw[0] &= ~(termios.ICRNL | termios.IXON)
        raw[3] &= ~(termios.ICANON | termios.ECHO | termios.ISIG | termios.IEXTEN)
        raw[6][termios.VMIN], raw[6][termios.VTIME] = 1, 0
        termios.tcsetattr(self.fd, termios.TCSANOW, raw)  # TCSANOW: nothing typed is flushed
        self._thread = threading.Thread(target=self._read, name="first-frame keys", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stopping.is_set():
            ready, _, _ = select.select([self.fd], [], [], POLL_SECONDS)
            if not ready:
                continue
            try:
                data = os.read(self.fd, 4096)
            except OSError:
                return
            if not data:
                return
            if self.editor.feed(data):
                os.kill(os.getpid(), signal.SIGINT)  # the main thread stops as at a Ctrl+C
                return
            self._draw(self.editor.shown)

    def stop(self) -> None:
        """Stop reading and put the terminal back as it was (what was typed stays in the editor)."""
        self._stopping.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._thread = None
        termios.tcsetattr(self.fd, termios.TCSANOW, self._saved)

    def take_over(self) -> bytes:
        """Stop, and what urwid is to read first (see the module doc)."""
        self.stop()
        return self.editor.handed_over()
