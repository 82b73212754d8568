"""How a question reaches the person while a job waits for the answer.

Two kinds of question wait on the person in the middle of a turn: the lane's own selects (the
approval prompt, the compaction offer: `Lane.ask`) and the model's `confirm` / `choose` tools
(`ask_through`). Both put an event on the face's channel with a reply channel inside, and wait
on that. While they wait the host shows the chat as needing input and, when there is a ping,
calls the person back to it; once answered the chat is busy again.

`ask_through` needs only the face's event channel and the host link — both exist before the
toolbox is opened, unlike the lane, which is built around the toolbox — so the supervisor can
give the tools their asker when it opens them:

    setup.asker = partial(ask_through, events_send, link)
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import trio

from actors.events import Ask
from actors.notifier import HostLink
from iota.hosts import PingKind, State
from iota.tools.ask import Answer, Question

PING_LIMIT = 120


@contextmanager
def needing_input(host: HostLink, ping: str | None) -> Iterator[None]:
    """The span of a wait for the person: the host shows needs-input, `ping` (if any) calls them."""
    host.state(State.NEEDS_INPUT)
    if ping:
        host.notify(PingKind.NEEDS_INPUT, ping)
    try:
        yield
    finally:
        host.state(State.BUSY)


async def ask_through(events: trio.MemorySendChannel, host: HostLink,
                      questions: tuple[Question, ...]) -> tuple[Answer, ...] | None:
    """Show the questions in the face and wait: one answer per question, or None (Esc, or the
    turn that asked ended). `events` is unbounded (the lane's), so the send never waits."""
    reply_send, reply_receive = trio.open_memory_channel[tuple[Answer, ...] | None](1)
    events.send_nowait(Ask(questions, reply_send))
    with needing_input(host, ping_text(questions)):
        return await reply_receive.receive()


def ping_text(questions: tuple[Question, ...]) -> str:
    text = f"iota asks: {questions[0].text}"
    return text if len(text) <= PING_LIMIT else text[:PING_LIMIT - 1] + "…"
