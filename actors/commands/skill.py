"""`/skills <name> [instructions]`: run a skill — its SKILL.md body, then anything written after
the name, is sent as the next message (before whatever else is queued). Bare `/skills` lists
them (actors.commands.registry)."""

from __future__ import annotations

import trio

from actors.lane import Lane, UserMessage


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
