"""A bot's MEMORY.md as a document, and the three line edits the `remember` tool makes to it.

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

Nothing here touches the disk: `apply` turns the file's text and an edit into the new text, or
raises `MemoryRefusal` with the sentence the model reads. The reading and writing around it live
in iota.memory.file, the prompt block in iota.memory.block.

The caps measure the body only, as its lines joined with newlines plus a final newline, so a
person's front matter never counts against what the model may write.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from iota.memory.provenance import comparable
from iota.memory.secrets import secret_kind
from iota.tools.base import ToolError

MEMORY_FILE = "MEMORY.md"
MEMORY_PREV_FILE = "MEMORY.md.prev"
MEMORY_CAP = 8 * 1024          # the body may not grow past this
MEMORY_SOFT_CAP = 6 * 1024     # past this a write succeeds and asks for consolidation
MEMORY_LINE_CAP = 500          # one entry, its `- `, tag and date included

USER = "User"
PROJECT = "Project:"
OPEN_THREADS = "Open threads"
SOURCES = ("user", "inferred")

USER_LINE_REFUSAL = "that line was written by the user; ask them to change it"


class MemoryRefusal(ToolError):
    """An edit iota will not make; the message is what the model reads, and nothing was written."""


# -- quoting --------------------------------------------------------------------------------------

_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
               "\\": "\\\\", '"': '\\"'}


def go_quote(text: str) -> str:
    """`text` in double quotes the way Go's `%q` writes it: backslash escapes for quotes, backslashes
    and control characters, `\\uXXXX` for anything else that does not print. The refusals quote what
    the model sent this way, so an invisible character in it shows up instead of hiding."""
    out = ['"']
    for char in text:
        if char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    out.append('"')
    return "".join(out)


# -- sizes ----------------------------------------------------------------------------------------

def byte_length(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def kib(size: int) -> str:
    """`size` bytes in KiB with one decimal, rounded: 6200 → `6.1`."""
    tenths = (size * 10 + 512) // 1024
    return f"{tenths // 10}.{tenths % 10}"


def soft_warning(size: int) -> str | None:
    """The consolidation sentence for a body of `size` bytes, or None below the soft cap. The write
    result carries it, and so does the memory flush's notice."""
    if size < MEMORY_SOFT_CAP:
        return None
    return (f"MEMORY.md is at {size * 100 // MEMORY_CAP}% — consolidate soon (merge related lines with replace, "
            "drop stale ones with remove)")


# -- lines ----------------------------------------------------------------------------------------

def split_lines(text: str) -> list[str]:
    """The file's lines without their endings (`\\n` or `\\r\\n`); a final newline ends the last line
    rather than starting an empty one."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def join_lines(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def heading(line: str) -> str | None:
    """The name of a `## <name>` line, else None (`# title` and `### sub` are not sections)."""
    return line[3:].strip() if line.startswith("## ") else None


def is_entry(line: str) -> bool:
    return line.startswith("- ")


def is_tagged(line: str) -> bool:
    """An entry the tool wrote, so one the model may change."""
    return line.startswith(("- [user]", "- [inferred]"))


def breaks_line(char: str) -> bool:
    """A character that has no place inside one line of the file: a control character other than a
    tab (a lone `\\r`, an escape), or a Unicode line or paragraph separator."""
    return (char != "\t" and unicodedata.category(char) == "Cc") or char in "\u2028\u2029"


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


def make_line(text: str, source: str, today: str) -> str:
    """`- [source] text (today)`, or the refusal for an empty text, a line break the folding leaves, an
    over-long line or a secret. The checks judge the line as it would land in the file."""
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
    kind = secret_kind(text)
    if kind is not None:
        # The refusal does not repeat the line: the secret would only travel further.
        raise MemoryRefusal(
            f"that text looks like {kind}; secrets do not belong in MEMORY.md — it is plain text, sent with "
            "every request and may be committed. Nothing was written. Save where the secret is kept (an "
            "environment variable, a keychain entry), never the secret itself")
    return line


def _comparable(line: str) -> tuple[str, ...]:
    """An entry's text for spotting duplicates: tag, date, case, punctuation, articles and the
    word "user" ignored, so "The user likes tea." repeats "User likes tea"."""
    return comparable(normalize(line))


# -- sections -------------------------------------------------------------------------------------

def parse_section(raw: str) -> str:
    """The heading name `add` files under: `User` (also for an empty argument), `Project: <name>` or
    `Open threads`, a leading `## ` tolerated. The argument becomes a heading line, so a newline or
    any other control character is refused rather than folded: it could write an untagged line of its
    own that would later pass for the person's."""
    raw = raw.strip()
    if not raw:
        return USER
    if any(breaks_line(char) for char in raw):
        raise MemoryRefusal(f"section is one heading line, without newlines or control characters: got {go_quote(raw)}")
    name = raw[3:].strip() if raw.startswith("## ") else raw
    if name in (USER, OPEN_THREADS):
        return name
    if name.startswith(PROJECT) and name[len(PROJECT):].strip():
        return f"{PROJECT} {name[len(PROJECT):].strip()}"
    raise MemoryRefusal(f'section must be "User", "Project: <name>" or "Open threads", got {go_quote(name)}')


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


def _rank(name: str) -> int | None:
    """Where a conventional section goes: User, then projects, then open threads. A section the
    person added has no rank: the tool neither orders nor creates it."""
    if name == USER:
        return 0
    if name.startswith(PROJECT):
        return 1
    if name == OPEN_THREADS:
        return 2
    return None


# -- the document ---------------------------------------------------------------------------------

@dataclass
class MemoryDoc:
    front: list[str] | None     # the lines between the `---` fences; None when there are none
    body: list[str]

    @classmethod
    def parse(cls, text: str) -> MemoryDoc:
        """Front matter is a first line `---` closed by a later `---`; without both, all is body."""
        lines = split_lines(text)
        if lines and lines[0].rstrip() == "---":
            for end in range(1, len(lines)):
                if lines[end].rstrip() == "---":
                    return cls(lines[1:end], lines[end + 1:])
        return cls(None, lines)

    @classmethod
    def new(cls, bot: str) -> MemoryDoc:
        return cls(None, [f"# {bot} memory", ""])

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
                f"MEMORY.md says it belongs to bot {go_quote(owner)} (frontmatter bot:), not {go_quote(bot)}; "
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
        own = _rank(name)
        for at, existing in enumerate(self.body):
            name_here = heading(existing)
            rank = _rank(name_here) if name_here is not None else None
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
            raise MemoryRefusal(f"no line contains {go_quote(old)}: MEMORY.md has no lines yet")
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
        """`MEMORY.md ## <name>` for the section line `index` is in, `MEMORY.md` ahead of the first."""
        start = self.section_start(index) if self.body else None
        return MEMORY_FILE if start is None else f"{MEMORY_FILE} ## {heading(self.body[start])}"

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


Edit = Add | Replace | Remove


@dataclass(frozen=True)
class Applied:
    """What a successful edit produced."""

    file: str        # the whole new file
    old_body: str    # the body before and after: the person's diff
    new_body: str
    result: str      # what the model reads: where it went, the size, the section as it is now
    notice: str      # what the conversation records: `memory: MEMORY.md ## User +1 line: …`


def apply(current: str | None, bot: str, edit: Edit, today: str) -> Applied:
    """`edit` applied to the file's text (`None`: there is no file yet) for bot `bot` on `today`
    (`YYYY-MM-DD`), or MemoryRefusal."""
    doc = MemoryDoc.parse(current) if current is not None else MemoryDoc.new(bot)
    doc.check_owner(bot)
    old_body = doc.body_text() if current is not None else ""

    if isinstance(edit, Add):
        check_scope(edit.section, edit.made_in)
        line = make_line(edit.text, edit.source, today)
        duplicate = doc.find_duplicate(edit.section, line)
        if duplicate is not None:
            raise MemoryRefusal(
                f"{doc.label_at(duplicate)} already has that line: {doc.body[duplicate]} — nothing was written; "
                "to change it, call replace with old set to part of it")
        at, change, shown = doc.insert(edit.section, line), "+1 line", line
    elif isinstance(edit, Replace):
        line = make_line(edit.text, edit.source, today)
        at = doc.find_one(edit.old)
        check_scope(doc.section_name(at), edit.made_in)
        was, doc.body[at] = doc.body[at], line
        change, shown = "~1 line", f"{line} (was: {was})"
    else:
        at = doc.find_one(edit.old)
        check_scope(doc.section_name(at), edit.made_in)
        shown = doc.body.pop(at)
        # The line above the removed one is in its section (the heading, at worst).
        at, change = max(at - 1, 0), "-1 line"

    new_body = doc.body_text()
    old_size, new_size = byte_length(old_body), byte_length(new_body)
    # The cap guards growth only: a replace or remove that does not grow the body always goes
    # through, so the way out of a full file (or one a person overfilled) is never refused.
    shrinks = not isinstance(edit, Add) and new_size <= old_size
    if new_size > MEMORY_CAP and not shrinks:
        raise MemoryRefusal(
            f"MEMORY.md would be {kib(new_size)} KiB, over its {MEMORY_CAP // 1024} KiB cap; nothing was written. "
            "Consolidate first — merge related lines with replace, drop stale ones with remove — then retry."
            f"\n\nMEMORY.md now ({kib(old_size)} / {MEMORY_CAP // 1024} KiB):\n{current or ''}")

    place = doc.label_at(at)
    result = f"saved to {place} ({kib(new_size)} / {MEMORY_CAP // 1024} KiB)"
    section = doc.excerpt(at)
    if section:
        result += f"\n\n{section}"
    warning = soft_warning(new_size)
    if warning:
        result += f"\n\n{warning}"
    shown = shown[2:] if shown.startswith("- ") else shown
    return Applied(file=doc.render(bot, today), old_body=old_body, new_body=new_body, result=result,
                   notice=f"memory: {place} {change}: {shown}")
