"""A saved session's history on screen: its log, a page at a time, as transcript events.

A resumed chat (and one `/session` switched to) shows the end of its conversation at once and
the rest as the person scrolls up: the face sends `LoadOlder`, the input actor calls
`SessionHistory.send_older`, and the page goes back as one `Older` event. Every record the log
keeps is shown as it happened: the person's messages (and the files attached to them), the
replies, each tool call with what it
acted on and what the model read back, notices, and each compaction as one dim line (not the
summary-preambled message the model is sent); what iota wrote for the model alone is left out.
"""

from __future__ import annotations

from pathlib import Path

import trio

from actors.events import (Compaction, Notice, Older, TextDelta, ToolEnded, ToolStarted, TurnEnded,
                           UserEcho)
from iota.messages import ASSISTANT, COMPACTION, TOOL, USER, Message, ToolCall
from iota.attachments import attached_line
from iota.sessions.history import LogHistory
from iota.memory.document import go_quote
from iota.sessions.log import LOG_NAME

# Records per page: a screen or two of a typical conversation.
PAGE_RECORDS = 40
# The arguments that name what a call acts on, most telling first.
TARGET_ARGUMENTS = ("command", "path", "pattern", "url", "skill", "query", "name")
# What an `action` call (tasks, schedule, notes, …) is about, after its action.
ABOUT_ARGUMENTS = ("title", "task", "schedule", "note", "name", "query")
TARGET_COLUMNS = 64


class SessionHistory:
    """The history of one session's log, from where it ended when the chat opened it."""

    def __init__(self, bundle: Path):
        self._history = LogHistory(bundle / LOG_NAME)
        self._loading = False

    def first_page(self) -> Older:
        """The newest page (blocking: read while the chat opens)."""
        records, more = self._history.older(PAGE_RECORDS)
        return Older(tuple(history_events(records)), more)

    async def send_older(self, emit) -> None:
        """Read the page before the ones shown, in a worker thread, and `emit` it."""
        if self._loading or not self._history.more:
            return
        self._loading = True
        try:
            records, more = await trio.to_thread.run_sync(self._history.older, PAGE_RECORDS)
        finally:
            self._loading = False
        emit(Older(tuple(history_events(records)), more))


def history_events(records: list[Message]) -> list:
    """The transcript events that show `records` as they happened."""
    events: list = []
    names: dict[str, str] = {}
    targets = {record.tool_call_id: record.target for record in records if record.role == TOOL and record.target}
    for record in records:
        if record.hidden:  # what iota wrote for the model alone: a schedule's trigger, a nudge
            continue
        if record.role == USER:
            events.append(Notice(record.content) if record.notice else UserEcho(record.content))
            if record.attachments and not record.notice:
                events.append(Notice(attached_line(record.attachments)))
        elif record.role == ASSISTANT:
            if record.content:
                events.append(TextDelta(record.content))
                events.append(TurnEnded(interrupted=record.interrupted))
            for call in record.tool_calls:
                names[call.id] = call.name
                events.append(tool_started(call, targets.get(call.id, "")))
        elif record.role == TOOL:
            name = shown_name(record.tool_call_name or names.get(record.tool_call_id, ""))
            events.append(ToolEnded(record.tool_call_id, name, record.content, None, record.is_error))
        elif record.role == COMPACTION:
            events.append(Compaction(record.compacted_through or 0, record.content))
    return events


def shown_name(name: str) -> str:
    """`mcp__docs__search` as the transcript names it, `docs:search`."""
    if name.startswith("mcp__") and name.count("__") >= 2:
        server, _, tool = name[len("mcp__"):].partition("__")
        return f"{server}:{tool}"
    return name


def tool_started(call: ToolCall, target: str, display_name: str = "", *, asks: bool = False) -> ToolStarted:
    """How a call is drawn, live and in a resumed history alike: its name as the transcript gives
    it, what it acts on (the tool's `target`, kept with its result in the log; else read from the
    arguments) and its command unless a question showed it."""
    return ToolStarted(call.id, display_name or shown_name(call.name), target or call_target(call),
                       "" if asks else call_command(call))


def call_target(call: ToolCall) -> str:
    """What a call acted on, in one short line: its command, path or pattern, or its action and
    what that is about (`create "Stretch"`); never its raw arguments."""
    arguments = call.arguments
    action = arguments.get("action")
    if isinstance(action, str) and action.strip():
        about = next((arguments[key] for key in ABOUT_ARGUMENTS
                      if isinstance(arguments.get(key), str) and arguments[key].strip()), "")
        return _short(f"{action.strip()} {go_quote(about.strip())}" if about else action.strip())
    for key in TARGET_ARGUMENTS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return _short(value.strip())
    return ""


def call_command(call: ToolCall) -> str:
    command = call.arguments.get("command")
    return command if isinstance(command, str) else ""


def _short(text: str) -> str:
    first = text.splitlines()[0] if text else ""
    return first if len(first) <= TARGET_COLUMNS and first == text else first[:TARGET_COLUMNS - 2].rstrip() + " …"
