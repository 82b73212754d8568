"""Hot reload of skills: a skill added, changed or removed on disk reaches the next request.

Before each message is sent (a lane `before_send` hook, agent and bot mode), every skill
directory is listed and each SKILL.md stat'ed (iota.tools.skills.skills_signature); when that
changed since the last look, the skills are discovered again: the catalog the system prompt
carries follows, `load_skill` reads from the new set (it joins the tools if there was none), and
a dim line says what changed (`skill release-checklist added`). A warning about a skill that
cannot be read is shown once. Nothing is read while nothing changed, and the prompt — with the
provider's cache of it — stays as it was.

Checking at the moment of sending, as the memory watcher does, costs a listing and a stat a
skill, and needs no watcher thread: what matters is only what the next request carries.
"""

from __future__ import annotations

from actors.lane import Lane
from iota.chat import ChatSetup
from iota.messages import Message
from iota.tools.skills import LoadSkill
from iota.skills import discover, skill_roots, skills_signature


class SkillsWatcher:
    def __init__(self, setup: ChatSetup):
        self.setup = setup
        self.bot = setup.agent.name if setup.mode == "bot" else None
        self.roots = skill_roots(setup.project_root, self.bot)
        self._signature = skills_signature(self.roots)
        self._warned = set(setup.warnings)

    async def before_send(self, lane: Lane, user: Message) -> None:
        signature = skills_signature(self.roots)
        if signature == self._signature:
            return
        before, stamps = {skill.name: skill for skill in self.setup.skills}, _stamps(self._signature)
        self._signature = signature
        skills, warnings = discover(self.setup.project_root, self.bot)
        self.setup.skills = skills
        loader = lane.toolbox.get(LoadSkill.name)
        if isinstance(loader, LoadSkill):
            loader.update(skills)
        elif skills:
            lane.toolbox.add(LoadSkill(skills))
        now = _stamps(signature)
        after = {skill.name: skill for skill in skills}
        for name, skill in after.items():
            if name not in before:
                lane.notice(f"skill {name} added")
            elif before[name].directory != skill.directory or stamps.get(_key(skill)) != now.get(_key(skill)):
                lane.notice(f"skill {name} changed")
        for name in before:
            if name not in after:
                lane.notice(f"skill {name} removed")
        for warning in warnings:
            if warning not in self._warned:
                self._warned.add(warning)
                lane.notice(warning, warning=True)


def _stamps(signature: tuple) -> dict[tuple[str, str], object]:
    return {(root, name): stamp for root, name, stamp in signature}


def _key(skill) -> tuple[str, str]:
    return str(skill.directory.parent), skill.directory.name
