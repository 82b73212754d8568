"""`iota bots new <name>`: a bot's entry made from three answers — the model, the toolsets, and
how unattended it runs — and added to the config with the comment-keeping block editor
(iota.config.blocks), so nothing else of the person's file changes.

    agents:
      scout:
        mode: bot
        model: gpt
        tools:
          code: {auto_write: true}
          shell: {sandbox: auto}

How unattended, from the most asking to the least (the middle one is the default: it never
waits where the sandbox works, and asks where it does not):

    ask        edits wait for your yes; commands run in the sandbox, and ask where there is none
    confined   edits land without a yes; commands run in the sandbox, and ask where there is none
    full       nothing waits for a yes, not even a command where the sandbox is unavailable
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iota.bots.bot import bot_dir
from iota.bots.portable import config_check
from iota.config import blocks
from iota.config.settings import Config
from iota.errors import BotError

TOOLSETS = {
    "code": "read, search and change the project's files",
    "shell": "run commands, confined to the project by the sandbox",
}
DEFAULT_TOOLSETS = ("code", "shell")
UNATTENDED = {
    "ask": "edits wait for your yes; commands run in the sandbox, and ask where there is none",
    "confined": "edits land without a yes; commands run in the sandbox, and ask where there is none",
    "full": "nothing waits for a yes, not even a command where the sandbox is unavailable",
}
DEFAULT_UNATTENDED = "confined"


@dataclass(frozen=True)
class NewBot:
    name: str
    model: str
    toolsets: tuple[str, ...]
    unattended: str

    def entry(self) -> dict[str, Any]:
        tools: dict[str, Any] = {}
        if "code" in self.toolsets:
            tools["code"] = {"auto_write": True} if self.unattended in ("confined", "full") else {}
        if "shell" in self.toolsets:
            tools["shell"] = {"sandbox": "auto", **({"auto_run": True} if self.unattended == "full" else {})}
        entry: dict[str, Any] = {"mode": "bot", "model": self.model}
        if tools:
            entry["tools"] = tools
        return entry


def check_free(name: str, config: Config, config_path: Path) -> None:
    """Refuse a name any agent has (in the config loaded, or in the file to be written), or whose
    bot directory exists; and one that cannot name a bot at all (bot_dir says why)."""
    directory = bot_dir(name)
    agent = config.agents.get(name)
    if agent is not None:
        raise BotError(f"agents.{name} exists already (mode: {agent.mode}); pick another name")
    if config_path.exists() and name in blocks.entries(config_path, blocks.read_text(config_path), "agents"):
        raise BotError(f"agents.{name} exists already in {config_path}; pick another name")
    if os.path.lexists(directory):
        raise BotError(f"{directory} exists already (a bot of that name ran before); pick another name, "
                       f"or `iota bots rm {name}` first")


def model_choices(config: Config) -> list[str]:
    """The configured models, the default agent's first: the likeliest answer leads."""
    names = list(config.models)
    default = config.agents.get("default")
    if default is not None and default.model in names:
        names.remove(default.model)
        names.insert(0, default.model)
    return names


def parse_model(answer: str, config: Config) -> str:
    choices = model_choices(config)
    if answer not in choices:
        raise BotError(f'unknown model "{answer}" (models: {", ".join(choices) or "none configured"})')
    return answer


def parse_toolsets(answer: str) -> tuple[str, ...]:
    """`code,shell`, `code`, `none` (spaces and commas both separate)."""
    words = [word for word in answer.replace(",", " ").split() if word]
    if words == ["none"]:
        return ()
    unknown = [word for word in words if word not in TOOLSETS]
    if unknown or not words:
        raise BotError(f'unknown toolset "{" ".join(unknown) or answer}" (toolsets: {", ".join(TOOLSETS)}, or none)')
    return tuple(name for name in TOOLSETS if name in words)


def parse_unattended(answer: str) -> str:
    if answer not in UNATTENDED:
        raise BotError(f'unknown answer "{answer}" (how unattended: {", ".join(UNATTENDED)})')
    return answer


def add_bot(bot: NewBot, config_path: Path, cwd: Path) -> None:
    """Write the entry into the `agents:` block of `config_path`, checked to load first."""
    if not config_path.exists():
        config_path.write_text("")
    blocks.add_entry(config_path, "agents", bot.name, bot.entry(), config_check(cwd))
