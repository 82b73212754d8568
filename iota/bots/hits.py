"""When a later message of the person's is about a candidate (or a line of MEMORY.md): a hit.

The match is made in the bot's journal index (iota.bots.journal, iota.sessions.index) — the
full-text index `recall` searches, with its porter stemmer — over the records of the person's
own messages (kind `user`: not notices, not what iota writes for the model, not undone by a
rewind). Each entry is looked for in the messages after its mark (`Entry.since`, a byte offset
in the session log) up to what the index holds now, and its mark then moves there, so a message
counts once.

What "about it" means: the entry's key words — the ones the model gave with it, else the words
of its text that make its claim (iota.memory.provenance.content_words) — of which a message must
have all when there are one or two, else any two. "Prefers pytest over unittest" (pytest,
unittest) is hit by "run it with pytest, not unittest"; "Deploys go to staging first, then
production" by "deploy to staging" — and not by every message that says "first".
"""

from __future__ import annotations

import re
from itertools import combinations

from iota.bots.candidates import KEYWORDS_CAP, Entry, Mark
from iota.bots.journal import Journal
from iota.memory.provenance import content_words


def keys_of(entry: Entry) -> list[str]:
    """The words a message about `entry` says: its keywords, else its content words."""
    given = [" ".join(re.findall(r"\w+", keyword)) for keyword in entry.keywords]
    keys = [key for key in given if key] or content_words(entry.text)
    return list(dict.fromkeys(key.casefold() for key in keys))[:KEYWORDS_CAP]


def about_expression(keys: list[str]) -> str | None:
    """The FTS5 expression of a message about an entry with `keys`: all of one or two, else any
    two of them. Every key is quoted (a phrase of words), so nothing in it is read as syntax."""
    quoted = [f'"{key}"' for key in keys if key]
    if not quoted:
        return None
    if len(quoted) <= 2:
        return " ".join(quoted)
    return " OR ".join(f"({first} {second})" for first, second in combinations(quoted, 2))


def count_hits(journal: Journal, session: str, entries: list[Entry], now: int) -> Mark:
    """Add to each entry the hits among the person's messages in `session` after its mark, and move
    every mark to what the index holds now; returns that place (the high-water). An entry marked in
    another session counts from the start of this one: all of it came later."""
    high = Mark(session, _indexed_through(journal, session))
    for entry in entries:
        start = entry.since.offset if entry.since is not None and entry.since.session == session else 0
        if entry.since is None:
            start = high.offset  # never marked (written by hand): counts from now on
        expression = about_expression(keys_of(entry))
        if expression is not None and start < high.offset:
            times = journal.reader.query(lambda db: [row[0] for row in db.execute(
                "SELECT r.at FROM record_words w JOIN records r ON r.id = w.rowid JOIN logs l ON l.id = r.log "
                "WHERE record_words MATCH ? AND r.kind = 'user' AND r.undone = 0 AND l.session = ? "
                "AND r.offset >= ? AND r.offset < ?", (expression, session, start, high.offset))])
            if times:
                entry.hits += len(times)
                latest = max(at if at is not None else now for at in times)
                entry.last_hit = max(entry.last_hit or 0, min(latest, now))
        entry.since = high
    return high


def _indexed_through(journal: Journal, session: str) -> int:
    """The byte offset of `session`'s log up to which the index has read (0: none of it)."""
    row = journal.reader.query(lambda db: db.execute("SELECT offset FROM logs WHERE session = ?",
                                                     (session,)).fetchone())
    return row[0] if row else 0
