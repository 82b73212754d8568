"""A session's log read backwards a page at a time (iota.sessions.history.LogHistory)."""

from __future__ import annotations

import json

from iota.messages import Message
from iota.sessions import history
from iota.sessions.history import LogHistory


def write_log(path, records: list[dict], tail: bytes = b"") -> None:
    path.write_bytes(b"".join(json.dumps(record).encode() + b"\n" for record in records) + tail)


def test_pages_go_back_to_the_start_of_a_round_oldest_first(tmp_path):
    log = tmp_path / "messages.jsonl"
    records = []
    for n in range(5):
        records += [{"role": "user", "content": f"q{n}"}, {"role": "assistant", "content": f"a{n}"}]
    write_log(log, records)
    pages = LogHistory(log)
    page, more = pages.older(3)  # three records reach back into round 3, so the page starts with q3
    assert [record.content for record in page] == ["q3", "a3", "q4", "a4"]
    assert more
    page, more = pages.older(3)
    assert [record.content for record in page] == ["q1", "a1", "q2", "a2"]
    page, more = pages.older(3)
    assert [record.content for record in page] == ["q0", "a0"] and not more


def test_lines_longer_than_a_chunk_and_damaged_lines(tmp_path, monkeypatch):
    monkeypatch.setattr(history, "_CHUNK", 16)  # every record straddles several chunks
    log = tmp_path / "messages.jsonl"
    records = [{"role": "user", "content": "first " * 10}, {"role": "assistant", "content": "reply " * 10},
               {"role": "system", "content": "not history"}]
    # A line that is not JSON and the torn half of a record written when iota was killed are skipped.
    write_log(log, records, tail=b"not json\n" + b'{"role": "user", "cont')
    page, more = LogHistory(log).older(10)
    assert [(record.role, record.content) for record in page] == [
        ("user", "first " * 10), ("assistant", "reply " * 10)]
    assert not more


def test_records_appended_after_opening_are_not_history(tmp_path):
    log = tmp_path / "messages.jsonl"
    write_log(log, [{"role": "user", "content": "before"}])
    pages = LogHistory(log)
    with log.open("ab") as file:
        file.write(json.dumps(Message("user", "after").to_record()).encode() + b"\n")
    page, _ = pages.older(10)
    assert [record.content for record in page] == ["before"]


def test_a_missing_log_has_no_history(tmp_path):
    pages = LogHistory(tmp_path / "messages.jsonl")
    assert pages.older(10) == ([], False)
