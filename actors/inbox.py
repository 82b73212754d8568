"""The turn lane's jobs and its inbox: the queue what the person types waits in.

    UserMessage   a message the person sent
    Command       a slash command, its body given the lane
    JobNote       a background shell job finished: its notice enters the conversation
    QuietTurn     a turn iota starts by itself (a schedule's trigger, an auto-continue nudge)

The inbox is first in, first out, with a way to jump it (`put_first`: the compactor's flush).
After Ctrl+C it is `held`: the person's messages wait until they are sent (Enter, or a new
message) or dropped, while other jobs still run; the last one can be taken back to edit.

A message the person typed has an `id` (the turn it will be sent in) and is kept on disk until
its record is in the log (actors.kept_queue): `unsent` is what must be kept — the messages the
lane has taken but not yet written (`sending`, until `sent`), then the ones that wait.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Awaitable, Callable

from trio_util import RepeatedEvent


@dataclass(frozen=True)
class UserMessage:
    """A message for the model from the person. `id`: typed, so kept on disk until it is in the
    log, and sent as the turn of that id; "" for one iota composed (a skill's body)."""

    text: str
    id: str = ""


@dataclass(frozen=True)
class Command:
    """A slash command, or a job of iota's own (the flush, the upkeep); `run` is its body, given
    the lane. `typed`: the person typed it (it is not counted as queued: it is no message)."""

    name: str
    argument: str
    run: Callable[..., Awaitable[None]]  # run(lane, argument)
    typed: bool = False


@dataclass(frozen=True)
class JobNote:
    """A background shell job finished: its notice enters the conversation."""

    text: str


@dataclass(frozen=True)
class QuietTurn:
    """A turn iota starts by itself. `run` decides, when its turn comes, whether there is still
    something to do, and sends it with `Lane.quiet_turn`; `name` says what started it."""

    name: str
    run: Callable[..., Awaitable[None]]  # run(lane)


Job = UserMessage | Command | JobNote | QuietTurn


class Inbox:
    """The lane's queue: first in, first out, with a way to jump it. While `held`, the person's
    messages wait (other jobs still run)."""

    def __init__(self) -> None:
        self._jobs: deque[Job] = deque()
        self._arrived = RepeatedEvent()
        self.held = False
        self._sending: list[UserMessage] = []  # taken by the lane, their records not yet written

    def put(self, job: Job) -> None:
        self._jobs.append(job)
        self._arrived.set()

    def put_first(self, job: Job) -> None:
        self._jobs.appendleft(job)
        self._arrived.set()

    def __len__(self) -> int:
        return len(self._jobs)

    def __iter__(self):
        return iter(self._jobs)

    def has(self, kind: type) -> bool:
        return any(isinstance(job, kind) for job in self._jobs)

    def queued(self) -> int:
        """What waits, as the status row counts it: everything but the slash commands typed."""
        return sum(1 for job in self._jobs if not (isinstance(job, Command) and job.typed))

    def messages(self) -> tuple[str, ...]:
        """The person's queued messages, oldest first."""
        return tuple(job.text for job in self._jobs if isinstance(job, UserMessage))

    def unsent(self) -> list[UserMessage]:
        """The typed messages not yet in the log, oldest first: those being sent, then those waiting."""
        waiting = [job for job in self._jobs if isinstance(job, UserMessage) and job.id]
        return [*self._sending, *waiting]

    def sent(self, message_id: str) -> bool:
        """The record of the message `message_id` is in the log; False if it was not being sent."""
        for message in self._sending:
            if message.id == message_id:
                self._sending.remove(message)
                return True
        return False

    def take_last_message(self) -> str | None:
        for position in range(len(self._jobs) - 1, -1, -1):
            job = self._jobs[position]
            if isinstance(job, UserMessage):
                del self._jobs[position]
                return job.text
        return None

    def drop_messages(self) -> int:
        kept = deque(job for job in self._jobs if not isinstance(job, UserMessage))
        dropped = len(self._jobs) - len(kept)
        self._jobs = kept
        return dropped

    def hold(self, held: bool) -> None:
        self.held = held
        self._arrived.set()

    def _next(self) -> int | None:
        """Where the next job to run is: the first, skipping the person's messages while held."""
        return next((position for position, job in enumerate(self._jobs)
                     if not (self.held and isinstance(job, UserMessage))), None)

    def ready(self) -> bool:
        return self._next() is not None

    async def get(self) -> Job:
        while (position := self._next()) is None:
            await self._arrived.wait()
        job = self._jobs[position]
        del self._jobs[position]
        if isinstance(job, UserMessage) and job.id:
            self._sending.append(job)
        return job
