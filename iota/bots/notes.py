"""A bot's notes: durable Markdown documents in `~/.iota/bots/<name>/notes/` — a design brief, the
requirements, a report — that the bot keeps up to date and the person opens and edits as files.

    notes/design-brief.md
        ---
        title: Design brief
        summary: What the new CI pipeline must do
        ---

        # Design brief
        …

A note's name is its file name without `.md` (made from its title when the bot creates it:
lower case, words joined by `-`). The system prompt carries only the catalog — name, title,
summary and the date the file last changed — and the body is read on demand, so a library of
long documents costs the prompt a line each. A file a person writes by hand needs no front
matter: its title is then its first `# heading` (else its name) and its summary its first line
of text.

Notes are found by listing the directory, never by joining the model's words onto a path, so
no name can reach outside it. Each write replaces the file atomically (a note that is a link —
to a file kept in git — is written through the link, as MEMORY.md is).
"""

from __future__ import annotations

import datetime
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import yaml

from iota import yaml_load
from iota.bots.records import clip
from iota.memory.document import go_quote
from iota.sessions.meta import write_atomically
from iota.errors import ToolError
from iota.skills import split_front_matter

NOTES_DIR = "notes"
BODY_LIMIT = 128 * 1024        # bytes of one note
CATALOG_LIMIT = 50             # notes named in the prompt; the rest are counted
SUMMARY_LIMIT = 200
_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


@dataclass(frozen=True)
class Note:
    name: str
    title: str
    summary: str
    updated: datetime.date
    path: Path


class NotesLibrary:
    def __init__(self, bot_dir: Path):
        self.dir = bot_dir / NOTES_DIR

    def list(self) -> list[Note]:
        """Every note, by name. A file that cannot be read is left out."""
        try:
            paths = sorted(self.dir.glob("*.md"))
        except OSError:
            return []
        notes = []
        for path in paths:
            if not _NAME.fullmatch(path.stem) or not path.is_file():
                continue
            try:
                notes.append(_read_note(path))
            except (OSError, UnicodeDecodeError):
                continue
        return notes

    def find(self, reference: object) -> Note:
        name = reference.strip().lower().removesuffix(".md") if isinstance(reference, str) else ""
        if not name:
            raise ToolError("note is required: its name (the notes list shows them)")
        for note in self.list():
            if note.name == name:
                return note
        raise ToolError(f"no note is named {go_quote(name)} (the notes list shows them)")

    def catalog(self) -> str:
        """The system prompt's notes segment ("" when there are none)."""
        notes = self.list()
        if not notes:
            return ""
        lines = [f"- {note.name}: {note.title}" + (f" — {note.summary}" if note.summary else "")
                 + f" (updated {note.updated.isoformat()})" for note in notes[:CATALOG_LIMIT]]
        if len(notes) > CATALOG_LIMIT:
            lines.append(f"- … and {len(notes) - CATALOG_LIMIT} more (the notes tool lists them all)")
        return ("<notes>\nYour notes: Markdown documents you keep and the user reads and edits too. Read one with "
                "the notes tool before you rely on it or change it.\n" + "\n".join(lines) + "\n</notes>")

    # -- the changes --

    def create(self, title: object, summary: object, body: object) -> str:
        heading = _one_line(title, "title", required=True)
        name = name_for(heading)
        if (self.dir / f"{name}.md").exists():
            raise ToolError(f"a note named {go_quote(name)} exists already: update it, or choose another title")
        self._write(self.dir / f"{name}.md", heading, _one_line(summary, "summary"), _body(body))
        return f"Created note {name} ({self.dir / (name + '.md')})."

    def update(self, reference: object, *, title: object = None, summary: object = None, body: object = None,
               append: object = None) -> str:
        note = self.find(reference)
        if body is not None and append is not None:
            raise ToolError("give body (the whole new text) or append (text to add at the end), not both")
        if title is None and summary is None and body is None and append is None:
            raise ToolError("nothing to update: give title, summary, body or append")
        _, current = split_front_matter(note.path.read_text(encoding="utf-8"))
        if append is not None:
            current = current.rstrip("\n") + "\n\n" + _body(append)
        elif body is not None:
            current = _body(body)
        self._write(note.path, _one_line(title, "title", required=True) if title is not None else note.title,
                    _one_line(summary, "summary") if summary is not None else note.summary, current)
        return f"Updated note {note.name}."

    def read(self, reference: object) -> str:
        note = self.find(reference)
        return note.path.read_text(encoding="utf-8", errors="replace")

    def delete(self, reference: object) -> str:
        note = self.find(reference)
        try:
            note.path.unlink()
        except OSError as error:
            raise ToolError(f"cannot delete {note.path}: {error.strerror}") from None
        return f"Deleted note {note.name}."

    def _write(self, path: Path, title: str, summary: str, body: str) -> None:
        front = yaml.safe_dump({"title": title, "summary": summary} if summary else {"title": title},
                               allow_unicode=True, sort_keys=False, width=10_000)
        text = f"---\n{front}---\n\n{body.rstrip()}\n"
        if len(text.encode()) > BODY_LIMIT:
            raise ToolError(f"the note would be {len(text.encode()) // 1024} KiB; a note is at most "
                            f"{BODY_LIMIT // 1024} KiB — split it")
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            write_atomically(path, text.encode())
        except OSError as error:
            raise ToolError(f"cannot write {path}: {error.strerror}") from None


def name_for(title: str) -> str:
    """A note's file name from its title: `Design brief (v2)` → `design-brief-v2`, `Café` → `cafe`."""
    plain = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()  # Ü → U
    words = re.findall(r"[a-z0-9]+", plain.lower())
    name = "-".join(words)[:64].strip("-")
    if not name:
        raise ToolError(f"title {go_quote(title)} has no letters or digits to name the note's file after")
    return name


def _read_note(path: Path) -> Note:
    front, body = split_front_matter(path.read_text(encoding="utf-8"))
    try:
        meta = yaml_load.safe_load(front) if front is not None else None
    except yaml.YAMLError:
        meta = None
    meta = meta if isinstance(meta, dict) else {}
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    heading = next((line.lstrip("#").strip() for line in lines if line.startswith("# ")), "")
    first_text = next((line for line in lines if not line.startswith("#")), "")
    title = meta.get("title") if isinstance(meta.get("title"), str) else heading or path.stem
    summary = meta.get("summary") if isinstance(meta.get("summary"), str) else first_text
    updated = datetime.date.fromtimestamp(path.stat().st_mtime)
    return Note(path.stem, " ".join(title.split()), " ".join(summary.split())[:SUMMARY_LIMIT], updated, path)


def _one_line(value: object, what: str, *, required: bool = False) -> str:
    if value is None or value == "":
        if required:
            raise ToolError(f"{what} is required")
        return ""
    return clip(value, SUMMARY_LIMIT, what)


def _body(value: object) -> str:
    if not isinstance(value, str):
        raise ToolError("the note's text must be a string of Markdown")
    return value
