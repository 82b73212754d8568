"""A session's `messages.jsonl`: writing records, cutting a torn tail, loading the live view.

The log is append-only: one compact JSON record per line, never rewritten. Records are written
as they happen, each with one `write`: the user's message before it is sent, streamed reply text
about once a second (`partial` records), each assistant record as its reply completes, a
`tool_started` mark before each tool call runs, each result as its call returns, and
`turn_end` when the turn is over; every record of a turn carries the turn's id. What iota
acknowledges (the user's message, replies, results, notices, compactions, the end of a turn) is
fsynced before iota goes on; partial text is not (a killed process loses nothing that reached
`write`; only a crash of the machine can take the last second of streamed text with it).
`iota.sessions.repair` turns these records into the view, closing a turn that never ended.

Compaction does not delete anything either; it appends a marker `{"role":"compaction","content":<summary>,
"compacted_through":N,...}` that says "the first N conversation messages are summarised". The
live view the model is sent is then

    the last system record (unless a later `system_cleared` record removed it),
    a copy of conversation message N with the summary preamble prepended to its content,
    conversation messages N+1 … to the end of the log.

Conversation messages are the user, assistant and tool records; N counts them from the start
of the log. System records, compaction markers, the bookkeeping records (`partial`,
`tool_started`, `turn_end`) and records of unknown roles are not counted.

Rewinding does not delete anything either. `/rewind` appends `{"role":"rewind","rewound_to":X,…}`:
the records from byte X (where one of the person's messages starts) up to the rewind record are
undone, and the view is built as if they had never been written — the log as it stood just
before X, followed by whatever comes after the rewind record. Every count above (N, the
conversation records, `message_count`) counts the records that are not undone, so a compaction
after a rewind names its N in the same terms; a compaction marker or system record that was
undone gives way to the one before it. A rewind record that names no earlier byte is ignored.

Loading without re-reading history
----------------------------------
A bot's log never ends: after a year it may hold a hundred thousand records of which the view
needs the last fifty. Scanning the whole file on every start would make each start slower than
the last, so the loader starts where the view's records begin, found in the offset index kept
beside the log (`messages.idx`, iota.sessions.offsets): at the first retained message or at the
last compaction marker, whichever comes first, with the last system record before that point
read on its own. It scans from there to the end of the file exactly as a full scan would from
byte 0, and checks what it can without reading the skipped part: the scan must meet a
compaction marker whose retained start is at or after where it began (a marker appended by
another program may reach further back), and no rewind may reach back before it. If a check
fails it falls back to a full scan from byte 0, which is always right, merely slower.

A log that was never compacted has no such point, and its view is all of it. Past `tail_bytes`
(`TAIL_BYTES` for a session being opened) the loader takes only its tail, from the first of the
person's messages in the last `tail_bytes` on (what rewinds undid not counted), and the view's
first message says how many earlier records were left out (`SessionView.left_out`): a request
the model cannot take is not built, and the chat offers to compact at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import stat
from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from iota.errors import SessionError
from iota.text import json_bytes
from iota.messages import ASSISTANT, COMPACTION, REWIND, SYSTEM, TOOL, USER, Message, Usage
from iota.sessions import offsets
from iota.sessions.lines import LINE_CAP, decode_record, previous_newline, read_lines
from iota.sessions.repair import BOOKKEEPING_ROLES, INTERRUPTED_RESULT, LOG_NAME, assemble, repair_tail

__all__ = ["INTERRUPTED_RESULT", "LOG_NAME", "LogIndex", "SessionView", "cut_torn_tail", "decode_record",
           "encode_record", "json_bytes", "load_log", "read_lines", "repair_tail", "summary_preamble"]

SUMMARY_HEADER = "[Earlier conversation summary]\n"
SUMMARY_FOOTER = "\n\n———\n\n"
CONVERSATION_ROLES = frozenset({USER, ASSISTANT, TOOL})



def summary_preamble(summary: str) -> str:
    """What goes before the first retained message once a conversation has been compacted."""
    return SUMMARY_HEADER + summary.strip() + SUMMARY_FOOTER


def left_out_note(count: int) -> str:
    """What stands in for a summary when a never-compacted log was loaded from its tail."""
    records = "1 earlier message" if count == 1 else f"{count:,} earlier messages"
    return (f"{records} of this conversation are not shown: together with the rest they are longer than "
            "a model can read at once, and they were never summarised. They are still in the session log.")


# -- writing ------------------------------------------------------------------------------------


def encode_record(message: Message, at: str = "") -> bytes:
    """One log line: the compact record (stamped `at`, when given) plus `\\n`, cut to fit
    `LINE_CAP` if it is longer.

    An over-long record keeps its shape: its content (then, if that is not enough, its
    reasoning) loses its tail and ends with a note of how far over the cap the record was.
    """
    record = message.to_record()
    if at:
        record["at"] = at
    line = _dump(record)
    if len(line) <= LINE_CAP:
        return line
    marker = f"\n[record truncated: {len(line) - LINE_CAP} bytes over the log line cap]"
    for key in ("content", "reasoning"):
        text = record.get(key)
        if not text:
            continue
        # Every character cut saves at least one byte, and the marker costs at most two bytes
        # per character (its newline is escaped), so this cut is always enough for this field.
        excess = len(line) - LINE_CAP + 2 * len(marker)
        record[key] = text[: max(0, len(text) - excess)] + marker
        line = _dump(record)
        if len(line) <= LINE_CAP:
            return line
    over = len(line) - LINE_CAP
    raise SessionError(f"a {message.role} record is {over} bytes over the log line cap and has no text left to cut")


def _dump(record: dict[str, Any]) -> bytes:
    return json_bytes(record, separators=(",", ":")) + b"\n"


# -- a torn tail ----------------------------------------------------------------------------------


def cut_torn_tail(path: Path) -> str | None:
    """Cut a torn end off the log before anything is appended to it; say what was cut.

    A crash mid-write can leave half a record without its newline, or a line of NUL bytes.
    Appending after it would glue the next record onto the stub and lose both, so the file is
    cut back to the end of its last line that decodes. Returns the warning to show, or None.
    """
    with open(path, "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        end = previous_newline(f, size) + 1  # drops bytes after the last newline
        lines_cut = 1 if end < size else 0
        while end > 0:
            start = previous_newline(f, end - 1) + 1
            f.seek(start)
            if decode_record(f.read(end - start)) is not None:
                break
            end = start
            lines_cut += 1
        if end == size:
            return None
        f.truncate(end)
        f.flush()
        os.fsync(f.fileno())
    what = "a torn last line" if lines_cut == 1 else f"{lines_cut} torn last lines"
    return f"{LOG_NAME}: cut {what} ({size - end} bytes) back to the last complete record"


# -- loading -------------------------------------------------------------------------------------------


@dataclass
class SessionView:
    """What a resumed conversation is sent, and what the meter and compactor start from."""

    messages: list[Message] = field(default_factory=list)
    # The last compaction's summary, "" if the session was never compacted. The next summary
    # request includes it, so each summary carries the earlier ones forward.
    summary: str = ""
    # The usage of the last assistant record (that has one) after the last compaction marker.
    last_usage: Usage | None = None
    warnings: list[str] = field(default_factory=list)
    # Records to append that close a turn the log ends in (see iota.sessions.repair); they are
    # already in `messages`.
    closing: list[Message] = field(default_factory=list)
    # Message records in the whole log, system records included (meta.json's `message_count`).
    message_count: int = 0
    # The person's messages in the view (not notices, not what iota wrote for the model alone),
    # (byte offset of the record, text), oldest first: where `/rewind` can go back to.
    rewind_points: list[tuple[int, str]] = field(default_factory=list)
    # Conversation records of a never-compacted log left out of the view: it was loaded from its
    # tail (see `load_log`), and the chat offers to compact.
    left_out: int = 0


class LogIndex:
    """Where the records the view depends on sit in the log, kept as records are read or written.

    `offsets` are the line offsets of the conversation records numbered `base` onwards;
    `systems` the offsets of the last system record before them and of every one after;
    `compactions` the (offset, N) of the compaction markers met. Every record from byte `start`
    on is known, so a rewind to there or later can be applied (`rewind`).
    """

    def __init__(self, base: int = 0, systems: list[int] | None = None, messages: int = 0, start: int = 0):
        # The offset index as a load found it (`load_log`), for the writer to save.
        self.found = offsets.Index(rebuilt=True)
        self.base = base
        self.messages = messages  # message records (system ones too) in the log
        self.offsets: list[int] = []
        self.systems: list[int] = systems or []
        self.compactions: list[tuple[int, int]] = []
        self.start = start

    @property
    def conversation_count(self) -> int:
        """Conversation records in the whole log: the next compaction's N is counted against it."""
        return self.base + len(self.offsets)

    @property
    def compacted_through(self) -> int | None:
        return self.compactions[-1][1] if self.compactions else None

    def note(self, offset: int, role: str, compacted_through: int | None = None) -> None:
        if role == SYSTEM:
            self.systems.append(offset)
            self.messages += 1
        elif role in CONVERSATION_ROLES:
            self.offsets.append(offset)
            self.messages += 1
        elif role == COMPACTION:
            self.compactions.append((offset, compacted_through or 0))

    def rewind(self, target: int) -> bool:
        """Forget the records from byte `target` on, as a rewind record undoes them. False (and
        nothing forgotten) when `target` lies before what this index knows."""
        if target < self.start:
            return False
        cut = bisect_left(self.offsets, target)
        systems_cut = bisect_left(self.systems, target)
        self.messages -= (len(self.offsets) - cut) + (len(self.systems) - systems_cut)
        del self.offsets[cut:], self.systems[systems_cut:]
        self.compactions = [marker for marker in self.compactions if marker[0] < target]
        return True

    def retained_start(self) -> int:
        """The last marker's N, clamped to the conversation as it stands."""
        return min(max(self.compacted_through or 0, 0), self.conversation_count)


# How much of a never-compacted log a session opens with, at most: about a million tokens of
# conversation, as much as the largest windows take (see the module's docstring).
TAIL_BYTES = 4 * 1024 * 1024


def load_log(path: Path, tail_bytes: int | None = None) -> tuple[SessionView, LogIndex]:
    """Load the live view from where its records begin (iota.sessions.offsets); a log that was
    never compacted only from its last `tail_bytes` when it is longer (None: all of it).

    The offset index as this load found it is in `LogIndex.found`, for the writer to save; the
    loader itself writes nothing.
    """
    try:
        with open(path, "rb") as f, _open_index(path.with_name(offsets.INDEX_NAME)) as stored:
            index, start = offsets.locate(f, stored, tail_bytes)
            loaded = _scan_from(f, start) if start is not None else None
            if loaded is None and start is not None:
                # The scan found the start wrong, so the index it came from is: read it afresh.
                index = offsets.rebuilt(f)
            if loaded is None:
                loaded = _scan(f, 0, LogIndex(), None)
                assert loaded is not None, "a scan from byte 0 always has every retained record"
            index.close()
            loaded[1].found = index
            return loaded
    except FileNotFoundError:
        return SessionView(), LogIndex()


def _open_index(path: Path) -> BinaryIO | contextlib.nullcontext:
    """The index file for reading, or nothing (the index is then rebuilt from the log). Only a
    file of the bundle's own is read: a link is not followed, and a FIFO or device planted in
    its place is not waited on (opening a FIFO for reading blocks until a writer comes)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return contextlib.nullcontext()
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return contextlib.nullcontext()
    return open(fd, "rb")


def _scan_from(f: BinaryIO, start: offsets.Start) -> tuple[SessionView, LogIndex] | None:
    system = None
    if start.system is not None:
        f.seek(start.system)
        system = decode_record(f.readline(LINE_CAP))
        if system is None or system["role"] != SYSTEM:
            return None
    index = LogIndex(start.conversation, [start.system] if system is not None else [], start.messages,
                     start=start.offset)
    return _scan(f, start.offset, index, system, left_out=start.left_out)


def _scan(
    f: BinaryIO, start: int, index: LogIndex, system: dict[str, Any] | None, left_out: int = 0
) -> tuple[SessionView, LogIndex] | None:
    """Read records from `start` to the end. None if the view needs records before `start`
    (unless `left_out`: the conversation records before it are left out of a view that was never
    compacted)."""
    # The lines of the conversation and bookkeeping records, where each starts, and where
    # conversation record number index.base + i is among them (positions[i]). Lines, not decoded
    # records: bytes are not tracked by the garbage collector, and a hundred thousand live dicts
    # make each of its full passes slow. Only the retained ones are decoded again.
    lines: list[bytes] = []
    starts: list[int] = []
    positions: list[int] = []
    # The compaction markers and system records met, (offset, record): a rewind can undo the
    # last of them, and the one before is in effect again.
    compactions: list[tuple[int, dict[str, Any]]] = []
    systems: list[tuple[int, dict[str, Any]]] = [(index.systems[0], system)] if system is not None else []
    unreadable: list[int] = []
    for offset, line in read_lines(f, start):
        record = decode_record(line) if line is not None else None
        if record is None:
            if line is None or line.strip():
                unreadable.append(offset)
            continue
        role = record["role"]
        if role == REWIND:
            target = Message.from_record(record).rewound_to
            if target is None or not 0 <= target < offset:
                continue  # it names nothing before itself: nothing to undo
            if not index.rewind(target):
                return None  # it reaches back before `start`
            cut = bisect_left(starts, target)
            del lines[cut:], starts[cut:], positions[bisect_left(positions, cut):]
            compactions = [marker for marker in compactions if marker[0] < target]
            systems = [pair for pair in systems if pair[0] < target]
            continue
        if role == SYSTEM:
            systems.append((offset, record))
        elif role in CONVERSATION_ROLES:
            positions.append(len(lines))
            lines.append(line)
            starts.append(offset)
        elif role == COMPACTION:
            compactions.append((offset, record))
        elif role in BOOKKEEPING_ROLES:
            lines.append(line)
            starts.append(offset)
            continue
        else:
            continue
        index.note(offset, role, Message.from_record(record).compacted_through if role == COMPACTION else None)
    if start > 0 and not compactions and not left_out:
        return None
    retained = index.base if left_out and not compactions else index.retained_start()
    if retained < index.base:
        return None

    # The retained records start at the first retained conversation record; when none is
    # retained, after the last one (a turn's bookkeeping can follow it).
    first = positions[retained - index.base] if retained < index.conversation_count else (
        positions[-1] + 1 if positions else 0)
    records = [json.loads(line) for line in lines[first:]]
    assembled = assemble(records)
    view = SessionView(warnings=_unreadable_warnings(unreadable) + assembled.warnings, closing=assembled.closing,
                       message_count=index.messages, left_out=0 if compactions else left_out)
    view.rewind_points = [(offset, record["content"]) for offset, record in zip(starts[first:], records)
                          if record["role"] == USER and not record.get("notice") and not record.get("hidden")
                          and isinstance(record.get("content"), str)]
    system = systems[-1][1] if systems else None
    if system is not None and not system.get("system_cleared"):
        view.messages.append(Message.from_record(system))
    tail = assembled.messages
    compacted_at = -1
    if compactions:
        compacted_at, compaction = compactions[-1]
        view.summary = Message.from_record(compaction).content
        preamble = summary_preamble(view.summary)
    elif view.left_out:
        preamble = summary_preamble(left_out_note(view.left_out))
    if compactions or view.left_out:
        if tail:
            tail[0] = dataclasses.replace(tail[0], content=preamble + tail[0].content)
        else:
            tail = [Message(USER, preamble)]
    view.messages.extend(tail)
    # A tail's last usage counted the records left out too: the meter estimates the tail instead.
    view.last_usage = None if view.left_out else _last_usage(lines, starts, after=compacted_at)
    return view, index


def _last_usage(lines: list[bytes], starts: list[int], after: int) -> Usage | None:
    """The usage of the last assistant record (that has one) written after byte `after`."""
    for line, offset in zip(reversed(lines), reversed(starts)):
        if offset <= after:
            break
        record = json.loads(line)
        if record["role"] == ASSISTANT and isinstance(record.get("usage"), dict):
            return Usage.from_record(record["usage"])
    return None


def _unreadable_warnings(offsets: list[int]) -> list[str]:
    if not offsets:
        return []
    if len(offsets) == 1:
        return [f"{LOG_NAME}: skipped an unreadable line at byte {offsets[0]}"]
    return [f"{LOG_NAME}: skipped {len(offsets)} unreadable lines (the first at byte {offsets[0]})"]
