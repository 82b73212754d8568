"""Every bot at a glance, one in detail, and removing one: what `iota bots`, `iota bots show
<name>` and `iota bots rm <name>` read and do.

A bot is a `mode: bot` entry of the config, and a directory under ~/.iota/bots once it has run.
Either is enough to be listed: a directory whose entry left the config is still someone's memory.

Whether a bot is running is asked of its lock, never guessed from a pid: the lock is taken
shared, without waiting, and let go at once. A running bot holds it exclusively, so the probe
fails and the pid in the file is the holder's; a bot that died left no lock behind (the kernel
drops it). For that instant a bot starting at the same moment would be refused as if it ran — a
start says so and can simply be repeated — while the listing can never call a dead bot running.

Removing takes the bot's lock for as long as it works, so a bot cannot start in the middle: it
refuses while the bot runs, asks, then deletes the session (only when asked to) and the
directory. The config entry is the person's file, and is left as it is.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from iota.config.settings import Config
from iota.errors import BotError, SessionError
from iota.memory.kinds import MEMORY_DIR
from iota.memory.layers import markdown_files
from iota.memory.document import MEMORY_FILE
from iota.paths import bots_dir, sessions_dir
from iota.sessions import locking
from iota.sessions.bundle import LOG_NAME, META_NAME, delete_session, read_meta
from iota.bots.bot import LOCK_NAME, bot_dir, session_of


@dataclass(frozen=True)
class BotSummary:
    """One row of `iota bots`."""

    name: str
    directory: Path
    configured: bool       # a `mode: bot` entry of the config names it
    model: str             # the entry's model, else what its session last ran, else ""
    session: str | None    # the id its pointer names
    last_activity: str     # the session's `updated_at` ("" when unknown)
    messages: int
    log_size: int          # bytes of the session's log
    memory_size: int       # bytes of MEMORY.md and memory/*.md
    running: bool
    pid: int | None        # the running process, when it wrote its pid
    problem: str | None = None   # why part of it could not be read


def bot_names(config: Config) -> list[str]:
    """The configured bots, then the directories under ~/.iota/bots no entry names, by name."""
    configured = [name for name, agent in config.agents.items() if agent.mode == "bot"]
    try:
        on_disk = sorted(entry.name for entry in bots_dir().iterdir() if entry.is_dir())
    except OSError:
        on_disk = []
    return configured + [name for name in on_disk if name not in configured]


def summarize(config: Config, name: str) -> BotSummary:
    agent = config.agents.get(name)
    configured = agent is not None and agent.mode == "bot"
    directory = bot_dir(name)
    problem, session_id, meta, log_size = None, None, {}, 0
    try:
        session_id = session_of(name)
    except BotError as error:
        problem = str(error)
    if session_id is not None:
        bundle = sessions_dir() / session_id
        try:
            meta = read_meta(bundle)
        except SessionError as error:
            problem = f"session {session_id}: {error}"
        log_size = _size(bundle / LOG_NAME)
    model = (agent.model if configured and agent.model else
             f"{meta['provider']}:{meta['model']}" if isinstance(meta.get("provider"), str) and
             isinstance(meta.get("model"), str) else "")
    count = meta.get("message_count")
    running, pid = lock_holder(directory / LOCK_NAME)
    return BotSummary(name, directory, configured, model, session_id,
                      meta["updated_at"] if isinstance(meta.get("updated_at"), str) else "",
                      count if type(count) is int else 0, log_size, memory_size(directory), running, pid, problem)


def memory_size(directory: Path) -> int:
    """The bytes of a bot's own memory: MEMORY.md and every file of its memory directory."""
    return _size(directory / MEMORY_FILE) + sum(_size(path) for path in markdown_files(directory / MEMORY_DIR))


def lock_holder(lock: Path) -> tuple[bool, int | None]:
    """Whether a process holds the lock at `lock`, and its pid when it wrote one. The probe takes
    the lock shared and lets it go at once (see the module's notes)."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False, None   # no lock file: the bot never ran
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                return False, None   # a filesystem that cannot lock cannot hold a bot either
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            return True, int(text) if text.isdigit() else None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False, None
    finally:
        os.close(fd)


def bot_files(directory: Path) -> list[str]:
    """The files of a bot's directory, relative to it (`memory/SOUL.md`), by name; SQLite's
    companions of the journal (`journal.sqlite-wal`, `-shm`) are its own business."""
    try:
        return sorted(str(path.relative_to(directory)) for path in directory.rglob("*")
                      if not path.is_dir() and not path.name.endswith(("-wal", "-shm")))
    except OSError:
        return []


def remove_bot(name: str, *, sessions: bool, confirm: Callable[[str], bool]) -> str:
    """Delete bot `name`'s directory — and its session too with `sessions` — once `confirm(question)`
    says yes; what was done, in one line. Refused while the bot runs."""
    directory = bot_dir(name)
    if not directory.is_dir():
        raise BotError(f"bot {name} has no directory ({directory} does not exist); nothing to remove")

    def refused(pid: int | None) -> str:
        holder = f" (pid {pid})" if pid is not None else ""
        return f"bot {name} is open in another iota process{holder}; close it first"

    held = locking.acquire(directory / LOCK_NAME, refused)
    try:
        bundle = _session_bundle(name, needed=sessions)
        deleted = sessions and bundle is not None
        question = f"Remove bot {name}? This deletes {directory} (its memory, pointer and lock)"
        if deleted:
            question += f" and its session {bundle.name}"
        elif bundle is not None:
            question += f"; its session {bundle.name} is kept (--sessions deletes it too)"
        if not confirm(question + "."):
            return "Nothing was removed."
        if deleted:
            delete_session(bundle)
        try:
            shutil.rmtree(directory)
        except OSError as error:
            raise BotError(f"cannot remove {directory}: {error.strerror or error}") from None
    finally:
        held.release()
    gone = f"Removed bot {name} ({directory})"
    if bundle is not None:
        gone += f" and its session {bundle.name}" if deleted else f"; its session {bundle.name} is kept"
    return gone + f". A config entry named {name} starts a new bot at its next run."


def _session_bundle(name: str, *, needed: bool) -> Path | None:
    """The bundle of bot `name`'s session, when it has one on disk. A pointer that cannot be read
    matters only when the session is to be deleted too."""
    try:
        session_id = session_of(name)
    except BotError:
        if needed:
            raise
        return None
    bundle = sessions_dir() / session_id if session_id is not None else None
    return bundle if bundle is not None and (bundle / META_NAME).is_file() else None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
