"""The `tasks`, `schedule` and `notes` tools through a Toolbox, the way the agent loop calls them:
the boundary each description states, what asks and what does not, and refusals as results."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from iota.bots.notes import NotesLibrary
from iota.bots.schedules import ScheduleBook
from iota.bots.tasks import TaskBook
from iota.tools.base import Toolbox
from iota.tools.notes import NotesTool
from iota.tools.schedule import ScheduleTool
from iota.tools.tasks import TasksTool

BERLIN = ZoneInfo("Europe/Berlin")
BOUNDARY = "Timed or recurring work → {}; do-now or unscheduled backlog work → {}; durable documents to maintain → {}."


@pytest.fixture
def changes() -> list[str]:
    return []


@pytest.fixture
def toolbox(tmp_path, changes) -> Toolbox:
    schedules = ScheduleBook(tmp_path, BERLIN, now=lambda: datetime(2026, 11, 19, 14, 0, tzinfo=BERLIN))
    return Toolbox([TasksTool(TaskBook(tmp_path), on_change=lambda: changes.append("tasks")),
                    ScheduleTool(schedules, on_change=lambda: changes.append("schedules")),
                    NotesTool(NotesLibrary(tmp_path))])


def test_each_description_draws_the_boundary_in_one_line_and_speaks_in_product_words(toolbox):
    descriptions = {tool.name: tool.description for tool in toolbox}
    assert BOUNDARY.format("the schedule tool", "tasks", "notes") in descriptions["tasks"]
    assert BOUNDARY.format("schedule", "the tasks tool", "notes") in descriptions["schedule"]
    assert BOUNDARY.format("the schedule tool", "the tasks tool", "notes") in descriptions["notes"]
    for name, description in descriptions.items():
        assert "in plain words, never of this tool" in description, name


async def test_tasks_never_ask_and_each_change_is_shown(toolbox, changes):
    tool = toolbox.get("tasks")
    created = await toolbox.call("tasks", {"action": "create", "title": "Migrate", "steps": ["a", "b"]})
    assert not created.is_error and "Migrate" in created.content and "1. [pending] a  ← current" in created.content
    task_id = created.content.split("(id ")[1].split(")")[0]
    for args in ({"action": "create", "title": "x", "steps": []}, {"action": "list"},
                 {"action": "update_step", "task": task_id, "step": 1, "status": "succeeded"}):
        assert tool.approval_request(args) is None
    done = await toolbox.call("tasks", {"action": "update_step", "task": task_id, "step": 1, "status": "succeeded",
                                        "note": "fine"})
    assert "1. [succeeded] a — fine" in done.content
    assert tool.target({"action": "update_step", "task": task_id[:6], "step": 2, "status": "in_progress"}) == \
        'update_step "Migrate" step 2 → in progress'
    listed = await toolbox.call("tasks", {"action": "list"})
    assert "Migrate" in listed.content
    assert changes == ["tasks", "tasks"]  # listing changes nothing


@pytest.mark.parametrize("args, refusal", [
    ({"action": "launch"}, "action must be create, add_steps, update, update_step, reorder or list"),
    ({"action": "update_step", "task": "nope", "step": 1}, 'no task has the id "nope"'),
    ({"action": "create", "title": "x", "steps": [1, 2]}, "steps must be a list of step titles"),
])
async def test_task_refusals_are_results(toolbox, changes, args, refusal):
    result = await toolbox.call("tasks", args)
    assert result.is_error and refusal in result.content
    assert changes == []


def test_schedule_create_and_delete_ask_every_time_and_nothing_else_does(toolbox, tmp_path):
    tool = toolbox.get("schedule")
    create = {"action": "create", "title": "CI", "prompt": "check", "timetable": "daily 09:00"}
    request = tool.approval_request(create)
    assert request.question == 'schedule wants to create "CI" (daily 09:00)'
    assert request.ask_every_time
    assert "next runs: Fri 2026-11-20 09:00, Sat 2026-11-21 09:00, Sun 2026-11-22 09:00" in request.detail
    for action in ("list", "pause", "resume"):
        assert tool.approval_request({"action": action, "schedule": "x"}) is None
    # Arguments that cannot be read ask nothing: the call fails with the reason.
    assert tool.approval_request({**create, "timetable": "cron 99 * * * *"}) is None
    assert tool.approval_request({"action": "delete", "schedule": "nope"}) is None


async def test_schedule_calls_and_their_refusals(toolbox, changes):
    made = await toolbox.call("schedule", {"action": "create", "title": "CI", "prompt": "check",
                                           "timetable": "weekdays 9:00", "timezone": "America/New_York"})
    assert made.content.startswith('Created schedule "CI".') and "(America/New_York), active" in made.content
    listed = await toolbox.call("schedule", {"action": "list"})
    assert listed.content.startswith("It is Thu 2026-11-19 14:00 in Europe/Berlin.")
    bad = await toolbox.call("schedule", {"action": "create", "title": "CI", "prompt": "check",
                                          "timetable": "cron 0 9 * *"})
    assert bad.is_error and bad.content == ('cron "0 9 * *" has 4 fields; want 5 (minute hour day-of-month month '
                                            'day-of-week), e.g. "cron 0 9 * * 1-5"')
    zone = await toolbox.call("schedule", {"action": "create", "title": "CI", "prompt": "check",
                                           "timetable": "daily 09:00", "timezone": "Europe/Atlantis"})
    assert zone.is_error and 'unknown time zone "Europe/Atlantis"' in zone.content
    assert changes == ["schedules"]


async def test_notes_calls(toolbox):
    made = await toolbox.call("notes", {"action": "create", "title": "Brief", "summary": "what", "body": "# Brief"})
    assert made.content.startswith("Created note brief")
    assert (await toolbox.call("notes", {"action": "read", "note": "brief"})).content.endswith("# Brief\n")
    assert "- brief: Brief — what" in (await toolbox.call("notes", {"action": "list"})).content
    assert toolbox.get("notes").approval_request({"action": "delete", "note": "brief"}) is None
    missing = await toolbox.call("notes", {"action": "read", "note": "../MEMORY"})
    assert missing.is_error and "no note is named" in missing.content
