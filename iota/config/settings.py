"""The config: where it is read from, what it may say, and what a run takes from it.

Tiers. `~/.iota.yaml` (else `~/.iota.yml`) is the user's; `./.iota.yaml` (else `.yml`) in the
working directory is merged over it, whole entry by whole entry, each of the four top-level maps
on its own — less its risky entries until the person trusts it (iota.config.trust). `-c FILE`
is read alone, with no tiers. A confined iota (started by a sandboxed iota's command) reads as
its project file only the one its parent ran under, unchanged, and judges it untrusted
(iota.config.confined). A file that cannot be read or is not YAML is skipped with a
warning; a file that is YAML but says something wrong fails the load (iota.config.audit checks
its keys on the raw document first; iota.config.entries decodes each entry).

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
from iota.config.audit import audit_document, fail
from iota.config.entries import (CLOUD_CREDENTIALS, DEFAULT_CONTEXT_WINDOW, DEFER_MODES, ENV_KEYS, AgentConfig,
                                 BadValue, McpServerConfig, ModelConfig, ProviderConfig)
from iota.errors import ConfigError, MissingAPIKey

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
    # Agents whose `system_file` an untrusted project file chose (not the person's own value): it
    # was judged to lie inside the project, and is judged again by what is opened when it is read.
    project_system_files: frozenset[str] = frozenset()

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
    if review.ignored:
        return None
    kept = document if review.trusted else trust.without(document, review.left_out)
    if review.decision != trust.TRUST:
        config.project_system_files = _chosen_system_files(kept, user_document)
    return kept


def _chosen_system_files(document: dict, user_document: dict | None) -> frozenset[str]:
    """The agents of an untrusted project file's kept part whose `system_file` is not the person's."""
    mine = (user_document or {}).get("agents") or {}
    chosen = set()
    for name, entry in (document.get("agents") or {}).items():
        theirs = entry.get("system_file") if isinstance(entry, dict) else None
        own = mine.get(name) if isinstance(mine, dict) else None
        if theirs and theirs != (own.get("system_file") if isinstance(own, dict) else None):
            chosen.add(str(name))
    return frozenset(chosen)


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
        delegate = agent.tools.delegate
        for helper in delegate.agents if delegate is not None else ():
            if helper not in config.agents or helper == name:
                why = "an agent cannot be its own helper" if helper == name else \
                    f'unknown agent "{helper}" (configured: {_names(config.agents)})'
                raise fail(source, f"agents.{name}.tools.delegate.agents", why)
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
