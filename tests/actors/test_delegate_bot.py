"""Delegated work in a bot (actors.journal with the real lane, the fake model server, a real bot
directory): each helper run is an entry of the bot's journal, read from the helper's child session,
and a rebuilt journal has it too."""

from __future__ import annotations

import math
from contextlib import ExitStack, asynccontextmanager

import pytest
import trio

from actors.events import TurnEnded
from actors.lane import Lane
from actors.notifier import open_host_link
from iota.bots.bot import open_bot
from iota.bots.journal import Journal, bot_sources
from iota.chat import prepare_chat
from iota.config import settings
from iota.sessions.conversation import Conversation
from tests.actors.test_delegate import delegating
from tests.actors.test_lane import Chat
from tests.support.fake_model import fake_model  # noqa: F401  (the fixture)
from ui.chat_parts import _open_journal

BOUND = 10

CONFIG = """\
providers:
  fake: {{type: openai, url: '{url}', key: test-key}}
models:
  m: {{provider: fake, id: fake-model, context_window: 200k}}
agents:
  lead:
    mode: bot
    model: m
    system: You are the lead.
    tools:
      code: {{}}
      delegate: {{agents: [reviewer]}}
  reviewer:
    model: m
    system: You are the reviewer.
    tools:
      code: {{read_only: true}}
"""


@pytest.fixture
def open_bot_chat(tmp_path, fake_home, fake_model):  # noqa: F811
    (fake_home / ".iota.yaml").write_text(CONFIG.format(url=fake_model.openai_url))
    project = tmp_path / "project"
    project.mkdir()

    @asynccontextmanager
    async def open_():
        loaded = settings.load(project)
        setup = prepare_chat(loaded, settings.find_agent(loaded, "lead"), project)
        start = open_bot("lead", model=setup.model, project_root=setup.project_root)
        cleanup = ExitStack()
        keeper = _open_journal(setup, start, cleanup, [])   # the chat's own wiring of the journal
        conversation = Conversation.from_session(start.session)
        send, receive = trio.open_memory_channel(math.inf)
        link, _ = open_host_link()
        try:
            with cleanup:
                async with setup.open_tools() as toolbox:
                    lane = Lane(setup, conversation, toolbox, send, link)
                    lane.before_send = [keeper.before_send]
                    async with trio.open_nursery() as nursery:
                        await nursery.start(lane.run)
                        await nursery.start(keeper.run, lane)
                        chat = Chat(lane, setup, conversation, receive)
                        chat.keeper, chat.start = keeper, start
                        yield chat
                        nursery.cancel_scope.cancel()
        finally:
            if setup._provider is not None:
                await setup._provider.aclose()
            start.close()

    return open_


async def settled(chat: Chat) -> list[tuple[str, str, str]]:
    """(session, asked, outcome) of each journal entry, once it has caught up."""
    with trio.fail_after(BOUND):
        await chat.lane.wait_idle()
        await chat.keeper.catch_up(chat.lane)
    return [(s.session, s.entry.asked, s.entry.outcome) for s in chat.keeper.journal.entries(order="e.id")]


async def test_each_helper_run_of_a_bot_is_an_entry_of_its_journal(open_bot_chat, fake_model):
    fake_model.respond_with(delegating(("reviewer", "Review a.py and say if it prints.")))
    async with open_bot_chat() as chat:
        chat.submit("get a.py reviewed")
        await chat.until(TurnEnded)
        entries = await settled(chat)
        bot_session = chat.start.session.id
        helper = [session for session, _, _ in entries if session != bot_session]
        assert len(helper) == 1
        assert (helper[0], "Review a.py and say if it prints.", "finished") in entries
        assert (bot_session, "get a.py reviewed", "finished") in entries
        # The block the model reads names the helper's session, as for any other session's entry.
        rendered = [s.render(bot_session) for s in chat.keeper.journal.entries()]
        assert any(f"[session {helper[0]} record" in line for line in rendered)
    # A journal made again from the logs (iota bots reindex) finds the helper's session too.
    again = Journal.open(chat.start.dir, bot_sources(chat.start.dir))
    try:
        again.catch_up()
        assert {s.session for s in again.entries()} == {bot_session, helper[0]}
    finally:
        again.close()
