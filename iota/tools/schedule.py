"""The `schedule` tool: turns a bot starts by itself at set times (iota.bots.schedules).

`create` and `delete` change what the bot will do while nobody watches, so each asks the person,
every time, whatever the `auto_*` settings say; the question shows the timetable in words and its
next three run times. `list`, `pause` and `resume` do not ask: listing only reads, and pausing or
resuming a schedule the person approved changes nothing they did not already allow.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from iota.bots.schedules import Schedule, ScheduleBook, find_schedule
from iota.bots.timetables import TIMETABLE_FORMS
from iota.memory.document import go_quote
from iota.tools.base import ApprovalRequest, Tool, ToolResult
from iota.errors import ToolError

BOUNDARY = ("Timed or recurring work → schedule; do-now or unscheduled backlog work → the tasks tool; "
            "durable documents to maintain → notes.")

DESCRIPTION = (
    "Have the bot do something at set times while it runs: a reminder, a daily check, a weekly report. "
    + BOUNDARY + " create takes a title, the prompt you will be sent each time it runs, and a timetable: "
    + TIMETABLE_FORMS + "; times are in timezone (an IANA name) if given, else the user's. The user is asked "
    "to approve every create and delete. When it runs you get \"Scheduled: <title> (<timetable>)\" and the "
    "prompt; nothing runs while the bot is closed, and a run missed meanwhile runs once when it starts again. "
    "list shows the schedules, their ids and next runs, and the time now. Talk to the user of schedules in "
    "plain words, never of this tool."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["create", "list", "pause", "resume", "delete"]},
        "title": {"type": "string", "description": "create: a short name, e.g. \"CI summary\"."},
        "prompt": {"type": "string", "description": "create: what to do each time it runs, as you would be asked."},
        "timetable": {"type": "string", "description": f"create: {TIMETABLE_FORMS}."},
        "timezone": {"type": "string", "description": "create: an IANA time zone, e.g. Europe/Berlin (optional)."},
        "schedule": {"type": "string", "description": "pause, resume, delete: the schedule's id (or its first "
                                                      "characters), from create or list."},
    },
    "required": ["action"],
}


class ScheduleTool(Tool):
    name = "schedule"
    description = DESCRIPTION
    parameters = PARAMETERS

    def __init__(self, book: ScheduleBook, on_change: Callable[[], None] = lambda: None):
        self.book = book
        self.on_change = on_change  # wakes the scheduler, which sleeps until the next run
        # The schedule the person was last shown for a create (the call's arguments, the plan):
        # a yes stores that plan, so "in 45 seconds" runs at the time approved, not 45 seconds
        # after the person answered.
        self._asked: tuple[str, Schedule] | None = None

    def target(self, args: dict[str, Any]) -> str:
        action = args.get("action") if isinstance(args.get("action"), str) else ""
        about = args.get("title") if action == "create" else args.get("schedule")
        return f"{action} {go_quote(about) if isinstance(about, str) and about else ''}".strip()

    def approval_request(self, args: dict[str, Any]) -> ApprovalRequest | None:
        """create and delete ask, always; arguments that cannot be read ask nothing (the call fails
        with the reason, and nothing was changed)."""
        action = args.get("action")
        try:
            if action == "create":
                schedule = self.book.plan(args.get("title"), args.get("prompt"), args.get("timetable"),
                                          args.get("timezone"))
            elif action == "delete":
                schedule = find_schedule(self.book.load(), args.get("schedule"))
            else:
                return None
        except ToolError:
            return None
        grant = json.dumps(args, sort_keys=True, default=str)
        if action == "create":
            self._asked = (grant, schedule)
        return ApprovalRequest(self.name, self.name, self.book.approval_detail(schedule),
                               action=f"{action} {go_quote(schedule.title)} ({schedule.timetable.words})",
                               grant=grant, ask_every_time=True)

    async def run(self, args: dict[str, Any]) -> ToolResult:
        action = args.get("action")
        book = self.book
        if action == "list":
            return ToolResult(book.listing())
        if action == "create":
            asked, self._asked = self._asked, None
            if asked is not None and asked[0] == json.dumps(args, sort_keys=True, default=str):
                planned = asked[1]
            else:
                planned = book.plan(args.get("title"), args.get("prompt"), args.get("timetable"), args.get("timezone"))
            result = book.create(planned)
        elif action == "pause":
            result = book.pause(args.get("schedule"))
        elif action == "resume":
            result = book.resume(args.get("schedule"))
        elif action == "delete":
            result = book.delete(args.get("schedule"))
        else:
            raise ToolError(f"action must be create, list, pause, resume or delete, got {action!r}")
        self.on_change()
        return ToolResult(result)
