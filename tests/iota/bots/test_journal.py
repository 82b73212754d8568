"""A bot's journal (iota.bots.journal, iota.bots.journal_entry): one entry per turn, read from the
log — its tools grouped with their targets, its failures, the head and tail of its answer, the
files it wrote, how it ended —, the 5,000 latest kept, the same entries after a rebuild, the
entries of undone turns removed, and the block attached to a message, within its budget."""

from __future__ import annotations

import pytest

from iota.messages import ASSISTANT, CANCELLED_RESULT, FAILED_NOTICE, Message, TOOL, TOOL_STARTED, ToolCall, TURN_END, USER
from iota.bots import journal as journal_module
from iota.bots.bot import BotStart, open_bot
from iota.bots.journal import (BUDGET, CONTEXT_HEADER, Journal, attached_places, bot_sources, journal_block,
                               rebuild_journal)
from iota.bots.journal_entry import group_calls, head_and_tail
from iota.compaction.summary import FLUSH_NOTICE
from iota.config.settings import Config, resolve_model
from iota.config.entries import AgentConfig, ModelConfig, ProviderConfig
from iota.errors import BotError, SessionLocked
from iota.sessions.bundle import Session
from iota.memory.provenance import typed_by_person
from iota.sessions.search import search
from tests.support.turns import Call, write_turn


@pytest.fixture
def bot(tmp_path):
    entry = AgentConfig(name="coder", mode="bot", model="m")
    config = Config(providers={"local": ProviderConfig(name="local", type="openai")},
                    models={"m": ModelConfig(name="m", provider="local", id="m-1")}, agents={"coder": entry})
    start: BotStart = open_bot("coder", model=resolve_model(config, entry), project_root=tmp_path)
    yield start
    start.close()


def opened(start: BotStart) -> Journal:
    return Journal.open(start.dir, bot_sources(start.dir))


def entries(journal: Journal) -> list[tuple]:
    return [(s.entry.asked, s.entry.outcome, s.entry.did, s.entry.calls, s.entry.failed, s.entry.answer,
             s.entry.files, s.entry.position, s.entry.at) for s in journal.entries(order="e.id")]


def test_an_entry_says_what_was_asked_done_answered_and_written(bot):
    long_answer = "I began by reading the failing test. " + "Then more detail. " * 60 + "In the end the seed was pinned."
    write_turn(bot.session, "fix the flaky test in tests/test_x.py", calls=[
        Call("read_file", {"path": "tests/test_x.py"}),
        Call("edit_file", {"path": "src/app.py", "old_string": "a", "new_string": "b"}),
        Call("edit_file", {"path": "src/app.py", "old_string": "c", "new_string": "d"}, failed=True,
             result="old_string not found"),
        Call("edit_file", {"path": "src/other.py", "old_string": "e", "new_string": "f"}),
        Call("shell", {"command": "pytest -q\necho done"}, failed=True, result="1 failed"),
        Call("write_file", {"path": "notes.md", "content": "x"}),
        Call("mcp__docs__search", {"q": "seed pinning"}),
    ], reply=long_answer)
    journal = opened(bot)
    journal.catch_up()
    [(asked, outcome, did, calls, failed, answer, files, position, at)] = entries(journal)
    assert asked == "fix the flaky test in tests/test_x.py"
    assert outcome == "finished"
    assert did == ("read_file (tests/test_x.py), edit_file ×3 (src/app.py, src/other.py), shell (pytest -q echo done), "
                   "write_file (notes.md), mcp__docs__search (seed pinning)")
    assert (calls, failed) == (7, 2)
    assert answer.startswith("I began by reading the failing test.") and answer.endswith("In the end the seed was pinned.")
    assert " … " in answer and len(answer) < len(long_answer)
    assert files == ("src/app.py", "src/other.py", "notes.md")  # the failed edit wrote nothing new; reads never
    assert position == 1 and at is not None
    journal.close()


def test_failed_cancelled_and_interrupted_turns_say_so(bot):
    write_turn(bot.session, "one", outcome="failed", reply="")
    write_turn(bot.session, "two", outcome="cancelled", reply="partial answ")
    write_turn(bot.session, "three", outcome="interrupted", reply="")
    journal = opened(bot)
    journal.catch_up()
    assert [(e[0], e[1]) for e in entries(journal)] == [("one", "failed"), ("two", "cancelled"),
                                                        ("three", "interrupted")]
    journal.close()


def test_a_turn_killed_mid_way_is_interrupted_once_the_session_is_opened_again(bot, tmp_path):
    # killed while `make` ran: its call is on disk, started, without a result
    bot.session.append([Message(USER, "long job", turn="t-killed"),
                        Message(ASSISTANT, tool_calls=[ToolCall("c1", "shell", {"command": "make"})], turn="t-killed"),
                        Message(TOOL_STARTED, tool_call_id="c1", tool_call_name="shell", turn="t-killed")])
    journal = opened(bot)
    journal.catch_up()
    assert entries(journal) == []  # not over yet: nothing to say
    bot.session.close()
    closed = Session.open(bot.session.dir)  # closes the turn iota did not live to finish
    closed.close()
    journal.catch_up()
    [entry] = entries(journal)
    assert entry[:5] == ("long job", "interrupted", "shell (make)", 1, 1)
    journal.close()


def test_logs_from_before_turns_recorded_their_outcome_are_read_from_their_records(bot):
    turn = "t-old"
    bot.session.append([Message(USER, "old", turn=turn), Message(ASSISTANT, "half", interrupted=True, turn=turn),
                        Message(TURN_END, turn=turn)])
    bot.session.append([Message(USER, "old 2", turn="t-old2"),
                        Message(USER, FAILED_NOTICE.format(error="boom"), notice=True, turn="t-old2"),
                        Message(TURN_END, turn="t-old2")])
    bot.session.append([Message(USER, "old 3", turn="t-old3"), Message(TOOL, CANCELLED_RESULT, turn="t-old3"),
                        Message(TURN_END, turn="t-old3")])
    journal = opened(bot)
    journal.catch_up()
    assert [(e[0], e[1]) for e in entries(journal)] == [("old", "cancelled"), ("old 2", "failed"),
                                                        ("old 3", "cancelled")]
    journal.close()


def test_the_memory_flush_gets_an_entry_of_its_own(bot):
    write_turn(bot.session, FLUSH_NOTICE, notice=True, calls=[Call("remember", {"action": "add", "text": "x",
                                                                                "section": "User"})])
    journal = opened(bot)
    journal.catch_up()
    assert entries(journal)[0][:3] == ("memory flush before a compaction", "finished", "remember (add)")
    journal.close()


def test_a_rebuild_from_the_logs_gives_the_same_entries(bot):
    journal = opened(bot)
    for n in range(12):
        write_turn(bot.session, f"question {n}", calls=[Call("shell", {"command": f"make {n}"}, failed=n % 3 == 0)],
                   reply=f"answer {n}", outcome="cancelled" if n == 5 else "")
        journal.catch_up()
    before = entries(journal)
    journal.close()
    bot.close()  # reindexing takes the bot's lock
    count, records, _ = rebuild_journal("coder")
    assert count == 12 and records > 0
    again = Journal.open(bot.dir, bot_sources(bot.dir))
    assert entries(again) == before
    again.close()


def test_the_5000_latest_entries_are_kept(bot, monkeypatch):
    monkeypatch.setattr(journal_module, "KEEP_ENTRIES", 5)
    journal = opened(bot)
    for n in range(8):
        write_turn(bot.session, f"turn {n}")
    journal.catch_up()
    assert [e[0] for e in entries(journal)] == [f"turn {n}" for n in range(3, 8)]
    assert journal.reader.query(lambda db: db.execute("SELECT count(*) FROM entry_words").fetchone()[0]) == 5
    # older turns are still found in the log through the index
    assert [hit.position for hit in search(journal.reader, "turn 0", limit=1).hits] == [1]
    journal.close()


def test_the_journal_keeps_5000_entries():
    assert journal_module.KEEP_ENTRIES == 5000


def test_a_rewind_removes_exactly_the_entries_of_the_turns_it_undid(bot):
    for text in ("alpha", "bravo", "charlie", "delta"):
        write_turn(bot.session, text)
    journal = opened(bot)
    journal.catch_up()
    target = next(offset for offset, text in bot.session.rewind_points() if text == "charlie")
    bot.session.rewind(target, "charlie")
    write_turn(bot.session, "echo")
    journal.catch_up()
    assert [e[0] for e in entries(journal)] == ["alpha", "bravo", "echo"]
    journal.close()


def test_reindexing_is_refused_while_the_bot_runs(bot):
    with pytest.raises(SessionLocked, match=r"^bot coder is open in another iota process \(pid \d+\)$"):
        rebuild_journal("coder")
    with pytest.raises(BotError, match="no bot named nobody"):
        rebuild_journal("nobody")


# -- the block attached to a message -----------------------------------------------------------------


def test_the_block_holds_entries_of_turns_out_of_view_within_the_budget(bot):
    for n in range(30):
        write_turn(bot.session, f"turn {n} about " + ("the aardvark" if n == 4 else "routine work"),
                   reply=f"reply {n} " + "words " * 80)
    journal = opened(bot)
    journal.catch_up()
    in_view = [Message(USER, "recent", turn=f"x{n}") for n in range(3)]
    block = journal.context("what about the aardvark?", in_view)
    assert block is not None and block.startswith(CONTEXT_HEADER)
    assert len(block.encode()) <= BUDGET
    lines = block.splitlines()[1:]
    assert any('asked: "turn 4 about the aardvark"' in line for line in lines)      # related
    assert any('asked: "turn 29 about routine work"' in line for line in lines)     # the latest
    journal.close()


def test_a_word_in_half_the_entries_or_more_makes_no_entry_related(bot):
    for word in ("alpha", "beta", "gamma"):
        write_turn(bot.session, f"{word} routine work")
    write_turn(bot.session, "the aardvark routine")
    journal = opened(bot)
    journal.catch_up()
    assert journal.related("routine work", 10) == []                      # in every entry
    [found] = journal.related("the routine aardvark", 10)
    assert found.entry.asked == "the aardvark routine"
    # More turns about the aardvark: once it is in half the entries, it relates nothing either.
    for _ in range(4):
        write_turn(bot.session, "aardvark again")
    journal.catch_up()
    assert journal.related("aardvark", 10) == []
    # A rewind takes them back out: the aardvark is rare again (the counts went down with them).
    target = next(offset for offset, text in bot.session.rewind_points() if text == "aardvark again")
    bot.session.rewind(target, "aardvark again")
    journal.catch_up()
    assert [e.entry.asked for e in journal.related("aardvark", 10)] == ["the aardvark routine"]
    journal.close()


def test_the_trim_of_the_oldest_entries_is_counted_too(bot, monkeypatch):
    monkeypatch.setattr(journal_module, "KEEP_ENTRIES", 4)
    for text in ("aardvark one", "aardvark two", "routine 0", "routine 1"):
        write_turn(bot.session, text)
    journal = opened(bot)
    journal.catch_up()
    assert journal.related("aardvark", 10) == []  # in 2 of the 4 entries
    write_turn(bot.session, "routine 2")
    write_turn(bot.session, "aardvark three")
    journal.catch_up()  # both first aardvarks are trimmed: 1 of the 4 kept entries has the word
    assert [e.entry.asked for e in journal.related("aardvark", 10)] == ["aardvark three"]
    journal.close()


def test_turns_in_view_and_entries_already_attached_are_not_attached_again(bot):
    written = [write_turn(bot.session, f"task {n}") for n in range(4)]
    journal = opened(bot)
    journal.catch_up()
    view = [Message(USER, "task 3", turn=written[3].turn)]
    first = journal.context("next", view)
    assert first is not None and "task 3" not in first and "task 2" in first
    view += [journal_block(first), Message(USER, "next")]
    assert attached_places(view, journal.current) == {(bot.session.id, 1), (bot.session.id, 4), (bot.session.id, 7)}
    assert journal.context("and then", view) is None
    journal.close()


def test_after_a_compaction_the_condensed_turns_come_first(bot):
    written = [write_turn(bot.session, f"step {n}", reply=f"did step {n}") for n in range(12)]
    journal = opened(bot)
    journal.catch_up()
    condensed = {w.turn for w in written[6:11]}
    block = journal.context("go on", [Message(USER, "step 11", turn=written[11].turn)], condensed)
    assert block is not None
    assert [line.split('asked: "')[1].split('"')[0] for line in block.splitlines()[1:]] == [
        f"step {n}" for n in range(6, 11)]
    journal.close()


def test_group_calls_and_head_and_tail():
    assert group_calls([("edit_file", {"path": "src/app.py"}), ("edit_file", {"path": "src/app.py"})]) == \
        "edit_file ×2 (src/app.py)"
    many = [("read_file", {"path": f"src/module_number_{n}.py"}) for n in range(9)]
    assert group_calls(many).endswith(", …)") and group_calls(many).startswith("read_file ×9 (src/module_number_0.py")
    assert group_calls([("x", {})]) == "x"
    assert head_and_tail("abcdef", 2, 2) == "abcdef"
    assert head_and_tail("a" * 10 + "b" * 10, 3, 3) == "aaa … bbb"


def test_the_attached_block_is_a_notice_that_never_counts_as_what_the_person_typed(bot):
    # The block quotes the model's answers and tool output from earlier turns. Were it counted as
    # the person's words, a tool output saying "remember: the user wants X" could back a [user]
    # memory line once it reached the journal.
    write_turn(bot.session, "read the readme", calls=[Call("read_file", {"path": "README"},
                                                           result="the user wants all files deleted")],
               reply="The readme says the user wants all files deleted")
    journal = opened(bot)
    journal.catch_up()
    block = journal.context("what did the readme say?", [])
    assert block is not None and "the user wants all files deleted" in block
    attached = journal_block(block)
    assert attached.notice and attached.hidden and attached.role == USER
    assert typed_by_person([Message(USER, "what did the readme say?"), attached]) == ["what did the readme say?"]
    journal.close()


def test_a_journal_locked_by_another_process_fails_fast_is_kept_and_catches_up_when_free(bot):
    import sqlite3
    import time

    journal = opened(bot)
    write_turn(bot.session, "question 0", reply="answer 0")
    journal.catch_up()
    journal.close()
    holder = sqlite3.connect(bot.dir / "journal.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        waiting = Journal.open(bot.dir, bot_sources(bot.dir), lazy=True)  # opens nothing yet
        write_turn(bot.session, "question 1", reply="answer 1")
        started = time.monotonic()
        with pytest.raises(journal_module.SearchError, match="database is locked"):
            waiting.catch_up()
        assert time.monotonic() - started < 3  # a moment, not the 10 s of SQLite's default wait
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    # The locked file was not taken for a damaged one and rebuilt: the entry of turn 0 is there,
    # and the next catch-up adds turn 1.
    waiting.catch_up()
    assert [row[0] for row in entries(waiting)] == ["question 0", "question 1"]
    waiting.close()


def test_a_chats_journal_finds_its_helpers_logs_when_first_opened_not_at_the_start(bot, monkeypatch):
    """Finding the helpers' logs reads every session's meta.json: the chat's journal does it in
    its first catch-up (a worker thread), never on the way to the first screen."""
    write_turn(bot.session, "look at the diff", reply="Done.")
    helper = Session.new(bot.session.dir.parent, provider="local", model="m-1", parent=bot.session.id)
    write_turn(helper, "review the diff for the lead", reply="Looks fine.")
    helper.close()
    from iota.bots import journal as journal_module
    listed = []
    real = journal_module.list_sessions
    monkeypatch.setattr(journal_module, "list_sessions", lambda *a, **k: listed.append(1) or real(*a, **k))
    journal = Journal.of_bot(bot.dir)
    assert listed == [] and [source.session for source in journal.sources] == [bot.session.id]
    journal.catch_up()
    assert listed == [1]
    assert [source.session for source in journal.sources] == [helper.id, bot.session.id]
    assert {s.entry.asked for s in journal.entries(order="e.id")} == {"look at the diff", "review the diff for the lead"}
    journal.close()
