"""`iota mcp add` and `iota mcp remove`: change the `mcp_servers:` block of a config file and
leave every other byte of it — comments, blank lines, key order, quoting — as it was (the text
editing is iota.config.blocks', shared with `iota bots import`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from iota.config.blocks import add_entry, entries, read_text, remove_entry, with_entry_added, with_entry_removed
from iota.errors import ConfigError

KEY = "mcp_servers"
SERVER_NAME = re.compile(r"[A-Za-z0-9_-]+")


def add_server(path: Path, name: str, entry: dict[str, Any]) -> None:
    """Add `name` to the file's servers; refused when the file already has one by that name."""
    if not SERVER_NAME.fullmatch(name):
        raise ConfigError(f'MCP server names may use letters, digits, - and _ (got "{name}")')
    if name in entries(path, read_text(path), KEY):
        raise ConfigError(f'MCP server "{name}" already exists in {path}; remove it first with '
                          f"`iota mcp remove {name}`")
    add_entry(path, KEY, name, entry)


def remove_server(path: Path, name: str) -> None:
    """Remove `name` from the file's servers; refused when the file has none by that name."""
    servers = entries(path, read_text(path) if path.exists() else "", KEY)
    if name not in servers:
        configured = ", ".join(servers) or "none"
        raise ConfigError(f'no MCP server "{name}" in {path} (configured there: {configured})')
    remove_entry(path, KEY, name)


def with_server_added(text: str, name: str, entry: dict[str, Any]) -> str:
    return with_entry_added(text, KEY, name, entry)


def with_server_removed(text: str, name: str) -> str:
    return with_entry_removed(text, KEY, name)
