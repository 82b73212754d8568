"""Saving a bot's candidates and durables when an entry moves between the two files
(iota.bots.candidates.CandidateBook.save): a kill between the writes, or a full disk at the second,
loses no entry and doubles none, and the error says what was written."""

from __future__ import annotations

import errno

import pytest

import iota.bots.records
from iota.bots.candidates import CANDIDATE, DAY, DURABLE, CandidateBook, Entry, consolidate
from iota.errors import ToolError

NOW = 400 * DAY


class Killed(BaseException):
    """A kill -9 at this instant: nothing after it runs (not an Exception, so no handler takes it)."""


def book_holding(tmp_path, entries: list[Entry]) -> CandidateBook:
    book = CandidateBook(tmp_path)
    book.save(entries)
    return book


def stable() -> list[Entry]:
    """A candidate and a durable that no consolidation at NOW moves."""
    return [Entry("cstay", "Deploys go to staging first", CANDIDATE, created=NOW - DAY),
            Entry("dstay", "Uses tabs in Makefiles", DURABLE, created=NOW - DAY)]


def to_promote() -> Entry:
    return Entry("cpin", "Prefers pytest over unittest", CANDIDATE, pinned=True, created=NOW - DAY)


def to_demote() -> Entry:
    return Entry("dold", "Reviews on Fridays", DURABLE, created=NOW - 40 * DAY)


def writes_of_a_save(tmp_path, monkeypatch, moving: list[Entry]) -> int:
    """How many files one consolidating save writes (on a copy of the bot)."""
    book = book_holding(tmp_path / "count", stable() + moving)
    count = []
    real = iota.bots.records.write_atomically
    monkeypatch.setattr(iota.bots.records, "write_atomically", lambda *a: (count.append(1), real(*a))[1])
    entries = book.load()
    consolidate(entries, now=NOW, counting=True)
    book.save(entries)
    monkeypatch.undo()
    return len(count)


def killed_after(monkeypatch, writes: int) -> None:
    """Make the save die, as by kill -9, once `writes` files are written."""
    real, done = iota.bots.records.write_atomically, []

    def write(path, data):
        if len(done) == writes:
            raise Killed()
        real(path, data)
        done.append(path)

    monkeypatch.setattr(iota.bots.records, "write_atomically", write)


def ids_in_files(book: CandidateBook) -> tuple[list[str], list[str]]:
    fresh = CandidateBook(book.path.parent)
    entries = fresh.load()
    return ([entry.id for entry in entries if entry.state == CANDIDATE],
            [entry.id for entry in entries if entry.state == DURABLE])


@pytest.mark.parametrize("moving", [[to_promote()], [to_demote()], [to_promote(), to_demote()]],
                         ids=["promotion", "demotion", "both"])
def test_a_kill_between_the_writes_loses_no_entry_and_doubles_none(tmp_path, monkeypatch, moving):
    ids = {"cstay", "dstay"} | {entry.id for entry in moving}
    writes = writes_of_a_save(tmp_path, monkeypatch, [Entry(**vars(entry)) for entry in moving])
    assert writes >= 2
    for cut in range(1, writes):
        book = book_holding(tmp_path / f"cut{cut}", stable() + [Entry(**vars(entry)) for entry in moving])
        entries = book.load()
        done = consolidate(entries, now=NOW, counting=True)
        assert len(done) == len(moving)
        killed_after(monkeypatch, cut)
        with pytest.raises(Killed):
            book.save(entries)
        monkeypatch.undo()

        candidates, durables = ids_in_files(book)
        assert sorted(candidates + durables) == sorted(ids), f"killed after {cut} of {writes} writes"

        # The next save (the next upkeep's) leaves each entry in one file alone.
        survivor = CandidateBook(book.path.parent)
        survivor.save(survivor.load())
        on_disk = [line for path in (book.path, book.durables_path) for line in path.read_text().splitlines()]
        assert len(on_disk) == len(ids)


def test_a_full_disk_at_the_second_write_says_what_was_written_and_counts_the_entry_once(tmp_path, monkeypatch):
    book = book_holding(tmp_path, stable() + [to_promote()])
    before = book.path.read_bytes(), book.durables_path.read_bytes()
    entries = book.load()
    consolidate(entries, now=NOW, counting=True)

    real, done = iota.bots.records.write_atomically, []

    def write_until_full(path, data):
        if len(done) == full_after:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data)
        done.append(path)

    monkeypatch.setattr(iota.bots.records, "write_atomically", write_until_full)
    full_after = 0   # the first write fails: nothing has changed, and the error says so
    with pytest.raises(ToolError, match="nothing was changed"):
        book.save(entries)
    assert (book.path.read_bytes(), book.durables_path.read_bytes()) == before

    full_after = 1
    with pytest.raises(ToolError) as failed:
        book.save(entries)
    message = str(failed.value)
    assert "nothing was changed" not in message
    assert "No space left on device" in message and "durables.jsonl was written already" in message
    monkeypatch.undo()
    candidates, durables = ids_in_files(book)
    assert sorted(candidates) == ["cstay"] and sorted(durables) == ["cpin", "dstay"]
