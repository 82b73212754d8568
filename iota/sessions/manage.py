"""Filing saved sessions: rename, archive, move in the tree, delete with children, fork.

One process writes a bundle at a time, and that includes its meta.json. The process that has a
session open keeps its meta in memory and rewrites the file whole as its turns end, so a change
written under it by another process would be undone at that rewrite. So every change here takes
the bundle's lock first, exactly as opening it does, and a session open in another process is
refused with the pid that holds it (`session k7… is open in another iota process (pid 4242);
cannot archive it from here`). The one session a chat has open itself (`current`) is changed
through that chat's own handle instead. Each write replaces meta.json atomically.

These are filing, not conversation: none of them moves `updated_at`, so the newest-first lists
keep their order.

Forking only reads the original — its log and meta.json are opened for reading and nothing is
written to them, so the original stays byte-identical and may even be open elsewhere. The child
is a new bundle beside it whose log starts with the original's visible context: the system
prompt, then the live view (after a compaction, the summary on the first kept message and the
tail; otherwise the whole conversation), as one batch, without turn ids — those turns are over.

Knows nothing of bots: the callers refuse a bot's session first (iota.bots.bot).
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from iota.errors import SessionError
from iota.messages import ASSISTANT, SYSTEM, Message
from iota import attachments
from iota.sessions.bundle import Session, SessionView, lock_bundle
from iota.sessions.listing import list_sessions, SessionInfo
from iota.sessions.log import LOG_NAME, TAIL_BYTES, load_log
from iota.sessions.meta import META_NAME, read_or_rebuild_meta, render_meta, write_atomically
from iota.text import clean_title
from iota.sessions.tree import children_of, descendants

# What a fork takes over from the original's meta.json: how it was run, not what it is called.
_SETTINGS = ("provider", "model", "temperature", "top_p", "context_window", "effort", "image", "aspect_ratio",
             "image_size", "negative_prompt", "json_edits", "base_url", "cwd", "agent", "param_sources")


def rename(bundle: Path, title: str, current: Session | None = None) -> str:
    """Set a session's title; returns it as stored (cleaned). An empty title is refused."""
    cleaned = clean_title(title)
    if not cleaned:
        raise SessionError("a title needs at least one printable character")
    _edit(bundle, "rename it", current, title=cleaned)
    return cleaned


def archive(bundle: Path, archived: bool, current: Session | None = None) -> None:
    """Hide a session from the lists and pickers (`archived: true`), or show it again. Its data stay."""
    _edit(bundle, "archive it" if archived else "unarchive it", current, archived=archived)


def set_parent(bundle: Path, parent_id: str, current: Session | None = None) -> None:
    """Put a session under `parent_id` ("" moves it to the top). A session cannot go under
    itself or under one of its own descendants: the tree would become a loop."""
    if parent_id == bundle.name:
        raise SessionError(f"session {bundle.name} cannot sit under itself")
    if parent_id and parent_id in descendants(list_sessions(include_archived=True), bundle.name):
        raise SessionError(f"session {parent_id} is under {bundle.name}; putting {bundle.name} under it "
                           "would make a loop")
    _edit(bundle, "move it", current, parent=parent_id)


def delete_with_children(bundle: Path, current: Session | None = None) -> list[SessionInfo]:
    """Delete a session for good; the sessions directly under it move up to its own parent (or
    to the top). Every lock is taken before anything changes: if the session or any of its
    children is open in another process, nothing is touched. Returns the children moved."""
    if current is not None and current.id == bundle.name:
        raise SessionError(f"session {bundle.name} is the one this chat is writing; it cannot be deleted")
    infos = list_sessions(include_archived=True)
    children = children_of(infos, bundle.name)
    own = SessionInfo.read(bundle).parent
    new_parent = "" if own in (bundle.name, *(child.id for child in children)) else own
    held = [lock_bundle(bundle, "cannot delete it from here")]
    try:
        for child in children:
            if current is None or child.id != current.id:
                held.append(lock_bundle(child.dir, f"cannot move it out from under {bundle.name} from here, so "
                                                   f"{bundle.name} was not deleted"))
        for child in children:
            if current is not None and child.id == current.id:
                current.update_meta(touch=False, parent=new_parent)
            else:
                _write_changes(child.dir, parent=new_parent)
        try:
            shutil.rmtree(bundle)
        except OSError as error:
            raise SessionError(f"cannot delete session {bundle.name}: {error.strerror or error}") from None
    finally:
        for lock in reversed(held):
            lock.release()
    return children


def fork_bundle(bundle: Path, title: str = "") -> Session:
    """A new session under the one saved at `bundle`, holding its visible context, open and
    locked for this process. The original is only read."""
    meta, _ = read_or_rebuild_meta(bundle)
    view, _ = load_log(bundle / LOG_NAME, TAIL_BYTES)
    settings = {key: meta[key] for key in _SETTINGS if meta.get(key) not in (None, "")}
    settings.setdefault("provider", "")
    settings.setdefault("model", "")
    parent_title = meta.get("title") if isinstance(meta.get("title"), str) else ""
    child = Session.new(bundle.parent, parent=bundle.name, title=fork_title(title, parent_title, bundle.name),
                        **settings)
    write_fork(child, attachments.bind(view.messages, bundle), view.left_out)  # so the fork can copy their files
    return child


def fork_title(given: str, parent_title: str, parent_id: str) -> str:
    """The child's title: the one given, else the original's marked as a fork."""
    return clean_title(given) or clean_title(f"{clean_title(parent_title)} (fork)" if clean_title(parent_title)
                                             else f"fork of {parent_id}")


def write_fork(child: Session, visible: Sequence[Message], left_out: int = 0) -> None:
    """Write the visible context (system record first, if any) to the new `child` in one batch
    and make it the child's view. Blocking I/O. `left_out`: the records the original's view was
    opened without (its tail, iota.sessions.log); the child's view says so too, so that this
    process offers to compact it as it would the original (its next open reads it whole)."""
    if not any(message.role != SYSTEM for message in visible):
        raise SessionError(f"session {child.meta.get('parent')} has no conversation to fork yet")
    records = [dataclasses.replace(message, turn="") for message in visible]
    child.append(records)  # the attachments' files are copied into the child first
    records = attachments.bind(records, child.dir)
    last_usage = next((m.usage for m in reversed(records) if m.role == ASSISTANT and m.usage is not None), None)
    child.view = SessionView(messages=records, last_usage=None if left_out else last_usage,
                             message_count=child.meta["message_count"], left_out=left_out)


def _edit(bundle: Path, doing: str, current: Session | None, **changes: Any) -> None:
    if current is not None and current.id == bundle.name:
        current.update_meta(touch=False, **changes)
        return
    with lock_bundle(bundle, f"cannot {doing} from here"):
        _write_changes(bundle, **changes)


def _write_changes(bundle: Path, **changes: Any) -> None:
    """Rewrite a locked bundle's meta.json with `changes`, if they change anything."""
    try:
        meta, _ = read_or_rebuild_meta(bundle)
        if all(_value(meta.get(key)) == _value(value) for key, value in changes.items()):
            return
        meta.update(changes)
        write_atomically(bundle / META_NAME, render_meta(meta))
    except OSError as error:
        raise SessionError(f"cannot change session {bundle.name}: {META_NAME}: {error.strerror}") from error


def _value(value: Any) -> Any:
    """A meta value as written: unset, empty and false are all left out of meta.json."""
    return None if value in (None, "", False) else value
