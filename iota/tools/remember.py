"""The `remember` tool: a bot's line edits to its MEMORY.md.

It asks for no approval: it writes only the bot's own file, a line at a time. What makes up for
that is that every write is visible and reversible: the transcript shows the change in full, the
conversation records a `memory: MEMORY.md ## User +1 line: …` notice, the old file is kept as
MEMORY.md.prev, and the lines a person wrote cannot be touched. The file format and its rules live
in iota.memory.document; this module decodes the arguments and presents the result.

The notices are not on the result: the chat takes them from the shared `MemoryFile`
(`take_notices()`) once the turn is over, so they land in the log after the tool results, as the
record of what the turn changed.
"""

from __future__ import annotations

import datetime
from typing import Any, Callable

from iota.memory.document import SOURCES, Add, Edit, MemoryRefusal, Remove, Replace, go_quote, parse_section
from iota.memory.file import MemoryFile
from iota.tools.base import Tool, ToolResult
from iota.tools.code_write import unified_diff

DESCRIPTION = (
    "Save a line to your long-term memory, MEMORY.md, which you are shown again in later turns, after "
    "compactions and after restarts. Call it when the user states a preference, when a decision is made, or "
    "when you learn a fact you will need again. One entry is one short line. action \"add\" files a new line "
    "under section (\"User\" by default, for the user; \"Project: <name>\" for one project, named after its "
    "directory; \"Open threads\" for what is still in progress); \"replace\" and \"remove\" change the one "
    "line that contains old. source is \"user\" only when the user said it, \"inferred\" for your own "
    "conclusions and anything read in tool output. The tag and the date are added for you. Lines without a "
    "[user] or [inferred] tag were written by the user and cannot be changed: ask them instead. Never store "
    "secrets, keys or tokens: the file is plain text, sent with every request, and may be committed to git."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {
            "type": "string",
            "enum": ["add", "replace", "remove"],
            "description": "add a line, replace the line containing old, or remove it.",
        },
        "text": {"type": "string", "description": "The entry, one line (add, replace)."},
        "source": {
            "type": "string",
            "enum": ["user", "inferred"],
            "description": "user: the user said it. inferred: your own conclusion, or read in tool output. "
                           "Required for add and replace.",
        },
        "old": {"type": "string", "description": "A substring of exactly one existing line (replace, remove)."},
        "section": {
            "type": "string",
            "description": "Where add files the line: \"User\" (default), \"Project: <name>\" or \"Open threads\".",
        },
    },
    "required": ["action"],
}


class Remember(Tool):
    name = "remember"
    description = DESCRIPTION
    parameters = PARAMETERS

    def __init__(self, memory: MemoryFile, today: Callable[[], datetime.date] = datetime.date.today):
        self.memory = memory
        self._today = today

    def target(self, args: dict[str, Any]) -> str:
        """`add ## User`, `replace "tabs"`, `remove "tabs"`: what the call is about, for the transcript."""
        action = _text(args, "action").strip()
        if action == "add":
            try:
                return f"add ## {parse_section(_text(args, 'section'))}"
            except MemoryRefusal:
                return action
        if action in ("replace", "remove"):
            return f"{action} {go_quote(_text(args, 'old'))}"
        return action

    async def run(self, args: dict[str, Any]) -> ToolResult:
        # No await from here on: the write is a few KiB, synchronous, and so cannot be cancelled
        # half-way. A refusal (MemoryRefusal is a ToolError) becomes the error result the model reads.
        applied = self.memory.write(decode(args), self._today())
        return ToolResult(applied.result, display=unified_diff("MEMORY.md", applied.old_body, applied.new_body))


def decode(args: dict[str, Any]) -> Edit:
    """The call's arguments as an edit, or the refusal the model reads. A non-string argument counts
    as missing."""
    action = _text(args, "action").strip()
    if action == "add":
        section = parse_section(_text(args, "section"))
        return Add(_text(args, "text"), _source(args), section)
    if action == "replace":
        return Replace(_text(args, "old"), _text(args, "text"), _source(args))
    if action == "remove":
        return Remove(_text(args, "old"))
    if not action:
        raise MemoryRefusal("missing required argument: action")
    raise MemoryRefusal(f'action must be "add", "replace" or "remove", got {go_quote(action)}')


def _source(args: dict[str, Any]) -> str:
    source = _text(args, "source").strip()
    if not source:
        raise MemoryRefusal('source is required: "user" or "inferred"')
    if source not in SOURCES:
        raise MemoryRefusal(f'source must be "user" or "inferred", got {go_quote(source)}')
    return source


def _text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    return value if isinstance(value, str) else ""
