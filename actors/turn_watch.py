"""How a lane watches the agent loop run one of its turns: the observer turns the loop's progress
into transcript events (and the status row's `running`), the recorder writes each record through
the lane's save backlog and ends a turn whose tool results could not be written, before the
request that would carry them (actors.save_backlog)."""

from __future__ import annotations

from actors.events import TextDelta, ToolEnded, ToolProgress
from actors.history import tool_started
from iota.messages import TOOL, Message, ToolCall
from iota.tools.base import ToolResult


class TurnObserver:
    """Turns the agent loop's progress into transcript events."""

    def __init__(self, lane):
        self.lane = lane

    def on_text(self, text: str) -> None:
        self.lane.set_running("Responding")
        self.lane.emit(TextDelta(text))

    def on_tool_start(self, call: ToolCall, target: str) -> None:
        tool = self.lane.toolbox.get(call.name)
        # A call that asks first shows its whole command in the question (and keeps it there, answered).
        asks = tool is not None and tool.approval(call.arguments) is not None
        started = tool_started(call, target, tool.display_name if tool is not None else "", asks=asks)
        self.lane.set_running(f"{started.name} {started.target}".strip())
        self.lane.emit(started)

    def on_progress(self, call: ToolCall, text: str) -> None:
        self.lane.set_running(text)
        self.lane.emit(ToolProgress(call.id, text))

    def on_tool_end(self, call: ToolCall, result: ToolResult) -> None:
        self.lane.set_running("Waiting for the model")
        # Exactly what the model reads: the screen shows its first lines, Ctrl+O all of it.
        self.lane.emit(ToolEnded(call.id, call.name, result.content, result.display, result.is_error, result.more))


class TurnRecorder:
    """The agent loop's recorder: the lane's `record`, and a turn whose tool results (the next
    request's news) could not be written ends there, before that request is sent."""

    def __init__(self, lane):
        self.lane = lane

    async def record(self, records: list[Message], *, durable: bool = True, meta: bool = False) -> None:
        await self.lane.record(records, durable=durable, meta=meta)
        if self.lane.backlog.waiting and any(record.role == TOOL for record in records):
            raise self.lane.backlog.not_sent()
