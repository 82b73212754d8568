"""A bundle's `meta.json`: its bytes, reading it, rebuilding a lost one, and atomic file writes.

meta.json is pretty JSON (2-space indent, no trailing newline) with its keys in the Rust iota's
order, replaced atomically at every write. It is a summary of the bundle, not the conversation:
everything in it but the settings can be had again from `messages.jsonl`. So a meta.json that is
missing or cut short (a disk that lost the rename, a hand edit) does not lose a session: it is
rebuilt with what the log tells (the times from the log file's, the count from its records) and
the model settings left empty for the next run to write, and the person is told.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from iota.errors import SessionError
from iota.sessions.log import LOG_NAME, json_bytes

META_NAME = "meta.json"

_HEAD_KEYS = ("v", "id", "created_at", "updated_at", "provider", "model")
# Written only when set, in this order, between `model` and `message_count`. `parent` (the id of
# the session this one sits under in the tree) and `archived` (true: hidden from lists and
# pickers) are this version's; a meta.json without them is a top-level session, not archived.
_OPTIONAL_KEYS = (
    "temperature", "top_p", "context_window", "effort", "image", "aspect_ratio", "image_size",
    "negative_prompt", "json_edits", "base_url", "cwd", "title", "agent", "param_sources", "parent", "archived",
)
_KNOWN_KEYS = frozenset((*_HEAD_KEYS, *_OPTIONAL_KEYS, "message_count"))


def now_stamp() -> str:
    """The current time as meta.json writes it: RFC 3339, whole seconds, local offset."""
    return stamp_of(datetime.now().astimezone())


def stamp_of(when: datetime) -> str:
    return when.astimezone().replace(microsecond=0).isoformat()


def parse_stamp(stamp: str) -> datetime | None:
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    # A stamp without an offset was written in local time.
    return when if when.tzinfo is not None else when.astimezone()


def render_meta(meta: dict[str, Any]) -> bytes:
    """meta.json's bytes: fixed key order, unset optional keys left out, unknown keys kept at the end."""
    ordered: dict[str, Any] = {"v": meta.get("v", 1)}
    ordered.update((key, meta.get(key, "")) for key in _HEAD_KEYS[1:])
    ordered.update((key, meta[key]) for key in _OPTIONAL_KEYS if meta.get(key))
    ordered["message_count"] = meta.get("message_count", 0)
    ordered.update((key, value) for key, value in meta.items() if key not in _KNOWN_KEYS)
    return json_bytes(ordered, indent=2)


def read_meta(bundle: Path) -> dict[str, Any]:
    path = bundle / META_NAME
    try:
        meta = json.loads(path.read_bytes())
    except OSError as exc:
        raise SessionError(f"failed to read {path}: {exc.strerror}") from exc
    except ValueError as exc:
        raise SessionError(f"failed to read {path}: not valid JSON ({exc})") from exc
    if not isinstance(meta, dict):
        raise SessionError(f"failed to read {path}: not a JSON object")
    return meta


def read_or_rebuild_meta(bundle: Path) -> tuple[dict[str, Any], str | None]:
    """The bundle's meta, and None; or, when meta.json is missing or unreadable as JSON, a meta
    rebuilt from the log, and the warning that says so. A meta.json that cannot be read at all
    (permissions) is still an error: it is there, and writing over it would hide why."""
    try:
        return read_meta(bundle), None
    except SessionError as error:
        cause = error.__cause__
        if isinstance(cause, OSError) and not isinstance(cause, FileNotFoundError):
            raise
        why = "was missing" if isinstance(cause, FileNotFoundError) else "was cut short or is not a JSON object"
    try:
        changed = datetime.fromtimestamp((bundle / LOG_NAME).stat().st_mtime).astimezone()
    except OSError:
        changed = datetime.now().astimezone()
    stamp = stamp_of(changed)
    meta = {"v": 1, "id": bundle.name, "created_at": stamp, "updated_at": stamp, "provider": "", "model": "",
            "message_count": 0}
    return meta, f"{META_NAME} {why}; it was rebuilt from {LOG_NAME} (the title and settings are not in the log)"


def write_atomically(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that a crash leaves the old file or the new, never half of one.

    The bytes go to `<name>.tmp` beside it and are fsynced before the rename; the directory is
    fsynced after it, or the rename itself could be lost. A `path` that is a symbolic link is
    written through: its target is replaced, in the target's directory, and the link stays (a
    person who keeps MEMORY.md in git links it into the bot's directory).
    """
    path = Path(os.path.realpath(path)) if os.path.islink(path) else path
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
