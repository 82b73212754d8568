"""A bot's candidates and durables (iota.bots.candidates, iota.bots.hits) on a fake clock, with hits
counted in a real journal index over a real session log: promoted to durables.jsonl at 3 hits (never
into MEMORY.md), a durable demoted after 30 idle days, a candidate expired after 90; both files one
record table (iota.bots.records); and every candidate passing the checks of a MEMORY.md line (no
secrets, no other project's section)."""

from __future__ import annotations

import datetime
import json
import time

import pytest

from iota.bots.bot import BotStart, open_bot
from iota.bots.candidates import CANDIDATE, DAY, DURABLE, CandidateBook, Entry, add, consolidate, end_of_log
from iota.bots.hits import about_expression, count_hits, keys_of
from iota.bots.journal import Journal, bot_sources
from iota.config.settings import Config, resolve_model
from iota.config.entries import AgentConfig, ModelConfig, ProviderConfig
from iota.memory.file import MemoryFile
from iota.messages import ASSISTANT, TURN_END, USER, Message
from tests.support.turns import write_turn

PYTEST = {"text": "Prefers pytest over unittest", "keywords": ["pytest", "unittest"]}


@pytest.fixture
def bot(tmp_path):
    entry = AgentConfig(name="coder", mode="bot", model="m")
    config = Config(providers={"local": ProviderConfig(name="local", type="openai")},
                    models={"m": ModelConfig(name="m", provider="local", id="m-1")}, agents={"coder": entry})
    start: BotStart = open_bot("coder", model=resolve_model(config, entry), project_root=tmp_path)
    yield start
    start.close()


@pytest.fixture
def journal(bot):
    journal = Journal.open(bot.dir, bot_sources(bot.dir))
    yield journal
    journal.close()


def day(epoch: int) -> str:
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).date().isoformat()


def wrap_up(bot, journal, entries, now):
    """What the upkeep does before its model call: the index caught up, hits counted, the rules applied."""
    journal.catch_up()
    count_hits(journal, bot.session.id, entries, now)
    return consolidate(entries, now=now, counting=True)


def test_a_candidate_is_promoted_at_its_third_hit_and_only_messages_about_it_count(bot, journal):
    memory = MemoryFile("coder", bot.dir)
    write_turn(bot.session, "I prefer pytest over unittest, always")
    entries: list[Entry] = []
    now = int(time.time())
    noted = add(entries, [PYTEST], "", now=now, since=end_of_log(bot.session.dir))
    assert [entry.text for entry in noted.added] == ["Prefers pytest over unittest"]

    write_turn(bot.session, "run the unittest suite under pytest")                      # a hit
    write_turn(bot.session, "pytest is slow today")                                      # one key of two: no hit
    write_turn(bot.session, "the pytest and unittest runners disagree", notice=True)     # a notice: not the person
    hidden = "t-hidden"
    bot.session.append([Message(USER, "compare pytest and unittest", hidden=True, turn=hidden),
                        Message(ASSISTANT, "Done.", turn=hidden), Message(TURN_END, turn=hidden)])  # iota's words
    write_turn(bot.session, "Porting the unittest cases to pytest.")                     # a hit
    done = wrap_up(bot, journal, entries, now + DAY)
    assert (entries[0].state, entries[0].hits, len(done)) == (CANDIDATE, 2, 0)

    write_turn(bot.session, "unittest or pytest for the new module?")                    # the third
    done = wrap_up(bot, journal, entries, now + 2 * DAY)
    assert (entries[0].state, entries[0].hits, entries[0].created) == (DURABLE, 0, now + 2 * DAY)
    assert done.notices() == ['candidates: promoted "Prefers pytest over unittest" to durables (3 hits)']
    assert "pytest" not in memory.path.read_text(), "a promotion writes no MEMORY.md line"
    book = CandidateBook(bot.dir)
    book.save(entries)
    assert not book.path.exists()
    assert json.loads(book.durables_path.read_text())["text"] == "Prefers pytest over unittest"


def test_the_message_a_candidate_came_from_is_no_hit_and_a_message_counts_once(bot, journal):
    write_turn(bot.session, "pytest over unittest, please")
    entries: list[Entry] = []
    now = int(time.time())
    add(entries, [PYTEST], "", now=now, since=end_of_log(bot.session.dir))
    wrap_up(bot, journal, entries, now)
    wrap_up(bot, journal, entries, now)
    assert entries[0].hits == 0
    write_turn(bot.session, "pytest, not unittest")
    wrap_up(bot, journal, entries, now)
    wrap_up(bot, journal, entries, now)
    assert entries[0].hits == 1


def test_durables_idle_30_days_are_demoted_candidates_idle_90_expire_and_memory_md_is_untouched(bot):
    now = int(time.time())
    memory = MemoryFile("coder", bot.dir)
    text = f"# coder memory\n## User\n- [inferred] Old line by the model ({day(now - 300 * DAY)})\n- Never rebase main\n"
    memory.path.write_text(text)
    entries = [Entry("d1", "Deploys go to staging first", DURABLE, created=now - 31 * DAY),
               Entry("d2", "Reply in English", DURABLE, created=now - 29 * DAY),
               Entry("d3", "Pinned for good", DURABLE, created=now - 200 * DAY, pinned=True),
               Entry("c1", "Old idea", created=now - 91 * DAY), Entry("c2", "Newer idea", created=now - 89 * DAY),
               Entry("c3", "Old but pinned", created=now - 91 * DAY, pinned=True)]

    done = consolidate(entries, now=now, counting=True)

    assert memory.path.read_text() == text
    state = {entry.text: entry.state for entry in entries}
    assert state == {"Deploys go to staging first": CANDIDATE, "Reply in English": DURABLE,
                     "Pinned for good": DURABLE, "Old but pinned": DURABLE, "Newer idea": CANDIDATE}
    assert [entry.text for entry in done.expired] == ["Old idea"]
    assert [entry.text for entry in done.demoted] == ["Deploys go to staging first"]
    assert [(entry.text, why) for entry, why in done.promoted] == [("Old but pinned", "pinned")]

    # Sixty days on, the demoted entry (last brought up 91 days ago) expires in its turn.
    later = consolidate(entries, now=now + 60 * DAY, counting=True)
    assert "Deploys go to staging first" in [entry.text for entry in later.expired]


def test_a_hit_keeps_a_durable_from_being_demoted(bot, journal):
    now = int(time.time())
    entries = [Entry("d1", "Deploys go to staging first", DURABLE, created=now - 20 * DAY,
                     since=end_of_log(bot.session.dir)),
               Entry("d2", "Reviews happen on Fridays", DURABLE, created=now - 20 * DAY,
                     since=end_of_log(bot.session.dir))]
    write_turn(bot.session, "deploy this to staging please")
    wrap_up(bot, journal, entries, now + 25 * DAY)
    state = {entry.text: entry.state for entry in entries}
    assert state["Deploys go to staging first"] == DURABLE    # brought up 25 days ago, at most
    assert state["Reviews happen on Fridays"] == CANDIDATE     # 45 days without a word


def test_without_a_journal_nothing_is_demoted():
    now = int(time.time())
    entries = [Entry("d1", "Deploys go to staging first", DURABLE, created=now - 99 * DAY)]
    consolidate(entries, now=now, counting=False)
    assert entries[0].state == DURABLE


@pytest.mark.parametrize("text, why", [
    ("OPENAI_API_KEY=sk-proj-4fG7hJ2kL9mN3pQ6rS8tU1vW5xY0zA2bC4dE6fG8", "looks like"),
    ("ghp_16C7e42F292c6912E7710c838347Ae178B4a", "looks like"),
    ("a\x1bb", "control characters"),
    ("x" * 600, "at most 500 bytes"),
])
def test_a_candidate_passes_the_checks_of_a_memory_line(text, why):
    entries: list[Entry] = []
    noted = add(entries, [text], "", now=0, since=None)
    assert entries == [] and len(noted.refused) == 1 and why in noted.refused[0][1]


def test_a_candidate_is_not_noted_twice_nor_when_memory_has_it_nor_for_another_project():
    entries: list[Entry] = []
    memory = "# m\n## User\n- [user] Reply in English (2026-01-01)\n"
    noted = add(entries, [PYTEST, "prefers pytest over unittest.", "The user: reply in English.",
                          {"text": "Uses tox", "section": "Project: other"}], memory, now=0, since=None, project="mine")
    assert [entry.text for entry in entries] == ["Prefers pytest over unittest"]
    assert len(noted.refused) == 3 and "another project's section" in noted.refused[2][1]


def test_the_book_keeps_its_entries_and_skips_a_damaged_line(tmp_path):
    book = CandidateBook(tmp_path)
    entries: list[Entry] = []
    add(entries, [PYTEST], "", now=1_790_000_000, since=None)
    book.save(entries)
    book.path.write_text(book.path.read_text() + "not json\n")
    assert [(entry.text, entry.keywords, entry.created) for entry in book.load()] == \
        [("Prefers pytest over unittest", ["pytest", "unittest"], 1_790_000_000)]
    assert book.warnings == ["candidates.jsonl: line 2 is not a record iota can read (Expecting value: line 1 "
                             "column 1 (char 0)); it is kept as it is"]
    assert json.loads(book.path.read_text().splitlines()[0])["created"] == "2026-09-21T14:13:20Z"


def test_a_damaged_line_is_written_back_as_it_is_at_the_next_save(tmp_path):
    book = CandidateBook(tmp_path)
    entries: list[Entry] = []
    add(entries, [PYTEST], "", now=1_790_000_000, since=None)
    book.save(entries)
    book.path.write_text(book.path.read_text() + '{"id": "c9", "text": "hand edit gone wrong"\n')
    entries = book.load()
    add(entries, ["Deploys go to staging first"], "", now=1_790_000_100, since=None)
    book.save(entries)
    lines = book.path.read_text().splitlines()
    assert lines[-1] == '{"id": "c9", "text": "hand edit gone wrong"'
    assert [entry.text for entry in book.load()] == ["Prefers pytest over unittest", "Deploys go to staging first"]


def test_what_a_message_about_an_entry_must_say():
    assert keys_of(Entry("c", "Prefers pytest over unittest")) == ["pytest", "unittest"]
    assert keys_of(Entry("c", "x", keywords=["fly.io", "Deploy"])) == ["fly io", "deploy"]
    assert about_expression(["pytest", "unittest"]) == '"pytest" "unittest"'
    assert about_expression(["a", "b", "c"]) == '("a" "b") OR ("a" "c") OR ("b" "c")'
    assert about_expression([]) is None


def test_a_durable_counts_its_idle_days_from_its_promotion():
    now = int(time.time())
    entries = [Entry("c1", "Deploys go to staging first", created=now - 40 * DAY, hits=3, last_hit=now - 29 * DAY)]
    consolidate(entries, now=now, counting=True)
    consolidate(entries, now=now + 5 * DAY, counting=True)
    assert entries[0].state == DURABLE
    consolidate(entries, now=now + 31 * DAY, counting=True)
    assert entries[0].state == CANDIDATE


def test_the_two_files_are_one_store_and_an_earlier_versions_tracked_lines_are_dropped(tmp_path):
    book = CandidateBook(tmp_path)
    legacy = {"id": "c1", "text": "A MEMORY.md line it tracked", "state": "durable", "created": "2026-01-01T00:00:00Z"}
    book.path.write_text(json.dumps(legacy) + "\n" + json.dumps({**legacy, "id": "c2", "text": "A candidate",
                                                                  "state": "candidate"}) + "\n")
    book.durables_path.write_text(json.dumps({**legacy, "id": "d1", "text": "A durable", "pinned": True}) + "\n")
    entries = book.load()
    assert [(entry.id, entry.state, entry.pinned) for entry in entries] == \
        [("c2", CANDIDATE, False), ("d1", DURABLE, True)]
    entries[0].state = DURABLE
    book.save(entries)
    assert book.path.read_text() == ""
    assert [json.loads(line)["id"] for line in book.durables_path.read_text().splitlines()] == ["c2", "d1"]
