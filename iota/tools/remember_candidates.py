"""`remember`'s candidate actions: what the model and the upkeep do with a bot's candidates.

    candidates   note `items` as candidates (if any), then list them with their hits
    pin          pin a candidate (promoted at the next upkeep) or a MEMORY.md line (never demoted)
    unpin        the reverse
    promote      write a candidate into MEMORY.md now, as an `[inferred]` line
    forget       delete a candidate

The rules live in iota.bots.candidates; this decodes the arguments, keeps the file, and says what
happened. A promotion is an ordinary MEMORY.md write (its notice is taken with the others once
the turn is over). The candidates' own changes are told through `take_notices`, for the upkeep
to show: a candidate's text is shown on screen, never put into the conversation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from iota.bots.candidates import (CANDIDATE, DURABLE, PROMOTE_HITS, CandidateBook, Entry, Mark, add, describe, find,
                                  promote, track_memory_lines)
from iota.memory.file import MemoryFile, read_memory
from iota.memory.lines import MemoryRefusal, go_quote
from iota.tools.base import ToolResult
from iota.errors import ToolError

ACTIONS = ("candidates", "pin", "unpin", "promote", "forget")
LISTED = 50   # the most candidates a result lists

ITEMS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "description": "candidates: facts or preferences to note, each one short line in the words of a MEMORY.md "
                   "line, with up to 6 keywords a later message about it would contain (optional), and its "
                   "MEMORY.md section (\"User\" by default).",
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
        """`memory` is the bot's MEMORY.md as the chat shares it; `mark` says where the
        conversation's log ends now (a new candidate counts hits from there)."""
        self.book = book
        self.memory = memory
        self.project = project
        self._mark = mark
        self._now = now
        self._notices: list[str] = []

    def take_notices(self) -> list[str]:
        """`candidates: noted "…"`, `candidates: pinned "…"` since the last call."""
        notices, self._notices = self._notices, []
        return notices

    def target(self, action: str, args: dict[str, Any]) -> str:
        items = args.get("items")
        if action == "candidates":
            return f"candidates +{len(items)}" if isinstance(items, list) and items else "candidates"
        return f"{action} {go_quote(_text(args, 'old'))}"

    def run(self, action: str, args: dict[str, Any]) -> ToolResult:
        now = int(self._now())
        entries = self.book.load()
        if action == "candidates":
            return self._note(entries, args.get("items"), now)
        if action in ("pin", "unpin"):
            track_memory_lines(entries, self.memory, now=now, since=self._mark())
        entry = find(entries, _text(args, "old"), state=None if action in ("pin", "unpin") else CANDIDATE)
        if action == "forget":
            entries.remove(entry)
            said = f'forgot candidate {go_quote(entry.text)}'
        elif action == "promote":
            promote(entry, self.memory, project=self.project, now=now)
            said = f"promoted {go_quote(entry.text)} to MEMORY.md as an [inferred] line"
        else:
            entry.pinned = action == "pin"
            where = "MEMORY.md line" if entry.state == DURABLE else "candidate"
            said = f"{action}ned {where} {go_quote(entry.text)}" + (
                " (it is promoted to MEMORY.md at the next upkeep)" if entry.pinned and entry.state == CANDIDATE
                else " (it is never demoted)" if entry.pinned else "")
        self.book.save(entries)
        self._notices.append(f"candidates: {said}")
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
        candidates = sorted((entry for entry in entries if entry.state == CANDIDATE),
                            key=lambda entry: (-entry.pinned, -entry.hits, -entry.created))
        lines.append(f"{len(candidates)} candidate{'' if len(candidates) == 1 else 's'} (kept apart, never sent with "
                     f"requests; {PROMOTE_HITS} hits or a pin promotes one to MEMORY.md):")
        lines += [describe(entry) for entry in candidates[:LISTED]]
        if len(candidates) > LISTED:
            lines.append(f"… and {len(candidates) - LISTED} more")
        return ToolResult("\n".join(lines))


def _text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    return value if isinstance(value, str) else ""
