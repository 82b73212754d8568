"""The `tasks` tool: a bot's durable checklists (iota.bots.tasks), kept without asking.

It asks for no approval: it writes only the bot's own tasks file, and every change is in the
result the model reads, in the open-tasks rows above the composer and in `/tasks`.
"""

from __future__ import annotations

from typing import Any, Callable

from iota.bots.tasks import STEP_STATUSES, TASK_STATUSES, TaskBook, describe, find_task, words
from iota.memory.document import go_quote
from iota.tools.base import Tool, ToolResult
from iota.errors import ToolError

BOUNDARY = ("Timed or recurring work → the schedule tool; do-now or unscheduled backlog work → tasks; "
            "durable documents to maintain → notes.")

DESCRIPTION = (
    "Keep a durable checklist for work of several steps, so it survives restarts and you continue it by "
    "yourself. " + BOUNDARY + " Create a task with its steps, then update each step as you go: in_progress when "
    "you start it; succeeded, failed or cancelled when it ends (a short note of the result); blocked, with the "
    "reason in note, when it needs the user. While a task is in progress it is shown to you with every message, "
    "and after each of your turns iota has you continue it until every step is finished or one is blocked — "
    "check it before starting work again. A new task is in_progress, or pending (queued) when another one is; "
    "backlog only when the user asks to park it. A task whose steps are all finished is done. Talk to the user "
    "of tasks and progress in plain words, never of this tool."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["create", "add_steps", "update", "update_step", "reorder", "list"],
                   "description": "create a task; add_steps to one; update a task's title or status; "
                                  "update_step a step's status, title or note; reorder its steps; list tasks."},
        "task": {"type": "string", "description": "The task's id (or its first characters), from create or list."},
        "title": {"type": "string", "description": "The task's title (create, update) or the step's (update_step)."},
        "steps": {"type": "array", "items": {"type": "string"},
                  "description": "Step titles, in order (create, add_steps)."},
        "after": {"type": "integer", "description": "add_steps: the step number to insert after (default: the end)."},
        "step": {"type": "integer", "description": "update_step: the step's number."},
        "status": {"type": "string", "enum": [*TASK_STATUSES, *(s for s in STEP_STATUSES if s not in TASK_STATUSES)],
                   "description": "A task: backlog, pending, in_progress or done. A step: pending, in_progress, "
                                  "blocked, succeeded, failed or cancelled."},
        "note": {"type": "string", "description": "update_step: the result, or why the step is blocked."},
        "order": {"type": "array", "items": {"type": "integer"},
                  "description": "reorder: every step number of the task, in the new order."},
    },
    "required": ["action"],
}


class TasksTool(Tool):
    name = "tasks"
    description = DESCRIPTION
    parameters = PARAMETERS

    def __init__(self, book: TaskBook, on_change: Callable[[], None] = lambda: None):
        self.book = book
        self.on_change = on_change  # the open-tasks rows above the composer follow each change

    def target(self, args: dict[str, Any]) -> str:
        """`update_step "Migrate CI" step 2 → succeeded`: the task by its title, for the transcript."""
        action = args.get("action") if isinstance(args.get("action"), str) else ""
        about = args.get("title") if action == "create" else self._title_of(args.get("task"))
        step = f" step {args['step']}" if action == "update_step" and "step" in args else ""
        status = f" → {words(args['status'])}" if isinstance(args.get("status"), str) else ""
        return f"{action} {about if isinstance(about, str) else ''}{step}{status}".strip()

    def _title_of(self, reference: object) -> object:
        try:
            return go_quote(find_task(self.book.load(), reference).title)
        except ToolError:
            return reference

    async def run(self, args: dict[str, Any]) -> ToolResult:
        # No await: each change is one small atomic write, which a cancellation cannot split from
        # the result that reports it.
        action = args.get("action")
        book = self.book
        if action == "list":
            tasks = book.load()
            wanted = args.get("status")
            shown = [task for task in tasks if wanted is None or task.status == wanted]
            return ToolResult("\n\n".join(describe(task) for task in shown) or "No tasks.")
        if action == "create":
            result = book.create(args.get("title"), args.get("steps"), args.get("status"))
        elif action == "add_steps":
            result = book.add_steps(args.get("task"), args.get("steps"), args.get("after"))
        elif action == "update":
            result = book.update(args.get("task"), args.get("title"), args.get("status"))
        elif action == "update_step":
            result = book.update_step(args.get("task"), args.get("step"), args.get("status"), args.get("title"),
                                      args.get("note"))
        elif action == "reorder":
            result = book.reorder(args.get("task"), args.get("order"))
        else:
            raise ToolError(f"action must be create, add_steps, update, update_step, reorder or list, got {action!r}")
        self.on_change()
        return ToolResult(result)
