"""A conversation opened from the tail of a never-compacted log (iota.sessions.log) is offered
compaction at once: a bot queues its flush and compaction at start, a chat asks before anything
is typed; one opened whole and under the threshold is left alone."""

from __future__ import annotations

import math

import pytest
import trio

from actors.compactor import BotCompactor, CompactionOffer
from actors.lane import Command, Lane
from actors.notifier import open_host_link
from iota import paths
from iota.chat import prepare_chat
from iota.config import settings
from iota.memory.layers import BotMemory
from iota.messages import ASSISTANT, USER, Message, Usage
from iota.sessions.conversation import Conversation
from iota.tools.remember import Remember


@pytest.mark.parametrize("left_out, queued", [(0, []), (120, ["flush"])])
async def test_a_bot_opened_from_its_tail_compacts_at_start(project, session, left_out, queued):
    lane, stop = await _lane(project, session, left_out)
    memory = BotMemory("coder", paths.bots_dir() / "coder", project_root=project)
    compactor = BotCompactor("coder", memory, Remember(memory.main, files=memory.files), lambda: [])
    compactor.check(lane)
    assert [job.name for job in lane.inbox if isinstance(job, Command)] == queued
    await stop()


@pytest.mark.parametrize("left_out, queued", [(0, []), (120, ["offer compaction"])])
async def test_a_chat_opened_from_its_tail_is_asked_at_start(project, session, left_out, queued):
    lane, stop = await _lane(project, session, left_out)
    CompactionOffer().offer_at_open(lane)
    assert [job.name for job in lane.inbox if isinstance(job, Command)] == queued
    await stop()


async def test_a_chat_opened_whole_but_past_its_threshold_is_asked_at_start(project, session):
    """Nothing was left out, but the last request already filled the window: asked before anything
    is typed, not only at the first send."""
    lane, stop = await _lane(project, session, 0)
    lane.meter.settle(Usage(lane.setup.model.context_window, 10))
    CompactionOffer().offer_at_open(lane)
    assert [job.name for job in lane.inbox if isinstance(job, Command)] == ["offer compaction"]
    await stop()


async def test_a_tail_of_one_round_is_not_offered_a_compaction_that_cannot_happen(project, session):
    """The last round alone is longer than the tail: there is nothing older to summarise, so
    neither the chat asks (its "Compact now" would do nothing) nor a bot spends a flush turn."""
    lane, stop = await _lane(project, session, 120, rounds=1)
    CompactionOffer().offer_at_open(lane)
    memory = BotMemory("coder", paths.bots_dir() / "coder", project_root=project)
    BotCompactor("coder", memory, Remember(memory.main, files=memory.files), lambda: []).check(lane)
    assert [job.name for job in lane.inbox if isinstance(job, Command)] == []
    await stop()


async def _lane(project, session, left_out: int, rounds: int = 2):
    """A lane over a short conversation of `rounds` rounds (far under the threshold) that left
    out `left_out` records, not yet running its inbox; and how to stop it."""
    loaded = settings.load(project)
    setup = prepare_chat(loaded, settings.find_agent(loaded, "chat"), project)
    earlier = [message for n in range(rounds) for message in (Message(USER, f"ask {n}"), Message(ASSISTANT, f"Answer {n}."))]
    session.append(earlier)
    conversation = Conversation(session=session, left_out=left_out)
    conversation.add(earlier)
    send, _ = trio.open_memory_channel(math.inf)
    link, _ = open_host_link()
    tools = setup.open_tools()
    toolbox = await tools.__aenter__()
    lane = Lane(setup, conversation, toolbox, send, link)

    async def stop() -> None:
        await tools.__aexit__(None, None, None)
        await setup.provider().aclose()
        link.close()

    return lane, stop


async def test_a_chat_that_switches_to_a_session_opened_from_its_tail_is_asked_at_once(project, session, monkeypatch):
    """`/session` to a conversation too long to send asks as a resume does, before anything is typed."""
    from iota.sessions import bundle as bundle_module
    from iota.sessions.bundle import Session

    lane, stop = await _lane(project, session, 0)
    lane.on_switch = [CompactionOffer().offer_at_open]
    with Session.create(paths.sessions_dir(), provider="fake", model="fake-model") as other:
        for n in range(40):
            other.append([Message(USER, f"question {n} " + "x" * 500), Message(ASSISTANT, f"answer {n}")])
    monkeypatch.setattr(bundle_module, "TAIL_BYTES", 5_000)
    opened = Session.open(other.dir)
    try:
        assert opened.view.left_out > 0
        await lane.switch_session(opened)
        assert lane.conversation.left_out == opened.view.left_out
        assert [job.name for job in lane.inbox if isinstance(job, Command)] == ["offer compaction"]
    finally:
        opened.close()
        await stop()
