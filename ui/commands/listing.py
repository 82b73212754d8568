"""`iota list agents|models|providers|sessions`: what the config defines, and the saved sessions
(`--tree`: as the session tree; `--all`: archived ones too)."""

from __future__ import annotations

import argparse
import os

from iota.errors import EXIT_OK
from ui.commands.shared import load_config


def list_command(args: argparse.Namespace) -> int:
    if args.what == "sessions":
        from datetime import datetime

        from iota.sessions import listing
        from iota.sessions.tree import format_session_tree

        # Archived sessions are hidden unless --all; --tree draws children under their parent.
        infos = listing.list_sessions(include_archived=args.all)
        render = format_session_tree if args.tree else listing.format_session_list
        print(render(infos, datetime.now().astimezone()))
        return EXIT_OK
    loaded = load_config(args)
    print(render_listing(loaded, args.what, args.agent))
    return EXIT_OK


def render_listing(loaded, what: str, agent_name: str | None = None) -> str:
    from iota.config import entries
    from iota.config import settings
    from iota.text import format_size

    rows: list[tuple[str, str]] = []
    if what == "agents":
        title = "Agents:"
        for name, agent in loaded.agents.items():
            details = [agent.mode, agent.model or "(no model)"]
            if agent.description:
                details.append(agent.description)
            rows.append((name, " · ".join(details)))
    elif what == "models":
        title = "Models:"
        names = list(loaded.models)
        if agent_name is not None:
            agent = settings.find_agent(loaded, agent_name)
            names = [name for name in dict.fromkeys([agent.model, *agent.choices]) if name]
            title = f"Models for {agent_name}:"
        for name in names:
            model = settings.resolve_model(loaded, loaded.agents.get(agent_name) or entries.AgentConfig(name="-"), name)
            rows.append((name, f"{model.provider.name}:{model.id} · {format_size(model.context_window)} window"))
    else:
        title = "Providers:"
        for name, provider in loaded.providers.items():
            variable = entries.ENV_KEYS.get(provider.type, "")
            key = entries.CLOUD_CREDENTIALS.get(provider.type) or (
                f"key from ${variable}" if os.environ.get(variable) else "key in config" if provider.key else
                f"no key: set {variable}")
            rows.append((name, " · ".join([provider.type, provider.url or "default url", key])))
    if not rows:
        return f"{title}\n  (none)"
    width = max(len(name) for name, _ in rows)
    return "\n".join([title, *(f"  {name.ljust(width)}  {details}" for name, details in rows)])
