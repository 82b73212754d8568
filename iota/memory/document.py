"""A bot's memory file as a document, and the edits the `remember` tool makes to it.

    ---                      front matter: `bot:` and `updated:` are iota's, other lines are kept
    bot: coder
    updated: 2026-10-02
    ---
    # coder memory           the body: everything after the front matter
    ## User                  sections are scopes (see iota.memory.block for who sees what)
    - [user] Reply in Chinese (2026-09-30)     an entry the model wrote: tag, text, date
    - Never rebase                             an entry the person wrote: no tag, hands off

One entry is one line. The model's lines open with `[user]` (the person said it) or `[inferred]`
(the model concluded it, or read it in a tool's output) and close with the date it wrote them. A
line without a tag is the person's, and the model may not change or remove it; it is told to ask
instead. Everything else in the file (a title, sections the tool does not know, blank lines, free
text) is kept exactly as it was.

The same rules hold for every file the model writes line by line — MEMORY.md, memory/USER.md,
memory/BRIEF.md — each with its own sections (iota.memory.kinds). memory/SOUL.md is changed a
section at a time instead: a `Patch` replaces the body of one `##` section and leaves every other
line of the file as it was.

Nothing here touches the disk: `apply` turns the file's text and an edit into the new text, or
raises `MemoryRefusal` with the sentence the model reads. The reading and writing around it live
in iota.memory.file, the prompt blocks in iota.memory.block and iota.memory.layers.

The caps measure the body only, as its lines joined with newlines plus a final newline, so a
person's front matter never counts against what the model may write.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from iota.memory.kinds import MEMORY_MD, PROJECT, FileKind
from iota.memory.lines import (MemoryRefusal, breaks_line, byte_length, go_quote, heading, is_entry, is_tagged,
                               join_lines, kib, split_lines)
from iota.memory.provenance import comparable
from iota.memory.secrets import secret_kind

MEMORY_FILE = MEMORY_MD.name
MEMORY_CAP = 8 * 1024          # the body may not grow past this
MEMORY_SOFT_CAP = 6 * 1024     # past this a write succeeds and asks for consolidation
MEMORY_LINE_CAP = 500          # one entry, its `- `, tag and date included

USER = "User"
SOURCES = ("user", "inferred")

USER_LINE_REFUSAL = "that line was written by the user; ask them to change it"


# -- sizes ----------------------------------------------------------------------------------------

def soft_warning(size: int, label: str = MEMORY_MD.label) -> str | None:
    """The consolidation sentence for a body of `size` bytes, or None below the soft cap. The write
    result carries it, and so does the memory flush's notice."""
    if size < MEMORY_SOFT_CAP:
        return None
    return (f"{label} is at {size * 100 // MEMORY_CAP}% — consolidate soon (merge related lines with replace, "
            "drop stale ones with remove)")


# -- lines ----------------------------------------------------------------------------------------

_DATE_SUFFIX = re.compile(r" \([0-9]{4}-[0-9]{2}-[0-9]{2}\)$")


def normalize(text: str) -> str:
    """The entry text as the tool files it: lines folded into one (each trimmed, blank ones dropped,
    joined with a space), and a leading `- `, a leading tag and a trailing `(YYYY-MM-DD)` dropped,
    since those are the tool's to write. Folding comes first so a newline cannot plant a line of its
    own (`x\\n- planted` becomes the one entry `x - planted`)."""
    text = " ".join(part.strip() for part in text.split("\n") if part.strip())
    if text.startswith("- "):
        text = text[2:].strip()
    for tag in ("[user]", "[inferred]"):
        if text.startswith(tag):
            text = text[len(tag):].lstrip()
            break
    return _DATE_SUFFIX.sub("", text).rstrip()


def make_line(text: str, source: str, today: str, label: str = MEMORY_MD.label) -> str:
    """`- [source] text (today)`, or the refusal for an empty text, a line break the folding leaves, an
    over-long line or a secret. The checks judge the line as it would land in the file `label`."""
    text = normalize(text)
    if not text:
        raise MemoryRefusal("text is empty")
    if any(breaks_line(char) for char in text):
        raise MemoryRefusal(f"text is one line, without control characters: got {go_quote(text)}")
    line = f"- [{source}] {text} ({today})"
    size = byte_length(line)
    if size > MEMORY_LINE_CAP:
        raise MemoryRefusal(
            f"a memory line is at most {MEMORY_LINE_CAP} bytes and this one is {size}: shorten it to the one "
            "fact you need to recall, or split it into separate lines")
    check_secret(text, label)
    return line


def check_secret(text: str, label: str) -> None:
    kind = secret_kind(text)
    if kind is not None:
        # The refusal does not repeat the line: the secret would only travel further.
        raise MemoryRefusal(
            f"that text looks like {kind}; secrets do not belong in {label} — it is plain text, sent with "
            "every request and may be committed. Nothing was written. Save where the secret is kept (an "
            "environment variable, a keychain entry), never the secret itself")


def _comparable(line: str) -> tuple[str, ...]:
    """An entry's text for spotting duplicates: tag, date, case, punctuation, articles and the
    word "user" ignored, so "The user likes tea." repeats "User likes tea"."""
    return comparable(normalize(line))


def section_body(text: str, name: str, label: str) -> list[str]:
    """A patch's `text` as the lines of section `name`'s new body: trailing blanks trimmed from each
    line, blank lines at either end dropped. A line may not be a `## ` heading (it would start a
    section of its own, outside the patch), break the line, or hold a secret."""
    lines = [line.rstrip() for line in split_lines(text)]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    for line in lines:
        if any(breaks_line(char) for char in line):
            raise MemoryRefusal(f"text is the body of ## {name}, lines without control characters: got "
                                f"{go_quote(line)}")
        if heading(line) is not None:
            raise MemoryRefusal(f"text is the body of ## {name}; its line {go_quote(line)} would start another "
                                "section — patch each section on its own")
        check_secret(line, label)
    return lines


# -- sections -------------------------------------------------------------------------------------

def parse_section(raw: str, kind: FileKind = MEMORY_MD) -> str:
    """The heading name an edit of a `kind` file goes under. For a file of lines: one of its
    sections (the first, also for an empty argument; `Project: <name>` in MEMORY.md), a leading
    `## ` tolerated. For SOUL.md: any heading, which is required. The argument becomes a heading
    line, so a newline or any other control character is refused rather than folded: it could
    write an untagged line of its own that would later pass for the person's."""
    raw = raw.strip()
    if not raw and not kind.by_section:
        return kind.sections[0]
    if any(breaks_line(char) for char in raw):
        raise MemoryRefusal(f"section is one heading line, without newlines or control characters: got {go_quote(raw)}")
    name = raw[3:].strip() if raw.startswith("## ") else raw
    if kind.by_section:
        if not name:
            raise MemoryRefusal(f"section is required: the ## heading of the {kind.name} section to replace")
        return name
    if name in kind.sections and name != PROJECT:
        return name
    if PROJECT in kind.sections and name.startswith(PROJECT) and name[len(PROJECT):].strip():
        return f"{PROJECT} {name[len(PROJECT):].strip()}"
    choices = ['"Project: <name>"' if section == PROJECT else f'"{section}"' for section in kind.sections]
    listed = f"{', '.join(choices[:-1])} or {choices[-1]}" if len(choices) > 1 else choices[0]
    raise MemoryRefusal(f"section must be {listed}, got {go_quote(name)}")


def project_of(name: str) -> str | None:
    """The project a `Project: <name>` heading is about, else None."""
    return name[len(PROJECT):].strip() if name.startswith(PROJECT) else None


def check_scope(section: str | None, made_in: str | None) -> None:
    """Refuse an edit in another project's section. A chat sees its own project's section only,
    so an edit elsewhere is blind at best — and at worst a file of this project planting a line
    that another project's chats will read as their own."""
    about = project_of(section) if section is not None else None
    if about is None or about == made_in:
        return
    if made_in is None:
        raise MemoryRefusal(f"## {section} is a project's section, and this chat runs in no project: its lines "
                            f"can be added or changed only from there. Nothing was written")
    raise MemoryRefusal(f"## {section} is another project's section, and this chat runs in project "
                        f"{go_quote(made_in)}: its lines can be added or changed only from there. Nothing was "
                        f'written; file it under "{PROJECT} {made_in}", or under "{USER}" if it holds everywhere')


def _rank(name: str, kind: FileKind) -> int | None:
    """Where a conventional section goes (MEMORY.md: User, then projects, then open threads). A
    section the person added has no rank: the tool neither orders nor creates it."""
    for rank, section in enumerate(kind.sections):
        if name == section or (section == PROJECT and name.startswith(PROJECT)):
            return rank
    return None


# -- the document ---------------------------------------------------------------------------------

@dataclass
class MemoryDoc:
    front: list[str] | None     # the lines between the `---` fences; None when there are none
    body: list[str]
    kind: FileKind = field(default=MEMORY_MD, compare=False)

    @classmethod
    def parse(cls, text: str, kind: FileKind = MEMORY_MD) -> MemoryDoc:
        """Front matter is a first line `---` closed by a later `---`; without both, all is body."""
        lines = split_lines(text)
        if lines and lines[0].rstrip() == "---":
            for end in range(1, len(lines)):
                if lines[end].rstrip() == "---":
                    return cls(lines[1:end], lines[end + 1:], kind)
        return cls(None, lines, kind)

    @classmethod
    def new(cls, bot: str, kind: FileKind = MEMORY_MD) -> MemoryDoc:
        return cls(None, [kind.new_title(bot), ""], kind)

    def owner(self) -> str | None:
        """The front matter's `bot:`, quotes dropped; None when it has none."""
        for line in self.front or ():
            key, colon, value = line.partition(":")
            if colon and key.strip() == "bot":
                return value.strip().strip("\"'")
        return None

    def check_owner(self, bot: str) -> None:
        owner = self.owner()
        if owner is not None and owner != bot:
            raise MemoryRefusal(
                f"{self.kind.label} says it belongs to bot {go_quote(owner)} (frontmatter bot:), not {go_quote(bot)}; "
                "nothing was written — ask the user to fix the file")

    def body_text(self) -> str:
        return join_lines(self.body)

    def render(self, bot: str, today: str) -> str:
        """The whole file, `bot:` and `updated:` rewritten and the person's other front lines kept."""
        kept = [line for line in self.front or () if line.partition(":")[0].strip() not in ("bot", "updated")]
        front = join_lines([f"bot: {bot}", f"updated: {today}", *kept])
        return f"---\n{front}---\n{self.body_text()}"

    def find_section(self, name: str) -> int | None:
        return next((index for index, line in enumerate(self.body) if heading(line) == name), None)

    def section_end(self, start: int) -> int:
        """The index after the last line of the section whose heading is at `start`."""
        return next((index for index in range(start + 1, len(self.body)) if heading(self.body[index]) is not None),
                    len(self.body))

    def section_start(self, index: int) -> int | None:
        """The heading line of the section that line `index` is in; None ahead of the first section."""
        return next((at for at in range(index, -1, -1) if heading(self.body[at]) is not None), None)

    def insert(self, name: str, line: str) -> int:
        """Files `line` under section `name` and returns its index. In an existing section it goes
        after the last entry (or right under the heading), so the blank line that separates it from
        the next section stays where it was. A missing section is created ahead of the first
        conventional section that ranks after it, else at the end after a blank line."""
        start = self.find_section(name)
        if start is not None:
            entries = [index for index in range(start + 1, self.section_end(start)) if is_entry(self.body[index])]
            at = entries[-1] + 1 if entries else start + 1
            self.body.insert(at, line)
            return at
        own = _rank(name, self.kind)
        for at, existing in enumerate(self.body):
            name_here = heading(existing)
            rank = _rank(name_here, self.kind) if name_here is not None else None
            if rank is not None and own is not None and rank > own:
                self.body[at:at] = [f"## {name}", line, ""]
                return at + 1
        while self.body and not self.body[-1].strip():
            self.body.pop()
        if self.body:
            self.body.append("")
        self.body += [f"## {name}", line]
        return len(self.body) - 1

    def find_one(self, old: str) -> int:
        """The index of the one entry containing `old`. Every entry is a candidate, tagged or not, so
        a hit on the person's line is refused by name rather than passed over for a worse match."""
        if not old:
            raise MemoryRefusal("old is required: a substring of the line to change")
        entries = [index for index, line in enumerate(self.body) if is_entry(line)]
        hits = [index for index in entries if old in self.body[index]]
        if len(hits) == 1:
            if not is_tagged(self.body[hits[0]]):
                raise MemoryRefusal(f"{USER_LINE_REFUSAL}: {self.body[hits[0]]}")
            return hits[0]
        if hits:
            listed = "\n".join(self.body[index] for index in hits)
            raise MemoryRefusal(f"{go_quote(old)} matches {len(hits)} lines; make old long enough to name exactly "
                                f"one:\n{listed}")
        if not entries:
            raise MemoryRefusal(f"no line contains {go_quote(old)}: {self.kind.label} has no lines yet")
        listed = "\n".join(self.body[index] for index in entries)
        raise MemoryRefusal(f"no line contains {go_quote(old)}; the lines are:\n{listed}")

    def find_duplicate(self, name: str, line: str) -> int | None:
        """An entry saying what `line` says, in section `name` or anywhere global. Another project's
        section does not count: the same fact can hold for two projects."""
        wanted = _comparable(line)
        section: str | None = None      # None: ahead of the first section, which is global
        for index, existing in enumerate(self.body):
            if heading(existing) is not None:
                section = heading(existing)
                continue
            in_scope = section is None or section == name or project_of(section) is None
            if in_scope and is_entry(existing) and _comparable(existing) == wanted:
                return index
        return None

    def section_name(self, index: int) -> str | None:
        """The name of the section line `index` is in; None ahead of the first section."""
        start = self.section_start(index)
        return heading(self.body[start]) if start is not None else None

    def label_at(self, index: int) -> str:
        """`MEMORY.md ## <name>` for the section line `index` is in, `MEMORY.md` ahead of the first
        (another file by its label: `memory/BRIEF.md ## Goals`)."""
        start = self.section_start(index) if self.body else None
        label = self.kind.label
        return label if start is None else f"{label} ## {heading(self.body[start])}"

    def section_text(self, name: str) -> str:
        """The body of section `name` as it reads now ("" when there is no such section)."""
        start = self.find_section(name)
        return "" if start is None else "\n".join(self.body[start + 1:self.section_end(start)]).strip()

    def replace_section(self, name: str, lines: list[str]) -> tuple[int, list[str] | None]:
        """Section `name`'s body replaced by `lines`, every other line of the file left as it was:
        the blank lines that open and close the old body stay, so the section is parted from its
        neighbours as before. A missing section is added at the end, after a blank line. Returns
        the heading's index and the old body, blank edges dropped (None: the section is new)."""
        start = self.find_section(name)
        if start is None:
            while self.body and not self.body[-1].strip():
                self.body.pop()
            if self.body:
                self.body.append("")
            self.body += [f"## {name}", *lines]
            return len(self.body) - len(lines) - 1, None
        end = self.section_end(start)
        old = self.body[start + 1:end]
        content = [index for index, line in enumerate(old) if line.strip()]
        if not content:
            self.body[start + 1:end] = [*lines, *old]
            return start, []
        first, last = content[0], content[-1]
        self.body[start + 1:end] = [*old[:first], *lines, *old[last + 1:]]
        return start, old[first:last + 1]

    def excerpt(self, index: int) -> str:
        """The section around line `index` as it reads now, heading included, trailing blanks dropped."""
        if not self.body:
            return ""
        index = min(index, len(self.body) - 1)
        start = self.section_start(index)
        if start is None:
            start, end = 0, next((at for at, line in enumerate(self.body) if heading(line) is not None),
                                 len(self.body))
        else:
            end = self.section_end(start)
        lines = self.body[start:end]
        while lines and not lines[-1].strip():
            lines.pop()
        return "\n".join(lines)


# -- the edits ------------------------------------------------------------------------------------

# Every edit names the project the chat that makes it runs in (the project directory's name, the
# one the memory block is scoped to; None outside any): a `## Project: X` section is X's alone.


@dataclass(frozen=True)
class Add:
    text: str
    source: str      # "user" | "inferred"
    section: str     # a heading name from parse_section
    made_in: str | None = None


@dataclass(frozen=True)
class Replace:
    old: str
    text: str
    source: str
    made_in: str | None = None


@dataclass(frozen=True)
class Remove:
    old: str
    made_in: str | None = None


@dataclass(frozen=True)
class Patch:
    """SOUL.md's one edit: the body of section `section` becomes `text` (the section is added when
    the file has none of that name)."""

    section: str     # a heading name from parse_section
    text: str


Edit = Add | Replace | Remove | Patch


@dataclass(frozen=True)
class Applied:
    """What a successful edit produced."""

    file: str        # the whole new file
    old_body: str    # the body before and after: the person's diff
    new_body: str
    result: str      # what the model reads: where it went, the size, the section as it is now
    notice: str      # what the conversation records: `memory: MEMORY.md ## User +1 line: …`


def apply(current: str | None, bot: str, edit: Edit, today: str, kind: FileKind = MEMORY_MD) -> Applied:
    """`edit` applied to the text of a `kind` file (`None`: there is no file yet) for bot `bot` on
    `today` (`YYYY-MM-DD`), or MemoryRefusal."""
    doc = MemoryDoc.parse(current, kind) if current is not None else MemoryDoc.new(bot, kind)
    doc.check_owner(bot)
    old_body = doc.body_text() if current is not None else ""
    if kind.by_section != isinstance(edit, Patch):
        raise MemoryRefusal(f'{kind.name} changes a whole section at a time: use action "patch"' if kind.by_section
                            else f'action "patch" is for SOUL.md; {kind.name} changes a line at a time')

    if isinstance(edit, Add):
        check_scope(edit.section, edit.made_in)
        line = make_line(edit.text, edit.source, today, kind.label)
        duplicate = doc.find_duplicate(edit.section, line)
        if duplicate is not None:
            raise MemoryRefusal(
                f"{doc.label_at(duplicate)} already has that line: {doc.body[duplicate]} — nothing was written; "
                "to change it, call replace with old set to part of it")
        at, change, shown = doc.insert(edit.section, line), "+1 line", line
    elif isinstance(edit, Replace):
        line = make_line(edit.text, edit.source, today, kind.label)
        at = doc.find_one(edit.old)
        check_scope(doc.section_name(at), edit.made_in)
        was, doc.body[at] = doc.body[at], line
        change, shown = "~1 line", f"{line} (was: {was})"
    elif isinstance(edit, Remove):
        at = doc.find_one(edit.old)
        check_scope(doc.section_name(at), edit.made_in)
        shown = doc.body.pop(at)
        # The line above the removed one is in its section (the heading, at worst).
        at, change = max(at - 1, 0), "-1 line"
    else:
        lines = section_body(edit.text, edit.section, kind.label)
        at, was = doc.replace_section(edit.section, lines)
        change, shown = ("added", _one_line(lines)) if was is None else \
            ("rewritten", f"{_one_line(lines)} (was: {_one_line(was)})")

    new_body = doc.body_text()
    old_size, new_size = byte_length(old_body), byte_length(new_body)
    label = kind.label
    # The cap guards growth only: a replace or remove that does not grow the body always goes
    # through, so the way out of a full file (or one a person overfilled) is never refused.
    shrinks = not isinstance(edit, Add) and new_size <= old_size
    if new_size > MEMORY_CAP and not shrinks:
        raise MemoryRefusal(
            f"{label} would be {kib(new_size)} KiB, over its {MEMORY_CAP // 1024} KiB cap; nothing was written. "
            + ("Shorten the section, or another one, first." if kind.by_section else
               "Consolidate first — merge related lines with replace, drop stale ones with remove — then retry.")
            + f"\n\n{label} now ({kib(old_size)} / {MEMORY_CAP // 1024} KiB):\n{current or ''}")

    place = doc.label_at(at)
    result = f"saved to {place} ({kib(new_size)} / {MEMORY_CAP // 1024} KiB)"
    section = doc.excerpt(at)
    if section:
        result += f"\n\n{section}"
    warning = soft_warning(new_size, label)
    if warning:
        result += f"\n\n{warning}"
    shown = shown[2:] if shown.startswith("- ") else shown
    return Applied(file=doc.render(bot, today), old_body=old_body, new_body=new_body, result=result,
                   notice=f"memory: {place} {change}: {shown}")


def _one_line(lines: list[str]) -> str:
    """A section's body on one line, for the notice: its lines joined with ` / `."""
    return " / ".join(line.strip() for line in lines if line.strip()) or "(empty)"
