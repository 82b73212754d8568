"""Running a helper: one turn of a narrower agent, inside the calling turn, kept as a child session.

The `delegate` tool (iota.tools.delegate) asks the chat to run a helper; the chat builds the
helper's setup (its entry narrowed by its caller's, iota.config.delegation; the caller's project
and cwd) and hands it here. A helper's turn is a task of the caller's tool call, so it lives and
dies with it: Ctrl+C on the caller cancels the call's scope, the helper's turn with it, and its
shell jobs (its own job table, opened and closed around the turn). Nothing outlives the caller.

What it needs of the calling turn — whom to ask for approvals, where to report progress — comes
from `iota.agent.current_call`, which the agent loop sets in each tool call's task. A helper's
questions are the caller's person's, labelled with the helper's name; a headless caller refuses
them, as it refuses its own.

Its conversation is saved as a child session of the caller's (`parent` in meta.json), record by
record as the chat saves its own: the task first, then each reply and result as it comes, then
`turn_end`. A cancelled helper's turn is closed (`Turn.interrupt`) and its `turn_end` written,
shielded, before the cancellation goes on; a helper killed with the process is closed by the
next open's repair, like any turn. `no_save` (the helper's or its caller's) keeps nothing; so
does a caller that is not saved.
"""

from __future__ import annotations

import time
from pathlib import Path
from collections.abc import AsyncIterator, Awaitable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import AsyncContextManager, Callable, Protocol

import trio

from iota.agent import Approvals, CallContext, NoRecorder, QuietObserver, Turn, TurnObserver, current_call, run_turn
from iota.bots.journal_entry import call_target, clip
from iota.bots.defined_agents import check_definition, save_definition
from iota.config.entries import AgentConfig
from iota.config.settings import Config
from iota.errors import BotError, IotaError, ToolError
from iota.messages import ASSISTANT, CANCELLED, FAILED, TOOL, TURN_END, USER, Message, ToolCall
from iota.providers.base import Provider, Request
from iota.sessions.bundle import Session, new_turn_id
from iota.text import format_elapsed
from iota.tools.base import ToolResult, Toolbox
from iota.tools.delegate import HelperRun, report

TITLE_CHARS = 60


class HelperSetup(Protocol):
    """What a helper's run needs of its chat setup (iota.chat.ChatSetup)."""

    def provider(self) -> Provider: ...
    def request(self, messages: list[Message], toolbox: Toolbox) -> Request: ...
    def new_session(self, title: str | None = None, parent: str | None = None,
                    bucket: Path | None = None) -> Session: ...
    async def aclose(self) -> None: ...


async def run_helper(setup: HelperSetup, name: str, task: str, open_tools: Callable[[], AsyncContextManager[Toolbox]],
                     parent: Session | None, save: bool,
                     kept: Callable[[Session], None] = lambda session: None) -> HelperRun:
    """Run `task` as one turn of the helper `setup` describes; what it did. `parent`: the caller's
    session (None when the caller keeps none). `kept(session)` is called once the helper's child
    session is closed, however the run ended (a bot's journal then writes its entry).
    Cancellation passes through, after the helper's records are closed."""
    context = current_call.get()
    approvals = context.approvals.for_helper(name) if context is not None else Approvals(None)
    observer = _HelperObserver(name, context.call if context else None, context.observer if context else None)
    done = HelperRun(agent=name)
    session = setup.new_session(title=f"{name}: {clip(task, TITLE_CHARS)}", parent=parent.id,
                                bucket=parent.dir.parent) if save and parent is not None else None
    recorder = _SessionRecorder(session) if session is not None else NoRecorder()
    turn = Turn(id=new_turn_id())
    opening = Message(USER, content=task, turn=turn.id)
    async with AsyncExitStack() as stack:
        stack.push_async_callback(partial(_close, setup, session, kept))
        toolbox = await stack.enter_async_context(open_tools())
        await recorder.record([opening])
        if session is not None:
            done.session = session.id
        observer.report("starting")
        outcome = ""
        try:
            await run_turn(turn, setup.provider(), setup.request([opening], toolbox), toolbox, approvals, observer,
                           recorder=recorder)
        except IotaError as error:   # the provider gave up: the caller's model reads why
            outcome, done.failure = FAILED, f"failed: {error}"
            await recorder.record(turn.fail(str(error)))
        except BaseException:        # cancelled with its caller: close the turn, then go on cancelling
            with trio.CancelScope(shield=True):
                await recorder.record([*turn.interrupt(), Message(TURN_END, turn=turn.id, outcome=CANCELLED)])
            raise
        if turn.interrupted:
            outcome, done.failure = CANCELLED, "was interrupted"
        await recorder.record([Message(TURN_END, turn=turn.id, outcome=outcome)])
    done.reply = turn.reply
    done.turns = turn.model_calls
    done.conversation = conversation_text(opening, turn.messages)
    for message in turn.messages:
        if message.role == ASSISTANT:
            done.calls += [(call.name, call.arguments) for call in message.tool_calls]
            if message.usage is not None:
                done.tokens += message.usage.input + message.usage.output + message.usage.cache_read + \
                    message.usage.cache_write
    return done


async def _close(setup: HelperSetup, session: Session | None, kept: Callable[[Session], None]) -> None:
    with trio.CancelScope(shield=True):
        await setup.aclose()
        if session is not None:
            await trio.to_thread.run_sync(session.close)
            if session.dir.is_dir():
                kept(session)


class _SessionRecorder:
    """Writes the helper's records to its child session as they happen, shielded: a write that
    must not be torn. Appends run in a thread, as the chat's own do."""

    def __init__(self, session: Session):
        self.session = session

    async def record(self, messages: list[Message], *, durable: bool = True) -> None:
        if not messages:
            return
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(partial(self.session.append, messages, durable=durable, meta=False))


class _HelperObserver:
    """The helper's progress, as one line under the caller's `delegate` call: `reviewer · read_file
    a.py · 12s` (its name, the tool it runs now, how long it has been at work)."""

    def __init__(self, name: str, call: ToolCall | None, caller: TurnObserver | None):
        self.name = name
        self.call = call
        self.caller = caller or QuietObserver()
        self.started = time.monotonic()

    def report(self, doing: str) -> None:
        if self.call is not None:
            elapsed = format_elapsed(time.monotonic() - self.started)
            self.caller.on_progress(self.call, f"{self.name} · {doing} · {elapsed}")

    def on_text(self, text: str) -> None:
        pass

    def on_tool_start(self, call: ToolCall, target: str) -> None:
        self.report(f"{call.name} {target or call_target(call.arguments)}".strip())

    def on_tool_end(self, call: ToolCall, result: ToolResult) -> None:
        self.report("thinking")

    def on_progress(self, call: ToolCall, text: str) -> None:
        self.report(text)   # a helper's own helper (max_depth: 2)


# ---- background helpers ------------------------------------------------------------------------


@dataclass
class HelperNotice:
    """Sent on the chat's job-notice channel when a background helper ends: `text` is what the
    model reads (in a bot, as a quiet turn). `seen()` marks it delivered."""

    work: BackgroundWork
    text: str
    cancelled: bool = False   # stopped by Ctrl+C or the chat's end: nothing for a bot to act on now

    def seen(self) -> None:
        self.work.seen = True


@dataclass
class BackgroundWork:
    """One helper started with `background: true`."""

    id: str
    agent: str
    task: str
    started: float = field(default_factory=time.monotonic)
    ended: bool = False
    seen: bool = False       # its result was delivered to the conversation
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)

    def line(self) -> str:
        """`h1 reviewer · 12s · Review a.py …`, or `… · ended, result not yet read`."""
        state = "ended, result not yet read" if self.ended else format_elapsed(time.monotonic() - self.started)
        return f"{self.id} {self.agent} · {state} · {clip(self.task, TITLE_CHARS)}"


class BackgroundHelpers:
    """The chat's helpers that run in the background: tasks of a nursery that lives as long as
    the chat's tools (leaving the chat cancels them), each in a cancel scope of its own that Ctrl+C
    cancels (`cancel_all`). When one ends — finished, failed or cancelled — a `HelperNotice` goes
    on `notices`, which the chat turns into a notice (a quiet turn in a bot)."""

    def __init__(self, nursery: trio.Nursery, notices: trio.MemorySendChannel):
        self._nursery = nursery
        self._notices = notices
        self._count = 0
        self.works: dict[str, BackgroundWork] = {}

    def start(self, agent: str, task: str, run: Callable[[str, str], Awaitable[HelperRun]]) -> str:
        """Start `run(agent, task)` in the background; its id (`h1`)."""
        self._count += 1
        work = BackgroundWork(f"h{self._count}", agent, task)
        self.works[work.id] = work
        context = current_call.get()
        # Its call has returned: progress has no line to go under, but its questions still come to
        # the person (the caller's approvals, labelled with the helper's name).
        detached = CallContext(None, context.approvals, None) if context is not None else None
        self._nursery.start_soon(self._run, work, run, detached)
        return work.id

    def running(self) -> list[BackgroundWork]:
        return [work for work in self.works.values() if not work.ended]

    def open(self) -> list[BackgroundWork]:
        """Still running, or ended with a result the model has not read yet."""
        return [work for work in self.works.values() if not work.seen]

    def cancel_all(self) -> int:
        """Ctrl+C: cancel every running helper (each still sends its notice); how many."""
        running = self.running()
        for work in running:
            work.scope.cancel()
        return len(running)

    async def _run(self, work: BackgroundWork, run: Callable[[str, str], Awaitable[HelperRun]],
                   context: CallContext | None) -> None:
        current_call.set(context)
        done: HelperRun | None = None
        text = ""
        try:
            with work.scope:
                try:
                    done = await run(work.agent, work.task)
                except Exception as error:  # a helper that cannot start is a failed
                    # helper, as a foreground call's failure is a result: never the end of the chat
                    text = f"error: {error}"
        finally:
            work.ended = True
        # Leaving the chat cancels the nursery, not this scope: that cancellation goes on from the
        # `with` above, and no notice is sent to a chat that is closing.
        cancelled = work.scope.cancelled_caught
        if done is not None:
            text = report(done)
        elif cancelled:
            text = "the person stopped it (Ctrl+C) before it finished"
        status = "cancelled" if cancelled else "failed" if done is None or done.failure else "ended"
        try:
            self._notices.send_nowait(HelperNotice(work, f"[background helper {work.id} ({work.agent}) {status}] "
                                                         f"{text}", cancelled=cancelled))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the chat is closing: nobody reads it


@asynccontextmanager
async def open_background_helpers(notices: trio.MemorySendChannel) -> AsyncIterator[BackgroundHelpers]:
    """Background helpers for as long as the context: leaving it cancels those still running."""
    async with trio.open_nursery() as nursery:
        helpers = BackgroundHelpers(nursery, notices)
        try:
            yield helpers
        finally:
            nursery.cancel_scope.cancel()


# ---- agents a bot defines ----------------------------------------------------------------------


class BotDefinitions:
    """The `delegate` tool's way to a bot's defined agents (iota.bots.defined_agents): a check
    that refuses, as a result the model reads, a definition wider than the bot; and the write,
    after which the chat can hand the new agent tasks (`on_defined`)."""

    def __init__(self, directory: Path, creator: AgentConfig, config: Config,
                 on_defined: Callable[[str, AgentConfig], None]):
        self.directory = directory
        self.creator = creator
        self.config = config
        self.on_defined = on_defined
        self._checked: dict[str, AgentConfig] = {}

    def check(self, args: dict) -> tuple[str, str, str]:
        try:
            entry, text = check_definition(args, self.creator, self.config, self.directory)
        except BotError as error:
            raise ToolError(str(error)) from None
        self._checked[entry.name] = entry
        return entry.name, entry.description or "", text

    def save(self, name: str, text: str) -> str:
        path = save_definition(self.directory, name, text)
        self.on_defined(name, self._checked.pop(name))
        return str(path)


def conversation_text(opening: Message, messages: list[Message]) -> str:
    """A helper's conversation as the person reads it under its call with Ctrl+O: the task, what
    the helper said, each tool call with its target, and what came back."""
    lines = [f"❯ {opening.content}"]
    for message in messages:
        if message.role == ASSISTANT:
            if message.content.strip():
                lines.append(message.content.strip())
            lines += [f"• {call.name} {call_target(call.arguments)}".rstrip() for call in message.tool_calls]
        elif message.role == TOOL:
            lines += [("  ⎿ " if number == 0 else "    ") + line
                      for number, line in enumerate(message.content.splitlines() or [""])]
    return "\n".join(lines)
