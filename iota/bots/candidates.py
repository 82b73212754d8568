"""A bot's candidate memory: facts noticed in passing, kept aside until they prove lasting.

    ~/.iota/bots/<name>/candidates.jsonl      one entry a line, rewritten whole at each change

Models forget to call `remember`, and what they do save in the moment is often a passing detail.
So the upkeep after a turn (actors.upkeep) notes facts and preferences as **candidates** here —
never sent with the requests — and only those that keep coming up reach MEMORY.md:

    candidate ──3 hits, or pinned──► a MEMORY.md line `[inferred]` (every MEMORY.md rule and cap)
        ▲                                   │
        └──── no hit for 30 days (unpinned) ┘   (a line the person wrote, untagged, is never touched)
    candidate ──no hit for 90 days (unpinned)──► gone

A **hit** is a later message of the person's that is about the entry: a full-text match in the
bot's journal index, the one `recall` searches (iota.bots.hits). The file tracks the model's
MEMORY.md lines too (state `durable`), to know when each was last brought up; a line without
hits dates from the day it was written. `consolidate` applies the rules, during the upkeep.

Every text passes the checks of a MEMORY.md line before it is kept (one line, at most the line
cap, no control characters, nothing detect-secrets takes for a key or password: see
iota.memory.document), so a secret never lands here either. At most CAP entries are kept: a new
candidate past it pushes out the unpinned candidate idle longest.

Nothing here calls the model; times are passed in (`now`, epoch seconds), so the rules are
tested on a fake clock.
"""

from __future__ import annotations

import dataclasses
import json
import re
import secrets
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from iota.memory.document import Add, MemoryDoc, Remove, check_scope, make_line, normalize, parse_section
from iota.memory.file import MemoryFile, read_memory
from iota.memory.lines import MemoryRefusal, go_quote, is_tagged
from iota.memory.provenance import comparable
from iota.sessions.bundle import write_atomically
from iota.sessions.log import LOG_NAME
from iota.errors import ToolError

FILE_NAME = "candidates.jsonl"
CANDIDATE, DURABLE = "candidate", "durable"
PROMOTE_HITS = 3
DEMOTE_DAYS = 30
EXPIRE_DAYS = 90
CAP = 200
KEYWORDS_CAP = 6
DAY = 86_400

_DATE = re.compile(r"\((\d{4}-\d{2}-\d{2})\)$")


@dataclass(frozen=True)
class Mark:
    """A place in a session log: what comes after it is later (byte offset; the index's too)."""

    session: str
    offset: int


@dataclass
class Entry:
    id: str
    text: str                       # as a MEMORY.md line's text: no tag, no date
    state: str = CANDIDATE          # CANDIDATE | DURABLE (a model's MEMORY.md line, tracked)
    section: str = "User"           # where it goes in MEMORY.md, or is there
    keywords: list[str] = field(default_factory=list)   # what a message about it says (see iota.bots.hits)
    pinned: bool = False
    hits: int = 0
    created: int = 0                # epoch seconds
    last_hit: int | None = None
    since: Mark | None = None       # hits are counted in messages after this

    @property
    def last_active(self) -> int:
        return max(self.created, self.last_hit or 0)

    def idle_days(self, now: int) -> int:
        return (now - self.last_active) // DAY

    def to_json(self) -> dict[str, Any]:
        record = dataclasses.asdict(self)
        record["created"] = _stamp(self.created)
        record["last_hit"] = _stamp(self.last_hit) if self.last_hit is not None else None
        record["since"] = dataclasses.asdict(self.since) if self.since is not None else None
        return record

    @classmethod
    def from_json(cls, record: Any) -> Entry:
        if not isinstance(record, dict) or not isinstance(record.get("id"), str) or \
                not isinstance(record.get("text"), str) or record.get("state") not in (CANDIDATE, DURABLE):
            raise ValueError("not an entry")
        since = record.get("since")
        return cls(record["id"], record["text"], record["state"], str(record.get("section") or "User"),
                   [str(word) for word in record.get("keywords") or []][:KEYWORDS_CAP], record.get("pinned") is True,
                   int(record.get("hits") or 0), _epoch(record.get("created")),
                   _epoch(record["last_hit"]) if record.get("last_hit") else None,
                   Mark(str(since["session"]), int(since["offset"])) if isinstance(since, dict) else None)


class CandidateBook:
    """The candidates file of the bot in `bot_dir`."""

    def __init__(self, bot_dir: Path):
        self.path = Path(bot_dir) / FILE_NAME
        self.warnings: list[str] = []
        self.kept: list[str] = []   # the lines the last load could not read, written back verbatim

    def load(self) -> list[Entry]:
        """Every entry; a line that cannot be read is skipped (and said in `warnings`), and written
        back as it is after the entries at the next save, so a hand edit gone wrong is not lost
        (as iota.bots.records keeps its files' lines)."""
        self.warnings, self.kept = [], []
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError) as error:
            raise ToolError(f"cannot read {self.path}: {getattr(error, 'strerror', None) or error}") from None
        entries = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                entries.append(Entry.from_json(json.loads(line)))
            except (ValueError, TypeError, KeyError):
                self.kept.append(line)
                self.warnings.append(f"{self.path}: line {number} is not a candidate; it is skipped")
        return entries

    def save(self, entries: list[Entry]) -> None:
        lines = [json.dumps(entry.to_json(), ensure_ascii=False) for entry in entries] + self.kept
        text = "".join(line + "\n" for line in lines)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(self.path, text.encode())
        except OSError as error:
            raise ToolError(f"cannot write {self.path}: {error.strerror or error}") from None


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
    repeats a candidate or a line of MEMORY.md (`memory_text`)."""
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
    if not reference:
        raise ToolError("old is required: the id of a candidate, or part of its text")
    pool = [entry for entry in entries if state is None or entry.state == state]
    exact = [entry for entry in pool if entry.id == reference]
    hits = exact or [entry for entry in pool if reference.casefold() in entry.text.casefold()]
    if len(hits) == 1:
        return hits[0]
    if hits:
        listed = "\n".join(describe(entry) for entry in hits)
        raise ToolError(f"{go_quote(reference)} matches {len(hits)} entries; give the id:\n{listed}")
    raise ToolError(f"no candidate matches {go_quote(reference)} (remember action \"candidates\" lists them)")


def describe(entry: Entry) -> str:
    """`c3f9a1 · 2 hits · pinned · Prefers pytest over unittest` (durable lines say `in MEMORY.md`)."""
    parts = [entry.id, f"{entry.hits} hit{'' if entry.hits == 1 else 's'}"]
    if entry.pinned:
        parts.append("pinned")
    if entry.state == DURABLE:
        parts.append("in MEMORY.md")
    elif entry.section != "User":
        parts.append(f"## {entry.section}")
    return " · ".join(parts + [entry.text])


def promote(entry: Entry, memory: MemoryFile, *, project: str | None, now: int) -> None:
    """Write candidate `entry` into MEMORY.md as an `[inferred]` line, under every MEMORY.md rule
    (its notice is the file's, taken with the others); it becomes the tracked durable line, dated
    now like the line itself. MemoryRefusal leaves all as it was."""
    memory.write(Add(entry.text, "inferred", entry.section, project), _day(now))
    entry.state, entry.hits, entry.created = DURABLE, 0, now


def _day(now: int) -> date:
    return datetime.fromtimestamp(now, timezone.utc).date()


def _annotated(memory: MemoryFile, why: str) -> list[str]:
    """The file's notices since they were last taken, the last one (the write just made) with `why`."""
    notices = memory.take_notices()
    notices[-1] = f"{notices[-1]} ({why})"
    return notices


# -- consolidation ------------------------------------------------------------------------------------


@dataclass
class Consolidated:
    """What a consolidation changed: memory notices for MEMORY.md writes, and the candidates
    that expired (their text is not sent anywhere; the person sees it on screen)."""

    memory_notices: list[str] = field(default_factory=list)
    expired: list[Entry] = field(default_factory=list)
    refused: list[tuple[Entry, str]] = field(default_factory=list)


def consolidate(entries: list[Entry], memory: MemoryFile, *, now: int, project: str | None,
                high_water: Mark | None, counting: bool) -> Consolidated:
    """Apply the rules to `entries` (hits already counted, when `counting`): track MEMORY.md's
    model lines, promote candidates with PROMOTE_HITS hits or pinned, demote unpinned lines idle
    DEMOTE_DAYS, expire unpinned candidates idle EXPIRE_DAYS. Without counting (no journal, so no
    hits can be seen) nothing is promoted by hits and nothing is demoted. Changes `entries` in place."""
    today = _day(now)
    done = Consolidated()
    track_memory_lines(entries, memory, now=now, since=high_water)
    for entry in [e for e in entries if e.state == CANDIDATE]:
        if entry.pinned or (counting and entry.hits >= PROMOTE_HITS):
            why = "pinned" if entry.pinned else f"{entry.hits} hits"
            try:
                promote(entry, memory, project=project, now=now)
                done.memory_notices += _annotated(memory, f"promoted: {why}")
            except MemoryRefusal as refusal:
                if "already has that line" in str(refusal):
                    entries.remove(entry)  # said already, in the person's words or the model's
                else:
                    done.refused.append((entry, str(refusal)))
        elif not entry.pinned and entry.idle_days(now) >= EXPIRE_DAYS:
            entries.remove(entry)
            done.expired.append(entry)
    if counting:
        for entry in [e for e in entries if e.state == DURABLE and not e.pinned and e.idle_days(now) >= DEMOTE_DAYS]:
            line = _line_of(entry, memory)
            if line is None:
                continue
            try:
                memory.write(Remove(line, project), today)
            except MemoryRefusal as refusal:   # another project's section: demoted from there
                done.refused.append((entry, str(refusal)))
                continue
            entry.state, entry.hits, entry.since = CANDIDATE, 0, high_water
            done.memory_notices += _annotated(memory, f"back to candidates: no mention in {entry.idle_days(now)} days")
    return done


def track_memory_lines(entries: list[Entry], memory: MemoryFile, *, now: int, since: Mark | None) -> None:
    """Make the DURABLE entries follow MEMORY.md: one for each line the model wrote (tagged),
    dated by the line when it is new; none for lines that are gone (removed by hand, or replaced)."""
    lines = {}
    for section, line in _model_lines(memory):
        lines.setdefault(comparable(normalize(line)), (section, line))
    kept = []
    for entry in entries:
        if entry.state == DURABLE:
            found = lines.pop(comparable(entry.text), None)
            if found is None:
                continue
        kept.append(entry)
    for _key, (section, line) in lines.items():
        written = _DATE.search(line)
        created = _epoch(written.group(1)) if written else now
        kept.append(Entry(new_id(kept), normalize(line), DURABLE, section or "User", created=min(created, now),
                          since=since))
    entries[:] = kept


def _model_lines(memory: MemoryFile) -> list[tuple[str | None, str]]:
    """(section, line) of each line of MEMORY.md the model wrote."""
    try:
        doc = MemoryDoc.parse(read_memory(memory.path) or "")
    except MemoryRefusal:
        return []
    return [(doc.section_name(index), line) for index, line in enumerate(doc.body) if is_tagged(line)]


def _line_of(entry: Entry, memory: MemoryFile) -> str | None:
    for _, line in _model_lines(memory):
        if comparable(normalize(line)) == comparable(entry.text):
            return line
    return None


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

