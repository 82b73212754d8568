"""`inherit:` on a bot: the other bots whose memory it also sees.

    agents:
      main:     {mode: bot, model: gpt}
      reviewer: {mode: bot, model: gpt, inherit: [main]}

The reviewer's requests carry main's MEMORY.md and memory directory too, read-only and marked as
inherited (iota.memory.layers). Inheritance combines memory only: no tools, no permissions. It
is transitive — a bot inheriting reviewer sees main's memory as well — so a name that is not a
bot, or a chain that comes back round to where it started, is refused when the config is loaded
(`iota config check` and every start), rather than found out in the middle of a chat.

The functions take the config's agent entries (anything with `mode` and `inherit`), so this
module needs nothing from the settings that call it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def problem(agents: Mapping[str, Any], name: str) -> str | None:
    """What is wrong with agent `name`'s `inherit:`, as the config error says it; None when nothing is."""
    agent = agents[name]
    if not agent.inherit:
        return None
    if agent.mode != "bot":
        return f"inherit is for mode: bot, and agents.{name} is mode: {agent.mode}"
    bots = [other for other, entry in agents.items() if entry.mode == "bot"]
    for wanted in agent.inherit:
        if wanted not in bots:
            return f'unknown bot "{wanted}" (configured bots: {", ".join(bots)})'
    cycle = _cycle(agents, [name])
    return f"inheritance cycle: {' → '.join(cycle)}" if cycle else None


def _cycle(agents: Mapping[str, Any], path: list[str]) -> list[str] | None:
    """The first cycle reached from the end of `path` through `inherit:`, as the names along it."""
    entry = agents.get(path[-1])
    for wanted in entry.inherit if entry is not None else ():
        if wanted in path:
            return [*path[path.index(wanted):], wanted]
        cycle = _cycle(agents, [*path, wanted])
        if cycle:
            return cycle
    return None


def inherited_bots(agents: Mapping[str, Any], name: str) -> tuple[str, ...]:
    """The bots whose memory bot `name` sees besides its own: those its `inherit:` names, in that
    order, each followed by what it inherits in turn; each bot once. The config load has refused
    unknown names and cycles."""
    found: list[str] = []

    def visit(bot: str) -> None:
        entry = agents.get(bot)
        for wanted in entry.inherit if entry is not None else ():
            if wanted != name and wanted not in found:
                found.append(wanted)
                visit(wanted)

    visit(name)
    return tuple(found)
