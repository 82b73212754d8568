"""Agents a bot defines for later use (seed 003's agents that create agents):
`~/.iota/bots/<bot>/agents/<name>.yaml`.

    entry, text = check_definition(args, creator, config, directory)   # BotError says why not
    save_definition(directory, entry.name, text)                        # after the person said yes
    defined_agents(directory, creator, config)                           # name → entry, for `delegate`
    remove_definition(directory, name)                                   # `/agents remove <name>`

A definition is an agent entry — `system`, `model`, `tools` as in the config — recorded with its
creator and when it was made. It is never wider than its creator: narrowing it by the creator's
entry (iota.config.delegation, the rule every helper runs under) must change nothing, else it is
refused with the keys where it would get more. It is stored as the person approved it and, when
it runs, narrowed by its caller again, so a creator whose config was narrowed since gives no more
than it has now. A file that no longer reads as a valid entry, or that is now wider than its
creator, is skipped with a warning, never run.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from iota.config.audit import audit_document
from iota.config.delegation import wider_keys
from iota.config.entries import AgentConfig, BadValue
from iota.config.settings import Config, resolve_model
from iota.errors import BotError, ConfigError
from iota.sessions.bundle import write_atomically
from iota.yaml_load import safe_load

AGENTS = "agents"
SUFFIX = ".yaml"
NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
NAME_CHARS = 40
# The keys a definition takes from the model; the file adds `creator` and `created_at`.
KEYS = ("description", "system", "model", "tools")


def agents_dir(bot_directory: Path) -> Path:
    return bot_directory / AGENTS


def check_definition(args: dict[str, Any], creator: AgentConfig, config: Config,
                     bot_directory: Path) -> tuple[AgentConfig, str]:
    """The entry `args` define and the file's whole text, or BotError in one line saying why not."""
    name = args.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name) or len(name) > NAME_CHARS:
        raise BotError(f"name must be lowercase letters, digits and single hyphens (at most {NAME_CHARS}), "
                       f"got {name!r}")
    if name in config.agents:
        raise BotError(f"{name} is an agent of the config: choose another name")
    if (agents_dir(bot_directory) / f"{name}{SUFFIX}").exists():
        # Writing it would replace an agent the person approved earlier under a question that
        # said "define", not "replace": the model picks another name or the person removes it.
        raise BotError(f"{name} is already a defined agent of bot {creator.name}: choose another name, "
                       f"or ask the user to remove it first with /agents remove {name}")
    if not isinstance(args.get("system"), str) or not args["system"].strip():
        raise BotError("system is empty: write the agent's system prompt")
    raw = {key: args[key] for key in KEYS if args.get(key) is not None}
    if not isinstance(raw.get("tools", {}), dict):
        raise BotError("tools must be a mapping of toolsets, as in the config (e.g. {\"code\": {\"read_only\": true}})")
    raw["model"] = raw.get("model") or creator.model
    entry = _decode(name, raw, agents_dir(bot_directory) / f"{name}{SUFFIX}", creator, config)
    text = yaml.safe_dump({"creator": creator.name, "created_at": datetime.now().astimezone().isoformat(
        timespec="seconds"), **raw}, sort_keys=False, allow_unicode=True)
    return entry, f"# An agent bot {creator.name} defined; never wider than its creator.\n{text}"


def _decode(name: str, raw: dict[str, Any], path: Path, creator: AgentConfig, config: Config) -> AgentConfig:
    try:
        audit_document(path, {"agents": {name: raw}})
        entry = AgentConfig.decode(name, {**raw, "mode": "agent"})
        resolve_model(config, entry)
    except BadValue as error:
        raise BotError(f"{error.key}: {error}") from None
    except ConfigError as error:
        raise BotError(str(error)) from None
    wider = wider_keys(entry, creator)
    if wider:
        raise BotError(f"agent {name} would be wider than its creator {creator.name} at {', '.join(wider)}: "
                       "a defined agent gets at most what its creator has")
    return entry


def save_definition(bot_directory: Path, name: str, text: str) -> Path:
    directory = agents_dir(bot_directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}{SUFFIX}"
    write_atomically(path, text.encode())
    return path


def defined_agents(bot_directory: Path, creator: AgentConfig, config: Config,
                   warnings: list[str] | None = None) -> dict[str, AgentConfig]:
    """The bot's defined agents that still read as valid entries no wider than `creator`; a warning
    for each file skipped."""
    found: dict[str, AgentConfig] = {}
    for path in sorted(agents_dir(bot_directory).glob(f"*{SUFFIX}")):
        name = path.name[: -len(SUFFIX)]
        try:
            document = safe_load(path.read_text())
            if not isinstance(document, dict) or not NAME.fullmatch(name) or name in config.agents:
                raise BotError("not an agent definition")
            raw = {key: document[key] for key in KEYS if document.get(key) is not None}
            found[name] = _decode(name, raw, path, creator, config)
        except (OSError, ValueError, BotError) as error:
            if warnings is not None:
                warnings.append(f"defined agent {path}: {error}; skipped")
    return found


def describe_definitions(bot_directory: Path) -> list[str]:
    """`/agents`: a line per file — its name, creator, when, and what it is for."""
    lines = []
    for path in sorted(agents_dir(bot_directory).glob(f"*{SUFFIX}")):
        try:
            document = safe_load(path.read_text())
        except (OSError, ValueError):
            document = None
        if not isinstance(document, dict):
            lines.append(f"{path.stem} (unreadable: {path})")
            continue
        about = document.get("description") or str(document.get("system", "")).splitlines()[0:1]
        about = about if isinstance(about, str) else " ".join(about)
        lines.append(f"{path.stem} — by {document.get('creator', '?')}, {document.get('created_at', '?')}: {about}")
    return lines


def remove_definition(bot_directory: Path, name: str) -> Path:
    """Delete the definition `name`; BotError when there is none."""
    path = agents_dir(bot_directory) / f"{name}{SUFFIX}"
    if not NAME.fullmatch(name) or not path.is_file():
        raise BotError(f"no defined agent named {name!r}")
    path.unlink()
    return path
