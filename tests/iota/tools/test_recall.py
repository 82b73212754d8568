"""The `recall` tool (iota.tools.recall): a bot searches and rereads its own past — what a
compaction took out of its view included — and nothing else: never another bot's sessions, never a
chat's or an agent's, whatever session id or query the model sends."""

from __future__ import annotations

from pathlib import Path

import pytest

from iota import paths
from iota.bots.bot import BotStart, open_bot
from iota.bots.journal import Journal, bot_sources
from iota.config.settings import Config, resolve_model
from iota.config.entries import AgentConfig, ModelConfig, ProviderConfig
from iota.messages import COMPACTION, Message, Usage
from iota.sessions.bundle import Session
from iota.tools import recall as recall_module
from iota.errors import ToolError
from iota.tools.recall import Recall
from tests.support.turns import Call, write_turn


def start_bot(name: str, project: Path) -> BotStart:
    entry = AgentConfig(name=name, mode="bot", model="m")
    config = Config(providers={"local": ProviderConfig(name="local", type="openai")},
                    models={"m": ModelConfig(name="m", provider="local", id="m-1")}, agents={name: entry})
    return open_bot(name, model=resolve_model(config, entry), project_root=project)


@pytest.fixture
def bot(tmp_path):
    start = start_bot("coder", tmp_path)
    yield start
    start.close()


def recall_of(start: BotStart) -> tuple[Recall, Journal]:
    journal = Journal.open(start.dir, bot_sources(start.dir))
    journal.catch_up()
    return Recall(journal), journal


async def test_search_finds_a_word_that_was_only_in_a_compacted_away_tool_result(bot):
    session = bot.session
    write_turn(session, "check the deploy logs", calls=[Call("shell", {"command": "tail deploy.log"},
                                                             result="line 1\nrelease codeword: zanzibar\nline 3")],
               reply="The deploy went through.")
    write_turn(session, "and now the tests", reply="All green.")
    session.append([Message(COMPACTION, "They checked the deploy and the tests.", compacted_through=5,
                            usage=Usage(1, 1))])
    write_turn(session, "what next?", reply="Nothing.")
    session.close()
    view = Session.open(session.dir).view.messages
    assert not any("zanzibar" in m.content for m in view)  # out of the model's sight
    tool, journal = recall_of(bot)
    result = await tool.run({"action": "search", "query": "zanzibar"})
    assert result.content.startswith('Matches for "zanzibar" (best first):')
    assert "record 4 · tool result (shell)" in result.content
    assert "release codeword: **zanzibar**" in result.content
    whole = await tool.run({"action": "read", "from": 4, "count": 1})
    assert "#4 result of shell: line 1\nrelease codeword: zanzibar\nline 3" in whole.content
    journal.close()


async def test_read_pages_through_a_session_message_by_message(bot):
    for n in range(8):
        write_turn(bot.session, f"message {n}", calls=[Call("read_file", {"path": f"f{n}.py"}),
                                                       Call("shell", {"command": "make"}, failed=True)],
                   reply=f"reply {n}")
    tool, journal = recall_of(bot)
    first = (await tool.run({"action": "read", "count": 4})).content.splitlines()
    assert first == [f"Session {bot.session.id}, from record 1:",
                     "#1 the user: message 0",
                     "  tools: read_file (f0.py), shell (make); 1 failed",
                     "#8 you replied: reply 0",
                     "#10 the user: message 1",
                     "  tools: read_file (f1.py), shell (make); 1 failed",
                     "#17 you replied: reply 1",
                     "More: read from=18."]
    second = (await tool.run({"action": "read", "from": 18, "count": 2})).content.splitlines()
    assert second[1:3] == ["#19 the user: message 2", "  tools: read_file (f2.py), shell (make); 1 failed"]
    assert (await tool.run({"action": "read", "from": 10_000})).content.startswith("Nothing to read")
    journal.close()


async def test_a_bot_reads_only_its_own_sessions(tmp_path, bot):
    # The attack: the model names sessions that are not its bot's — another bot's, a chat's, an
    # agent's — or something that is not a session id at all; and searches for their words.
    write_turn(bot.session, "our own plan", reply="ok")
    other = start_bot("spy-target", tmp_path)
    write_turn(other.session, "the other bot's secret: pineapple", reply="noted pineapple")
    chat = Session.create(paths.sessions_dir(), provider="fake", model="m", agent="default")
    write_turn(chat, "a private chat about pineapple")
    agent = Session.create(paths.project_sessions_dir(tmp_path), provider="fake", model="m", agent="helper")
    write_turn(agent, "an agent session about pineapple")
    Journal.open(other.dir, bot_sources(other.dir)).catch_up()  # the other bot's journal exists and is full
    tool, journal = recall_of(bot)
    assert (await tool.run({"action": "search", "query": "pineapple"})).content == \
        'No match for "pineapple" in your history.'
    for session in (other.session.id, chat.id, agent.id, "../spy-target", str(other.session.dir), "*", ""):
        if not session:
            continue
        with pytest.raises(ToolError, match="is not one of yours"):
            await tool.run({"action": "read", "session": session})
    listed = (await tool.run({"action": "sessions"})).content
    assert bot.session.id in listed and other.session.id not in listed and chat.id not in listed
    assert listed.startswith("Your sessions (1):")
    journal.close()
    other.close()
    chat.close()
    agent.close()


async def test_undone_records_are_found_only_when_asked_for(bot):
    write_turn(bot.session, "keep this", reply="kept")
    write_turn(bot.session, "the mongoose plan", reply="mongoose done")
    bot.session.rewind(next(o for o, text in bot.session.rewind_points() if text == "the mongoose plan"), "x")
    tool, journal = recall_of(bot)
    assert (await tool.run({"action": "search", "query": "mongoose"})).content.startswith("No match")
    found = (await tool.run({"action": "search", "query": "mongoose", "include_undone": True})).content
    assert "undone by /rewind" in found and "journal entry" not in found  # its entry is gone
    assert "mongoose" not in (await tool.run({"action": "read"})).content
    assert "(undone by /rewind)" in (await tool.run({"action": "read", "include_undone": True})).content
    journal.close()


async def test_results_are_capped_and_say_how_to_narrow(bot, monkeypatch):
    monkeypatch.setattr(recall_module, "OUTPUT_CAP", 600)
    for n in range(12):
        write_turn(bot.session, f"report {n} on the lighthouse " + "detail " * 30, reply="lighthouse noted")
    tool, journal = recall_of(bot)
    result = (await tool.run({"action": "search", "query": "lighthouse", "limit": 3})).content
    assert "More hits than shown: add words to narrow the search, or raise limit" in result
    capped = (await tool.run({"action": "search", "query": "lighthouse", "limit": 50})).content
    assert len(capped.encode()) <= 600 + 200
    assert "Output capped: add words to narrow the search, or lower limit." in capped
    journal.close()


async def test_journal_entries_are_found_too(bot):
    write_turn(bot.session, "refactor the parser", calls=[Call("edit_file", {"path": "src/parser.py"})],
               reply="Split the parser in two.")
    tool, journal = recall_of(bot)
    result = (await tool.run({"action": "search", "query": "parser"})).content
    assert "· journal entry" in result and "· the user's message" in result
    journal.close()


async def test_bad_arguments_are_results_the_model_reads(bot):
    tool, journal = recall_of(bot)
    with pytest.raises(ToolError, match='action must be "search", "sessions" or "read"'):
        await tool.run({"action": "delete"})
    with pytest.raises(ToolError, match="search needs a query"):
        await tool.run({"action": "search", "query": "  "})
    assert tool.approval({"action": "search"}) is None  # it only reads: no approval
    journal.close()
