"""A bot's journal in the chat: written beside the lane after every turn, attached to every message.

    keeper = JournalKeeper(journal)
    lane.before_send.append(keeper.before_send)   # the last hook: attach the journal block
    await nursery.start(keeper.run, lane)         # beside the lane (ChatParts.tasks): the writer

The writer task catches the journal up at the start (a missing or stale file is rebuilt from
the logs, however long that takes, while the person already types) and then each time a turn is
saved — any model turn: the person's, the memory flush, whatever later kinds run on the lane.
It never holds up the lane: the turn is on disk before it starts, and the next job does not
wait for it. The work runs in a worker thread; when the chat ends mid-rebuild, it stops at the
next commit and the next start goes on from there.

The journal is derived data, so nothing that goes wrong with it ends the chat or holds up a
start: the file is opened by the first catch-up, in the worker thread; a failure (another
process holding the file's lock, a full disk, a damaged file) is one dim warning, said once
until the journal works again, and the catch-up is tried again after the next turn or
`RETRY_SECONDS` later, whichever comes first. A message sent meanwhile goes without its journal
block.

Before each message is sent, the block of journal entries the model should see (see
iota.bots.journal: after a compaction, the condensed turns; else the latest few; then related
ones) is recorded as a notice ahead of it, so it rides on the message, in the log and in every
later request alike, and the cached prompt prefix does not change. A `/rewind` waits for the
journal to drop the undone turns before the next message can be sent.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from functools import partial

import trio

from actors.lane import Lane
from iota.agent import Turn
from iota.bots.journal import Journal, journal_block
from iota.errors import SearchError
from iota.messages import Message
from iota.sessions.bundle import Session
from iota.sessions.index import log_source


# How long after a failed catch-up it is tried again when no turn asks sooner.
RETRY_SECONDS = 30.0


class JournalKeeper:
    def __init__(self, journal: Journal):
        self.journal = journal
        self._wanted = trio.Event()
        self._writing = trio.Lock()
        # The turns the model has seen in the conversation since the last message: those no
        # longer in it at the next one were just condensed.
        self._seen: set[str] = set()
        self._warned = ""

    async def run(self, lane: Lane, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Keep the journal up to date for `lane` until the chat ends."""
        lane.on_turn_saved.append(self.turn_saved)
        lane.after_rewind.append(self.after_rewind)
        self._seen = _turns(lane.conversation.messages)
        task_status.started()
        while True:
            caught_up = await self.catch_up(lane)
            with trio.move_on_after(math.inf if caught_up else RETRY_SECONDS):
                await self._wanted.wait()

    def turn_saved(self, turn: Turn, outcome: str) -> None:
        self._seen.add(turn.id)
        self._wanted.set()

    def helper_kept(self, session: Session) -> None:
        """A helper's child session was closed: index it too, and write its entry now (a
        background helper ends between turns)."""
        self.journal.add_source(log_source(session.dir))
        self._wanted.set()

    async def catch_up(self, lane: Lane) -> bool:
        """Bring the journal up to the logs (one writer at a time), in a worker thread; False
        (and the warning, once) when it failed."""
        async with self._writing:
            self._wanted = trio.Event()  # a turn saved from now on asks for another round
            try:
                await run_stoppable(self.journal.catch_up)
            except SearchError as error:
                self._warn(lane, error)
                return False
            self._warned = ""  # working again: a later failure is worth saying
            return True

    async def before_send(self, lane: Lane, user: Message) -> None:
        view = lane.conversation.messages
        in_view = _turns(view)
        condensed, self._seen = self._seen - in_view, in_view
        try:
            block = await trio.to_thread.run_sync(self.journal.context, user.content, list(view), condensed)
        except SearchError as error:
            self._warn(lane, error)
            return
        if block is not None:
            await lane.keep([journal_block(block)])

    async def after_rewind(self, lane: Lane) -> None:
        await self.catch_up(lane)
        self._seen = _turns(lane.conversation.messages)

    def _warn(self, lane: Lane, error: SearchError) -> None:
        # Once until the journal works again, not after every turn nor for each way it fails.
        if not self._warned:
            self._warned = str(error)
            lane.notice(f"Journal: {error}; it is tried again later, the chat goes on", warning=True)


def _turns(messages: list[Message]) -> set[str]:
    return {message.turn for message in messages if message.turn}


async def run_stoppable(work: Callable[[Callable[[], bool]], object]) -> object:
    """Run `work(should_stop)` in a worker thread; a cancellation asks it to stop (it returns at
    its next safe point) and is raised once it has."""
    stop = threading.Event()

    async def stop_when_cancelled() -> None:
        try:
            await trio.sleep_forever()
        finally:
            stop.set()

    # The work's own failure is raised as itself, not inside the nursery's ExceptionGroup, so
    # that callers can catch it by its type.
    failure: Exception | None = None
    result: object = None
    async with trio.open_nursery() as nursery:
        nursery.start_soon(stop_when_cancelled)
        try:
            result = await trio.to_thread.run_sync(partial(work, stop.is_set))
        except Exception as error:
            failure = error
        finally:
            nursery.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return result
