"""A running bot's `state.json`: what it is doing, for `iota bots` and `iota bots watch`.

    ~/.iota/bots/<name>/state.json   beside the lock, only while the bot runs

    {"agent": "coder", "pid": 4242, "project": "/home/me/app", "state": "working",
     "since": "2025-06-01T10:00:00+02:00", "task": "migrate db", "step": "2/5",
     "next_schedule": "2025-06-02T09:00:00+02:00", "last_activity": "2025-06-01T09:58:12+02:00",
     "tmux_pane": "%3", "tmux_socket": "/tmp/tmux-1000/default"}

The chat writes it when its state changes (the notifier's state-file outlet, actors/state_file.py)
and removes it on exit. The state is one of the host's words: idle, working, compacting, waiting
for you, failing. `task` and `step` are the first task in progress and where it is; `next_schedule`
the soonest run of an active schedule; `last_activity` when the bot last began or finished a job.

Written as a whole new file renamed over the old, so a reader sees one or the other, never half.
Not fsynced: the file describes a running process, and after a crash it is stale whatever it
says. A stale file — a bot killed with SIGKILL leaves one — is recognised by the lock: a live
bot holds its lock with its pid in it (iota.bots.roster.lock_holder), so a file whose pid is not
the lock's holder is ignored, even once the pid has been reused by another process.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from iota.bots.bot import LOCK_NAME
from iota.bots.records import read_table
from iota.bots.roster import lock_holder
from iota.bots.schedules import ACTIVE, SCHEDULES_NAME, decode_schedule
from iota.bots.tasks import IN_PROGRESS, TaskBook
from iota.text import one_line

STATE_NAME = "state.json"


@dataclass(frozen=True)
class BotState:
    """One running bot as its state file says."""

    agent: str
    pid: int
    project: str
    state: str
    since: str                      # ISO 8601 with offset
    task: str | None = None
    step: str | None = None         # `2/5`: the current step's place among the task's steps
    next_schedule: str | None = None
    last_activity: str | None = None
    tmux_pane: str | None = None    # `$TMUX_PANE`, where `iota bots watch` jumps to
    tmux_socket: str | None = None  # the pane's tmux server

    def to_record(self) -> dict[str, Any]:
        return {"agent": self.agent, "pid": self.pid, "project": self.project, "state": self.state,
                "since": self.since, "task": self.task, "step": self.step,
                "next_schedule": self.next_schedule, "last_activity": self.last_activity,
                "tmux_pane": self.tmux_pane, "tmux_socket": self.tmux_socket}


def work_in_hand(directory: Path) -> tuple[str | None, str | None, str | None]:
    """The bot's task in progress, its step (`2/5`), and its next scheduled run, from its files."""
    task = step = None
    for candidate in TaskBook(directory).load():
        if candidate.status == IN_PROGRESS:
            task = candidate.title
            current = candidate.current
            if current is not None and candidate.steps:
                step = f"{candidate.steps.index(current) + 1}/{len(candidate.steps)}"
            break
    runs = [schedule.next_run for schedule in read_table(directory / SCHEDULES_NAME, decode_schedule).items
            if schedule.status == ACTIVE and schedule.next_run is not None]
    next_schedule = min(runs).astimezone().isoformat(timespec="seconds") if runs else None
    return task, step, next_schedule


def write_state(directory: Path, state: BotState) -> None:
    """Replace the bot's state file (see the module's notes: atomic, not fsynced)."""
    path = directory / STATE_NAME
    temporary = directory / f".{STATE_NAME}.{os.getpid()}.tmp"
    temporary.write_text(json.dumps(state.to_record(), ensure_ascii=False) + "\n")
    os.replace(temporary, path)


def remove_state(directory: Path) -> None:
    try:
        (directory / STATE_NAME).unlink()
    except FileNotFoundError:
        pass


def read_state(directory: Path) -> BotState | None:
    """The state of the bot in `directory` if it runs: None when it has no state file, when the file
    cannot be read, or when it is stale (its pid does not hold the bot's lock)."""
    try:
        record = json.loads((directory / STATE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    state = _decode(record)
    if state is None:
        return None
    running, holder = lock_holder(directory / LOCK_NAME)
    return state if running and holder == state.pid else None


def _decode(record: object) -> BotState | None:
    if not isinstance(record, dict):
        return None
    # Every text is made one plain line: the task's title is the model's, and `iota bots` and the
    # watch print it to a terminal, where an escape sequence could retitle it or write the clipboard.
    pid = record.get("pid")
    texts = {key: record.get(key) for key in ("agent", "project", "state", "since")}
    if type(pid) is not int or not all(isinstance(value, str) for value in texts.values()):
        return None
    optional = {key: one_line(value) if isinstance(value := record.get(key), str) else None
                for key in ("task", "step", "next_schedule", "last_activity", "tmux_pane", "tmux_socket")}
    return BotState(pid=pid, **{key: one_line(value) for key, value in texts.items()}, **optional)


def seconds_since(stamp: str, now: datetime | None = None) -> float:
    try:
        then = datetime.fromisoformat(stamp)
    except ValueError:
        return 0.0
    if then.tzinfo is None:
        then = then.replace(tzinfo=timezone.utc)
    return max(0.0, ((now or datetime.now(timezone.utc)) - then).total_seconds())


def state_line(state: BotState, now: datetime | None = None) -> str:
    """`working · 12s · task "migrate db" 2/5`: what `iota bots` says of a running bot."""
    parts = [state.state, short_duration(seconds_since(state.since, now))]
    if state.task:
        parts.append(f'task "{state.task}"' + (f" {state.step}" if state.step else ""))
    return " · ".join(parts)


def short_duration(seconds: float) -> str:
    """`12s`, `4m`, `3h`, `2d`."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"
