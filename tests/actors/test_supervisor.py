"""The supervisor (actors.supervisor.run_chat) with a scripted face: an async function that reads
the events and sends the inputs, as the urwid app does. The chat runs against the fake model
server with a real ChatSetup from a config in the tmp HOME.

Signals are sent to this very process. trio's signal receiver restores the handler it found, so
each signal test first installs a harmless one: a SIGTERM that arrived before the supervisor
listened would otherwise end the whole test run.
"""

from __future__ import annotations

import json
import os
import signal

import pytest
import trio

from actors import supervisor
from actors.commands.registry import COMMANDS
from actors.events import Card, Hint, Interrupt, Leave, SlashCommands, Status, Submit, TextDelta, TurnEnded, UserEcho
from actors.supervisor import ChatParts, run_chat
from iota import __version__
from iota.config import settings
from iota.chat import prepare_chat
from iota.sessions.conversation import Conversation
from iota.sessions.bundle import Session
from tests.support.fake_model import Gate, fake_model  # noqa: F401  (the fixture)
from tests.support.logs import conversation_records

BOUND = 10  # seconds: a bound on a hang, never a measurement


@pytest.fixture
def held_signals():
    """Harmless handlers for SIGINT, SIGTERM and SIGHUP while the test runs; what they caught
    (only a signal that came while the supervisor was not listening) is the fixture's value."""
    caught: list[int] = []
    previous = {signum: signal.signal(signum, lambda signum, frame: caught.append(signum))
                for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    yield caught
    for signum, handler in previous.items():
        signal.signal(signum, handler)


@pytest.fixture
def make_parts(project):
    def make(conversation: Conversation | None = None, commands: dict | None = None) -> ChatParts:
        loaded = settings.load(project)
        setup = prepare_chat(loaded, settings.find_agent(loaded, "chat"), project)
        conversation = conversation if conversation is not None else Conversation(instructions=setup.instructions)
        label = f"session {conversation.session.id}" if conversation.session else "not saved"
        card = Card(version=__version__, mode=setup.mode, session=label, host=None, directory=str(project))
        commands = dict(COMMANDS if commands is None else commands)
        opening = [SlashCommands(tuple((f"/{name}", help) for name, (help, _) in commands.items()))]
        return ChatParts(setup=setup, conversation=conversation, card=card, commands=commands, opening=opening)

    return make


class Face:
    """A scripted face: `script(face)` drives it; afterwards it keeps reading until cancelled.
    `seen` holds every event it read, `cancelled` whether the supervisor cancelled it."""

    def __init__(self, script):
        self.script = script
        self.seen: list = []
        self.cancelled = trio.Event()
        self.events: trio.MemoryReceiveChannel | None = None
        self.inputs: trio.MemorySendChannel | None = None
        self.turn: list = []

    async def __call__(self, events: trio.MemoryReceiveChannel, inputs: trio.MemorySendChannel) -> None:
        self.events, self.inputs = events, inputs
        try:
            await self.script(self)
            async for event in events:
                self.seen.append(event)
        except trio.Cancelled:
            self.cancelled.set()
            raise

    async def until(self, match) -> list:
        accepts = (lambda e: isinstance(e, match)) if isinstance(match, type) else match
        got = []
        async for event in self.events:
            self.seen.append(event)
            got.append(event)
            if accepts(event):
                return got
        raise AssertionError(f"the events ended before a match; got {got}")

    async def send(self, item) -> None:
        await self.inputs.send(item)


async def run(parts: ChatParts, face: Face) -> int:
    """Run the chat; close the provider it made (the supervisor leaves that to the process)."""
    try:
        with trio.fail_after(BOUND):
            return await run_chat(parts, face)
    finally:
        if parts.setup._provider is not None:
            await parts.setup._provider.aclose()


def records(session: Session) -> list[dict]:
    """The conversation records of the log, the turn bookkeeping left out."""
    log = session.dir / "messages.jsonl"
    return conversation_records([json.loads(line) for line in log.read_text().splitlines()] if log.exists() else [])


# ---- the way in ---------------------------------------------------------------------------------


async def test_the_card_is_the_first_event_then_the_opening(make_parts):
    async def script(face: Face) -> None:
        await face.until(Status)  # the lane is up
        await face.send(Leave(0))

    parts = make_parts()
    face = Face(script)
    assert await run(parts, face) == 0
    assert face.seen[0] == parts.card
    assert face.seen[1] == parts.opening[0]
    assert isinstance(face.seen[1], SlashCommands)


async def test_a_submitted_message_gets_its_reply(make_parts, fake_model, session):
    fake_model.reply("Hello from the fake model.")

    async def script(face: Face) -> None:
        await face.until(Card)
        await face.send(Submit("hi there"))
        face.turn = await face.until(TurnEnded)
        await face.send(Leave(0))

    face = Face(script)
    assert await run(make_parts(Conversation(session=session)), face) == 0
    assert UserEcho("hi there") in face.turn
    assert "".join(e.text for e in face.turn if isinstance(e, TextDelta)) == "Hello from the fake model."
    assert face.turn[-1] == TurnEnded()
    assert records(session) == [{"role": "user", "content": "hi there"},
                                {"role": "assistant", "content": "Hello from the fake model.",
                                 "usage": {"in": 10, "out": 5, "total": 15}}]


async def test_an_unknown_slash_word_is_sent_as_a_message(make_parts, fake_model):
    fake_model.reply("ok")

    async def script(face: Face) -> None:
        await face.until(Card)
        await face.send(Submit("/nonsense please"))
        await face.until(TurnEnded)
        await face.send(Leave(0))

    assert await run(make_parts(), Face(script)) == 0
    assert fake_model.requests[0].body["messages"][-1]["content"] == "/nonsense please"


# ---- the way out --------------------------------------------------------------------------------


async def test_interrupt_twice_at_an_idle_prompt_leaves_with_130(make_parts):
    async def script(face: Face) -> None:
        await face.until(Status)
        await face.send(Interrupt())
        assert (await face.until(Hint))[-1] == Hint("Press Ctrl+C again to exit", 1.0)  # the first only says how
        await face.send(Interrupt())

    assert await run(make_parts(), Face(script)) == 130


async def test_interrupt_while_a_reply_streams_cancels_it_and_the_chat_stays_open(make_parts, fake_model, session):
    gate = Gate()
    fake_model.reply("partialXreplyYmore!!!", pieces=3, gate=gate)  # pieces "partial", "XreplyY", "more!!!"
    fake_model.reply("still here")
    gate.release(1)

    async def script(face: Face) -> None:
        await face.until(Card)
        await face.send(Submit("tell me a story"))
        await face.until(TextDelta)
        await face.send(Interrupt())
        assert (await face.until(TurnEnded))[-1] == TurnEnded(interrupted=True)
        await face.send(Submit("are you there?"))
        await face.until(TurnEnded)
        await face.send(Leave(0))

    assert await run(make_parts(Conversation(session=session)), Face(script)) == 0
    assert [(r["role"], r["content"], r.get("interrupted", False)) for r in records(session)] == [
        ("user", "tell me a story", False), ("assistant", "partial", True),
        ("user", "are you there?", False), ("assistant", "still here", False)]


async def test_leave_returns_its_code(make_parts):
    async def script(face: Face) -> None:
        await face.until(Card)
        await face.send(Leave(0))

    assert await run(make_parts(), Face(script)) == 0


async def test_quit_leaves_with_0_without_queueing(make_parts):
    """`/quit` is answered by the input actor, not behind the queue: it leaves even while a
    command holds the lane."""
    started = trio.Event()

    async def hold(lane, argument):
        started.set()
        await trio.sleep_forever()

    async def script(face: Face) -> None:
        await face.until(Card)
        await face.send(Submit("/hold"))
        await started.wait()
        await face.send(Submit("/quit"))

    assert await run(make_parts(commands={**COMMANDS, "hold": ("hold the lane", hold)}), Face(script)) == 0


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"])
async def test_a_signal_interrupts_the_turn_saves_what_it_finished_and_leaves_with_130(
        make_parts, fake_model, session, held_signals, signum):
    gate = Gate()
    fake_model.reply("partialXreplyYmore!!!", pieces=3, gate=gate)
    gate.release(1)

    async def script(face: Face) -> None:
        await face.until(Card)
        await face.send(Submit("tell me a story"))
        await face.until(TextDelta)
        os.kill(os.getpid(), signum)

    face = Face(script)
    assert await run(make_parts(Conversation(session=session)), face) == 130
    assert held_signals == []  # the supervisor, not the fallback, got it
    assert records(session) == [{"role": "user", "content": "tell me a story"},
                                {"role": "assistant", "content": "partial", "interrupted": True}]
    assert TurnEnded(interrupted=True) in face.seen
    assert await trio.to_thread.run_sync(fake_model.requests[0].wait_done)
    assert fake_model.requests[0].disconnected


async def test_a_second_sigterm_does_not_wait_for_the_save(make_parts, held_signals, monkeypatch):
    """The first SIGTERM interrupts the job and waits (bounded) for its save; a second one cancels
    everything else at once. The save here is a shielded wait the test releases only after it has
    seen the face cancelled, which the supervisor would otherwise do only after the bound."""
    monkeypatch.setattr(supervisor, "SAVE_ON_EXIT_SECONDS", 1000.0)  # never reached: the second signal must act
    started, saving, release = trio.Event(), trio.Event(), trio.Event()

    async def slow_save(lane, argument):
        try:
            started.set()
            await trio.sleep_forever()
        finally:
            saving.set()
            with trio.CancelScope(shield=True), trio.move_on_after(BOUND):
                await release.wait()

    async def script(face: Face) -> None:
        await face.until(Card)
        await face.send(Submit("/slow"))
        await started.wait()
        os.kill(os.getpid(), signal.SIGTERM)
        await saving.wait()
        assert not face.cancelled.is_set()
        os.kill(os.getpid(), signal.SIGTERM)

    face = Face(script)
    parts = make_parts(commands={**COMMANDS, "slow": ("a save that takes long", slow_save)})
    async with trio.open_nursery() as nursery:
        async def release_once_the_face_is_cancelled():
            await face.cancelled.wait()
            assert not release.is_set()
            release.set()

        nursery.start_soon(release_once_the_face_is_cancelled)
        assert await run(parts, face) == 130
    assert release.is_set()
    assert held_signals == []
