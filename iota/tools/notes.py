"""The `notes` tool: a bot's durable Markdown documents (iota.bots.notes), kept without asking.

No approval: it writes only the bot's own notes directory, files the person can read, edit,
and keep in git, and every write says which file it changed.
"""

from __future__ import annotations

from typing import Any

from iota.bots.notes import NotesLibrary
from iota.tools.base import Tool, ToolResult
from iota.errors import ToolError

BOUNDARY = ("Timed or recurring work → the schedule tool; do-now or unscheduled backlog work → the tasks tool; "
            "durable documents to maintain → notes.")

DESCRIPTION = (
    "Keep durable documents — a design brief, requirements, a report — as Markdown notes the user can open "
    "and edit. " + BOUNDARY + " Your system prompt lists the notes (name, title, summary, last change); read "
    "one before you rely on it or change it, since the user may have edited it. create takes a title, a "
    "one-line summary and the Markdown body; update takes the note's name and a new title, summary, the "
    "whole new body, or text to append. Talk to the user of notes in plain words, never of this tool."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["create", "update", "read", "list", "delete"]},
        "note": {"type": "string", "description": "update, read, delete: the note's name, as listed."},
        "title": {"type": "string", "description": "create (required), update: the note's title."},
        "summary": {"type": "string", "description": "create, update: what the note is, in one line."},
        "body": {"type": "string", "description": "create, update: the whole Markdown text."},
        "append": {"type": "string", "description": "update: Markdown to add at the end instead of a new body."},
    },
    "required": ["action"],
}


class NotesTool(Tool):
    name = "notes"
    description = DESCRIPTION
    parameters = PARAMETERS

    def __init__(self, library: NotesLibrary):
        self.library = library

    def target(self, args: dict[str, Any]) -> str:
        action = args.get("action") if isinstance(args.get("action"), str) else ""
        about = args.get("title") if action == "create" else args.get("note")
        return f"{action} {about if isinstance(about, str) else ''}".strip()

    async def run(self, args: dict[str, Any]) -> ToolResult:
        action = args.get("action")
        library = self.library
        if action == "list":
            return ToolResult(library.catalog() or "No notes yet.")
        if action == "read":
            return ToolResult(library.read(args.get("note")))
        if action == "create":
            result = library.create(args.get("title"), args.get("summary"), args.get("body", ""))
        elif action == "update":
            result = library.update(args.get("note"), title=args.get("title"), summary=args.get("summary"),
                                    body=args.get("body"), append=args.get("append"))
        elif action == "delete":
            result = library.delete(args.get("note"))
        else:
            raise ToolError(f"action must be create, update, read, list or delete, got {action!r}")
        return ToolResult(result)
