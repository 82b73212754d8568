"""The config: where it is read from, what it may say, and what a run takes from it.

Tiers. `~/.iota.yaml` (else `~/.iota.yml`) is the user's; `./.iota.yaml` (else `.yml`) in the
working directory is merged over it, whole entry by whole entry, each of the four top-level maps
on its own — less its risky entries until the person trusts it (iota.config.trust). `-c FILE`
is read alone, with no tiers. A confined iota (started by a sandboxed iota's command) reads as
its project file only the one its parent ran under, unchanged, and judges it untrusted
(iota.config.confined). A file that cannot be read or is not YAML is skipped with a
warning; a file that is YAML but says something wrong fails the load (see config_audit for the
key audit, which runs on the raw document first).

Layers. An agent names a model, a model names a provider. Four parameters — context_window,
effort, temperature, top_p — are layered: the agent's value wins over the model's, which wins
over the built-in default.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from iota import paths, yaml_load
from iota.config import confined, inheritance, params, trust
from iota.config.params import ParamSources
from iota.config.limits import ShellLimits, decode_limits
from iota.config.audit import (MODES, PROVIDER_TYPES, READ_ONLY_AUTO_WRITE, audit_document, check_sandbox_mode,
                               fail)
from iota.errors import ConfigError, MissingAPIKey
from iota.zones import ZoneError, zone_named

DEFAULT_CONTEXT_WINDOW = 128_000
ENV_KEYS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY", "openresponses": "OPENAI_API_KEY",
            "gemini": "GOOGLE_API_KEY"}
# Bedrock and Vertex take no key: they sign with the cloud's own credentials, found as it finds them.
CLOUD_CREDENTIALS = {"bedrock": "AWS credentials from the environment", "vertex": "Google default credentials"}
# Provider keys that only some types take.
TYPE_KEYS = {"key": tuple(ENV_KEYS), "region": ("bedrock", "vertex"), "project_id": ("vertex",)}
EFFORTS = ("minimal", "low", "medium", "high")
# Turns in a row a bot continues a task in progress by itself before it stops and says so.
DEFAULT_AUTO_CONTINUE = 10
DEFAULT_UPKEEP_EVERY = 5
# The largest values taken. No model has a window near 100m tokens, and a turn count in the
# thousands is a typo; a number past these (`1e23`) would only overflow the arithmetic later.
MAX_CONTEXT_WINDOW = 100_000_000
MAX_TURNS = 1000
# How a model is shown the tools of MCP servers with `defer:` (iota.mcp.defer), and the provider
# types that speak each protocol: every type the `search_tools` wrapper, Anthropic its own
# deferred tools, the OpenAI Responses API its tool search, Chat Completions a mount in history.
DEFER_MODES = {"normal": None, "reference": ("anthropic",), "tool-search": ("openresponses",),
               "system-tools": ("openai",)}
# How an HTTP MCP server is authenticated: OAuth when it asks for it (auto), always, or never.
MCP_AUTH_MODES = ("auto", "oauth", "none")
# The keys of one MCP transport, refused on an entry of the other.
MCP_HTTP_KEYS = ("headers", "auth", "client_id", "client_secret", "redirect_port")
MCP_STDIO_KEYS = ("args", "env")


def parse_size(value: Any) -> int:
    """`200k` → 200000, `1.5m` → 1500000, `1b` → 10**9; plain integers pass through."""
    if isinstance(value, bool):
        raise ValueError(f"want a size like 200k or 1m, got {value!r}")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError(f"want a positive size, got {value}")
        return value
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmbKMB]?)\s*", value)
        if match:
            scale = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9}[match.group(2).lower()]
            size = int(round(float(match.group(1)) * scale))
            if size > 0:
                return size
    raise ValueError(f'want a size like 200k or 1m, got "{value}"')


# The entries, as frozen dataclasses. They are decoded by hand, field by field, rather than by a
# validation library: the key audit has already refused every key that does not belong, so all
# that is left is each value's type and range — and a library's model building would cost every
# start a fifth of a second.


class BadValue(ValueError):
    """A value of the wrong type or range; `key` is where it stands inside the entry."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class ProviderConfig:
    name: str
    type: str
    key: str | None = None
    url: str | None = None
    region: str | None = None
    project_id: str | None = None

    @classmethod
    def decode(cls, name: str, raw: dict) -> ProviderConfig:
        kind = raw.get("type")
        if kind not in PROVIDER_TYPES:
            shown = "missing" if kind is None else f'"{kind}"'
            raise BadValue("type", f'unknown provider type {shown} (supported: {", ".join(PROVIDER_TYPES)})')
        for key, types in TYPE_KEYS.items():
            if key in raw and kind not in types:
                raise BadValue(key, f"{key} is for {_and(types)} providers, not {kind}")
        return cls(name, kind, _text(raw, "key"), _text(raw, "url"), _text(raw, "region"), _text(raw, "project_id"))


@dataclass(frozen=True)
class ModelConfig:
    name: str
    provider: str
    id: str
    context_window: int | None = None
    effort: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    # A model entry may declare what the bot requirements check cannot otherwise know.
    reports_usage: bool = True
    supports_tools: bool = True
    defer_mode: str = "normal"

    @classmethod
    def decode(cls, name: str, raw: dict) -> ModelConfig:
        mode = raw.get("defer_mode", "normal")
        if mode not in DEFER_MODES:
            raise BadValue("defer_mode", f'defer_mode must be one of {", ".join(DEFER_MODES)}, got "{mode}"')
        return cls(name, _required_text(raw, "provider"), _required_text(raw, "id"), **_layered(raw),
                   reports_usage=raw.get("reports_usage", True), supports_tools=raw.get("supports_tools", True),
                   defer_mode=mode)


@dataclass(frozen=True)
class CodeOptions:
    read_only: bool = False
    auto_write: bool = False


@dataclass(frozen=True)
class ShellOptions:
    sandbox: str = "auto"
    network: bool = False
    auto_run: bool = False
    write: tuple[str, ...] = ()
    # Variables a command gets beyond the core set (iota.sandbox.environment): names or patterns (`AWS_*`).
    env_keep: tuple[str, ...] = ()
    limits: ShellLimits = field(default_factory=ShellLimits.default)


@dataclass(frozen=True)
class Toolsets:
    """The built-in toolsets an agent turned on; None means off."""

    code: CodeOptions | None = None
    shell: ShellOptions | None = None
    skills: bool = True
    ask: bool = True
    named: tuple[str, ...] = ()  # the sets `tools:` names and does not turn off

    @classmethod
    def decode(cls, raw: dict | None) -> Toolsets:
        """Presence turns code and shell on (with their options, if any); `false` turns a set off.
        skills and ask are on unless written `false`."""
        raw = raw or {}
        named = tuple(name for name, options in raw.items() if options is not False)

        def options(name: str) -> dict | None:
            value = raw.get(name)
            if name not in raw or value is False:
                return None
            return value if isinstance(value, dict) else {}

        code = shell = None
        if (given := options("code")) is not None:
            code = CodeOptions(given.get("read_only", False), given.get("auto_write", False))
            if code.read_only and code.auto_write:
                raise BadValue("tools.code", READ_ONLY_AUTO_WRITE)
        if (given := options("shell")) is not None:
            try:
                sandbox = check_sandbox_mode(given.get("sandbox"))  # `off` unquoted is YAML's false
            except ValueError as error:
                raise BadValue("tools.shell.sandbox", str(error)) from None
            shell = ShellOptions(sandbox, given.get("network", False), given.get("auto_run", False),
                                 tuple(_texts(given, "write", "tools.shell.write")),
                                 tuple(_texts(given, "env_keep", "tools.shell.env_keep")),
                                 decode_limits(given.get("limits")))  # checked by the audit already
        return cls(code, shell, raw.get("skills") is not False, raw.get("ask") is not False, named)


@dataclass(frozen=True)
class AgentConfig:
    name: str
    model: str | None = None
    choices: tuple[str, ...] = ()
    system: str | None = None
    system_file: str | None = None
    tools: Toolsets = Toolsets()
    mcp_servers: tuple[str, ...] | None = None  # None: all of them
    mode: str = "chat"
    no_save: bool = False
    notify: bool = True
    description: str | None = None
    inherit: tuple[str, ...] = ()   # a bot's: the bots whose memory it also sees (see inherited_bots)
    journal: bool = True   # a bot's journal and its `recall` tool
    context_window: int | None = None
    effort: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    title_model: str | None = None  # the model of the title pass; None: the agent's own
    # A bot's work (iota.bots): how many turns in a row it continues a task by itself (0: never),
    # and the IANA time zone its schedules run in (None: the machine's).
    auto_continue: int = DEFAULT_AUTO_CONTINUE
    timezone: str | None = None
    # A bot's upkeep after turns (iota.bots.upkeep): on or off, every how many of the person's
    # turns it runs, and the model it asks (None: the agent's own).
    upkeep: bool = True
    upkeep_every: int = DEFAULT_UPKEEP_EVERY
    upkeep_model: str | None = None

    @classmethod
    def decode(cls, name: str, raw: dict) -> AgentConfig:
        mode = raw.get("mode", "chat")
        if mode not in MODES:
            raise BadValue("mode", f'mode must be one of {", ".join(MODES)}, got "{mode}"')
        servers = None if raw.get("mcp_servers") is None else tuple(_texts(raw, "mcp_servers"))
        return cls(name, _text(raw, "model"), tuple(_texts(raw, "choices")), _text(raw, "system"),
                   _text(raw, "system_file"), Toolsets.decode(raw.get("tools")), servers, mode,
                   raw.get("no_save", False), raw.get("notify", True), _text(raw, "description"),
                   tuple(_texts(raw, "inherit")), journal=raw.get("journal", True), **_layered(raw),
                   title_model=_text(raw, "title_model"), auto_continue=_auto_continue(raw), timezone=_timezone(raw),
                   upkeep=raw.get("upkeep", True), upkeep_every=_upkeep_every(raw),
                   upkeep_model=_text(raw, "upkeep_model"))


@dataclass(frozen=True)
class McpServerConfig:
    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    auth: str | None = None
    client_id: str | None = None
    client_secret: str | None = None
    redirect_port: int | None = None
    defer: str | None = None

    @classmethod
    def decode(cls, name: str, raw: dict) -> McpServerConfig:
        """An entry as written. Which of `command:` and `url:` it has is judged when the server
        starts (that is the server's failure alone); a key of the other transport, which would
        have no effect, is refused here."""
        kind, other = ("HTTP", MCP_STDIO_KEYS) if raw.get("url") and not raw.get("command") else \
            ("stdio", MCP_HTTP_KEYS) if raw.get("command") and not raw.get("url") else ("", ())
        for key in other:
            if key in raw:
                owner = "HTTP servers (url:)" if key in MCP_HTTP_KEYS else "stdio servers (command:)"
                raise BadValue(key, f"{key} is for {owner}, not {kind} ones")
        port = raw.get("redirect_port")
        if port is not None and (not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536):
            raise BadValue("redirect_port", f"want a port number from 1 to 65535, got {port!r}")
        auth = raw.get("auth")
        if auth is not None and auth not in MCP_AUTH_MODES:
            shown = str(auth).lower() if isinstance(auth, bool) else str(auth)  # `none` unquoted is still text
            raise BadValue("auth", f'auth must be one of {", ".join(MCP_AUTH_MODES)}, got "{shown}"')
        defer = raw.get("defer")
        if "defer" in raw and (not isinstance(defer, str) or not defer.strip()):
            raise BadValue("defer", "want a one-line summary of the server's tools (the model searches by it), "
                                    f"got {defer!r}")
        command = raw.get("command")
        if command is not None and not isinstance(command, str):
            raise BadValue("command", f"want the program to run, as text, got {command!r}")
        return cls(name, command, tuple(_texts(raw, "args")), _text_map(raw, "env"), _text(raw, "url"),
                   _text_map(raw, "headers"), auth, _text(raw, "client_id"),
                   _text(raw, "client_secret"), port, defer)


def _text(raw: dict, key: str) -> str | None:
    value = raw.get(key)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)  # `key: 1234` in YAML is still the text a person meant
    raise BadValue(key, f"want text, got {value!r}")


def _and(names: tuple[str, ...]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return " and ".join(filter(None, (", ".join(names[:-1]), names[-1])))


def _required_text(raw: dict, key: str) -> str:
    value = _text(raw, key)
    if not value:
        raise BadValue(key, "required")
    return value


def _texts(raw: dict, key: str, where: str | None = None) -> list[str]:
    value = raw.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, (str, int, float)) for item in value):
        raise BadValue(where or key, f"want a list of text, got {value!r}")
    return [str(item) for item in value]


def _text_map(raw: dict, key: str) -> dict[str, str]:
    value = raw.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadValue(key, f"want a mapping of names to text, got {value!r}")
    return {str(name): "" if item is None else str(item) for name, item in value.items()}


def _layered(raw: dict) -> dict[str, Any]:
    """The four layered parameters of a model or an agent entry."""
    window = raw.get("context_window")
    if window is not None:
        try:
            window = parse_size(window)
        except ValueError:
            window = 0
        if not 0 < window <= MAX_CONTEXT_WINDOW:
            written = raw["context_window"]
            shown = f'"{written}"' if isinstance(written, str) else repr(written)
            raise BadValue("context_window", f"want a size from 1 to 100m tokens, like 200k or 1m, got {shown}")
    effort = raw.get("effort")
    if effort is not None and effort not in EFFORTS:
        raise BadValue("effort", f'effort must be one of {", ".join(EFFORTS)}, got "{effort}"')
    return {"context_window": window, "effort": effort,
            "temperature": _number(raw, "temperature", 0, 2, low_open=False),
            "top_p": _number(raw, "top_p", 0, 1, low_open=True)}


def _auto_continue(raw: dict) -> int:
    return _turns(raw, "auto_continue", DEFAULT_AUTO_CONTINUE, 0, "0 turns it off")


def _upkeep_every(raw: dict) -> int:
    return _turns(raw, "upkeep_every", DEFAULT_UPKEEP_EVERY, 1, "upkeep: false turns it off")


def _turns(raw: dict, key: str, default: int, low: int, note: str) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_TURNS:
        raise BadValue(key, f"want a number of turns from {low} to {MAX_TURNS} ({note}), got {value!r}")
    return value


def _timezone(raw: dict) -> str | None:
    name = _text(raw, "timezone")
    if name is None:
        return None
    try:
        return zone_named(name).key
    except ZoneError as error:
        raise BadValue("timezone", str(error)) from None


def _number(raw: dict, key: str, low: float, high: float, *, low_open: bool) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value > high or \
            (value <= low if low_open else value < low):
        bound = f"above {low}" if low_open else f"from {low}"
        raise BadValue(key, f"want a number {bound} to {high}, got {value!r}")
    return float(value)


_DECODERS = {"providers": ProviderConfig, "models": ModelConfig, "agents": AgentConfig, "mcp_servers": McpServerConfig}


@dataclass
class Config:
    providers: dict[str, ProviderConfig] = field(default_factory=dict)
    models: dict[str, ModelConfig] = field(default_factory=dict)
    agents: dict[str, AgentConfig] = field(default_factory=dict)
    mcp_servers: dict[str, McpServerConfig] = field(default_factory=dict)
    user_file: Path | None = None       # read, if any
    project_file: Path | None = None    # read, if any
    explicit_file: Path | None = None   # given with -c
    warnings: list[str] = field(default_factory=list)
    sources: dict[str, Path] = field(default_factory=dict)  # "agents.coder" → the file that defined it
    project_review: trust.Review | None = None  # the project file's trust, unless it is the user's own
    project_sha256: str | None = None   # SHA-256 of the project file's bytes as read, if one was

    @property
    def files(self) -> list[Path]:
        return [f for f in (self.explicit_file, self.user_file, self.project_file) if f is not None]

    def counts(self) -> str:
        return (f"OK: {len(self.providers)} provider(s), {len(self.models)} model(s), "
                f"{len(self.agents)} agent(s), {len(self.mcp_servers)} mcp server(s)")


def load(cwd: Path, explicit: Path | None = None) -> Config:
    """Load the config a run in `cwd` would use (or `explicit` alone), checked and decoded. A
    project file the person has not trusted loses its risky entries (see iota.config.trust)."""
    config = Config()
    pin: confined.ProjectPin | None = None
    if explicit is not None:
        explicit = Path(os.path.abspath(explicit))
        if not explicit.exists():
            raise ConfigError(f"config {explicit}: no such file")
        tiers = [("explicit_file", explicit)]
    else:
        tiers = [("user_file", paths.user_config_path())]
        pin = confined.project_pin(os.environ)
        project = paths.project_config_path(cwd) if pin is None else pin.path
        if project is not None:
            tiers.append(("project_file", project))
    user_document: dict | None = None
    for attribute, path in tiers:
        if attribute != "explicit_file" and not path.exists():
            continue
        read = _read_yaml(path, config.warnings)
        if read is _UNREADABLE:
            continue
        document, data = read
        if attribute == "project_file" and pin is not None and trust.digest(data) != pin.sha256:
            config.warnings.append(f"project config {path}: not read (it changed since the iota that started "
                                   "this one read it)")
            continue
        audit_document(path, document)
        document = document or {}
        if attribute == "user_file":
            user_document = document
        elif attribute == "project_file":
            document = _trusted_part(config, path, data, document, user_document, cwd, decided=pin is None)
            if document is None:
                continue
            config.project_sha256 = trust.digest(data)
        setattr(config, attribute, path)
        _merge(config, path, document)
    _check_references(config)
    return config


def _trusted_part(config: Config, path: Path, data: bytes, document: dict, user_document: dict | None,
                  cwd: Path, *, decided: bool) -> dict | None:
    """What of the project file applies: all of it once trusted (or when it is the person's own
    file, seen from their home directory), none of it when they chose to ignore it, else all but
    its risky entries. Without `decided` (a confined iota) the person's decisions are not read:
    the file is untrusted. The review and its one-line warning go on `config`."""
    user_file = paths.user_config_path()
    if user_file.exists() and os.path.samefile(path, user_file):
        return document
    review = trust.review(path, data, document, user_document, cwd, AgentConfig.decode, decided=decided)
    config.project_review = review
    line = trust.warning(review)
    if line:
        config.warnings.append(line)
    if review.trusted:
        return document
    return None if review.ignored else trust.without(document, review.left_out)


_UNREADABLE = object()


def _read_yaml(path: Path, warnings: list[str]) -> Any:
    """The file's document and its bytes (the trust of a project file is for these exact bytes),
    or _UNREADABLE after a warning."""
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        warnings.append(f"config {path}: cannot be read ({_reason(error)}); skipped")
        return _UNREADABLE
    try:
        return yaml_load.safe_load(text), data
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        warnings.append(f"config {path}: not valid YAML{where}; skipped")
        return _UNREADABLE


def _reason(error: Exception) -> str:
    return getattr(error, "strerror", None) or str(error)


def _merge(config: Config, path: Path, document: dict) -> None:
    """Decode each entry and put it over any entry of the same name from an earlier tier."""
    for section, decoder in _DECODERS.items():
        entries = getattr(config, section)
        for name, raw in (document.get(section) or {}).items():
            coordinate = f"{section}.{name}"
            entries[str(name)] = _decode(path, coordinate, decoder, str(name), raw)
            config.sources[coordinate] = path


def _decode(path: Path, coordinate: str, decoder, name: str, raw: Any):
    if decoder is ModelConfig and isinstance(raw, str):
        provider, sep, model_id = raw.partition(":")
        if not sep or not provider or not model_id:
            raise fail(path, coordinate, f'want provider:id or a mapping, got "{raw}"')
        raw = {"provider": provider, "id": model_id}
    try:
        return decoder.decode(name, raw or {})
    except BadValue as error:
        raise fail(path, f"{coordinate}.{error.key}", str(error)) from None


def _check_references(config: Config) -> None:
    for name, model in config.models.items():
        if model.provider not in config.providers:
            raise fail(config.sources[f"models.{name}"], f"models.{name}.provider",
                       f'unknown provider "{model.provider}" (configured: {_names(config.providers)})')
        # Which deferred-tool protocols a provider speaks is a property of its type, so a mode
        # its provider cannot speak is refused here, where the model names both.
        kind = config.providers[model.provider].type
        if DEFER_MODES[model.defer_mode] is not None and kind not in DEFER_MODES[model.defer_mode]:
            raise fail(config.sources[f"models.{name}"], f"models.{name}",
                       f'defer_mode "{model.defer_mode}" does not apply to provider type {kind}')
    for name, agent in config.agents.items():
        source = config.sources[f"agents.{name}"]
        for key, wanted in (("model", [agent.model] if agent.model else []), ("choices", agent.choices),
                            ("title_model", [agent.title_model] if agent.title_model else []),
                            ("upkeep_model", [agent.upkeep_model] if agent.upkeep_model else [])):
            for model in wanted:
                if model not in config.models and not _is_direct_model(config, model):
                    raise fail(source, f"agents.{name}.{key}",
                               f'unknown model "{model}" (configured: {_names(config.models)})')
        for server in agent.mcp_servers or []:
            if server not in config.mcp_servers:
                raise fail(source, f"agents.{name}.mcp_servers",
                           f'unknown MCP server "{server}" (configured: {_names(config.mcp_servers)})')
        problem = inheritance.problem(config.agents, name)
        if problem:
            raise fail(source, f"agents.{name}.inherit", problem)



def _is_direct_model(config: Config, reference: str) -> bool:
    provider, sep, model_id = reference.partition(":")
    return bool(sep and model_id) and provider in config.providers


def _names(entries: dict) -> str:
    return ", ".join(entries) or "none"


# ---------------------------------------------------------------------------------------------
# What a run takes from the config.


@dataclass(frozen=True)
class ResolvedModel:
    """A model with its provider and the layered parameters settled for one agent."""

    name: str
    provider: ProviderConfig
    id: str
    context_window: int
    effort: str | None
    temperature: float | None
    top_p: float | None
    reports_usage: bool
    supports_tools: bool
    # Which layer set context_window: "agent", "model" or "default" (the bot check names it).
    window_source: str
    defer_mode: str = "normal"
    param_sources: ParamSources = ParamSources()  # where each layered value came from (iota.config.params)

    def meta_fields(self) -> dict[str, Any]:
        """What a session's meta.json records of the model (None clears a dropped setting)."""
        return dict(provider=self.provider.name, model=self.id, temperature=self.temperature, top_p=self.top_p,
                    context_window=self.context_window, effort=self.effort, param_sources=self.param_sources.to_record())


def find_agent(config: Config, name: str) -> AgentConfig:
    agent = config.agents.get(name)
    if agent is None:
        raise ConfigError(f'unknown agent "{name}"\n  configured agents: {_names(config.agents)}')
    return agent


def resolve_model(config: Config, agent: AgentConfig, override: str | None = None) -> ResolvedModel:
    """The model an agent runs (or `override`, from -M), with the agent's layered parameters."""
    reference = override or agent.model
    if not reference:
        raise ConfigError(f"no model chosen: set agents.{agent.name}.model or pass -M")
    model = config.models.get(reference)
    if model is None:
        if not _is_direct_model(config, reference):
            raise ConfigError(f'unknown model "{reference}"\n  configured models: {_names(config.models)}')
        provider, _, model_id = reference.partition(":")
        model = ModelConfig(name=reference, provider=provider, id=model_id)
    window, source = ((agent.context_window, "agent") if agent.context_window else
                      (model.context_window, "model") if model.context_window else
                      (DEFAULT_CONTEXT_WINDOW, "default"))
    return ResolvedModel(
        name=model.name, provider=config.providers[model.provider], id=model.id,
        context_window=window,
        effort=agent.effort or model.effort,
        temperature=agent.temperature if agent.temperature is not None else model.temperature,
        top_p=agent.top_p if agent.top_p is not None else model.top_p,
        reports_usage=model.reports_usage, supports_tools=model.supports_tools,
        window_source=source, defer_mode=model.defer_mode, param_sources=params.evaluate(agent, model),
    )


def api_key(provider: ProviderConfig, cwd: Path) -> str:
    """The provider type's environment variable wins over `key:` in the config; Bedrock and
    Vertex have none (empty)."""
    if provider.type in CLOUD_CREDENTIALS:
        return ""
    variable = ENV_KEYS[provider.type]
    key = os.environ.get(variable) or (expand(provider.key, cwd) if provider.key else "")
    if not key:
        raise MissingAPIKey(f"API key is required: set {variable} or providers.{provider.name}.key in your config")
    return key


def base_url(provider: ProviderConfig, cwd: Path) -> str | None:
    return expand(provider.url, cwd) if provider.url else None


_VARIABLE = re.compile(r"\$\{([^}]*)\}")


def secret_variables(config: Config) -> set[str]:
    """The environment variables the config hands to providers and MCP servers with `${env:NAME}`:
    keys, whatever they are called, so a shell command never sees them."""
    texts = [value for provider in config.providers.values() for value in (provider.key, provider.url) if value]
    for server in config.mcp_servers.values():
        texts += [*server.env.values(), *server.headers.values(), server.client_secret or ""]
    return {match[4:] for text in texts for match in _VARIABLE.findall(text) if match.startswith("env:")}


def expand(value: str, cwd: Path) -> str:
    """Expand `${env:VAR}`, `${cwd}`/`${workspaceFolder}`, `${userHome}`, `${appHome}` and `${/}`."""

    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name.startswith("env:"):
            return os.environ.get(name[4:], "")
        fixed = {"cwd": str(cwd), "workspaceFolder": str(cwd), "userHome": str(paths.home()),
                 "appHome": str(paths.app_home()), "/": os.sep}
        if name not in fixed:
            raise ConfigError(f"unknown variable ${{{name}}} in {value!r} (want env:NAME, cwd, workspaceFolder, "
                              "userHome, appHome or /)")
        return fixed[name]

    return _VARIABLE.sub(replace, value)
