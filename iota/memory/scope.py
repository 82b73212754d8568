"""Which memory files apply where: the front matter that scopes a file, and the matching.

A file in a bot's memory directory, or in the global one, may open with a front matter that says
where it goes out:

    ---
    include-project: [iota, 'web-*']     only in these projects
    exclude-project: ~/work/secret-*     never in these; exclude wins
    include-bot: [coder]                 only for these bots (global memory, and files others inherit)
    exclude-bot: reviewer
    include-session: ['fix-*']           only in these sessions (an agent's memory: many sessions)
    exclude-session: 20261201-*          never in these; exclude wins
    ---

Each key takes one glob pattern or a list of them. A project pattern is matched against the
project's directory name and against its absolute path, and applies when either matches; a bot
pattern against the bot's name; a session pattern against the session's id and against its
title, and applies when either matches (a bot's one conversation is a session too; a chat that
is not saved has neither: no session pattern matches it, so a file with `include-session` is
not sent there). Matching is Python's `fnmatch.fnmatchcase`: `*` is any run of
characters (`/` included, so `/work/*` covers every depth below /work), `?` one character,
`[abc]`/`[!abc]` one of a set; case counts, on every system. A pattern starting with `~` has it
expanded to the home directory first. Without an include key a file applies everywhere; a key
with an empty list (`include-project: []`) includes nothing.

The front matter is YAML, read with PyYAML's safe loader. A file is the person's own, so a front
matter that cannot be read — not YAML, not a mapping, a scope key with something other than text,
or a `---` never closed — is reported and the file is **not sent**: a scope that cannot be read
could be one meant to keep the file out of this project. Keys iota does not know are left alone,
except one that looks like a misspelt scope key (`include_project`, `exclude-sessions`), which is
reported the same way, for the same reason.
"""

from __future__ import annotations

import datetime
import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from iota.memory.document import MemoryDoc
from iota.memory.lines import go_quote, join_lines, split_lines

INCLUDE_PROJECT, EXCLUDE_PROJECT = "include-project", "exclude-project"
INCLUDE_BOT, EXCLUDE_BOT = "include-bot", "exclude-bot"
INCLUDE_SESSION, EXCLUDE_SESSION = "include-session", "exclude-session"
SCOPE_KEYS = (INCLUDE_PROJECT, EXCLUDE_PROJECT, INCLUDE_BOT, EXCLUDE_BOT, INCLUDE_SESSION, EXCLUDE_SESSION)


class FrontMatterError(ValueError):
    """A front matter iota cannot read; the message says what is wrong, without the file's name."""


@dataclass(frozen=True)
class Scope:
    """Where a file applies: the patterns of each key (None: the key is absent)."""

    include_project: tuple[str, ...] | None = None
    exclude_project: tuple[str, ...] = ()
    include_bot: tuple[str, ...] | None = None
    exclude_bot: tuple[str, ...] = ()
    include_session: tuple[str, ...] | None = None
    exclude_session: tuple[str, ...] = ()

    def skips(self, project: Path, bot: str, session: SessionName | None = None) -> str | None:
        """Why the file does not go out for bot (or agent) `bot` in `project` (its root) and
        `session`, or None when it does. Exclusion is checked first: it wins over any include."""
        where = f"{project.name} ({project})"
        for pattern in self.exclude_project:
            if project_matches(pattern, project):
                return f"{EXCLUDE_PROJECT} {go_quote(pattern)} matches {where}"
        for pattern in self.exclude_bot:
            if fnmatch.fnmatchcase(bot, pattern):
                return f"{EXCLUDE_BOT} {go_quote(pattern)} matches {bot}"
        for pattern in self.exclude_session:
            if session is not None and session.matches(pattern):
                return f"{EXCLUDE_SESSION} {go_quote(pattern)} matches {session}"
        if self.include_project is not None and not any(project_matches(p, project) for p in self.include_project):
            return f"{INCLUDE_PROJECT} {_listed(self.include_project)} does not match {where}"
        if self.include_bot is not None and not any(fnmatch.fnmatchcase(bot, p) for p in self.include_bot):
            return f"{INCLUDE_BOT} {_listed(self.include_bot)} does not match {bot}"
        if self.include_session is not None and not (session is not None
                                                     and any(session.matches(p) for p in self.include_session)):
            return f"{INCLUDE_SESSION} {_listed(self.include_session)} does not match {session or 'this chat'}"
        return None

    def describe(self) -> str:
        """The scope as the front matter says it (`include-project: iota, web-*`), "" for none."""
        keys = ((INCLUDE_PROJECT, self.include_project), (EXCLUDE_PROJECT, self.exclude_project),
                (INCLUDE_BOT, self.include_bot), (EXCLUDE_BOT, self.exclude_bot),
                (INCLUDE_SESSION, self.include_session), (EXCLUDE_SESSION, self.exclude_session))
        # An absent include is None and an absent exclude is empty: neither is said.
        return "; ".join(f"{key}: {', '.join(patterns) or '[]'}" for key, patterns in keys
                         if patterns or (patterns is not None and key.startswith("include")))


@dataclass(frozen=True)
class SessionName:
    """The session a chat writes, as session patterns see it: its id and its title ("" for none)."""

    id: str
    title: str = ""

    def matches(self, pattern: str) -> bool:
        return fnmatch.fnmatchcase(self.id, pattern) or bool(self.title) and fnmatch.fnmatchcase(self.title, pattern)

    def __str__(self) -> str:
        return f"session {self.id}" + (f" ({go_quote(self.title)})" if self.title else "")


def session_name(session) -> SessionName | None:
    """The session a chat writes (an iota.sessions.bundle.Session) as session patterns see it;
    None for a chat that is not saved."""
    if session is None:
        return None
    title = session.meta.get("title")
    return SessionName(session.id, title if isinstance(title, str) else "")


def project_matches(pattern: str, project: Path) -> bool:
    """Whether `pattern` matches the project's directory name or its absolute path."""
    if pattern.startswith("~"):
        pattern = os.path.expanduser(pattern)
    return fnmatch.fnmatchcase(project.name, pattern) or fnmatch.fnmatchcase(str(project), pattern)


def _listed(patterns: tuple[str, ...]) -> str:
    return f"({', '.join(patterns)})" if patterns else "(nothing)"


def read_scope(text: str) -> tuple[Scope, MemoryDoc]:
    """The scope a memory file's text declares, and the file as a document (front matter and
    body). Raises FrontMatterError for a front matter that cannot be trusted to say where the
    file goes."""
    doc = MemoryDoc.parse(text)
    lines = split_lines(text)
    if doc.front is None and lines and lines[0].rstrip() == "---":
        raise FrontMatterError("its front matter opens with --- and is never closed")
    if doc.front is None:
        return Scope(), doc
    try:
        front = yaml.safe_load(join_lines(doc.front))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        raise FrontMatterError(f"its front matter is not valid YAML{where}") from None
    if front is None:
        return Scope(), doc
    if not isinstance(front, dict):
        raise FrontMatterError("its front matter is not a mapping of keys")
    for key in front:
        if _misspelt_scope(str(key)):
            raise FrontMatterError(f"its front matter has {key}:, which is not a scope key (want "
                                   f"{', '.join(SCOPE_KEYS)})")
    return Scope(*(_patterns(front, key) for key in SCOPE_KEYS)), doc


def _misspelt_scope(key: str) -> bool:
    folded = key.lower().replace("_", "-")
    return folded.startswith(("include", "exclude")) and key not in SCOPE_KEYS


def _patterns(front: dict, key: str) -> tuple[str, ...] | None:
    """A scope key's patterns: one text or a list of texts (YAML numbers and dates read as the text
    a person wrote). None when the key is absent or empty (`include-project:`)."""
    value = front.get(key)
    if value is None:
        return None if key.startswith("include") else ()
    values = value if isinstance(value, list) else [value]
    if not all(isinstance(item, (str, int, float, datetime.date)) and not isinstance(item, bool) for item in values):
        raise FrontMatterError(f"its {key}: must be a glob pattern or a list of them, got {value!r}")
    return tuple(str(item) for item in values)
