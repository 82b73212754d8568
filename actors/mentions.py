"""`@` file mentions: the files the composer's `@` list offers, and the files a sent message names.

    face ──ListFiles──► input actor ──► FileListing.want() ──(a thread: /file's walk)──► ProjectFiles ──► face

The face asks when `@` is first typed, and again after each message it sends (so a file made
since shows up); the listing goes whole, once per ask, and the face filters it in memory at each
key (ui.widgets.mentions), so a key costs no walk of the disk. Asks that arrive while a walk runs
make one more walk, not one each. Paths with a space in them are left out of the list: a mention
ends at the first space.

Before a person's message is sent (a lane `before_send` hook), each `@path` in it that names a
regular file of the project goes with it as an attachment, read exactly as `/file` reads one
(`read_attachment`: the path judged after resolving every link and refused outside the project,
opened through the code tools' jail without following a link, a FIFO never opened, the same
caps), and the transcript says `@path (N lines)` (an image: `@shot.png (image/png)`). The path is
the project root's, as the list gives it, else the working directory's. A `@word` that names
nothing — `@alice`, a path that does not exist, a directory — is left as typed, silently; one that
names something that cannot be attached (a link out of the project, a FIFO, a binary, a file over
the cap) is left as typed too, with a warning saying why.
"""

from __future__ import annotations

import math
import os
import re
import stat
from dataclasses import dataclass

import trio

from actors.commands.file import read_attachment, regular_files
from actors.events import ProjectFiles
from actors.lane import Lane
from iota.attachments import Attachment, AttachmentRefused
from iota.errors import ToolError
from iota.messages import Message
from iota.tools.code.paths import Jail

# The most files the `@` list is given; a tree larger than this is one where a path is typed.
MENTION_FILES = 200_000
# `@` at the start or after a space or an opening bracket or quote; an e-mail address is no mention.
MENTION = re.compile(r"(?<![^\s(\[{\"'])@(\S+)")
# What may follow a mention in a sentence without being part of its path.
TRAILING = ".,;:!?)]}\"'"


class FileListing:
    """The project's files for the `@` list, walked in a thread when the face asks."""

    def __init__(self) -> None:
        self._send, self._receive = trio.open_memory_channel[None](math.inf)

    def want(self) -> None:
        self._send.send_nowait(None)

    async def run(self, lane: Lane, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        lane.listing = self
        jail = Jail(lane.setup.project_root)
        task_status.started()
        async for _ in self._receive:
            while True:  # the asks that came meanwhile are answered by this one walk
                try:
                    self._receive.receive_nowait()
                except trio.WouldBlock:
                    break
            paths = await trio.to_thread.run_sync(listed_paths, jail, abandon_on_cancel=True)
            lane.emit(ProjectFiles(tuple(paths)))


def listed_paths(jail: Jail, limit: int = MENTION_FILES) -> list[str]:
    """The paths the `@` list offers: `/file`'s listing, less the paths a mention cannot name
    (with a space in them). Blocking I/O."""
    paths = []
    for found in regular_files(jail):
        if not any(character.isspace() for character in found.rel):
            paths.append(found.rel)
            if len(paths) >= limit:
                break
    return paths


@dataclass(frozen=True)
class Mentioned:
    """What one `@path` came to: an attachment, or why the file it names cannot be one."""

    named: str
    attachment: Attachment | None = None
    refusal: str = ""


def mentioned_paths(text: str) -> list[str]:
    """Every `@path` in `text`, without the `@`, in order, each once."""
    seen: dict[str, None] = {}
    for match in MENTION.finditer(text):
        seen.setdefault(match.group(1), None)
    return list(seen)


def read_mentions(jail: Jail, cwd: str, text: str) -> list[Mentioned]:
    """The files `text`'s mentions name, read through the jail; mentions that name nothing are
    left out. Blocking I/O."""
    found = []
    seen = set()
    for token in mentioned_paths(text):
        named = _names_a_file(jail, cwd, token)
        if named is None or named[1] in seen:
            continue
        where, shown = named
        seen.add(shown)
        try:
            found.append(Mentioned(shown, attachment=read_attachment(jail, where, shown)))
        except (ToolError, AttachmentRefused) as refusal:
            found.append(Mentioned(shown, refusal=str(refusal)))
    return found


def _names_a_file(jail: Jail, cwd: str, token: str) -> tuple[str, str] | None:
    """(where, as typed) for a token that names something other than a directory — the token
    itself, or without what ends a sentence after it — from the root or the working directory;
    None when it names nothing. Only looked at (lstat), never opened here: a FIFO stays unopened."""
    candidates = dict.fromkeys([token, token.rstrip(TRAILING)])
    for candidate in candidates:
        for base in (jail.root, cwd):
            where = os.path.normpath(os.path.join(base, candidate))
            try:
                mode = os.lstat(where).st_mode
            except (OSError, ValueError):
                continue
            return None if stat.S_ISDIR(mode) else (where, candidate)
    return None


def mention_line(mentioned: Mentioned) -> str:
    """`@src/app.py (120 lines)`, `@shot.png (image/png)`, or why it was not attached."""
    attachment = mentioned.attachment
    if attachment is None:
        return f"@{mentioned.named} not attached: {mentioned.refusal}"
    if attachment.is_image:
        return f"@{mentioned.named} ({attachment.mime})"
    data = attachment.data or b""
    lines = data.count(b"\n") + (not data.endswith(b"\n"))
    return f"@{mentioned.named} ({lines} line{'s' if lines != 1 else ''})"


async def attach_mentions(lane: Lane, user: Message) -> None:
    """A `before_send` hook: the files the person's message mentions go with it."""
    if user.hidden or "@" not in user.content:
        return
    jail = Jail(lane.setup.project_root)
    found = await trio.to_thread.run_sync(read_mentions, jail, str(lane.setup.cwd), user.content)
    for mentioned in found:
        attachment = mentioned.attachment
        if attachment is not None and any(a.sha256 == attachment.sha256 for a in user.attachments):
            continue  # attached already (by /file, or mentioned twice under two names)
        if attachment is not None:
            user.attachments.append(attachment)
        lane.notice(mention_line(mentioned), warning=attachment is None)
