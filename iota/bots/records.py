"""A bot's small record files — `tasks.jsonl`, `schedules.jsonl`, `candidates.jsonl`, `durables.jsonl` —
read whole and rewritten whole.

Each file holds one JSON object a line: the current state of a few dozen records that a person
may read, diff and edit. So it is written the way a session's meta.json is, not appended to like
its log: the new content goes to `<name>.tmp`, is fsynced, and is renamed over the old
(iota.sessions.meta.write_atomically). A `kill -9` at any instant leaves the old file or the new,
never half of one, and there is no torn tail to cut back. A replayed append-only log would keep
every version of every record forever for no reader's benefit.

A line iota cannot read as a record (a hand edit gone wrong, a record of a later version) is not
dropped: it is reported once, and written back verbatim after the records at the next change,
so nothing a person typed is lost by iota rewriting the file.

Records are found by id or by a unique prefix of it, ignoring case (`find`): the ids are ULIDs,
26 characters a model copies from a list, and the first few are as good as all of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from iota.sessions.log import json_bytes
from iota.sessions.meta import write_atomically
from iota.errors import ToolError

Item = TypeVar("Item")


def new_id() -> str:
    """A ULID: 26 characters that sort by creation time, made by iota, never by the model."""
    from ulid import ULID  # imported when first needed: python-ulid reads its own package metadata

    return str(ULID())


@dataclass
class Table(Generic[Item]):
    """What a record file held when it was read: its records, and the lines kept as they were."""

    items: list[Item] = field(default_factory=list)
    kept: list[bytes] = field(default_factory=list)   # unreadable lines, written back verbatim
    warnings: list[str] = field(default_factory=list)


def read_table(path: Path, decode: Callable[[dict], Item]) -> Table[Item]:
    """Read `path` (a missing file is an empty table). `decode` turns a JSON object into a record
    or raises ValueError, which keeps the line verbatim with a warning naming it."""
    table: Table[Item] = Table()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return table
    except OSError as error:
        raise ToolError(f"cannot read {path}: {error.strerror}") from None
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict):
                raise ValueError("not a JSON object")
            table.items.append(decode(record))
        except ValueError as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors too
            table.kept.append(line)
            table.warnings.append(f"{path.name}: line {number} is not a record iota can read ({error}); "
                                  "it is kept as it is")
    return table


def write_table(path: Path, records: Sequence[dict], kept: Sequence[bytes] = ()) -> None:
    """Replace `path` with `records`, one compact JSON object a line, then the `kept` lines."""
    try:
        replace_table(path, records, kept)
    except OSError as error:
        raise ToolError(f"cannot write {path}: {error.strerror}; nothing was changed") from None


def replace_table(path: Path, records: Sequence[dict], kept: Sequence[bytes] = ()) -> None:
    """`write_table` raising the OSError, for a caller that writes several files and must say which
    of them a failure left changed (iota.bots.candidates)."""
    lines = [json_bytes(record, separators=(",", ":")) for record in records] + list(kept)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, b"".join(line + b"\n" for line in lines))


def find(items: Sequence[Item], reference: object, what: str, ident: Callable[[Item], str]) -> Item:
    """The one item whose id is `reference` or starts with it (ignoring case); a one-line refusal
    naming `what` (task, schedule) otherwise."""
    wanted = reference.strip().lower() if isinstance(reference, str) else ""
    if not wanted:
        raise ToolError(f"{what} is required: its id (the list shows them)")
    exact = [item for item in items if ident(item).lower() == wanted]
    if exact:
        return exact[0]
    matches = [item for item in items if ident(item).lower().startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise ToolError(f'{what} id "{reference}" matches {len(matches)} {what}s; give more of it')
    raise ToolError(f'no {what} has the id "{reference}" (the list shows them)')


def clip(text: object, limit: int, what: str) -> str:
    """A one-line text argument of at most `limit` characters, or a refusal that says so."""
    if not isinstance(text, str):
        raise ToolError(f"{what} must be text")
    single = " ".join(text.split())
    if len(single) > limit:
        raise ToolError(f"{what} is {len(single)} characters long; keep it under {limit}")
    return single
