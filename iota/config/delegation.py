"""The rule a helper runs under: never more than the agent that hands it the task.

A helper (the `delegate` toolset, iota.delegation) is an agent entry of the config, but what it
may do is the meet of its entry and its caller's: each key takes whichever of the two values
confines more. So a helper named by a careless entry (`shell: {sandbox: off, network: true}`)
still runs inside the caller's sandbox without the network, and a caller cannot launder a power
it lacks through a helper that has it.

`RULES` has a line for every key of a toolset and for the agent keys a helper's run depends on;
tests/iota/config/test_delegation_rule.py walks the audit's toolset keys and fails on one that has
no line here, so a toolset option added later is decided before a helper can use it.

    a set on                          only when both have it (code, shell, skills, ask, delegate)
    read_only                         on when either is
    auto_write, auto_run, network     on only when both are
    sandbox                           auto when either is auto
    write, env_keep, mcp_servers,     only what both list (mcp_servers unwritten: every server)
      delegate.agents
    limits, max_parallel              the lower of the two
    max_depth                         one level fewer than the caller's; at 0 the set is off
    no_save                           on when either is (a caller that keeps nothing keeps no helper)
    mode                              a bot helper runs as an agent: a helper has no memory of its own
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from iota.config.entries import AgentConfig, CodeOptions, DelegateOptions, ShellOptions, Toolsets
from iota.config.limits import ShellLimits


def _both(mine: bool, theirs: bool) -> bool:
    return mine and theirs


def _either(mine: bool, theirs: bool) -> bool:
    return mine or theirs


def _common(mine: tuple[str, ...], theirs: tuple[str, ...]) -> tuple[str, ...]:
    """What both list, in the helper's order."""
    return tuple(item for item in mine if item in theirs)


def _sandbox(mine: str, theirs: str) -> str:
    return "auto" if "auto" in (mine, theirs) else "off"


def _lower_limits(mine: ShellLimits, theirs: ShellLimits) -> ShellLimits:
    return ShellLimits(**{name: min(value, getattr(theirs, name)) for name, value in vars(mine).items()})


def _servers(mine: tuple[str, ...] | None, theirs: tuple[str, ...] | None) -> tuple[str, ...] | None:
    if theirs is None:
        return mine
    return theirs if mine is None else _common(mine, theirs)


# Key path → how the helper's value and the caller's meet. A toolset's own line says whether it is
# on; its options' lines apply only while both have it on.
RULES: dict[str, Callable[[Any, Any], Any]] = {
    "tools.code": _both,
    "tools.code.read_only": _either,
    "tools.code.auto_write": _both,
    "tools.shell": _both,
    "tools.shell.sandbox": _sandbox,
    "tools.shell.network": _both,
    "tools.shell.auto_run": _both,
    "tools.shell.write": _common,
    "tools.shell.env_keep": _common,
    "tools.shell.limits": _lower_limits,
    "tools.skills": _both,
    "tools.ask": _both,
    "tools.delegate": _both,
    "tools.delegate.agents": _common,
    "tools.delegate.max_parallel": min,
    "tools.delegate.max_depth": lambda mine, theirs: min(mine, theirs - 1),
    "mcp_servers": _servers,
    "no_save": _either,
    "mode": lambda mine, theirs: "agent" if mine == "bot" else mine,
}


def _meet_options(kind: type, name: str, mine: Any, theirs: Any) -> Any:
    """The options of one toolset both have on, each by its rule."""
    return kind(**{field.name: RULES[f"tools.{name}.{field.name}"](getattr(mine, field.name),
                                                                   getattr(theirs, field.name))
                   for field in dataclasses.fields(kind)})


def narrow_helper(helper: AgentConfig, caller: AgentConfig) -> AgentConfig:
    """The entry a helper runs with when `caller` hands it a task: `helper` narrowed by `caller`."""
    mine, theirs = helper.tools, caller.tools
    sets: dict[str, Any] = {}
    for name, kind in (("code", CodeOptions), ("shell", ShellOptions), ("delegate", DelegateOptions)):
        on = RULES[f"tools.{name}"](getattr(mine, name) is not None, getattr(theirs, name) is not None)
        sets[name] = _meet_options(kind, name, getattr(mine, name), getattr(theirs, name)) if on else None
    if sets["delegate"] is not None and sets["delegate"].max_depth < 1:
        sets["delegate"] = None   # the caller's last level: its helpers cannot delegate
    skills = RULES["tools.skills"](mine.skills, theirs.skills)
    ask = RULES["tools.ask"](mine.ask, theirs.ask)
    on = {"code": sets["code"] is not None, "shell": sets["shell"] is not None, "skills": skills, "ask": ask,
          "delegate": sets["delegate"] is not None}
    named = tuple(name for name in mine.named if on.get(name, False))
    tools = Toolsets(sets["code"], sets["shell"], skills, ask, named, sets["delegate"])
    return dataclasses.replace(
        helper, tools=tools, mcp_servers=RULES["mcp_servers"](helper.mcp_servers, caller.mcp_servers),
        no_save=RULES["no_save"](helper.no_save, caller.no_save), mode=RULES["mode"](helper.mode, caller.mode))


def wider_keys(entry: AgentConfig, creator: AgentConfig) -> list[str]:
    """The keys at which `entry` would get more than `creator` — where narrowing it by `creator`
    (the rule a helper runs under) changes it. An agent a bot defines must come out empty: it is
    stored as written, never silently cut down, so what the person approves is what runs."""
    narrowed = narrow_helper(entry, creator)
    wider = []
    for name in ("code", "shell", "delegate"):
        mine, kept = getattr(entry.tools, name), getattr(narrowed.tools, name)
        if (mine is None) != (kept is None):
            wider.append(f"tools.{name}")
        elif mine is not None:
            wider += [f"tools.{name}.{field.name}" for field in dataclasses.fields(mine)
                      if getattr(mine, field.name) != getattr(kept, field.name)]
    wider += [f"tools.{name}" for name in ("skills", "ask")
              if getattr(entry.tools, name) != getattr(narrowed.tools, name)]
    wider += [key for key in ("mcp_servers", "no_save") if getattr(entry, key) != getattr(narrowed, key)]
    return wider
