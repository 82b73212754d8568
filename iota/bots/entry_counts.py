"""How many of a journal's entries hold a word: counted once, then only over the entries added since.

    counts = EntryCounts()
    total, held = counts.count(db, ['"the"', '"parser"'])   # (entries, {term: entries holding it})

The journal asks before every message which of its words are in half the entries or more (those
BM25 gives no weight; see Journal.related). Counting the matches of "the" anew each time reads
every entry that has it, a little more with each turn of a long conversation; kept counts are
brought up by the entries whose ids lie past the last count. Entries are only ever added with
higher ids (AUTOINCREMENT) or deleted; when any entry counted before has gone (a rewind, the trim
to the latest KEEP_ENTRIES, a rebuilt file), the counts start again from nothing.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass, field


# The most words whose counts are kept (the least recently asked about go first).
KEEP_TERMS = 1000


@dataclass
class EntryCounts:
    oldest: int | None = None    # the lowest entry id at the last count
    through: int = 0             # the highest
    total: int = 0               # how many entries there were
    # term -> (the entries holding it, among those with ids up to this one), the latest asked last
    held: dict[str, tuple[int, int]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, db: sqlite3.Connection, terms: list[str]) -> tuple[int, dict[str, int]]:
        """(how many entries there are, how many hold each of `terms`), from one snapshot of
        `db` (a journal's reading connection, in autocommit mode)."""
        with self._lock:
            db.execute("BEGIN")
            try:
                return self._count(db, terms)
            finally:
                db.execute("COMMIT")

    def forget(self) -> None:
        """Count from nothing next time (the journal's file is opened again)."""
        with self._lock:
            self.oldest, self.through, self.total = None, 0, 0
            self.held.clear()

    def _count(self, db: sqlite3.Connection, terms: list[str]) -> tuple[int, dict[str, int]]:
        oldest, newest, total = db.execute("SELECT min(id), max(id), count(*) FROM entries").fetchone()
        newest = newest or 0
        # Ids are never reused: when the lowest is the same and the entries up to the last
        # count's highest are as many as then, they are the same entries.
        added = db.execute("SELECT count(*) FROM entries WHERE id > ?", (self.through,)).fetchone()[0]
        if oldest != self.oldest or total != self.total + added:
            self.held.clear()
        for term in terms:
            held, through = self.held.pop(term, (0, 0))
            if through < newest:
                held += _matches(db, term, through, newest)
            self.held[term] = (held, newest)
        while len(self.held) > KEEP_TERMS:
            del self.held[next(iter(self.held))]
        self.oldest, self.through, self.total = oldest, newest, total
        return total, {term: self.held[term][0] for term in terms}


def _matches(db: sqlite3.Connection, term: str, after: int, through: int) -> int:
    """The entries with ids in (after, through] whose words match `term`."""
    return db.execute("SELECT count(*) FROM entry_words WHERE entry_words MATCH ? AND rowid > ? AND rowid <= ?",
                      (term, after, through)).fetchone()[0]
