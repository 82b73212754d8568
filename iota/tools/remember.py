"""The `remember` tool: a bot's line edits to its MEMORY.md.

It asks for no approval: it writes only the bot's own file, a line at a time. What makes up for
that is that every write is visible and reversible: the transcript shows the change in full, the
conversation records a `memory: MEMORY.md ## User +1 line: …` notice, the old file is kept as
MEMORY.md.prev, and the lines a person wrote cannot be touched. The file format and its rules live
in iota.memory.document; this module decodes the arguments and presents the result.

The model may have read what it is asked to save in a file or a tool's output that tells it what
to "remember", so two things are not the model's to decide. A `[user]` line must be backed by
what the person typed in this conversation (iota.memory.provenance has the rule); one that is not
is written `[inferred]`, and the result says so. And a `## Project: X` section takes edits only
from a chat running in project X, the one section of projects the model is shown.

The notices are not on the result: the chat takes them from the shared `MemoryFile`
(`take_notices()`) once the turn is over, so they land in the log after the tool results, as the
record of what the turn changed.
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any, Callable

from iota.memory.document import (SOURCES, Add, Edit, MemoryRefusal, Remove, Replace, go_quote, normalize,
                                  parse_section)
from iota.memory.provenance import unbacked
from iota.memory.file import MemoryFile
from iota.tools.base import Tool, ToolResult
from iota.tools.code_write import unified_diff

DESCRIPTION = (
    "Save a line to your long-term memory, MEMORY.md, which you are shown again in later turns, after "
    "compactions and after restarts. Call it when the user states a preference, when a decision is made, or "
    "when you learn a fact you will need again. One entry is one short line. action \"add\" files a new line "
    "under section (\"User\" by default, for the user; \"Project: <name>\" for the project you run in, named "
    "after its directory; \"Open threads\" for what is still in progress); \"replace\" and \"remove\" change "
    "the one line that contains old. source is \"user\" only when the user said it in this conversation (in "
    "their words: a line their messages do not back is filed as \"inferred\"), \"inferred\" for your own "
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

    def __init__(self, memory: MemoryFile, *, project: str | None = None,
                 typed_by_person: Callable[[], list[str]] = list,
                 today: Callable[[], datetime.date] = datetime.date.today):
        """`project` is the project the chat runs in (the project directory's name), the one
        `## Project:` section it may write; `typed_by_person` gives the person's recent messages
        (iota.memory.provenance.typed_by_person), the only backing a `[user]` line can have."""
        self.memory = memory
        self.project = project
        self._typed_by_person = typed_by_person
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
        edit, downgraded = self._backed(decode(args, self.project))
        applied = self.memory.write(edit, self._today())
        result = f"{downgraded}\n\n{applied.result}" if downgraded else applied.result
        return ToolResult(result, display=unified_diff("MEMORY.md", applied.old_body, applied.new_body))

    def _backed(self, edit: Edit) -> tuple[Edit, str]:
        """`edit` as it may be written: a `[user]` line the person's own messages do not back is
        written `[inferred]`, with the sentence that says so ("" when nothing changed)."""
        if isinstance(edit, Remove) or edit.source != "user":
            return edit, ""
        missing = unbacked(normalize(edit.text), self._typed_by_person())
        if missing is None:
            return edit, ""
        why = (f"{', '.join(go_quote(word) for word in missing)} "
               f"{'is' if len(missing) == 1 else 'are'} in none of their recent messages" if missing
               else "it has no words of its own to compare with theirs")
        return dataclasses.replace(edit, source="inferred"), (
            f"saved as [inferred], not [user]: a [user] line must be in the words the user typed in this "
            f"conversation, and {why}")


def decode(args: dict[str, Any], made_in: str | None = None) -> Edit:
    """The call's arguments as an edit made from project `made_in`, or the refusal the model reads.
    A non-string argument counts as missing."""
    action = _text(args, "action").strip()
    if action == "add":
        section = parse_section(_text(args, "section"))
        return Add(_text(args, "text"), _source(args), section, made_in)
    if action == "replace":
        return Replace(_text(args, "old"), _text(args, "text"), _source(args), made_in)
    if action == "remove":
        return Remove(_text(args, "old"), made_in)
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
