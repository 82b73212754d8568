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
the last, so the view is loaded from a *checkpoint* kept in meta.json under `view_index`:

    "view_index": {"offset": 81234567, "conversation": 99950, "messages": 99951, "line_sha256": "…",
                   "system": {"offset": 0, "line_sha256": "…"}}

`offset` is where a line starts; `conversation` is how many conversation records come before
it, `messages` how many message records (system ones too: meta.json's `message_count`, which
is recounted from it at every open, so a turn cut short is counted right); `system` points at the last system record before it (null when there is none). The loader
reads the system record there, then scans from `offset` to the end of the file, exactly as a
full scan would from byte 0. Nothing before `offset` can matter to the view as long as the last
compaction marker lies after `offset` and retains from a message at or after it, and the
checkpoint is chosen to make that true: it sits at the first retained message or at the last
compaction marker, whichever comes first.

The log is append-only, so a checkpoint stays true for as long as the file's prefix is the same
file. The loader still checks what it can without reading the skipped part: the line at
`offset` (and at the system offset) must hash to the recorded sha256 (its first 16 hex digits),
the system line must be a system record, and the scan must meet a compaction marker whose
retained start is at or after the checkpoint (a marker appended by another program may reach
further back), and no rewind may reach back before the checkpoint. If any check fails it falls back to a full scan from byte 0, which is always
right, merely slower. What it cannot check is a claim of absence: a checkpoint saying "no system
record before this" is believed, so a hand-edited meta.json can hide a system prompt.

The writer (`LogIndex`) keeps the offsets it needs as records are scanned and appended, and
computes a new checkpoint after a full scan and after each batch holding a compaction marker;
it is stored with the batch's meta.json rewrite.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from iota.errors import SessionError
from iota.text import json_bytes
from iota.messages import ASSISTANT, COMPACTION, REWIND, SYSTEM, TOOL, USER, Message, Usage
from iota.sessions.repair import BOOKKEEPING_ROLES, INTERRUPTED_RESULT, LOG_NAME, assemble, repair_tail

__all__ = ["INTERRUPTED_RESULT", "LOG_NAME", "LogIndex", "SessionView", "cut_torn_tail", "decode_record",
           "encode_record", "json_bytes", "load_log", "read_lines", "repair_tail", "summary_preamble"]

# The longest line (record plus newline) written to or read from the log.
LINE_CAP = 32 * 1024 * 1024
SUMMARY_HEADER = "[Earlier conversation summary]\n"
SUMMARY_FOOTER = "\n\n———\n\n"
CONVERSATION_ROLES = frozenset({USER, ASSISTANT, TOOL})

_BACKWARD_CHUNK = 64 * 1024


def summary_preamble(summary: str) -> str:
    """What goes before the first retained message once a conversation has been compacted."""
    return SUMMARY_HEADER + summary.strip() + SUMMARY_FOOTER


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
        end = _previous_newline(f, size) + 1  # drops bytes after the last newline
        lines_cut = 1 if end < size else 0
        while end > 0:
            start = _previous_newline(f, end - 1) + 1
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


def _previous_newline(f: BinaryIO, before: int) -> int:
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


class LogIndex:
    """Where the records the view depends on sit in the log, kept as records are read or written.

    `offsets` are the line offsets of the conversation records numbered `base` onwards;
    `systems` the offsets of the last system record before them and of every one after;
    `compactions` the (offset, N) of the compaction markers met. Every record from byte `start`
    on is known, so a rewind to there or later can be applied (`rewind`).
    """

    def __init__(self, base: int = 0, systems: list[int] | None = None, messages: int = 0, start: int = 0):
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

    def checkpoint(self, log_path: Path) -> dict[str, Any] | None:
        """Move the checkpoint up to the last compaction and describe it for meta.json.

        None when there is nothing to skip (never compacted, or everything is retained) or the
        last marker reaches back before what this index remembers; the next load then scans the
        whole log.
        """
        if not self.compactions:
            return None
        retained = self.retained_start()
        if retained < self.base:
            return None
        at = self.compactions[-1][0]
        if retained < self.conversation_count:
            at = min(at, self.offsets[retained - self.base])
        if at == 0:
            return None
        before = bisect_left(self.offsets, at)
        system_before = bisect_left(self.systems, at)
        # The message records from `at` on are conversation records and system records.
        messages_before = self.messages - (len(self.offsets) - before) - (len(self.systems) - system_before)
        self.base += before
        del self.offsets[:before]
        del self.systems[: max(0, system_before - 1)]
        self.start = max(self.start, at)
        with open(log_path, "rb") as f:
            system = None
            if system_before:
                system = {"offset": self.systems[0], "line_sha256": _line_hash(f, self.systems[0])}
            return {"offset": at, "conversation": self.base, "messages": messages_before,
                    "line_sha256": _line_hash(f, at), "system": system}


def load_log(path: Path, checkpoint: Any = None) -> tuple[SessionView, LogIndex]:
    """Load the live view, from `checkpoint` (meta.json's `view_index`) when it holds up."""
    try:
        with open(path, "rb") as f:
            start = _validated_start(f, checkpoint)
            if start is not None:
                loaded = _scan(f, *start)
                if loaded is not None:
                    return loaded
            loaded = _scan(f, 0, LogIndex(), None)
            assert loaded is not None, "a scan from byte 0 always has every retained record"
            return loaded
    except FileNotFoundError:
        return SessionView(), LogIndex()


def _validated_start(f: BinaryIO, checkpoint: Any) -> tuple[int, LogIndex, dict[str, Any] | None] | None:
    try:
        offset, base, digest = checkpoint["offset"], checkpoint["conversation"], checkpoint["line_sha256"]
        messages, system = checkpoint["messages"], checkpoint["system"]
        system_offset, system_digest = (system["offset"], system["line_sha256"]) if system is not None else (None, None)
    except (TypeError, KeyError):
        return None
    if not (type(offset) is int and type(base) is int and type(messages) is int and offset > 0
            and 0 <= base <= messages):
        return None
    if _line_hash(f, offset) != digest:
        return None
    if system_offset is None:
        return offset, LogIndex(base, messages=messages, start=offset), None
    if not (type(system_offset) is int and 0 <= system_offset < offset):
        return None
    if _line_hash(f, system_offset) != system_digest:
        return None
    f.seek(system_offset)
    record = decode_record(f.readline(LINE_CAP))
    if record is None or record["role"] != SYSTEM:
        return None
    # The system record before the checkpoint was counted in `messages`; noting it again would count it twice.
    return offset, LogIndex(base, [system_offset], messages, start=offset), record


def _scan(
    f: BinaryIO, start: int, index: LogIndex, system: dict[str, Any] | None
) -> tuple[SessionView, LogIndex] | None:
    """Read records from `start` to the end. None if the view needs records before `start`."""
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
            if target is None or target >= offset:
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
    if start > 0 and not compactions:
        return None
    retained = index.retained_start()
    if retained < index.base:
        return None

    # The retained records start at the first retained conversation record; when none is
    # retained, after the last one (a turn's bookkeeping can follow it).
    first = positions[retained - index.base] if retained < index.conversation_count else (
        positions[-1] + 1 if positions else 0)
    records = [json.loads(line) for line in lines[first:]]
    assembled = assemble(records)
    view = SessionView(warnings=_unreadable_warnings(unreadable) + assembled.warnings, closing=assembled.closing,
                       message_count=index.messages)
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
        if tail:
            tail[0] = dataclasses.replace(tail[0], content=preamble + tail[0].content)
        else:
            tail = [Message(USER, preamble)]
    view.messages.extend(tail)
    view.last_usage = _last_usage(lines, starts, after=compacted_at)
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


def _line_hash(f: BinaryIO, offset: int) -> str:
    f.seek(offset)
    return hashlib.sha256(f.readline(LINE_CAP)).hexdigest()[:16]


def _unreadable_warnings(offsets: list[int]) -> list[str]:
    if not offsets:
        return []
    if len(offsets) == 1:
        return [f"{LOG_NAME}: skipped an unreadable line at byte {offsets[0]}"]
    return [f"{LOG_NAME}: skipped {len(offsets)} unreadable lines (the first at byte {offsets[0]})"]
