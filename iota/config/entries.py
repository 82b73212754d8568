"""The config's entries — providers, models, agents, MCP servers — and how one is decoded.

Each entry is a frozen dataclass decoded by hand, field by field, from the raw YAML mapping:
the key audit (iota.config.audit) has already refused every key that does not belong, so what is
left is each value's type and range, said in one line that names the key (`BadValue`). Where the
entries are read from, merged and resolved for a run is iota.config.settings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from iota.config.audit import MODES, PROVIDER_TYPES, READ_ONLY_AUTO_WRITE, check_sandbox_mode
from iota.config.limits import BadValue, ShellLimits, decode_limits
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
DEFAULT_SUMMARY_EVERY = 6
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


# How many helpers one turn runs at once by default, and the bounds of `max_parallel` and
# `max_depth` (helpers of helpers: 2 at most, since each level multiplies what runs at once).
DEFAULT_MAX_PARALLEL = 4
MAX_PARALLEL = 16
MAX_DEPTH = 2


@dataclass(frozen=True)
class DelegateOptions:
    """The `delegate` set: which agents may be handed a task, how many run at once, and how many
    levels of helpers may stand below this agent (1: its helpers cannot delegate further)."""

    agents: tuple[str, ...] = ()
    max_parallel: int = DEFAULT_MAX_PARALLEL
    max_depth: int = 1

    @classmethod
    def decode(cls, given: dict) -> DelegateOptions:
        agents = tuple(_texts(given, "agents", "tools.delegate.agents"))
        parallel = given.get("max_parallel", DEFAULT_MAX_PARALLEL)
        if isinstance(parallel, bool) or not isinstance(parallel, int) or not 1 <= parallel <= MAX_PARALLEL:
            raise BadValue("tools.delegate.max_parallel",
                           f"want a number of helpers from 1 to {MAX_PARALLEL}, got {parallel!r}")
        depth = given.get("max_depth", 1)
        if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
            raise BadValue("tools.delegate.max_depth",
                           f"want 1 (helpers cannot delegate) or {MAX_DEPTH} (they can, once), got {depth!r}")
        return cls(agents, parallel, depth)


@dataclass(frozen=True)
class Toolsets:
    """The built-in toolsets an agent turned on; None means off."""

    code: CodeOptions | None = None
    shell: ShellOptions | None = None
    skills: bool = True
    ask: bool = True
    named: tuple[str, ...] = ()  # the sets `tools:` names and does not turn off
    delegate: DelegateOptions | None = None

    @classmethod
    def decode(cls, raw: dict | None) -> Toolsets:
        """Presence turns code, shell and delegate on (with their options, if any); `false` turns a set off.
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
        delegate = None if (given := options("delegate")) is None else DelegateOptions.decode(given)
        return cls(code, shell, raw.get("skills") is not False, raw.get("ask") is not False, named, delegate)


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
    # A bot's memory writers and readers (journal, recall, remember, upkeep, candidates, durables,
    # running summary); false keeps only its memory files, which still go out with every request.
    memory: bool = True
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
    # Every how many of the person's turns the upkeep refreshes the running summary (0: never).
    summary_every: int = DEFAULT_SUMMARY_EVERY

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
                   upkeep_model=_text(raw, "upkeep_model"), memory=raw.get("memory", True),
                   summary_every=_turns(raw, "summary_every", DEFAULT_SUMMARY_EVERY, 0, "0 turns it off"))


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
