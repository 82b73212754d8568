"""The supervisor: one nursery for the whole chat, its channels, and the way out.

    face (urwid app) ◄── events ── lane, supervisor
    face ── inputs ──► input actor ──► lane (serial jobs) ──► conversation / session
    shell jobs ── notices ──► lane (as notices)
    a bot's scheduler ── due runs ──► lane (as quiet turns)
    signals (SIGINT, SIGTERM, SIGHUP) ──► interrupt the turn, save it, leave with 130

The face is started first, so the screen is up before anything slow runs (the Anthropic SDK
import, the sandbox probe); the lane starts taking jobs once the tools are ready. Leaving —
Ctrl+D, /quit, Ctrl+C at an idle prompt, a signal — lets a running turn be interrupted and saved
(bounded), then cancels the nursery: every task ends, every background job is killed, and the
face restores the terminal.
"""

from __future__ import annotations

import math
import signal
from dataclasses import dataclass, field
from functools import partial
from typing import Awaitable, Callable

import trio

from actors import input as input_actor
from actors import notifier
from actors.ask import ask_through
from actors.notifier import open_host_link
from actors.events import Card, Notice
from actors.helpers import deliver
from actors.lane import JobNote, Lane
from iota.delegation import HelperNotice
from iota.chat import ChatSetup
from iota.errors import EXIT_INTERRUPTED
from iota.sessions.conversation import Conversation
from iota.hosts import Host, detect

# How long a leaving chat waits for an interrupted turn to be saved.
SAVE_ON_EXIT_SECONDS = 5.0

Face = Callable[[trio.MemoryReceiveChannel, trio.MemorySendChannel], Awaitable[None]]


@dataclass
class ChatParts:
    setup: ChatSetup
    conversation: Conversation
    card: Card
    commands: dict = field(default_factory=dict)
    # Events to show right after the card: the slash commands, the echo of a resumed session.
    opening: list = field(default_factory=list)
    # Blocking work to run behind the first screen (the Anthropic SDK import).
    background: list[Callable[[], object]] = field(default_factory=list)
    # Lane hooks: before each user message is sent, after each kept turn.
    before_send: list[Callable] = field(default_factory=list)
    after_turn: list[Callable] = field(default_factory=list)
    recover: Callable | None = None                       # a bot's answer to context-too-long
    on_start: list[Callable] = field(default_factory=list)  # given the lane once it runs
    on_switch: list[Callable] = field(default_factory=list)  # given the lane after /session or /fork
    # Background actors beside the lane (the title pass, a bot's scheduler): `await nursery.start(task, lane)`.
    tasks: list[Callable] = field(default_factory=list)
    host: Host = field(default_factory=lambda: detect({}))
    # Writes the terminal's escape sequences (progress, attention pings); None writes nothing.
    write_terminal: Callable[[bytes], Awaitable[None]] | None = None
    # Told what the host is told (a bot's state.json).
    host_outlets: list[notifier.Outlet] = field(default_factory=list)


async def run_chat(parts: ChatParts, face: Face) -> int:
    """Run the chat with `face` until the person leaves; return the exit status."""
    events_send, events_receive = trio.open_memory_channel(math.inf)
    inputs_send, inputs_receive = trio.open_memory_channel(math.inf)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(face, events_receive, inputs_send)
        exit_status = ExitStatus()
        await run_chat_on(parts, events_send, inputs_receive, nursery.cancel_scope, exit_status)
        nursery.cancel_scope.cancel()
    return exit_status.code


@dataclass
class ExitStatus:
    """How the chat ended; kept outside the chat's own scope, which a second SIGTERM cancels."""

    code: int = 0


async def run_chat_on(parts: ChatParts, events_send: trio.MemorySendChannel,
                      inputs_receive: trio.MemoryReceiveChannel, everything: trio.CancelScope,
                      exit_status: ExitStatus) -> None:
    """Run the chat on the channels of a face that is already up (the terminal app draws before
    the chat's parts are loaded), until the person leaves; `exit_status` says how. `everything`
    is the scope that holds the face too: a second SIGTERM cancels it without waiting."""
    leaving = trio.Event()

    def leave(code: int) -> None:
        if not leaving.is_set():
            exit_status.code = code
            leaving.set()

    notes_send, notes_receive = trio.open_memory_channel(math.inf)
    link, link_receive = open_host_link()
    async with trio.open_nursery() as nursery:
        events_send.send_nowait(parts.card)
        notifier_done = trio.Event()

        async def run_notifier(task_status=trio.TASK_STATUS_IGNORED) -> None:
            try:
                await notifier.run(link_receive, parts.host, notify=parts.setup.agent.notify,
                                   write_terminal=parts.write_terminal, agent=parts.setup.agent.name,
                                   extra=parts.host_outlets, task_status=task_status)
            finally:
                notifier_done.set()

        await nursery.start(run_notifier)
        for event in parts.opening:
            events_send.send_nowait(event)
        for work in parts.background:
            nursery.start_soon(trio.to_thread.run_sync, work)
        parts.setup.asker = partial(ask_through, events_send, link)  # the `ask` tools' way to the person
        parts.setup.on_mcp_event = lambda text, warning: events_send.send_nowait(Notice(text, warning=warning))
        async with parts.setup.open_tools(notes_send) as toolbox:
            for warning in parts.setup.warnings:
                if warning not in parts.card.warnings:
                    events_send.send_nowait(Notice(warning, warning=True))
            lane = Lane(parts.setup, parts.conversation, toolbox, events_send, link)
            lane.before_send = parts.before_send
            lane.after_turn = parts.after_turn
            lane.recover = parts.recover
            lane.on_switch = parts.on_switch
            await nursery.start(lane.run)
            for start in parts.on_start:
                start(lane)
            for task in parts.tasks:
                await nursery.start(task, lane)
            lane.report_session()
            await nursery.start(input_actor.run, inputs_receive, lane, parts.commands, leave, link)
            nursery.start_soon(_forward_job_notes, notes_receive, lane)
            nursery.start_soon(_watch_signals, lane, leave, everything)
            await leaving.wait()
            if lane.busy:  # a signal or /quit while a turn runs: keep what it finished
                lane.interrupt(stopping=True)
                with trio.move_on_after(SAVE_ON_EXIT_SECONDS):
                    await lane.wait_idle()
        await parts.setup.aclose()
        link.close()  # the notifier says goodbye to the host (bounded) and returns
        with trio.move_on_after(notifier.EXIT_SECONDS + 1):
            await notifier_done.wait()
        nursery.cancel_scope.cancel()


async def _forward_job_notes(notes: trio.MemoryReceiveChannel, lane: Lane) -> None:
    async for note in notes:
        if isinstance(note, HelperNotice):
            deliver(lane, note)
            continue
        lane.notice(note.text.splitlines()[0] if note.text else "background job finished")
        lane.submit(JobNote(note.text))


async def _watch_signals(lane: Lane, leave: Callable[[int], None], everything: trio.CancelScope) -> None:
    """SIGINT (from outside: the terminal's Ctrl+C is a key here), SIGTERM and SIGHUP interrupt
    the turn, save what it finished and leave with 130; a second signal does not wait."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        received = 0
        async for _ in signals:
            received += 1
            leave(EXIT_INTERRUPTED)
            if received > 1:
                everything.cancel()
