"""A bot's candidate memory (iota.bots.candidates, iota.bots.hits) on a fake clock, with hits counted
in a real journal index over a real session log: promoted at 3 hits, a model's MEMORY.md line
demoted after 30 idle days, a candidate expired after 90, a person's line never touched; and
every candidate passing the checks of a MEMORY.md line (no secrets, no other project's section)."""

from __future__ import annotations

import datetime
import json
import time

import pytest

from iota.bots.bot import BotStart, open_bot
from iota.bots.candidates import (CANDIDATE, DAY, DURABLE, CandidateBook, Entry, add, consolidate, end_of_log,
                                  track_memory_lines)
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


def wrap_up(bot, journal, entries, memory, now):
    """What the upkeep does before its model call: the index caught up, hits counted, the rules applied."""
    journal.catch_up()
    high = count_hits(journal, bot.session.id, entries, now)
    return consolidate(entries, memory, now=now, project="project", high_water=high, counting=True)


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
    done = wrap_up(bot, journal, entries, memory, now + DAY)
    assert (entries[0].state, entries[0].hits, done.memory_notices) == (CANDIDATE, 2, [])
    assert not memory.path.exists() or "pytest" not in memory.path.read_text()

    write_turn(bot.session, "unittest or pytest for the new module?")                    # the third
    done = wrap_up(bot, journal, entries, memory, now + 2 * DAY)
    assert entries[0].state == DURABLE
    assert f"- [inferred] Prefers pytest over unittest ({day(now + 2 * DAY)})" in memory.path.read_text()
    assert done.memory_notices == [f"memory: MEMORY.md ## User +1 line: [inferred] Prefers pytest over unittest "
                                   f"({day(now + 2 * DAY)}) (promoted: 3 hits)"]


def test_the_message_a_candidate_came_from_is_no_hit_and_a_message_counts_once(bot, journal):
    memory = MemoryFile("coder", bot.dir)
    write_turn(bot.session, "pytest over unittest, please")
    entries: list[Entry] = []
    now = int(time.time())
    add(entries, [PYTEST], "", now=now, since=end_of_log(bot.session.dir))
    wrap_up(bot, journal, entries, memory, now)
    wrap_up(bot, journal, entries, memory, now)
    assert entries[0].hits == 0
    write_turn(bot.session, "pytest, not unittest")
    wrap_up(bot, journal, entries, memory, now)
    wrap_up(bot, journal, entries, memory, now)
    assert entries[0].hits == 1


def test_lines_idle_30_days_are_demoted_candidates_idle_90_expire_and_the_persons_lines_stay(bot):
    now = int(time.time())
    memory = MemoryFile("coder", bot.dir)
    text = ("# coder memory\n## User\n"
            f"- [inferred] Deploys go to staging first ({day(now - 31 * DAY)})\n"
            f"- [user] Reply in English ({day(now - 29 * DAY)})\n"
            f"- [inferred] Pinned for good ({day(now - 200 * DAY)})\n"
            "- Never rebase main\n")
    memory.path.write_text(text)
    entries = [Entry("c1", "Old idea", created=now - 91 * DAY), Entry("c2", "Newer idea", created=now - 89 * DAY),
               Entry("c3", "Old but pinned", created=now - 91 * DAY, pinned=True)]
    track_memory_lines(entries, memory, now=now, since=None)
    next(entry for entry in entries if entry.text == "Pinned for good").pinned = True

    done = consolidate(entries, memory, now=now, project="project", high_water=None, counting=True)

    after = memory.path.read_text()
    assert "Deploys go to staging first" not in after
    assert "Reply in English" in after and "Pinned for good" in after
    assert "- Never rebase main\n" in after
    assert "- [inferred] Old but pinned" in after    # pinned: promoted however idle
    assert (bot.dir / "MEMORY.md.prev").read_text().count("Deploys go to staging first") == 1
    assert [entry.text for entry in done.expired] == ["Old idea"]
    demoted = next(entry for entry in entries if entry.text == "Deploys go to staging first")
    assert (demoted.state, demoted.hits) == (CANDIDATE, 0)
    assert any("-1 line: [inferred] Deploys go to staging first" in line and "back to candidates: no mention in 31 "
               "days" in line for line in done.memory_notices)
    assert "Newer idea" in [entry.text for entry in entries]

    # Sixty days on, the demoted line (last brought up 91 days ago) expires in its turn.
    later = consolidate(entries, memory, now=now + 60 * DAY, project="project", high_water=None, counting=True)
    assert "Deploys go to staging first" in [entry.text for entry in later.expired]
    assert "Never rebase main" in memory.path.read_text()


def test_a_hit_keeps_a_line_from_being_demoted(bot, journal):
    now = int(time.time())
    memory = MemoryFile("coder", bot.dir)
    memory.path.write_text(f"# coder memory\n## User\n- [inferred] Deploys go to staging first ({day(now - 20 * DAY)})\n"
                           f"- [inferred] Reviews happen on Fridays ({day(now - 20 * DAY)})\n")
    entries: list[Entry] = []
    wrap_up(bot, journal, entries, memory, now)           # tracks both lines, from here on
    write_turn(bot.session, "deploy this to staging please")
    wrap_up(bot, journal, entries, memory, now + 25 * DAY)
    after = memory.path.read_text()
    assert "Deploys go to staging first" in after       # brought up 25 days ago, at most
    assert "Reviews happen on Fridays" not in after     # 45 days without a word


def test_without_a_journal_nothing_is_demoted(bot):
    now = int(time.time())
    memory = MemoryFile("coder", bot.dir)
    memory.path.write_text(f"# coder memory\n## User\n- [inferred] Deploys go to staging first ({day(now - 99 * DAY)})\n")
    entries: list[Entry] = []
    consolidate(entries, memory, now=now, project="project", high_water=None, counting=False)
    assert "Deploys go to staging first" in memory.path.read_text()


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
    assert book.warnings == [f"{book.path}: line 2 is not a candidate; it is skipped"]
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


def test_a_promoted_line_counts_its_idle_days_from_its_promotion(bot):
    now = int(time.time())
    memory = MemoryFile("coder", bot.dir)
    entries = [Entry("c1", "Deploys go to staging first", created=now - 40 * DAY, hits=3, last_hit=now - 29 * DAY)]
    consolidate(entries, memory, now=now, project="project", high_water=None, counting=True)
    consolidate(entries, memory, now=now + 5 * DAY, project="project", high_water=None, counting=True)
    assert "Deploys go to staging first" in memory.path.read_text()
    consolidate(entries, memory, now=now + 31 * DAY, project="project", high_water=None, counting=True)
    assert "Deploys go to staging first" not in memory.path.read_text()
