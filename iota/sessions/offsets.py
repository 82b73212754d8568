"""`messages.idx`: where each record the view depends on starts in the log, kept beside it.

A bot's log never ends: after a year it may hold a hundred thousand records, of which a resume
needs those since the last compaction. The index says where they are, so the loader
(iota.sessions.log) reads the log from there to its end, and of the index itself a handful of
entries found by binary search; opening costs the conversation's tail, however long its past:

    index, start = locate(log_file, idx_file, tail_bytes)
    # start: where the view's records begin (None: read the whole log); index.changed: the file
    # lags what this load found (the writer saves it, `OffsetsFile.save`)

It holds one entry per record the view is built from, in log order: every conversation record
(user, assistant, tool), system record and compaction marker. An entry is four little-endian
64-bit words:

    the record's byte offset in the log, its kind in the top byte (1 conversation, 2 system, 3 compaction)
    the CRC-32 of its line | the CRC-32 of the entry's other words << 32
    the conversation records before it | the system records before it << 32
    1 + the entry number of the last system record before it | 1 + that of the last compaction << 32 (0: none)

so the last entry alone says where the last compaction is, the entry of conversation record N is
found by binary search on the counts, and each entry says what came before it. The entries
describe the log as its rewinds left it: a rewind drops the entries at and after the byte it goes
back to, as the loader does, so conversation record N is the N a compaction marker counts.

The index is a cache, and never trusted further than it is checked:
- every entry read carries its own CRC, so a damaged entry is never read as another;
- it is written after the log, without fsync; an entry whose append failed deletes the file, so
  no entry can be missing between two others (`OffsetsFile`);
- at open, entries past the end of the log are dropped (a torn tail was cut), the last one's line
  must still hash as recorded, and the records after it (written after the index was last
  appended to, or by another program) are read and added;
- every entry the loader starts from is checked against its line's hash too;
- a missing file, a link, a FIFO or anything but a regular file, a wrong header or a hash that
  does not match, and the whole log is read once to rebuild it (iota.sessions.log opens the file
  without following a link or waiting on a FIFO; the writer replaces it). The loader's own
  checks (iota.sessions.log) still hold after that: a start the scan finds wrong falls back to
  reading the whole log, and rebuilds the index.
What it cannot check in full is a claim of absence: an index edited to say, with its hashes
intact, that no compaction came before its last entry is believed (a log longer than the tail then
opens from its tail, not from the summary), as a hand-edited log would be.

A never-compacted log can outgrow any model's window. Its view is then not loaded whole: the
loader starts at the first of the person's messages within the last `tail_bytes` of the log
(not counting what rewinds undid), and says how many conversation records it left out
(`Start.left_out`); the chat offers to compact at once (see docs/sessions.md).
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path
from typing import BinaryIO, NamedTuple

from iota.messages import ASSISTANT, COMPACTION, REWIND, SYSTEM, TOOL, USER
from iota.sessions.lines import LINE_CAP, decode_record, line_sum, previous_newline, read_lines, sum_at

INDEX_NAME = "messages.idx"

CONVERSATION_KIND, SYSTEM_KIND, COMPACTION_KIND = 1, 2, 3
KINDS = {USER: CONVERSATION_KIND, ASSISTANT: CONVERSATION_KIND, TOOL: CONVERSATION_KIND,
         SYSTEM: SYSTEM_KIND, COMPACTION: COMPACTION_KIND}
_HEADER = b"iota-idx\x02" + bytes(7)
_ENTRY = struct.Struct("<4Q")
_KIND_SHIFT = 56
_LOW = (1 << 32) - 1


class Entry(NamedTuple):
    number: int           # its place in the index, from 0
    offset: int
    kind: int
    sum: int              # the CRC-32 of its line
    conversation: int     # conversation records before it
    systems: int          # system records before it
    last_system: int      # the entry number of the last system record before it, -1 for none
    last_compaction: int  # the same for the last compaction marker

    @classmethod
    def unpack(cls, number: int, data: bytes) -> Entry:
        where, sums, counts, lasts = _ENTRY.unpack(data)
        line = sums & _LOW
        if sums >> 32 != _crc(where, line, counts, lasts):
            raise StaleEntry(f"entry {number} is damaged")
        return cls(number, where & ((1 << _KIND_SHIFT) - 1), where >> _KIND_SHIFT, line, counts & _LOW,
                   counts >> 32, (lasts & _LOW) - 1, (lasts >> 32) - 1)

    def tally_after(self) -> Tally:
        return Tally(self.number + 1, self.conversation + (self.kind == CONVERSATION_KIND),
                     self.systems + (self.kind == SYSTEM_KIND),
                     self.number if self.kind == SYSTEM_KIND else self.last_system,
                     self.number if self.kind == COMPACTION_KIND else self.last_compaction)


class Tally:
    """What the next entry will say came before it."""

    def __init__(self, count: int = 0, conversation: int = 0, systems: int = 0, last_system: int = -1,
                 last_compaction: int = -1):
        self.count = count
        self.conversation = conversation
        self.systems = systems
        self.last_system = last_system
        self.last_compaction = last_compaction

    def entry(self, offset: int, kind: int, line: bytes) -> bytes:
        """The packed entry of a record of `kind` at `offset` whose line is `line`; counted."""
        where, line_part = offset | kind << _KIND_SHIFT, line_sum(line)
        counts, lasts = self.conversation | self.systems << 32, (self.last_system + 1) | (self.last_compaction + 1) << 32
        data = _ENTRY.pack(where, line_part | _crc(where, line_part, counts, lasts) << 32, counts, lasts)
        if kind == CONVERSATION_KIND:
            self.conversation += 1
        elif kind == SYSTEM_KIND:
            self.systems, self.last_system = self.systems + 1, self.count
        else:
            self.last_compaction = self.count
        self.count += 1
        return data


class Index:
    """The entries of one log as a load finds them: the first `kept` of the file, then `added`,
    read from the log after them. `rebuilt`: the file is not to be trusted at all."""

    def __init__(self, file: BinaryIO | None = None, kept: int = 0, rebuilt: bool = False):
        self._file = file
        self.kept = kept
        self.added = bytearray()
        self.rebuilt = rebuilt
        self.cut = False  # entries of the file were dropped
        self.tally = self.entry(kept - 1).tally_after() if kept else Tally()

    def __len__(self) -> int:
        return self.kept + len(self.added) // _ENTRY.size

    @property
    def changed(self) -> bool:
        return self.rebuilt or self.cut or bool(self.added)

    def entry(self, number: int) -> Entry:
        """Entry `number`; StaleEntry when there is none (a damaged entry pointed past the end)."""
        if not 0 <= number < len(self):
            raise StaleEntry(f"no entry {number}")
        if number < self.kept:
            assert self._file is not None
            self._file.seek(len(_HEADER) + number * _ENTRY.size)
            data = self._file.read(_ENTRY.size)
        else:
            at = (number - self.kept) * _ENTRY.size
            data = bytes(self.added[at: at + _ENTRY.size])
        if len(data) != _ENTRY.size:
            raise StaleEntry(f"entry {number} is cut short")
        return Entry.unpack(number, data)

    def add(self, offset: int, kind: int, line: bytes) -> None:
        self.added += self.tally.entry(offset, kind, line)

    def cut_at(self, target: int) -> None:
        """Drop the entries at byte `target` of the log and after (a rewind, a log cut shorter)."""
        keep = self.first_at(target)
        if keep >= len(self):
            return
        if keep < self.kept:
            self.kept, self.cut = keep, True
            self.added.clear()
        else:
            del self.added[(keep - self.kept) * _ENTRY.size:]
        self.tally = self.entry(keep - 1).tally_after() if keep else Tally()

    def first_at(self, target: int) -> int:
        """The number of the first entry at byte `target` or after (binary search)."""
        low, high = 0, len(self)
        while low < high:
            middle = (low + high) // 2
            if self.entry(middle).offset < target:
                low = middle + 1
            else:
                high = middle
        return low

    def conversation_entry(self, n: int) -> Entry | None:
        """The entry of conversation record `n` (from 0), None past the last."""
        low, high = 0, len(self)
        while low < high:
            middle = (low + high) // 2
            if self.entry(middle).conversation < n:
                low = middle + 1
            else:
                high = middle
        for number in range(low, len(self)):  # past the system and compaction entries just before it
            entry = self.entry(number)
            if entry.kind == CONVERSATION_KIND:
                return entry
        return None

    def close(self) -> None:
        """Forget the file: what saving the index needs is in memory (`OffsetsFile.save`)."""
        self._file = None


class StaleEntry(Exception):
    """An entry is damaged, or its line no longer hashes as it did (the log was changed under the
    index)."""


def _crc(where: int, line: int, counts: int, lasts: int) -> int:
    return zlib.crc32(struct.pack("<QIQQ", where, line, counts, lasts))


def locate(f: BinaryIO, stored: BinaryIO | None, tail_bytes: int | None) -> tuple[Index, Start | None]:
    """The index of the log open as `f` (from the index file open as `stored`, checked and
    brought up to the log's end, or rebuilt from the whole log), and where the view starts."""
    size = f.seek(0, os.SEEK_END)
    try:
        index = _stored(f, stored, size) if stored is not None else None
        if index is None:
            index = rebuilt(f)
        return index, view_start(index, f, tail_bytes)
    except StaleEntry:
        index = rebuilt(f)
        try:
            return index, view_start(index, f, tail_bytes)
        except StaleEntry:
            return index, None  # the log changed under this very read: read all of it


def rebuilt(f: BinaryIO) -> Index:
    index = Index(rebuilt=True)
    _read_into(index, f, 0)
    return index


def _stored(f: BinaryIO, stored: BinaryIO, size: int) -> Index | None:
    """The stored index, past-the-end entries dropped and the records after its last read; None
    when it is not an index or its last entry does not hold up."""
    length = stored.seek(0, os.SEEK_END)
    stored.seek(0)
    if stored.read(len(_HEADER)) != _HEADER:
        return None
    index = Index(stored, (length - len(_HEADER)) // _ENTRY.size)
    index.cut_at(size)
    follows = 0
    if len(index):
        last = index.entry(len(index) - 1)
        if sum_at(f, last.offset) != last.sum:
            return None
        f.seek(last.offset)
        follows = last.offset + len(f.readline(LINE_CAP))
    if (length - len(_HEADER)) % _ENTRY.size:
        index.cut = True  # a torn last entry, left off
    _read_into(index, f, follows)
    return index


def _read_into(index: Index, f: BinaryIO, start: int) -> None:
    """Add the entries of the records from byte `start` on, applying their rewinds."""
    for offset, line in read_lines(f, start):
        record = decode_record(line) if line is not None else None
        if record is None:
            continue
        role = record["role"]
        if role == REWIND:
            target = record.get("rewound_to")
            # As the loader takes a rewind: one that names no earlier byte undoes nothing.
            if type(target) is int and 0 <= target < offset:
                index.cut_at(target)
        elif role in KINDS:
            index.add(offset, KINDS[role], line)


class Start(NamedTuple):
    """Where the view's records begin, and what comes before that point."""

    offset: int           # where the scan starts: a line of the log
    conversation: int     # conversation records before it
    messages: int         # message records (system ones too) before it
    system: int | None    # the offset of the last system record before it
    left_out: int = 0     # conversation records the view leaves out without a summary of them


def view_start(index: Index, f: BinaryIO, tail_bytes: int | None) -> Start | None:
    """Where the loader should start reading; None to read the whole log (nothing to skip).
    Raises StaleEntry when an entry it would start from does not hold up."""
    if not len(index):
        return None
    last = _counted(index, index.entry(len(index) - 1))
    last_compaction = last.number if last.kind == COMPACTION_KIND else last.last_compaction
    left_out = 0
    if last_compaction >= 0:
        first = marker = _counted(index, _checked(index.entry(last_compaction), f, COMPACTION_KIND))
        f.seek(marker.offset)
        through = (decode_record(f.readline(LINE_CAP)) or {}).get("compacted_through")
        through = max(through, 0) if type(through) is int else 0
        retained = index.conversation_entry(through)
        if retained is not None and retained.number < marker.number:
            first = retained
        # The counts must agree with the marker: a marker counts the records before the one it
        # keeps, and comes after every record it summarises.
        if first.conversation != through if first is retained else marker.conversation > through:
            raise StaleEntry(f"entry {first.number}")
    else:
        begins = index.conversation_entry(0)
        if tail_bytes is None or begins is None or f.seek(0, os.SEEK_END) - begins.offset <= tail_bytes:
            return None  # it all fits (what rewinds undid only makes it shorter): nothing to look for
        after = _tail_from(f, tail_bytes)
        if after <= begins.offset:
            return None
        found = _turn_start(index, f, after)
        if found is None or not found.conversation:  # no round starts later than the first: all of it
            return None
        first, left_out = found, found.conversation
    _counted(index, _checked(first, f, first.kind))
    if first.offset == 0:
        return None
    system = _checked(index.entry(first.last_system), f, SYSTEM_KIND).offset if first.last_system >= 0 else None
    return Start(first.offset, first.conversation, first.conversation + first.systems, system, left_out)


def _counted(index: Index, entry: Entry) -> Entry:
    """`entry`, if what it says came before it follows from the entry before it; else StaleEntry.
    (Each entry's counts are its predecessor's plus the predecessor itself, so a damaged word in
    either shows.)"""
    expected = index.entry(entry.number - 1).tally_after() if entry.number else Tally()
    if (entry.conversation, entry.systems, entry.last_system, entry.last_compaction) != \
            (expected.conversation, expected.systems, expected.last_system, expected.last_compaction):
        raise StaleEntry(f"entry {entry.number}")
    return entry


def _checked(entry: Entry, f: BinaryIO, kind: int) -> Entry:
    """`entry`, if it is of `kind` and its line still hashes as it did; else StaleEntry."""
    if entry.kind != kind or sum_at(f, entry.offset) != entry.sum:
        raise StaleEntry(f"entry {entry.number}")
    return entry


def _tail_from(f: BinaryIO, tail_bytes: int) -> int:
    """The byte from which the log's last `tail_bytes` begin, not counting what rewinds undid
    (negative when the whole log is shorter): the tail a rewind leaves is the one the log would
    have had the undone records never been written, not the round before them alone. Reads the
    lines from there to the end once, looking for rewinds."""
    size = f.seek(0, os.SEEK_END)
    undone: list[tuple[int, int]] = []  # (from, to): the bytes a rewind record undid, itself included
    scanned = size  # the rewinds from here on are in `undone`
    while True:
        after = _live_back(undone, size, tail_bytes)
        if after >= scanned or scanned == 0:
            return after
        begin = previous_newline(f, max(after, 0)) + 1  # the line holding byte `after`
        for offset, line in read_lines(f, begin):
            if offset >= scanned:
                break
            if line is None or b'"rewind"' not in line:
                continue
            record = decode_record(line)
            target = record.get("rewound_to") if record is not None and record["role"] == REWIND else None
            if type(target) is int and 0 <= target < offset:  # as `_read_into` takes it
                undone.append((target, offset + len(line)))
        scanned = begin


def _live_back(undone: list[tuple[int, int]], size: int, tail_bytes: int) -> int:
    """Walking back from `size`, where `tail_bytes` bytes outside the `undone` spans are behind."""
    left, at = tail_bytes, size
    for start, end in _merged(undone)[::-1]:
        if end <= at:
            if at - end >= left:
                return at - left
            left -= at - end
        at = min(at, start)
    return at - left


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _turn_start(index: Index, f: BinaryIO, after: int) -> Entry | None:
    """The first conversation entry at or after byte `after` that is the person's message (a
    round starts there, so no tool call is parted from its result); else the last one before it
    (the last round alone is longer). None when there is none at all."""
    first = index.first_at(after)
    for number in [*range(first, len(index)), *range(first - 1, -1, -1)]:
        entry = index.entry(number)
        if entry.kind != CONVERSATION_KIND:
            continue
        f.seek(entry.offset)
        record = decode_record(f.readline(LINE_CAP))
        if record is not None and record["role"] == USER and not record.get("notice"):
            return entry
    return None


class OffsetsFile:
    """The writer's handle on the index: saves what a load found, then appends an entry for each
    record written. Any failure deletes the file (the next open rebuilds it), so no entry is ever
    missing between two others."""

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None
        self._tally: Tally | None = None  # None: nothing is appended (the file is gone)

    def save(self, index: Index) -> None:
        """Bring the file to what a load found, and count on from there."""
        self.close()
        self._tally = index.tally
        try:
            if index.rebuilt:  # the whole index is in memory
                tmp = self.path.with_name(self.path.name + ".tmp")
                tmp.unlink(missing_ok=True)
                _write(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FLAGS, 0o644), _HEADER + bytes(index.added))
                os.replace(tmp, self.path)
            elif index.changed:
                # Deleted since the load, it cannot be opened, and the next open rebuilds it.
                fd = os.open(self.path, os.O_WRONLY | _FLAGS)
                os.ftruncate(fd, len(_HEADER) + index.kept * _ENTRY.size)
                os.lseek(fd, 0, os.SEEK_END)
                _write(fd, bytes(index.added))
        except OSError:
            self._drop()

    def append(self, records: list[tuple[int, int, bytes]]) -> None:
        """Entries for records just written to the log: (offset, kind, line)."""
        if self._tally is None or not records:
            return
        data = b"".join(self._tally.entry(*record) for record in records)
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | _FLAGS)
            if os.write(self._fd, data) != len(data):
                raise OSError("short write")
        except OSError:
            self._drop()

    def _drop(self) -> None:
        self.close()
        self._tally = None
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass  # a file that cannot be deleted cannot be appended to either; its hashes give it away

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


# A link in the bundle's place is never followed: the index is written only as a file of its own;
# and a FIFO planted there is not waited on (a write-only open of one blocks until a reader comes).
_FLAGS = os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK


def _write(fd: int, data: bytes) -> None:
    """Write all of `data` and close `fd`."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
