"""The memory files the model writes, and what differs between them.

    MEMORY.md           ~/.iota/bots/<name>/MEMORY.md     lines under User / Project: <name> / Open threads
    memory/USER.md      about the person                  lines under Profile / Preferences
    memory/BRIEF.md     the mission                       lines under Goals / Constraints / Decisions
    memory/SOUL.md      persona and working style         whole `##` sections, replaced one at a time

The first three share every rule of a memory line (iota.memory.document): one line an entry,
tagged and dated by the tool, the person's untagged lines hands off, no duplicates, no secrets, the
8 KiB cap. SOUL.md is prose a person writes, so the model changes it a section at a time (a patch
that replaces one section's body, never the file). Every other `.md` file in a bot's memory
directory is the person's alone: it goes out with the requests but the tool never writes it.
"""

from __future__ import annotations

from dataclasses import dataclass

MEMORY_DIR = "memory"      # a bot's memory directory, beside its MEMORY.md
PROJECT = "Project:"       # in `sections`: every `Project: <name>` section


@dataclass(frozen=True)
class FileKind:
    name: str                  # the file's name
    label: str                 # how results, notices and warnings name it: relative to the bot's directory
    sections: tuple[str, ...]  # where `add` files lines, in the order missing ones are created
    title: str                 # the first body line of a new file; `{bot}` is the bot's name
    by_section: bool = False   # changed a whole section at a time (SOUL.md)

    def new_title(self, bot: str) -> str:
        return self.title.format(bot=bot)


MEMORY_MD = FileKind("MEMORY.md", "MEMORY.md", ("User", PROJECT, "Open threads"), "# {bot} memory")
SOUL_MD = FileKind("SOUL.md", f"{MEMORY_DIR}/SOUL.md", (), "# {bot} persona", by_section=True)
USER_MD = FileKind("USER.md", f"{MEMORY_DIR}/USER.md", ("Profile", "Preferences"), "# About the user")
BRIEF_MD = FileKind("BRIEF.md", f"{MEMORY_DIR}/BRIEF.md", ("Goals", "Constraints", "Decisions"), "# {bot} brief")

# The memory directory's files the model may write, in the order the prompt carries them.
DIRECTORY_KINDS = (SOUL_MD, USER_MD, BRIEF_MD)
WRITABLE = {kind.name: kind for kind in (MEMORY_MD, *DIRECTORY_KINDS)}
