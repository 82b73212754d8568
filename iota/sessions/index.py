"""The search index of session logs: derived data in SQLite, caught up from the logs, rebuilt at will.

    index = SearchIndex(path)                              # created (WAL mode) when missing
    index.catch_up([LogSource(session_id, log_path)], listener)
    ... iota.sessions.search reads it ...
    index.close()

`messages.jsonl` stays the source of truth. The index holds, for each record worth finding (the
person's messages, notices, replies with their tool calls, tool results, compaction summaries),
where it is — session, line number (its *position*, from 1), byte offset —, when it was written,
and its words in an FTS5 table (BM25 ranking, the porter stemmer). The text itself is not
stored twice: the FTS table is contentless, and a hit's snippet is cut from the line in the log.

Catching up reads each log from where the last catch-up stopped, a turn at a time: the records
carrying a turn's id are held until its `turn_end`, then indexed together and dated by its
stamp (records outside a turn take the last stamp before them, or the session's creation).
What a turn still in progress wrote is left for the next catch-up, so a `listener` (the bot's
journal) is handed whole turns only — the same turns, in the same order, whether the index is
caught up after every turn or rebuilt from nothing. A `rewind` record marks the records it
undoes (they stay findable on request) and is passed to the listener.

A log that changed under the index (shorter than what was read, or a different line where the
last one read was) is read again from its start; its old rows are dropped. The FTS rows of
dropped records cannot be deleted from a contentless table (SQLite ≥ 3.43 could), so they are
left, unreachable, and counted; once they outnumber the live ones, the whole file is rebuilt. So
is a file of another schema version or one SQLite cannot read. One process writes an index at a
time (the bot's process for a bot's; `iota search` for the rest); readers may come and go (WAL).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from iota.errors import SearchError, SessionError
from iota.messages import ASSISTANT, COMPACTION, REWIND, TOOL, TURN_END, USER
from iota.sessions.log import LINE_CAP, LOG_NAME, decode_record, read_lines
from iota.sessions.meta import parse_stamp, read_meta

SCHEMA_VERSION = 1
# How much of one record is indexed; a tool result is capped well below it already.
INDEXED_CHARS = 64 * 1024
ARGUMENTS_CHARS = 2000
# Records indexed between commits (each commit lands at a turn boundary), and the page cache a
# catch-up works with.
COMMIT_EVERY = 2000
CATCH_UP_CACHE_KIB = 64 * 1024

SCHEMA = """
CREATE TABLE IF NOT EXISTS info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS logs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL,
    agent TEXT NOT NULL DEFAULT '',
    offset INTEGER NOT NULL DEFAULT 0,      -- bytes read, up to a turn boundary
    position INTEGER NOT NULL DEFAULT 0,    -- lines read
    tail_offset INTEGER NOT NULL DEFAULT 0, -- where the last line read starts …
    tail_hash TEXT NOT NULL DEFAULT '',     -- … and its sha256, to notice a log replaced under us
    clock INTEGER,                          -- the last stamp read (epoch seconds)
    records INTEGER NOT NULL DEFAULT 0,
    first_at INTEGER,
    last_at INTEGER
);
CREATE TABLE IF NOT EXISTS records (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    log INTEGER NOT NULL,
    position INTEGER NOT NULL,
    offset INTEGER NOT NULL,
    kind TEXT NOT NULL,            -- user | notice | reply | tool | summary
    name TEXT NOT NULL DEFAULT '', -- the tool a result is of
    at INTEGER,
    undone INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS records_by_place ON records (log, offset);
CREATE VIRTUAL TABLE IF NOT EXISTS record_words USING fts5 (text, content='', tokenize='porter unicode61');
"""


@dataclass(frozen=True)
class LogSource:
    """A session log to index: its id, its file, whose it is, and when it was created (epoch
    seconds; dates what comes before its first stamp)."""

    session: str
    path: Path
    agent: str = ""
    created: int | None = None


def log_source(bundle: Path, agent: str = "") -> LogSource:
    """A bundle as the index reads it: its log, whose it is, and when it was created."""
    try:
        meta = read_meta(bundle)
    except SessionError:
        meta = {}
    created = parse_stamp(meta["created_at"]) if isinstance(meta.get("created_at"), str) else None
    name = agent or (meta["agent"] if isinstance(meta.get("agent"), str) else "")
    return LogSource(bundle.name, bundle / LOG_NAME, name, int(created.timestamp()) if created else None)


@dataclass
class LogRecord:
    """One line of a log as the catch-up read it."""

    position: int
    offset: int
    record: dict[str, Any]

    @property
    def role(self) -> str:
        return self.record["role"]


@dataclass
class LoggedTurn:
    """A turn's records, in order: from its first record to its `turn_end` (None when the turn
    was cut short in the middle of the log)."""

    id: str
    records: list[LogRecord] = field(default_factory=list)
    end: LogRecord | None = None


class Listener(Protocol):
    """What derives more from the logs as they are read (a bot's journal); called inside the
    catch-up's transaction, on the index's connection."""

    def turn(self, db: sqlite3.Connection, log: int, session: str, turn: LoggedTurn, at: int | None) -> None: ...
    def rewind(self, db: sqlite3.Connection, log: int, target: int, end: int) -> None: ...
    def forget(self, db: sqlite3.Connection, log: int) -> None: ...


def record_text(record: dict[str, Any]) -> tuple[str, str, str] | None:
    """(kind, tool name, text) of what a record gives the index, or None for nothing."""
    role = record.get("role")
    content = record.get("content") if isinstance(record.get("content"), str) else ""
    if record.get("hidden") is True:
        # What iota wrote for the model alone (a schedule's trigger, the journal attached to a
        # message: indexing that would echo every entry back into the search) is not searched.
        return None
    if role == USER:
        if record.get("notice") is True:
            return ("notice", "", content[:INDEXED_CHARS]) if content else None
        return ("user", "", content[:INDEXED_CHARS]) if content else None
    if role == ASSISTANT:
        calls = [call for call in record.get("tool_calls") or [] if isinstance(call, dict)]
        parts = [content] + [f"{call.get('name', '')} "
                             f"{json.dumps(call.get('arguments'), ensure_ascii=False)[:ARGUMENTS_CHARS]}"
                             for call in calls]
        text = "\n".join(part for part in parts if part)
        return ("reply", "", text[:INDEXED_CHARS]) if text else None
    if role == TOOL:
        name = record.get("tool_call_name") if isinstance(record.get("tool_call_name"), str) else ""
        return ("tool", name, content[:INDEXED_CHARS]) if content else None
    if role == COMPACTION:
        return ("summary", "", content[:INDEXED_CHARS]) if content else None
    return None


def stamp_of(record: dict[str, Any]) -> int | None:
    """A record's `at`, as epoch seconds."""
    at = record.get("at")
    when = parse_stamp(at) if isinstance(at, str) else None
    return int(when.timestamp()) if when is not None else None


class SearchIndex:
    """One index file, through one connection (used by one thread at a time: a lock sees to it).
    WAL mode, so that readers of their own never wait for the writer.

    `extra_schema` is SQL for what a listener keeps in the same file (a bot's journal), and
    `version` its version: a file made with another is rebuilt. A `reader` (a process that is not
    the file's writer) changes nothing: a file that is missing or of another version is a
    SearchError to it."""

    def __init__(self, path: Path, *, extra_schema: str = "", version: int = 0, reader: bool = False,
                 busy_seconds: float = 10.0):
        self.path = path
        self._busy_seconds = busy_seconds
        self._lock = threading.Lock()
        self._schema = SCHEMA + extra_schema
        self._version = f"{SCHEMA_VERSION}.{version}"
        if reader:
            self.db = self._open_reader()
            return
        try:
            try:
                self.db = self._open()
            except sqlite3.OperationalError:
                raise  # locked by another process, a full disk: the file is fine, try later
            except sqlite3.DatabaseError:
                # Derived data that cannot be read is made again, from the logs.
                self._remove_files()
                self.db = self._open()
        except (sqlite3.Error, OSError) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else error
            raise SearchError(f"cannot open the search index {path}: {reason}") from None

    def _open(self) -> sqlite3.Connection:
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=self._busy_seconds)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            found = db.execute("SELECT name FROM sqlite_master WHERE name = 'info'").fetchone()
            version = db.execute("SELECT value FROM info WHERE key = 'version'").fetchone() if found else None
            if found and (version is None or version[0] != self._version or self._too_many_orphans(db)):
                db.close()
                self._remove_files()
                return self._open()
            db.executescript(self._schema)
            db.execute("INSERT OR IGNORE INTO info VALUES ('version', ?), ('orphans', '0')", (self._version,))
            return db
        except BaseException:
            db.close()
            raise

    def _open_reader(self) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(f"{Path(self.path).resolve().as_uri()}?mode=rw", uri=True, isolation_level=None,
                                 check_same_thread=False, timeout=self._busy_seconds)
        except sqlite3.Error:
            raise SearchError(f"{self.path} does not exist") from None
        try:
            version = db.execute("SELECT value FROM info WHERE key = 'version'").fetchone()
        except sqlite3.Error as error:
            db.close()
            raise SearchError(f"cannot read {self.path}: {error}") from None
        if version is None or version[0] != self._version:
            db.close()
            raise SearchError(f"{self.path} was written by another version of iota")
        return db

    @staticmethod
    def _too_many_orphans(db: sqlite3.Connection) -> bool:
        orphans = int(db.execute("SELECT value FROM info WHERE key = 'orphans'").fetchone()[0])
        live = db.execute("SELECT count(*) FROM records").fetchone()[0]
        return orphans > max(10_000, live)

    def _remove_files(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def close(self) -> None:
        with self._lock:
            self.db.close()

    def query(self, work: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run `work(db)` under the connection's lock; SQLite's and the files' failures become
        SearchError."""
        with self._lock:
            try:
                return work(self.db)
            except sqlite3.Error as error:
                raise SearchError(f"the search index {self.path} failed: {error}") from None
            except OSError as error:  # a log that went away while it was read
                raise SearchError(f"cannot read {error.filename}: {error.strerror}") from None

    # -- catching up ----------------------------------------------------------------------------

    def catch_up(self, sources: Sequence[LogSource], listener: Listener | None = None,
                 should_stop: Callable[[], bool] = lambda: False) -> int:
        """Read what each log gained since the last catch-up; return how many records were
        indexed. Stops early (having saved its place) when `should_stop()` says so."""
        indexed = 0
        # A large catch-up (a rebuild) merges the FTS segments over and over: with SQLite's small
        # default cache each merge reads its pages back from the file. The cache it needs is
        # given for the catch-up and handed back after it.
        self.query(lambda db: db.execute(f"PRAGMA cache_size = -{CATCH_UP_CACHE_KIB}"))
        try:
            for source in sources:
                if should_stop():
                    break
                indexed += self.query(lambda db: _LogReader(db, source, listener, should_stop).run())
        finally:
            self.query(lambda db: (db.execute("PRAGMA cache_size = -2000"), db.execute("PRAGMA shrink_memory")))
        return indexed

    def forget_others(self, sessions: set[str]) -> None:
        """Drop the logs of every session not in `sessions` (deleted, or now indexed elsewhere)."""
        def forget(db: sqlite3.Connection) -> None:
            gone = [(log, session) for log, session in db.execute("SELECT id, session FROM logs")
                    if session not in sessions]
            if gone:
                db.execute("BEGIN IMMEDIATE")
                for log, _ in gone:
                    _forget_log(db, log, None)
                    db.execute("DELETE FROM logs WHERE id = ?", (log,))
                db.execute("COMMIT")

        self.query(forget)


def _forget_log(db: sqlite3.Connection, log: int, listener: Listener | None) -> None:
    """Drop a log's records (their words stay behind, unreachable, and are counted)."""
    dropped = db.execute("DELETE FROM records WHERE log = ?", (log,)).rowcount
    db.execute("UPDATE info SET value = value + ? WHERE key = 'orphans'", (dropped,))
    if listener is not None:
        listener.forget(db, log)


class _LogReader:
    """One log's catch-up: turns held until they end, committed at turn boundaries."""

    def __init__(self, db: sqlite3.Connection, source: LogSource, listener: Listener | None,
                 should_stop: Callable[[], bool]):
        self.db = db
        self.source = source
        self.listener = listener
        self.should_stop = should_stop
        self.open_turn: LoggedTurn | None = None
        self.indexed = 0
        # Records indexed since the last save, and the first and last time among them.
        self.added: list[int | None] = []

    def run(self) -> int:
        try:
            log = open(self.source.path, "rb")
        except FileNotFoundError:
            return 0
        except OSError as error:
            raise SearchError(f"cannot read {self.source.path}: {error.strerror}") from None
        with log:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self._read(log)
                self.db.execute("COMMIT")
            except BaseException:
                # SQLite rolls back by itself after some failures (a full disk); a ROLLBACK then
                # would raise "no transaction is active" and hide the real error.
                if self.db.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self.db.execute("ROLLBACK")
                raise
        return self.indexed

    def _read(self, log) -> None:
        db, source = self.db, self.source
        db.execute("INSERT OR IGNORE INTO logs (session, path, agent) VALUES (?, ?, ?)",
                   (source.session, str(source.path), source.agent))
        db.execute("UPDATE logs SET path = ?, agent = ? WHERE session = ?", (str(source.path), source.agent,
                                                                             source.session))
        self.log, offset, position, tail_offset, tail_hash, clock = db.execute(
            "SELECT id, offset, position, tail_offset, tail_hash, clock FROM logs WHERE session = ?",
            (source.session,)).fetchone()
        if offset and not _same_prefix(log, offset, tail_offset, tail_hash):
            _forget_log(db, self.log, self.listener)
            offset = position = tail_offset = 0
            clock = None
        self.clock = clock if clock is not None else source.created
        # The place to save: after the last line read outside any turn.
        self.saved = (offset, position, tail_offset, self.clock)
        self.last_line = tail_offset
        since_commit = 0
        for line_offset, line in read_lines(log, offset):
            if line is not None and not line.endswith(b"\n"):
                break  # a record still being written
            position += 1
            record = decode_record(line) if line is not None else None
            if record is not None:
                self._take(LogRecord(position, line_offset, record))
                since_commit += 1
            if line is not None:
                self.last_line = line_offset
            if self.open_turn is None and line is not None:
                self.saved = (line_offset + len(line), position, line_offset, self.clock)
                if since_commit >= COMMIT_EVERY:
                    self._save()
                    self.db.execute("COMMIT")
                    if self.should_stop():
                        self.db.execute("BEGIN")  # run() commits the empty rest
                        return
                    self.db.execute("BEGIN IMMEDIATE")
                    since_commit = 0
        self._save()

    def _take(self, item: LogRecord) -> None:
        record, role = item.record, item.role
        turn_id = record.get("turn") if isinstance(record.get("turn"), str) else ""
        if self.open_turn is not None and turn_id != self.open_turn.id:
            # Cut short: a record of another turn, or of none, follows it. It ends where this starts.
            self._end_turn(None)
            self.saved = (item.offset, item.position - 1, self.last_line, self.clock)
        if role == REWIND:
            self.clock = stamp_of(record) or self.clock
            target = record.get("rewound_to")
            if type(target) is int and target < item.offset:
                self.db.execute("UPDATE records SET undone = 1 WHERE log = ? AND offset >= ? AND offset < ?",
                                (self.log, target, item.offset))
                if self.listener is not None:
                    self.listener.rewind(self.db, self.log, target, item.offset)
            return
        if not turn_id:
            if role == COMPACTION:
                self.clock = stamp_of(record) or self.clock
            self._index([item], self.clock)
            return
        if role == TURN_END:
            if self.open_turn is None:  # the end of a turn whose records are not here: only its time counts
                self.clock = stamp_of(record) or self.clock
            else:
                self._end_turn(item)
            return
        if self.open_turn is None:
            self.open_turn = LoggedTurn(turn_id)
        self.open_turn.records.append(item)

    def _end_turn(self, end: LogRecord | None) -> None:
        turn, self.open_turn = self.open_turn, None
        assert turn is not None
        turn.end = end
        if end is not None:
            self.clock = stamp_of(end.record) or self.clock
        self._index(turn.records, self.clock)
        if self.listener is not None:
            self.listener.turn(self.db, self.log, self.source.session, turn, self.clock)

    def _index(self, items: list[LogRecord], at: int | None) -> None:
        for item in items:
            found = record_text(item.record)
            if found is None:
                continue
            kind, name, text = found
            row = self.db.execute("INSERT INTO records (log, position, offset, kind, name, at) VALUES (?, ?, ?, ?, ?, ?)",
                                  (self.log, item.position, item.offset, kind, name, at)).lastrowid
            self.db.execute("INSERT INTO record_words (rowid, text) VALUES (?, ?)", (row, text))
            self.added.append(at)
            self.indexed += 1

    def _save(self) -> None:
        offset, position, tail_offset, clock = self.saved
        dated = [at for at in self.added if at is not None]
        self.db.execute("UPDATE logs SET records = records + ?, first_at = coalesce(first_at, ?), "
                        "last_at = coalesce(?, last_at) WHERE id = ?",
                        (len(self.added), min(dated, default=None), max(dated, default=None), self.log))
        self.added = []
        self.db.execute("UPDATE logs SET offset = ?, position = ?, tail_offset = ?, tail_hash = ?, clock = ? "
                        "WHERE id = ?", (offset, position, tail_offset,
                                         _line_hash(self.source.path, tail_offset) if offset else "", clock,
                                         self.log))


def _line_hash(path: Path, offset: int) -> str:
    with open(path, "rb") as f:
        f.seek(offset)
        return hashlib.sha256(f.readline(LINE_CAP)).hexdigest()[:16]


def _same_prefix(log, offset: int, tail_offset: int, tail_hash: str) -> bool:
    """Whether the log still holds, up to `offset`, what was read: it is that long, and the
    last line read is where it was, unchanged."""
    log.seek(tail_offset)
    line = log.readline(LINE_CAP)
    return tail_offset + len(line) == offset and hashlib.sha256(line).hexdigest()[:16] == tail_hash
