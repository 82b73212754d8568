"""A bundle's `queue.json`: the messages the person typed that are not yet in the log.

A message the person sends waits before it reaches `messages.jsonl`: behind a streaming reply,
behind a bot's catch-up or flush, during a question asked before sending (the compaction offer),
or held after Ctrl+C. So that a `kill -9` meanwhile loses nothing the person saw accepted, every
typed message is written here (replaced atomically, fsynced) before the chat shows it queued,
and leaves this file only once its record is in the log:

    {"v": 1, "messages": [{"id": "k7m2q9xa", "text": "and then run the tests"}]}

`id` is the id of the turn the message will be sent in: its user record in the log carries it as
`turn`. That is what keeps a crash between the two writes (the record is in the log, the file
still lists it) from sending it twice: a message whose id is the turn of a user record in the
view is already sent (`unsent`). The file is a separate one rather than records in the log
because a queued message can be taken back, dropped, or wait held while compactions and rewinds
move where the log's view begins past it; the log stays exactly what was sent.

An empty queue is no file. A file that cannot be read is reported in one line and left for the
next write to replace.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from iota.errors import SessionError
from iota.messages import USER, Message
from iota.sessions.bundle import Session
from iota.sessions.log import json_bytes
from iota.sessions.meta import write_atomically

QUEUE_NAME = "queue.json"


@dataclass(frozen=True)
class Queued:
    """One typed message not yet in the log: the id of the turn it will be sent in, its text."""

    id: str
    text: str


def read_queue(bundle: Path) -> tuple[list[Queued], str | None]:
    """The messages `bundle`'s queue.json keeps, oldest first, and a warning when it is unreadable."""
    path = bundle / QUEUE_NAME
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return [], None
    except OSError as exc:
        return [], f"{QUEUE_NAME}: cannot read the messages queued before iota stopped: {exc.strerror}"
    except ValueError:
        return [], f"{QUEUE_NAME}: not valid JSON; the messages queued before iota stopped could not be read"
    entries = data.get("messages") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return [], f"{QUEUE_NAME}: has no list of messages; the messages queued before iota stopped could not be read"
    kept = [Queued(entry["id"], entry["text"]) for entry in entries
            if isinstance(entry, dict) and isinstance(entry.get("id"), str) and entry["id"]
            and isinstance(entry.get("text"), str)]
    skipped = len(entries) - len(kept)
    return kept, (f"{QUEUE_NAME}: skipped {skipped} unreadable entr{'y' if skipped == 1 else 'ies'}"
                  if skipped else None)


def unsent(queued: Iterable[Queued], view: Sequence[Message]) -> list[Queued]:
    """`queued` less what the log already holds: a user record of its turn (it was written, and
    iota stopped before the queue file was)."""
    sent = {message.turn for message in view if message.role == USER and message.turn}
    return [entry for entry in queued if entry.id not in sent]


def write_queue(bundle: Path, queued: Sequence[Queued]) -> None:
    """Replace `bundle`'s queue.json with `queued` (none: remove it), durably. Raises OSError."""
    path = bundle / QUEUE_NAME
    if queued:
        records = [{"id": entry.id, "text": entry.text} for entry in queued]
        write_atomically(path, json_bytes({"v": 1, "messages": records}, indent=2))
        return
    try:
        path.unlink()
    except FileNotFoundError:
        return
    dir_fd = os.open(bundle, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(dir_fd)  # or the removal itself could be lost, and a sent message come back
    finally:
        os.close(dir_fd)


def save_queue(session: Session, queued: Sequence[Queued]) -> None:
    """Keep `queued` in `session`'s bundle, writing the bundle first if it is not yet on disk (the
    first message of a new chat). Blocking I/O; raises SessionError naming what was not kept."""
    try:
        if queued:
            session.ensure_on_disk()
        elif not session.on_disk:
            return
        write_queue(session.dir, queued)
    except OSError as exc:
        what = f"{len(queued)} queued message{'' if len(queued) == 1 else 's'}" if queued else "the sent queue"
        raise SessionError(f"failed to save session {session.id}: {what} not written to {QUEUE_NAME}: "
                           f"{exc.strerror}") from exc
