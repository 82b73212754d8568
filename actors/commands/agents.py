"""`/agents`: the agents this bot defined for later use (`delegate` define), and `/agents remove
<name>` to delete one — the file goes, and the model is no longer offered it from the next request.

A defined agent is never wider than its bot (iota.bots.defined_agents) and the person approved
each one as it was written; this is where they look at them again and take one back.
"""

from __future__ import annotations

from actors.lane import Lane
from iota.bots.bot import bot_dir
from iota.bots.defined_agents import agents_dir, describe_definitions, remove_definition
from iota.errors import BotError

AGENTS_HELP = "the agents this bot defined for its helpers: /agents [remove <name>]"


async def agents_command(lane: Lane, argument: str) -> None:
    if lane.setup.mode != "bot":
        lane.notice("/agents lists the agents a bot defined; this chat is not a bot", warning=True)
        return
    directory = bot_dir(lane.setup.agent.name)
    verb, _, name = argument.strip().partition(" ")
    if verb == "remove":
        try:
            path = remove_definition(directory, name.strip())
        except BotError as error:
            lane.notice(f"/agents: {error}", warning=True)
            return
        lane.setup.defined_agents.pop(name.strip(), None)
        tool = lane.toolbox.get("delegate")
        if tool is not None:
            tool.forget(name.strip())
        lane.notice(f"Removed the agent {name.strip()} ({path})")
        return
    if verb:
        lane.notice("/agents: want /agents or /agents remove <name>", warning=True)
        return
    lines = describe_definitions(directory)
    lane.notice("\n".join([f"Agents defined by {lane.setup.agent.name} ({agents_dir(directory)}):", *lines])
                if lines else f"{lane.setup.agent.name} has defined no agents.")
