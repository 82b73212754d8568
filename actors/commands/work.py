"""A bot's `/tasks`, `/schedules` and `/notes`: what it is working on, when it will run by
itself, and the documents it keeps — and the person's way to change the first two.

    /tasks       backlog, in progress (and queued), finished; delete a backlog task, stop a running one,
                 resume one auto-continue paused for want of progress
    /schedules   each schedule with its next run; pause, resume or delete one
    /notes       each note: name, title, summary, last change, and where its file is

Each is a lane job like every slash command, so it runs between turns: a task stopped here is
not continued by a turn already queued (the continuation looks again when its turn comes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from actors.events import Panel
from actors.lane import Lane
from iota.bots.notes import NotesLibrary
from iota.bots.schedules import ACTIVE, PAUSED, ScheduleBook, shown
from iota.bots.tasks import BACKLOG, DONE, IN_PROGRESS, PENDING, Task, TaskBook, words
from iota.errors import ToolError


def task_panel(tasks: Sequence[Task]) -> str:
    def row(task: Task) -> str:
        step = task.current if task.status != DONE else None
        at = f" · step {task.steps.index(step) + 1}/{len(task.steps)} {step.title}" if step is not None else ""
        queued = " (queued)" if task.status == PENDING else " (paused)" if task.paused else ""
        return f"  {task.title}{queued} — {task.finished_steps} of {len(task.steps)} steps finished{at}"

    columns = (("Backlog", (BACKLOG,)), ("In progress", (IN_PROGRESS, PENDING)), ("Finished", (DONE,)))
    lines = []
    for heading, statuses in columns:
        chosen = [task for task in tasks if task.status in statuses]
        lines.append(f"{heading} ({len(chosen)})")
        lines += [row(task) for task in chosen] or ["  —"]
    return "\n".join(lines)


def tasks_command(book: TaskBook, changed: Callable[[Lane], None], resumed: Callable[[Lane], None]):
    """`changed`: the tasks file changed (the rows above the composer follow); `resumed`: a paused
    task may go on now (auto-continue queues it)."""
    async def body(lane: Lane, argument: str) -> None:
        try:
            tasks = book.load()
        except ToolError as error:
            lane.notice(str(error), warning=True)
            return
        lane.emit(Panel("Tasks", task_panel(tasks)))
        backlog = [task for task in tasks if task.status == BACKLOG]
        running = [task for task in tasks if task.status in (IN_PROGRESS, PENDING)]
        paused = [task for task in running if task.paused]
        actions = [(label, chosen, change) for label, chosen, change in (
            ("Resume a paused task", paused, book.resume), ("Delete a backlog task", backlog, book.delete),
            ("Stop a running task", running, book.stop)) if chosen]
        if not actions:
            return
        action = await lane.ask("Change a task?", tuple(label for label, _, _ in actions))
        if action is None:
            return
        label, chosen, change = actions[action]
        index = await lane.ask(label.replace("a ", "which ", 1) + "?",
                               tuple(f"{task.title} ({words(task.status)})" for task in chosen))
        if index is None:
            return
        _done(lane, lambda: change(chosen[index].id))
        changed(lane)
        if change == book.resume:
            resumed(lane)
    return body


def schedules_command(book: ScheduleBook, wake: Callable[[], None]):
    async def body(lane: Lane, argument: str) -> None:
        try:
            schedules = book.load()
        except ToolError as error:
            lane.notice(str(error), warning=True)
            return
        lane.emit(Panel("Schedules", book.listing()))
        if not schedules:
            return
        actions = [(label, chosen, change) for label, chosen, change in (
            ("Pause a schedule", [s for s in schedules if s.status == ACTIVE], book.pause),
            ("Resume a schedule", [s for s in schedules if s.status == PAUSED], book.resume),
            ("Delete a schedule", schedules, book.delete)) if chosen]
        action = await lane.ask("Change a schedule?", tuple(label for label, _, _ in actions))
        if action is None:
            return
        label, chosen, change = actions[action]
        options = tuple(f"{s.title} — {s.timetable.words}"
                        + (f", next {shown(s.next_run, book.zone_of(s))}" if s.status == ACTIVE and s.next_run else
                           f", {s.status}") for s in chosen)
        index = await lane.ask(label.replace("a ", "which ", 1) + "?", options)
        if index is None:
            return
        _done(lane, lambda: change(chosen[index].id))
        wake()
    return body


def notes_command(library: NotesLibrary):
    async def body(lane: Lane, argument: str) -> None:
        notes = library.list()
        rows = [f"{note.name}  {note.title}" + (f" — {note.summary}" if note.summary else "")
                + f" · {note.updated.isoformat()}" for note in notes]
        lane.emit(Panel("Notes", "\n".join([*rows, f"(in {library.dir})"]) if notes
                        else f"No notes yet; they will be in {library.dir}."))
    return body


def _done(lane: Lane, change: Callable[[], str]) -> None:
    try:
        lane.notice(change().splitlines()[0])
    except ToolError as error:
        lane.notice(str(error), warning=True)
