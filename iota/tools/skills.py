"""The `load_skill` tool: a skill's instructions, or a file beside them, read when the model asks.

The skills themselves — where they live, how one is read, the catalog — are iota.skills.
"""

from __future__ import annotations

import os
from typing import Any

from iota.errors import ToolError
from iota.paths import is_under, read_regular_file
from iota.skills import Skill
from iota.tools.base import Tool, ToolResult


class LoadSkill(Tool):
    name = "load_skill"
    description = ("Read a skill's instructions (its SKILL.md body), or with `file` a file inside the "
                   "skill's directory that the instructions refer to.")
    parameters = {
        "type": "object",
        "properties": {
            "skill": {"type": "string", "description": "The skill's name, as listed in available_skills."},
            "file": {"type": "string", "description": "A path relative to the skill's directory (optional)."},
        },
        "required": ["skill"],
    }
    parallel = True
    read_only = True

    def __init__(self, skills: list[Skill]):
        self.update(skills)

    def update(self, skills: list[Skill]) -> None:
        """The skills found again (a hot reload): the next call reads from these."""
        self._skills = {skill.name: skill for skill in skills}

    def target(self, args: dict[str, Any]) -> str:
        return " ".join(str(args[key]) for key in ("skill", "file") if args.get(key))

    async def run(self, args: dict[str, Any]) -> ToolResult:
        name = args.get("skill")
        if not name:
            raise ToolError("missing required argument: skill")
        skill = self._skills.get(name)
        if skill is None:
            raise ToolError(f'no skill named "{name}" (available: {", ".join(self._skills) or "none"})')
        file = args.get("file")
        if not file:
            try:
                return ToolResult(skill.body)
            except (OSError, UnicodeDecodeError) as error:
                raise ToolError(f"cannot read skill {name}: {getattr(error, 'strerror', None) or error}") from None
        base = os.path.realpath(skill.directory)
        target = os.path.realpath(os.path.join(base, file))
        if os.path.commonpath([base, target]) != base:
            raise ToolError(f"file is outside the skill's directory: {file}")
        try:
            # Judged again by what the open reached: a project's skill lies where sandboxed
            # commands write, and a link swapped in after the check above would have iota read,
            # outside the sandbox, whatever it names (a bot's memory in ~/.iota).
            data, _, opened = read_regular_file(target)
        except FileNotFoundError:
            raise ToolError(f"skill {name} has no file {file}") from None
        except OSError as error:
            raise ToolError(f"cannot read {file}: {error.strerror or error}") from None
        if not is_under(opened, base):
            raise ToolError(f"file is outside the skill's directory: {file}")
        try:
            return ToolResult(data.decode("utf-8"))
        except UnicodeDecodeError:
            raise ToolError(f"{file} is not UTF-8 text") from None
