"""Which durables ride on a message (iota.bots.durables): pinned always, then those the message is
about (the test of a hit, porter-stemmed), then the most brought up; never more than 16 entries or
2 KiB, even out of 2,000; another project's never; what the view already carries not again."""

from __future__ import annotations

import pytest

from iota.bots.candidates import CANDIDATE, DURABLE, CandidateBook, Entry
from iota.errors import ToolError
from iota.memory.file import MemoryFile
from iota.tools.remember_candidates import CandidateActions
from iota.bots.durables import (HEADER, PINS_CAP, SENT_BYTES, SENT_ENTRIES, about_message, chosen, durables_block, durables_text,
                                sent_in)


def store(count: int = 2000) -> list[Entry]:
    """`count` durables about numbered topics, a few hits each, none about deploys or pytest."""
    return [Entry(f"d{n}", f"Topic {n} settles on the orchid{n} convention", DURABLE, keywords=[f"orchid{n}"],
                  hits=n % 3, created=1_000 + n) for n in range(count)]


def test_a_message_about_a_durable_brings_it_and_stems_like_a_hit():
    entries = [Entry("a", "Deploys go to staging first", DURABLE, keywords=["deploy", "staging"]),
               Entry("b", "Prefers pytest over unittest", DURABLE),
               Entry("c", "Candidates are never sent", CANDIDATE, keywords=["deploy"])]
    assert about_message("we are deploying to staging now", entries) == {"a", "c"}
    assert about_message("pytest is slow", entries) == set()            # one key of two
    assert about_message("", entries) == set()
    assert [e.id for e in chosen(entries, "deploying to staging", project="p")] == ["a"]


def test_out_of_two_thousand_the_pinned_and_the_relevant_go_within_both_caps():
    entries = store()
    entries[1500].pinned = True
    entries.append(Entry("deploy", "Deploys go to staging first", DURABLE, keywords=["deploy", "staging"]))
    picked = chosen(entries, "deploy the branch to staging", project="p")
    assert [e.id for e in picked[:2]] == ["d1500", "deploy"]
    assert len(picked) <= SENT_ENTRIES
    text = durables_text(picked)
    assert len(text.encode()) <= SENT_BYTES
    assert text.startswith(HEADER) and "- Deploys go to staging first" in text
    # The rest are the highest-hit, most recently active first.
    assert all(e.hits == 2 for e in picked[2:]) and picked[2].created > picked[-1].created


def test_the_byte_cap_holds_for_long_lines_and_a_pin_too_long_is_skipped_not_the_rest():
    entries = [Entry(f"p{n}", f"Pinned fact {n} " + "x" * 400, DURABLE, pinned=True, hits=1) for n in range(10)]
    picked = chosen(entries, "anything", project="p")
    assert 0 < len(picked) < 10
    assert len(durables_text(picked).encode()) <= SENT_BYTES


def test_another_projects_durable_is_not_sent_and_what_the_view_carries_is_not_sent_again():
    entries = [Entry("a", "Uses tox here", DURABLE, "Project: other", pinned=True),
               Entry("b", "Uses nox here", DURABLE, "Project: mine", pinned=True),
               Entry("c", "Likes short replies", DURABLE, pinned=True)]
    first = chosen(entries, "hi", project="mine")
    assert [e.id for e in first] == ["b", "c"]
    view = [durables_block(durables_text(first))]
    assert sent_in(view) == {"Uses nox here", "Likes short replies"}
    assert chosen(entries, "hi", project="mine", already=sent_in(view)) == []
    assert durables_text([]) is None


def test_remember_lists_pins_unpins_and_forgets_durables_and_refuses_a_pin_past_the_cap(tmp_path):
    book = CandidateBook(tmp_path)
    book.save([Entry(f"d{n}", f"Fact number {n}", DURABLE, hits=n) for n in range(PINS_CAP + 1)]
              + [Entry("c1", "A candidate", CANDIDATE)])
    actions = CandidateActions(book, MemoryFile("coder", tmp_path), project="p")
    listing = actions.run("durables", {}).content
    assert listing.splitlines()[0].startswith(f"{PINS_CAP + 1} durables") and "A candidate" not in listing
    for n in range(PINS_CAP):
        assert "pinned durable" in actions.run("pin", {"old": f"d{n}"}).content
    with pytest.raises(ToolError, match=f"{PINS_CAP} entries are pinned already"):
        actions.run("pin", {"old": f"d{PINS_CAP}"})
    actions.run("unpin", {"old": "d0"})
    actions.run("pin", {"old": f"d{PINS_CAP}"})
    assert "forgot durable" in actions.run("forget", {"old": "Fact number 1"}).content
    assert [e.id for e in book.load() if e.pinned] == [f"d{n}" for n in range(2, PINS_CAP + 1)]
    assert "Fact number 1" not in book.durables_path.read_text()
