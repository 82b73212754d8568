"""`remember`'s candidate and durable actions: what the model and the upkeep do with a bot's store.

    candidates   note `items` as candidates (if any), then list them with their hits
    durables     list the durables with their hits and pins
    pin          pin a candidate (promoted at the next upkeep) or a durable (always sent, never demoted)
    unpin        the reverse
    promote      make a candidate a durable now
    forget       delete a candidate or a durable

The rules live in iota.bots.candidates; this decodes the arguments, keeps the files, and says what
happened. The changes are told through `take_notices`, for the upkeep to show: an entry's text is
shown on screen, never put into the conversation (a durable reaches the model by relevance alone,
iota.bots.durables).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from iota.bots.candidates import (CANDIDATE, DURABLE, PROMOTE_HITS, CandidateBook, Entry, Mark, add, describe, find,
                                  promote)
from iota.bots.durables import PINS_CAP, SENT_ENTRIES
from iota.memory.file import MemoryFile, read_memory
from iota.memory.lines import MemoryRefusal, go_quote
from iota.tools.base import ToolResult
from iota.errors import ToolError

ACTIONS = ("candidates", "durables", "pin", "unpin", "promote", "forget")
LISTED = 50   # the most entries a result lists

ITEMS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "description": "candidates: facts or preferences to note, each one short line in the words of a MEMORY.md "
                   "line, with up to 6 keywords a later message about it would contain (optional), and its "
                   "section (\"User\" by default, \"Project: <name>\" for what holds in one project).",
    "items": {
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "keywords": {"type": "array", "items": {"type": "string"}},
            "section": {"type": "string"},
        },
        "required": ["text"],
    },
}


class CandidateActions:
    def __init__(self, book: CandidateBook, memory: MemoryFile, *, project: str | None,
                 mark: Callable[[], Mark | None] = lambda: None, now: Callable[[], float] = time.time):
        """`memory` is the bot's MEMORY.md (a candidate it already says is refused); `mark` says
        where the conversation's log ends now (a new candidate counts hits from there)."""
        self.book = book
        self.memory = memory
        self.project = project
        self._mark = mark
        self._now = now
        self._notices: list[str] = []

    def take_notices(self) -> list[str]:
        """`candidates: noted "…"`, `durables: pinned "…"` since the last call."""
        notices, self._notices = self._notices, []
        return notices

    def target(self, action: str, args: dict[str, Any]) -> str:
        items = args.get("items")
        if action == "candidates":
            return f"candidates +{len(items)}" if isinstance(items, list) and items else "candidates"
        if action == "durables":
            return action
        return f"{action} {go_quote(_text(args, 'old'))}"

    def run(self, action: str, args: dict[str, Any]) -> ToolResult:
        now = int(self._now())
        entries = self.book.load()
        if action == "candidates":
            return self._note(entries, args.get("items"), now)
        if action == "durables":
            return ToolResult(_listing(entries, DURABLE))
        entry = find(entries, _text(args, "old"), state=CANDIDATE if action == "promote" else None)
        kind = "durable" if entry.state == DURABLE else "candidate"
        if action == "forget":
            entries.remove(entry)
            said = f"forgot {kind} {go_quote(entry.text)}"
        elif action == "promote":
            promote(entry, now=now)
            said = f"promoted {go_quote(entry.text)} to durables"
        else:
            pinned = [other for other in entries if other.pinned and other is not entry]
            if action == "pin" and len(pinned) >= PINS_CAP:
                raise ToolError(f"{len(pinned)} entries are pinned already, the most there may be (pins go with "
                                f"every message, and leave room for what it is about); unpin one first: "
                                + "; ".join(describe(other) for other in pinned))
            entry.pinned = action == "pin"
            said = f"{action}ned {kind} {go_quote(entry.text)}" + (
                " (it becomes a durable at the next upkeep)" if entry.pinned and entry.state == CANDIDATE
                else " (it goes with every message and is never demoted)" if entry.pinned else "")
        self.book.save(entries)
        self._notices.append(f"{'durables' if entry.state == DURABLE else 'candidates'}: {said}")
        return ToolResult(said)

    def _note(self, entries: list[Entry], items: Any, now: int) -> ToolResult:
        lines = []
        if items is not None:
            if not isinstance(items, list):
                raise ToolError("items is a list of candidates: [{\"text\": \"…\", \"keywords\": [\"…\"]}]")
            try:
                memory_text = read_memory(self.memory.path) or ""
            except MemoryRefusal:
                memory_text = ""
            noted = add(entries, items, memory_text, now=now, since=self._mark(), project=self.project)
            if noted.added or noted.evicted:
                self.book.save(entries)
            for entry in noted.added:
                self._notices.append(f"candidates: noted {go_quote(entry.text)}")
                lines.append(f"noted {entry.id}: {entry.text}")
            for text, why in noted.refused:
                lines.append(f"not noted {go_quote(text)}: {why}")
            for entry in noted.evicted:
                lines.append(f"dropped {entry.id} to make room: {entry.text}")
        lines.append(_listing(entries, CANDIDATE))
        return ToolResult("\n".join(lines))


def _listing(entries: list[Entry], state: str) -> str:
    """The candidates, or the durables, pinned first, then by hits, newest first."""
    chosen = sorted((entry for entry in entries if entry.state == state),
                    key=lambda entry: (-entry.pinned, -entry.hits, -entry.created))
    count = f"{len(chosen)} {state}{'' if len(chosen) == 1 else 's'}"
    about = (f"{count} (kept apart, never sent with requests; {PROMOTE_HITS} hits or a pin makes one a durable):"
             if state == CANDIDATE else
             f"{count} (before each message the pinned ones, those it is about and the most brought up go with "
             f"it, at most {SENT_ENTRIES}):")
    lines = [about, *(describe(entry) for entry in chosen[:LISTED])]
    if len(chosen) > LISTED:
        lines.append(f"… and {len(chosen) - LISTED} more")
    return "\n".join(lines)


def _text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    return value if isinstance(value, str) else ""
