"""The `skill` tool: a bot writes its own skills, `~/.iota/bots/<name>/skills/<slug>/SKILL.md`.

    create   a new skill: name (its slug), description, body (the steps)
    update   one of the bot's own skills: a new description, a new body, or both

A skill is what the bot learned to do, step by step, in the Agent Skills format the other skill
directories use (iota.tools.skills): YAML front matter with `name` and `description`, then the
body. The bot writes one after a workflow worth repeating — proposed in the upkeep after a turn
(actors.upkeep), or when the person asks — and reads it back later through `load_skill`; the
hot reload puts it in the next request's catalog.

A skill joins the catalog of every later request, so it is an instruction to the bot's future
self, which a file or a tool's output could dictate. So the model's own create or update asks the
person every time, whatever `auto_write` says (Allow once / Deny, the whole SKILL.md shown, as a
schedule's create does), and the upkeep's tool (`propose`, see `proposer`) writes nothing into
the skills directory: its skill waits in `~/.iota/bots/<name>/skill-proposals/<slug>/SKILL.md`,
out of every catalog, until the person accepts it in `/skills` (actors.commands.skill), which
writes it with every check of a write, or drops it.

What holds for every write: it is shown in full in the transcript (the whole file, the changed
lines marked), the file it replaces is kept beside it (`SKILL.md.prev`), and a line that looks
like a key, token or password is refused (iota.memory.secrets) — a skill is plain text that goes
into later requests. The slug is checked before it becomes a path (lowercase letters, digits and
single hyphens), and the directory is judged after its symbolic links are resolved, so a link
planted under the skills (or proposals) directory cannot carry a write outside it. A skill of
another directory (the project's, the person's) is never written: `update` refuses it, and
`create` refuses a name already taken anywhere, which the other skill would shadow.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from iota.memory.document import check_secret
from iota.memory.lines import MemoryRefusal, breaks_line, go_quote
from iota.sessions.bundle import write_atomically
from iota.tools.base import ApprovalRequest, Tool, ToolResult
from iota.errors import ToolError
from iota.tools.code.write import unified_diff
from iota.skills import SKILL_CAP, SKILL_FILE, SKILL_NAME, Skill, split_front_matter

DESCRIPTION_CAP = 1024          # as the format allows
ACTIONS = ("create", "update")
PROPOSALS = "skill-proposals"   # beside the bot's skills directory, never in a catalog

HEADLESS_REFUSAL = (
    "skill was not executed: a skill you write joins every later request, so the user approves each one, and "
    "this non-interactive run cannot ask. Tell the user the skill you would write."
)

DESCRIPTION = (
    "Write one of your own skills: a procedure you can follow again, step by step, which you read back with "
    "load_skill (the skills catalog lists it from the next message on). Create one after a multi-step piece "
    "of work that succeeded and is worth repeating (how this project is released, how its flaky test is "
    "diagnosed), or when the user asks; update one when a step changed or failed. name is the skill's slug "
    "(lowercase letters, digits and hyphens, e.g. \"release-checklist\"); description says in one sentence what "
    "it does and when to use it; body is the steps in Markdown. Only your own skills can be updated, and the user "
    "approves each write, reading the whole file. Never put secrets, keys or tokens in a skill."
)

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(ACTIONS),
                   "description": "create a new skill, or update one of yours."},
        "name": {"type": "string", "description": "The skill's slug: lowercase letters, digits and hyphens."},
        "description": {"type": "string", "description": "What the skill does and when to use it, one sentence "
                                                         "(required for create)."},
        "body": {"type": "string", "description": "The steps, in Markdown (required for create)."},
    },
    "required": ["action", "name"],
}


class SkillTool(Tool):
    name = "skill"
    description = DESCRIPTION
    parameters = PARAMETERS

    def __init__(self, directory: Path, skills: Callable[[], list[Skill]] = list, *, propose: bool = False):
        """`directory` is the bot's own skills directory; `skills` gives every skill the chat
        knows now (all directories), for the names a create may not take. With `propose` (the
        upkeep's) a write waits in the proposals directory beside it until the person accepts it."""
        self.directory = Path(directory)
        self.proposals = self.directory.parent / PROPOSALS
        self.propose = propose
        self._skills = skills
        self._notices: list[str] = []

    def proposer(self) -> SkillTool:
        """The upkeep's skill tool: the same skills, its writes proposals; the notices are shared."""
        tool = SkillTool(self.directory, self._skills, propose=True)
        tool._notices = self._notices
        return tool

    def target(self, args: dict[str, Any]) -> str:
        return " ".join(_text(args, key).strip() for key in ("action", "name") if _text(args, key).strip())

    def take_notices(self) -> list[str]:
        """`skill: created release-checklist (…/SKILL.md)` for each write since the last call."""
        notices, self._notices[:] = list(self._notices), []
        return notices

    def approval_request(self, args: dict[str, Any]) -> ApprovalRequest | None:
        """The model's own create or update asks every time, whatever auto_write says, showing the
        whole SKILL.md; arguments that cannot make a skill ask nothing (the call fails with the
        reason). The upkeep's proposals ask nothing: they wait for /skills."""
        if self.propose:
            return None
        try:
            slug, text, current = self._prepare(args)
        except ToolError:
            return None
        verb = "create" if current is None else "update"
        return ApprovalRequest(self.name, self.name, text, action=f"{verb} skill {go_quote(slug)}",
                               grant=json.dumps(args, sort_keys=True, default=str), ask_every_time=True,
                               refusal=HEADLESS_REFUSAL)

    async def run(self, args: dict[str, Any]) -> ToolResult:
        # No await: the write is one small file, synchronous, so it cannot be cancelled half-way.
        slug, text, current = self._prepare(args)
        if self.propose:
            return self._write_proposal(slug, text, current)
        return self._write(slug, text, current)

    def _prepare(self, args: dict[str, Any]) -> tuple[str, str, str | None]:
        """(slug, the whole SKILL.md to write, the one it replaces), or the ToolError that says why not."""
        action = _text(args, "action").strip()
        if action not in ACTIONS:
            raise ToolError(f'action must be "create" or "update", got {go_quote(action)}')
        slug = check_slug(_text(args, "name").strip())
        current = _read(_folder(self.directory, slug) / SKILL_FILE)
        if action == "create":
            self._check_free(slug, current)
            description, body = _required(args, "description"), _required(args, "body")
        else:
            if current is None:
                raise ToolError(self._not_mine(slug))
            old_description, old_body = _parts(current)
            description = _text(args, "description").strip() or old_description
            body = _text(args, "body") if _text(args, "body").strip() else old_body
            if not _text(args, "description").strip() and not _text(args, "body").strip():
                raise ToolError("update needs a new description, a new body, or both")
        return slug, render_skill(slug, description, body), current

    def _write(self, slug: str, text: str, current: str | None) -> ToolResult:
        folder = _folder(self.directory, slug)
        path = folder / SKILL_FILE
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _folder(self.directory, slug)  # judged again once it exists: a link put there meanwhile is refused
            if current is not None:
                write_atomically(folder / f"{SKILL_FILE}.prev", current.encode())
            write_atomically(path, text.encode())
        except OSError as error:
            raise ToolError(f"cannot write {path}: {error.strerror or error}") from None
        verb = "created" if current is None else "updated"
        self._notices.append(f"skill: {verb} {slug} ({path})")
        display = unified_diff(f"skills/{slug}/{SKILL_FILE}", current or "", text, context=10_000)
        return ToolResult(f"{verb} skill {slug} in {path}; it is in the skills catalog from the next message",
                          display=display)

    # -- the upkeep's proposals ----------------------------------------------------------------------

    def _write_proposal(self, slug: str, text: str, current: str | None) -> ToolResult:
        folder = _folder(self.proposals, slug)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _folder(self.proposals, slug)
            write_atomically(folder / SKILL_FILE, text.encode())
        except OSError as error:
            raise ToolError(f"cannot write {folder / SKILL_FILE}: {error.strerror or error}") from None
        verb = "a new skill" if current is None else "a change to your skill"
        self._notices.append(f"skill: proposed {slug} ({verb}); /skills accepts or drops it")
        display = unified_diff(f"skills/{slug}/{SKILL_FILE}", current or "", text, context=10_000)
        return ToolResult(f"proposed {verb} {slug}: it waits for the user to accept it in /skills, and is not in "
                          "the skills catalog until then", display=display)

    def pending(self) -> list[Proposal]:
        """The proposals waiting for the person, by name; an unreadable one is left out."""
        try:
            names = sorted(os.listdir(self.proposals))
        except OSError:
            return []
        found = []
        for slug in names:
            try:
                text = _read(_folder(self.proposals, check_slug(slug)) / SKILL_FILE)
                current = _read(_folder(self.directory, slug) / SKILL_FILE)
            except ToolError:
                continue
            if text is not None:
                found.append(Proposal(slug, _parts(text)[0], text, current))
        return found

    def accept(self, proposal: Proposal) -> ToolResult:
        """Write the proposal as the bot's skill, with every check of a write, then remove it."""
        description, body = _parts(proposal.text)
        action = "update" if proposal.current is not None else "create"
        slug, text, current = self._prepare({"action": action, "name": proposal.slug, "description": description,
                                             "body": body})
        result = self._write(slug, text, current)
        self.drop(proposal)
        return result

    def drop(self, proposal: Proposal) -> None:
        shutil.rmtree(_folder(self.proposals, proposal.slug), ignore_errors=True)

    def _check_free(self, slug: str, current: str | None) -> None:
        if current is not None:
            raise ToolError(f'you already have a skill named "{slug}": use action "update" to change it')
        for skill in self._skills():
            if skill.name == slug:
                raise ToolError(f'a skill named "{slug}" already exists in {skill.directory.parent}; it would hide '
                                "yours. Choose another name")

    def _not_mine(self, slug: str) -> str:
        for skill in self._skills():
            if skill.name == slug:
                return (f'"{slug}" is not one of your skills (it is in {skill.directory.parent}, which you do not '
                        "write); create one of your own under another name")
        return f'you have no skill named "{slug}": use action "create"'


@dataclass(frozen=True)
class Proposal:
    """A skill the upkeep proposed: its SKILL.md, and the bot's skill it would replace (or None)."""

    slug: str
    description: str
    text: str
    current: str | None


def _folder(directory: Path, slug: str) -> Path:
    """The skill's directory under `directory`, refused when its real path (links resolved) leaves
    it, or when SKILL.md in it is a link."""
    root = os.path.realpath(directory)
    folder = os.path.realpath(directory / slug)
    if os.path.commonpath([root, folder]) != root or folder == root:
        raise ToolError(f"{directory.name}/{slug} leads outside your {directory.name} directory ({directory}); "
                        "nothing was written")
    if os.path.islink(Path(folder) / SKILL_FILE):
        raise ToolError(f"{directory.name}/{slug}/{SKILL_FILE} is a link; nothing was written")
    return directory / slug


def check_slug(slug: str) -> str:
    if not slug:
        raise ToolError("missing required argument: name")
    if not SKILL_NAME.fullmatch(slug) or len(slug) > 64:
        raise ToolError(f"name must be lowercase letters, digits and single hyphens, at most 64 characters "
                        f"(e.g. \"release-checklist\"), got {go_quote(slug)}")
    return slug


def render_skill(slug: str, description: str, body: str) -> str:
    """SKILL.md for the skill, or the ToolError that says why it cannot be written: a description
    over its cap, a control character, a secret, a file over SKILL_CAP. The text is read back as
    a skill before it is accepted, so what is written is always a valid one."""
    description = " ".join(description.split())
    if not description:
        raise ToolError("description is empty")
    if len(description) > DESCRIPTION_CAP:
        raise ToolError(f"description is at most {DESCRIPTION_CAP} characters; this one is {len(description)}")
    lines = [line.rstrip() for line in body.replace("\r\n", "\n").split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    if not lines:
        raise ToolError("body is empty: write the steps")
    for line in [description, *lines]:
        if any(breaks_line(char) for char in line):
            raise ToolError(f"a skill is text without control characters: got {go_quote(line)}")
        try:
            check_secret(line, "a skill")
        except MemoryRefusal as refusal:
            raise ToolError(str(refusal)) from None
    front = yaml.safe_dump({"name": slug, "description": description}, sort_keys=False, allow_unicode=True,
                           width=10_000)
    text = f"---\n{front}---\n\n" + "\n".join(lines) + "\n"
    written_front, _ = split_front_matter(text)
    if yaml.safe_load(written_front or "") != {"name": slug, "description": description}:
        raise ToolError("description cannot be written as the front matter of a skill; reword it")
    size = len(text.encode())
    if size > SKILL_CAP:
        raise ToolError(f"a skill is at most {SKILL_CAP // 1024} KiB and this one is {size} bytes: keep to the "
                        "steps, and split a long procedure into two skills")
    return text


def _parts(text: str) -> tuple[str, str]:
    """(description, body) of a SKILL.md as written."""
    front, body = split_front_matter(text)
    try:
        meta = yaml.safe_load(front) if front is not None else None
    except yaml.YAMLError:
        meta = None
    description = meta.get("description") if isinstance(meta, dict) else None
    return (description if isinstance(description, str) else ""), body


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise ToolError(f"cannot read {path}: {getattr(error, 'strerror', None) or error}") from None


def _required(args: dict[str, Any], key: str) -> str:
    value = _text(args, key)
    if not value.strip():
        raise ToolError(f"missing required argument: {key}")
    return value


def _text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    return value if isinstance(value, str) else ""
