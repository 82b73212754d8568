"""`/file [path]`: attach a file of the project to the next message.

    /file shots/login.png       attach it (a text file, or a PNG, JPEG, GIF or WebP image)
    /file                       pick one from the project's files, typing to filter; an attached
                                file is listed first, and picking it again takes it off

What is attached waits on the lane (`Lane.attachments`) and goes with the next message the
person sends, then is cleared; the message's record names it and the bundle keeps its bytes
(iota.attachments). Each provider sends it in its own format (iota.providers).

A path is judged as the code tools judge the model's: relative to the working directory (or
absolute, `~` expanded), with every symlink resolved, and refused unless the real file lies
inside the project. The project holds files the model and the commands it ran may have made,
so a `notes.md` that is a link to `~/.ssh/id_ed25519` is refused, not sent to the provider.
The file is opened through the code tools' jail (iota.tools.code.paths), component by
component without following a link, and only if it is a regular file: a FIFO is refused
without being opened, so a FIFO never hangs the chat. The picker lists the regular files the
code tools' walk sees (`.git` and what the root `.gitignore` ignores left out, links not
followed).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import trio

from actors.lane import Lane
from iota.attachments import MAX_IMAGE_BYTES, Attachment, AttachmentRefused, describe, make_attachment, megabytes
from iota.errors import ToolError
from iota.tools.code.paths import Jail, open_failure
from iota.tools.code.walk import Found, walk_files

FILE_HELP = "attach a file (text, or a PNG, JPEG, GIF or WebP image) to your next message: /file [path]"
# The picker lists at most this many files: a larger tree is narrowed by giving a path.
PICKER_FILES = 5000


@dataclass(frozen=True)
class ProjectFile:
    path: str   # relative to the project root, `/` separated
    size: int


async def attach_file(lane: Lane, argument: str) -> None:
    """`/file [path]`."""
    jail = Jail(lane.setup.project_root)
    if argument:
        where = os.path.join(lane.setup.cwd, os.path.expanduser(argument))
        await _attach(lane, jail, where, argument)
        return
    files = await trio.to_thread.run_sync(project_files, jail)
    pending = lane.attachments
    labels = [f"✓ {describe(a)} — attached; Enter takes it off" for a in pending]
    labels += [f"{file.path}  ({format_bytes(file.size)})" for file in files]
    if not labels:
        lane.notice("No files in the project to attach.")
        return
    search = [a.filename for a in pending] + [file.path for file in files]
    title = "Attach which file?" + (f" ({len(files)} shown: give /file a path for others)"
                                    if len(files) == PICKER_FILES else "")
    index = await lane.ask(title, tuple(labels), search=tuple(search))
    if index is None:
        return
    if index < len(pending):
        removed = pending.pop(index)
        lane.notice(f"{removed.filename} taken off; {_waiting(lane)}")
        return
    chosen = files[index - len(pending)]
    await _attach(lane, jail, os.path.join(jail.root, chosen.path), chosen.path)


async def _attach(lane: Lane, jail: Jail, where: str, named: str) -> None:
    try:
        attachment = await trio.to_thread.run_sync(read_attachment, jail, where, named)
    except (ToolError, AttachmentRefused) as refusal:
        lane.notice(f"Cannot attach: {refusal}", warning=True)
        return
    if any(existing.sha256 == attachment.sha256 for existing in lane.attachments):
        lane.notice(f"{attachment.filename} is attached already")
        return
    lane.attachments.append(attachment)
    lane.notice(f"Attached {describe(attachment)}, {format_bytes(len(attachment.data or b''))}; {_waiting(lane)}")


def _waiting(lane: Lane) -> str:
    count = len(lane.attachments)
    if not count:
        return "nothing is attached"
    return f"{count} file{'s' if count > 1 else ''} go{'es' if count == 1 else ''} with your next message"


def read_attachment(jail: Jail, where: str, named: str) -> Attachment:
    """The file at `where` (absolute), judged and opened through the jail, as an attachment named
    by its path in the project. Blocking I/O. ToolError or AttachmentRefused, in one line."""
    target = jail.locate(where)
    if target.shown == ".":
        raise ToolError(f"{named} is the project itself, not a file")
    try:
        data, seen = jail.read(target, MAX_IMAGE_BYTES + 1)
    except OSError as error:
        raise open_failure("read", named, error) from None
    if seen.st_size > MAX_IMAGE_BYTES:
        raise AttachmentRefused(f"{target.shown} is {megabytes(seen.st_size)}; an attached file can be at most "
                                f"{megabytes(MAX_IMAGE_BYTES)}")
    return make_attachment(target.shown.replace(os.sep, "/"), data)


def project_files(jail: Jail) -> list[ProjectFile]:
    """The project's regular files as the code tools' walk sees them, in path order, at most
    PICKER_FILES. Blocking I/O."""
    files = []
    for found in regular_files(jail):
        try:
            size = found.stat().st_size
        except OSError:
            continue
        files.append(ProjectFile(found.rel, size))
        if len(files) == PICKER_FILES:
            break
    return files


def regular_files(jail: Jail) -> Iterator[Found]:
    """The project's files as the picker and the `@` list show them: the code tools' walk
    (`.git` and what the root `.gitignore` ignores left out), links left out. Blocking I/O."""
    return (found for found in walk_files(jail, jail.locate(".")) if not found.is_link)


def format_bytes(size: int) -> str:
    """`812 B`, `12.3 KB`, `4.1 MB`."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return megabytes(size)

