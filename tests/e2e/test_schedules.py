"""A bot's schedules end to end: the real `iota` in tmux against the fake model."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timedelta, timezone

import pytest

from iota import paths
from iota.bots.schedules import ScheduleBook
from iota.zones import local_zone
from tests.e2e.conftest import IOTA, READY
from tests.support.fake_model import tool_call
from tests.support.terminal import terminal  # noqa: F401  (the fixture)

# The setting the README recommends for a bot: nothing a tool does waits for a yes — except a
# schedule, which asks every time whatever these say.
BOT = ("  coder:\n    mode: bot\n    model: m\n    timezone: Europe/Berlin\n    tools:\n"
       "      code: {auto_write: true}\n      shell: {auto_run: true}\n")


@pytest.fixture
def bot(iota, terminal):
    iota.write_config(BOT)

    def start():
        screen = terminal.start([IOTA, "run", "coder"], cols=120, rows=40, env=iota.env(), cwd=iota.cwd)
        screen.wait_for(READY)
        return screen

    return start


def session_records() -> list[dict]:
    pointer = json.loads((paths.bots_dir() / "coder" / "bot.json").read_text())
    log = paths.sessions_dir() / pointer["session"] / "messages.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_a_once_schedule_a_few_seconds_ahead_fires_a_visible_reply(iota, bot):
    model = iota.model
    model.reply(tool_calls=[tool_call("schedule", {"action": "create", "title": "Stretch",
                                                   "prompt": "Remind me to stretch.", "timetable": "once in 3 seconds"})])
    model.reply("I will remind you in a few seconds.")
    model.reply("Time to stretch!")
    screen = bot()
    screen.type("remind me to stretch in a few seconds")
    screen.send_keys("Enter")
    # The whole question, not its first line: a capture can catch the pane while it is being drawn.
    asked = screen.wait_for(re.compile(r'schedule wants to create "Stretch"(.|\n)*Deny'))
    assert re.search(r"timetable: once \d{4}-\d\d-\d\d \d\d:\d\d:\d\d — once, at .* \(Europe/Berlin\)", asked), asked
    assert "Allow once" in asked and "for this session" not in asked
    screen.send_keys("Enter")
    screen.wait_for("I will remind you in a few seconds.")
    asked_at = time.monotonic()
    screen.wait_for("Time to stretch!", timeout=15)
    assert time.monotonic() - asked_at < 10
    shown = screen.capture()
    # The trigger is hidden: the prompt is on screen in the answered question and in the tool's
    # result as the model read it, not as a message of its own.
    assert "Scheduled: Stretch" not in shown and shown.count("Remind me to stretch.") == 2
    trigger = model.requests[2].body["messages"][-1]
    assert trigger["role"] == "user" and trigger["content"].startswith("Scheduled: Stretch (once ")
    assert trigger["content"].endswith("\n\nRemind me to stretch.")
    hidden = [r for r in session_records() if r.get("hidden")]
    assert [r["content"].split(" (")[0] for r in hidden] == ["Scheduled: Stretch"]
    [schedule] = ScheduleBook(paths.bots_dir() / "coder", timezone.utc).load()
    assert schedule.status == "done"
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0


def test_a_schedule_due_while_the_bot_was_closed_runs_once_at_start_and_says_so(iota, bot):
    clock = [datetime.now(timezone.utc) - timedelta(days=2, hours=5)]
    book = ScheduleBook(paths.bots_dir() / "coder", local_zone(), now=lambda: clock[0])
    book.create(book.plan("Hourly check", "check the CI", "hourly"))
    iota.model.reply("The CI is green.")
    screen = bot()
    screen.wait_for(re.compile(r'Catching up: schedule "Hourly check" \(hourly\) was due \w{3} [\d-]+ [\d:]+ while the '
                               r"bot\s+was not running; it runs once\s+now"))
    screen.wait_for("The CI is green.")
    time.sleep(1)
    assert len(iota.model.requests) == 1  # once, not once for each of the 53 hours missed
    trigger = iota.model.requests[0].body["messages"][-1]["content"]
    assert trigger.startswith("Scheduled: Hourly check (hourly) — a catch-up: it was due ")
    screen.type("/schedules")
    screen.send_keys("Enter")
    screen.wait_for(re.compile(r'"Hourly check" — hourly \(.*\), active'))
    screen.wait_for("Change a schedule?")
    screen.send_keys("Escape")
    time.sleep(0.3)  # a key straight after Esc would be read as Alt+key
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
