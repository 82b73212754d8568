"""Telling a paste from typing, in the bytes the terminal sends.

A terminal in bracketed-paste mode wraps a paste in `ESC [200~ … ESC [201~`. Not every terminal
(nor tmux 3.3, nor `tmux send-keys`) does, and then a paste arrives as the keys it is made of: a
300-line paste would be 300 Enters, 300 messages. So the bytes that arrive together are judged
as a whole:

- a read with no line break in it, or no text (Enter, Ctrl+J, Alt+Enter's `ESC CR`), is keys,
  passed on at once, so a key echoes without delay;
- text with a line break in it is held for `GATHER_SECONDS` after the last read, so the rest of
  a paste that the terminal delivers in several reads joins it; then, if a line break is
  followed by more input and nothing in it is an escape sequence (a paste is text), it is all
  one paste. Text ending in its only Enter is typing followed by Enter, as when a test types a
  message and presses Enter at once.

Between the markers everything is the paste, whatever it holds, the end marker itself too: a
terminal that does not filter what it pastes passes on a pasted `ESC [201~`, and the text after
it (`rm -rf ~` and a CR, say) must not be typed as keys. So a paste ends at the last end marker
that came with it, and when input follows an end marker, the gatherer waits `GATHER_SECONDS`
for more, in case the terminal's own end is still to come. A begin marker whose end has not
come within `MARKED_PASTE_SECONDS` ends there, so a lost marker cannot swallow every key after
it.

`InputGatherer.feed` takes the bytes of one read and says whether to wait for more; `take` gives
what has gathered as ("keys", bytes) and ("paste", text) pieces, in order.
"""

from __future__ import annotations

import re

BEGIN_PASTE = b"\x1b[200~"
END_PASTE = b"\x1b[201~"
LINE_BREAKS = b"\r\n"
# How long to wait for more of an unmarked paste after a read, and for a marked paste's end.
GATHER_SECONDS = 0.03
MARKED_PASTE_SECONDS = 1.0
# Control characters a paste may not carry into the composer (tab and line feed are text).
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class InputGatherer:
    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._reads: list[bytes] = []
        # All the reads so far, joined as they come, and where in it the last begin marker and an
        # end marker after it were found: each read is searched once (with the few bytes before
        # it, where a marker may straddle two reads), so a paste of many reads costs its length.
        self._pending = bytearray()
        self._begin = -1
        self._ended = False

    def feed(self, data: bytes) -> float | None:
        """Add one read's bytes. Returns how long to wait for more before `take` (None: take now)."""
        self._reads.append(data)
        start = max(0, len(self._pending) - len(BEGIN_PASTE) + 1)
        self._pending += data
        begin = self._pending.rfind(BEGIN_PASTE, start)
        if begin >= 0:
            self._begin, self._ended = begin, False
            start = begin
        if self._begin >= 0:
            self._ended = self._ended or self._pending.find(END_PASTE, max(start, self._begin)) >= 0
            if not self._ended:
                return MARKED_PASTE_SECONDS
            return None if self._pending.endswith(END_PASTE) else GATHER_SECONDS
        if len(self._reads) == 1 and not _may_be_paste(data):
            return None  # typing, a key's sequence, a lone Enter
        return GATHER_SECONDS

    def take(self) -> list[tuple[str, bytes | str]]:
        """Everything gathered, as ("keys", bytes) and ("paste", text) pieces in order."""
        reads, data = self._reads, bytes(self._pending)
        self._reset()
        if BEGIN_PASTE in data:
            return marked_pieces(data)
        # A read with an escape sequence in it is keys (a paste is text); the text of the reads
        # between such reads is judged as a whole.
        pieces: list[tuple[str, bytes | str]] = []
        text: list[bytes] = []
        for read in reads:
            if b"\x1b" in read:
                pieces += _judged(b"".join(text))
                pieces.append(("keys", read))
                text = []
            else:
                text.append(read)
        return pieces + _judged(b"".join(text))


def _judged(text: bytes) -> list[tuple[str, bytes | str]]:
    if not text:
        return []
    return [("paste", paste_text(text)) if _is_unmarked_paste(text) else ("keys", text)]


def marked_pieces(data: bytes) -> list[tuple[str, bytes | str]]:
    pieces: list[tuple[str, bytes | str]] = []
    while data:
        begin = data.find(BEGIN_PASTE)
        before, marked = (data, b"") if begin < 0 else (data[:begin], data[begin + len(BEGIN_PASTE):])
        if before:
            pieces.append(("keys", before))
        if begin < 0:
            break
        end = marked.rfind(END_PASTE)  # the terminal's own end: a pasted one is text
        pasted, data = (marked, b"") if end < 0 else (marked[:end], marked[end + len(END_PASTE):])
        pieces.append(("paste", paste_text(pasted)))
    return pieces


def _may_be_paste(data: bytes) -> bool:
    """Text with a line break in it and no escape sequence."""
    return b"\x1b" not in data and _has_text(data) and any(b in LINE_BREAKS for b in data)


def _has_text(data: bytes) -> bool:
    return any(b >= 0x20 and b != 0x7F for b in data)


def _is_unmarked_paste(data: bytes) -> bool:
    """A line break with more text after it: text that came together with a newline inside."""
    return any(data.find(bytes([b]), 0, len(data) - 1) >= 0 for b in LINE_BREAKS)


def paste_text(data: bytes) -> str:
    """A paste's bytes as composer text: line breaks as `\\n`, other control characters dropped."""
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROLS.sub("", text)


def paste_size(text: str) -> str:
    """How a paste's placeholder measures it: `+300 lines`, or `42 chars` for one line."""
    lines = text.count("\n") + (not text.endswith("\n"))
    return f"+{lines} lines" if lines > 1 else f"{len(text)} chars"
