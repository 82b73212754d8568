"""The input actor: what the person does at the composer, turned into lane jobs and exits.

    Submit("/word …")  a known slash command → its job on the lane; an unknown /word is a message
                       (the face asks first whether it is meant as one)
    Submit(text)       a user turn, queued behind whatever runs (it also sends a held queue)
    Interrupt          Ctrl+C: cancel the running job and hold the queue; at an idle prompt,
                       drop a held queue, else say how to leave, and leave (130) on a second
                       press within `EXIT_WINDOW_SECONDS`
    CancelInnermost    Esc: cancel the stream or the shell call only
    TakeBackQueued     the last queued message goes back to the composer (`TakenBack`)
    SendQueued         send a queue held after Ctrl+C
    LoadOlder          the page of a resumed session's history before the ones shown
    Leave(code)        Ctrl+D: leave with `code`
    Focus(focused)     the terminal gained or lost focus: the host's attention pings follow it
    ListFiles          `@` typed: the project's files go to the face (actors.mentions)
    CycleMode          Shift+Tab: the next permission mode, at once (actors.modes)
"""

from __future__ import annotations

from typing import Callable

import trio

from actors.commands import command_and_argument
from actors.events import (CancelInnermost, CycleMode, Focus, Hint, Interrupt, Leave, ListFiles, LoadOlder,
                           SendQueued, Submit, TakeBackQueued, TakenBack)
from actors.lane import Command, Lane
from actors.modes import next_mode, switch_mode
from actors.notifier import HostLink
from iota.errors import EXIT_INTERRUPTED

EXIT_WINDOW_SECONDS = 1.0
PRESS_AGAIN = "Press Ctrl+C again to exit"


async def run(inputs: trio.MemoryReceiveChannel, lane: Lane, commands: dict, leave: Callable[[int], None],
              link: HostLink, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """`commands` maps a slash command's name to (help, body), `async def body(lane, argument)`;
    `/quit` is answered here, since leaving must not wait behind the queue."""
    task_status.started()
    last_idle_interrupt = -EXIT_WINDOW_SECONDS
    async for item in inputs:
        if isinstance(item, Submit):
            name, argument = command_and_argument(item.text)
            if name == "/quit":
                leave(0)
            elif name.startswith("/") and name[1:] in commands:
                _, body = commands[name[1:]]
                lane.submit(Command(name[1:], argument, body, typed=True))
            elif item.text.strip():
                await lane.submit_message(item.text)
        elif isinstance(item, Interrupt):
            if lane.interrupt():
                continue
            if lane.inbox.messages():
                dropped = lane.drop_queued()
                await lane.kept.save()  # dropped on disk too before the chat says so
                lane.notice(f"Dropped {dropped} queued message{'s' if dropped != 1 else ''}")
            elif trio.current_time() - last_idle_interrupt < EXIT_WINDOW_SECONDS:
                leave(EXIT_INTERRUPTED)
            else:
                last_idle_interrupt = trio.current_time()
                lane.emit(Hint(PRESS_AGAIN, EXIT_WINDOW_SECONDS))
        elif isinstance(item, CancelInnermost):
            lane.cancel_innermost()
        elif isinstance(item, TakeBackQueued):
            text = lane.take_back_queued()
            if text is not None:  # a draft in the composer again; like any draft, not kept on disk
                lane.emit(TakenBack(text))
                await lane.kept.save()
        elif isinstance(item, SendQueued):
            lane.send_queued()
        elif isinstance(item, LoadOlder):
            if lane.history is not None:
                await lane.history.send_older(lane.emit)
        elif isinstance(item, Leave):
            leave(item.code)
        elif isinstance(item, Focus):
            link.focus(item.focused)
        elif isinstance(item, CycleMode):
            await switch_mode(lane, next_mode(lane.approvals.mode))
        elif isinstance(item, ListFiles) and lane.listing is not None:
            lane.listing.want()
