"""`messages.idx`: where each record the view depends on starts in the log, kept beside it.

A bot's log never ends: after a year it may hold a hundred thousand records, of which a resume
needs those since the last compaction. The index says where they are, so the loader
(iota.sessions.log) reads the log from there to its end and nothing before:

    entries, changed, start = locate(log_file, read_index(bundle / INDEX_NAME), tail_bytes)
    # start: where the view's records begin (None: read the whole log); entries: the index as it
    # should now be on disk (changed: the file lags it)

It holds one entry per record the view is built from, in log order: every conversation record
(user, assistant, tool), system record and compaction marker. An entry is two little-endian
64-bit words: the record's byte offset in the log with its kind in the top byte, and the
first 8 bytes of the sha256 of its line. The entries describe the log as its rewinds left it: a
rewind drops the entries at and after the byte it goes back to, as the loader would. So entry
number k of the conversation kind is conversation record k, the N a compaction marker counts.

The index is a cache, and never trusted further than it is checked:
- it is written after the log, without fsync; an entry whose append failed deletes the file,
  so no entry can be missing between two others (`OffsetsFile`);
- at open, entries past the end of the log are dropped (a torn tail was cut), the last one's
  line must still hash as recorded, and the records after it (written after the index was last
  appended to, or by another program) are read and added;
- every entry the loader starts from is checked against its line's hash too;
- a missing file, a wrong header or a hash that does not match, and the whole log is read once
  to rebuild it. The loader's own checks (iota.sessions.log) still hold after that: a start the
  scan finds wrong falls back to reading the whole log.

A never-compacted log can outgrow any model's window. Its view is then not loaded whole: the
loader starts at the first of the person's messages within the last `tail_bytes` of the log,
and says how many conversation records it left out (`Start.left_out`); the chat offers to
compact at once (see docs/sessions.md).
"""

from __future__ import annotations

import os
import sys
from array import array
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from iota.messages import ASSISTANT, COMPACTION, REWIND, SYSTEM, TOOL, USER
from iota.sessions.lines import LINE_CAP, decode_record, line_sum, read_lines, sum_at

INDEX_NAME = "messages.idx"

CONVERSATION_KIND, SYSTEM_KIND, COMPACTION_KIND = 1, 2, 3
KINDS = {USER: CONVERSATION_KIND, ASSISTANT: CONVERSATION_KIND, TOOL: CONVERSATION_KIND,
         SYSTEM: SYSTEM_KIND, COMPACTION: COMPACTION_KIND}
_KIND_SHIFT = 56
_KIND_BYTE = 7 if sys.byteorder == "little" else 0  # where the top byte sits in a word's bytes
_CONVERSATION, _SYSTEM, _COMPACTION = (bytes([kind]) for kind in (CONVERSATION_KIND, SYSTEM_KIND, COMPACTION_KIND))
_OFFSET_MASK = (1 << _KIND_SHIFT) - 1
# The magic, then the number 1 in this machine's byte order: an index written on a machine of
# the other order reads as a wrong header and is rebuilt.
_HEADER = b"iota-idx" + array("Q", [1]).tobytes()
_ENTRY = 16


class Entries:
    """The index in memory: two arrays of 64-bit words, an entry's offset-and-kind and its sum."""

    def __init__(self, words: array | None = None, sums: array | None = None):
        self.words = words if words is not None else array("Q")
        self.sums = sums if sums is not None else array("Q")

    def __len__(self) -> int:
        return len(self.words)

    def offset(self, i: int) -> int:
        return self.words[i] & _OFFSET_MASK

    def kind(self, i: int) -> int:
        return self.words[i] >> _KIND_SHIFT

    def add(self, offset: int, kind: int, line: bytes) -> None:
        self.words.append(offset | kind << _KIND_SHIFT)
        self.sums.append(line_sum(line))

    def cut_at(self, target: int) -> None:
        """Forget the entries at byte `target` and after (a rewind, or a log cut shorter)."""
        keep = bisect_left(self.words, target, key=lambda word: word & _OFFSET_MASK)
        del self.words[keep:], self.sums[keep:]

    def kinds(self) -> bytes:
        """Every entry's kind, a byte each: searched as a string, it costs no Python loop."""
        return self.words.tobytes()[_KIND_BYTE::8]

    def holds(self, f: BinaryIO, i: int) -> bool:
        """Whether entry `i`'s line is still the one it was written for."""
        return sum_at(f, self.offset(i)) == self.sums[i]

    def to_bytes(self, first: int = 0) -> bytes:
        interleaved = array("Q", bytes(16 * (len(self) - first)))
        interleaved[0::2] = self.words[first:]
        interleaved[1::2] = self.sums[first:]
        return interleaved.tobytes()


def read_index(path: Path) -> Entries | None:
    """The entries in the file at `path`; None when it is missing or not an index. A torn last
    entry is left off."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if not data.startswith(_HEADER):
        return None
    body = array("Q")
    body.frombytes(data[len(_HEADER): len(data) - (len(data) - len(_HEADER)) % _ENTRY])
    return Entries(body[0::2], body[1::2])


def locate(f: BinaryIO, stored: Entries | None, tail_bytes: int | None) -> tuple[Entries, bool, Start | None]:
    """The entries for the log open as `f` (see `current`), and where the view starts in it."""
    entries, changed = current(f, stored)
    try:
        return entries, changed, view_start(entries, f, tail_bytes)
    except StaleEntry:
        entries = rebuilt(f)
        try:
            return entries, True, view_start(entries, f, tail_bytes)
        except StaleEntry:
            return entries, True, None  # the log changed under this very read: read all of it


class StaleEntry(Exception):
    """An entry's line no longer hashes as it did: the log was changed under the index."""


def current(f: BinaryIO, stored: Entries | None) -> tuple[Entries, bool]:
    """The entries for the log open as `f`: those stored, checked and brought up to its end, or
    rebuilt from the whole log. Also whether they differ from what was stored."""
    size = f.seek(0, os.SEEK_END)
    if stored is None:
        return rebuilt(f), True
    kept = len(stored)
    stored.cut_at(size)
    if len(stored) and not stored.holds(f, len(stored) - 1):
        return rebuilt(f), True
    follows = 0
    if len(stored):
        f.seek(stored.offset(len(stored) - 1))
        follows = f.tell() + len(f.readline(LINE_CAP))
    changed = _read_into(stored, f, follows)
    return stored, changed or len(stored) != kept


def rebuilt(f: BinaryIO) -> Entries:
    entries = Entries()
    _read_into(entries, f, 0)
    return entries


def _read_into(entries: Entries, f: BinaryIO, start: int) -> bool:
    """Add the entries of the records from byte `start` on, applying their rewinds. Whether
    anything changed."""
    changed = False
    for offset, line in read_lines(f, start):
        record = decode_record(line) if line is not None else None
        if record is None:
            continue
        role = record["role"]
        if role == REWIND:
            target = record.get("rewound_to")
            # As the loader takes a rewind: one that names no earlier byte undoes nothing.
            if type(target) is int and 0 <= target < offset:
                before = len(entries)
                entries.cut_at(target)
                changed = changed or len(entries) != before
        elif role in KINDS:
            entries.add(offset, KINDS[role], line)
            changed = True
    return changed


@dataclass(frozen=True)
class Start:
    """Where the view's records begin, and what comes before that point."""

    offset: int           # where the scan starts: a line of the log
    conversation: int     # conversation records before it
    messages: int         # message records (system ones too) before it
    system: int | None    # the offset of the last system record before it
    left_out: int = 0     # conversation records the view leaves out without a summary of them


def view_start(entries: Entries, f: BinaryIO, tail_bytes: int | None) -> Start | None:
    """Where the loader should start reading, from the entries; None to read the whole log
    (nothing to skip). Raises StaleEntry when an entry it would start from does not hold up.

    Its cost does not grow with the log: the entries' kinds are searched as one byte string,
    and only the lines it starts from are read."""
    kinds = entries.kinds()
    conversations = kinds.count(_CONVERSATION)
    left_out = 0
    last_compaction = kinds.rfind(_COMPACTION)
    if last_compaction >= 0:
        _check(entries, f, last_compaction)
        f.seek(entries.offset(last_compaction))
        through = (decode_record(f.readline(LINE_CAP)) or {}).get("compacted_through")
        retained = min(max(through if type(through) is int else 0, 0), conversations)
        first = last_compaction
        if retained < conversations:
            first = min(first, _nth(kinds, retained, conversations))
    else:
        size = f.seek(0, os.SEEK_END)
        if tail_bytes is None or not conversations or size - entries.offset(kinds.find(_CONVERSATION)) <= tail_bytes:
            return None
        found = _turn_start(entries, f, kinds, size - tail_bytes)
        if found is None:
            return None
        first, left_out = found, kinds.count(_CONVERSATION, 0, found)
    _check(entries, f, first)
    at = entries.offset(first)
    if at == 0:
        return None
    # Entries are in log order: those before the first one read are the records before it.
    conversation_before = kinds.count(_CONVERSATION, 0, first)
    last_system = kinds.rfind(_SYSTEM, 0, first)
    system = None
    if last_system >= 0:
        _check(entries, f, last_system)
        system = entries.offset(last_system)
    return Start(at, conversation_before, conversation_before + kinds.count(_SYSTEM, 0, first), system, left_out)


def _check(entries: Entries, f: BinaryIO, i: int) -> None:
    if not entries.holds(f, i):
        raise StaleEntry(f"entry {i}")


def _nth(kinds: bytes, n: int, total: int) -> int:
    """The entry of conversation record `n` (from 0) of `total`, counted from the nearer end."""
    if n < total - n:
        i = -1
        for _ in range(n + 1):
            i = kinds.find(_CONVERSATION, i + 1)
        return i
    i = len(kinds)
    for _ in range(total - n):
        i = kinds.rfind(_CONVERSATION, 0, i)
    return i


def _turn_start(entries: Entries, f: BinaryIO, kinds: bytes, after: int) -> int | None:
    """The first conversation entry at or after byte `after` that is the person's message (a
    round starts there, so no tool call is parted from its result); else the last one before it
    (the last round alone is longer). None when there is none at all."""
    first = bisect_left(entries.words, after, key=lambda word: word & _OFFSET_MASK)
    for i in _conversation_entries(kinds, first):
        f.seek(entries.offset(i))
        record = decode_record(f.readline(LINE_CAP))
        if record is not None and record["role"] == USER and not record.get("notice"):
            return i
    return None


def _conversation_entries(kinds: bytes, first: int) -> Iterator[int]:
    """The conversation entries from entry `first` to the end, then those before it, backwards."""
    i = kinds.find(_CONVERSATION, first)
    while i >= 0:
        yield i
        i = kinds.find(_CONVERSATION, i + 1)
    i = kinds.rfind(_CONVERSATION, 0, first)
    while i >= 0:
        yield i
        i = kinds.rfind(_CONVERSATION, 0, i)


class OffsetsFile:
    """The writer's handle on the index: appends entries as records are written, replaces the
    file after a load found it stale. Any failure deletes it (the next open rebuilds it), so no
    entry is ever missing between two others."""

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None
        self._broken = False

    def replace(self, entries: Entries) -> None:
        self.close()
        self._broken = False
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            tmp.write_bytes(_HEADER + entries.to_bytes())
            os.replace(tmp, self.path)
        except OSError:
            tmp.unlink(missing_ok=True)
            self._drop()

    def append(self, entries: Entries) -> None:
        if self._broken or not len(entries):
            return
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
            data = entries.to_bytes()
            if os.write(self._fd, data) != len(data):
                raise OSError("short write")
        except OSError:
            self._drop()

    def _drop(self) -> None:
        self.close()
        self._broken = True
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass  # a file that cannot be deleted cannot be appended to either; its hashes give it away

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
