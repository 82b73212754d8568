"""Searching session logs through their index (iota.sessions.index): what a query means, the
hits with their snippets, and rereading a stretch of a log.

    found = search(index, "flaky seed", limit=10)            # best first (BM25)
    found = search(index, "flaky seed", limit=20, newest_first=True, since=epoch, agent="coder")
    for hit in found.hits: hit.session, hit.position, hit.when(), hit.snippet

A query is words, and "quoted phrases"; it never reaches SQLite as syntax, so nothing a person or
a model types can make it fail or mean something else. Every word must be found (stemmed: "compact"
finds "compaction"); when no record has them all, the records with any of them are given instead,
and `Found.any_word` says so. Undone records (see /rewind) are left out unless asked for.

Snippets are cut from the log itself — the index keeps no text —, by FTS5's own `snippet()` over
a small in-memory table of the hits, so the words it marks are the ones that matched.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from iota.sessions.index import LogRecord, SearchIndex, record_text
from iota.sessions.lines import LINE_CAP, decode_record, read_lines

# The most terms a query keeps, and how many tokens a snippet shows.
MAX_TERMS = 32
SNIPPET_TOKENS = 24
# A query matching more records than this is ranked among its latest matches this many: BM25 over
# each of tens of thousands takes longer than a search may (benchmarks/bench_journal.py). When
# the filters leave too few of them, every match is ranked after all.
CANDIDATES = 2000
_TERM = re.compile(r'"([^"]+)"|(\w+)')


def match_expression(text: str, *, any_word: bool = False) -> str | None:
    """`text` as an FTS5 expression: its words and "phrases", each quoted, all required (or any,
    with `any_word`). None when it has no word to look for."""
    quoted = match_terms(text)
    return (" OR " if any_word else " ").join(quoted) if quoted else None


def match_terms(text: str) -> list[str]:
    """The words and "phrases" of `text`, each quoted as an FTS5 expression of its own (at most
    MAX_TERMS, each once whatever its case)."""
    terms = []
    for phrase, word in _TERM.findall(text):
        term = " ".join(re.findall(r"\w+", phrase)) if phrase else word
        if term and term.lower() not in (t.lower() for t in terms):
            terms.append(term)
    return [f'"{term}"' for term in terms[:MAX_TERMS]]


@dataclass
class Hit:
    session: str
    agent: str
    path: Path
    position: int      # the record's line number in messages.jsonl, from 1
    offset: int
    kind: str          # user | notice | reply | tool | summary (a journal adds "journal")
    name: str          # the tool of a result
    at: int | None
    undone: bool
    score: float = 0.0
    snippet: str = ""

    def when(self) -> str:
        return format_time(self.at)


@dataclass
class Found:
    hits: list[Hit] = field(default_factory=list)
    more: bool = False       # there were more hits than `limit`
    any_word: bool = False   # no record had every word; these have some
    crowded: bool = False    # so many matched that only the latest `CANDIDATES` were ranked


def format_time(at: int | None) -> str:
    """`2026-10-02 14:03` in local time, or `date unknown`."""
    if at is None:
        return "date unknown"
    return datetime.fromtimestamp(at).astimezone().strftime("%Y-%m-%d %H:%M")


def search(index: SearchIndex, query: str, *, limit: int, include_undone: bool = False,
           newest_first: bool = False, since: int | None = None, agent: str | None = None,
           marks: tuple[str, str] = ("**", "**")) -> Found:
    """The records matching `query`, at most `limit`, best first (or newest first), each with a
    snippet whose matches are between `marks`."""
    found = Found()
    for any_word in (False, True):
        expression = match_expression(query, any_word=any_word)
        if expression is None:
            return found
        rows, crowded = index.query(lambda db: _matching(db, expression, limit + 1, include_undone, newest_first,
                                                         since, agent))
        if rows or any_word or " " not in expression:
            break
    hits = [Hit(session, agent_, Path(path), position, offset, kind, name, at, bool(undone), score)
            for session, agent_, path, position, offset, kind, name, at, undone, score in rows]
    found.hits, found.any_word, found.crowded = hits[:limit], any_word, crowded
    found.more = len(hits) > limit or crowded
    texts = [_text_at(hit.path, hit.offset) for hit in found.hits]
    for hit, snippet in zip(found.hits, snippets(index, expression, texts, marks)):
        hit.snippet = snippet
    return found


def _matching(db: sqlite3.Connection, expression: str, limit: int, include_undone: bool, newest_first: bool,
              since: int | None, agent: str | None) -> tuple[list[tuple], bool]:
    """(the matching rows, whether only the latest CANDIDATES matches were ranked)."""
    where, values = ["1"], []
    if not include_undone:
        where.append("r.undone = 0")
    if since is not None:
        where.append("r.at >= ?")
        values.append(since)
    if agent is not None:
        where.append("l.agent = ?")
        values.append(agent)
    order = "r.at DESC, r.id DESC" if newest_first else "c.score"

    def rows(candidates: str) -> list[tuple]:
        return db.execute(
            f"WITH c (id, score) AS ({candidates}) SELECT l.session, l.agent, l.path, r.position, r.offset, r.kind, "
            "r.name, r.at, r.undone, c.score FROM c JOIN records r ON r.id = c.id JOIN logs l ON l.id = r.log "
            f"WHERE {' AND '.join(where)} ORDER BY {order} LIMIT ?", (expression, *values, limit)).fetchall()

    matches = "SELECT rowid, bm25(record_words) FROM record_words WHERE record_words MATCH ?"
    latest = f"{matches} ORDER BY rowid DESC LIMIT {CANDIDATES}"
    crowded = db.execute(f"SELECT count(*) FROM (SELECT rowid FROM record_words WHERE record_words MATCH ? "
                         f"ORDER BY rowid DESC LIMIT {CANDIDATES + 1})", (expression,)).fetchone()[0] > CANDIDATES
    found = rows(latest if crowded else matches)
    if crowded and len(found) < limit:
        return rows(matches), False
    return found, crowded


def snippets(index: SearchIndex, expression: str, texts: list[str], marks: tuple[str, str]) -> list[str]:
    """For each text, the stretch around what `expression` matches in it, the matches marked."""
    if not texts:
        return []
    # A text that holds the marks already (a reply's Markdown `**bold**`) would mark its words
    # twice (`****tabs****`) and show marks where nothing matched: they go before cutting.
    texts = [text.replace(marks[0], "").replace(marks[1], "") for text in texts]

    def cut(db: sqlite3.Connection) -> dict[int, str]:
        db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.hit_text USING fts5 (text, tokenize='porter unicode61')")
        db.execute("DELETE FROM temp.hit_text")
        db.executemany("INSERT INTO temp.hit_text (rowid, text) VALUES (?, ?)", enumerate(texts))
        rows = db.execute("SELECT rowid, snippet(hit_text, 0, ?, ?, '…', ?) FROM temp.hit_text WHERE hit_text MATCH ?",
                          (*marks, SNIPPET_TOKENS, expression)).fetchall()
        db.execute("DELETE FROM temp.hit_text")
        return dict(rows)

    cuts = index.query(cut)
    return [" ".join(cuts.get(i, text[:200]).split()) for i, text in enumerate(texts)]


def _text_at(path: Path, offset: int) -> str:
    """The indexed text of the record at `offset` ("" if the log no longer has it there)."""
    record = read_record(path, offset)
    found = record_text(record) if record is not None else None
    return found[2] if found is not None else ""


def read_record(path: Path, offset: int) -> dict | None:
    try:
        with open(path, "rb") as log:
            log.seek(offset)
            return decode_record(log.readline(LINE_CAP))
    except OSError:
        return None


def records_from(path: Path, offset: int, position: int) -> Iterator[LogRecord]:
    """The records of a log from byte `offset`, where line number `position` starts, to its end."""
    try:
        log = open(path, "rb")
    except OSError:
        return
    with log:
        for line_offset, line in read_lines(log, offset):
            record = decode_record(line) if line is not None and line.endswith(b"\n") else None
            if record is not None:
                yield LogRecord(position, line_offset, record)
            position += 1


def locate(index: SearchIndex, session: str, position: int) -> tuple[Path, int, int] | None:
    """Where to start reading `session`'s log to reach line `position`: (path, offset, the line
    number there), from the nearest indexed record at or before it. None for a session the
    index does not hold."""
    def find(db: sqlite3.Connection):
        log = db.execute("SELECT id, path FROM logs WHERE session = ?", (session,)).fetchone()
        if log is None:
            return None
        near = db.execute("SELECT offset, position FROM records WHERE log = ? AND position <= ? "
                          "ORDER BY position DESC LIMIT 1", (log[0], position)).fetchone()
        return (Path(log[1]), *near) if near else (Path(log[1]), 0, 1)

    return index.query(find)
