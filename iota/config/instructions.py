"""An agent's instructions — the first part of its system prompt — as its config gives them.

Here, not in the chat, because a bot's export (iota.bots.portable) and `iota config check` read
them too, and both sit below the chat.
"""

from __future__ import annotations

import os
from pathlib import Path

from iota import paths
from iota.config import settings
from iota.config.settings import Config
from iota.config.entries import AgentConfig
from iota.errors import ConfigError


def read_instructions(loaded: Config, agent: AgentConfig, cwd: Path, override: str | None = None) -> str:
    """The agent's instructions: `override` (-s), else `system:`, else the `system_file:` read now."""
    if override is not None:
        return override
    if agent.system:
        return agent.system
    if agent.system_file:
        path = Path(settings.expand(os.path.expanduser(agent.system_file), cwd))
        source = loaded.sources.get(f"agents.{agent.name}", "config")
        try:
            data, _, opened = paths.read_regular_file(path)
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"config {source}: agents.{agent.name}.system_file: cannot read {path} "
                              f"({getattr(error, 'strerror', None) or error})") from None
        # An untrusted project file's choice was judged inside the project when the config was
        # read; the project is where sandboxed commands write, so a link swapped in since (into
        # ~/.iota, which they cannot read) is judged again by what was opened.
        if agent.name in loaded.project_system_files and not paths.is_under(opened, os.path.realpath(cwd)):
            raise ConfigError(f"config {source}: agents.{agent.name}.system_file: {path} is outside the project "
                              "(a link?); an untrusted project file's system_file must lie inside it")
        return text
    return ""
