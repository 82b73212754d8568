"""The scheduler actor (actors.scheduler) on trio's fake clock: runs at the right instants across
DST changes and time zones, one catch-up after a gap, never stacked, woken by a change, no polling.

The wall clock the schedules are read against follows trio's MockClock (autojump: whenever every
task waits, the clock jumps to the next deadline), so a week of schedules runs in milliseconds
and each run lands at exactly its instant. The lane is a stand-in that runs the scheduler's jobs
one at a time, as the real one does, and records when each quiet turn started and what it said.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
import trio

from actors.lane import Inbox, QuietTurn
from actors.scheduler import WALL_CLOCK_RECHECK, Scheduler
from iota.bots.schedules import ScheduleBook

BERLIN = ZoneInfo("Europe/Berlin")


class WallClock:
    """A wall clock that moves with trio's clock, from `start`."""

    def __init__(self, start: datetime):
        self.start = start.astimezone(timezone.utc)  # in UTC: local wall times jump at DST changes
        self.origin = trio.current_time()

    def __call__(self) -> datetime:
        return self.start + timedelta(seconds=trio.current_time() - self.origin)


@dataclass
class Run:
    at: datetime
    text: str


@dataclass
class StandInLane:
    """What the scheduler needs of the lane: submit, notice, keep, quiet_turn. Jobs run one at a time."""

    wall: WallClock
    turn_seconds: float = 0.0
    runs: list[Run] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # the records it would log (a run's `⏰` label)
    inbox: Inbox = field(default_factory=Inbox)

    def submit(self, job: QuietTurn) -> None:
        self.inbox.put(job)

    def notice(self, text: str, *, warning: bool = False) -> None:
        self.notices.append(text)

    async def keep(self, records) -> None:
        self.kept += [record.content for record in records]

    async def quiet_turn(self, text: str) -> None:
        self.runs.append(Run(self.wall(), text))
        await trio.sleep(self.turn_seconds)

    async def run(self) -> None:
        while True:
            job = await self.inbox.get()
            await job.run(self)


@pytest.fixture
def open_scheduler(tmp_path):
    """Run a scheduler on `book` and a stand-in lane for `seconds` of the fake clock."""

    async def run_for(book: ScheduleBook, lane: StandInLane, seconds: float, scheduler: Scheduler | None = None):
        scheduler = scheduler or Scheduler(book)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lane.run)
            await nursery.start(scheduler.run, lane)
            await trio.sleep(seconds)
            nursery.cancel_scope.cancel()
        return scheduler

    return run_for


def setup(tmp_path, start: datetime, zone=BERLIN, turn_seconds: float = 0.0) -> tuple[ScheduleBook, StandInLane]:
    wall = WallClock(start)
    return ScheduleBook(tmp_path, zone, now=wall), StandInLane(wall, turn_seconds)


def add(book: ScheduleBook, title: str, timetable: str, zone: str | None = None) -> None:
    book.create(book.plan(title, f"do {title}", timetable, zone))


def instants(lane: StandInLane) -> list[str]:
    return [run.at.astimezone(BERLIN).isoformat() for run in lane.runs]


async def test_a_daily_run_lands_on_its_wall_clock_time_across_the_spring_change(tmp_path, open_scheduler,
                                                                                 autojump_clock):
    book, lane = setup(tmp_path, datetime(2026, 3, 27, 12, 0, tzinfo=BERLIN))
    add(book, "Backup", "daily 02:30")
    await open_scheduler(book, lane, 3.5 * 86400)
    assert instants(lane) == ["2026-03-28T02:30:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"]
    assert lane.runs[0].text == "Scheduled: Backup (daily 02:30)\n\ndo Backup"
    assert lane.notices == lane.kept == ["⏰ Backup"] * 3  # each run labelled; nothing was a catch-up


async def test_the_repeated_hour_of_the_autumn_change(tmp_path, open_scheduler, autojump_clock):
    book, lane = setup(tmp_path, datetime(2026, 10, 25, 1, 50, tzinfo=BERLIN))
    add(book, "Backup", "daily 02:30")
    add(book, "Tick", "every 30 minutes")
    await open_scheduler(book, lane, 135 * 60)  # 01:50 summer time to 03:05 winter time
    got = [(run.text.split(" (")[0], run.at.astimezone(BERLIN).strftime("%H:%M%z")) for run in lane.runs]
    assert got == [("Scheduled: Tick", "02:00+0200"), ("Scheduled: Backup", "02:30+0200"),
                   ("Scheduled: Tick", "02:30+0200"), ("Scheduled: Tick", "02:00+0100"),
                   ("Scheduled: Tick", "02:30+0100"), ("Scheduled: Tick", "03:00+0100")]


async def test_schedules_in_other_zones_run_at_their_own_nine_oclock(tmp_path, open_scheduler, autojump_clock):
    # New York changes to summer time on 2026-03-08, Berlin only on 2026-03-29: in between, New
    # York's 09:00 is 14:00 in Berlin, not 15:00.
    book, lane = setup(tmp_path, datetime(2026, 3, 5, 12, 0, tzinfo=BERLIN))
    add(book, "NY standup", "weekdays 09:00", zone="America/New_York")
    add(book, "Tokyo", "daily 09:00", zone="Asia/Tokyo")
    await open_scheduler(book, lane, 4.5 * 86400)
    new_york = [run.at.astimezone(BERLIN).isoformat() for run in lane.runs if "NY standup" in run.text]
    tokyo = [run.at.astimezone(ZoneInfo("Asia/Tokyo")).strftime("%d %H:%M") for run in lane.runs if "Tokyo" in run.text]
    assert new_york == ["2026-03-05T15:00:00+01:00", "2026-03-06T15:00:00+01:00", "2026-03-09T14:00:00+01:00"]
    assert tokyo == ["06 09:00", "07 09:00", "08 09:00", "09 09:00"]


async def test_a_bot_away_for_three_days_catches_up_once_and_says_so(tmp_path, open_scheduler, autojump_clock):
    book, lane = setup(tmp_path, datetime(2026, 11, 16, 10, 20, tzinfo=BERLIN))
    add(book, "Hourly check", "hourly")
    add(book, "Later", "daily 23:00")
    lane.wall.start += timedelta(days=3)  # the bot was not running for three days
    await open_scheduler(book, lane, 30 * 60)
    assert len(lane.runs) == 2  # one catch-up each, not 72 and 3
    assert [text for text in lane.notices if not text.startswith("⏰")] == [
        'Catching up: schedule "Hourly check" (hourly) was due Mon 2026-11-16 11:00 while the bot was not running; '
        "it runs once now",
        'Catching up: schedule "Later" (daily 23:00) was due Mon 2026-11-16 23:00 while the bot was not running; '
        "it runs once now"]
    assert "— a catch-up: it was due Mon 2026-11-16 11:00 while the bot was not running" in lane.runs[0].text
    hourly = next(s for s in book.load() if s.title == "Hourly check")
    assert hourly.next_run == datetime(2026, 11, 19, 11, 0, tzinfo=BERLIN)


async def test_a_run_still_going_is_not_stacked(tmp_path, open_scheduler, autojump_clock):
    book, lane = setup(tmp_path, datetime(2026, 11, 19, 10, 0, 30, tzinfo=BERLIN), turn_seconds=150)
    add(book, "Every minute", "every 1 minute")
    await open_scheduler(book, lane, 10 * 60)
    # 10:01 runs until 10:03:30, so 10:02 and 10:03 are skipped; and so on.
    assert [run.at.astimezone(BERLIN).strftime("%H:%M:%S") for run in lane.runs] == [
        "10:01:00", "10:04:00", "10:07:00", "10:10:00"]
    [schedule] = book.load()
    assert schedule.last_run.astimezone(BERLIN).strftime("%H:%M") == "10:10"


async def test_a_change_wakes_it_and_nothing_polls(tmp_path, open_scheduler, autojump_clock, monkeypatch):
    book, lane = setup(tmp_path, datetime(2026, 11, 19, 10, 0, tzinfo=BERLIN))
    looks = []
    load = book.load
    monkeypatch.setattr(book, "load", lambda: looks.append(trio.current_time()) or load())
    scheduler = Scheduler(book)

    async def create_later():
        await trio.sleep(3600)
        add(book, "Soon", "once in 10 minutes")
        scheduler.wake()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(create_later)
        await open_scheduler(book, lane, 86400, scheduler)
    assert [run.at.astimezone(BERLIN).strftime("%H:%M") for run in lane.runs] == ["11:10"]
    # A day with one schedule: a look at start, at the change, at the run (and the run's own
    # check of its schedule), and otherwise one every WALL_CLOCK_RECHECK at most.
    assert len(looks) <= 4 + 86400 / WALL_CLOCK_RECHECK


async def test_a_run_paused_or_deleted_while_it_waits_does_not_happen(tmp_path, open_scheduler, autojump_clock):
    book, lane = setup(tmp_path, datetime(2026, 11, 19, 10, 0, tzinfo=BERLIN))
    add(book, "Paused", "every 1 minute")
    add(book, "Deleted", "once in 1 minute")
    paused, deleted = book.load()
    busy = trio.Event()

    async def block(lane_):  # the lane is busy (an approval, a compaction) when the runs come due
        await busy.wait()

    lane.submit(QuietTurn("busy", block))

    async def change_then_free():
        await trio.sleep(120)
        book.pause(paused.id)
        book.delete(deleted.id)
        busy.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(change_then_free)
        await open_scheduler(book, lane, 600)
    assert lane.runs == []
