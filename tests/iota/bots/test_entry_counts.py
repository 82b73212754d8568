"""The journal's kept counts of the entries holding a word (iota.bots.entry_counts): brought up
by the entries added since the last count, and the same as counting afresh after any mix of
additions and deletions (rewinds, the trim of the oldest, the newest undone). What they are for,
`Journal.related`, is tested in test_journal.py."""

from __future__ import annotations

import random
import sqlite3

from iota.bots.entry_counts import KEEP_TERMS, EntryCounts
from iota.bots.journal import ENTRY_SCHEMA, _delete_entries as delete_entries

WORDS = ["alpha", "beta", "gamma", "delta", "the", "parser", "flaky", "seed"]
TERMS = [f'"{word}"' for word in WORDS] + ['"flaky seed"', '"absent"']


def journal_db() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.executescript(ENTRY_SCHEMA)
    return db


def add_entry(db: sqlite3.Connection, words: str) -> None:
    row = db.execute("INSERT INTO entries (log, turn, position, offset, outcome, asked, did, calls, failed, answer, "
                     "files) VALUES (1, 't', 0, 0, 'finished', ?, '', 0, 0, '', '')", (words,)).lastrowid
    db.execute("INSERT INTO entry_words (rowid, text) VALUES (?, ?)", (row, words))


def recount(db: sqlite3.Connection, terms: list[str]) -> tuple[int, dict[str, int]]:
    total = db.execute("SELECT count(*) FROM entries").fetchone()[0]
    return total, {term: db.execute("SELECT count(*) FROM entry_words WHERE entry_words MATCH ?", (term,)).fetchone()[0]
                   for term in terms}


def test_kept_counts_equal_a_recount_through_additions_and_deletions():
    chance = random.Random(32)
    db, counts = journal_db(), EntryCounts()
    deletions = 0
    for step in range(400):
        for _ in range(chance.randint(0, 3)):
            add_entry(db, " ".join(chance.sample(WORDS, chance.randint(1, 4))))
        ids = [row[0] for row in db.execute("SELECT id FROM entries ORDER BY id")]
        if ids and step % 7 == 3:      # the trim: the oldest go
            delete_entries(db, "id < ?", (ids[min(len(ids) - 1, chance.randint(1, 3))],))
        elif ids and step % 11 == 5:   # a rewind: a stretch in the middle, or the newest
            first = chance.choice(ids)
            delete_entries(db, "id >= ? AND id < ?", (first, first + chance.randint(1, 4)))
        deletions += step % 7 == 3 or step % 11 == 5
        asked = chance.sample(TERMS, chance.randint(1, 5))
        assert counts.count(db, asked) == recount(db, asked), f"step {step}"
    assert deletions > 50


def test_counts_are_kept_for_the_latest_words_asked_about_only():
    db, counts = journal_db(), EntryCounts()
    add_entry(db, "the parser")
    for n in range(KEEP_TERMS + 5):
        counts.count(db, [f'"word{n}"'])
    assert len(counts.held) == KEEP_TERMS and '"word0"' not in counts.held
    assert counts.count(db, ['"parser"', '"word0"']) == (1, {'"parser"': 1, '"word0"': 0})
