"""A bot's journal in a running chat (actors.journal with the real lane, the fake model server, a
real bot directory): an entry after every model turn however it ends, the journal attached to the
message after a compaction, `/rewind` removing exactly the undone turns' entries and giving the
message back, and `recall` reaching what the view lost."""

from __future__ import annotations

import json
import math
from contextlib import asynccontextmanager

import pytest
import trio

from actors.commands.registry import COMMANDS, REWIND_TITLE
from actors.events import Choose, ComposerText, TextDelta, TurnEnded
from actors.journal import JournalKeeper
from actors.lane import Command, Lane, QuietTurn
from actors.notifier import open_host_link
from iota.bots.bot import open_bot
from iota.bots.journal import CONTEXT_HEADER, Journal, bot_sources
from iota.chat import prepare_chat
from iota.compaction.summary import FLUSH_NOTICE
from iota.config import settings
from iota.sessions.conversation import Conversation, notice
from iota.sessions.search import search
from iota.tools.base import Toolbox
from iota.tools.recall import Recall
from tests.actors.test_lane import Chat
from tests.support.fake_model import Gate, fake_model, tool_call  # noqa: F401  (the fixture)

BOUND = 10


@pytest.fixture
def open_bot_lane(tmp_path, fake_home, fake_model):  # noqa: F811
    (fake_home / ".iota.yaml").write_text(
        f"providers:\n  fake: {{type: openai, url: '{fake_model.openai_url}', key: test-key}}\n"
        "models:\n  m: {provider: fake, id: fake-model, context_window: 200k}\n"
        "agents:\n  coder:\n    mode: bot\n    model: m\n    tools:\n      code: {auto_write: true}\n")
    project = tmp_path / "project"
    project.mkdir()

    @asynccontextmanager
    async def open_():
        loaded = settings.load(project)
        setup = prepare_chat(loaded, settings.find_agent(loaded, "coder"), project)
        start = open_bot("coder", model=setup.model, project_root=setup.project_root)
        journal = Journal.open(start.dir, bot_sources(start.dir))
        keeper = JournalKeeper(journal)
        setup.extra_tools.append(Recall(journal))
        setup.journal = True
        conversation = Conversation.from_session(start.session)
        send, receive = trio.open_memory_channel(math.inf)
        link, _ = open_host_link()
        try:
            async with setup.open_tools() as toolbox:
                lane = Lane(setup, conversation, toolbox, send, link)
                lane.before_send = [keeper.before_send]
                async with trio.open_nursery() as nursery:
                    await nursery.start(lane.run)
                    await nursery.start(keeper.run, lane)
                    chat = Chat(lane, setup, conversation, receive)
                    chat.keeper, chat.journal, chat.project = keeper, journal, project
                    yield chat
                    nursery.cancel_scope.cancel()
        finally:
            if setup._provider is not None:
                await setup._provider.aclose()
            journal.close()
            start.close()

    return open_


async def settled(chat: Chat) -> list[tuple]:
    """The journal's entries once it has caught up: (asked, outcome, did, failed, files)."""
    with trio.fail_after(BOUND):
        await chat.lane.wait_idle()
        await chat.keeper.catch_up(chat.lane)
    return [(s.entry.asked, s.entry.outcome, s.entry.did, s.entry.failed, s.entry.files)
            for s in chat.journal.entries(order="e.id")]


async def test_every_turn_gets_an_entry_whether_it_finished_failed_was_cancelled_or_interrupted(
        open_bot_lane, fake_model):
    fake_model.reply("Writing.", tool_calls=[tool_call("write_file", {"path": "a.txt", "content": "hi"}, id="w1"),
                                             tool_call("edit_file", {"path": "a.txt", "old_string": "nope",
                                                                     "new_string": "x"}, id="e1")])
    fake_model.reply("Wrote a.txt; the edit did not apply.")
    fake_model.fail(400, message="refused by the test")
    gate = Gate()
    fake_model.reply("partial one two", pieces=3, gate=gate)
    fake_model.reply("partial three four", pieces=3, gate=gate)
    async with open_bot_lane() as chat:
        chat.submit("write a.txt")
        await chat.until(TurnEnded)
        chat.submit("this one fails")
        await chat.until(TurnEnded)
        gate.release(1)
        chat.submit("cancel me")
        await chat.until(TextDelta)
        chat.lane.interrupt()                       # Ctrl+C: the person cancelled it
        await chat.until(TurnEnded)
        gate.release(1)
        chat.submit("iota stops during me")
        await chat.until(TextDelta)
        chat.lane.interrupt(stopping=True)          # a quit or a signal: iota interrupted it
        await chat.until(TurnEnded)
        assert await settled(chat) == [
            ("write a.txt", "finished", "write_file (a.txt), edit_file (a.txt)", 1, ("a.txt",)),
            ("this one fails", "failed", "", 0, ()),
            ("cancel me", "cancelled", "", 0, ()),
            ("iota stops during me", "interrupted", "", 0, ()),
        ]
        ends = [json.loads(line) for line in (chat.conversation.session.dir / "messages.jsonl").read_text().splitlines()
                if '"turn_end"' in line]
        assert [end.get("outcome") for end in ends] == [None, "failed", "cancelled", "interrupted"]
        assert all("at" in end for end in ends)


async def test_a_turn_of_the_memory_flush_gets_its_entry_too(open_bot_lane, fake_model):
    fake_model.reply("Nothing to save.")
    async with open_bot_lane() as chat:
        async def flush(lane: Lane, argument: str) -> None:
            await lane.run_model_turn(notice(FLUSH_NOTICE), Toolbox([]))

        chat.lane.submit(Command("flush", "", flush))
        await chat.until(TurnEnded)
        assert await settled(chat) == [("memory flush before a compaction", "finished", "", 0, ())]


async def test_a_turn_iota_starts_by_itself_gets_its_entry_and_stays_out_of_search_and_rewind(
        open_bot_lane, fake_model):
    fake_model.reply("Checked the nightly build.")
    async with open_bot_lane() as chat:
        async def scheduled(lane: Lane) -> None:
            await lane.quiet_turn("Scheduled: check the nightly build")

        chat.lane.submit(QuietTurn("schedule", scheduled))
        await chat.until(TurnEnded)
        assert await settled(chat) == [("Scheduled: check the nightly build", "finished", "", 0, ())]
        assert [hit.kind for hit in search(chat.journal.reader, "nightly", limit=5).hits] == ["reply"]
        assert await trio.to_thread.run_sync(chat.conversation.rewind_points) == []


async def test_after_a_compaction_the_next_request_carries_the_condensed_turns_entries(open_bot_lane, fake_model):
    steps = 6
    for n in range(steps):
        fake_model.reply(f"Answer {n}.", tool_calls=[tool_call("read_file", {"path": f"file{n}.txt"}, id=f"r{n}")])
        fake_model.reply(f"Done with step {n}.")
    fake_model.reply("The user went through steps 0 to 5.")     # the summary
    fake_model.reply("Going on.")
    fake_model.reply("Still going.")
    async with open_bot_lane() as chat:
        for n in range(steps):
            chat.submit(f"step {n}")
            await chat.until(TurnEnded)
        await settled(chat)
        chat.lane.submit(Command("compact", "", COMMANDS["compact"][1]))
        chat.submit("go on")
        await chat.until(TurnEnded)
        chat.submit("and again")
        await chat.until(TurnEnded)
    after = fake_model.requests[2 * steps + 1].body["messages"]
    blocks = [m["content"] for m in after if m["role"] == "user" and m["content"].startswith(CONTEXT_HEADER)]
    assert len(blocks) == 1
    lines = blocks[0].splitlines()[1:]
    # steps 0 to 4 were condensed (step 5, the last turn, is kept word for word): all of them,
    # more than the latest few a turn gets otherwise
    assert [line.split('asked: "')[1].split('"')[0] for line in lines] == [f"step {n}" for n in range(5)]
    assert "read_file (file0.txt)" in lines[0] and 'answer: "Done with step 0."' in lines[0]
    assert len(blocks[0].encode()) <= 4096
    assert after[-1]["content"] == "go on" and after[-2]["content"] == blocks[0]
    # the block stays on its message, and nothing is attached twice
    again = fake_model.requests[2 * steps + 2].body["messages"]
    assert [m["content"] for m in again if m["role"] == "user" and m["content"].startswith(CONTEXT_HEADER)] == blocks
    # the system prompt tells the bot to look things up, and never changes for it
    assert after[0] == again[0]
    assert "Never claim not to remember" in after[0]["content"]


async def test_rewind_removes_exactly_the_undone_entries_and_gives_the_message_back(open_bot_lane, fake_model):
    for word in ("alpha", "bravo", "charlie", "delta"):
        fake_model.reply(f"Did {word}.")
    fake_model.reply("Did charlie, differently.")
    fake_model.reply(tool_calls=[tool_call("recall", {"action": "search", "query": "delta", "include_undone": True})])
    fake_model.reply("Found it.")
    async with open_bot_lane() as chat:
        for word in ("alpha", "bravo", "charlie", "delta"):
            chat.submit(f"do {word}")
            await chat.until(TurnEnded)
        await settled(chat)
        chat.lane.submit(Command("rewind", "", COMMANDS["rewind"][1]))
        picker = (await chat.until(Choose))[-1]
        assert picker.title == REWIND_TITLE and "Files are not rolled back" in picker.title
        assert picker.options == ("do delta", "do charlie", "do bravo", "do alpha")
        await picker.reply.send(1)
        assert (await chat.until(ComposerText))[-1] == ComposerText("do charlie")
        assert [e[0] for e in await settled(chat)] == ["do alpha", "do bravo"]
        chat.submit("do charlie, differently")
        await chat.until(TurnEnded)
        chat.submit("did we ever do delta?")
        await chat.until(TurnEnded)
        assert [e[0] for e in await settled(chat)] == ["do alpha", "do bravo", "do charlie, differently",
                                                      "did we ever do delta?"]
    sent = [(m["role"], m.get("content")) for m in fake_model.requests[4].body["messages"] if m["role"] != "system"]
    assert sent == [("user", "do alpha"), ("assistant", "Did alpha."), ("user", "do bravo"),
                    ("assistant", "Did bravo."), ("user", "do charlie, differently")]
    found = [m["content"] for m in fake_model.requests[6].body["messages"] if m["role"] == "tool"][0]
    assert "undone by /rewind" in found and "**delta**" in found
