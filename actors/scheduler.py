"""The scheduler: one actor that sleeps until a bot's next scheduled run, then feeds the lane.

    schedules.jsonl ──► scheduler ── sleeps until the earliest next_run (or a change) ──►
        due: QuietTurn("schedule …") at the end of the lane ──► a turn like a typed one, its
        trigger (`Scheduled: <title> (<timetable>)` and the prompt) hidden, its reply shown
        under a `⏰ <title>` label, the host pinged when it ends

It never calls the model: a run is an ordinary lane job, so one that comes due while the bot
compacts, waits for an approval or answers the person waits its turn, and Ctrl+C stops it like
any turn. When a run comes due its schedule's next run moves to the first time after now, so
a run that is still queued or running when the next time comes is not stacked (that time is
skipped), and a bot that was closed for days runs a missed schedule once at start — announced
in the transcript — not once per missed time.

Sleeping: the actor waits on its `changed` event with a deadline at the next due time, so a
schedule created, paused or deleted (the tool and /schedules call `wake`) is seen at once and
nothing polls. The deadline is at most WALL_CLOCK_RECHECK away: trio's timer runs on the
monotonic clock, which stops while the machine sleeps and does not follow the wall clock when it
is set, so a long wait reads the wall clock again now and then rather than fire hours late. The
file is read and written synchronously (a few hundred bytes), so no change can slip in between
reading it and starting to wait.
"""

from __future__ import annotations

import math
from functools import partial

import trio
from trio_util import RepeatedEvent

from actors.lane import Lane, QuietTurn
from iota.bots.schedules import ACTIVE, PAUSED, Schedule, ScheduleBook, shown
from iota.memory.document import go_quote
from iota.errors import ToolError
from iota.sessions.conversation import notice

WALL_CLOCK_RECHECK = 600.0  # seconds


class Scheduler:
    def __init__(self, book: ScheduleBook):
        self.book = book
        self.changed = RepeatedEvent()
        self.in_flight: set[str] = set()  # schedules whose run is queued or running
        self._said: set[str] = set()

    def wake(self) -> None:
        """The schedules changed: look again now."""
        self.changed.set()

    async def run(self, lane: Lane, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        catching_up = True  # what is due at start came due while the bot was not running
        while True:
            wait = self._fire_due(lane, catching_up=catching_up)
            catching_up = False
            with trio.move_on_after(min(wait, WALL_CLOCK_RECHECK)):
                await self.changed.wait()

    def _fire_due(self, lane: Lane, *, catching_up: bool) -> float:
        """Start every run that is due; the seconds until the next one (inf: none)."""
        try:
            schedules = self.book.load()
        except ToolError as error:
            self._tell_once(lane, str(error))
            return math.inf
        for warning in self.book.warnings:
            self._tell_once(lane, warning)
        now = self.book.now()
        upcoming = []
        for schedule in schedules:
            if schedule.status != ACTIVE or schedule.next_run is None:
                continue
            if schedule.next_run.timestamp() > now.timestamp():
                upcoming.append(schedule.next_run)
                continue
            updated = self._fire(lane, schedule, catching_up=catching_up)
            if updated is not None and updated.status == ACTIVE and updated.next_run is not None:
                upcoming.append(updated.next_run)
        # By timestamps: aware datetimes that share a tzinfo subtract as wall-clock times.
        return max(0.0, min((when.timestamp() - now.timestamp() for when in upcoming), default=math.inf))

    def _fire(self, lane: Lane, schedule: Schedule, *, catching_up: bool) -> Schedule | None:
        """Move the schedule on to its next run and, unless its last run is still queued or
        running, queue this one. A schedule whose move cannot be saved is not run (it would come
        due again and again); it is said once, and tried again at the next look."""
        due, stacked = schedule.next_run, schedule.id in self.in_flight
        try:
            updated = self.book.advance(schedule.id, ran=not stacked)
        except ToolError as error:
            self._tell_once(lane, f"schedule {go_quote(schedule.title)} did not run: {error}")
            return None
        if stacked:
            return updated
        missed = ""
        if catching_up and due is not None:
            missed = shown(due, self.book.zone_of(schedule))
            lane.notice(f"Catching up: schedule {go_quote(schedule.title)} ({schedule.timetable.words}) was due "
                        f"{missed} while the bot was not running; it runs once now")
        self.in_flight.add(schedule.id)
        lane.submit(QuietTurn(f"schedule {schedule.id}", partial(self._run_one, schedule, missed)))
        return updated

    async def _run_one(self, schedule: Schedule, missed: str, lane: Lane) -> None:
        """The job: the run, unless its schedule was deleted or paused while it waited."""
        try:
            current = next((s for s in self.book.load() if s.id == schedule.id), None)
            if current is None or current.status == PAUSED:
                return
            # The reply is labelled with the schedule that fired: a notice on screen and in the
            # log, so a resumed chat shows it above the reply as the live one did.
            label = f"⏰ {current.title}"
            lane.notice(label)
            await lane.keep([notice(label)])
            await lane.quiet_turn(current.trigger(missed=missed))
        except ToolError as error:
            lane.notice(f"schedule {go_quote(schedule.title)} did not run: {error}", warning=True)
        finally:
            self.in_flight.discard(schedule.id)

    def _tell_once(self, lane: Lane, text: str) -> None:
        if text not in self._said:
            self._said.add(text)
            lane.notice(text, warning=True)
