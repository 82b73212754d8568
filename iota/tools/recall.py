"""The `recall` tool: a bot rereads its own past — everything it did and said, in every session
it has, compacted away or not.

    search   {query, limit, include_undone}   messages, tool calls and results, summaries and
                                              journal entries, best first (BM25), each with its
                                              date, session, record and a snippet
    sessions                                  the bot's sessions: first and last activity, size
    read     {session, from, count}           a stretch of a session, message by message, with
                                              one line summing up the tools used before each reply

It only reads, so it asks for no approval. It reads through the bot's journal file, which holds
the bot's own sessions and nothing else: a session id it does not hold — another bot's, a chat's,
anything else a model may try — is refused, and no path is ever made from what the model sends.
What it returns is capped like a command's output, and says how to narrow or go on. Records a
`/rewind` undid are found only with `include_undone`.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import trio

from iota.bots.journal import JOURNAL_MARK, Journal
from iota.bots.journal_entry import clip, group_calls, head_and_tail
from iota.messages import ASSISTANT, COMPACTION, REWIND, TOOL, USER
from iota.sessions.search import CANDIDATES, format_time, locate, records_from, search
from iota.tools.base import Tool, ToolResult
from iota.errors import ToolError

# What one call may return, and the defaults and ceilings of its counts.
OUTPUT_CAP = 16 * 1024
DEFAULT_LIMIT, MAX_LIMIT = 10, 50
DEFAULT_COUNT, MAX_COUNT = 20, 100
MESSAGE_CHARS = 1500
RESULT_CHARS = 4000
NOTICE_CHARS = 300

DESCRIPTION = (
    "Reread your own past: everything you did and said in this bot's conversations, including what was "
    "compacted away. action \"search\" finds messages, tool calls and their results, summaries and journal "
    "entries matching query (words or \"quoted phrases\"; every word must match, stems count), best first, "
    "each with its date, session, record number and a snippet. action \"sessions\" lists your sessions. "
    "action \"read\" rereads a session (default: this one) message by message from record number from, with "
    "one line summing up the tools used before each reply; read a search hit's record with count 1 to see "
    "it whole. Use it before answering whenever the user refers to earlier work — never claim not to "
    "remember. Records undone by /rewind are left out unless include_undone is true."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["search", "sessions", "read"]},
        "query": {"type": "string", "description": "search: the words to find."},
        "limit": {"type": "integer",
                  "description": f"search: how many hits (default {DEFAULT_LIMIT}, at most {MAX_LIMIT})."},
        "include_undone": {"type": "boolean", "description": "search, read: also what /rewind undid."},
        "session": {"type": "string", "description": "read: the session id (default: this conversation)."},
        "from": {"type": "integer", "description": "read: the record number to start at (default 1)."},
        "count": {"type": "integer",
                  "description": f"read: how many messages (default {DEFAULT_COUNT}, at most {MAX_COUNT})."},
    },
    "required": ["action"],
}


class Recall(Tool):
    name = "recall"
    description = DESCRIPTION
    parameters = PARAMETERS
    parallel = True
    read_only = True

    def __init__(self, journal: Journal):
        self.journal = journal

    def target(self, args: dict[str, Any]) -> str:
        action = _text(args, "action")
        if action == "search":
            return f"search {clip(_text(args, 'query'), 60)}"
        if action == "read":
            return f"read {_text(args, 'session') or 'this session'} from {_number(args, 'from', 1)}"
        return action

    async def run(self, args: dict[str, Any]) -> ToolResult:
        action = _text(args, "action")
        work = {"search": self._search, "sessions": self._sessions, "read": self._read}.get(action)
        if work is None:
            raise ToolError('action must be "search", "sessions" or "read"')
        return ToolResult(await trio.to_thread.run_sync(partial(work, args)))

    # -- search -----------------------------------------------------------------------------------

    def _search(self, args: dict[str, Any]) -> str:
        query = _text(args, "query").strip()
        if not query:
            raise ToolError("search needs a query: the words to find")
        limit = min(max(_number(args, "limit", DEFAULT_LIMIT), 1), MAX_LIMIT)
        found = search(self.journal.reader, query, limit=limit, include_undone=args.get("include_undone") is True)
        entries = self.journal.search_entries(query, limit)
        hits = [(hit.score, self._hit_lines(hit)) for hit in found.hits]
        hits += [(score, [f"{stored.place(self.journal.current)} · journal entry", f"   {snippet}"])
                 for stored, snippet, score in entries]
        hits.sort(key=lambda pair: pair[0])
        if not hits:
            return f'No match for "{query}" in your history.'
        head = (f'No record has every word of "{query}"; these have some of them (best first):' if found.any_word
                else f'Matches for "{query}" (best first):')
        lines = [head]
        for number, (_, hit_lines) in enumerate(hits[:limit], 1):
            lines.append(f"{number}. {hit_lines[0]}")
            lines.extend(hit_lines[1:])
        if found.crowded:
            lines.append(f"So many records match that these are the best of the latest {CANDIDATES:,}: add words to "
                         "narrow the search.")
        elif found.more or len(hits) > limit:
            lines.append(f"More hits than shown: add words to narrow the search, or raise limit (at most {MAX_LIMIT}).")
        return _capped(lines, "Output capped: add words to narrow the search, or lower limit.")

    def _hit_lines(self, hit) -> list[str]:
        where = "" if hit.session == self.journal.current else f"session {hit.session} · "
        what = {"user": "the user's message", "notice": "notice", "reply": "your reply",
                "tool": f"tool result ({hit.name})" if hit.name else "tool result", "summary": "compaction summary"}
        undone = " · undone by /rewind" if hit.undone else ""
        return [f"{hit.when()} · {where}record {hit.position} · {what.get(hit.kind, hit.kind)}{undone}",
                f"   {hit.snippet}"]

    # -- sessions ---------------------------------------------------------------------------------

    def _sessions(self, args: dict[str, Any]) -> str:
        sessions = self.journal.sessions()
        if not sessions:
            return "You have no session indexed yet."
        lines = [f"Your sessions ({len(sessions)}):"]
        for session, first, last, records, size in sessions:
            this = " (this conversation)" if session == self.journal.current else ""
            lines.append(f"{session}{this} · {format_time(first)} – {format_time(last)} · {records} records indexed "
                         f"· {size / 1e6:.1f} MB")
        return "\n".join(lines)

    # -- read -------------------------------------------------------------------------------------

    def _read(self, args: dict[str, Any]) -> str:
        session = _text(args, "session").strip() or self.journal.current
        start = max(_number(args, "from", 1), 1)
        count = min(max(_number(args, "count", DEFAULT_COUNT), 1), MAX_COUNT)
        include_undone = args.get("include_undone") is True
        place = locate(self.journal.reader, session, start)
        if place is None:
            raise ToolError(f'session {clip(session, 40)} is not one of yours: action "sessions" lists them')
        path, offset, position = place
        undone = self.journal.undone_positions(session)
        lines = [f"Session {session}, from record {start}:"]
        tools = _ToolsLine()
        shown = 0
        next_from = None
        for item in records_from(path, offset, position):
            if item.position < start:
                continue
            if shown == count:
                next_from = item.position
                break
            if item.position in undone and not include_undone:
                continue
            line = _read_line(item, start, " (undone by /rewind)" if item.position in undone else "", tools)
            if line is not None:
                lines.extend(tools.flush())
                lines.append(line)
                shown += 1
        lines.extend(tools.flush())
        if shown == 0:
            return f"Nothing to read in session {session} from record {start} on."
        if next_from is not None:
            lines.append(f"More: read from={next_from}.")
        return _capped(lines, "Output capped: read again from the last record shown, with a smaller count.")


class _ToolsLine:
    """The tool calls read since the last message shown, summed up in one line."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []
        self.failed = 0

    def flush(self) -> list[str]:
        if not self.calls:
            return []
        line = f"  tools: {group_calls(self.calls)}" + (f"; {self.failed} failed" if self.failed else "")
        self.calls, self.failed = [], 0
        return [line]


def _read_line(item, start: int, mark: str, tools: _ToolsLine) -> str | None:
    """How `read` shows one record (None: not as a message of its own; its tool calls and
    failures go to `tools`)."""
    record, role = item.record, item.role
    content = record.get("content") if isinstance(record.get("content"), str) else ""
    if role == ASSISTANT:
        for call in record.get("tool_calls") or []:
            if isinstance(call, dict):
                arguments = call.get("arguments")
                tools.calls.append((str(call.get("name", "")), arguments if isinstance(arguments, dict) else {}))
        return f"#{item.position} you replied{mark}: {_cut(content, MESSAGE_CHARS)}" if content.strip() else None
    if role == TOOL:
        tools.failed += record.get("is_error") is True
        if item.position != start:
            return None
        # The record a search hit pointed at: whole.
        return f"#{item.position} result of {record.get('tool_call_name', 'a tool')}{mark}: {_cut(content, RESULT_CHARS)}"
    if role == USER and record.get("hidden") is True:
        if content.startswith(JOURNAL_MARK):
            return None  # what the journal gave you then: read the turns themselves
        return f"#{item.position} iota wrote (not shown to the user){mark}: {_cut(content, NOTICE_CHARS)}"
    if role == USER and record.get("notice") is True:
        return f"#{item.position} notice{mark}: {_cut(content, NOTICE_CHARS)}"
    if role == USER:
        return f"#{item.position} the user{mark}: {_cut(content, MESSAGE_CHARS)}"
    if role == COMPACTION:
        return f"#{item.position} compaction summary: {_cut(content, MESSAGE_CHARS)}"
    if role == REWIND:
        return f'#{item.position} the user rewound the conversation: undone from their message "{clip(content, 80)}" on'
    return None


def _cut(text: str, limit: int) -> str:
    return head_and_tail(text.strip(), limit // 2, limit // 2)


def _capped(lines: list[str], how_to_narrow: str) -> str:
    """`lines` joined, cut at whole lines to fit the output cap, saying so and how to narrow."""
    kept, size = [], 0
    for line in lines:
        size += len(line.encode()) + 1
        if size > OUTPUT_CAP:
            kept.append(f"[… {len(lines) - len(kept)} more lines not shown] {how_to_narrow}")
            break
        kept.append(line)
    return "\n".join(kept)


def _text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    return value if isinstance(value, str) else ""


def _number(args: dict[str, Any], key: str, default: int) -> int:
    value = args.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else default
