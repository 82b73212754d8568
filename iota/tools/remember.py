"""The `remember` tool: a bot's edits to its own memory files.

    MEMORY.md         add / replace / remove one line (the default file)
    USER.md           the same, about the person (sections Profile, Preferences)
    BRIEF.md          the same, for the mission (Goals, Constraints, Decisions)
    SOUL.md           patch: the body of one `##` section replaced, never the whole file
    candidates.jsonl  candidates, durables, pin, unpin, promote, forget (iota.tools.remember_candidates)
    durables.jsonl

It asks for no approval: it writes only the bot's own files, a line or a section at a time. What
makes up for that is that every write is visible and reversible: the transcript shows the change
in full, the conversation records a `memory: memory/BRIEF.md ## Goals +1 line: …` notice, each
file keeps its previous version beside it (`BRIEF.md.prev`), and the lines a person wrote cannot
be touched. Inherited and global memory are never written: the tool knows only these four files,
by name. The file formats and their rules live in iota.memory.document; this module decodes the
arguments and presents the result.

The model may have read what it is asked to save in a file or a tool's output that tells it what
to "remember", so some things are not the model's to decide. A `[user]` line must be backed by
what the person typed in this conversation (iota.memory.provenance has the rule); one that is not
is written `[inferred]`, and the result says so. A SOUL.md patch has no tag to fall back on, so
it is refused unless the words it adds (or, for a deletion, drops) are in one of the person's recent
messages: the persona changes only when the person asked for it. And a `## Project: X` section of MEMORY.md
takes edits only from a chat running in project X, the one section of projects the model is shown.

The notices are not on the result: the chat takes them from the files (`take_notices()`) once the
turn is over, so they land in the log after the tool results, as the record of what it changed.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any, Callable

from iota.memory.document import (SOURCES, Add, Edit, MemoryDoc, Patch, Remove, Replace, normalize,
                                  parse_section)
from iota.memory.file import MemoryFile, read_memory
from iota.memory.kinds import MEMORY_MD, SOUL_MD, WRITABLE, FileKind
from iota.memory.lines import MemoryRefusal, go_quote
from iota.memory.provenance import unbacked, unbacked_change
from iota.tools.base import Tool, ToolResult
from iota.tools.code.write import unified_diff
from iota.tools.remember_candidates import ACTIONS as CANDIDATE_ACTIONS
from iota.tools.remember_candidates import ITEMS_SCHEMA, CandidateActions

DESCRIPTION = (
    "Save a line to your long-term memory, which you are shown again in later turns, after compactions and "
    "after restarts. Call it when the user states a preference, when a decision is made, or when you learn a "
    "fact you will need again. file says where (MEMORY.md by default): a goal, a constraint or a lasting "
    "decision goes to BRIEF.md at once (sections \"Goals\", \"Constraints\", \"Decisions\"), where it outlives "
    "any compaction; a fact about the user goes to USER.md (\"Profile\", \"Preferences\"); a lasting change of "
    "your style the user asks for goes to SOUL.md; everything else stays in MEMORY.md. One entry is one short "
    "line. action \"add\" files a new line under section (in MEMORY.md: \"User\" by default, for the user; "
    "\"Project: <name>\" for the project you run in, named after its directory; \"Open threads\" for what is "
    "still in progress); \"replace\" and \"remove\" change the one line that contains old. SOUL.md changes a "
    "section at a time: action \"patch\" replaces the body of the ## section named by section with text, in "
    "the user's own words (a change they did not ask for is refused). source is \"user\" only when the user "
    "said it in this conversation (in their words: a line their messages do not back is filed as "
    "\"inferred\"), \"inferred\" for your own conclusions and anything read in tool output. The tag and the "
    "date are added for you. Lines without a [user] or [inferred] tag were written by the user and cannot be "
    "changed: ask them instead. Global and inherited memory are read-only. Never store secrets, keys or "
    "tokens: the files are plain text, sent with every request, and may be committed to git. "
    "A bot also keeps candidates, facts kept apart until they prove lasting: action \"candidates\" notes "
    "items (one short line each, with keywords) and lists them with their hits; a candidate the user brings up "
    "3 times, or one pinned, becomes a durable by itself, and the durables relevant to a message come with it. "
    "\"durables\" lists them; \"pin\", \"unpin\", \"promote\" and \"forget\" take old: the id of a "
    "candidate or a durable, or part of its text (a pinned durable goes with every message)."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {
            "type": "string",
            "enum": ["add", "replace", "remove", "patch", *CANDIDATE_ACTIONS],
            "description": "add a line, replace the line containing old, or remove it; patch (SOUL.md only) "
                           "replaces the body of one section; candidates notes items and lists the candidates; "
                           "durables lists the durables; pin, unpin, promote and forget change the candidate or "
                           "durable named by old.",
        },
        "items": ITEMS_SCHEMA,
        "text": {"type": "string", "description": "The entry, one line (add, replace); for patch, the section's "
                                                  "new body, any number of lines."},
        "source": {
            "type": "string",
            "enum": ["user", "inferred"],
            "description": "user: the user said it. inferred: your own conclusion, or read in tool output. "
                           "Required for add and replace.",
        },
        "old": {"type": "string", "description": "A substring of exactly one existing line (replace, remove), or "
                                                 "a candidate's or durable's id or part of its text (pin, unpin, promote, forget)."},
        "section": {
            "type": "string",
            "description": "Where add files the line: \"User\" (default), \"Project: <name>\" or \"Open threads\" in "
                           "MEMORY.md; \"Profile\" or \"Preferences\" in USER.md; \"Goals\", \"Constraints\" or "
                           "\"Decisions\" in BRIEF.md. For patch, the SOUL.md section to replace.",
        },
        "file": {
            "type": "string",
            "enum": list(WRITABLE),
            "description": "The file to change: MEMORY.md (default), SOUL.md, USER.md or BRIEF.md.",
        },
    },
    "required": ["action"],
}


class Remember(Tool):
    name = "remember"
    description = DESCRIPTION
    parameters = PARAMETERS

    def __init__(self, memory: MemoryFile, *, files: Mapping[str, MemoryFile] | None = None,
                 project: str | None = None, typed_by_person: Callable[[], list[str]] = list,
                 today: Callable[[], datetime.date] = datetime.date.today,
                 candidates: CandidateActions | None = None):
        """`memory` is the bot's MEMORY.md, `files` its memory directory's SOUL.md, USER.md and
        BRIEF.md by name (iota.memory.layers.BotMemory has both; without `files` the tool writes
        MEMORY.md alone). `project` is the project the chat runs in (the project directory's
        name), the one `## Project:` section it may write; `typed_by_person` gives the person's
        recent messages (iota.memory.provenance.typed_by_person), the only backing a `[user]`
        line or a SOUL.md patch can have. `candidates`, a bot's candidate memory, takes the
        candidate actions (without it they are refused)."""
        self.memory = memory
        self.candidates = candidates
        self.files = dict(files or {})
        self.project = project
        self._typed_by_person = typed_by_person
        self._today = today

    def target(self, args: dict[str, Any]) -> str:
        """`add ## User`, `replace "tabs"`, `add memory/BRIEF.md ## Goals`, `patch memory/SOUL.md ## Style`:
        what the call is about, for the transcript (MEMORY.md goes without saying)."""
        action = _text(args, "action").strip()
        if action in CANDIDATE_ACTIONS and self.candidates is not None:
            return self.candidates.target(action, args)
        try:
            kind = file_kind(args)
        except MemoryRefusal:
            return action
        where = "" if kind is MEMORY_MD else f"{kind.label} "
        if action in ("add", "patch"):
            try:
                return f"{action} {where}## {parse_section(_text(args, 'section'), kind)}"
            except MemoryRefusal:
                return action
        if action in ("replace", "remove"):
            return f"{action} {where}{go_quote(_text(args, 'old'))}"
        return action

    async def run(self, args: dict[str, Any]) -> ToolResult:
        # No await from here on: the write is a few KiB, synchronous, and so cannot be cancelled
        # half-way. A refusal (MemoryRefusal is a ToolError) becomes the error result the model reads.
        action = _text(args, "action").strip()
        if action in CANDIDATE_ACTIONS:
            if self.candidates is None:
                raise MemoryRefusal(f"action {go_quote(action)} is for a bot's candidates, and this chat keeps none")
            return self.candidates.run(action, args)
        kind, edit = decode(args, self.project)
        writer = self._writer(kind)
        edit, downgraded = self._backed(edit, writer)
        applied = writer.write(edit, self._today())
        result = f"{downgraded}\n\n{applied.result}" if downgraded else applied.result
        return ToolResult(result, display=unified_diff(kind.label, applied.old_body, applied.new_body))

    def _writer(self, kind: FileKind) -> MemoryFile:
        if kind is MEMORY_MD:
            return self.memory
        if kind.name not in self.files:
            raise MemoryRefusal(f"{kind.name} is not kept by this bot; save to MEMORY.md")
        return self.files[kind.name]

    def _backed(self, edit: Edit, writer: MemoryFile) -> tuple[Edit, str]:
        """`edit` as it may be written: a `[user]` line the person's own messages do not back is
        written `[inferred]`, with the sentence that says so ("" when nothing changed); a SOUL.md
        patch they do not back is refused."""
        if isinstance(edit, Patch):
            before = MemoryDoc.parse(read_memory(writer.path) or "").section_text(edit.section)
            missing = unbacked_change(before, edit.text, self._typed_by_person())
            if missing is not None:
                raise MemoryRefusal(
                    f"a {SOUL_MD.name} change must be one the user asked for in this conversation: the words it adds "
                    "(or, when it only deletes, the words it drops) must be in one of their recent messages, and "
                    f"{_words(missing)} "
                    f"{'is' if len(missing) == 1 else 'are'} in none of them. Nothing was written — ask the user, "
                    "or keep to their words")
            return edit, ""
        if isinstance(edit, Remove) or edit.source != "user":
            return edit, ""
        missing = unbacked(normalize(edit.text), self._typed_by_person())
        if missing is None:
            return edit, ""
        why = (f"{_words(missing)} {'is' if len(missing) == 1 else 'are'} in none of their recent messages" if missing
               else "it has no words of its own to compare with theirs")
        return dataclasses.replace(edit, source="inferred"), (
            f"saved as [inferred], not [user]: a [user] line must be in the words the user typed in this "
            f"conversation, and {why}")


def file_kind(args: dict[str, Any]) -> FileKind:
    """The file a call names (MEMORY.md when it names none); `memory/USER.md` is read as USER.md."""
    name = _text(args, "file").strip().removeprefix("memory/") or MEMORY_MD.name
    if name not in WRITABLE:
        raise MemoryRefusal(f'file must be "MEMORY.md", "SOUL.md", "USER.md" or "BRIEF.md", got {go_quote(name)}; '
                            "global and inherited memory are read-only")
    return WRITABLE[name]


def decode(args: dict[str, Any], made_in: str | None = None) -> tuple[FileKind, Edit]:
    """The call's arguments as the file it changes and an edit made from project `made_in`, or the
    refusal the model reads. A non-string argument counts as missing."""
    kind = file_kind(args)
    action = _text(args, "action").strip()
    if not action:
        raise MemoryRefusal("missing required argument: action")
    if kind.by_section:
        if action != "patch":
            raise MemoryRefusal(f'{kind.name} changes a whole section at a time: action must be "patch", got '
                                f"{go_quote(action)}")
        return kind, Patch(parse_section(_text(args, "section"), kind), _text(args, "text"))
    if action == "add":
        return kind, Add(_text(args, "text"), _source(args), parse_section(_text(args, "section"), kind), made_in)
    if action == "replace":
        return kind, Replace(_text(args, "old"), _text(args, "text"), _source(args), made_in)
    if action == "remove":
        return kind, Remove(_text(args, "old"), made_in)
    if action == "patch":
        raise MemoryRefusal(f'action "patch" is for SOUL.md; {kind.name} takes "add", "replace" or "remove"')
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


def _words(words: list[str]) -> str:
    return ", ".join(go_quote(word) for word in words)
