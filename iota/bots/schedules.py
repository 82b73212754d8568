"""A bot's schedules: turns it starts by itself at set times, kept in `~/.iota/bots/<name>/schedules.jsonl`.

A schedule is a title, a prompt (what to do when it fires) and a timetable (iota.bots.timetables)
in a time zone. Its state is `active`, `paused`, or `done` (a one-time run that has fired). Each
keeps the instant it next runs (`next_run`); the scheduler actor (actors.scheduler) sleeps until
the earliest, and when it comes, sends the bot

    Scheduled: <title> (<timetable>)

    <prompt>

as a hidden message and moves `next_run` to the first time after now. So a bot that was not
running for three days finds an hourly schedule due once, not seventy-two times (one catch-up),
and a run that is still going when the next comes due is not stacked: that time is skipped.

The file is one schedule a line, rewritten atomically (iota.bots.records). At most 50 schedules
(active or paused) per bot; one-time runs that are done are kept, the oldest dropped past 50.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo
from pathlib import Path
from typing import Any, TypeVar

from iota.bots.records import clip, find, new_id, read_table, write_table
from iota.bots.timetables import Timetable, TimetableError, parse_timetable
from iota.zones import ZoneError, zone_name, zone_named
from iota.memory.document import go_quote
from iota.sessions.meta import now_stamp
from iota.errors import ToolError

SCHEDULES_NAME = "schedules.jsonl"
MAX_SCHEDULES = 50
ACTIVE, PAUSED, DONE = "active", "paused", "done"
STATES = (ACTIVE, PAUSED, DONE)
TITLE_LIMIT = 120
Result = TypeVar("Result")
PROMPT_LIMIT = 4000


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class Schedule:
    id: str
    title: str
    prompt: str
    timetable: Timetable
    zone: str = ""                     # the IANA zone given with it; "" follows the bot's
    status: str = ACTIVE
    next_run: datetime | None = None
    last_run: datetime | None = None
    created: str = ""

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"id": self.id, "title": self.title, "prompt": self.prompt,
                                  "timetable": self.timetable.text}
        if self.zone:
            record["timezone"] = self.zone
        record["status"] = self.status
        record["next_run"] = self.next_run.isoformat() if self.next_run else None
        if self.last_run:
            record["last_run"] = self.last_run.isoformat()
        record["created"] = self.created
        return record

    def trigger(self, *, missed: str = "") -> str:
        """The message a run sends the bot; `missed` says when a catch-up was due."""
        catch_up = f" — a catch-up: it was due {missed} while the bot was not running" if missed else ""
        return f"Scheduled: {self.title} ({self.timetable.words}){catch_up}\n\n{self.prompt}"


def decode_schedule(record: dict) -> Schedule:
    def text(key: str, required: bool = True) -> str:
        value = record.get(key, None if required else "")
        if not isinstance(value, str) or (required and not value):
            raise ValueError(f"{key} is missing or not text")
        return value

    def moment(key: str) -> datetime | None:
        value = record.get(key)
        if value is None:
            return None
        when = datetime.fromisoformat(value) if isinstance(value, str) else None
        if when is None or when.tzinfo is None:
            raise ValueError(f"{key} is not a time with its offset")
        return when

    status = text("status")
    if status not in STATES:
        raise ValueError(f"unknown status {go_quote(status)}")
    try:
        timetable = parse_timetable(text("timetable"))
        zone = text("timezone", required=False)
        if zone:
            zone_named(zone)
    except (TimetableError, ZoneError) as error:
        raise ValueError(str(error)) from None
    return Schedule(text("id"), text("title"), text("prompt"), timetable, zone, status, moment("next_run"),
                    moment("last_run"), text("created", required=False))


class ScheduleBook:
    """The bot's schedules file, and the zone a schedule without one of its own runs in."""

    def __init__(self, directory: Path, zone: tzinfo, *, now: Callable[[], datetime] = utc_now):
        self.path = directory / SCHEDULES_NAME
        self.zone = zone               # the config's `timezone:`, else the machine's
        self.now = now
        self.warnings: list[str] = []

    def load(self) -> list[Schedule]:
        table = read_table(self.path, decode_schedule)
        self.warnings = table.warnings
        return table.items

    def change(self, edit: Callable[[list[Schedule]], Result]) -> Result:
        """Apply `edit` to the schedules as they are on disk now and save them; its result is
        returned. A refusal (ToolError) saves nothing."""
        table = read_table(self.path, decode_schedule)
        result = edit(table.items)
        done = [schedule for schedule in table.items if schedule.status == DONE]
        for old in done[: max(0, len(done) - MAX_SCHEDULES)]:
            table.items.remove(old)
        write_table(self.path, [schedule.to_record() for schedule in table.items], table.kept)
        return result

    def zone_of(self, schedule: Schedule) -> tzinfo:
        return zone_named(schedule.zone) if schedule.zone else self.zone

    # -- the changes --

    def plan(self, title: object, prompt: object, timetable: object, zone: object = None) -> Schedule:
        """A new schedule from the model's words, checked, not yet saved."""
        name = clip(title, TITLE_LIMIT, "title")
        if not name:
            raise ToolError("title is empty: name the schedule in a few words")
        if not isinstance(prompt, str) or not prompt.strip():
            raise ToolError("prompt is required: what to do each time the schedule runs")
        if len(prompt) > PROMPT_LIMIT:
            raise ToolError(f"prompt is {len(prompt)} characters long; keep it under {PROMPT_LIMIT}")
        if zone is None or (isinstance(zone, str) and not zone.strip()):
            zone_text, chosen = "", self.zone
        else:
            chosen = zone_named(zone)
            zone_text = chosen.key
        now = self.now().astimezone(chosen)
        table = parse_timetable(timetable, now)
        return Schedule(new_id(), name, prompt.strip(), table, zone_text, ACTIVE, table.next_after(now, chosen),
                        created=now_stamp())

    def create(self, planned: Schedule) -> str:
        def edit(schedules: list[Schedule]) -> str:
            live = [schedule for schedule in schedules if schedule.status != DONE]
            if len(live) >= MAX_SCHEDULES:
                raise ToolError(f"this bot has {len(live)} schedules, the most it may have; delete one first")
            for schedule in live:
                if (schedule.title, schedule.prompt, schedule.timetable.text, schedule.zone) == \
                        (planned.title, planned.prompt, planned.timetable.text, planned.zone):
                    raise ToolError(f"this schedule exists already: {schedule.id}")
            schedules.append(planned)
            return f"Created schedule {go_quote(planned.title)}.\n{self.describe(planned)}"
        return self.change(edit)

    def pause(self, reference: object) -> str:
        def edit(schedules: list[Schedule]) -> str:
            schedule = find_schedule(schedules, reference)
            if schedule.status != ACTIVE:
                raise ToolError(f"schedule {go_quote(schedule.title)} is {schedule.status}, not active")
            schedule.status = PAUSED
            return f"Paused schedule {go_quote(schedule.title)}.\n{self.describe(schedule)}"
        return self.change(edit)

    def resume(self, reference: object) -> str:
        def edit(schedules: list[Schedule]) -> str:
            schedule = find_schedule(schedules, reference)
            if schedule.status == ACTIVE:
                raise ToolError(f"schedule {go_quote(schedule.title)} is active already")
            # No catch-up for the time it was paused: it runs from the next time on.
            upcoming = schedule.timetable.next_after(self.now(), self.zone_of(schedule))
            if upcoming is None:
                raise ToolError(f"schedule {go_quote(schedule.title)} was a one-time run that is past; "
                                "create a new one")
            schedule.status, schedule.next_run = ACTIVE, upcoming
            return f"Resumed schedule {go_quote(schedule.title)}.\n{self.describe(schedule)}"
        return self.change(edit)

    def delete(self, reference: object) -> str:
        def edit(schedules: list[Schedule]) -> str:
            schedule = find_schedule(schedules, reference)
            schedules.remove(schedule)
            return f"Deleted schedule {schedule.id} {go_quote(schedule.title)}."
        return self.change(edit)

    def advance(self, schedule_id: str, *, ran: bool = True) -> Schedule | None:
        """The schedule came due now, and a run of it was started (`ran`) or skipped because the
        last one is still going: its next run is the first time after now (a one-time run is done).
        The schedule as it is now, or None if it was deleted meanwhile."""
        now = self.now()

        def edit(schedules: list[Schedule]) -> Schedule | None:
            schedule = next((s for s in schedules if s.id == schedule_id), None)
            if schedule is not None:
                zone = self.zone_of(schedule)
                if ran:
                    schedule.last_run = now.astimezone(zone)
                schedule.next_run = schedule.timetable.next_after(now, zone)
                if schedule.next_run is None:
                    schedule.status = DONE
            return schedule

        return self.change(edit)

    # -- what is shown --

    def describe(self, schedule: Schedule) -> str:
        zone = self.zone_of(schedule)
        lines = [f"Schedule {schedule.id} {go_quote(schedule.title)} — {schedule.timetable.words} "
                 f"({zone_name(zone)}), {schedule.status}"]
        if schedule.status == ACTIVE and schedule.next_run is not None:
            lines.append(f"  next run: {shown(schedule.next_run, zone)}")
        if schedule.last_run is not None:
            lines.append(f"  last run: {shown(schedule.last_run, zone)}")
        lines.append(f"  prompt: {schedule.prompt}")
        return "\n".join(lines)

    def listing(self) -> str:
        schedules = self.load()
        now = shown(self.now(), self.zone)
        if not schedules:
            return f"No schedules. (It is {now} in {zone_name(self.zone)}.)"
        return "\n".join([f"It is {now} in {zone_name(self.zone)}.", *(self.describe(s) for s in schedules)])

    def approval_detail(self, schedule: Schedule, *, runs: int = 3) -> str:
        """What the person approves: the timetable in words and its next `runs` run times."""
        zone = self.zone_of(schedule)
        upcoming = [shown(run, zone) for run in schedule.timetable.runs_after(self.now(), zone, runs)]
        return "\n".join([
            f"title:     {schedule.title}",
            f"timetable: {schedule.timetable.words} — {schedule.timetable.explain()} ({zone_name(zone)})",
            f"next runs: {', '.join(upcoming) or 'none (it is past)'}",
            f"prompt:    {schedule.prompt}",
        ])


def find_schedule(schedules: Sequence[Schedule], reference: object) -> Schedule:
    return find(schedules, reference, "schedule", lambda schedule: schedule.id)


def shown(when: datetime, zone: tzinfo) -> str:
    """`Mon 2026-11-23 09:00` in `zone` (seconds only when there are some)."""
    local = when.astimezone(zone)
    return local.strftime("%a %Y-%m-%d %H:%M:%S" if local.second else "%a %Y-%m-%d %H:%M")
