"""The turn lane: the one serial lane every job of a chat runs on.

A user turn, a slash command, a compaction (and for bots the memory flush) are jobs on this
lane, run one at a time in arrival order, so nothing races: what the person types while a
reply streams waits in the inbox, shown under the transcript, where the last one
can be taken back to edit (`Status.queued_messages`). A job that must jump the queue (the compactor's "flush, then
compact") is put at the head.

A turn is saved as it happens: the user's message is on disk (fsynced) before the request is
sent, and each reply, tool call and result, and the streamed text about once a second, as each
comes (see iota.agent); a `turn_end` record closes it. Ctrl+C cancels the running job's
CancelScope, whatever the job is, and holds the queue: the messages typed ahead wait until the
person sends them (Enter, or a new message) or drops them (Ctrl+C again), since a person who
stopped a turn may not want what they typed during it sent by itself. A cancelled turn keeps
what it finished: its partial reply marked interrupted, its unanswered tool calls answered as
interrupted. Esc reaches only the innermost scope (the stream or the running shell call). A turn
that fails (the provider gave up) keeps what it did too, and a notice of the failure, so the
next request tells the model; the person's message stays on screen, in the log and in the
composer's history. A write that fails (a full disk) is shown once, naming what was not
written, and the conversation goes on: what was not written is kept in memory, in order, and
written before anything newer — at the next write, and every few seconds (actors.save_backlog) — while the
status row says `not saved: disk full`. Nothing is sent to the model that is not on disk: a
turn whose message or tool results could not be written ends as failed before its request.

A turn iota starts by itself — a schedule's trigger, the auto-continue nudge of a task in progress
— is a `QuietTurn` job: it runs exactly as a typed turn does (the hooks before and after, Ctrl+C,
approvals, compaction, the host's states), but its message is marked hidden, so the model reads
it and the transcript does not show it. The attention ping waits until no such turn is queued.

Whatever runs a model turn (the person's message, the memory flush, any later kind) goes through
`run_model_turn`, which writes the turn's `turn_end` with how it ended — failed, cancelled by the
person, interrupted by iota stopping — and then calls each `on_turn_saved` hook, without
waiting: work that follows a turn (a bot's journal) runs beside the lane, in a task of the
chat's (ChatParts.tasks), never before the next job.
"""

from __future__ import annotations

import dataclasses
import json
import time
from contextlib import contextmanager
from typing import Awaitable, Callable

import trio

from actors.ask import needing_input
# The jobs are the lane's vocabulary: the other actors import them from here.
from actors.inbox import Command, Inbox, Job, JobNote, QuietTurn, UserMessage  # noqa: F401
from actors.history import SessionHistory
from actors.kept_queue import KeptQueue, held_notice
from actors.save_backlog import SaveBacklog, typed_ids
from actors.turn_watch import TurnObserver, TurnRecorder
from actors.notifier import HostLink
from actors.events import (Card, Choose, ErrorLine, Notice, Status, TurnEnded,
                           UserEcho)
from iota.agent import Approvals, Decision, Denial, Turn, run_turn
from iota.chat import ChatSetup
from iota.compaction.summary import Meter, TokenCount
from iota.sessions.conversation import Conversation, notice
from iota.errors import ContextTooLong, IotaError
from iota.messages import CANCELLED, FAILED, FINISHED, INTERRUPTED, TURN_END, USER, Message
from iota.hosts import PingKind, State
from iota.providers.base import RetryWait, retry_listener
from iota.attachments import Attachment, attached_line
from iota.sessions.bundle import Session, new_turn_id
from iota.tools.base import ApprovalRequest, Toolbox

# ---- the lane --------------------------------------------------------------------------------

APPROVAL_OPTIONS = (Decision.ALLOW_ONCE, Decision.ALLOW_SESSION, Decision.DENY, Decision.DENY_WITH_REASON)


class Lane:
    def __init__(self, setup: ChatSetup, conversation: Conversation, toolbox: Toolbox,
                 events: trio.MemorySendChannel, host: HostLink):
        self.setup = setup
        self.conversation = conversation
        self.toolbox = toolbox
        self.events = events
        self.host = host
        self.inbox = Inbox()
        self.kept = KeptQueue(self.inbox, conversation, self.emit)  # what the person typed, on disk until sent
        self.approvals = Approvals(self._ask_approval)
        setup.caller_session = lambda: self.conversation.session   # a helper's session goes under it
        self._job_scope: trio.CancelScope | None = None
        self._turn: Turn | None = None
        self._failed = False  # the running job failed: the host shows the error state after it
        self.last_turn: Turn | None = None  # the last turn of a message, typed or quiet (None: it failed)
        self.interruptions = 0  # how many times Ctrl+C (or a signal) cancelled a running job
        # What was shown and could not be written yet (a full disk), written before anything newer.
        self.backlog = SaveBacklog(conversation, self.kept, lambda text: self.emit(ErrorLine(text)), self.notice,
                                   lambda: self.show_status())
        self._idle = trio.Event()
        self._idle.set()
        self._running = ""
        self._retry: RetryWait | None = None  # the provider's wait now shown, counted down on the row
        self._running_since: float | None = None
        self._label = ""  # while set, what runs is shown as part of it (`labelled`)
        # A new conversation's meter weighs the system prompt and the tools from the first screen.
        self.meter = Meter(setup.model.context_window)
        session = conversation.session
        self.meter.seed(conversation.messages, session.view.last_usage if session and session.on_disk else None,
                        overhead=self.request_overhead())
        # Hooks: before each user message is sent (reloads, the compaction offer, a bot's owed
        # compaction), and after each kept turn (a bot's memory notices).
        self.before_send: list[Callable[[Lane, Message], Awaitable[None]]] = []
        self.after_turn: list[Callable[[Lane], Awaitable[None]]] = []
        # A bot's way out of a context-too-long error: compact, then the turn is sent again.
        self.recover: Callable[[Lane], Awaitable[None]] | None = None
        # Told once `/session` or `/fork` moved the lane to another session (the compaction
        # offer a resume makes at start).
        self.on_switch: list[Callable[[Lane], None]] = []
        # What the face shows of the conversation: the card (a new conversation gets a fresh
        # one) and the saved history pages come from.
        self.card: Card | None = None
        self.history: SessionHistory | None = None
        # Background work that must never delay a job (the title pass): told as each job
        # starts, so it can stand aside, and each time the lane comes to rest with nothing queued.
        self.on_job_start: list[Callable[[], None]] = []
        self.on_rest: list[Callable[[Lane], None]] = []
        # Files `/file` attached, waiting for the next message the person sends (actors.commands.file).
        self.attachments: list[Attachment] = []
        # The project's files for the composer's `@` list, once its actor runs (actors.mentions.FileListing).
        self.listing = None
        # Called, without waiting, once each model turn is saved (its turn_end written), with the
        # turn and how it ended (finished, failed, cancelled, interrupted).
        self.on_turn_saved: list[Callable[[Turn, str], None]] = []
        # After /rewind changed the conversation (a bot's journal drops the undone turns).
        self.after_rewind: list[Callable[[Lane], Awaitable[None]]] = []
        # Told of each job the person submits, as it is submitted (a bot's upkeep gives way at once).
        self.on_submit: list[Callable[[Job], None]] = []
        # After a compaction, with the messages it condensed (a bot's upkeep reads them too).
        self.on_compacted: list[Callable[[list[Message]], None]] = []
        # More (name, value) rows for /status (a bot's upkeep: what it took).
        self.status_rows: list[Callable[[], tuple[str, str]]] = []
        self._stopping = False  # the chat is leaving: a turn cut short now was interrupted, not cancelled

    # -- what the input actor calls --

    @property
    def busy(self) -> bool:
        return not self._idle.is_set()

    def submit(self, job: Job) -> None:
        """Queue a job; a message of the person's also sends a queue held after Ctrl+C."""
        if isinstance(job, UserMessage):
            self.inbox.hold(False)
        self.inbox.put(job)
        for submitted in self.on_submit:
            submitted(job)
        self.show_status()

    async def submit_message(self, text: str) -> None:
        """Queue a message the person typed, once it is on disk (the session's queue.json): what
        is shown queued survives a kill."""
        message = UserMessage(text, new_turn_id())
        await self.kept.arrive(message)
        self.submit(message)

    def interrupt(self, *, stopping: bool = False) -> bool:
        """Cancel the running job and hold the queue (the status row says so once the job has
        ended). False when nothing runs. `stopping`: iota is leaving (a quit, a signal), so the
        turn is interrupted, not cancelled."""
        self._stopping = self._stopping or stopping
        helpers = getattr(self.toolbox, "helpers", None)
        if helpers is not None:  # background helpers stop with the turn: nothing outlives a Ctrl+C
            helpers.cancel_all()
        if self._job_scope is not None:
            self._job_scope.cancel()
            self.interruptions += 1
        if self.busy:
            self.inbox.hold(True)
        return self.busy

    def send_queued(self) -> None:
        self.inbox.hold(False)
        self.show_status()

    def take_back_queued(self) -> str | None:
        """The last queued message, out of the queue, for the person to edit."""
        text = self.inbox.take_last_message()
        if not self.inbox.messages():
            self.inbox.hold(False)
        self.show_status()
        return text

    def drop_queued(self) -> int:
        """Drop the person's queued messages (Ctrl+C on a held queue); how many there were."""
        dropped = self.inbox.drop_messages()
        self.inbox.hold(False)
        self.show_status()
        return dropped

    def cancel_innermost(self) -> None:
        if self._turn is not None:
            self._turn.cancel_innermost()

    async def switch_session(self, session: Session) -> None:
        """Continue in another saved session (`/session`); the caller closes the old one. What
        waits in the queue is kept in the new session's bundle from now on."""
        old = self.conversation.session
        self.conversation.switch_to(session)
        self.meter.seed(self.conversation.messages, session.view.last_usage, overhead=self.request_overhead())
        self.report_session()
        if restored := await self.kept.moved_from(old):
            self.notice(held_notice(restored))
        for switched in self.on_switch:
            switched(self)
        self.show_status()

    @contextmanager
    def interruptible(self):
        """A scope Ctrl+C cancels, for a part of a job (the flush's compaction after its turn)."""
        outer = self._job_scope
        with trio.CancelScope() as scope:
            self._job_scope = scope
            try:
                yield scope
            finally:
                self._job_scope = outer

    def request_overhead(self) -> TokenCount:
        """What every request carries beyond the conversation: the system prompt and the tools'
        definitions, as texts the meter counts only if a threshold needs them (bytes/4 is shown
        meanwhile), so the meter weighs them from the first screen without loading the encoding."""
        texts = [self.setup.system_prompt()]
        texts += [spec.name + spec.description + json.dumps(spec.parameters) for spec in self.toolbox.specs()]
        return TokenCount(texts=texts)

    @property
    def context_used(self) -> int:
        """The context figure shown (`Meter.shown`: nothing is counted for it)."""
        return self.meter.shown

    async def wait_idle(self) -> None:
        await self._idle.wait()

    # -- the loop --

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        # A provider's wait before a retry shows on the status row: `retrying in 2 s (HTTP 529, …)`.
        retry_listener.set(self._retrying)
        if restored := await self.kept.restore():  # typed before iota stopped: back in the queue, held
            self.notice(held_notice(restored))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.backlog.retry)
            task_status.started()
            self.show_status()
            self.host.state(self._resting_state())  # the first report: the chat is ready
            await self._take_jobs()

    async def _take_jobs(self) -> None:
        while True:
            job = await self.inbox.get()
            if isinstance(job, UserMessage):
                self.show_status()  # one fewer message waits
            for starting in self.on_job_start:
                starting()
            self._idle = trio.Event()
            self.host.state(State.BUSY)
            self._failed = False
            try:
                with trio.CancelScope() as self._job_scope:
                    await self._run(job)
            finally:
                self._job_scope = None
                self._idle.set()
                self.set_running("")
                if self.inbox.held:  # the queue Ctrl+C held shows as held once the job is over
                    self.show_status()
            if not self.inbox.ready():
                self.host.state(State.ERROR if self._failed else self._resting_state())
                for resting in self.on_rest:
                    resting(self)

    async def _run(self, job: Job) -> None:
        if isinstance(job, UserMessage):
            await self._user_turn(job.text, message_id=job.id)
        elif isinstance(job, Command):
            await job.run(self, job.argument)
        elif isinstance(job, QuietTurn):
            await job.run(self)
        else:
            await self.keep([notice(job.text)])

    async def quiet_turn(self, text: str) -> None:
        """A turn of a message iota wrote (a `QuietTurn`'s): the model reads it, nobody sees it."""
        await self._user_turn(text, hidden=True)

    async def _user_turn(self, text: str, *, hidden: bool = False, message_id: str = "") -> None:
        if not hidden:
            self.emit(UserEcho(text))
        user = Message(USER, content=text, hidden=hidden)
        if not hidden and self.attachments:  # what /file attached goes with the person's next message
            user.attachments, self.attachments = self.attachments, []
            self.notice(attached_line(user.attachments))
        with self.interruptible() as scope:
            for hook in self.before_send:
                await hook(self, user)
        if scope.cancelled_caught:  # Ctrl+C on a question asked before sending: keep the message, unsent
            # As a turn of its own that was cancelled, so that its id in the log says it is written.
            user = dataclasses.replace(user, turn=message_id or new_turn_id())
            await self.record([user, Message(TURN_END, turn=user.turn, outcome=CANCELLED)], meta=True)
            self._join([user])
            self.emit(TurnEnded(interrupted=True))
            return
        turn = await self.run_model_turn(user, self.toolbox, recoverable=self.recover is not None,
                                         turn_id=message_id)
        self.last_turn = turn
        for after in self.after_turn:  # a failed turn's memory writes are recorded too
            await after(self)
        if turn is not None and not self.inbox.has(QuietTurn):  # the bot goes on working: no call yet
            self.host.notify(PingKind.TURN_ENDED, _ping_text(turn))

    async def run_model_turn(self, opening: Message, toolbox: Toolbox, *, recoverable: bool = False,
                             quiet: bool = False, turn_id: str = "") -> Turn | None:
        """Send the conversation and `opening` (the user's message, or a notice such as the memory
        flush's), run the agent loop with `toolbox`, and keep what the turn does as it does it —
        all of it, or up to where Ctrl+C stopped it. A turn that fails keeps what it did, with a
        notice of the failure, and returns None. `recoverable`: a context-too-long failure is
        mended by `self.recover` (a bot compacts) and the turn goes on from where it was.
        `quiet`: a failure is shown, but calls nobody back and leaves the host's state alone (the
        memory flush, whose compaction runs whatever became of it). `turn_id`: the id a typed
        message was kept under until its record is written (actors.kept_queue)."""
        self.set_running("Waiting for the model")
        turn = Turn(id=turn_id or new_turn_id())
        opening = dataclasses.replace(opening, turn=turn.id)
        await self.record([opening])  # on disk before the request is sent
        self._join([opening])
        failure: IotaError | None = None
        if self.backlog.waiting:  # not on disk: not sent either
            failure = self.backlog.not_sent()
        while failure is None:
            self._turn = turn
            try:
                request = self.setup.request(self.conversation.messages, toolbox)
                # Ctrl+C cancels the turn here, inside the job, so that what it finished can be kept.
                with self.interruptible() as scope:
                    await run_turn(turn, self.setup.provider(), request, toolbox, self.approvals, TurnObserver(self),
                                   recorder=TurnRecorder(self))
                if scope.cancelled_caught:
                    await self.record(turn.interrupt())
            except ContextTooLong as error:
                if recoverable and self.recover is not None:
                    # A bot compacts and sends again: a long context is never a dead end. What the
                    # turn did so far joins the view the compaction summarises.
                    recoverable = False
                    self._join(turn.messages)
                    turn = Turn(id=turn.id)
                    await self.recover(self)
                    continue
                failure = error
            except IotaError as error:
                failure = error
            finally:
                self._turn = None
            break
        if failure is not None:
            await self.record(turn.fail(str(failure)))
        self._join(turn.messages)
        outcome = (FAILED if failure is not None else INTERRUPTED if turn.interrupted and self._stopping
                   else CANCELLED if turn.interrupted else FINISHED)
        await self.record([Message(TURN_END, turn=turn.id, outcome="" if outcome == FINISHED else outcome)], meta=True)
        for saved in self.on_turn_saved:
            saved(turn, outcome)
        if failure is not None:
            return self._failed_turn(failure, quiet=quiet)
        self.emit(TurnEnded(interrupted=turn.interrupted))
        return turn

    def _failed_turn(self, error: IotaError, *, quiet: bool = False) -> None:
        self.emit(ErrorLine(str(error)))
        if quiet:  # not the person's message that failed: nothing for the composer to offer again
            self.emit(TurnEnded())
            return None
        self.emit(TurnEnded(failed=True))
        self._failed = True
        self.host.notify(PingKind.TURN_ENDED, f"iota: {error}")
        return None

    async def record(self, records: list[Message], *, durable: bool = True, meta: bool = False) -> None:
        """Write records to the session as they happen (through the agent loop's recorder, actors.turn_watch), shielded:
        a write that must not be torn. A failed write is shown, and what it did not write waits in
        the backlog (actors.save_backlog)."""
        if not records:
            return
        if not self.conversation.saving:  # nothing is kept: a typed message is done with once sent
            await self.kept.sent(typed_ids(records))
            return
        await self.backlog.add(records, durable=durable, meta=meta)

    async def keep(self, records: list[Message]) -> None:
        """Save records outside a turn (notices) and add them to the conversation."""
        await self.record(records, meta=True)
        self._join(records)

    def _join(self, records: list[Message]) -> None:
        """Records already written join the live view, and the meter counts them."""
        self.conversation.add(records)
        for record in records:
            if record.usage is not None:
                self.meter.settle(record.usage)
            else:
                self.meter.add([record])
        self.show_status()

    # -- the face --

    def emit(self, event) -> None:
        self.events.send_nowait(event)

    def notice(self, text: str, *, warning: bool = False) -> None:
        self.emit(Notice(text, warning=warning))

    def _retrying(self, wait: RetryWait) -> None:
        """A provider waits before trying again: the status row counts the wait down."""
        self._retry = wait
        self.set_running(str(wait))

    def set_running(self, label: str) -> None:
        if label and self._label and not label.startswith(self._label):
            label = f"{self._label} · {label}"
        if self._retry is not None and not label.endswith(str(self._retry)):
            self._retry = None  # the wait is over: something else runs
        if label != self._running:
            self._running = label
            self._running_since = trio.current_time() if label else None
            self.show_status()

    @contextmanager
    def labelled(self, label: str):
        """What runs is shown as part of `label` (`saving memory before compacting · Responding`)."""
        outer = self._label
        self._label = label
        try:
            self.set_running(label)
            yield
        finally:
            self._label = outer

    def show_status(self) -> None:
        model = self.setup.model
        self.meter.window = model.context_window
        messages = self.inbox.messages()
        self.emit(Status(model=model.name, context_used=self.meter.shown, context_window=model.context_window,
                         estimated=self.meter.estimated, running=self._running, running_since=self._running_since,
                         queued=self.inbox.queued(), queued_messages=messages,
                         held=self.inbox.held and bool(messages) and not self.busy,
                         jobs=self._jobs_running(), debug=self.setup.debug.on, unsaved=self.backlog.reason,
                         retry=self._retry, mode=self.approvals.mode))

    def _jobs_running(self) -> tuple[tuple[str, str, float], ...]:
        """The background jobs for the status row, their start on trio's clock (theirs is monotonic)."""
        jobs = self.toolbox.jobs.running() if self.toolbox.jobs is not None else []
        now, clock = time.monotonic(), trio.current_time()
        return tuple((job.id, job.name, clock - (now - job.started)) for job in jobs)

    async def _ask_approval(self, request: ApprovalRequest) -> Decision | Denial:
        """`<label> wants to <action> — allow?`, with the whole of what a yes approves above the
        options; "Allow for this session" says what it covers, and the last option opens a line
        for the reason the model is told."""
        options = tuple(d for d in APPROVAL_OPTIONS if not (request.ask_every_time and d is Decision.ALLOW_SESSION))
        labels = tuple(f"{d.value} ({request.session_grant})" if d is Decision.ALLOW_SESSION else d.value
                       for d in options)
        answer = await self.ask(f"{request.question} — allow?", labels, ping=request.question,
                                detail=request.detail, line=len(options) - 1)
        if isinstance(answer, tuple):
            return Denial(answer[1])
        return options[answer] if answer is not None else Decision.DENY

    async def ask(self, title: str, options: tuple[str, ...], *, ping: str | None = None,
                  detail: str = "", search: tuple[str, ...] = (), line: int | None = None) -> int | tuple[int, str] | None:
        """Show a select and wait for the answer (None: Esc). While it waits, the host shows the
        chat as needing input, and `ping` (if given) asks for attention. `detail` is shown in
        full between the title and the options; `search` (one text per option) makes it a
        long list the person narrows by typing (the session pickers); `line`, the last option,
        opens a line to type in, and answers `(line, what was typed)`."""
        send, receive = trio.open_memory_channel(1)
        self.emit(Choose(title, options, send, detail, search, line))
        before = self._running
        self.set_running("Waiting for your answer")
        try:
            with needing_input(self.host, ping):
                return await receive.receive()
        finally:
            self.set_running(before)

    def _resting_state(self) -> State:
        """Between jobs: busy while a background shell job still runs, else idle."""
        jobs = self.toolbox.jobs
        return State.BUSY if jobs is not None and jobs.running() else State.IDLE

    def report_session(self) -> None:
        """Tell the host which session this chat writes (at start, after /save, after a switch)."""
        session = self.conversation.session
        if session is not None:
            self.host.session(session.id, session.dir)


def _ping_text(turn: Turn) -> str:
    reply = " ".join(turn.reply.split())
    return "iota: " + (reply[:117] + "…" if len(reply) > 120 else reply or "turn finished")
