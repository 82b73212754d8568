"""Session bundles: ids, where they are, and the one writer (`iota list sessions` is
iota.sessions.listing).

A bundle is a directory holding `meta.json` or `messages.jsonl` (an empty directory is not a
bundle; one whose meta.json was lost is, and gets it rebuilt, see iota.sessions.meta):

    ~/.iota/sessions/<id>/                     chat-mode and bot sessions
    ~/.iota/sessions/projects/<slug>/<id>/     agent-mode sessions, one bucket per project
        meta.json        who and what: model, title, counts (pretty JSON, replaced atomically)
        messages.jsonl   the conversation, append-only (see iota.sessions.log)
        attachments/     the files messages carry, one per content hash (iota.attachments)
        queue.json       what the person typed that is not in the log yet (iota.sessions.queue)
        .lock            held by the one process writing the bundle; holds its pid

A `Session` is one process's handle on a bundle it writes. `Session.new` mints an id and
touches nothing until the first append (a chat that is never used leaves no trace);
`Session.create` writes the bundle at once (a bot publishes its pointer only after its bundle
exists); `Session.open` resumes one: it cuts a torn tail, loads the view, closes a turn the
last process did not live to finish (appending the records that close it) and recounts the
messages. Writing always happens under the bundle's `.lock`.

Everything here is blocking file I/O (a durable append ends in fsync). The chat calls it from a
worker thread, shielded from cancellation, so a record is never torn by Ctrl+C.
"""

from __future__ import annotations

import os
import secrets
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from iota import attachments
from iota.sessions import locking
from iota.errors import MetaNotSaved, SessionError, SessionNotFound
from iota.messages import (ASSISTANT, COMPACTION, PARTIAL, REWIND, SYSTEM, TOOL, TOOL_STARTED, TURN_END, USER,
                           Message)
from iota.sessions.listing import bucket_dirs, is_bundle
from iota.sessions.log import (
    INTERRUPTED_RESULT,
    LOG_NAME,
    TAIL_BYTES,
    LogIndex,
    SessionView,
    cut_torn_tail,
    encode_record,
    load_log,
    repair_tail,
)
from iota.sessions.offsets import INDEX_NAME, KINDS, Index, OffsetsFile
from iota.sessions.meta import (
    META_NAME,
    now_stamp,
    parse_stamp,
    read_meta,
    read_or_rebuild_meta,
    render_meta,
    write_all,
    write_atomically,
)

# The session log's and meta's public names are re-exported, so callers need only `iota.sessions.bundle`.
__all__ = [
    "INTERRUPTED_RESULT", "META_NAME", "Session", "SessionView", "delete_session", "new_session_id", "now_stamp",
    "parse_stamp", "read_meta", "render_meta", "repair_tail", "write_atomically",
]

LOCK_NAME = ".lock"
# Crockford's base32, lower case: no i, l or o (they read as digits), no u (no accidental words).
ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
ID_LENGTH = 12
TURN_ID_LENGTH = 8
# Where meta.json kept the loader's start before messages.idx did; dropped when it is next written.
_OLD_INDEX_KEY = "view_index"
MESSAGE_ROLES = frozenset({SYSTEM, USER, ASSISTANT, TOOL})
# The records stamped with the time they were written (`at`): the end of each turn, which dates
# every record of the turn, and the compactions and rewinds between turns. (The records of the
# conversation itself stay as the Rust iota writes them.)
STAMPED_ROLES = frozenset({COMPACTION, TURN_END, REWIND})


# -- ids ---------------------------------------------------------------------------------------------


def new_session_id() -> str:
    """A random id that no bundle, flat or in any project bucket, already uses."""
    buckets = bucket_dirs()
    while True:
        candidate = _random_id()
        if not any(os.path.lexists(bucket / candidate) for bucket in buckets):
            return candidate


def _random_id(length: int = ID_LENGTH) -> str:
    return "".join(secrets.choice(ID_ALPHABET) for _ in range(length))


def new_turn_id() -> str:
    """A short id for the records of one turn; unique enough within one log."""
    return _random_id(TURN_ID_LENGTH)


# -- the writer --------------------------------------------------------------------------------------


class Session:
    """One process's handle on a bundle: its meta, its log and, once on disk, its lock."""

    # True while meta.json lags the log (a write of it failed); the next append writes it.
    meta_pending = False

    def __init__(self, bundle: Path, meta: dict[str, Any], view: SessionView, index: LogIndex):
        self.dir = bundle
        self.id = bundle.name
        self.meta = meta
        # The live view as loaded when the session was opened; the chat keeps its own copy after.
        self.view = view
        self._index = index
        self._offsets = OffsetsFile(bundle / INDEX_NAME)
        self._lock: locking.HeldLock | None = None
        self._log_fd: int | None = None
        self._closed = False
        # Records of one turn can come from several threads at once (tool calls run side by
        # side); one batch at a time keeps the index's offsets in log order.
        self._writing = threading.Lock()

    @classmethod
    def new(cls, bucket: Path, *, provider: str, model: str, **fields: Any) -> Session:
        """A session with a fresh id in `bucket`, written to disk by its first append."""
        stamp = now_stamp()
        bundle = bucket / new_session_id()
        meta = {"v": 1, "id": bundle.name, "created_at": stamp, "updated_at": stamp,
                "provider": provider, "model": model, **fields, "message_count": 0}
        return cls(bundle, meta, SessionView(), LogIndex())

    @classmethod
    def create(cls, bucket: Path, *, provider: str, model: str, **fields: Any) -> Session:
        """Like `new`, but the bundle (dir, lock, empty log, meta.json) is on disk on return."""
        session = cls.new(bucket, provider=provider, model=model, **fields)
        session._materialize()
        return session

    @classmethod
    def open(cls, bundle: Path) -> Session:
        """Resume a bundle for writing: lock it, rebuild a lost meta.json, cut a torn log tail,
        load the view, close a turn the last process did not finish, recount the messages.

        Warnings (a rebuilt meta.json, a cut tail, skipped lines, repairs) are in
        `session.view.warnings` for the caller to show. A repair that cannot be saved (a full
        disk) still holds in the view, with a warning; it is tried again at the next open.
        """
        log = bundle / LOG_NAME
        if not is_bundle(bundle):
            raise SessionNotFound(f"session {bundle.name} not found")
        lock = lock_bundle(bundle)
        try:
            meta, rebuilt = read_or_rebuild_meta(bundle)
            cut = cut_torn_tail(log) if log.exists() else None
            view, index = load_log(log, TAIL_BYTES)
            view.messages = attachments.bind(view.messages, bundle)
            view.warnings[:0] = [warning for warning in (rebuilt, cut) if warning]
            meta.pop(_OLD_INDEX_KEY, None)
            session = cls(bundle, meta, view, index)
            session._lock = lock
            session._save_offsets(index)
            session._log_fd = _open_log(log)
        except OSError as exc:
            lock.release()
            raise SessionError(f"failed to open session {bundle.name}: {exc.strerror}") from exc
        except BaseException:
            lock.release()
            raise
        session._settle(rebuilt=rebuilt is not None)
        return session

    def _settle(self, *, rebuilt: bool) -> None:
        """Save what opening found: the records closing an unfinished turn, a rebuilt meta.json.
        The true count is kept in memory either way and lands with the next write. `updated_at`
        is left as it was: a repair is not activity (the bot's away notice measures from it)."""
        self.meta["message_count"] = self.view.message_count
        try:
            if self.view.closing:
                self.append(self.view.closing, meta=False)
            if self.view.closing or rebuilt:
                self._write_meta()
        except SessionError as error:
            self.view.warnings.append(f"{error}; the repair holds for this run and is tried again at the next open")

    @property
    def on_disk(self) -> bool:
        return self._log_fd is not None

    def ensure_on_disk(self) -> None:
        """Write a new session's bundle now (before its first append), for a file kept beside its
        log (iota.sessions.queue)."""
        with self._writing:
            if self._closed:
                raise SessionError(f"session {self.id} was closed; nothing more can be saved to it")
            if self._log_fd is None:
                self._materialize()

    @property
    def conversation_count(self) -> int:
        """Conversation messages written so far; a compaction's `compacted_through` is counted against it."""
        return self._index.conversation_count

    def append(self, messages: Sequence[Message], *, durable: bool = True, meta: bool = True) -> None:
        """Write a batch: every line, then (`durable`) one fsync, then (`meta`) one meta.json
        rewrite. All of it or none of it.

        A record the person may rely on is written durably; streamed text and the bookkeeping
        inside a turn need not be (a killed process loses nothing written). meta.json is
        rewritten at the end of a turn rather than after each of its records: its count is
        recounted from the log at every open. A batch that fails part way is cut back off the
        log and raised as `SessionError` naming what was not written.
        """
        with self._writing:
            self._append(messages, durable=durable, meta=meta)

    def _append(self, messages: Sequence[Message], *, durable: bool, meta: bool) -> None:
        if self._closed:
            raise SessionError(f"session {self.id} was closed; nothing more can be saved to it")
        if not messages:
            return
        stamp = now_stamp()
        lines = [encode_record(message, stamp if message.role in STAMPED_ROLES else "") for message in messages]
        if self._log_fd is None:
            self._materialize()
        fd = self._log_fd
        assert fd is not None
        try:  # the files a record refers to are on disk before it is
            attachments.store(self.dir, [a for message in messages for a in message.attachments])
        except OSError as exc:
            raise SessionError(f"failed to save session {self.id}: {describe(messages)} not written: its attachment "
                               f"could not be stored: {exc.strerror}") from exc
        start = os.fstat(fd).st_size
        try:
            for line in lines:
                write_all(fd, line)
            if durable:
                os.fsync(fd)
        except BaseException as exc:
            try:
                os.ftruncate(fd, start)
            except OSError:
                pass  # the first error is the one to report; a torn last line is cut on the next open
            if isinstance(exc, OSError):
                raise SessionError(f"failed to save session {self.id}: {describe(messages)} not written to "
                                   f"{LOG_NAME}: {exc.strerror}") from exc
            raise
        offset, written = start, []
        for message, line in zip(messages, lines):
            self._index.note(offset, message.role, message.compacted_through)
            if message.role in KINDS:
                written.append((offset, KINDS[message.role], line))
            offset += len(line)
        self._offsets.append(written)
        count = self.meta.get("message_count")
        self.meta["message_count"] = (count if type(count) is int else 0) + sum(
            message.role in MESSAGE_ROLES for message in messages)
        if meta or self.meta_pending:
            self.meta["updated_at"] = now_stamp()
            try:
                self._write_meta()
            except SessionError as error:
                # The records are in the log, which is the truth; meta.json only sums it up (its
                # count is recounted at every open). It is written again with the next batch.
                self.meta_pending = True
                raise MetaNotSaved(str(error)) from error.__cause__
            self.meta_pending = False

    def rewind_points(self) -> list[tuple[int, str]]:
        """The person's messages in the conversation as the log now holds it, (offset, text),
        oldest first: where `rewind` can go back to."""
        try:
            view, _ = load_log(self.dir / LOG_NAME, TAIL_BYTES)
        except OSError as exc:
            raise SessionError(f"failed to read session {self.id}: {exc.strerror}") from exc
        return view.rewind_points

    def rewind(self, target: int, text: str = "") -> SessionView:
        """Undo the conversation from the person's message at byte `target` on: a `rewind`
        record is appended (nothing is deleted), and the view is loaded again from the log, as
        it stood just before that message. `text` (the message) is kept in the record for a
        person reading the log. Returns the new view, also in `self.view`."""
        if target not in {offset for offset, _ in self.rewind_points()}:
            raise SessionError(f"session {self.id}: there is no message of yours at byte {target} to rewind to")
        with self._writing:
            self._append([Message(REWIND, content=text, rewound_to=target)], durable=True, meta=False)
            try:
                view, index = load_log(self.dir / LOG_NAME, TAIL_BYTES)
                view.messages = attachments.bind(view.messages, self.dir)
            except OSError as exc:
                raise SessionError(f"failed to read session {self.id} after the rewind: {exc.strerror}") from exc
            self._index = index
            self._save_offsets(index)
            self.meta["message_count"] = view.message_count
            self.meta["updated_at"] = now_stamp()
            self._write_meta()
        self.view = view
        return view

    def update_meta(self, *, touch: bool = True, **changes: Any) -> None:
        """Set meta fields; meta.json changes only if a value really changed. `touch` moves
        `updated_at` too: what the conversation did, not how it is labelled or filed (a title,
        a place in the tree, archiving), which would reorder the newest-first lists."""
        with self._writing:  # the title pass sets the title from a thread of its own
            changed = {key: value for key, value in changes.items() if self.meta.get(key) != value}
            if not changed:
                return
            self.meta.update(changed)
            if touch:
                self.meta["updated_at"] = now_stamp()
            if self.on_disk:
                self._write_meta()

    def write_pending_meta(self) -> None:
        """Write meta.json if a write of it failed since the last that succeeded (SessionError if
        it fails again)."""
        with self._writing:
            if self.meta_pending and self.on_disk:
                self._write_meta()
                self.meta_pending = False

    def close(self) -> None:
        """Release the bundle to other processes. Safe to call twice."""
        self._closed = True
        self._release()

    def _release(self) -> None:
        self._offsets.close()
        if self._log_fd is not None:
            os.close(self._log_fd)
            self._log_fd = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _materialize(self) -> None:
        try:
            self.dir.parent.mkdir(parents=True, exist_ok=True)
            self.dir.mkdir()
        except OSError as exc:
            raise SessionError(f"failed to create session: {self.dir}: {exc.strerror}") from exc
        self._lock = lock_bundle(self.dir)
        try:
            self._log_fd = _open_log(self.dir / LOG_NAME)
            self._offsets.save(Index(rebuilt=True))
            self._write_meta()
        except BaseException:
            self._release()
            raise

    def _save_offsets(self, index: LogIndex) -> None:
        """Bring messages.idx up to what the load found (a cache: a failure only costs the next
        open a read of the whole log)."""
        self._offsets.save(index.found)

    def _write_meta(self) -> None:
        try:
            write_atomically(self.dir / META_NAME, render_meta(self.meta))
        except OSError as exc:
            raise SessionError(f"failed to save session {self.id}: {META_NAME} not updated: {exc.strerror} "
                               f"(the messages are in {LOG_NAME})") from exc


def delete_session(bundle: Path) -> None:
    """Delete a bundle for good, refusing one that another process has open (its lock is taken
    first, so nobody can open it while it goes)."""
    held = lock_bundle(bundle)
    try:
        shutil.rmtree(bundle)
    except OSError as error:
        raise SessionError(f"cannot delete session {bundle.name}: {error.strerror or error}") from None
    finally:
        held.release()


def describe(messages: Sequence[Message]) -> str:
    """What a batch holds, in words, for an error that says what was not written."""
    names = []
    for message in messages:
        if message.role == USER:
            name = "a notice" if message.notice else "your message"
        elif message.role == ASSISTANT:
            name = "the reply" if not message.tool_calls else f"the reply asking for {message.tool_calls[0].name}"
        elif message.role == TOOL:
            name = f"the result of {message.tool_call_name or 'a tool call'}"
        else:
            name = {SYSTEM: "the system prompt", COMPACTION: "the compaction", PARTIAL: "the streamed reply text",
                    TOOL_STARTED: "the start of a tool call", TURN_END: "the end of the turn",
                    REWIND: "the rewind"}.get(
                        message.role, f"a {message.role} record")
        if name not in names:
            names.append(name)
    return ", ".join(names)


def lock_bundle(bundle: Path, consequence: str = "") -> locking.HeldLock:
    """Take a bundle's lock, or raise SessionLocked naming the pid that holds it (and, given a
    `consequence`, what that prevents: `…; cannot archive it from here`)."""
    def refused(pid: int | None) -> str:
        holder = f" (pid {pid})" if pid is not None else ""
        tail = f"; {consequence}" if consequence else ""
        return f"session {bundle.name} is open in another iota process{holder}{tail}"

    return locking.acquire(bundle / LOCK_NAME, refused)


def _open_log(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
