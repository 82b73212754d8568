"""`iota agents show <name>`: an agent's own memory as a chat here would send it — its files in
`~/.iota/agents/<name>/memory`, their sizes against the caps and their scopes — the counterpart
of `iota bots show` (ui.commands.bots) for an agent in `mode: agent`.

    Agent coder
      config     mode: agent · model m
      memory     /home/me/.iota/agents/coder/memory
    Memory in /work/iota (session scopes not applied: no session):
      own  memory/SOUL.md   0.8 / 8 KiB
           memory/WORK.md   not sent: include-session (fix-*) does not match this chat
      in all 0.8 / 24 KiB
"""

from __future__ import annotations

import argparse
from pathlib import Path

from iota.errors import EXIT_OK, ConfigError
from ui.commands.shared import load_config


def add_agents_parser(commands: argparse._SubParsersAction) -> None:
    agents = commands.add_parser("agents", help="show an agent's own memory")
    agents.add_argument("-c", "--config", type=Path, default=argparse.SUPPRESS, help="read this config file alone")
    actions = agents.add_subparsers(dest="action", required=True)
    show = actions.add_parser("show", help="an agent's memory files, their sizes and scopes")
    show.add_argument("name")


def agents_command(args: argparse.Namespace) -> int:
    loaded = load_config(args)
    print(render_show(loaded, args.name, Path.cwd()))
    return EXIT_OK


def render_show(loaded, name: str, cwd: Path) -> str:
    from iota import paths
    from iota.memory.agent import agent_memory
    from iota.memory.kinds import MEMORY_DIR
    from iota.memory.report import describe

    agent = loaded.agents.get(name)
    if agent is None:
        raise ConfigError(f'unknown agent "{name}" (agents: {", ".join(sorted(loaded.agents)) or "none"})')
    model = f" · model {agent.model}" if agent.model else ""
    if agent.mode != "agent":
        note = "see `iota bots show`" if agent.mode == "bot" else "only mode: agent has a memory of its own"
        return f"Agent {name}\n  config     mode: {agent.mode}{model}\n  memory     none ({note})"
    project = paths.project_root(cwd)
    memory = agent_memory(name, project, None)
    if memory is None:
        return (f"Agent {name}\n  config     mode: agent{model}\n  memory     none (the name cannot be a directory "
                "under ~/.iota/agents: letters, digits, \".\", \"_\" or \"-\", at most 64 characters)")
    warnings = memory.refresh()
    directory = memory.bot_dir / MEMORY_DIR
    lines = [f"Agent {name}", f"  config     mode: agent{model}", f"  memory     {directory}",
             f"Memory in {project} (for a chat not yet in a session: include-session files are not sent):"]
    if memory.views():
        lines += [f"  {line}" for line in describe(memory).splitlines()]
    else:
        lines.append(f"  No memory files. Every *.md file in {directory} goes out with this agent's sessions.")
    lines += [f"  ⚠ {warning}" for warning in warnings]
    return "\n".join(lines)
