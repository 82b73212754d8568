"""The input actor: what the person does at the composer, turned into lane jobs and exits.

    Submit("/word …")  a known slash command → its job on the lane; an unknown /word is a message
    Submit(text)       a user turn, queued behind whatever runs
    Interrupt          Ctrl+C: cancel the running job; at an idle prompt, leave with 130
    CancelInnermost    Esc: cancel the stream or the shell call only
    Leave(code)        Ctrl+D: leave with `code`
    Focus(focused)     the terminal gained or lost focus: the host's attention pings follow it
"""

from __future__ import annotations

import re
from typing import Callable

import trio

from actors.events import CancelInnermost, Focus, Interrupt, Leave, Submit
from actors.lane import Command, Lane, UserMessage
from actors.notifier import HostLink
from iota.errors import EXIT_INTERRUPTED



async def run(inputs: trio.MemoryReceiveChannel, lane: Lane, commands: dict, leave: Callable[[int], None],
              link: HostLink, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """`commands` maps a slash command's name to (help, body), `async def body(lane, argument)`;
    `/quit` is answered here, since leaving must not wait behind the queue."""
    task_status.started()
    async for item in inputs:
        if isinstance(item, Submit):
            name, argument = command_and_argument(item.text)
            if name == "/quit":
                leave(0)
            elif name.startswith("/") and name[1:] in commands:
                _, body = commands[name[1:]]
                lane.submit(Command(name[1:], argument, body))
            elif item.text.strip():
                lane.submit(UserMessage(item.text))
        elif isinstance(item, Interrupt):
            if not lane.interrupt():
                leave(EXIT_INTERRUPTED)
        elif isinstance(item, CancelInnermost):
            lane.cancel_innermost()
        elif isinstance(item, Leave):
            leave(item.code)
        elif isinstance(item, Focus):
            link.focus(item.focused)


def command_and_argument(text: str) -> tuple[str, str]:
    """`/name` and its argument: the first word, up to a space or a new line, and the rest (a
    draft for `/edit` keeps its lines)."""
    name, *rest = text.split(maxsplit=1) or [""]
    return name, rest[0].strip() if rest else ""
