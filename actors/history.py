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

import json
from pathlib import Path

import trio

from actors.events import (Compaction, Notice, Older, TextDelta, ToolEnded, ToolStarted, TurnEnded,
                           UserEcho)
from iota.messages import ASSISTANT, COMPACTION, TOOL, USER, Message, ToolCall
from iota.attachments import attached_line
from iota.sessions.history import LogHistory
from iota.sessions.log import LOG_NAME

# Records per page: a screen or two of a typical conversation.
PAGE_RECORDS = 40
# The arguments that name what a call acts on, most telling first.
TARGET_ARGUMENTS = ("command", "path", "pattern", "url", "skill", "query", "name")
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
                events.append(ToolStarted(call.id, shown_name(call.name), call_target(call), call_command(call)))
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


def call_target(call: ToolCall) -> str:
    """What a call acted on, in one short line: its command, path or pattern, else its arguments."""
    for key in TARGET_ARGUMENTS:
        value = call.arguments.get(key)
        if isinstance(value, str) and value.strip():
            return _short(value.strip())
    return _short(json.dumps(call.arguments, ensure_ascii=False)) if call.arguments else ""


def call_command(call: ToolCall) -> str:
    command = call.arguments.get("command")
    return command if isinstance(command, str) else ""


def _short(text: str) -> str:
    first = text.splitlines()[0] if text else ""
    return first if len(first) <= TARGET_COLUMNS and first == text else first[:TARGET_COLUMNS - 2].rstrip() + " …"
