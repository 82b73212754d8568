"""The agent loop: send, stream, run the tools the model asked for, send again.

    while the model asks for tools (and --max-turns allows):
        reply = stream(system, history + this turn, tools)
        record the reply; run its tool calls; record their results in call order

That is all of it. The tools are asked for again at each round, so a tool that joins mid-turn (a
server that became ready, a deferred tool a search loaded) is offered from the next request. A
tool failure is a result the model reads, never an exception that ends the turn. A provider failure ends the turn with the error. Cancellation (Ctrl+C, SIGTERM) can land
anywhere: everything the turn finished is already in `Turn.messages`, the text of the reply in
progress is in `Turn.partial`, and `Turn.interrupt()` turns both into records that keep the log
valid (the partial reply marked interrupted, each unanswered tool call answered as interrupted);
`Turn.fail(error)` does the same for a turn the provider gave up on, and adds a notice of the
failure, so the next request tells the model what the turn did before it failed.

Every record goes to the `TurnRecorder` the moment it exists, stamped with the turn's id: each
assistant record as its reply completes, a `tool_started` mark before a tool call runs (so a
crash can tell "it may have run" from "it did not"), each result as its call returns (results
of calls run side by side land in the order they finish; the view puts them in call order), and
the streamed text about once a second while a reply streams (`partial` records, superseded by
the assistant record; see iota.sessions.repair). The loop waits for each durable write before it
goes on: nothing the model did is acted on before it is on disk.
"""

from __future__ import annotations

import dataclasses
import enum
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Awaitable, Callable, NamedTuple, Protocol

import trio

from iota.messages import (ASSISTANT, CANCELLED_RESULT, FAILED_NOTICE, PARTIAL, TOOL, TOOL_STARTED, USER, Message,
                           ToolCall)
from iota.providers.base import Provider, Request
from iota.tools.base import (DECLINED, ApprovalRequest, Tool, ToolResult, Toolbox, denied_with_reason,
                             headless_refusal)
from iota.tools.modes import ASK, AUTO_EDIT, PLAN, PLAN_REFUSAL

# How often the text of a streaming reply is appended to the log.
PARTIAL_FLUSH_SECONDS = 1.0


class Decision(enum.Enum):
    ALLOW_ONCE = "Allow once"
    ALLOW_SESSION = "Allow for this session"
    DENY = "Deny"
    DENY_WITH_REASON = "Deny and say why"


class Denial(NamedTuple):
    """A "Deny and say why": the call is refused and the model reads the person's words, so its
    next step follows them instead of trying the same thing again."""

    reason: str


# Asked for each gated call: the whole question → the person's answer.
AskApproval = Callable[[ApprovalRequest], Awaitable["Decision | Denial"]]


class Approvals:
    """The approval policy of one process; nothing is remembered on disk.

    "Allow for this session" grants what the request's `grant` names until the process exits:
    the whole tool for the code tools, as the reference does (their writes stay inside the
    project whatever is granted), but only the exact command for the shell, since a grant of
    every later command would let anything at all run unasked. A `Denial` (the person denied and
    said why) is what the model reads instead of the plain refusal."""

    def __init__(self, ask: AskApproval | None, on_refused: Callable[[ApprovalRequest], None] | None = None,
                 mode: str = ASK):
        self._ask = ask  # None in a headless run: every gated call is refused
        self._on_refused = on_refused  # a headless run tells the person what it refused
        self._granted: set[tuple[str, str | None]] = set()
        # The permission mode the person chose (MODES): `ask` adds nothing to the config, `plan`
        # only narrows it, `auto-edit` widens it to file changes, and only ever by their choice.
        self.mode = mode

    def refused_by_mode(self, tool: Tool | None, args: dict | None = None) -> ToolResult | None:
        """In plan mode, the result of any call of a tool that is not read-only, asked or not."""
        if self.mode == PLAN and tool is not None and not tool.reads_only(args or {}):
            return ToolResult(PLAN_REFUSAL.format(tool=tool.name), is_error=True)
        return None

    async def check(self, request: ApprovalRequest) -> ToolResult | None:
        """None when the call may run, else the result the model reads instead."""
        granted = (request.tool_name, request.grant)
        if granted in self._granted:
            return None
        if self.mode == AUTO_EDIT and request.edits_files and not request.ask_every_time:
            return None
        if self._ask is None:
            if self._on_refused is not None:
                self._on_refused(request)
            return ToolResult(request.refusal or headless_refusal(request.tool_name), is_error=True)
        decision = await self._ask(request)
        if isinstance(decision, Denial):
            return ToolResult(denied_with_reason(decision.reason), is_error=True)
        if decision is Decision.ALLOW_SESSION:
            self._granted.add(granted)
        if decision is Decision.DENY:
            return ToolResult(DECLINED, is_error=True)
        return None

    def for_helper(self, name: str) -> Approvals:
        """The approvals of a helper this turn runs (iota.delegation): its questions go to the same
        person, each labelled with the helper's name (`reviewer: shell make test wants to …`), and a
        run that cannot ask refuses them as it refuses its own. The permission mode is the caller's,
        read at each call (plan mode switched on mid-helper stops its writes too). What the person
        allows for the session stays with that helper's run: a grant to one helper is none to its caller."""
        def labelled(request: ApprovalRequest) -> ApprovalRequest:
            return dataclasses.replace(request, label=f"{name}: {request.label}")

        ask, refused = self._ask, self._on_refused
        return _HelperApprovals(self, None if ask is None else (lambda request: ask(labelled(request))),
                                None if refused is None else (lambda request: refused(labelled(request))))


class _HelperApprovals(Approvals):
    """A helper's approvals: its own grants, its caller's permission mode."""

    def __init__(self, caller: Approvals, ask: AskApproval | None, on_refused: Callable[[ApprovalRequest], None] | None):
        self._caller = caller
        super().__init__(ask, on_refused)

    @property
    def mode(self) -> str:
        return self._caller.mode

    @mode.setter
    def mode(self, value: str) -> None:
        pass   # the caller's mode rules; the base class sets one at construction


class TurnObserver(Protocol):
    """What a face (the terminal app, a headless run) wants to know while a turn runs."""

    def on_text(self, text: str) -> None: ...
    def on_tool_start(self, call: ToolCall, target: str) -> None: ...
    def on_tool_end(self, call: ToolCall, result: ToolResult) -> None: ...
    def on_progress(self, call: ToolCall, text: str) -> None: ...


class CallContext(NamedTuple):
    """The call a tool is running for, with its turn's approvals and observer: what a tool that
    runs a turn of its own (a helper, iota.delegation) asks and reports through. Set in the call's
    own task, so calls running side by side each see theirs."""

    call: ToolCall
    approvals: Approvals
    observer: TurnObserver


current_call: ContextVar[CallContext | None] = ContextVar("current_call", default=None)


class TurnRecorder(Protocol):
    """Where a turn's records go as they happen (the chat's session log)."""

    async def record(self, messages: list[Message], *, durable: bool = True) -> None: ...


class NoRecorder:
    """A turn nobody keeps as it goes (a headless run saves the turn at its end, if at all)."""

    async def record(self, messages: list[Message], *, durable: bool = True) -> None:
        pass


class QuietObserver:
    def on_text(self, text: str) -> None:
        pass

    def on_tool_start(self, call: ToolCall, target: str) -> None:
        pass

    def on_tool_end(self, call: ToolCall, result: ToolResult) -> None:
        pass

    def on_progress(self, call: ToolCall, text: str) -> None:
        pass


@dataclass
class Turn:
    """One user turn in progress: the records it has produced so far."""

    id: str = ""   # stamped on every record the turn writes; "" writes none
    messages: list[Message] = field(default_factory=list)
    # The reply being streamed, not yet a record, as the pieces it arrived in: adding a piece to
    # one long string would copy the whole reply each time, and a long reply comes in tens of
    # thousands of pieces. `partial` joins them.
    pieces: list[str] = field(default_factory=list)
    model_calls: int = 0
    interrupted: bool = False
    # The scopes Esc cancels: the stream being read, or the tool calls running. Cancelling the
    # stream ends the turn as interrupted; cancelling a tool call gives the model a cancelled result.
    innermost: set[trio.CancelScope] = field(default_factory=set)

    @property
    def partial(self) -> str:
        """The text of the reply being streamed so far."""
        return "".join(self.pieces)

    def cancel_innermost(self) -> None:
        for scope in self.innermost:
            scope.cancel()

    def interrupt(self) -> list[Message]:
        """Close the turn after a cancellation so the log it becomes stays valid: tool calls
        left without a result are answered as interrupted, and the partial reply is kept,
        marked interrupted. (A cancellation lands either in the stream or in the tool calls,
        never both, so the order of the two does not matter.) Returns the records it added."""
        self.interrupted = True
        return self._close()

    def fail(self, error: str) -> list[Message]:
        """Close the turn after the provider gave up: what it finished stays (the partial reply
        marked interrupted), and a notice records the failure. Returns the records it added."""
        closing = self._close()
        failure = Message(USER, content=FAILED_NOTICE.format(error=error), notice=True, turn=self.id)
        self.messages.append(failure)
        return [*closing, failure]

    def _close(self) -> list[Message]:
        from iota.sessions.repair import repair_tail  # a turn that failed or was cancelled only

        closing = repair_tail(self.messages, turn=self.id)
        if partial := self.partial:
            closing.append(Message(ASSISTANT, content=partial, interrupted=True, turn=self.id))
            self.pieces.clear()
        self.messages.extend(closing)
        return closing

    @property
    def reply(self) -> str:
        """The text of the last assistant message: what a headless run prints."""
        for message in reversed(self.messages):
            if message.role == ASSISTANT and message.content:
                return message.content
        return ""


async def run_turn(turn: Turn, provider: Provider, request: Request, toolbox: Toolbox, approvals: Approvals,
                   observer: TurnObserver = QuietObserver(), max_turns: int = 0,
                   recorder: TurnRecorder = NoRecorder()) -> None:
    """Run the loop until the model stops asking for tools. `request.messages` is the history
    before this turn (the user's message included, already recorded); the turn's records land in
    `turn.messages`, and each goes to `recorder` as it is made. Records an Esc on the stream
    closes the turn with are recorded here too; after a Ctrl+C or a failure the caller records
    what `interrupt()` or `fail()` returns."""
    history = list(request.messages)
    while True:
        def on_text(text: str) -> None:
            turn.pieces.append(text)
            observer.on_text(text)

        failure: Exception | None = None
        with _innermost(turn) as stream_scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_flush_partial, turn, recorder)
                try:
                    reply = await provider.stream(_with_messages(request, history + turn.messages, toolbox), on_text)
                except Exception as error:  # raised outside the nursery, or it would come wrapped in a group
                    failure = error
                nursery.cancel_scope.cancel()
        if failure is not None:
            raise failure
        if stream_scope.cancelled_caught:  # Esc on the stream: the turn ends here, interrupted
            await recorder.record(turn.interrupt())
            return
        turn.pieces.clear()
        turn.model_calls += 1
        message = Message(ASSISTANT, content=reply.text, tool_calls=reply.tool_calls, usage=reply.usage, turn=turn.id,
                          server_blocks=reply.server_blocks)
        await recorder.record([message])
        turn.messages.append(message)
        if not reply.tool_calls:
            return
        await _run_calls(turn, reply.tool_calls, toolbox, approvals, observer, recorder)
        if max_turns and turn.model_calls >= max_turns:
            return


async def _flush_partial(turn: Turn, recorder: TurnRecorder) -> None:
    """While a reply streams, append its new text to the log every second or so: a killed
    process then keeps all but the last second of it. Not fsynced: the reply record is. Each
    flush joins only the pieces that came since the last one, so a long reply costs each second
    what arrived in it, not all of it again."""
    flushed = 0  # pieces written so far
    while True:
        await trio.sleep(PARTIAL_FLUSH_SECONDS)
        if len(turn.pieces) > flushed:
            text, flushed = "".join(turn.pieces[flushed:]), len(turn.pieces)
            await recorder.record([Message(PARTIAL, content=text, turn=turn.id)], durable=False)


def _with_messages(request: Request, messages: list[Message], toolbox: Toolbox) -> Request:
    return Request(model=request.model, system=request.system, messages=messages, tools=toolbox.specs(),
                   max_tokens=request.max_tokens, temperature=request.temperature, top_p=request.top_p,
                   effort=request.effort)


async def _run_calls(turn: Turn, calls: list[ToolCall], toolbox: Toolbox, approvals: Approvals,
                     observer: TurnObserver, recorder: TurnRecorder) -> None:
    """Run the calls, results in call order. Consecutive readers that need no approval run side
    by side; anything gated runs alone, after its question is answered."""
    results: dict[str, Message] = {}
    for batch in _batches(calls, toolbox):
        try:
            async with trio.open_nursery() as nursery:
                for call in batch:
                    nursery.start_soon(_run_call, turn, call, toolbox, approvals, observer, recorder, results)
        finally:
            # Also when cancelled: a call that finished keeps its result, which is on disk
            # already (the rest are answered as interrupted by Turn.interrupt, after these).
            turn.messages.extend(results[call.id] for call in batch if call.id in results)


def _batches(calls: list[ToolCall], toolbox: Toolbox) -> list[list[ToolCall]]:
    batches: list[list[ToolCall]] = []
    for call in calls:
        if batches and _is_reader(call, toolbox) and _is_reader(batches[-1][-1], toolbox):
            batches[-1].append(call)
        else:
            batches.append([call])
    return batches


def _is_reader(call: ToolCall, toolbox: Toolbox) -> bool:
    tool = toolbox.get(call.name)
    return tool is not None and tool.parallel and tool.approval(call.arguments) is None


async def _run_call(turn: Turn, call: ToolCall, toolbox: Toolbox, approvals: Approvals, observer: TurnObserver,
                    recorder: TurnRecorder, results: dict[str, Message]) -> None:
    tool = toolbox.get(call.name)
    target = tool.target(call.arguments) if tool else ""
    observer.on_tool_start(call, target)
    request = tool.approval_request(call.arguments) if tool else None
    refusal = approvals.refused_by_mode(tool, call.arguments)  # plan mode refuses without asking anyone
    if refusal is None and request:
        # A call that would be refused is refused before anyone is asked.
        refusal = toolbox.preflight(call.name, call.arguments) or await approvals.check(request)
    result = refusal
    if result is None:
        await recorder.record([Message(TOOL_STARTED, tool_call_id=call.id, tool_call_name=call.name, turn=turn.id)])
        current_call.set(CallContext(call, approvals, observer))  # this task's own: calls run in tasks of their own
        with _innermost(turn) as scope:
            result = await toolbox.call(call.name, call.arguments)
        if scope.cancelled_caught:
            result = ToolResult(CANCELLED_RESULT, is_error=True)
    message = Message(TOOL, content=result.content, tool_call_id=call.id, tool_call_name=call.name, target=target,
                      is_error=result.is_error, turn=turn.id, mounted_tools=_mounts(toolbox))
    await recorder.record([message])
    results[call.id] = message
    observer.on_tool_end(call, result)


def _mounts(toolbox: Toolbox) -> list[dict]:
    """Schemas a call loaded into the history rather than the tools array (a deferred tool in
    `system-tools` mode): they go with its result, and are sent after the round's results."""
    return [{"name": spec.name, "description": spec.description, "parameters": spec.parameters}
            for spec in toolbox.take_mounts()]


@contextmanager
def _innermost(turn: Turn):
    """A cancel scope Esc can reach, for as long as the block runs."""
    with trio.CancelScope() as scope:
        turn.innermost.add(scope)
        try:
            yield scope
        finally:
            turn.innermost.discard(scope)
