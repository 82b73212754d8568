"""The person's unsent messages, kept in the session's `queue.json` (iota.sessions.queue).

Each change of what waits is written before the chat goes on: a typed message before it is shown
queued (or sent), a message taken back or dropped before the chat says so, a message sent once
its record is in the log. The file always lists the typed messages not yet in the log, so a
`kill -9` at any moment neither loses one nor sends one twice: a crash between the log's record
and the file's rewrite leaves a message listed whose turn is in the log, and it is left out when
the session opens again.

After a restart the messages come back queued and *held*: shown above the composer, sent by
Enter (or with the next message), taken back by Up, dropped by Ctrl+C — as after Ctrl+C. A
person whose chat died may find that the moment for them has passed (the reply they were
waiting for never came), so nothing they typed goes to the model until they say so.

Writes run in a worker thread, one at a time (each writes the whole queue as it is when its turn
comes, so the last write always holds the latest state), shielded from cancellation.
"""

from __future__ import annotations

from typing import Callable, Iterable

import trio

from actors.events import ErrorLine
from actors.inbox import Inbox, UserMessage
from iota.errors import SessionError
from iota.sessions.bundle import Session
from iota.sessions.conversation import Conversation
from iota.sessions.queue import Queued, read_queue, save_queue, unsent, write_queue


class KeptQueue:
    def __init__(self, inbox: Inbox, conversation: Conversation, emit: Callable[[object], None]):
        self._inbox = inbox
        self._conversation = conversation
        self._emit = emit
        self._lock = trio.Lock()
        self._arriving: list[UserMessage] = []  # typed, being written before they join the inbox
        self._error = ""  # the last failure shown, so a full disk is not repeated at every change

    def _entries(self) -> list[Queued]:
        return [Queued(message.id, message.text) for message in (*self._inbox.unsent(), *self._arriving)]

    async def save(self) -> bool:
        """Write the queue as it now is to the session's queue.json; False (and the failure shown
        once) when it could not be written. A chat that does not save keeps nothing."""
        with trio.CancelScope(shield=True):
            async with self._lock:
                session = self._conversation.session
                if session is None:
                    return True
                entries = self._entries()
                try:
                    await trio.to_thread.run_sync(save_queue, session, entries)
                except SessionError as error:
                    if str(error) != self._error:
                        self._emit(ErrorLine(f"Save failed: {error} — they stay queued in this run"))
                    self._error = str(error)
                    return False
                self._error = ""
                return True

    async def arrive(self, message: UserMessage) -> None:
        """Write a typed message to disk before the caller queues it."""
        self._arriving.append(message)
        try:
            await self.save()
        finally:
            self._arriving.remove(message)

    async def sent(self, message_ids: Iterable[str]) -> None:
        """The records of `message_ids` are in the log: they leave the file."""
        if sum(self._inbox.sent(message_id) for message_id in message_ids):
            await self.save()

    async def restore(self) -> int:
        """Queue, held, the messages the session's queue.json keeps that the log does not hold;
        how many. The file is rewritten if some of them turned out to be sent."""
        session = self._conversation.session
        if session is None or not session.on_disk:
            return 0
        kept, warning = await trio.to_thread.run_sync(read_queue, session.dir)
        if warning:
            self._emit(ErrorLine(warning))
        waiting = unsent(kept, self._conversation.messages)
        known = {message.id for message in self._inbox.unsent()}
        for entry in waiting:
            if entry.id not in known:
                self._inbox.put(UserMessage(entry.text, entry.id))
        if waiting:
            self._inbox.hold(True)
        if len(waiting) != len(kept):
            await self.save()
        return len(waiting)

    async def moved_from(self, old: Session | None) -> int:
        """The chat goes on in another session (`/session`, `/fork`): what waits is kept there
        (with what that session had kept), then no longer in `old`'s bundle, which is still open.
        Written in that order: a crash between the two can show a message in both, never in none."""
        restored = await self.restore()
        await self.save()
        if old is not None and old is not self._conversation.session and old.on_disk:
            with trio.CancelScope(shield=True):
                try:
                    await trio.to_thread.run_sync(write_queue, old.dir, [])
                except OSError:
                    pass  # the other session shows them held when it is opened: seen twice, never lost
        return restored


def held_notice(count: int) -> str:
    """What the chat says of the messages typed before iota stopped, queued again and held."""
    these = "1 message" if count == 1 else f"{count} messages"
    return (f"{these} you typed before iota stopped {'was' if count == 1 else 'were'} not sent: "
            f"queued again, held — Enter sends {'it' if count == 1 else 'them'}, ↑ edits the last, "
            f"Ctrl+C drops {'it' if count == 1 else 'them'}")
