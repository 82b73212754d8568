"""The one rule an untrusted project file's agents are judged by: narrower, or left out.

A project's `.iota.yaml` may make an agent only narrower than the person's own entry of that name
— or, for an agent the person has not got, than `NEW_AGENT`, the most an untrusted file may give
a new one. Anything wider is a finding, and the entry is left out until the person trusts the
file (iota.config.trust).

Narrower is judged key by key. Every key an agent entry accepts has a line in `ORDERS` that says
how two of its values compare — which one confines more — and what a wider value would do. A key
with no line there must equal the person's value, so a key added later is safe until someone
decides its order. Both entries are compared as a run would use them (decoded by
iota.config.entries, defaults filled in), so a key left unwritten has its default: an entry that
drops the person's `skills: false` turns skills back on, and is wider; one that drops
`mcp_servers:` starts every one of the person's servers, and is wider than a list of some.

The orders, in words:

    a flag that gives more            off is narrower: auto_write, auto_run, network, no_save,
                                      journal, memory, upkeep, and each toolset being on (code, shell,
                                      skills, ask, delegate)
    read_only                         on is narrower
    sandbox, mode                     auto < off;  chat < agent < bot
    lists of what is reached          fewer is narrower: mcp_servers, write, env_keep, inherit,
                                      delegate.agents
    numbers                           auto_continue: fewer turns; upkeep_every, summary_every: more
                                      turns apart (summary_every: 0, never, is the narrowest);
                                      shell limits: none higher (memory, file_size, processes);
                                      delegate.max_parallel, delegate.max_depth: lower
    model, choices, title_model       any model that stays (not one left out, nor on a provider
                                      the file defines): they choose among the person's providers
    system_file                       the person's own, or a file inside the project
    free                              text and tuning that confine nothing: system, description,
                                      notify, timezone, context_window, effort, temperature, top_p
    anything else (upkeep_model)      must equal the person's value

A toolset's options are compared only while the file turns the set on (off is narrowest), and
against the set's defaults when the person's entry has it off.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

# The most an untrusted file may give an agent the person has not got: iota's defaults (writes
# ask, commands run in the sandbox without network, skills and ask on), agent mode, no MCP server.
NEW_AGENT = {"mode": "agent", "tools": {"code": {}, "shell": {}}, "mcp_servers": []}


class Context(NamedTuple):
    """What a comparison needs beyond the two values."""

    cwd: Path
    servers: frozenset[str]       # the person's MCP servers: what `mcp_servers:` left out means
    lost_models: frozenset[str]   # models the file defines that are left out
    own_providers: frozenset[str]  # providers only the file defines
    # How an agent entry is decoded as a run uses it: entries.AgentConfig.decode, handed in
    # because settings reads this module (through trust) to load a project file.
    decode: Callable[[str, dict], Any]

    def defaults(self) -> Any:
        """NEW_AGENT decoded: its code and shell sets have every option at its default."""
        return self.decode("", NEW_AGENT)


# A judge takes (theirs, ours, context) and says why theirs is wider, or None when it is not.
Judge = Callable[[Any, Any, Context], "str | None"]


class Order(NamedTuple):
    value: Callable[[Any, Context], Any]   # the key's value in a decoded AgentConfig
    wider: Judge
    toolset: str | None = None             # judged only while the file turns this set on


def free(theirs: Any, ours: Any, context: Context) -> None:
    return None


def equal(theirs: Any, ours: Any, context: Context) -> str | None:
    return None if theirs == ours else f"sets {_show(theirs)} where yours is {_show(ours)}"


def on_is_wider(reason: str) -> Judge:
    return lambda theirs, ours, context: reason if theirs and not ours else None


def off_is_wider(reason: str) -> Judge:
    return lambda theirs, ours, context: reason if ours and not theirs else None


def ranked(*narrow_to_wide: str, reason: Callable[[str, str], str]) -> Judge:
    def judge(theirs: str, ours: str, context: Context) -> str | None:
        return reason(theirs, ours) if narrow_to_wide.index(theirs) > narrow_to_wide.index(ours) else None
    return judge


def fewer(reason: Callable[[list[str]], str]) -> Judge:
    """A list of what is reached: narrower when it adds nothing to the person's."""
    def judge(theirs: Any, ours: Any, context: Context) -> str | None:
        added = [item for item in theirs if item not in ours]
        return reason(added) if added else None
    return judge


def at_most(reason: str) -> Judge:
    return lambda theirs, ours, context: reason.format(theirs=theirs, ours=ours) if theirs > ours else None


def at_least(reason: str) -> Judge:
    return lambda theirs, ours, context: reason.format(theirs=theirs, ours=ours) if theirs < ours else None


def lower_limits(theirs: Any, ours: Any, context: Context) -> str | None:
    """Shell limits (iota.config.limits.ShellLimits): narrower when none is higher than the person's."""
    raised = [name for name, value in vars(theirs).items() if value > getattr(ours, name)]
    return f"raises the commands' {' and '.join(name.replace('_', ' ') + ' limit' for name in raised)}" \
        if raised else None


def models_stay(theirs: Any, ours: Any, context: Context) -> str | None:
    for model in theirs:
        provider, colon, _ = model.partition(":")
        if model in context.lost_models:
            return f"uses model {model}, which is left out"
        if colon and provider in context.own_providers:
            return f"uses provider {provider}, which this file defines"
    return None


def yours_or_inside(theirs: str | None, ours: str | None, context: Context) -> str | None:
    if theirs is None or theirs == ours or inside(theirs, context.cwd):
        return None
    return f"reads {theirs} into the system prompt, from outside the project"


def both(*judges: Judge) -> Judge:
    return lambda theirs, ours, context: next(
        (reason for judge in judges if (reason := judge(theirs, ours, context))), None)


def inside(path: str, cwd: Path) -> bool:
    """Whether a `system_file` surely names a file inside the project: a plain relative path (no
    `~`, no `${…}`) whose real path, symlinks resolved, lies under the working directory."""
    if path.startswith("~") or "${" in path or os.path.isabs(path):
        return False
    root = os.path.realpath(cwd)
    return os.path.commonpath([root, os.path.realpath(os.path.join(root, path))]) == root


def _models(*values: str | None) -> list[str]:
    return [value for value in values if value]


def _servers(agent: Any, context: Context) -> list[str]:
    return sorted(context.servers) if agent.mcp_servers is None else list(agent.mcp_servers)


def _plural(word: str, names: list[str]) -> str:
    return f"{word}{'s' if len(names) > 1 else ''} {', '.join(names)}"


def _mode(theirs: str, ours: str) -> str:
    return "makes it a bot" if theirs == "bot" else f"runs it in {theirs} mode (yours: {ours})"


def _code(name: str) -> Callable[[Any, Context], Any]:
    """An option of the code set; the set's default while it is off."""
    return lambda agent, context: getattr(agent.tools.code or context.defaults().tools.code, name)


def _shell(name: str) -> Callable[[Any, Context], Any]:
    """An option of the shell set; the set's default while it is off."""
    return lambda agent, context: getattr(agent.tools.shell or context.defaults().tools.shell, name)


def _delegate(name: str) -> Callable[[Any, Context], Any]:
    """An option of the delegate set; the set's default while it is off."""
    return lambda agent, context: getattr(agent.tools.delegate or context.decode(
        "", {"tools": {"delegate": {}}}).tools.delegate, name)


def _field(name: str) -> Callable[[Any, Context], Any]:
    return lambda agent, context: getattr(agent, name)


def _orders() -> dict[str, Order | None]:
    """The table, by key path inside an agent entry (`tools.shell.auto_run`). `tools` itself is
    None: it is judged by its toolsets' lines."""
    mcp = "starts {} outside the sandbox, whose tools do not ask"
    return {
        "model": Order(lambda agent, context: _models(agent.model), models_stay),
        "choices": Order(lambda agent, context: list(agent.choices), models_stay),
        "title_model": Order(lambda agent, context: _models(agent.title_model), models_stay),
        "upkeep_model": Order(_field("upkeep_model"), both(
            lambda theirs, ours, context: models_stay(_models(theirs), [], context), equal)),
        "system": Order(_field("system"), free),
        "description": Order(_field("description"), free),
        "notify": Order(_field("notify"), free),
        "timezone": Order(_field("timezone"), free),
        **{name: Order(_field(name), free) for name in ("context_window", "effort", "temperature", "top_p")},
        "system_file": Order(_field("system_file"), yours_or_inside),
        "mode": Order(_field("mode"), ranked("chat", "agent", "bot", reason=_mode)),
        "mcp_servers": Order(_servers, fewer(lambda added: mcp.format(_plural("MCP server", added)))),
        "inherit": Order(lambda agent, context: list(agent.inherit),
                         fewer(lambda added: f"reads the memory of {_plural('bot', added)}")),
        "no_save": Order(_field("no_save"), on_is_wider("keeps no record of the conversation")),
        "journal": Order(_field("journal"), on_is_wider("gives it recall over your past conversations")),
        "auto_continue": Order(_field("auto_continue"), at_most(
            "continues a task by itself for {theirs} turns (yours: {ours})")),
        "upkeep": Order(_field("upkeep"), on_is_wider("runs upkeep that writes memory after turns")),
        "memory": Order(_field("memory"), on_is_wider("keeps a journal and writes its memory")),
        "summary_every": Order(_field("summary_every"), lambda theirs, ours, context: (
            f"refreshes the running summary every {theirs} turns (yours: "
            f"{f'every {ours}' if ours else 'never'})") if theirs and (not ours or theirs < ours) else None),
        "upkeep_every": Order(_field("upkeep_every"), at_least(
            "runs upkeep every {theirs} turns (yours: every {ours})")),
        "tools": None,
        "tools.code": Order(lambda agent, context: agent.tools.code is not None, on_is_wider("turns on the code tools")),
        "tools.code.read_only": Order(_code("read_only"), off_is_wider("lets the code tools write files"), "code"),
        "tools.code.auto_write": Order(_code("auto_write"), on_is_wider("writes files without asking"), "code"),
        "tools.shell": Order(lambda agent, context: agent.tools.shell is not None, on_is_wider("turns on the shell")),
        "tools.shell.sandbox": Order(_shell("sandbox"), ranked(
            "auto", "off", reason=lambda theirs, ours: "runs commands outside the sandbox"), "shell"),
        "tools.shell.auto_run": Order(_shell("auto_run"), on_is_wider("runs commands without asking"), "shell"),
        "tools.shell.network": Order(_shell("network"), on_is_wider("gives commands the network"), "shell"),
        "tools.shell.write": Order(_shell("write"), fewer(
            lambda added: f"lets commands write {', '.join(added)}"), "shell"),
        "tools.shell.env_keep": Order(_shell("env_keep"), fewer(
            lambda added: f"passes {', '.join(added)} to commands"), "shell"),
        "tools.shell.limits": Order(_shell("limits"), lower_limits, "shell"),
        "tools.skills": Order(lambda agent, context: agent.tools.skills, on_is_wider("turns on skills")),
        "tools.ask": Order(lambda agent, context: agent.tools.ask, on_is_wider("turns on the ask tools")),
        "tools.delegate": Order(lambda agent, context: agent.tools.delegate is not None,
                                on_is_wider("lets it hand tasks to other agents")),
        "tools.delegate.agents": Order(_delegate("agents"), fewer(
            lambda added: f"hands tasks to {_plural('agent', added)}"), "delegate"),
        "tools.delegate.max_parallel": Order(_delegate("max_parallel"), at_most(
            "runs {theirs} helpers at once (yours: {ours})"), "delegate"),
        "tools.delegate.max_depth": Order(_delegate("max_depth"), at_most(
            "lets its helpers delegate in turn ({theirs} levels; yours: {ours})"), "delegate"),
    }


ORDERS = _orders()


def wider_keys(name: str, theirs: Any, ours: Any, context: Context) -> Iterator[tuple[str, str]]:
    """(key, reason) for each key of the file's agent entry `theirs` that is wider than the
    person's entry `ours` (None: they have none, and NEW_AGENT stands in). An entry that does not
    decode yields nothing: the load then refuses it with its own message."""
    try:
        agent = context.decode(name, theirs if isinstance(theirs, dict) else {})
        baseline = context.decode(name, (ours if isinstance(ours, dict) else {}) if ours is not None else NEW_AGENT)
    except ValueError:   # entries.BadValue
        return
    written = _written(theirs)
    for key in sorted(written - set(ORDERS)):        # a key with no order must equal
        if _lookup(theirs, key) != _lookup(ours if isinstance(ours, dict) else {}, key):
            yield key, equal(_lookup(theirs, key), _lookup(ours if isinstance(ours, dict) else {}, key), context)
    for key, order in ORDERS.items():
        if order is None or (order.toolset and getattr(agent.tools, order.toolset) is None):
            continue
        reason = order.wider(order.value(agent, context), order.value(baseline, context), context)
        if reason:
            yield key, reason


def _written(entry: Any, prefix: str = "") -> set[str]:
    """The key paths written in an entry (`tools.shell.auto_run`)."""
    if not isinstance(entry, dict):
        return set()
    keys = set()
    for key, value in entry.items():
        path = f"{prefix}{key}"
        keys.add(path)
        if path == "tools" or (path.startswith("tools.") and path.count(".") == 1):  # tools.<set>.<option>
            keys |= _written(value, f"{path}.")
    return keys


def _lookup(entry: Any, path: str) -> Any:
    for part in path.split("."):
        entry = entry.get(part) if isinstance(entry, dict) else None
    return entry


def _show(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)
