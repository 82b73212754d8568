"""A bot's work — tasks, schedules, notes — put together for one chat.

    ~/.iota/bots/<name>/tasks.jsonl, schedules.jsonl, notes/   (iota.bots.tasks, schedules, notes)
        ├─ the tools        tasks, schedule, notes                   (iota.tools.*)
        ├─ the lane hooks   before each message: the notes catalog into the system prompt, the
        │                   open tasks onto the message; after each turn: auto-continue
        ├─ the actor        the scheduler, under the chat's supervisor
        └─ the commands     /tasks, /schedules, /notes

Schedules run in the agent's `timezone:` (an IANA name), else the machine's zone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from actors.commands import work as work_commands
from actors.auto_continue import AutoContinue
from actors.lane import Lane
from actors.scheduler import Scheduler
from iota.bots.notes import NotesLibrary
from iota.bots.schedules import ACTIVE, ScheduleBook, shown
from iota.bots.tasks import TaskBook, card_lines
from iota.errors import ToolError
from iota.zones import local_zone, zone_named
from iota.chat import ChatSetup
from iota.messages import Message
from iota.tools.notes import NotesTool
from iota.tools.schedule import ScheduleTool
from iota.tools.code.shared import byte_count
from iota.tools.tasks import TasksTool

SEPARATOR = " · "


@dataclass
class BotWork:
    scheduler: Scheduler
    tools: list
    before_send: list[Callable] = field(default_factory=list)
    after_turn: list[Callable] = field(default_factory=list)
    on_start: list[Callable] = field(default_factory=list)
    actors: list[Callable] = field(default_factory=list)
    commands: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    tasks: TaskBook | None = None
    schedules: ScheduleBook | None = None

    def card_rows(self, memory_bytes: int, last_activity: datetime | None) -> tuple[str, ...]:
        """What the start card says of the bot: `memory 1.2 KB · task "Tidy" step 1/2 · next
        ⏰ Stretch Tue 09:00`, then `last activity …`. A file that cannot be read says nothing
        here (the chat says why once it runs)."""
        facts = [f"memory {byte_count(memory_bytes)}"]
        try:
            open_tasks = card_lines(self.tasks.load()) if self.tasks is not None else ()
        except ToolError:
            open_tasks = ()
        facts.append(f"task {open_tasks[0]}" if open_tasks else "no open task")
        try:
            upcoming = [s for s in self.schedules.load() if s.status == ACTIVE and s.next_run is not None] \
                if self.schedules is not None else []
        except ToolError:
            upcoming = []
        if upcoming:
            first = min(upcoming, key=lambda s: s.next_run.timestamp())
            facts.append(f"next ⏰ {first.title} {shown(first.next_run, self.schedules.zone_of(first))}")
        else:
            facts.append("no schedule")
        when = last_activity.astimezone().strftime("%Y-%m-%d %H:%M") if last_activity else "none yet"
        return (SEPARATOR.join(facts), f"last activity {when}")


def open_bot_work(setup: ChatSetup, bot_dir: Path) -> BotWork:
    warnings = []
    if setup.agent.timezone:
        zone = zone_named(setup.agent.timezone)  # checked when the config was loaded
    else:
        zone = local_zone()
        if zone is None:
            zone = timezone.utc
            warnings.append("the machine's time zone cannot be read; schedules run in UTC "
                            f"(set timezone: on agents.{setup.agent.name})")
    tasks = TaskBook(bot_dir)
    schedules = ScheduleBook(bot_dir, zone)
    notes = NotesLibrary(bot_dir)
    auto_continue = AutoContinue(tasks, setup.agent.auto_continue)
    scheduler = Scheduler(schedules)

    async def refresh_notes(lane: Lane, user: Message) -> None:
        setup.notes_catalog = notes.catalog()

    return BotWork(
        scheduler=scheduler,
        tools=[TasksTool(tasks, on_change=auto_continue.refresh), ScheduleTool(schedules, on_change=scheduler.wake),
               NotesTool(notes)],
        before_send=[refresh_notes, auto_continue.before_send],
        after_turn=[auto_continue.after_turn],
        on_start=[auto_continue.start],
        actors=[scheduler.run],
        commands={
            "tasks": ("what the bot is working on; resume a paused task, delete a backlog one, stop one",
                      work_commands.tasks_command(tasks, auto_continue.load, auto_continue.resumed)),
            "schedules": ("the bot's schedules and their next runs; pause, resume or delete one",
                          work_commands.schedules_command(schedules, scheduler.wake)),
            "notes": ("the documents the bot keeps", work_commands.notes_command(notes)),
        },
        warnings=warnings,
        tasks=tasks,
        schedules=schedules,
    )
