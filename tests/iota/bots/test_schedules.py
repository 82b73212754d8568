"""Timetables (iota.bots.timetables) and a bot's schedules file (iota.bots.schedules): the forms
and their refusals, run times across DST changes and time zones, the zone a schedule runs in,
the limit, one-time runs, and what the approval shows."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from iota.bots.schedules import MAX_SCHEDULES, SCHEDULES_NAME, ScheduleBook
from iota.bots.timetables import TimetableError, parse_timetable
from iota.zones import ZoneError, zone_named
from iota.errors import ToolError

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def at(zone, *fields) -> datetime:
    return datetime(*fields, tzinfo=zone)


@pytest.mark.parametrize("text, normal, cron", [
    ("daily 9:00", "daily 09:00", "0 9 * * *"),
    ("  Daily   21:05 ", "daily 21:05", "5 21 * * *"),
    ("weekdays 09:00", "weekdays 09:00", "0 9 * * 1-5"),
    ("hourly", "hourly", "0 * * * *"),
    ("hourly :15", "hourly :15", "15 * * * *"),
    ("every 15 minutes", "every 15 minutes", "*/15 * * * *"),
    ("every 5m", "every 5 minutes", "*/5 * * * *"),
    ("every 60 minutes", "hourly", "0 * * * *"),
    ("cron 0  9 * * 1-5", "cron 0 9 * * 1-5", "0 9 * * 1-5"),
])
def test_recurring_timetables_are_kept_in_one_written_form(text, normal, cron):
    timetable = parse_timetable(text)
    assert (timetable.text, timetable.cron) == (normal, cron)


@pytest.mark.parametrize("text, refusal", [
    ("every 7 minutes", "N must divide 60 (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30 or 60), got 7"),
    ("cron 61 * * * *", 'cron "61 * * * *": bad minute (the fields are minute hour day-of-month month day-of-week)'),
    ("cron 0 25 * * *", 'cron "0 25 * * *": bad hour'),
    ("cron 0 9 * * MONDAY", 'cron "0 9 * * MONDAY": bad day-of-week'),
    ("cron 0 0 30 2 *", 'cron "0 0 30 2 *": bad day-of-month'),
    ("cron * * *", 'cron "* * *" has 3 fields; want 5 (minute hour day-of-month month day-of-week)'),
    ("cron 0 0 9 * * 1-5", 'has 6 fields; want 5'),
    ("daily 25:00", 'daily takes a time of day, e.g. "daily 09:00"'),
    ("every day", 'write it as "every N minutes"'),
    ("at noon", '"at noon" is not a timetable; write one of "daily 09:00"'),
    ("", "timetable is required"),
])
def test_a_timetable_that_cannot_be_read_is_refused_in_one_line_saying_why(text, refusal):
    with pytest.raises(TimetableError) as caught:
        parse_timetable(text)
    assert refusal in str(caught.value) and "\n" not in str(caught.value)


def test_one_time_runs_absolute_relative_and_the_next_time_of_day():
    now = at(BERLIN, 2026, 11, 19, 14, 3, 20)
    assert parse_timetable("once 2026-11-20 09:00", now).text == "once 2026-11-20 09:00"
    assert parse_timetable("once in 20 minutes", now).text == "once 2026-11-19 14:23:20"
    assert parse_timetable("once in 5 seconds", now).text == "once 2026-11-19 14:03:25"
    assert parse_timetable("once 09:00", now).text == "once 2026-11-20 09:00"  # today's is past
    assert parse_timetable("once 15:00", now).text == "once 2026-11-19 15:00"
    with pytest.raises(TimetableError, match=r'"once 2026-11-01 09:00" is in the past \(it is 2026-11-19 14:03 now\)'):
        parse_timetable("once 2026-11-01 09:00", now)
    with pytest.raises(TimetableError, match="a stored one-time run names its date"):
        parse_timetable("once in 5 minutes")


# -- run times across DST changes and zones ----------------------------------------------------------


def runs(text: str, zone, start: datetime, count: int) -> list[str]:
    return [run.isoformat() for run in parse_timetable(text).runs_after(start, zone, count)]


def test_a_daily_time_the_clocks_skip_runs_once_right_after_the_change():
    # Berlin springs forward on 2026-03-29: 02:00 becomes 03:00.
    assert runs("daily 02:30", BERLIN, at(BERLIN, 2026, 3, 27, 12, 0), 3) == [
        "2026-03-28T02:30:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"]


def test_a_daily_time_the_clocks_repeat_runs_once():
    # Berlin falls back on 2026-10-25: 03:00 becomes 02:00 again.
    assert runs("daily 02:30", BERLIN, at(BERLIN, 2026, 10, 24, 12, 0), 3) == [
        "2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00", "2026-10-27T02:30:00+01:00"]


def test_every_thirty_minutes_keeps_real_thirty_minute_steps_through_the_repeated_hour():
    got = [datetime.fromisoformat(run) for run in runs("every 30 minutes", BERLIN, at(BERLIN, 2026, 10, 25, 1, 50), 5)]
    assert [run.strftime("%H:%M%z") for run in got] == ["02:00+0200", "02:30+0200", "02:00+0100", "02:30+0100",
                                                        "03:00+0100"]
    assert {b - a for a, b in zip(got, got[1:])} == {timedelta(minutes=30)}


def test_weekdays_at_nine_in_new_york_across_its_spring_change():
    # New York springs forward on Sunday 2026-03-08; the weekday runs stay at 09:00 local.
    assert runs("weekdays 09:00", NEW_YORK, at(NEW_YORK, 2026, 3, 5, 12, 0), 3) == [
        "2026-03-06T09:00:00-05:00", "2026-03-09T09:00:00-04:00", "2026-03-10T09:00:00-04:00"]


def test_half_hour_zones_and_a_half_hour_dst_change():
    assert runs("daily 09:00", ZoneInfo("Asia/Kolkata"), at(timezone.utc, 2026, 6, 1, 0, 0), 1) == [
        "2026-06-01T09:00:00+05:30"]
    # Lord Howe Island moves its clocks by half an hour (on 2026-04-05).
    assert runs("daily 09:00", ZoneInfo("Australia/Lord_Howe"), at(timezone.utc, 2026, 4, 3, 12, 0), 3) == [
        "2026-04-04T09:00:00+11:00", "2026-04-05T09:00:00+10:30", "2026-04-06T09:00:00+10:30"]


def test_a_one_time_run_in_a_skipped_hour_runs_that_far_after_the_change():
    once = parse_timetable("once 2026-03-29 02:30")
    assert once.next_after(at(BERLIN, 2026, 3, 28, 0, 0), BERLIN).isoformat() == "2026-03-29T03:30:00+02:00"


def test_unknown_zone_names_are_refused():
    assert zone_named("Europe/Berlin") == BERLIN
    with pytest.raises(ZoneError, match='unknown time zone "Mars/Olympus" \\(want an IANA name'):
        zone_named("Mars/Olympus")
    with pytest.raises(ZoneError, match="unknown time zone"):
        zone_named("../../etc/passwd")


# -- the schedules file ------------------------------------------------------------------------------


class Clock:
    def __init__(self, when: datetime):
        self.when = when

    def __call__(self) -> datetime:
        return self.when


@pytest.fixture
def clock() -> Clock:
    return Clock(at(BERLIN, 2026, 11, 19, 14, 0))   # a Thursday


@pytest.fixture
def book(tmp_path, clock) -> ScheduleBook:
    return ScheduleBook(tmp_path, BERLIN, now=clock)


def create(book: ScheduleBook, title="CI summary", timetable="weekdays 09:00", zone=None, prompt="check the CI"):
    return book.create(book.plan(title, prompt, timetable, zone))


def test_a_schedule_runs_in_its_own_zone_else_the_bots(book):
    create(book, "Berlin", "daily 09:00")
    create(book, "New York", "daily 09:00", zone="America/New_York")
    berlin, new_york = book.load()
    assert berlin.next_run.isoformat() == "2026-11-20T09:00:00+01:00" and berlin.zone == ""
    assert new_york.next_run.isoformat() == "2026-11-19T09:00:00-05:00" and new_york.zone == "America/New_York"
    assert "(America/New_York), active" in book.describe(new_york)


def test_a_run_moves_the_next_to_the_first_time_after_now_and_a_one_time_run_is_done(book, clock):
    create(book, "Hourly", "hourly")
    create(book, "Once", "once in 90 minutes")
    hourly, once = book.load()
    clock.when += timedelta(days=3)  # three days away: one run, then on from now
    book.advance(hourly.id)
    updated = book.advance(once.id)
    hourly, once = book.load()
    assert hourly.next_run == at(BERLIN, 2026, 11, 22, 15, 0) and hourly.last_run == clock.when
    assert updated.status == once.status == "done" and once.next_run is None
    with pytest.raises(ToolError, match="was a one-time run that is past; create a new one"):
        book.resume(once.id)


def test_a_skipped_run_moves_on_without_counting_as_run(book, clock):
    create(book, "Hourly", "hourly")
    [hourly] = book.load()
    clock.when += timedelta(hours=1)
    book.advance(hourly.id, ran=False)
    [hourly] = book.load()
    assert hourly.last_run is None and hourly.next_run == at(BERLIN, 2026, 11, 19, 16, 0)


def test_pause_and_resume_skip_the_paused_time(book, clock):
    create(book, "Daily", "daily 09:00")
    [daily] = book.load()
    book.pause(daily.id)
    clock.when += timedelta(days=2)
    assert "Resumed schedule" in book.resume(daily.id)
    [daily] = book.load()
    assert daily.status == "active" and daily.next_run == at(BERLIN, 2026, 11, 22, 9, 0)


def test_at_most_fifty_schedules_and_no_duplicates(book):
    create(book, "Same")
    with pytest.raises(ToolError, match="this schedule exists already"):
        create(book, "Same")
    for n in range(MAX_SCHEDULES - 1):
        create(book, f"S{n}", "hourly")
    with pytest.raises(ToolError) as caught:
        create(book, "One too many", "hourly")
    assert str(caught.value) == "this bot has 50 schedules, the most it may have; delete one first"


def test_the_approval_shows_the_timetable_in_words_and_the_next_three_runs(book):
    planned = book.plan("CI summary", "check the CI and summarise failures", "weekdays 09:00")
    detail = book.approval_detail(planned)
    assert "timetable: weekdays 09:00 — At 09:00 on Monday through Friday (Europe/Berlin)" in detail
    assert "next runs: Fri 2026-11-20 09:00, Mon 2026-11-23 09:00, Tue 2026-11-24 09:00" in detail
    assert "prompt:    check the CI and summarise failures" in detail


def test_the_trigger_message(book):
    planned = book.plan("CI summary", "check the CI", "weekdays 09:00")
    assert planned.trigger() == "Scheduled: CI summary (weekdays 09:00)\n\ncheck the CI"
    assert planned.trigger(missed="Thu 2026-11-19 09:00").startswith(
        "Scheduled: CI summary (weekdays 09:00) — a catch-up: it was due Thu 2026-11-19 09:00 while the bot "
        "was not running")


def test_the_file_reads_back_and_a_broken_line_is_kept(book, tmp_path):
    create(book, "Daily", "daily 09:00", zone="America/New_York")
    path = tmp_path / SCHEDULES_NAME
    path.write_text(path.read_text() + '{"id": "x", "timetable": "every 7 minutes"}\n')
    [daily] = book.load()
    assert daily.timetable.text == "daily 09:00" and daily.zone == "America/New_York"
    assert "line 2 is not a record iota can read" in book.warnings[0]
    book.pause(daily.id)
    assert path.read_text().splitlines()[1] == '{"id": "x", "timetable": "every 7 minutes"}'
