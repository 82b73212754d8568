"""A bot's memory flush that fails (seed 000: the flush "sends no notification"): it is shown, the
compaction runs anyway, marked flush skipped, and the host is neither pinged nor put in the error
state — unlike a failed turn of the person's own, which does both."""

from __future__ import annotations

import json
import math

import trio

from actors.compactor import BotCompactor
from actors.events import ErrorLine, Notice, TurnEnded
from actors.lane import Command, Lane, UserMessage
from actors.notifier import Ping, SetState, open_host_link
from iota import paths, tokens
from iota.config import settings
from iota.chat import prepare_chat
from iota.compaction.summary import COMPACTED_WITHOUT_FLUSH
from iota.hosts import State
from iota.memory.layers import BotMemory
from iota.messages import ASSISTANT, USER, Message
from iota.sessions.conversation import Conversation
from iota.tools.remember import Remember
from tests.actors.test_lane import BOUND
from tests.support.fake_model import Gate
from tests.support.logs import conversation_records


async def run_flush(project, session, *, then_user_turn: bool = False, last: str = "two",
                    during=None) -> tuple[list, list]:
    """Run a bot's flush (and, optionally, a failing turn of the person's) on a lane of its own,
    the person's last message `last` and `during()` run beside it; return the events the face got
    and the messages the host got."""
    loaded = settings.load(project)
    setup = prepare_chat(loaded, settings.find_agent(loaded, "chat"), project)
    earlier = [Message(USER, "one"), Message(ASSISTANT, "One."), Message(USER, last), Message(ASSISTANT, "Two.")]
    session.append(earlier)
    conversation = Conversation(session=session)
    conversation.add(earlier)
    memory = BotMemory("coder", paths.bots_dir() / "coder", project_root=project)
    compactor = BotCompactor("coder", memory, Remember(memory.main, files=memory.files), lambda: [])
    send, receive = trio.open_memory_channel(math.inf)
    link, host_messages = open_host_link()
    events = []
    async with setup.open_tools() as toolbox:
        lane = Lane(setup, conversation, toolbox, send, link)
        async with trio.open_nursery() as nursery:
            await nursery.start(lane.run)
            if during is not None:
                nursery.start_soon(during)
            lane.submit(Command("flush", "", compactor._flush))
            if then_user_turn:
                lane.submit(UserMessage("three"))
            with trio.fail_after(BOUND):
                async for event in receive:
                    events.append(event)
                    if isinstance(event, Notice) and "without a memory flush" in event.text and not then_user_turn:
                        break
                    if isinstance(event, Notice) and event.text.startswith("Context compacted") and during:
                        break
                    if then_user_turn and isinstance(event, TurnEnded) and event.failed:
                        break
                await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
    await setup.provider().aclose()
    link.close()
    return events, [message async for message in host_messages]


async def test_a_failed_flush_is_shown_but_calls_nobody_and_sets_no_error(project, fake_model, session):
    fake_model.fail(400, message="flush refused")       # the flush
    fake_model.reply("Summary of one and two.")          # the compaction, which runs anyway
    events, host = await run_flush(project, session)
    assert any(isinstance(e, ErrorLine) and "flush refused" in e.text for e in events)
    assert any(isinstance(e, Notice) and e.text.startswith("Context compacted") for e in events)
    assert Notice(COMPACTED_WITHOUT_FLUSH) in events
    assert not any(isinstance(e, TurnEnded) and e.failed for e in events)  # the composer offers nothing again
    assert not any(isinstance(m, Ping) for m in host)
    assert SetState(State.ERROR) not in host
    assert host[-1] == SetState(State.IDLE)
    marker = [r for r in conversation_records_of(session) if r["role"] == "compaction"]
    assert marker and marker[0]["flush_skipped"] is True


async def test_a_failed_turn_of_the_persons_own_still_pings_and_shows_the_error(project, fake_model, session):
    fake_model.fail(400, message="flush refused")
    fake_model.reply("Summary of one and two.")
    fake_model.fail(400, message="turn refused")
    events, host = await run_flush(project, session, then_user_turn=True)
    pings = [m for m in host if isinstance(m, Ping)]
    assert [p.text for p in pings] == ["iota: fake: HTTP 400 invalid_request_error: turn refused"]
    assert SetState(State.ERROR) in host


async def test_a_bot_near_its_threshold_loads_the_token_encoding_while_the_model_writes_the_summary(
        project, fake_home, fake_model, session, monkeypatch):
    # After this compaction the meter's bound (the request's overhead and a 9,000-byte kept turn)
    # reaches a 32k window's threshold, 16k: the check before the next message counts exactly.
    config = fake_home / ".iota.yaml"
    config.write_text(config.read_text().replace("context_window: 200k", "context_window: 32k"))
    monkeypatch.setattr(tokens, "_count_batch", None)
    gate = Gate()
    fake_model.reply("Nothing new.")                                     # the flush
    fake_model.reply("Summary of one and two.", pieces=2, gate=gate)      # the summary, held back
    loaded_while_writing = []

    async def release_the_summary_once_loaded() -> None:
        await trio.to_thread.run_sync(fake_model.wait_for_request, 2)
        gate.release()  # its first piece: the model has begun writing it
        with trio.move_on_after(BOUND):
            while not tokens.loaded():
                await trio.sleep(0.01)
        loaded_while_writing.append(tokens.loaded())
        gate.open()

    events, _ = await run_flush(project, session, last="two " * 3000, during=release_the_summary_once_loaded)
    assert any(isinstance(e, Notice) and e.text.startswith("Context compacted") for e in events)
    assert loaded_while_writing == [True]


async def test_a_bot_far_from_its_threshold_does_not_load_the_encoding(project, fake_model, session, monkeypatch):
    monkeypatch.setattr(tokens, "_count_batch", None)
    fake_model.reply("Nothing new.")
    fake_model.reply("Summary of one and two.")
    events, _ = await run_flush(project, session, during=trio.lowlevel.checkpoint)  # a 200k window
    assert any(isinstance(e, Notice) and e.text.startswith("Context compacted") for e in events)
    assert not tokens.loaded()


def conversation_records_of(session) -> list[dict]:
    lines = (session.dir / "messages.jsonl").read_text().splitlines()
    return conversation_records([json.loads(line) for line in lines])
