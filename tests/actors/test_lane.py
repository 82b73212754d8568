"""The turn lane (actors.lane) with a real ChatSetup from a config in the tmp HOME that points at
the fake model server: jobs in order, queueing, Ctrl+C, failed turns, approvals and Esc. The
slash commands of actors/commands/registry.py that run in this lane are tested in
tests/actors/commands/test_registry.py; `Chat`, `open_lane` and the log helpers here are shared
with the other actor tests.

The lane talks real HTTP to the fake server on 127.0.0.1, so these tests run on trio's real
clock; `fail_after` bounds only keep a broken lane from hanging the suite. Tests without any
model traffic use `wait_all_tasks_blocked` to know the lane has settled.
"""

from __future__ import annotations

import json
import math
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from actors.commands.registry import COMMANDS
from actors.events import Choose, ErrorLine, Status, TextDelta, ToolEnded, ToolStarted, TurnEnded, UserEcho
from actors.lane import Command, JobNote, Lane, UserMessage
from actors.notifier import open_host_link
from iota.messages import FAILED_NOTICE, Message
from iota.config import settings
from iota import paths
from iota.chat import ChatSetup, prepare_chat
from iota.sessions.conversation import Conversation
from iota.sessions.bundle import Session
from tests.support.fake_model import Gate, fake_model, tool_call  # noqa: F401  (the fixture)
from tests.support.logs import conversation_records

BOUND = 10  # seconds: a bound on a hang, never a measurement
DECLINED = "The user declined this call."


@dataclass
class Chat:
    lane: Lane
    setup: ChatSetup
    conversation: Conversation
    events: trio.MemoryReceiveChannel
    seen: list = field(default_factory=list)

    def submit(self, text: str) -> None:
        self.lane.submit(UserMessage(text))

    def command(self, name: str, argument: str = "") -> None:
        """What the input actor submits for `/name argument`."""
        self.lane.submit(Command(name, argument, COMMANDS[name][1]))

    async def until(self, match) -> list:
        """The events up to and including the first that `match` accepts (a type, or a predicate)."""
        accepts = (lambda e: isinstance(e, match)) if isinstance(match, type) else match
        got = []
        with trio.fail_after(BOUND):
            async for event in self.events:
                self.seen.append(event)
                got.append(event)
                if accepts(event):
                    return got
        raise AssertionError(f"the events ended before a match; got {got}")

    def pending(self) -> list:
        """Events already sent and not yet read."""
        got = []
        while True:
            try:
                event = self.events.receive_nowait()
            except trio.WouldBlock:
                return got
            self.seen.append(event)
            got.append(event)


@pytest.fixture
def open_lane(project):
    @asynccontextmanager
    async def open_(conversation: Conversation | None = None, agent: str = "chat"):
        loaded = settings.load(project)
        setup = prepare_chat(loaded, settings.find_agent(loaded, agent), project)
        conversation = conversation if conversation is not None else Conversation(instructions=setup.instructions)
        send, receive = trio.open_memory_channel(math.inf)
        link, _host_messages = open_host_link()  # nobody plays the host: posting never blocks
        try:
            async with setup.open_tools() as toolbox:
                lane = Lane(setup, conversation, toolbox, send, link)
                async with trio.open_nursery() as nursery:
                    await nursery.start(lane.run)
                    yield Chat(lane, setup, conversation, receive)
                    nursery.cancel_scope.cancel()
        finally:
            # Nothing in the chat closes the provider it made (the process exit does); a test must.
            if setup._provider is not None:
                await setup._provider.aclose()

    return open_


def records(session: Session) -> list[dict]:
    """The conversation records of the log, as a reader that ignores the turn bookkeeping sees
    them (`all_records` has everything)."""
    return conversation_records(all_records(session))


def all_records(session: Session) -> list[dict]:
    log = session.dir / "messages.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def user_texts(model, n: int) -> list[str]:
    return [m["content"] for m in model.requests[n].body["messages"] if m["role"] == "user"]


def blocking_command(log: list[str], name: str, release: trio.Event | None = None):
    async def body(lane: Lane, argument: str) -> None:
        log.append(f"start {name}")
        try:
            if release is not None:
                await release.wait()
        finally:
            log.append(f"end {name}")

    return Command(name, "", body)


# ---- one job at a time ------------------------------------------------------------------------


async def test_jobs_run_one_at_a_time_in_arrival_order(open_lane):
    log: list[str] = []
    release_a = trio.Event()
    async with open_lane() as chat:
        chat.lane.submit(blocking_command(log, "a", release_a))
        chat.lane.submit(blocking_command(log, "b"))
        chat.lane.submit(blocking_command(log, "c"))
        await wait_all_tasks_blocked()
        assert log == ["start a"]  # b and c wait behind a
        assert chat.lane.busy
        release_a.set()
        with trio.fail_after(BOUND):
            await chat.lane.wait_idle()
            while len(log) < 6:
                await wait_all_tasks_blocked()
        assert log == ["start a", "end a", "start b", "end b", "start c", "end c"]
        assert not chat.lane.busy


async def test_user_turns_run_in_order_each_seeing_the_ones_before(open_lane, fake_model):
    for reply in ("one", "two", "three"):
        fake_model.reply(reply)
    async with open_lane() as chat:
        for text in ("first", "second", "third"):
            chat.submit(text)
        events = []
        for _ in range(3):
            events += await chat.until(TurnEnded)
    story = [(type(e).__name__, getattr(e, "text", None)) for e in events if not isinstance(e, (Status, TextDelta))]
    assert story == [("UserEcho", "first"), ("TurnEnded", None), ("UserEcho", "second"), ("TurnEnded", None),
                     ("UserEcho", "third"), ("TurnEnded", None)]
    assert user_texts(fake_model, 0) == ["first"]
    assert user_texts(fake_model, 2) == ["first", "second", "third"]
    assert [m["content"] for m in fake_model.requests[2].body["messages"] if m["role"] == "assistant"] == ["one", "two"]
    assert [(m.role, m.content) for m in chat.conversation.messages] == [
        ("user", "first"), ("assistant", "one"), ("user", "second"), ("assistant", "two"),
        ("user", "third"), ("assistant", "three")]


async def test_a_message_sent_while_busy_is_queued_and_the_status_says_so(open_lane, fake_model):
    gate = Gate()
    fake_model.reply("one two three", pieces=3, gate=gate)
    fake_model.reply("the second answer")
    gate.release(1)
    async with open_lane() as chat:
        chat.submit("first question")
        await chat.until(TextDelta)
        chat.submit("second question")
        status = (await chat.until(Status))[-1]
        assert status.queued == 1
        assert status.running == "Responding"
        gate.open()
        await chat.until(TurnEnded)
        second = await chat.until(TurnEnded)
        assert UserEcho("second question") in second
        with trio.fail_after(BOUND):
            await chat.lane.wait_idle()
        chat.pending()
        statuses = [e for e in chat.seen if isinstance(e, Status)]
        assert statuses[-1].queued == 0 and statuses[-1].running == ""
    assert user_texts(fake_model, 1) == ["first question", "second question"]


async def test_a_job_note_enters_the_conversation_as_a_notice(open_lane, fake_model, session):
    fake_model.reply("noted")
    async with open_lane(Conversation(session=session)) as chat:
        chat.lane.submit(JobNote("background job b1 finished: exit 0"))
        chat.submit("and now?")
        await chat.until(TurnEnded)
    sent = [m for m in fake_model.requests[0].body["messages"] if m["role"] == "user"]
    assert [m["content"] for m in sent] == ["background job b1 finished: exit 0", "and now?"]
    assert records(session)[0] == {"role": "user", "content": "background job b1 finished: exit 0", "notice": True}


# ---- Ctrl+C -----------------------------------------------------------------------------------


async def test_interrupt_is_false_at_an_idle_lane(open_lane):
    async with open_lane() as chat:
        await wait_all_tasks_blocked()
        assert chat.lane.interrupt() is False
        assert not chat.lane.busy


@pytest.mark.parametrize("saving", [False, True], ids=["no session", "session"])
async def test_interrupt_cancels_the_running_turn_which_is_kept_with_its_partial_reply(
        open_lane, fake_model, session, saving):
    gate = Gate()
    fake_model.reply("partialXreplyYmore!!!", pieces=3, gate=gate)  # pieces "partial", "Xreply…"
    fake_model.reply("still here")
    gate.release(1)
    conversation = Conversation(session=session if saving else None)
    async with open_lane(conversation) as chat:
        chat.submit("tell me a story")
        await chat.until(TextDelta)
        assert chat.lane.interrupt() is True
        ended = (await chat.until(TurnEnded))[-1]
        assert ended == TurnEnded(interrupted=True)
        assert await trio.to_thread.run_sync(fake_model.requests[0].wait_done)
        assert fake_model.requests[0].disconnected
        with trio.fail_after(BOUND):
            await chat.lane.wait_idle()
        kept = [(m.role, m.content, m.interrupted) for m in conversation.messages]
        assert kept == [("user", "tell me a story", False), ("assistant", "partial", True)]
        # the chat goes on, and the next request carries the partial reply
        chat.submit("are you there?")
        await chat.until(TurnEnded)
    assert [(m["role"], m["content"]) for m in fake_model.requests[1].body["messages"] if m["role"] != "system"] == [
        ("user", "tell me a story"), ("assistant", "partial"), ("user", "are you there?")]
    if saving:
        assert records(session)[:2] == [{"role": "user", "content": "tell me a story"},
                                        {"role": "assistant", "content": "partial", "interrupted": True}]
        assert len(records(session)) == 4
    else:
        assert not paths.sessions_dir().exists()


async def test_interrupt_during_a_tool_call_answers_it_as_interrupted_and_saves_the_turn(
        open_lane, fake_model, session, project):
    """An approval prompt left open is a tool call in progress: Ctrl+C ends the turn, the call is
    answered as interrupted, and the log stays valid."""
    fake_model.reply("Writing.", tool_calls=[tool_call("write_file", {"path": "a.md", "content": "x"}, id="w1")])
    async with open_lane(Conversation(session=session), agent="coder") as chat:
        chat.submit("write it")
        await chat.until(Choose)
        assert chat.lane.interrupt() is True
        assert (await chat.until(TurnEnded))[-1] == TurnEnded(interrupted=True)
    assert not (project / "a.md").exists()
    saved = records(session)
    assert [r["role"] for r in saved] == ["user", "assistant", "tool"]
    assert saved[2] == {"role": "tool", "content": "interrupted: no result was recorded", "tool_call_id": "w1",
                        "tool_call_name": "write_file", "is_error": True}


async def test_interrupt_cancels_a_running_command_and_the_lane_goes_on(open_lane):
    log: list[str] = []
    async with open_lane() as chat:
        chat.lane.submit(blocking_command(log, "stuck", trio.Event()))
        chat.lane.submit(blocking_command(log, "next"))
        await wait_all_tasks_blocked()
        assert log == ["start stuck"]
        assert chat.lane.interrupt() is True
        with trio.fail_after(BOUND):
            while len(log) < 4:
                await wait_all_tasks_blocked()
        assert log == ["start stuck", "end stuck", "start next", "end next"]


# ---- a failed turn ----------------------------------------------------------------------------


async def test_a_failed_turn_shows_an_error_and_keeps_the_message_with_a_notice_of_the_failure(
        open_lane, fake_model, session):
    fake_model.reply("hello")
    fake_model.fail(400, message="bad request from the test")
    fake_model.reply("after the failure")
    async with open_lane(Conversation(session=session)) as chat:
        chat.submit("hi")
        await chat.until(TurnEnded)
        assert len(records(session)) == 2
        chat.submit("this one fails")
        events = await chat.until(TurnEnded)
        errors = [e for e in events if isinstance(e, ErrorLine)]
        assert len(errors) == 1 and "bad request from the test" in errors[0].text
        assert "\n" not in errors[0].text
        assert events[-1] == TurnEnded(failed=True)
        failure = FAILED_NOTICE.format(error=errors[0].text)
        assert [m.content for m in chat.conversation.messages] == ["hi", "hello", "this one fails", failure]
        chat.submit("try again")
        await chat.until(TurnEnded)
    # the failed message stays in the conversation, and the model is told that its turn failed
    assert user_texts(fake_model, 2) == ["hi", "this one fails", failure, "try again"]
    assert [r.get("content") for r in records(session)] == [
        "hi", "hello", "this one fails", failure, "try again", "after the failure"]


async def test_a_failed_first_turn_keeps_the_message_on_disk(open_lane, fake_model, session):
    fake_model.fail(400)
    async with open_lane(Conversation(session=session)) as chat:
        chat.submit("hi")
        assert (await chat.until(TurnEnded))[-1] == TurnEnded(failed=True)
    assert session.on_disk
    assert [(r["role"], r.get("notice", False)) for r in records(session)] == [("user", False), ("user", True)]


# ---- approvals --------------------------------------------------------------------------------


@pytest.mark.parametrize("answer, written, result", [
    (0, True, "wrote"), (2, False, DECLINED), (None, False, DECLINED),
    ((3, "use docs/ instead"), False, "denied by the person: use docs/ instead")],
    ids=["allow once", "deny", "esc", "deny and say why"])
async def test_the_approval_prompt_answers_the_gated_call(open_lane, fake_model, project, answer, written, result):
    fake_model.reply(tool_calls=[tool_call("write_file", {"path": "notes.md", "content": "# Notes\n"}, id="w1")])
    fake_model.reply("Finished.")
    async with open_lane(agent="coder") as chat:
        chat.submit("write notes")
        events = await chat.until(Choose)
        choose = events[-1]
        assert choose.title == "write_file notes.md wants to modify files — allow?"
        assert choose.options == ("Allow once", "Allow for this session (every write_file call)", "Deny",
                                  "Deny and say why")
        assert choose.line == 3
        assert ToolStarted("w1", "write_file", "notes.md") in events
        waiting = [e for e in chat.pending() if isinstance(e, Status)]
        assert waiting and waiting[-1].running == "Waiting for your answer"
        assert not (project / "notes.md").exists()  # nothing runs before the answer
        await choose.reply.send(answer)
        events = await chat.until(TurnEnded)
    assert (project / "notes.md").exists() is written
    tool_message = [m for m in fake_model.requests[1].body["messages"] if m["role"] == "tool"][0]
    assert tool_message["content"].startswith(result)
    ended = [e for e in events if isinstance(e, ToolEnded)][0]
    assert ended.is_error is (not written)


async def test_allow_for_this_session_is_not_asked_again(open_lane, fake_model, project):
    fake_model.reply(tool_calls=[tool_call("write_file", {"path": "a.md", "content": "a"}, id="w1")])
    fake_model.reply("one")
    fake_model.reply(tool_calls=[tool_call("write_file", {"path": "b.md", "content": "b"}, id="w2")])
    fake_model.reply("two")
    async with open_lane(agent="coder") as chat:
        chat.submit("write a")
        choose = (await chat.until(Choose))[-1]
        await choose.reply.send(1)
        await chat.until(TurnEnded)
        chat.submit("write b")
        events = await chat.until(TurnEnded)
    assert not any(isinstance(e, Choose) for e in events)
    assert (project / "a.md").read_text() == "a" and (project / "b.md").read_text() == "b"


async def test_the_approval_prompt_carries_the_whole_of_what_it_approves(open_lane, fake_model, project):
    fake_model.reply(tool_calls=[tool_call("write_file", {"path": "notes.md", "content": "# Notes\n"}, id="w1")])
    fake_model.reply("Finished.")
    async with open_lane(agent="coder") as chat:
        chat.submit("write notes")
        choose = (await chat.until(Choose))[-1]
        assert (choose.title, choose.detail) == ("write_file notes.md wants to modify files — allow?",
                                                 "--- a/notes.md\n+++ b/notes.md\n@@ -0,0 +1 @@\n+# Notes")
        await choose.reply.send(2)
        await chat.until(TurnEnded)


# ---- Esc --------------------------------------------------------------------------------------


async def test_esc_on_the_stream_ends_the_turn_interrupted_and_keeps_it(open_lane, fake_model, session):
    gate = Gate()
    fake_model.reply("partialXreplyYmore!!!", pieces=3, gate=gate)
    gate.release(1)
    async with open_lane(Conversation(session=session)) as chat:
        chat.lane.cancel_innermost()  # Esc with nothing running does nothing
        chat.submit("go")
        await chat.until(TextDelta)
        chat.lane.cancel_innermost()
        assert (await chat.until(TurnEnded))[-1] == TurnEnded(interrupted=True)
    assert records(session) == [{"role": "user", "content": "go"},
                                {"role": "assistant", "content": "partial", "interrupted": True}]


async def test_interrupt_during_the_question_before_a_send_still_ends_the_turn(open_lane):
    """The compaction offer asks before the message is sent; Ctrl+C on it must still close the
    turn the face opened with UserEcho (the face withdraws open questions on TurnEnded)."""
    async def offer(lane: Lane, user: Message) -> None:
        await lane.ask("Context 170k / 200k (85%) — compact before sending?", ("Compact now", "Not now"))

    async with open_lane() as chat:
        chat.lane.before_send.append(offer)
        chat.submit("a long message")
        await chat.until(Choose)
        assert chat.lane.interrupt() is True
        with trio.fail_after(BOUND):
            await chat.lane.wait_idle()
        ended = [e for e in chat.pending() if isinstance(e, TurnEnded)]
    assert ended == [TurnEnded(interrupted=True)]
