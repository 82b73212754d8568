"""One bot's MEMORY.md on disk: reading it, the tool's writes, and telling those writes apart from
a person's edits.

The chat freezes the memory block it sends between a few moments (startup, after a compaction, the
day change) so the prompt, and the provider's cache of it, holds still. The one other reason to
rebuild it is an edit from outside this process: a person changed the file, and the next request
should carry their version. The `remember` tool's own writes must not count as such an edit: the
model already sees them in its tool calls and their results, and rebuilding the block after every
write would throw the prompt cache away each time. So the tool and the chat share one `MemoryFile`,
which remembers the file's stamp (mtime, size, inode) as this process last read or wrote it.

There is one subtle case. A person edits the file, and before the chat's next check the tool writes
over it (folding the edit in, since it reads the file fresh). The stamp is then the tool's own, yet
the block still lacks the person's edit; `MemoryFile` marks that write as carrying an outside edit,
so the next check reloads all the same.

Writes are synchronous and short (a few KiB), so cancellation cannot tear one: trio cancels only
at an await, and there is none between the backup and the rename. Each is atomic (a temp file,
fsync, rename): a crash leaves the old file or the new one. A MEMORY.md that is a symbolic link
(a person keeps it in a git repository) is written through the link, never replaced by a file.

A file whose first line opens a front matter (`---`) that no later line closes is the person's
half-finished edit. Read as all body, it would be written back under a second front matter with
the first one buried in the body; so it is reported instead, and the tool writes nothing until
the person closes it.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from pathlib import Path

from iota import paths
from iota.memory.document import (
    MEMORY_FILE,
    Applied,
    Edit,
    MemoryDoc,
    MemoryRefusal,
    apply,
    byte_length,
    go_quote,
    join_lines,
    split_lines,
)
from iota.memory.block import cut_to_cap, over_cap_warning, render_block
from iota.memory.kinds import MEMORY_MD, FileKind
from iota.sessions.bundle import write_atomically

# What identifies one version of the file: (mtime in ns, size, inode). None: there is no file.
FileStamp = tuple[int, int, int] | None


def file_stamp(path: Path) -> FileStamp:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size, status.st_ino


def read_memory(path: Path) -> str | None:
    """The file's text, None when there is no file; a file that cannot be read or is not UTF-8 is
    a MemoryRefusal that names it."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise MemoryRefusal(f"cannot read {path}: {error.strerror or error}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise MemoryRefusal(f"{path} is not UTF-8 text") from None


def read_memory_within(path: Path, directory: Path) -> str | None:
    """Like read_memory, for a file that must lie in `directory` as opened: a link out of it (to
    `~/.ssh/id_rsa`, another agent's memory) is a MemoryRefusal and nothing of it is read. One
    open, judged by what it reached, so a link swapped in after a check counts too; a FIFO is
    refused rather than waited on."""
    try:
        data, _, opened = paths.read_regular_file(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise MemoryRefusal(f"cannot read {path}: {error.strerror or error}") from None
    if not paths.is_under(opened, os.path.realpath(directory)):
        raise MemoryRefusal(f"{path} leads out of {directory} (to {opened or 'a file that moved'})")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise MemoryRefusal(f"{path} is not UTF-8 text") from None


def unclosed_front_matter(text: str) -> bool:
    """Whether `text` opens a front matter on its first line and never closes it."""
    lines = split_lines(text)
    return bool(lines) and lines[0].rstrip() == "---" and MemoryDoc.parse(text).front is None


def _unclosed_warning(path: Path) -> str:
    return (f"{path} opens a front matter with --- on its first line and never closes it; add the closing --- "
            "line (until then the model is shown the whole file and cannot write to it)")


@dataclass(frozen=True)
class MemorySnapshot:
    """The block a bot's requests carry until the next refresh, and what the transcript should say
    about it (the file is over the cap, unreadable, or another bot's)."""

    block: str
    warnings: list[str]
    stamp: FileStamp    # the file as it was read


def memory_block(bot: str, project: str | None, path: Path) -> MemorySnapshot:
    """The `<memory>` block of bot `bot` for a send in `project`, from the file at `path`. A missing
    file is an empty memory; one that cannot be read, or that names another bot, is no memory at
    all, with a warning. The stamp is taken before the read, so an edit landing during it shows up
    as a change at the next check rather than being missed."""
    stamp = file_stamp(path)
    try:
        text = read_memory(path) or ""
    except MemoryRefusal as refusal:
        return MemorySnapshot(render_block(bot, project, []), [f"{refusal}; the model is shown no memory"], stamp)
    doc = MemoryDoc.parse(text)
    unclosed = [_unclosed_warning(path)] if unclosed_front_matter(text) else []
    owner = doc.owner()
    if owner is not None and owner != bot:
        warning = (f"{path} says it belongs to bot {go_quote(owner)} (frontmatter bot:), not {go_quote(bot)}; "
                   "the model is shown no memory until you fix the file")
        return MemorySnapshot(render_block(bot, project, []), [warning], stamp)
    kept, over = cut_to_cap(doc.body)
    warnings = unclosed + ([over_cap_warning(over)] if over else [])
    return MemorySnapshot(render_block(bot, project, kept, over), warnings, stamp)


def ensure_memory(bot_dir: Path, bot: str, today: datetime.date | None = None) -> Path:
    """MEMORY.md in `bot_dir`, created with its front matter and `# <bot> memory` if it is missing.
    An existing file is left exactly as it is, whoever it says it belongs to. A link to a file
    that does not exist yet creates that file."""
    path = bot_dir / MEMORY_FILE
    if not path.exists():
        bot_dir.mkdir(parents=True, exist_ok=True)
        day = (today or datetime.date.today()).isoformat()
        write_atomically(path, MemoryDoc.new(bot).render(bot, day).encode())
    return path


@dataclass(frozen=True)
class CurrentMemory:
    """MEMORY.md as it is on disk right now, for the memory flush and the summary pass."""

    body: str    # the front matter dropped, cut to the cap by whole lines, blank edges trimmed
    size: int    # the whole body's size as the caps measure it (what the soft warning is about)


class MemoryFile:
    """Bot `bot`'s MEMORY.md in `directory` (or another file the model writes, of `kind`: USER.md
    in the memory directory), shared by the `remember` tool and the chat."""

    def __init__(self, bot: str, directory: Path, kind: FileKind = MEMORY_MD):
        self.bot = bot
        self.kind = kind
        self.directory = Path(directory)
        self.path = self.directory / kind.name
        self.prev_path = self.directory / f"{kind.name}.prev"
        self._seen: FileStamp = None
        self._folded_outside_edit = False
        self._notices: list[str] = []

    # -- the chat's side -------------------------------------------------------------------------

    def snapshot(self, project: str | None) -> MemorySnapshot:
        """The prompt block as the file reads now, for a send in `project` (the project directory's
        name; None without a project). Call it at startup, after a compaction, at the day change and
        when `changed_outside()` says so. What it read becomes what this process has seen."""
        snapshot = memory_block(self.bot, project, self.path)
        self.seen(snapshot.stamp)
        return snapshot

    def seen(self, stamp: FileStamp) -> None:
        """The prompt now carries the file as it was at `stamp` (read by the caller, as the memory
        layers read the files of the memory directory): edits before it are no longer news."""
        self._seen, self._folded_outside_edit = stamp, False

    def changed_outside(self) -> bool:
        """Whether the file changed since this process last read or wrote it: a person's edit (or a
        new or deleted file). The tool's own writes never count. Checked before each send; when
        true, take a new `snapshot` and show `MEMORY.md reloaded`."""
        return self._folded_outside_edit or file_stamp(self.path) != self._seen

    @property
    def last_seen(self) -> FileStamp:
        """The file's stamp as this process last read or wrote it."""
        return self._seen

    def current(self) -> CurrentMemory:
        """The file read fresh (the flush's own writes are on disk, not yet in the block). Reading
        here does not count as seeing: an outside edit is still picked up before the next send. A
        file that cannot be read, or that belongs to another bot, reads as empty."""
        try:
            text = read_memory(self.path) or ""
            doc = MemoryDoc.parse(text)
            doc.check_owner(self.bot)
        except MemoryRefusal:
            return CurrentMemory("", 0)
        kept, _ = cut_to_cap(doc.body)
        return CurrentMemory(join_lines(kept).strip(), byte_length(doc.body_text()))

    def take_notices(self) -> list[str]:
        """The `memory: MEMORY.md ## User +1 line: …` lines of the writes since the last call, oldest
        first. The chat shows each in the transcript and records it in the conversation (a notice
        record) once the turn is over, so the model sees what it changed after a compaction too."""
        notices, self._notices = self._notices, []
        return notices

    # -- the tool's side -------------------------------------------------------------------------

    def write(self, edit: Edit, today: datetime.date) -> Applied:
        """Applies `edit` to the file on disk, or raises MemoryRefusal and leaves it as it was. The
        old file is copied to MEMORY.md.prev first; a missing file is created by the first write
        (with nothing to back up). On success the notice is queued for `take_notices`."""
        if file_stamp(self.path) != self._seen:
            self._folded_outside_edit = True
        current = read_memory(self.path)
        if current is not None and unclosed_front_matter(current):
            raise MemoryRefusal(f"{self.path} opens a front matter with --- on its first line and never closes it; "
                                "nothing was written — ask the user to add the closing --- line")
        applied = apply(current, self.bot, edit, today.isoformat(), self.kind)
        if current is not None:
            try:
                write_atomically(self.prev_path, current.encode())
            except OSError as error:
                raise MemoryRefusal(f"cannot back up {self.path}: {error.strerror or error}") from None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            write_atomically(self.path, applied.file.encode())
        except OSError as error:
            raise MemoryRefusal(f"cannot write {self.path}: {error.strerror or error}") from None
        self._seen = file_stamp(self.path)
        self._notices.append(applied.notice)
        return applied
