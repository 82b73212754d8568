"""Bots: the requirement checks, the bot's directory, its pointer, and how a start comes back.

A bot is an agent with `mode: bot`, named by its entry. Everything it owns lives in one directory:

    ~/.iota/bots/<name>/
        bot.json         the pointer: {"session":"<id>"}, written atomically once the bundle exists
        MEMORY.md        the memory (see iota.memory.file), and MEMORY.md.prev, the one before
        memory/          the memory's other files: SOUL.md, USER.md, BRIEF.md, … (see iota.memory.layers)
        lock             held by the one process running the bot; holds its pid

Its conversation is an ordinary flat bundle, `~/.iota/sessions/<id>/`, so it shows up in
`iota list sessions` like any other.

The start sequence is ordered so that every failure leaves something a person can reason about:

1. `check_bot` decides whether the entry can be a bot at all. It touches nothing, so a refused
   bot leaves nothing behind, not even `~/.iota`.
2. `open_bot` takes the bot's lock before it reads or writes anything else in the directory.
   The lock, not the pointer, is what keeps two processes from writing one conversation, and it
   is held for the whole process. A killed holder never blocks the next start (the kernel drops
   its flock; see iota.sessions.locking).
3. The pointer is a cache, not the truth: every bot session's meta.json names its bot
   (`agent`), so the pointer can always be had again. A pointer that is missing, damaged, or
   names a bundle that is gone is rebuilt from the bot's newest session, with a one-line
   notice on the card; only when the bot has no session at all does a new one start, and the
   card says that too. Starting a fresh conversation silently would abandon the old one, which
   is the one thing a bot must never do. A pointer that exists but cannot be read (permissions)
   is still an error: writing over it would hide why.
4. With no session, the bundle is written first and the pointer published after it. A crash in
   between leaves an orphan empty bundle, which the next start finds and resumes; the other
   order could leave a pointer to nothing.

Other modes must not write a bot's session (its pointer would then name a conversation someone
else changed under it), so `iota resume` and the `/session` picker ask `owning_bot` and
`bot_session_ids` first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from iota.sessions import locking
from iota.config import inheritance
from iota.config.settings import Config, ResolvedModel
from iota.config.entries import AgentConfig
from iota.text import format_size
from iota.errors import BotError, SessionError
from iota.memory.document import go_quote
from iota.memory.file import ensure_memory
from iota.memory.layers import BotMemory
from iota.memory.scope import SessionName
from iota.messages import SYSTEM, Message
from iota.paths import bots_dir, is_directory_name, sessions_dir
from iota.sessions.bundle import Session, parse_stamp, write_atomically
from iota.sessions.listing import is_bundle, list_sessions
from iota.sessions.log import json_bytes

POINTER_NAME = "bot.json"
LOCK_NAME = "lock"

# Below this the memory and the room a bot keeps free for compaction would fill the window
# within a few turns.
MIN_CONTEXT_WINDOW = 32_000
# Away this long or more, the bot is told how long it has been.
AWAY_NOTICE_SECONDS = 3600

# A session id in a pointer becomes a path under the sessions dir: nothing but letters and
# digits may reach it, or a hand-edited pointer could name a directory outside it.
_SESSION_ID = re.compile(r"[0-9A-Za-z]+")
# Where the window came from, as the refusal says it: set in the config (the agent's or its
# model's entry), or iota's own default.
_WINDOW_SOURCES = {"agent": "context_window: in its config", "model": "context_window: in its config",
                   "default": "the default"}

# How a broken pointer is fixed, whichever check found it.
_STARTS_OVER = " (without it the bot resumes its newest session; memory is kept)"

NO_SAVE_FLAG_REFUSAL = "--no-save contradicts mode: bot"
SYSTEM_PROMPT_UPDATED = "system prompt updated from config"


# -- what a bot needs ------------------------------------------------------------------------------


def check_bot(agent: AgentConfig, model: ResolvedModel) -> None:
    """Raise BotError if `agent` (with its resolved `model`) cannot run as a bot. Touches no file."""
    name = go_quote(agent.name)
    if agent.no_save:
        raise BotError(f"agents.{agent.name}: no_save contradicts mode: bot")
    if model.context_window < MIN_CONTEXT_WINDOW:
        where = _WINDOW_SOURCES[model.window_source]
        raise BotError(f"bot {name} needs a context window of at least {format_size(MIN_CONTEXT_WINDOW)}, "
                       f"this one is {format_size(model.context_window)} ({where})")
    # The bot needs usage to know when to compact, and tools to write its memory.
    if not (model.reports_usage and model.supports_tools):
        raise BotError(f"bot {name} needs a chat model that reports token usage and supports tools")
    _check_name(agent.name)


def check_bot_run(name: str, *, headless: bool, no_save: bool) -> None:
    """Refuse the command-line flags a bot cannot honour: `-m` (a bot is interactive) and `--no-save`."""
    if headless:
        raise BotError(f"bot agents are interactive-only for now; run iota run {name}")
    if no_save:
        raise BotError(NO_SAVE_FLAG_REFUSAL)


def bot_dir(name: str) -> Path:
    """`~/.iota/bots/<name>`; a name that cannot be a directory there is refused."""
    _check_name(name)
    return bots_dir() / name


def _check_name(name: str) -> None:
    if not is_directory_name(name):
        raise BotError(f'bot name {go_quote(name)} must be letters, digits, ".", "_" or "-", at most 64 '
                       "characters, starting with a letter or digit")


# -- the start sequence ----------------------------------------------------------------------------


@dataclass
class BotStart:
    """A running bot's hold on its directory and conversation; keep it until the process ends.

    `notices` are the resume notices (how long it was away, then where it moved); the chat shows
    each and records it as a `notice` message before the first request. `created` says the session was made by this
    start (there is nothing to resume or echo).
    """

    name: str
    dir: Path
    lock: locking.HeldLock
    session: Session
    created: bool
    notices: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)   # for the card only: how the pointer was rebuilt

    def close(self) -> None:
        """Close the session, then let the next process have the bot. Safe to call twice."""
        try:
            self.session.close()
        finally:
            self.lock.release()

    def __enter__(self) -> BotStart:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def open_bot(name: str, *, model: ResolvedModel, project_root: Path, now: datetime | None = None) -> BotStart:
    """Start bot `name` in `project_root` with `model`: lock it, make sure of its memory, and create
    or resume its one session. Call `check_bot` first. `now` (time-zone aware) is the time the
    away notice measures against.

    The model's settings and the project root are written to the session's meta at every start:
    the config, not the last run, decides them.
    """
    directory = bot_dir(name)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BotError(f"cannot create {directory}: {exc.strerror}") from exc
    lock = lock_bot(name, directory)
    try:
        # A bot that has run before has its memory; only then is a start without a pointer news.
        ran_before = (directory / "MEMORY.md").exists()
        try:
            ensure_memory(directory, name)
        except OSError as exc:
            raise BotError(f"cannot create the memory in {directory}: {exc.strerror}") from exc
        pointer = directory / POINTER_NAME
        found = find_session(name)
        run = _run_fields(model, project_root)
        warnings = [found.notice] if found.notice and (ran_before or found.broken) else []
        if found.session_id is None:
            session = _create_session(name, pointer, run)
            return BotStart(name, directory, lock, session, created=True, warnings=warnings)
        # A bundle whose meta.json was lost still has its log, and opening it rebuilds the meta.
        session = Session.open(sessions_dir() / found.session_id)
        if found.notice:
            _rewrite_pointer(pointer, session.id, warnings)
        # The away notice measures from the last real write, so it is read before this start
        # stamps anything.
        notices = resume_notices(session.meta, project_root, now or datetime.now().astimezone())
        try:
            # `agent` too: a meta.json rebuilt from the log lost it, and it is how the bot finds
            # this session again should its pointer be lost.
            session.update_meta(**run, agent=name)
        except BaseException:
            session.close()
            raise
        return BotStart(name, directory, lock, session, created=False, notices=notices, warnings=warnings)
    except BaseException:
        lock.release()
        raise


def bot_memory(name: str, config: Config, project_root: Path, session: SessionName | None = None) -> BotMemory:
    """Bot `name`'s memory in all its layers, for a chat in `project_root`: its own files, those of
    every bot its `inherit:` reaches (their names checked as its own is: each becomes a directory
    under ~/.iota/bots), and global memory. `session` is its one conversation, for files scoped
    by session."""
    inherits = inheritance.inherited_bots(config.agents, name)
    for inherited in inherits:
        _check_name(inherited)
    return BotMemory(name, bot_dir(name), project_root=project_root, inherits=inherits, session=session)


def lock_bot(name: str, directory: Path) -> locking.HeldLock:
    """Take bot `name`'s lock (held while a process runs it, or changes what it owns), or raise
    `bot <name> is open in another iota process (pid …)`."""
    return locking.acquire(directory / LOCK_NAME, lambda pid: lock_refusal(name, pid))


def lock_refusal(name: str, pid: int | None) -> str:
    holder = f" (pid {pid})" if pid is not None else ""
    return f"bot {name} is open in another iota process{holder}"


def _run_fields(model: ResolvedModel, project_root: Path) -> dict[str, Any]:
    """What this run decides in the session's meta (None clears a setting the config dropped)."""
    return {**model.meta_fields(), "cwd": str(project_root)}


def _write_pointer(pointer: Path, session_id: str) -> None:
    write_atomically(pointer, json_bytes({"session": session_id}, separators=(",", ":")) + b"\n")


def _rewrite_pointer(pointer: Path, session_id: str, warnings: list[str]) -> None:
    # The session found is used whether or not the pointer can be written now: every start finds
    # it again the same way, so a failed write costs only a notice.
    try:
        _write_pointer(pointer, session_id)
    except OSError as exc:
        warnings.append(f"cannot write {pointer}: {exc.strerror}; the next start looks for the session again")


def _create_session(name: str, pointer: Path, run: dict[str, Any]) -> Session:
    # Created eagerly, so the bot's conversation is in `iota list sessions` from its first start.
    session = Session.create(sessions_dir(), title=name, agent=name, **run)
    try:
        _write_pointer(pointer, session.id)
    except BaseException as exc:
        session.close()
        if isinstance(exc, OSError):
            raise BotError(f"cannot write {pointer}: {exc.strerror}; bot {name} was not started") from exc
        raise
    return session


# -- resuming --------------------------------------------------------------------------------------


def resume_notices(meta: dict[str, Any], project_root: Path, now: datetime) -> list[str]:
    """What a resumed bot is told: how long it was away (an hour or more), and that it moved
    project. meta is read as the last run left it."""
    notices = []
    stamp = meta.get("updated_at")
    last = parse_stamp(stamp) if isinstance(stamp, str) else None
    if last is not None and (now - last).total_seconds() >= AWAY_NOTICE_SECONDS:
        local = last.astimezone().strftime("%Y-%m-%d %H:%M")
        notices.append(f"Resumed after {_away_for((now - last).total_seconds())} (last activity {local})")
    old_root, new_root = meta.get("cwd"), str(project_root)
    if isinstance(old_root, str) and old_root and old_root != new_root:
        notices.append(f"Resumed in a different project: {old_root} → {new_root}")
    return notices


def _away_for(seconds: float) -> str:
    # The largest whole unit; the notice starts at an hour, so minutes never come to it.
    days, hours = int(seconds // 86400), int(seconds // 3600)
    count, unit = (days, "day") if days else (hours, "hour")
    return f"{count} {unit}{'s' if count != 1 else ''}"


def system_record_change(view_messages: list[Message], instructions: str) -> Message | None:
    """The system record to append when the config's system prompt (`instructions`) differs from
    the one the conversation holds: the new prompt, or a `system_cleared` record when the config
    no longer has one. None when they agree. Show `SYSTEM_PROMPT_UPDATED` with it."""
    current = next((message.content for message in view_messages if message.role == SYSTEM), "")
    if instructions == current:
        return None
    return Message(SYSTEM, content=instructions) if instructions else Message(SYSTEM, system_cleared=True)


# -- which sessions are bots' ----------------------------------------------------------------------


def owning_bot(session_id: str) -> str | None:
    """The bot whose session `session_id` is (the one its pointer names, or would name once
    rebuilt), if any. A pointer that cannot be read raises BotError: without it nobody can tell,
    and writing a bot's session from elsewhere is worse than refusing."""
    for name, owned in _owned_sessions(lambda why: f"cannot tell whether session {session_id} belongs to a bot: {why}"):
        if owned == session_id:
            return name
    return None


def session_of(name: str) -> str | None:
    """The id of bot `name`'s session, as its next start will take it (see `find_session`); None
    when it has none. A pointer that cannot be read is a BotError that says how to recover."""
    return find_session(name).session_id


def check_not_bot_session(session_id: str) -> None:
    """Refuse to resume (or switch to, or delete) a bot's session from anywhere but the bot."""
    bot = owning_bot(session_id)
    if bot is not None:
        raise BotError(f"session {session_id} belongs to bot {bot}; run iota run {bot}")


def bot_session_ids() -> set[str]:
    """The ids of every bot's session, for pickers that leave bots' sessions out."""
    return {owned for _, owned in _owned_sessions(lambda why: f"cannot tell which sessions belong to bots: {why}")}


def pointed_session(directory: Path) -> str | None:
    """The id of the session the bot in `directory` has (None: none yet); BotError if its
    pointer cannot be read."""
    return session_of(directory.name)


@dataclass(frozen=True)
class FoundSession:
    """Which session a bot has: `session_id` (None: it has none), and `notice`, the one line that
    says the pointer was not followed as it stood (None when it was). `broken`: a pointer was
    there and could not be used, as opposed to no pointer at all."""

    session_id: str | None
    notice: str | None = None
    broken: bool = False


def find_session(name: str, context: Callable[[str], str] | None = None) -> FoundSession:
    """Bot `name`'s session: the one its pointer names when that bundle is on disk; otherwise the
    newest session whose meta.json names the bot. Reads only; `open_bot` writes the pointer back.
    A pointer that cannot be read at all is a BotError; `context(reason)` starts its text."""
    pointer = bot_dir(name) / POINTER_NAME
    try:
        pointed = _read_pointer(pointer)
    except _BadPointer as bad:
        if bad.unreadable:
            start = context(bad.reason) if context else f"cannot tell which session bot {name} has: {bad.reason}"
            raise BotError(f"{start}; {bad.fix}") from None
        return _newest_instead(name, f"{POINTER_NAME} {bad.short}", broken=True)
    if pointed is None:
        return _newest_instead(name, f"{POINTER_NAME} was missing", broken=False)
    if is_bundle(sessions_dir() / pointed):
        return FoundSession(pointed)
    return _newest_instead(name, f"its session {pointed} is gone", broken=True)


def _newest_instead(name: str, why: str, *, broken: bool) -> FoundSession:
    newest = next(iter(sessions_of_bot(name)), None)
    if newest is None:
        return FoundSession(None, f"bot {name}: {why} and no session of the bot was found; "
                                  "a new session starts (memory is kept)", broken)
    return FoundSession(newest, f"bot {name}: {why}; resumed its newest session {newest}", broken)


def sessions_of_bot(name: str) -> list[str]:
    """The ids of the sessions whose meta.json says they are bot `name`'s, newest first: top-level
    bundles in the flat sessions dir (bots keep theirs there; a delegated helper's child session
    has a parent) with `agent` naming the bot."""
    try:
        infos = list_sessions(sessions_dir(), include_archived=True)
    except SessionError:
        return []
    return [info.id for info in infos if info.agent == name and not info.parent and _SESSION_ID.fullmatch(info.id)]


def _owned_sessions(context: Callable[[str], str]) -> Iterator[tuple[str, str]]:
    """(bot name, session id) of every bot that has a session; `context(reason)` starts the error
    for a pointer that cannot be read."""
    try:
        directories = sorted(entry for entry in bots_dir().iterdir() if entry.is_dir() and is_directory_name(entry.name))
    except OSError:
        return
    for directory in directories:
        found = find_session(directory.name, context)
        if found.session_id is not None:
            yield directory.name, found.session_id


class _BadPointer(Exception):
    """A pointer that exists but cannot be used: `reason` says why, `fix` how to recover, `short`
    what the card says of it; `unreadable` when the file could not be read at all."""

    def __init__(self, reason: str, fix: str, short: str, *, unreadable: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.fix = fix
        self.short = short
        self.unreadable = unreadable


def _read_pointer(pointer: Path) -> str | None:
    """The session id in `pointer`, None if there is no pointer (the bot has no session yet)."""
    try:
        data = pointer.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _BadPointer(f"cannot read {pointer}: {exc.strerror}",
                          f"make {pointer} readable, or delete it{_STARTS_OVER}", "", unreadable=True) from exc
    repair = f"repair or delete {pointer}{_STARTS_OVER}"
    try:
        record = json.loads(data)
    except ValueError as exc:
        raise _BadPointer(f"{pointer} is not valid JSON ({exc})", repair, "was not valid JSON") from None
    session_id = record.get("session") if isinstance(record, dict) else None
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        raise _BadPointer(f'{pointer} does not hold a session id (want {{"session":"<id>"}})', repair,
                          "held no session id")
    return session_id
