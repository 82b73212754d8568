"""A bot's durables on each message: the few that matter now, as a hidden notice ahead of it.

    lane.before_send.append(sender.before_send)   # before the journal's: both ride on the message

The choice is iota.bots.durables'; this reads the store in a worker thread (two thousand entries
and their full-text test take a few milliseconds, not nothing) and keeps the notice in the log,
so every later request carries the same bytes and the cached prompt prefix holds. A store that
cannot be read is one dim warning, said once, and the message goes without it.
"""

from __future__ import annotations

import trio

from actors.lane import Lane
from iota.bots.candidates import CandidateBook
from iota.bots.durables import chosen, durables_block, durables_text, sent_in
from iota.errors import ToolError
from iota.messages import Message


class DurablesSender:
    def __init__(self, book: CandidateBook, project: str | None):
        self.book = book
        self.project = project
        self._warned = ""

    def block_for(self, message: str, view: list[Message]) -> str | None:
        return durables_text(chosen(self.book.load(), message, project=self.project, already=sent_in(view)))

    async def before_send(self, lane: Lane, user: Message) -> None:
        try:
            text = await trio.to_thread.run_sync(self.block_for, user.content, list(lane.conversation.messages))
        except ToolError as error:
            if str(error) != self._warned:
                lane.notice(f"durables: {error}; this message goes without them", warning=True)
            self._warned = str(error)
            return
        self._warned = ""
        if text is not None:
            await lane.keep([durables_block(text)])
