"""`python -m tests.ui.echo_chat`: the chat app fed by a scripted stand-in for the actors.

No model and no actors: each Submit comes back as UserEcho + TextDelta `echo: <text>` +
TurnEnded, so an end-to-end test can drive the real terminal app through tmux and see what it
draws. Three messages do more:

    /choose   shows the approval prompt and then a notice `answer: <index or None>`
    /slow     streams `tick ` every 50 ms with a running status, until Ctrl+C ends it interrupted
    /lines    streams 60 numbered lines at once (something to scroll)

Interrupt and CancelInnermost are answered with a notice; Leave ends the run. On the way out,
with the terminal restored, it prints every input it got, one `repr` a line, and exits with
the Leave's code.
"""

from __future__ import annotations

import os
import sys

import trio

from actors.events import (Card, CancelInnermost, Choose, Interrupt, Leave, Notice, SlashCommands, Status,
                           Submit, TextDelta, TurnEnded, UserEcho)
from ui.app import ChatApp

COMMANDS = (("/choose", "show the approval prompt"), ("/lines", "stream sixty lines"),
            ("/slow", "stream until interrupted"), ("/status", "show the status"))
APPROVAL = "write_file notes.md wants to modify files — allow?"
OPTIONS = ("Allow once", "Allow for this session", "Deny")


class ScriptedActors:
    def __init__(self) -> None:
        self.received: list[object] = []
        self.exit_code = 0
        self._slow_scope: trio.CancelScope | None = None

    async def run(self, events: trio.MemorySendChannel, inputs: trio.MemoryReceiveChannel) -> None:
        async with events, trio.open_nursery() as nursery:
            await events.send(Card(version="0.1.0", mode="chat", session="not saved", host=None,
                                   directory=os.getcwd(), warnings=("skills skipped: none found",)))
            await events.send(SlashCommands(COMMANDS))
            await events.send(Status(model="echo-model", context_used=1234, context_window=200_000,
                                     estimated=True))
            async for message in inputs:
                self.received.append(message)
                match message:
                    case Leave(code=code):
                        self.exit_code = code
                        nursery.cancel_scope.cancel()
                        return
                    case Interrupt() if self._slow_scope is not None:
                        self._slow_scope.cancel()
                    case Interrupt():
                        await events.send(Notice("interrupt received"))
                    case CancelInnermost():
                        await events.send(Notice("cancel received"))
                    case Submit(text="/choose"):
                        nursery.start_soon(self._ask, events)
                    case Submit(text="/slow"):
                        await nursery.start(self._stream_slowly, events)
                    case Submit(text="/lines"):
                        await events.send(UserEcho("/lines"))
                        await events.send(TextDelta("".join(f"line {n}\n" for n in range(1, 61))))
                        await events.send(TurnEnded())
                    case Submit(text=text):
                        await events.send(UserEcho(text))
                        await events.send(TextDelta(f"echo: {text}"))
                        await events.send(TurnEnded())

    async def _ask(self, events: trio.MemorySendChannel) -> None:
        reply_send, reply_receive = trio.open_memory_channel[int | None](1)
        await events.send(Choose(APPROVAL, OPTIONS, reply_send))
        answer = await reply_receive.receive()
        await events.send(Notice(f"answer: {answer}"))

    async def _stream_slowly(self, events: trio.MemorySendChannel, task_status=trio.TASK_STATUS_IGNORED) -> None:
        with trio.CancelScope() as self._slow_scope:
            task_status.started()
            await events.send(UserEcho("/slow"))
            await events.send(Status(model="echo-model", context_used=1234, context_window=200_000,
                                     running="Waiting for the model", running_since=trio.current_time()))
            while True:
                await events.send(TextDelta("tick "))
                await trio.sleep(0.05)
        self._slow_scope = None
        await events.send(TurnEnded(interrupted=True))
        await events.send(Status(model="echo-model", context_used=1234, context_window=200_000))


async def main() -> int:
    actors = ScriptedActors()
    events_send, events_receive = trio.open_memory_channel[object](0)
    inputs_send, inputs_receive = trio.open_memory_channel[object](16)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(actors.run, events_send, inputs_receive)
        await ChatApp().run(events_receive, inputs_send)
    for message in actors.received:
        print(repr(message))
    return actors.exit_code


if __name__ == "__main__":
    sys.exit(trio.run(main))
