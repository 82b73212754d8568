"""Auto-continue: a bot with a task in progress goes on with it by itself, a turn at a time.

    a turn ends cleanly ──► a task in progress has a step to do, none blocked?
                             ├─ the person typed something meanwhile ──► their message goes first
                             ├─ `auto_continue:` turns in a row already ──► stop, say so
                             └─ else ──► QuietTurn("continue") at the end of the lane

The continuation is an ordinary lane job (actors.lane.QuietTurn): its nudge — "Continue with
task …: step 2 … is next" — reaches the model and the log marked hidden, its reply is shown,
and Ctrl+C, approvals, compaction and the host's states work as for a typed turn. The chain
stops when a step is blocked, when the task is done or parked in the backlog, when the person
types (their turn runs first; once it ends cleanly the work goes on, and the count starts
again), on Ctrl+C (it waits for the person's next message), on a failed turn, and after
`auto_continue:` turns in a row (default 10; 0 turns it off) — and, before that backstop, after
two continuations in a row that leave the task exactly as it was (no step or task changed): the
task is then marked paused in its file, so a restart does not continue it either, until the
person says so (a typed message, or `/tasks` → resume). The host shows the bot working the
whole while: the lane goes idle and pings only when no quiet turn is queued.

The tasks in progress are sent with every message too (a hidden notice just before it, so it
rides on the message and not the system prompt, which stays cache-stable), and shown above the
composer. A bot that starts with a task runnable picks it up where it left off.
"""

from __future__ import annotations

from actors.events import OpenTasks
from actors.lane import Lane, QuietTurn, UserMessage
from iota.bots.tasks import BLOCKED, IN_PROGRESS, Task, TaskBook, card_lines, next_runnable, open_tasks_block
from iota.memory.document import go_quote
from iota.messages import USER, Message
from iota.errors import ToolError

CONTINUE = "continue"
RESUME_HINT = "Type anything (or /tasks → resume) to go on"
STALLED_LIMIT = 2  # continuations in a row that change nothing, then the task is paused


class AutoContinue:
    def __init__(self, book: TaskBook, limit: int):
        self.book = book
        self.limit = limit          # `auto_continue:` of the agent
        self.streak = 0             # continuation turns since the person last typed
        self._queued_at = 0         # the lane's count of Ctrl+C when the continuation was queued
        self._said: set[str] = set()  # warnings and blocked steps already told, not told again
        self.stalled = 0            # continuations in a row that left their task as it was
        self._continued: tuple[str, tuple] | None = None  # the task a continuation works on, as it was
        self._lane: Lane | None = None

    # -- the lane's hooks --

    def start(self, lane: Lane) -> None:
        """At start: show the open tasks, and pick up a runnable one where it left off."""
        self._lane = lane
        tasks = self.load(lane)
        for paused in tasks:
            if paused.paused and paused.status == IN_PROGRESS:
                lane.notice(f"Task {go_quote(paused.title)} is paused ({paused.paused}). {RESUME_HINT}")
        task = next_runnable(tasks)
        if task is not None and self.limit:
            step = task.current
            lane.notice(f"Picking up task {go_quote(task.title)} where it left off: {_step_words(task, step)}")
            self._queue(lane)

    async def before_send(self, lane: Lane, user: Message) -> None:
        """Before each message (typed or not): a typed one restarts the count; the tasks in
        progress go with it. Runs after the other hooks, so a compaction they make comes first."""
        if not user.hidden:
            self.streak = 0
            self.stalled = 0
            for title in self._resume_paused(lane):
                lane.notice(f"Task {go_quote(title)} resumed")
        block = open_tasks_block(self.load(lane))
        if block:
            await lane.keep([Message(USER, content=block, notice=True, hidden=True)])

    async def after_turn(self, lane: Lane) -> None:
        tasks = self.load(lane)
        if self._judge_progress(lane, tasks):
            tasks = self.load(lane)
        task = next_runnable(tasks)
        if task is None:
            self._tell_blocked(lane, tasks)
            return
        turn = lane.last_turn
        if not self.limit or turn is None:  # off, or the turn failed (its error is on screen)
            return
        if turn.interrupted:
            lane.notice(f"Task {go_quote(task.title)} paused: type anything to go on")
        elif lane.inbox.has(UserMessage):
            return  # the person's message goes first; the work goes on after it
        elif self.streak >= self.limit:
            lane.notice(f"Paused after {self.limit} turns in a row on task {go_quote(task.title)} "
                        f"(auto_continue: {self.limit}): type anything to go on")
        else:
            self._queue(lane)

    def resumed(self, lane: Lane) -> None:
        """The person resumed a paused task from /tasks: the work goes on, the count afresh."""
        self.streak = self.stalled = 0
        if self.limit and next_runnable(self.load(lane)) is not None:
            self._queue(lane)

    # -- the continuation --

    def _queue(self, lane: Lane) -> None:
        if any(isinstance(job, QuietTurn) and job.name == CONTINUE for job in lane.inbox):
            return
        self._queued_at = lane.interruptions
        lane.inbox.put(QuietTurn(CONTINUE, self._continue))
        lane.show_status()

    async def _continue(self, lane: Lane) -> None:
        """When its turn comes, the continuation looks again: Ctrl+C since it was queued, a message
        from the person waiting, or no runnable task any more, and it does nothing."""
        if lane.interruptions != self._queued_at or lane.inbox.has(UserMessage):
            return
        task = next_runnable(self.load(lane))
        if task is None:
            return
        self.streak += 1
        self._continued = (task.id, task.progress_mark())
        await lane.quiet_turn(nudge(task, self.streak, self.limit))

    def _judge_progress(self, lane: Lane, tasks: list[Task]) -> bool:
        """After a continuation: a turn that ended cleanly and left its task as it was counts as
        no progress; two in a row pause the task (in its file) with a notice naming the step.
        True when it paused one."""
        if self._continued is None:
            return False
        task_id, before = self._continued
        self._continued = None
        task = next((task for task in tasks if task.id == task_id), None)
        turn = lane.last_turn
        if task is None or turn is None or turn.interrupted or task.progress_mark() != before:
            self.stalled = 0
            return False
        self.stalled += 1
        if self.stalled < STALLED_LIMIT or not task.runnable:
            return False
        self.stalled = 0
        step = task.current
        where = f"step {task.steps.index(step) + 1} of {len(task.steps)}, {go_quote(step.title)}"
        try:
            self.book.pause(task.id, f"no progress on {where}")
        except ToolError as error:
            lane.notice(str(error), warning=True)
            return False
        lane.notice(f"Task {go_quote(task.title)} paused: {STALLED_LIMIT} turns by itself made no progress "
                    f"on {where}. {RESUME_HINT}")
        return True

    def _resume_paused(self, lane: Lane) -> list[str]:
        try:
            return self.book.resume_all()
        except ToolError as error:
            self._tell_once(lane, str(error))
            return []

    # -- the tasks, read and shown --

    def refresh(self) -> None:
        """The tasks changed (the tool wrote them): the rows above the composer follow."""
        if self._lane is not None:
            self.load(self._lane)

    def load(self, lane: Lane) -> list[Task]:
        """The tasks as they are now; the rows above the composer follow them. A file that cannot
        be read is said once and counts as no tasks."""
        try:
            tasks = self.book.load()
        except ToolError as error:
            self._tell_once(lane, str(error))
            tasks = []
        for warning in self.book.warnings:
            self._tell_once(lane, warning)
        lane.emit(OpenTasks(card_lines(tasks)))
        return tasks

    def _tell_blocked(self, lane: Lane, tasks: list[Task]) -> None:
        for task in tasks:
            step = task.blocked if task.status == IN_PROGRESS else None
            if step is not None and f"{task.id}:{step.n}:{step.note}" not in self._said:
                self._said.add(f"{task.id}:{step.n}:{step.note}")
                because = f" ({step.note})" if step.note else ""
                lane.notice(f"Task {go_quote(task.title)} waits for you: step {step.n} {go_quote(step.title)} "
                            f"is blocked{because}")

    def _tell_once(self, lane: Lane, text: str) -> None:
        if text not in self._said:
            self._said.add(text)
            lane.notice(text, warning=True)


def nudge(task: Task, streak: int, limit: int) -> str:
    """The hidden message of a continuation turn."""
    step = task.current
    return (f"Continue with task {go_quote(task.title)} ({task.id}): {_step_words(task, step)}. This message is "
            f"from iota, not the user: go on by yourself, and update the task as each step ends (mark a step "
            f"blocked, with the reason, if you need the user). Continuing by itself: turn {streak} of at most "
            f"{limit} in a row.")


def _step_words(task: Task, step) -> str:
    where = f"step {task.steps.index(step) + 1} of {len(task.steps)}"
    state = "is in progress" if step.status == IN_PROGRESS else "is blocked" if step.status == BLOCKED else "is next"
    return f"{where}, {go_quote(step.title)}, {state}"
