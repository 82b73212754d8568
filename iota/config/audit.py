"""The key audit: the raw YAML document is checked before anything is decoded.

A typo in a config file should fail loudly at the key that has it, not quietly fall back to a
default. So every key of every entry is checked against the keys its layer knows, before the
entries are turned into objects. A failure names the file and the coordinate of the key:

    config /home/ana/.iota.yaml: agents.coder.modle: unknown key (want model, choices, …)

Booleans take the YAML 1.1 spellings (true/yes/on, false/no/off), which the YAML loader has
already turned into bools; anything else where a boolean belongs is refused here.

Nothing is accepted in silence: every key these tables accept changes what a run does
(tests/iota/config/test_every_key.py walks them all and proves it). A key of a feature the Rust
iota has and this one has not built yet is refused as `not supported yet`, not ignored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iota.config.limits import BadValue, decode_limits
from iota.errors import ConfigError

TOP_LEVEL = ("providers", "models", "agents", "mcp_servers")
PROVIDER_TYPES = ("anthropic", "openai", "openresponses", "gemini", "bedrock", "vertex")
TOOLSETS = ("shell", "code", "skills", "ask", "delegate")
MODES = ("chat", "agent", "bot")

PROVIDER_KEYS = ("type", "key", "url", "region", "project_id")
MODEL_KEYS = ("provider", "id", "context_window", "defer_mode", "effort", "temperature", "top_p", "reports_usage",
              "supports_tools")
LAYERED_KEYS = ("context_window", "effort", "temperature", "top_p")
AGENT_KEYS = ("model", "choices", "system", "system_file", "tools", "mcp_servers", "mode", "no_save", "notify",
              "journal", "description", "inherit", *LAYERED_KEYS, "title_model", "auto_continue", "timezone",
              "upkeep", "upkeep_every", "upkeep_model", "memory", "summary_every")
MCP_KEYS = ("command", "args", "env", "url", "headers", "auth", "client_id", "client_secret", "redirect_port", "defer")
TOOLSET_KEYS = {
    "code": ("read_only", "auto_write"),
    "shell": ("sandbox", "network", "auto_run", "write", "env_keep", "limits"),
    "skills": (),
    "ask": (),
    "delegate": ("agents", "max_parallel", "max_depth"),
}
BOOLEAN_KEYS = {"no_save", "notify", "journal", "memory", "upkeep", "reports_usage", "supports_tools", "read_only", "auto_write", "network", "auto_run"}

# Keys of features not built yet, by layer: refused, so that nobody believes they took effect.
NOT_SUPPORTED_YET = {
    "models": ("image", "aspect_ratio", "image_size", "negative_prompt", "json_edits"),
}

# Keys that used to mean something, with what replaced them.
RETIRED = {
    "workspace": "workspace: true became mode: agent",
    "models": "models: became model: plus choices:",
}

# The option pairs and values the toolsets refuse, checked when the config is decoded.
READ_ONLY_AUTO_WRITE = (
    "read_only and auto_write contradict each other: auto_write approves writes the set does not offer"
)
SANDBOX_MODES = ("auto", "off")


def check_sandbox_mode(value: object) -> str:
    """The mode a `sandbox:` value names; ValueError with the config message for anything else.

    Empty means "auto". PyYAML reads an unquoted `off` as the boolean false, so false is "off"."""
    if value is False:
        return "off"
    if value is None or value == "":
        return "auto"
    if value in SANDBOX_MODES:
        return str(value)
    shown = str(value).lower() if isinstance(value, bool) else str(value)
    raise ValueError(f'sandbox must be "auto" or "off", got "{shown}"')


_LAYERS = (
    ("a provider", PROVIDER_KEYS),
    ("a model", MODEL_KEYS),
    ("an agent", AGENT_KEYS),
    ("an MCP server", MCP_KEYS),
)


def _layers_of(key: str) -> list[str]:
    return [layer for layer, keys in _LAYERS if key in keys]


def fail(path: Path, coordinate: str, message: str) -> ConfigError:
    return ConfigError(f"config {path}: {coordinate}: {message}")


def audit_document(path: Path, document: Any) -> None:
    """Raise ConfigError at the first key that does not belong where it stands."""
    if document is None:
        return
    if not isinstance(document, dict):
        raise ConfigError(f"config {path}: the file must be a mapping of {_want(TOP_LEVEL)}")
    for key, section in document.items():
        if key not in TOP_LEVEL:
            raise fail(path, str(key), f"unknown top-level key (want {', '.join(k + ':' for k in TOP_LEVEL)})")
        if section is None:
            continue
        if not isinstance(section, dict):
            raise fail(path, key, "want a mapping of names to entries")
        for name, entry in section.items():
            coordinate = f"{key}.{name}"
            if key == "models" and isinstance(entry, str):
                continue  # the `provider:id` shorthand
            if entry is None and key == "agents":
                continue  # an agent with every default
            if not isinstance(entry, dict):
                raise fail(path, coordinate, "want a mapping of keys")
            _audit_entry(path, key, coordinate, entry)


def _audit_entry(path: Path, section: str, coordinate: str, entry: dict) -> None:
    layer, own = _LAYERS[TOP_LEVEL.index(section)]
    for key, value in entry.items():
        where = f"{coordinate}.{key}"
        if key in NOT_SUPPORTED_YET.get(section, ()):
            raise fail(path, where, "not supported yet")
        if key not in own:
            if _layers_of(key):
                raise fail(path, where, f"{key} is a key of {' or '.join(_layers_of(key))}, not of {layer}")
            if key in RETIRED:
                raise fail(path, where, f"unknown key ({RETIRED[key]})")
            raise fail(path, where, f"unknown key (want {_want(own)})")
        if key in BOOLEAN_KEYS:
            audit_boolean(path, where, value)
        if section == "agents" and key == "tools":
            _audit_tools(path, where, value)


def _audit_tools(path: Path, coordinate: str, tools: Any) -> None:
    if tools is None:
        return
    if not isinstance(tools, dict):
        raise fail(path, coordinate, f"want a mapping of toolsets ({_want(TOOLSETS)})")
    for name, options in tools.items():
        where = f"{coordinate}.{name}"
        if name not in TOOLSETS:
            raise fail(path, where, f"unknown toolset (want {_want(TOOLSETS)})")
        if options is None or options is True or options is False:
            continue  # presence enables, false disables
        if not isinstance(options, dict):
            raise fail(path, where, "want a mapping of options, or false to turn the toolset off")
        for key, value in options.items():
            if key not in TOOLSET_KEYS[name]:
                known = _want(TOOLSET_KEYS[name]) if TOOLSET_KEYS[name] else "none"
                raise fail(path, f"{where}.{key}", f"unknown key (want {known})")
            if key in BOOLEAN_KEYS:
                audit_boolean(path, f"{where}.{key}", value)
            if (name, key) == ("shell", "limits"):
                try:
                    decode_limits(value)
                except BadValue as error:
                    raise fail(path, f"{where}.{error.key}", str(error)) from None


def audit_boolean(path: Path, coordinate: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise fail(path, coordinate, f"want true or false, got {_show(value)}")


def _want(keys) -> str:
    return ", ".join(keys)


def _show(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)
