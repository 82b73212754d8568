"""When a schedule runs: its timetable, in text and in time, in a time zone.

(Aware datetimes that share a tzinfo subtract and compare as wall-clock times, wrong across a
DST change; so instants are compared here by their timestamps.)

A timetable is written the way a person says it, and kept in that form (normalised):

    daily 09:00              every day at 09:00
    weekdays 09:00           Monday to Friday at 09:00
    hourly, hourly :15       every hour, on the hour (or at :15)
    every 15 minutes         at :00, :15, :30 and :45 of every hour; N must divide 60
    cron 0 9 * * 1-5         a 5-field cron expression
    once 2026-11-20 09:00    one time (seconds may be given); `once 09:00` is the next 09:00, and
                             `once in 20 minutes` (seconds, minutes, hours) is kept as the time it names

Every recurring timetable is a cron expression underneath, and its run times come from cronsim
(chosen over croniter: small, typed, maintained by the healthchecks.io author, with DST handled
as cron does it and an `explain()` that puts an expression in words for the approval). Times are
wall-clock times in the schedule's zone: an IANA zone given with the schedule, else the config's
`timezone:`, else the machine's (tzlocal reads it, `TZ` included). Across a DST change a run
keeps its wall-clock time: a 02:30 the clocks skip runs at 03:00, once; a 02:30 they repeat runs
once, the first time; `every 30 minutes` keeps real 30-minute steps through both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo

from cronsim import CronSim, CronSimError

from iota.errors import ToolError
from iota.zones import wall_time

TIMETABLE_FORMS = ('"daily 09:00", "weekdays 09:00", "hourly", "every 15 minutes", "cron 0 9 * * 1-5", '
                   '"once 2026-11-20 09:00" or "once in 20 minutes"')
CRON_FIELDS = "minute hour day-of-month month day-of-week"
_TIME = r"([01]?\d|2[0-3]):([0-5]\d)"
_UNITS = {"second": 1, "minute": 60, "hour": 3600}


class TimetableError(ToolError):
    """A timetable or a time zone that cannot be read; the message says what would be."""


@dataclass(frozen=True)
class Timetable:
    text: str                 # the normalised form, as stored: `weekdays 09:00`
    cron: str = ""            # the expression behind a recurring timetable
    once: datetime | None = None   # a one-time run's wall-clock time (naive: read in the zone)

    @property
    def words(self) -> str:
        """The short form in the trigger message and the lists: `weekdays 09:00`, `cron …`."""
        return self.text

    def explain(self) -> str:
        """The timetable in a sentence, for the approval."""
        if self.once is not None:
            return f"once, at {self.once:%Y-%m-%d %H:%M:%S}".removesuffix(":00")
        return CronSim(self.cron, datetime(2000, 1, 1)).explain()

    def next_after(self, moment: datetime, zone: tzinfo) -> datetime | None:
        """The first run strictly after `moment` (time-zone aware), in `zone`; None for a one-time
        run that is not after it."""
        if self.once is not None:
            when = wall_time(self.once, zone)
            return when if when.timestamp() > moment.timestamp() else None
        return next(CronSim(self.cron, moment.astimezone(zone)))

    def runs_after(self, moment: datetime, zone: tzinfo, count: int) -> list[datetime]:
        runs: list[datetime] = []
        while len(runs) < count and (run := self.next_after(runs[-1] if runs else moment, zone)) is not None:
            runs.append(run)
        return runs


def parse_timetable(text: object, now: datetime | None = None) -> Timetable:
    """Read a timetable. `now` (aware, in the schedule's zone) anchors `once 09:00` and `once in …`,
    and a one-time run must be after it; without `now` (a stored timetable) only the absolute
    forms are read."""
    if not isinstance(text, str) or not text.strip():
        raise TimetableError(f"timetable is required: {TIMETABLE_FORMS}")
    words = " ".join(text.split())
    kind, _, rest = words.partition(" ")
    kind = kind.lower()
    if kind in ("daily", "weekdays"):
        match = re.fullmatch(_TIME, rest)
        if not match:
            raise TimetableError(f'"{words}": {kind} takes a time of day, e.g. "{kind} 09:00"')
        hour, minute = int(match[1]), int(match[2])
        return Timetable(f"{kind} {hour:02}:{minute:02}", f"{minute} {hour} * * {'1-5' if kind == 'weekdays' else '*'}")
    if kind == "hourly":
        match = re.fullmatch(r"(?::([0-5]\d))?", rest)
        if not match:
            raise TimetableError(f'"{words}": hourly runs on the hour, or at a minute given as "hourly :15"')
        minute = int(match[1] or 0)
        return Timetable("hourly" + (f" :{minute:02}" if minute else ""), f"{minute} * * * *")
    if kind == "every":
        return _every(words, rest)
    if kind == "cron":
        expression = check_cron(rest)
        return Timetable(f"cron {expression}", expression)
    if kind == "once":
        return _once(words, rest, now)
    raise TimetableError(f'"{words}" is not a timetable; write one of {TIMETABLE_FORMS}')


def _every(words: str, rest: str) -> Timetable:
    match = re.fullmatch(r"(\d+)\s*(?:m|min|mins|minute|minutes)", rest.lower())
    if not match:
        raise TimetableError(f'"{words}": write it as "every N minutes", N dividing 60 (5, 10, 15, 20, 30, 60)')
    every = int(match[1])
    if every < 1 or 60 % every:
        raise TimetableError(f'"{words}": N must divide 60 (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30 or 60), got {every}')
    if every == 60:
        return Timetable("hourly", "0 * * * *")
    return Timetable(f"every {every} minute{'s' if every > 1 else ''}", f"*/{every} * * * *")


def check_cron(expression: str) -> str:
    """The expression with single spaces, or a one-line refusal naming the bad field."""
    fields = expression.split()
    if len(fields) != 5:
        raise TimetableError(f'cron "{expression}" has {len(fields)} field{"s" if len(fields) != 1 else ""}; '
                             f'want 5 ({CRON_FIELDS}), e.g. "cron 0 9 * * 1-5"')
    normal = " ".join(fields)
    try:
        CronSim(normal, datetime(2000, 1, 1))
    except CronSimError as error:
        raise TimetableError(f'cron "{normal}": {str(error).lower() or "cannot be read"} '
                             f"(the fields are {CRON_FIELDS})") from None
    return normal


def _once(words: str, rest: str, now: datetime | None) -> Timetable:
    relative = re.fullmatch(r"in (\d+)\s*(second|minute|hour)s?", rest.lower())
    if now is None and (relative or re.fullmatch(_TIME, rest)):
        raise TimetableError(f'"{words}": a stored one-time run names its date')
    if relative:  # counted in elapsed time, whatever the clocks do meanwhile
        later = now.astimezone(timezone.utc) + timedelta(seconds=int(relative[1]) * _UNITS[relative[2]])
        at = later.astimezone(now.tzinfo).replace(microsecond=0, tzinfo=None)
    elif re.fullmatch(_TIME, rest):
        hour, minute = map(int, rest.split(":"))
        at = now.replace(hour=hour, minute=minute, second=0, microsecond=0, tzinfo=None)
        if wall_time(at, now.tzinfo).timestamp() <= now.timestamp():
            at += timedelta(days=1)
    else:
        try:
            at = datetime.strptime(rest, "%Y-%m-%d %H:%M:%S" if rest.count(":") == 2 else "%Y-%m-%d %H:%M")
        except ValueError:
            raise TimetableError(f'"{words}": write a one-time run as "once 2026-11-20 09:00", "once 09:00" '
                                 'or "once in 20 minutes"') from None
    if now is not None and wall_time(at, now.tzinfo).timestamp() <= now.timestamp():
        raise TimetableError(f'"{words}" is in the past (it is {now:%Y-%m-%d %H:%M} now)')
    shown = f"{at:%Y-%m-%d %H:%M:%S}".removesuffix(":00")
    return Timetable(f"once {shown}", once=at)
