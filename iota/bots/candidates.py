"""A bot's candidates and durables: facts noticed in passing, kept apart until they prove lasting.

    ~/.iota/bots/<name>/candidates.jsonl      never sent with the requests
    ~/.iota/bots/<name>/durables.jsonl        sent by relevance, a few at a time (iota.bots.durables)

Models forget to call `remember`, and what they do save in the moment is often a passing detail.
So the upkeep after a turn (actors.upkeep) notes facts and preferences as **candidates** here,
and only those that keep coming up become **durables**:

    candidate ──3 hits, or pinned──► durable ──► before each message, the pinned ones, those the
        ▲                              │         message is about and the highest-hit recent ones
        └── no hit for 30 days (unpinned)         ride on it (≤ 16 entries, 2 KiB), never the prompt
    candidate ──no hit for 90 days (unpinned)──► gone

MEMORY.md is not part of this: it is what the person and the model wrote with `remember`, sent
whole with every request (seed 000), and no rule here adds or removes a line of it. The durables
are kept apart from it precisely so that what the upkeep learns over months does not make every
request pay for all of it.

A **hit** is a later message of the person's that is about the entry: a full-text match in the
bot's journal index, the one `recall` searches (iota.bots.hits). `consolidate` applies the rules,
during the upkeep.

Every text passes the checks of a MEMORY.md line before it is kept (one line, at most the line
cap, no control characters, nothing detect-secrets takes for a key or password: see
iota.memory.document), so a secret never lands here either. At most CAP candidates are kept: a
new one past it pushes out the unpinned candidate idle longest.

Both files are record tables (iota.bots.records): read whole, rewritten whole and atomically, a
line iota cannot read kept verbatim. Nothing here calls the model; times are passed in (`now`,
epoch seconds), so the rules are tested on a fake clock.

An entry that moves (promoted, demoted) leaves one file and joins the other, and no rename
replaces two files at once. So a save writes in two phases: first the file it joins, with it
added, then the file it leaves, with it removed. A `kill -9` or a full disk between the two leaves
it in both files, never in neither; and `load` counts an id found in both once, keeping the
durable — the newer copy after a promotion, and after a demotion the older one, which the next
consolidation demotes again. The next save then writes each file without the other's copy. (The
other order would lose a promoted entry outright, and nothing could tell it was ever there.)
"""

from __future__ import annotations

import dataclasses
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from iota.bots.records import read_table, replace_table, write_table
from iota.errors import ToolError
from iota.memory.document import MemoryDoc, check_scope, make_line, normalize, parse_section
from iota.memory.lines import MemoryRefusal, go_quote
from iota.memory.provenance import comparable
from iota.sessions.log import LOG_NAME

FILE_NAME = "candidates.jsonl"
DURABLES_NAME = "durables.jsonl"
CANDIDATE, DURABLE = "candidate", "durable"
PROMOTE_HITS = 3
DEMOTE_DAYS = 30
EXPIRE_DAYS = 90
CAP = 200
KEYWORDS_CAP = 6
DAY = 86_400


@dataclass(frozen=True)
class Mark:
    """A place in a session log: what comes after it is later (byte offset; the index's too)."""

    session: str
    offset: int


@dataclass
class Entry:
    id: str
    text: str                       # as a MEMORY.md line's text: no tag, no date
    state: str = CANDIDATE          # CANDIDATE (candidates.jsonl) | DURABLE (durables.jsonl)
    section: str = "User"           # what it is about: "User", or "Project: <name>" (sent only there)
    keywords: list[str] = field(default_factory=list)   # what a message about it says (see iota.bots.hits)
    pinned: bool = False
    hits: int = 0
    created: int = 0                # epoch seconds: noted, or promoted
    last_hit: int | None = None
    since: Mark | None = None       # hits are counted in messages after this
    # The state of the file it was read from or last saved to (None: new), so that a save knows
    # which entries move between the files; never written.
    saved_as: str | None = field(default=None, repr=False, compare=False)

    @property
    def last_active(self) -> int:
        return max(self.created, self.last_hit or 0)

    def idle_days(self, now: int) -> int:
        return (now - self.last_active) // DAY

    def to_json(self) -> dict[str, Any]:
        record = dataclasses.asdict(self)
        del record["saved_as"]
        record["created"] = _stamp(self.created)
        record["last_hit"] = _stamp(self.last_hit) if self.last_hit is not None else None
        record["since"] = dataclasses.asdict(self.since) if self.since is not None else None
        return record

    @classmethod
    def from_json(cls, record: Any) -> Entry:
        """The entry `record` holds; ValueError when it holds none."""
        if not isinstance(record, dict) or not isinstance(record.get("id"), str) or \
                not isinstance(record.get("text"), str) or record.get("state") not in (CANDIDATE, DURABLE):
            raise ValueError("not an entry")
        since = record.get("since")
        try:
            return cls(record["id"], record["text"], record["state"], str(record.get("section") or "User"),
                       [str(word) for word in record.get("keywords") or []][:KEYWORDS_CAP],
                       record.get("pinned") is True, int(record.get("hits") or 0), _epoch(record.get("created")),
                       _epoch(record["last_hit"]) if record.get("last_hit") else None,
                       Mark(str(since["session"]), int(since["offset"])) if isinstance(since, dict) else None)
        except (TypeError, KeyError) as error:
            raise ValueError(f"not an entry ({error})") from None


class CandidateBook:
    """The candidates and durables of the bot in `bot_dir`, loaded together as one list (each
    entry's `state` says which file it belongs to) and saved back each to its own file."""

    def __init__(self, bot_dir: Path):
        self.path = Path(bot_dir) / FILE_NAME
        self.durables_path = Path(bot_dir) / DURABLES_NAME
        self.warnings: list[str] = []
        self._kept: dict[Path, list[bytes]] = {}   # per file, the lines the last load could not read

    def load(self) -> list[Entry]:
        """Every entry; a line that cannot be read is skipped (and said in `warnings`), and written
        back as it is at the next save, so a hand edit gone wrong is not lost. An id in both files
        (a save cut off between its two phases: see above) is the durable alone."""
        tables = {}
        self.warnings, self._kept = [], {}
        for path, state in self._files():
            table = read_table(path, lambda record, state=state: _decoded(record, state))
            tables[state] = [entry for entry in table.items if entry is not None]
            self._kept[path] = table.kept
            self.warnings += table.warnings
        durable_ids = {entry.id for entry in tables[DURABLE]}
        entries = [entry for entry in tables[CANDIDATE] if entry.id not in durable_ids] + tables[DURABLE]
        for entry in entries:
            entry.saved_as = entry.state
        return entries

    def save(self, entries: list[Entry]) -> None:
        """Write each entry to the file of its state: first every file an entry joins, still
        holding the entries that leave it, then the rest (see the module's docstring). A ToolError
        says which file was written already when a later one fails."""
        joining = {entry.state for entry in entries if entry.saved_as not in (None, entry.state)}
        first = [(path, state) for path, state in self._files() if state in joining]
        written: list[Path] = []
        for path, state in first:
            # Entries leaving this file for one written in this phase too stay in it until the next.
            staying = [entry if entry.state == state else dataclasses.replace(entry, state=state)
                       for entry in entries if entry.state == state or entry.saved_as == state]
            self._write(path, staying, written)
        for path, state in self._files():
            chosen = [entry for entry in entries if entry.state == state]
            unchanged = (path, state) in first and not any(entry.saved_as == state != entry.state for entry in entries)
            if not unchanged and (chosen or self._kept.get(path) or path.exists()):
                self._write(path, chosen, written)
        for entry in entries:
            entry.saved_as = entry.state

    def _files(self) -> tuple[tuple[Path, str], ...]:
        return (self.path, CANDIDATE), (self.durables_path, DURABLE)

    def _write(self, path: Path, entries: list[Entry], written: list[Path]) -> None:
        records, kept = [entry.to_json() for entry in entries], self._kept.get(path, [])
        if not written:
            write_table(path, records, kept)   # its failure changes nothing, and says so
        else:
            try:
                replace_table(path, records, kept)
            except OSError as error:
                done = sorted({other.name for other in written})
                raise ToolError(f"cannot write {path}: {error.strerror}; {' and '.join(done)} "
                                f"{'was' if len(done) == 1 else 'were'} written already, so an entry moving between "
                                "the two files may be in both for now (it counts once, as a durable) and the other "
                                f"changes to {path.name} are not saved") from None
        written.append(path)


def _decoded(record: dict, state: str) -> Entry | None:
    """An entry of the file of `state`. In candidates.jsonl, a durable is an earlier version's
    record of a MEMORY.md line it tracked: derived data, dropped (None) rather than kept."""
    entry = Entry.from_json(record)
    if entry.state != state:
        if state == CANDIDATE:
            return None
        entry.state = DURABLE   # a durable edited by hand into a candidate's state stays where it is
    return entry


# -- the person's and the model's changes ------------------------------------------------------------


@dataclass(frozen=True)
class Noted:
    """What an `add` did: the candidates kept, the texts refused (with why), the ones pushed out."""

    added: list[Entry]
    refused: list[tuple[str, str]]
    evicted: list[Entry]


def add(entries: list[Entry], items: list[Any], memory_text: str, *, now: int, since: Mark | None,
        project: str | None = None) -> Noted:
    """Note `items` (texts, or {text, keywords, section}) as candidates in `entries`. A text is
    refused when it would not pass as a MEMORY.md line, names another project's section, or
    repeats a candidate, a durable or a line of MEMORY.md (`memory_text`)."""
    known = {comparable(entry.text) for entry in entries}
    known |= {comparable(normalize(line)) for line in MemoryDoc.parse(memory_text).body if line.startswith("- ")}
    added, refused, evicted = [], [], []
    for item in items:
        text, keywords, section = _item(item)
        try:
            text, section = _checked(text, section, project)
        except MemoryRefusal as refusal:
            refused.append((text, str(refusal)))
            continue
        if comparable(text) in known:
            refused.append((text, "already noted, or already in MEMORY.md"))
            continue
        known.add(comparable(text))
        entry = Entry(new_id(entries), text, CANDIDATE, section, keywords, created=now, since=since)
        entries.append(entry)
        added.append(entry)
        while sum(e.state == CANDIDATE for e in entries) > CAP:
            idle = [e for e in entries if e.state == CANDIDATE and not e.pinned and e is not entry]
            if not idle:
                break
            oldest = min(idle, key=lambda e: (e.last_active, e.hits))
            entries.remove(oldest)
            evicted.append(oldest)
    return Noted(added, refused, evicted)


def find(entries: list[Entry], reference: str, *, state: str | None = None) -> Entry:
    """The one entry whose id is `reference`, or whose text contains it; ToolError otherwise."""
    reference = reference.strip()
    what = {CANDIDATE: "candidate", DURABLE: "durable"}.get(state or "", "candidate or durable")
    if not reference:
        raise ToolError(f"old is required: the id of a {what}, or part of its text")
    pool = [entry for entry in entries if state is None or entry.state == state]
    exact = [entry for entry in pool if entry.id == reference]
    hits = exact or [entry for entry in pool if reference.casefold() in entry.text.casefold()]
    if len(hits) == 1:
        return hits[0]
    if hits:
        listed = "\n".join(describe(entry) for entry in hits)
        raise ToolError(f"{go_quote(reference)} matches {len(hits)} entries; give the id:\n{listed}")
    raise ToolError(f"no {what} matches {go_quote(reference)} (remember actions \"candidates\" and \"durables\" "
                    "list them)")


def describe(entry: Entry) -> str:
    """`c3f9a1 · 2 hits · pinned · durable · Prefers pytest over unittest`."""
    parts = [entry.id, f"{entry.hits} hit{'' if entry.hits == 1 else 's'}"]
    if entry.pinned:
        parts.append("pinned")
    if entry.state == DURABLE:
        parts.append("durable")
    if entry.section != "User":
        parts.append(f"## {entry.section}")
    return " · ".join(parts + [entry.text])


def promote(entry: Entry, *, now: int) -> None:
    """Candidate `entry` becomes a durable, dated now, its hits counted afresh."""
    entry.state, entry.hits, entry.created = DURABLE, 0, now


# -- consolidation ------------------------------------------------------------------------------------


@dataclass
class Consolidated:
    """What a consolidation changed (their text is shown on screen, never recorded)."""

    promoted: list[tuple[Entry, str]] = field(default_factory=list)   # with why: "3 hits", "pinned"
    demoted: list[Entry] = field(default_factory=list)
    expired: list[Entry] = field(default_factory=list)

    def notices(self) -> list[str]:
        return ([f"candidates: promoted {go_quote(entry.text)} to durables ({why})" for entry, why in self.promoted]
                + [f"durables: {go_quote(entry.text)} back to candidates (no mention in {DEMOTE_DAYS}+ days)"
                   for entry in self.demoted]
                + [f"candidates: expired {go_quote(entry.text)} (no mention in {EXPIRE_DAYS} days)"
                   for entry in self.expired])

    def __len__(self) -> int:
        return len(self.promoted) + len(self.demoted) + len(self.expired)


def consolidate(entries: list[Entry], *, now: int, counting: bool) -> Consolidated:
    """Apply the rules to `entries` (hits already counted, when `counting`): promote candidates
    with PROMOTE_HITS hits or pinned, demote unpinned durables idle DEMOTE_DAYS, expire unpinned
    candidates idle EXPIRE_DAYS. Without counting (no journal, so no hits can be seen) nothing is
    promoted by hits and nothing is demoted. Changes `entries` in place."""
    done = Consolidated()
    for entry in [e for e in entries if e.state == CANDIDATE]:
        if entry.pinned or (counting and entry.hits >= PROMOTE_HITS):
            done.promoted.append((entry, "pinned" if entry.pinned else f"{entry.hits} hits"))
            promote(entry, now=now)
        elif entry.idle_days(now) >= EXPIRE_DAYS:
            entries.remove(entry)
            done.expired.append(entry)
    if counting:
        for entry in entries:
            if entry.state == DURABLE and not entry.pinned and entry.idle_days(now) >= DEMOTE_DAYS \
                    and not any(entry is promoted for promoted, _ in done.promoted):
                entry.state, entry.hits = CANDIDATE, 0
                done.demoted.append(entry)
    return done


# -- helpers ------------------------------------------------------------------------------------------


def _item(item: Any) -> tuple[str, list[str], str]:
    """(text, keywords, section) of one item the model gave."""
    if isinstance(item, str):
        return item, [], "User"
    if not isinstance(item, dict):
        return str(item), [], "User"
    keywords = item.get("keywords")
    words = [str(word).strip() for word in keywords if str(word).strip()] if isinstance(keywords, list) else []
    section = item.get("section") if isinstance(item.get("section"), str) else ""
    return str(item.get("text") or ""), words[:KEYWORDS_CAP], section


def _checked(text: str, section: str, project: str | None) -> tuple[str, str]:
    """(`text` as a MEMORY.md line's text, its section), or the MemoryRefusal of such a line (and
    of a section MEMORY.md does not have, or another project's)."""
    # Any date: the line is judged at the length it will have in MEMORY.md.
    line = make_line(text, "inferred", "2000-01-01", "candidates.jsonl")
    name = parse_section(section)
    check_scope(name, project)
    return normalize(line), name


def in_scope(entry: Entry, project: str | None) -> bool:
    """Whether `entry` holds in a chat running in `project` (a project's entry holds there alone)."""
    try:
        check_scope(entry.section, project)
    except MemoryRefusal:
        return False
    return True


def end_of_log(session_dir: Path) -> Mark:
    """Where session `session_dir`'s log ends now: a message after this is later than this moment."""
    try:
        size = (session_dir / LOG_NAME).stat().st_size
    except OSError:
        size = 0
    return Mark(session_dir.name, size)


def new_id(entries: list[Entry]) -> str:
    taken = {entry.id for entry in entries}
    while True:
        made = "c" + secrets.token_hex(3)
        if made not in taken:
            return made


def _stamp(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _epoch(value: Any) -> int:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    if not isinstance(value, str):
        raise ValueError("not a time")
    when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return int(when.timestamp())
