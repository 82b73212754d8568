"""Background helpers (`delegate` with `background: true`) in a real chat lane against the fake
model server: the call returns at once with an id, the result reaches the conversation as a
notice when the helper ends, `/jobs` lists it while it runs, Ctrl+C cancels it and leaves no task,
and a chat that cannot deliver a result later (headless, a helper's own tools) refuses it."""

from __future__ import annotations

import json
import math
from contextlib import asynccontextmanager

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from actors.events import Notice, TurnEnded
from actors.lane import Lane
from actors.notifier import open_host_link
from actors.supervisor import _forward_job_notes
from iota.chat import prepare_chat
from iota.config import settings
from iota.sessions.conversation import Conversation
from tests.actors.test_delegate import configure, helper_requests, project, results, who  # noqa: F401
from tests.actors.test_lane import Chat
from tests.support.fake_model import Gate, fake_model, tool_call  # noqa: F401  (the fixture)

BOUND = 10


def in_background(task: str, gate: Gate | None = None):
    """The lead starts the reviewer in the background, then answers each later message in a word;
    the reviewer's reply waits for `gate`."""
    def respond(body: dict) -> dict:
        if who(body) == "reviewer":
            return {"text": "reviewer reporting: a.py prints a.", "pieces": 2, **({"gate": gate} if gate else {})}
        users = [m for m in body["messages"] if m["role"] == "user"]
        if len(users) == 1 and not results(body):
            return {"tool_calls": [tool_call("delegate", {"agent": "reviewer", "task": task, "background": True},
                                             id="d-bg")]}
        return {"text": "Noted."}
    return respond


@pytest.fixture
def open_chat(project):  # noqa: F811
    @asynccontextmanager
    async def open_(*, notices: bool = True):
        loaded = settings.load(project)
        setup = prepare_chat(loaded, settings.find_agent(loaded, "lead"), project)
        session = setup.new_session()
        conversation = Conversation.from_session(session)
        send, receive = trio.open_memory_channel(math.inf)
        notes_send, notes_receive = trio.open_memory_channel(math.inf)
        link, _ = open_host_link()
        try:
            async with setup.open_tools(notes_send if notices else None) as toolbox:
                lane = Lane(setup, conversation, toolbox, send, link)
                async with trio.open_nursery() as nursery:
                    await nursery.start(lane.run)
                    nursery.start_soon(_forward_job_notes, notes_receive, lane)   # the supervisor's forwarding
                    yield Chat(lane, setup, conversation, receive)
                    nursery.cancel_scope.cancel()
        finally:
            if setup._provider is not None:
                await setup._provider.aclose()
            session.close()

    return open_


async def until_requests(model, name: str, count: int) -> None:
    with trio.fail_after(BOUND):
        while len(helper_requests(model, name)) < count:
            await trio.sleep(0.01)


async def test_a_background_helper_returns_at_once_and_its_result_comes_as_a_notice(open_chat, fake_model):
    gate = Gate()
    fake_model.respond_with(in_background("Review a.py.", gate))
    async with open_chat() as chat:
        chat.submit("review a.py in the background")
        await chat.until(TurnEnded)                     # the turn ended while the helper is held
        await until_requests(fake_model, "reviewer", 1)
        started = results(helper_requests(fake_model, "lead")[1].body)[0]
        assert started.startswith("helper h1 (reviewer) started in the background")
        assert [work.id for work in chat.lane.toolbox.helpers.running()] == ["h1"]
        chat.command("jobs")                            # listed beside the shell's jobs
        listed = await chat.until(lambda e: isinstance(e, Notice) and "helper h1 reviewer" in e.text)
        assert "Review a.py." in listed[-1].text
        gate.open()
        ended = await chat.until(lambda e: isinstance(e, Notice) and "[background helper h1" in e.text)
        assert ended[-1].text == "[background helper h1 (reviewer) ended] reviewer reporting: a.py prints a."
        with trio.fail_after(BOUND):   # the notice is a job of the lane: kept once the lane gets to it
            while not any("[background helper h1" in m.content for m in chat.conversation.messages if m.notice):
                await trio.sleep(0.01)
        kept = [m.content for m in chat.conversation.messages if m.notice]
        assert any(text.startswith("[background helper h1 (reviewer) ended] reviewer reporting: a.py prints a.\n"
                                   "[reviewer: 1 turn") for text in kept)
        chat.submit("and now?")                         # the model reads the result with the next message
        await chat.until(TurnEnded)
        assert "reviewer reporting: a.py prints a." in json.dumps(helper_requests(fake_model, "lead")[-1].body)
        assert chat.lane.toolbox.helpers.running() == []


async def test_ctrl_c_cancels_a_background_helper_and_leaves_no_task(open_chat, fake_model):
    fake_model.respond_with(in_background("Review a.py.", Gate()))   # never released: it runs until cancelled
    async with open_chat() as chat:
        await wait_all_tasks_blocked()
        idle = trio.lowlevel.current_statistics().tasks_living
        chat.submit("review a.py in the background")
        await chat.until(TurnEnded)
        await until_requests(fake_model, "reviewer", 1)
        assert trio.lowlevel.current_statistics().tasks_living > idle
        chat.lane.interrupt()                           # Ctrl+C, with no turn running
        ended = await chat.until(lambda e: isinstance(e, Notice) and "[background helper h1" in e.text)
        assert "cancelled" in ended[-1].text
        with trio.fail_after(BOUND):
            await chat.lane.wait_idle()
            await trio.to_thread.run_sync(lambda: [r.wait_done() for r in fake_model.requests])
        await wait_all_tasks_blocked()
        assert trio.lowlevel.current_statistics().tasks_living == idle   # no helper task is left
    (request,) = helper_requests(fake_model, "reviewer")
    assert request.disconnected


async def test_leaving_the_chat_cancels_a_background_helper(open_chat, fake_model):
    fake_model.respond_with(in_background("Review a.py.", Gate()))
    async with open_chat() as chat:
        chat.submit("review a.py in the background")
        await chat.until(TurnEnded)
        await until_requests(fake_model, "reviewer", 1)
    (request,) = helper_requests(fake_model, "reviewer")
    with trio.fail_after(BOUND):
        await trio.to_thread.run_sync(request.wait_done)
    assert request.disconnected                         # nothing outlives the chat


async def test_a_chat_that_cannot_deliver_later_refuses_background(open_chat, fake_model):
    fake_model.respond_with(in_background("Review a.py."))
    async with open_chat(notices=False) as chat:        # a headless run: nobody reads job notices
        chat.submit("review a.py in the background")
        await chat.until(TurnEnded)
    assert helper_requests(fake_model, "reviewer") == []
    lead = helper_requests(fake_model, "lead")
    assert "background" not in json.dumps(lead[0].body["tools"])   # not offered
    assert "background helpers need an interactive chat" in results(lead[1].body)[0]
