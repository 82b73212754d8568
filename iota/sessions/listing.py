"""Where session bundles are, finding one by an id's prefix, and what `iota list sessions`, the
tree and the pickers show about each, newest first.

Reads meta.json only (never the log), so a list of thousands of sessions stays quick; a bundle
whose meta.json cannot be read still lists, with what is known. The writer of a bundle is
iota.sessions.bundle.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from iota.errors import AmbiguousSession, SessionError, SessionNotFound
from iota.paths import sessions_dir
from iota.sessions.log import LOG_NAME
from iota.sessions.meta import META_NAME, parse_stamp, read_meta
from iota.text import clean_title

_PLAUSIBLE_ID = re.compile(r"[0-9A-Za-z]+")


def bucket_dirs() -> list[Path]:
    """The flat sessions dir and every project bucket: the places a bundle can live."""
    root = sessions_dir()
    projects = root / "projects"
    buckets = [root]
    if projects.is_dir():
        buckets += sorted(path for path in projects.iterdir() if path.is_dir())
    return buckets


def is_bundle(path: Path) -> bool:
    return (path / META_NAME).is_file() or (path / LOG_NAME).is_file()


def bundles_in(bucket: Path) -> list[Path]:
    try:
        return sorted(path for path in bucket.iterdir() if is_bundle(path))
    except FileNotFoundError:
        return []


def all_bundles() -> list[Path]:
    return [bundle for bucket in bucket_dirs() for bundle in bundles_in(bucket)]


def resolve_session(prefix: str, scope: Path | None = None, *, include_archived: bool = False) -> Path:
    """The bundle dir whose id is `prefix`, or the one id it begins (ignoring case).

    `scope` is the mode's own bucket (the flat dir, or a project's); it is searched first and
    all sessions only when nothing in it matches. A prefix matching several bundles is an error
    rather than a guess. Archived sessions are left out unless `include_archived`; when only an
    archived one matches, the error says so.
    """
    if not _PLAUSIBLE_ID.fullmatch(prefix):
        raise SessionError(f'invalid session id "{prefix}"')
    try:
        views = ([bundles_in(scope)] if scope is not None else []) + [all_bundles()]
    except OSError as exc:
        raise SessionError(f"failed to list sessions: {exc.strerror}: {exc.filename}") from exc
    archived_match = False
    for bundles in views:
        named = [bundle for bundle in bundles if bundle.name.lower().startswith(prefix.lower())]
        if not include_archived:
            shown = [bundle for bundle in named if not SessionInfo.read(bundle).archived]
            archived_match = archived_match or len(shown) < len(named)
            named = shown
        exact = [bundle for bundle in named if bundle.name == prefix]
        if exact:
            return exact[0]
        if len(named) == 1:
            return named[0]
        if named:
            names = ", ".join(sorted(bundle.name for bundle in named))
            raise AmbiguousSession(f'session id "{prefix}" is ambiguous: {names}')
    hint = " (an archived session does: add --all)" if archived_match else ""
    raise SessionNotFound(f'no session matches "{prefix}"{hint}')


@dataclass(frozen=True)
class SessionInfo:
    """What the session list, the tree and the pickers show about a bundle."""

    id: str
    dir: Path
    title: str
    model: str
    updated_at: str
    message_count: int
    agent: str = ""
    parent: str = ""       # the id of the session it sits under in the tree; "" at the top
    archived: bool = False

    @classmethod
    def read(cls, bundle: Path) -> SessionInfo:
        """A bundle's info; a meta.json that cannot be read still lists, with what is known."""
        try:
            meta = read_meta(bundle)
        except SessionError:
            meta = {}

        def text(key: str) -> str:
            value = meta.get(key)
            return value if isinstance(value, str) else ""

        count = meta.get("message_count")
        return cls(bundle.name, bundle, text("title"), text("model"), text("updated_at"),
                   count if type(count) is int else 0, text("agent"), text("parent"), meta.get("archived") is True)


def list_sessions(scope: Path | None = None, *, include_archived: bool = False) -> list[SessionInfo]:
    """Every bundle (or those in the bucket `scope`), most recently updated first, unknown times
    last; archived ones only with `include_archived`."""
    try:
        bundles = bundles_in(scope) if scope is not None else all_bundles()
    except OSError as exc:
        raise SessionError(f"failed to list sessions: {exc.strerror}: {exc.filename}") from exc
    infos = [info for info in map(SessionInfo.read, bundles) if include_archived or not info.archived]

    def newest_first(info: SessionInfo) -> tuple[bool, float]:
        when = parse_stamp(info.updated_at)
        return (when is None, -when.timestamp() if when is not None else 0.0)

    return sorted(infos, key=newest_first)


def format_session_list(sessions: Sequence[SessionInfo], now: datetime) -> str:
    """The text of `iota list sessions`, in the order given. `now` must carry a time zone."""
    if not sessions:
        return "No saved sessions."
    width = max(len(info.id) for info in sessions)
    return "\n".join(["Sessions:", *(f"  {info.id.rjust(width)}  {session_label(info, now)}" for info in sessions)])


def session_label(info: SessionInfo, now: datetime, *, agent: bool = False) -> str:
    """`<title or (untitled)> · <model> · <time> · <n> msgs`, as `iota list sessions` shows it;
    then (`agent`, as the tree and the pickers show it) the agent, and ` · archived` when it is.
    The title is cleaned again: a meta.json may have been written by something else."""
    parts = [clean_title(info.title) or "(untitled)", info.model, relative_time(info.updated_at, now),
             f"{info.message_count} msgs", info.agent if agent else "", "archived" if info.archived else ""]
    return " · ".join(part for part in parts if part)


def relative_time(stamp: str, now: datetime) -> str:
    when = parse_stamp(stamp)
    if when is None:
        return "unknown"
    seconds = (now - when).total_seconds()
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)}m ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)}h ago"
    return when.astimezone().strftime("%Y-%m-%d %H:%M")
