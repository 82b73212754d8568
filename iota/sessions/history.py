"""A session's log read backwards, a page at a time: what a resumed chat shows as history.

The live view (iota.sessions.log) is what the model is sent; the history is everything the log
holds — every record before a compaction too, and the compaction markers themselves — for the
person to scroll through. Opening a long session must stay fast, so the history is read from the
end of the log backwards, one page when it opens and one more each time the person scrolls near
the top of what is shown:

    history = LogHistory(session.dir / "messages.jsonl")      # remembers where the log ends now
    records, more = history.older(40)                          # the newest page, oldest first
    records, more = history.older(40)                          # the page before it

A page ends where a round starts (the person's own message), so a tool call and its result are
never split between two pages. Lines that do not decode are skipped, as the loader does.
Blocking file I/O: a chat calls it from a worker thread.
"""

from __future__ import annotations

import os
from pathlib import Path

from iota.messages import ASSISTANT, COMPACTION, TOOL, USER, Message
from iota.sessions.lines import decode_record

HISTORY_ROLES = frozenset({USER, ASSISTANT, TOOL, COMPACTION})
_CHUNK = 64 * 1024


class LogHistory:
    def __init__(self, log: Path):
        self._log = log
        try:
            self._end = os.path.getsize(log)  # records appended later are this chat's own, not history
        except OSError:
            self._end = 0

    @property
    def more(self) -> bool:
        return self._end > 0

    def older(self, at_least: int) -> tuple[list[Message], bool]:
        """At least `at_least` records before the ones already read (fewer at the log's start),
        back to the start of a round; oldest first. Also whether any are left before them."""
        records: list[Message] = []
        lines = _lines_backwards(self._log, self._end)
        for start, line in lines:
            self._end = start
            record = _decode(line)
            if record is None:
                continue
            records.append(record)
            if len(records) >= at_least and record.role == USER and not record.notice:
                break
        records.reverse()
        return records, self.more


def _decode(line: bytes) -> Message | None:
    record = decode_record(line)
    if record is None or record["role"] not in HISTORY_ROLES:
        return None
    return Message.from_record(record)


def _lines_backwards(path: Path, end: int):
    """(offset, line) for each non-blank line that ends before byte `end`, the last one first."""
    try:
        log = open(path, "rb")
    except OSError:
        return
    with log:
        tail = b""  # the start of a line whose beginning is in a chunk not read yet
        position = end
        while position > 0:
            start = max(0, position - _CHUNK)
            log.seek(start)
            chunk = log.read(position - start) + tail
            position = start
            pieces = chunk.split(b"\n")
            offsets, offset = [], position
            for piece in pieces:
                offsets.append(offset)
                offset += len(piece) + 1
            first = 0 if position == 0 else 1  # a chunk's first piece may be the end of a longer line
            tail = b"" if position == 0 else pieces[0]
            for index in range(len(pieces) - 1, first - 1, -1):
                if pieces[index].strip():
                    yield offsets[index], pieces[index]
