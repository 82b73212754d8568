"""Reading a session log's lines: the one way every reader of `messages.jsonl` takes them.

The loader (iota.sessions.log), the offset index beside the log (iota.sessions.offsets), the
history pages, the search index and the journal all read the same lines the same way: a line
is one compact JSON object with a string `role`; anything else (a torn write, a line of NUL
bytes, a hand-edited mistake) is skipped, and a line longer than `LINE_CAP` is skipped whole
without being held in memory.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO

# The longest line (record plus newline) written to or read from the log.
LINE_CAP = 32 * 1024 * 1024
_BACKWARD_CHUNK = 64 * 1024


def read_lines(f: BinaryIO, offset: int) -> Iterator[tuple[int, bytes | None]]:
    """(offset, line) from `offset` on; a line over `LINE_CAP` is skipped whole and given as None."""
    f.seek(offset)
    while line := f.readline(LINE_CAP):
        start = offset
        offset += len(line)
        if len(line) == LINE_CAP and not line.endswith(b"\n"):
            while (line := f.readline(LINE_CAP)) and not line.endswith(b"\n"):
                offset += len(line)
            offset += len(line)
            yield start, None
        else:
            yield start, line


def decode_record(line: bytes) -> dict[str, Any] | None:
    """A record, or None for anything that is not a JSON object with a string `role`."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("role"), str):
        return None
    return record


def line_sum(line: bytes) -> int:
    """A line's fingerprint, its CRC-32: what a pointer into the log records of the line it points
    at, so that a log changed under it is noticed. (A checksum, not a defence: whoever can write
    the index can write the log.)"""
    return zlib.crc32(line)


def sum_at(f: BinaryIO, offset: int) -> int:
    """The fingerprint of the line starting at `offset`."""
    f.seek(offset)
    return line_sum(f.readline(LINE_CAP))


def previous_newline(f: BinaryIO, before: int) -> int:
    """The offset of the last `\\n` before `before`, or -1."""
    end = before
    while end > 0:
        start = max(0, end - _BACKWARD_CHUNK)
        f.seek(start)
        found = f.read(end - start).rfind(b"\n")
        if found >= 0:
            return start + found
        end = start
    return -1
