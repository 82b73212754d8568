"""Agent Skills on disk: where they are, how one is read, and the catalog the model is shown.

A skill is a directory holding a `SKILL.md` whose YAML front matter gives `name` (the
directory's name: lowercase letters, digits and single hyphens, at most 64 characters) and
`description` (at most 1024 characters). Skills are looked for in `<project root>/.agents/skills`,
then `~/.iota/skills`, then `~/.agents/skills`, then — for a bot — the bot's own
`~/.iota/bots/<name>/skills` (the ones it writes with the `skill` tool, iota.tools.skill_write),
alphabetically within each; the first skill of a name wins. An invalid skill is skipped with a
one-line warning, never a failure.

The model sees only names and descriptions (the catalog). It reads a skill's body, or a file the
body refers to, through `load_skill` (iota.tools.skills), which never reads outside the skill's
directory. The
directories are looked at again before each message (`skills_signature`, a listing and a stat a
skill: actors.skills_watcher), so a skill added, changed or removed on disk reaches the next request.
"""

from __future__ import annotations

import errno
import os
import re
from typing import NamedTuple
from pathlib import Path

import yaml

from iota import paths, yaml_load
from iota.paths import read_regular_file

CATALOG_CAP = 32 * 1024
SKILL_FILE = "SKILL.md"
SKILL_CAP = 16 * 1024  # the whole SKILL.md, as the `skill` tool writes it (iota.tools.skill_write)
SKILL_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


class Skill(NamedTuple):
    name: str
    description: str
    directory: Path
    # The SKILL.md the catalog was read from (device, inode). A project's skills lie where
    # sandboxed commands write: one that swaps SKILL.md for a link into ~/.iota after the catalog
    # was read would have the body read from there, by iota, outside the sandbox.
    identity: tuple[int, int] | None = None

    @property
    def body(self) -> str:
        """The instructions, from the very SKILL.md the catalog was read from; OSError when it
        was replaced since (the skills are read again before the next message)."""
        data, identity, _ = read_regular_file(self.directory / SKILL_FILE)
        if self.identity is not None and identity != self.identity:
            raise OSError(errno.ESTALE, f"{SKILL_FILE} was replaced since the skills were read; they are read "
                                        "again before the next message")
        return split_front_matter(data.decode("utf-8"))[1]


def skill_roots(project_root: Path, bot: str | None = None) -> list[Path]:
    """Where skills are found, in the order a name is looked up; a bot's own directory comes last."""
    roots = [project_root / ".agents" / "skills", paths.skills_dir(), paths.home() / ".agents" / "skills"]
    return roots + ([bot_skills_dir(bot)] if bot else [])


def bot_skills_dir(bot: str) -> Path:
    """`~/.iota/bots/<name>/skills`: the one directory the `skill` tool writes."""
    return paths.bots_dir() / bot / "skills"


def discover(project_root: Path, bot: str | None = None) -> tuple[list[Skill], list[str]]:
    """The valid skills in discovery order, and a warning for each one skipped."""
    skills: dict[str, Skill] = {}
    warnings: list[str] = []
    for root in skill_roots(project_root, bot):
        if not root.is_dir():
            continue
        for directory in sorted(p for p in root.iterdir() if p.is_dir()):
            try:
                skill = read_skill(directory)
            except ValueError as error:
                warnings.append(f"skill {directory} skipped: {error}")
                continue
            if skill.name in skills:
                warnings.append(f"skill {directory} skipped: {skill.name} is already defined in "
                                f"{skills[skill.name].directory}")
                continue
            skills[skill.name] = skill
    return list(skills.values()), warnings


def skills_signature(roots: list[Path]) -> tuple:
    """What changes when a skill is added, removed or edited under `roots`: each directory's
    entries with their SKILL.md's stamp (mtime, size, inode). A listing and a stat a skill, no
    reading, so it is cheap enough to take before every message."""
    signature = []
    for root in roots:
        try:
            names = sorted(os.listdir(root))
        except OSError:
            continue
        for name in names:
            try:
                status = os.stat(root / name / SKILL_FILE)
            except OSError:
                status = None
            stamp = (status.st_mtime_ns, status.st_size, status.st_ino) if status is not None else None
            signature.append((str(root), name, stamp))
    return tuple(signature)


def read_skill(directory: Path) -> Skill:
    path = directory / SKILL_FILE
    try:
        data, identity, _ = read_regular_file(path)
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise ValueError("no SKILL.md") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"SKILL.md cannot be read ({error})") from None
    front, _ = split_front_matter(text)
    try:
        meta = yaml_load.safe_load(front) if front is not None else None
    except yaml.YAMLError:
        raise ValueError("its front matter is not valid YAML") from None
    if not isinstance(meta, dict):
        raise ValueError("SKILL.md has no front matter with name: and description:")
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not SKILL_NAME.fullmatch(name) or len(name) > 64:
        raise ValueError("name: must be lowercase letters, digits and hyphens, at most 64 characters")
    if name != directory.name:
        raise ValueError(f'name: "{name}" does not match its directory "{directory.name}"')
    if not isinstance(description, str) or not description.strip() or len(description) > 1024:
        raise ValueError("description: must be 1 to 1024 characters")
    return Skill(name, description.strip(), directory, identity)


def split_front_matter(text: str) -> tuple[str | None, str]:
    """(front matter or None, body) of a Markdown file fenced with `---` lines."""
    lines = text.split("\n")
    if lines and lines[0].strip() == "---":
        for index in range(1, len(lines)):
            if lines[index].strip() == "---":
                return "\n".join(lines[1:index]), "\n".join(lines[index + 1:]).lstrip("\n")
    return None, text


def catalog(skills: list[Skill]) -> str:
    """The system prompt's skills segment, or "" when there are no skills."""
    if not skills:
        return ""
    head = ('These skills give you instructions for particular tasks. When one fits the task, call load_skill '
            'with its name as "skill" to read it; use "file" for files it refers to, and run its scripts with '
            "the shell tool.\n\n<available_skills>\n")
    from html import escape  # its entity table is large: only a catalog with skills needs it

    entries, size, omitted = [], len(head), 0
    for skill in skills:
        entry = (f"<skill>\n<name>{escape(skill.name, quote=False)}</name>\n"
                 f"<description>{escape(skill.description, quote=False)}</description>\n</skill>\n")
        if size + len(entry.encode()) > CATALOG_CAP:
            omitted += 1
            continue
        entries.append(entry)
        size += len(entry.encode())
    note = f"<note>{omitted} more skill(s) omitted: catalog size cap reached</note>\n" if omitted else ""
    return head + "".join(entries) + note + "</available_skills>"
