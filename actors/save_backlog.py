"""What a chat has shown but not yet written: kept in memory, in order, and written before
anything newer.

A write that fails (a full disk, a quota) must not end the conversation, and must not lose what
the person saw: the records wait here, oldest first, and are written at the next write and every
`RETRY_SAVE_SECONDS` until one succeeds. The failure is said once (`Save failed: …`), its end
once (`Saved again`), and meanwhile the status row says `not saved: <why>` (`reason`). Nothing
is sent to the model that is not on disk: the lane asks `waiting` before each request.

    backlog = SaveBacklog(conversation, kept, error_line, notice, show_status)
    await backlog.add(records, durable=True, meta=False)   # written now, or kept until a write succeeds
    nursery.start_soon(backlog.retry)                      # the timer

Every write runs shielded, in a worker thread, one at a time: a record is never torn by Ctrl+C.
"""

from __future__ import annotations

import errno
from functools import partial
from typing import Callable

import trio

from actors.kept_queue import KeptQueue
from iota.errors import MetaNotSaved, SessionError
from iota.messages import USER, Message
from iota.sessions.conversation import Conversation

RETRY_SAVE_SECONDS = 5.0


class SaveBacklog:
    def __init__(self, conversation: Conversation, kept: KeptQueue, error_line: Callable[[str], None],
                 notice: Callable[[str], None], show_status: Callable[[], None]):
        self.conversation = conversation
        self.kept = kept
        self._error_line = error_line
        self._notice = notice
        self._show_status = show_status  # after every write, from a turn or the timer: `reason` may have changed
        # (records, durable, meta), oldest first: each written before anything newer.
        self._waiting: list[tuple[list[Message], bool, bool]] = []
        self.reason = ""       # the status row's `not saved: …`; "" while everything is on disk
        self._shown_error = ""  # the last failure shown, so a full disk is not said every second
        self._writing = trio.Lock()
        self._wanted = trio.Event()

    @property
    def waiting(self) -> bool:
        """Whether something shown is not on disk yet."""
        return bool(self._waiting)

    def not_sent(self) -> SessionError:
        """Why a request is not sent: what it would carry is not on disk."""
        return SessionError(f"not sent: the conversation could not be saved ({self.reason}); "
                            "it is kept and written once a write succeeds")

    async def add(self, records: list[Message], *, durable: bool, meta: bool) -> None:
        self._waiting.append((records, durable, meta))
        await self.write()

    async def write(self) -> None:
        """Write what is waiting, oldest first, until a write fails. Shielded: a write must not
        be torn."""
        with trio.CancelScope(shield=True):
            async with self._writing:
                await self._write_waiting()
        self._show_status()

    async def retry(self) -> None:
        """While something waits to be written, try again every RETRY_SAVE_SECONDS."""
        while True:
            await self._wanted.wait()
            self._wanted = trio.Event()
            await trio.sleep(RETRY_SAVE_SECONDS)
            await self.write()

    async def _write_waiting(self) -> None:
        session = self.conversation.session
        written: list[Message] = []
        try:
            while self._waiting:
                records, durable, meta = self._waiting[0]
                try:
                    await trio.to_thread.run_sync(partial(self.conversation.record, records, durable=durable,
                                                          meta=meta))
                except MetaNotSaved:
                    written += self._waiting.pop(0)[0]  # the records are in the log; meta.json follows later
                    raise
                written += self._waiting.pop(0)[0]
            if session is not None and session.meta_pending:
                await trio.to_thread.run_sync(session.write_pending_meta)
        except SessionError as error:
            if not self._shown_error:
                self._error_line(f"Save failed: {error} — kept in memory and written once a write "
                                 "succeeds; the conversation goes on")
            self._shown_error = str(error)
            self.reason = _why_unsaved(error)
            self._wanted.set()
            return
        finally:
            # A typed message whose record is now in the log leaves the queue file (actors.kept_queue).
            await self.kept.sent(typed_ids(written))
        if self._shown_error:
            self._notice("Saved again: everything shown is on disk")
        self._shown_error = self.reason = ""


def typed_ids(records: list[Message]) -> list[str]:
    """The turn ids of the user records among `records`: those of typed messages leave the queue file."""
    return [record.turn for record in records if record.role == USER and record.turn]


def _why_unsaved(error: SessionError) -> str:
    """`disk full`, or what the system said, for the status row."""
    cause = error.__cause__
    if isinstance(cause, OSError):
        if cause.errno in (errno.ENOSPC, errno.EDQUOT):
            return "disk full"
        return (cause.strerror or str(cause)).lower()
    return "write failed"
