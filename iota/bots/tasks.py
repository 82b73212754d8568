"""A bot's long-running tasks: durable checklists in `~/.iota/bots/<name>/tasks.jsonl`.

A task is a job the bot works through step by step, possibly over many turns and restarts:

    task status   backlog      a pool; only when the person asks for it, never worked on by itself
                  pending      queued: it starts when the tasks before it are done
                  in_progress  being worked on; auto-continue follows it
                  done         finished (whether it went well is in its steps, not here)

    step status   open:     pending · in_progress · blocked (waits for the person)
                  terminal: succeeded · failed · cancelled

A task whose steps are all terminal is done; when a task is done and none is in progress, the
oldest pending task starts. A task is *runnable* while it is in progress, has an open step that
is not blocked, and has no blocked step: that is what the bot continues by itself after a turn
(actors.auto_continue). A blocked step stops it, because the steps after it are usually waiting
on it.

The file is one task a line, rewritten atomically at every change (iota.bots.records), so a
`kill -9` in the middle of an update leaves the task as it was before or after, and the bot
picks up where it left off. Every change reads the file first, so a person's edit is never
written over with an older copy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from iota.bots.records import clip, find, new_id, read_table, write_table
from iota.memory.document import go_quote
from iota.sessions.meta import now_stamp
from iota.errors import ToolError

TASKS_NAME = "tasks.jsonl"

BACKLOG, PENDING, IN_PROGRESS, DONE = "backlog", "pending", "in_progress", "done"
TASK_STATUSES = (BACKLOG, PENDING, IN_PROGRESS, DONE)
BLOCKED = "blocked"
OPEN_STEP_STATUSES = (PENDING, IN_PROGRESS, BLOCKED)
TERMINAL_STEP_STATUSES = ("succeeded", "failed", "cancelled")
STEP_STATUSES = OPEN_STEP_STATUSES + TERMINAL_STEP_STATUSES

# What keeps the open-tasks block sent with every turn small.
TITLE_LIMIT = 200
NOTE_LIMIT = 1000
STEPS_LIMIT = 50
BLOCK_TASKS = 5           # tasks in progress shown in full with every message
BLOCK_NOTE_LIMIT = 160    # characters of a step's note there (the tasks tool shows it whole)
Result = TypeVar("Result")


@dataclass
class Step:
    n: int          # the step's number: stable, never reused in its task, whatever the order
    title: str
    status: str = PENDING
    note: str = ""  # a result, or why it is blocked

    @property
    def open(self) -> bool:
        return self.status in OPEN_STEP_STATUSES

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"n": self.n, "title": self.title, "status": self.status}
        if self.note:
            record["note"] = self.note
        return record


@dataclass
class Task:
    id: str
    title: str
    status: str
    steps: list[Step] = field(default_factory=list)
    created: str = ""
    updated: str = ""
    paused: str = ""  # why auto-continue stopped on it by itself (no progress); the person resumes it

    @property
    def finished_steps(self) -> int:
        return sum(not step.open for step in self.steps)

    @property
    def blocked(self) -> Step | None:
        return next((step for step in self.steps if step.status == BLOCKED), None)

    @property
    def current(self) -> Step | None:
        """The step being worked on: the first in progress, else the first open one (pending or
        blocked); None when every step is finished."""
        working = next((step for step in self.steps if step.status == IN_PROGRESS), None)
        return working or next((step for step in self.steps if step.open), None)

    @property
    def runnable(self) -> bool:
        """In progress, with a step to do, none blocked and not paused: the bot may go on with it by itself."""
        return self.status == IN_PROGRESS and self.blocked is None and self.current is not None and not self.paused

    def progress_mark(self) -> tuple:
        """What changes when work is done on the task: its status, steps and their notes (not the
        time stamps, which a no-op update touches too)."""
        return (self.title, self.status, tuple((s.n, s.title, s.status, s.note) for s in self.steps))

    def step(self, number: object) -> Step:
        if isinstance(number, bool) or not isinstance(number, int):
            raise ToolError(f"step must be a step number, got {number!r}")
        for step in self.steps:
            if step.n == number:
                return step
        numbers = ", ".join(str(step.n) for step in self.steps) or "none"
        raise ToolError(f"task {go_quote(self.title)} has no step {number} (its steps: {numbers})")

    def to_record(self) -> dict[str, Any]:
        record = {"id": self.id, "title": self.title, "status": self.status,
                  "steps": [step.to_record() for step in self.steps], "created": self.created,
                  "updated": self.updated}
        if self.paused:
            record["paused"] = self.paused
        return record


def decode_task(record: dict) -> Task:
    """A task from its line; ValueError for anything that is not one."""
    def text(source: dict, key: str, required: bool = True) -> str:
        value = source.get(key, "" if not required else None)
        if not isinstance(value, str) or (required and not value):
            raise ValueError(f"{key} is missing or not text")
        return value

    status = text(record, "status")
    if status not in TASK_STATUSES:
        raise ValueError(f"unknown task status {go_quote(status)}")
    steps = []
    raw_steps = record.get("steps", [])
    if not isinstance(raw_steps, list):
        raise ValueError("steps is not a list")
    for raw in raw_steps:
        if not isinstance(raw, dict) or isinstance(raw.get("n"), bool) or not isinstance(raw.get("n"), int):
            raise ValueError("a step has no number")
        step_status = text(raw, "status")
        if step_status not in STEP_STATUSES:
            raise ValueError(f"unknown step status {go_quote(step_status)}")
        steps.append(Step(raw["n"], text(raw, "title"), step_status, text(raw, "note", required=False)))
    return Task(text(record, "id"), text(record, "title"), status, steps, text(record, "created", False),
                text(record, "updated", False), text(record, "paused", False))


# -- the file ------------------------------------------------------------------------------------


class TaskBook:
    """The bot's tasks file. Each change reads it, applies, and writes it back atomically."""

    def __init__(self, directory: Path, now: Callable[[], str] = now_stamp):
        self.path = directory / TASKS_NAME
        self._now = now
        self.warnings: list[str] = []  # what the last read could not use (shown once by the chat)

    def load(self) -> list[Task]:
        table = read_table(self.path, decode_task)
        self.warnings = table.warnings
        return table.items

    def change(self, edit: Callable[[list[Task]], Result]) -> Result:
        """Apply `edit` to the tasks as they are on disk now and save them; its text is returned.
        A refusal (ToolError) saves nothing."""
        table = read_table(self.path, decode_task)
        result = edit(table.items)
        write_table(self.path, [task.to_record() for task in table.items], table.kept)
        return result

    # -- the changes; each returns what the model (or the person) is told --

    def create(self, title: object, steps: object, status: object = None) -> str:
        def edit(tasks: list[Task]) -> str:
            name = _title(title, "title")
            chosen = _status(status, default=PENDING if any(t.status == IN_PROGRESS for t in tasks) else IN_PROGRESS)
            if chosen == DONE:
                raise ToolError("a new task cannot be done already: create it in_progress, pending or backlog")
            stamp = self._now()
            task = Task(new_id(), name, chosen, [], stamp, stamp)
            _add_steps(task, steps, after=None)
            tasks.append(task)
            queued = " (queued behind the task in progress)" if chosen == PENDING else ""
            return f"Created{queued}: {describe(task)}"
        return self.change(edit)

    def add_steps(self, reference: object, steps: object, after: object = None) -> str:
        def edit(tasks: list[Task]) -> str:
            task = find_task(tasks, reference)
            _add_steps(task, steps, after)
            task.updated = self._now()
            return describe(task)
        return self.change(edit)

    def update(self, reference: object, title: object = None, status: object = None) -> str:
        def edit(tasks: list[Task]) -> str:
            task = find_task(tasks, reference)
            if title is not None:
                task.title = _title(title, "title")
            said = []
            if status is not None:
                chosen = _status(status)
                if chosen == DONE and task.status != DONE:
                    cancelled = _finish(task)
                    if cancelled:
                        said.append(f"{cancelled} open step{'s were' if cancelled > 1 else ' was'} marked cancelled")
                task.status = chosen
            task.updated = self._now()
            said += _advance_queue(tasks) if task.status == DONE else []
            return "\n".join([describe(task), *said])
        return self.change(edit)

    def update_step(self, reference: object, number: object, status: object = None, title: object = None,
                    note: object = None) -> str:
        def edit(tasks: list[Task]) -> str:
            task = find_task(tasks, reference)
            step = task.step(number)
            if status is not None:
                step.status = _step_status(status)
            if title is not None:
                step.title = _title(title, "title")
            if note is not None:
                step.note = clip(note, NOTE_LIMIT, "note") if note else ""
            said = []
            if task.steps and task.status != DONE and not any(s.open for s in task.steps):
                task.status = DONE
                said.append(f"Every step is finished: task {go_quote(task.title)} is done.")
                said += _advance_queue(tasks)
            task.updated = self._now()
            return "\n".join([describe(task), *said])
        return self.change(edit)

    def reorder(self, reference: object, order: object) -> str:
        def edit(tasks: list[Task]) -> str:
            task = find_task(tasks, reference)
            numbers = [step.n for step in task.steps]
            if not isinstance(order, list) or sorted(order) != sorted(numbers) or \
                    any(isinstance(n, bool) for n in order):
                raise ToolError(f"order must list each step number of the task once, got {order!r} "
                                f"(its steps: {', '.join(map(str, numbers)) or 'none'})")
            by_number = {step.n: step for step in task.steps}
            task.steps = [by_number[n] for n in order]
            task.updated = self._now()
            return describe(task)
        return self.change(edit)

    def delete(self, reference: object) -> str:
        """The person's: a task in the backlog goes for good."""
        def edit(tasks: list[Task]) -> str:
            task = find_task(tasks, reference)
            if task.status != BACKLOG:
                raise ToolError(f"task {go_quote(task.title)} is {words(task.status)}; only a backlog task is deleted")
            tasks.remove(task)
            return f"Deleted task {go_quote(task.title)}."
        return self.change(edit)

    def pause(self, reference: object, reason: str) -> str:
        """Auto-continue's: the task is not continued by itself (here or after a restart) until the
        person resumes it, by typing or from /tasks."""
        def edit(tasks: list[Task]) -> str:
            task = find_task(tasks, reference)
            task.paused = reason
            return f"Paused task {go_quote(task.title)}."
        return self.change(edit)

    def resume(self, reference: object) -> str:
        """The person's: a task paused for want of progress may be continued by itself again."""
        def edit(tasks: list[Task]) -> str:
            task = find_task(tasks, reference)
            if not task.paused:
                raise ToolError(f"task {go_quote(task.title)} is not paused")
            task.paused = ""
            return f"Resumed task {go_quote(task.title)}."
        return self.change(edit)

    def resume_all(self) -> list[str]:
        """The person typed: every paused task may go on; the titles of those resumed."""
        def edit(tasks: list[Task]) -> list[str]:
            resumed = [task for task in tasks if task.paused]
            for task in resumed:
                task.paused = ""
            return [task.title for task in resumed]
        if not any(task.paused for task in self.load()):
            return []  # nothing to change: the file is not rewritten on every message
        return self.change(edit)

    def stop(self, reference: object) -> str:
        """The person's: a task in progress or queued goes back to the backlog, its steps kept."""
        def edit(tasks: list[Task]) -> str:
            task = find_task(tasks, reference)
            if task.status not in (IN_PROGRESS, PENDING):
                raise ToolError(f"task {go_quote(task.title)} is {words(task.status)}, not running")
            task.status = BACKLOG
            task.updated = self._now()
            return f"Stopped task {go_quote(task.title)}: it is in the backlog, its steps kept."
        return self.change(edit)


def find_task(tasks: Sequence[Task], reference: object) -> Task:
    return find(tasks, reference, "task", lambda task: task.id)


def _title(value: object, what: str) -> str:
    text = clip(value, TITLE_LIMIT, what)
    if not text:
        raise ToolError(f"{what} is empty")
    return text


def _status(value: object, default: str | None = None) -> str:
    if value is None and default is not None:
        return default
    if value not in TASK_STATUSES:
        raise ToolError(f"a task's status is one of {', '.join(TASK_STATUSES)}, got {value!r}"
                        + (" (a step's status is not a task's)" if value in STEP_STATUSES else ""))
    return str(value)


def _step_status(value: object) -> str:
    if value not in STEP_STATUSES:
        hint = " (a finished step is succeeded; done is for a whole task)" if value == DONE else ""
        raise ToolError(f"a step's status is one of {', '.join(STEP_STATUSES)}, got {value!r}{hint}")
    return str(value)


def _add_steps(task: Task, steps: object, after: object) -> None:
    if steps is None:
        steps = []
    if not isinstance(steps, list) or not all(isinstance(step, str) for step in steps):
        raise ToolError("steps must be a list of step titles")
    if len(task.steps) + len(steps) > STEPS_LIMIT:
        raise ToolError(f"a task has at most {STEPS_LIMIT} steps; split the work into several tasks")
    next_number = max((step.n for step in task.steps), default=0) + 1
    new = [Step(next_number + i, _title(title, "a step's title")) for i, title in enumerate(steps)]
    at = len(task.steps) if after is None else task.steps.index(task.step(after)) + 1
    task.steps[at:at] = new


def _finish(task: Task) -> int:
    """Mark the open steps of a task being closed as cancelled; how many there were."""
    cancelled = 0
    for step in task.steps:
        if step.open:
            step.status, cancelled = "cancelled", cancelled + 1
    return cancelled


def _advance_queue(tasks: list[Task]) -> list[str]:
    """When nothing is in progress any more, the oldest pending task starts."""
    if any(task.status == IN_PROGRESS for task in tasks):
        return []
    queued = next((task for task in tasks if task.status == PENDING), None)
    if queued is None:
        return []
    queued.status = IN_PROGRESS
    return [f"Next in the queue, now in progress: task {queued.id} {go_quote(queued.title)}."]


# -- what is shown -------------------------------------------------------------------------------


def words(status: str) -> str:
    """A status in product words: `in_progress` → `in progress`."""
    return status.replace("_", " ")


def describe(task: Task, *, note_limit: int = NOTE_LIMIT) -> str:
    """A task as the model reads it: its line, then one line a step (notes cut at `note_limit`)."""
    progress = f"{task.finished_steps} of {len(task.steps)} steps finished" if task.steps else "no steps yet"
    lines = [f"Task {go_quote(task.title)} — {words(task.status)}, {progress} (id {task.id})"]
    current = task.current if task.status != DONE else None
    for step in task.steps:
        mark = "  ← current" if step is current else ""
        note = f" — {_cut(step.note, note_limit)}" if step.note else ""
        lines.append(f"  {step.n}. [{step.status}] {step.title}{note}{mark}")
    return "\n".join(lines)


def open_tasks_block(tasks: Sequence[Task]) -> str:
    """What is sent with every turn while a task is in progress ("" when none is): the tasks in
    progress in full, and how many more wait, so the bot follows up instead of starting again."""
    running = [task for task in tasks if task.status == IN_PROGRESS]
    if not running:
        return ""
    lines = ["[Open tasks: kept by iota in the tasks file; update them with the tasks tool as you work]"]
    lines += [describe(task, note_limit=BLOCK_NOTE_LIMIT) for task in running[:BLOCK_TASKS]]
    if len(running) > BLOCK_TASKS:
        lines.append(f"… and {len(running) - BLOCK_TASKS} more in progress (the tasks tool lists them).")
    pending = [task for task in tasks if task.status == PENDING]
    backlog = sum(task.status == BACKLOG for task in tasks)
    if pending or backlog:
        queued = ", ".join(go_quote(task.title) for task in pending[:5]) + (", …" if len(pending) > 5 else "")
        lines.append(f"Queued: {len(pending)} pending" + (f" ({queued})" if pending else "")
                     + f"; {backlog} in the backlog.")
    return "\n".join(lines)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def card_lines(tasks: Sequence[Task]) -> tuple[str, ...]:
    """The rows shown above the composer: one a task in progress, with its current step."""
    rows = []
    for task in tasks:
        if task.status != IN_PROGRESS:
            continue
        step = task.current
        where = (f"step {task.steps.index(step) + 1}/{len(task.steps)}" if step else "no open step")
        state = " blocked" if step is not None and step.status == BLOCKED else " paused" if task.paused else ""
        rows.append(f"{task.title} · {where}{state}" + (f" · {step.title}" if step else ""))
    return tuple(rows)


def next_runnable(tasks: Sequence[Task]) -> Task | None:
    return next((task for task in tasks if task.runnable), None)
