"""Which MCP servers a run starts, and how each one is reached.

The config's top-level `mcp_servers:` defines them; an agent's `mcp_servers:` picks which load
(absent = all, `[]` = none, a list = exactly those, in that order); each `--mcp "<command line or
URL>"` adds one more for the run, named after what it runs. A server is stdio (`command`, `args`,
`env`) or streamable HTTP (`url`, `headers`, and OAuth's `auth`, `client_id`, `client_secret`,
`redirect_port`: see `auth`); its values are `${…}`-expanded only when it starts,
so a variable that is unset, or a typo in one, is that server's failure and nobody else's.

Nothing here imports the MCP SDK: a chat without servers never pays for it.
"""

from __future__ import annotations

import dataclasses

import os
import re
import shlex
from pathlib import Path
from urllib.parse import urlsplit

from iota.config.settings import Config, expand
from iota.config.entries import AgentConfig, McpServerConfig
from iota.errors import ConfigError

# Commands that run another program named by their first plain argument: `npx -y @scope/server-x`,
# `uvx mcp-server-time`, `python -m mcp_server_time`. A server started by one is named after that
# program, not after the launcher.
LAUNCHERS = {"npx", "uvx", "bunx", "pnpx", "pipx", "node", "deno", "bun", "uv", "python", "python3", "docker"}
# What server package names wear that says nothing about the server.
NAME_AFFIXES = re.compile(r"^(?:mcp[-_]server[-_]|server[-_]|mcp[-_])|(?:[-_]mcp[-_]server|[-_]mcp|[-_]server)$")
# Tool names must match ^[a-zA-Z0-9_-]{1,64}$ at the providers, and a server's name is part of them.
NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]+")


def servers_for_run(config: Config, agent: AgentConfig, flags: list[str]) -> list[McpServerConfig]:
    """The servers a chat with `agent` starts: the agent's pick of the config's, then one per
    `--mcp` flag. (An agent naming a server the config lacks already failed the config load.)"""
    if agent.mcp_servers is None:
        chosen = list(config.mcp_servers.values())
    else:
        chosen = [config.mcp_servers[name] for name in agent.mcp_servers]
    taken = set(config.mcp_servers)
    for text in flags:
        server = server_from_flag(text, taken)
        taken.add(server.name)
        chosen.append(server)
    return chosen


def server_from_flag(text: str, taken: set[str] = frozenset()) -> McpServerConfig:
    """`--mcp "<command line or URL>"` as a server entry, under a name not in `taken`."""
    text = text.strip()
    if re.match(r"https?://", text):
        return McpServerConfig(name=_unique(_name_from_url(text), taken), url=text)
    try:
        words = shlex.split(text)
    except ValueError as error:
        raise ConfigError(f'--mcp "{text}": {error}') from None
    if not words:
        raise ConfigError("--mcp needs a command line or a URL")
    return McpServerConfig(name=_unique(_name_from_command(words), taken), command=words[0], args=tuple(words[1:]))


def _name_from_url(url: str) -> str:
    """`https://mcp.context7.com/mcp` → `context7`, `http://127.0.0.1:8000/mcp` → `127-0-0-1`."""
    labels = (urlsplit(url).hostname or "server").split(".")
    if len(labels) > 2 and labels[0] in ("mcp", "www", "api"):
        labels = labels[1:]
    if len(labels) > 1 and not labels[-1].isdigit():
        labels = labels[:-1]  # the top-level domain
    return "-".join(labels)


def _name_from_command(words: list[str]) -> str:
    """`uvx mcp-server-time` → `time`, `npx -y @modelcontextprotocol/server-filesystem /tmp` →
    `filesystem`, `./bin/my-tools --stdio` → `my-tools`."""
    program = os.path.basename(words[0])
    if re.sub(r"[\d.]+$", "", program) in LAUNCHERS:
        plain = [word for word in words[1:] if not word.startswith("-") and word not in ("run", "exec")]
        if plain:
            program = plain[0].rsplit("/", 1)[-1].split("@", 1)[0] or program
    return NAME_AFFIXES.sub("", program.removesuffix(".py").removesuffix(".js")) or program


def _unique(name: str, taken: set[str]) -> str:
    name = NAME_CHARS.sub("-", name).strip("-") or "server"
    candidate, number = name, 2
    while candidate in taken:
        candidate, number = f"{name}-{number}", number + 1
    return candidate


def expanded(server: McpServerConfig, cwd: Path) -> McpServerConfig:
    """The server with `${…}` expanded in its command, args, url, env and header values, and its
    OAuth client id and secret.
    Raises ConfigError (an unknown variable) and says which server and why when it is neither
    stdio nor HTTP."""
    if bool(server.command) == bool(server.url):
        raise ConfigError("set either command: (a stdio server) or url: (an HTTP server)"
                          if not server.command else "has both command: and url:; keep one")
    return dataclasses.replace(
        server,
        command=expand(server.command, cwd) if server.command else None,
        args=tuple(expand(arg, cwd) for arg in server.args),
        env={key: expand(value, cwd) for key, value in server.env.items()},
        url=expand(server.url, cwd) if server.url else None,
        headers={key: expand(value, cwd) for key, value in server.headers.items()},
        client_id=expand(server.client_id, cwd) if server.client_id else None,
        client_secret=expand(server.client_secret, cwd) if server.client_secret else None,
    )


def endpoint(server: McpServerConfig) -> str:
    """Where the server is, as written in the config (unexpanded, so no secret is shown)."""
    return server.url or shlex.join([server.command or "", *server.args])
