"""`/skills`: the skills of this project, and a bot's skill proposals to accept or drop;
`/skills <name> [instructions]` runs a skill — its SKILL.md body, then anything written after the
name, is sent as the next message (before whatever else is queued).

A proposal is a skill the bot's upkeep wrote (iota.tools.skill_write, `propose`): it waits in
`~/.iota/bots/<name>/skill-proposals`, out of every catalog, until the person reads the whole
SKILL.md here and accepts it (it then joins the next request's catalog) or drops it."""

from __future__ import annotations

import trio

from actors.events import Panel
from actors.lane import Lane, UserMessage
from iota.errors import ToolError
from iota.memory.lines import go_quote
from iota.tools.skill_write import SkillTool

NO_SKILLS = "No skills found (.agents/skills, ~/.iota/skills, ~/.agents/skills)."
REVIEW = ("Accept (it joins the catalog from the next message)", "Drop", "Decide later")


async def show_skills(lane: Lane, argument: str) -> None:
    """`/skills`: the skills, then the proposals waiting, and a pick to review one;
    `/skills <name> [instructions]` runs one."""
    if argument:
        await run_skill(lane, argument)
        return
    lines = [f"{skill.name}  {skill.description}" for skill in lane.setup.skills]
    tool = lane.toolbox.get(SkillTool.name)
    proposals = tool.pending() if isinstance(tool, SkillTool) else []
    if proposals:
        lines += ["", "Proposed by the upkeep, waiting for you (not in the catalog):"]
        lines += [f"{proposal.slug}  {proposal.description}" for proposal in proposals]
    lane.emit(Panel("Skills", "\n".join(lines) or NO_SKILLS))
    if not proposals:
        return
    index = await lane.ask("Review a proposed skill? (Esc: no)", tuple(p.slug for p in proposals))
    if index is None:
        return
    proposal = proposals[index]
    kind = "new skill" if proposal.current is None else "change to your skill"
    answer = await lane.ask(f"Proposed {kind} {go_quote(proposal.slug)}", REVIEW, detail=proposal.text)
    if answer == 0:
        try:
            tool.accept(proposal)
        except ToolError as error:
            lane.notice(f"skill {proposal.slug} not accepted: {error}", warning=True)
            return
        for line in tool.take_notices():
            lane.notice(line)
    elif answer == 1:
        tool.drop(proposal)
        lane.notice(f"skill: dropped the proposal {proposal.slug}")


async def run_skill(lane: Lane, argument: str) -> None:
    name, *rest = argument.split(maxsplit=1)
    skills = {skill.name: skill for skill in lane.setup.skills}
    skill = skills.get(name)
    if skill is None:
        lane.notice(f'no skill named "{name}" (available: {", ".join(skills) or "none"})', warning=True)
        return
    try:
        body = await trio.to_thread.run_sync(lambda: skill.body)
    except (OSError, UnicodeDecodeError) as error:
        lane.notice(f"cannot read skill {name}: {getattr(error, 'strerror', None) or error}", warning=True)
        return
    message = "\n\n".join(part for part in (body.strip(), rest[0].strip() if rest else "") if part)
    if not message:
        lane.notice(f"skill {name} has no instructions to send", warning=True)
        return
    lane.inbox.put_first(UserMessage(message))
