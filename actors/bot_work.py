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
from datetime import timezone
from pathlib import Path
from typing import Callable

from actors.commands import work as work_commands
from actors.auto_continue import AutoContinue
from actors.lane import Lane
from actors.scheduler import Scheduler
from iota.bots.notes import NotesLibrary
from iota.bots.schedules import ScheduleBook
from iota.bots.tasks import TaskBook
from iota.zones import local_zone, zone_named
from iota.chat import ChatSetup
from iota.messages import Message
from iota.tools.notes import NotesTool
from iota.tools.schedule import ScheduleTool
from iota.tools.tasks import TasksTool


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
    )
