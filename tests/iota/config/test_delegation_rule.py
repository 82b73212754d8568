"""A helper never gets more than its caller (iota.config.delegation), key by key.

One case per key of every toolset the audit accepts (and the agent keys a helper's run depends
on): a helper whose entry is wider than its caller's at that key runs with the caller's value, and
one whose entry is narrower keeps its own. The first test fails when the audit accepts a toolset
key with no case here, or the rule has no line for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import pytest
import yaml

from iota.config import audit, settings
from iota.config.delegation import RULES, narrow_helper, wider_keys
from iota.config.entries import AgentConfig
from iota.errors import ConfigError


@dataclass
class Case:
    path: str
    caller: dict        # the caller's entry
    wider: dict         # a helper entry wider than the caller at `path`
    narrower: dict      # a helper entry narrower than (or equal to) the caller at `path`
    value: Callable[[AgentConfig], Any]


def tools(**sets: Any) -> dict:
    return {"tools": sets}


def code(name):
    return lambda agent: getattr(agent.tools.code, name) if agent.tools.code else None


def shell(name):
    return lambda agent: getattr(agent.tools.shell, name) if agent.tools.shell else None


def delegate(name):
    return lambda agent: getattr(agent.tools.delegate, name) if agent.tools.delegate else None


CASES = [
    Case("tools.code", {}, tools(code={}), {}, lambda agent: agent.tools.code is not None),
    Case("tools.code.read_only", tools(code={"read_only": True}), tools(code={}), tools(code={"read_only": True}),
         code("read_only")),
    Case("tools.code.auto_write", tools(code={}), tools(code={"auto_write": True}), tools(code={}), code("auto_write")),
    Case("tools.shell", {}, tools(shell={}), {}, lambda agent: agent.tools.shell is not None),
    Case("tools.shell.sandbox", tools(shell={}), tools(shell={"sandbox": "off"}), tools(shell={}), shell("sandbox")),
    Case("tools.shell.network", tools(shell={}), tools(shell={"network": True}), tools(shell={}), shell("network")),
    Case("tools.shell.auto_run", tools(shell={}), tools(shell={"auto_run": True}), tools(shell={}), shell("auto_run")),
    Case("tools.shell.write", tools(shell={"write": ["/tmp/a"]}), tools(shell={"write": ["/tmp/a", "/home"]}),
         tools(shell={"write": []}), shell("write")),
    Case("tools.shell.env_keep", tools(shell={"env_keep": ["A_*"]}), tools(shell={"env_keep": ["A_*", "AWS_*"]}),
         tools(shell={}), shell("env_keep")),
    Case("tools.shell.limits", tools(shell={"limits": {"processes": 100}}), tools(shell={"limits": {"processes": 5000}}),
         tools(shell={"limits": {"processes": 50}}), lambda agent: agent.tools.shell.limits.processes),
    Case("tools.skills", tools(skills=False), {}, tools(skills=False), lambda agent: agent.tools.skills),
    Case("tools.ask", tools(ask=False), {}, tools(ask=False), lambda agent: agent.tools.ask),
    # Delegation: a caller with max_depth 2 lets its helpers delegate once (max_depth 1 below it).
    Case("tools.delegate", {}, tools(delegate={"agents": ["x"]}), {}, lambda agent: agent.tools.delegate is not None),
    Case("tools.delegate.agents", tools(delegate={"agents": ["x"], "max_depth": 2}),
         tools(delegate={"agents": ["x", "y"]}), tools(delegate={"agents": []}), delegate("agents")),
    Case("tools.delegate.max_parallel", tools(delegate={"agents": ["x"], "max_depth": 2, "max_parallel": 2}),
         tools(delegate={"agents": ["x"], "max_parallel": 8}), tools(delegate={"agents": ["x"], "max_parallel": 1}),
         delegate("max_parallel")),
    Case("tools.delegate.max_depth", tools(delegate={"agents": ["x"], "max_depth": 2}),
         tools(delegate={"agents": ["x"], "max_depth": 2}), tools(delegate={"agents": ["x"], "max_depth": 1}),
         delegate("max_depth")),
    Case("mcp_servers", {"mcp_servers": ["fs"]}, {"mcp_servers": ["fs", "web"]}, {"mcp_servers": []},
         lambda agent: agent.mcp_servers),
    Case("no_save", {"no_save": True}, {}, {"no_save": True}, lambda agent: agent.no_save),
    Case("mode", {"mode": "agent"}, {"mode": "bot"}, {"mode": "chat"}, lambda agent: agent.mode),
]

# What the caller's value becomes for its helper, where it is not the caller's own value: a
# caller's helpers stand one level further down.
BELOW = {"tools.delegate.max_depth": 1, "mode": "agent"}


def test_every_toolset_key_has_a_case_and_a_rule():
    paths = {f"tools.{name}" for name in audit.TOOLSETS}
    paths |= {f"tools.{name}.{key}" for name in audit.TOOLSETS for key in audit.TOOLSET_KEYS[name]}
    assert paths <= {case.path for case in CASES}
    assert {case.path for case in CASES} == set(RULES)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.path)
def test_a_wider_helper_runs_with_its_callers_value(case):
    caller = AgentConfig.decode("lead", case.caller)
    helper = narrow_helper(AgentConfig.decode("helper", case.wider), caller)
    unbounded = case.value(AgentConfig.decode("helper", case.wider))
    expected = BELOW.get(case.path, case.value(caller))
    assert unbounded != expected, "the case's helper is not wider"
    assert case.value(helper) == expected


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.path)
def test_a_narrower_helper_keeps_its_own_value(case):
    caller = AgentConfig.decode("lead", case.caller)
    own = AgentConfig.decode("helper", case.narrower)
    assert case.value(narrow_helper(own, caller)) == case.value(own)


@pytest.mark.parametrize("case", [case for case in CASES if case.path != "mode"], ids=lambda case: case.path)
def test_an_agent_a_bot_defines_is_refused_at_each_key_where_it_is_wider(case):
    """The check behind `delegate` define (iota.bots.defined_agents): the same rule, as a refusal
    that names the key, never a silent cut. (mode is not a power: a defined agent runs as an agent.)"""
    caller = AgentConfig.decode("lead", case.caller)
    assert case.path in wider_keys(AgentConfig.decode("helper", case.wider), caller)
    assert case.path not in wider_keys(AgentConfig.decode("helper", case.narrower), caller)


def test_a_helper_of_a_caller_without_max_depth_cannot_delegate():
    caller = AgentConfig.decode("lead", tools(delegate={"agents": ["helper"]}))
    helper = AgentConfig.decode("helper", tools(delegate={"agents": ["lead"], "max_depth": 2}))
    assert narrow_helper(helper, caller).tools.delegate is None
    assert "delegate" not in narrow_helper(helper, caller).tools.named


def test_a_caller_with_every_mcp_server_leaves_the_helpers_list_and_the_helpers_all_takes_the_callers():
    assert narrow_helper(AgentConfig.decode("h", {"mcp_servers": ["fs"]}), AgentConfig.decode("c", {})).mcp_servers \
        == ("fs",)
    assert narrow_helper(AgentConfig.decode("h", {}), AgentConfig.decode("c", {"mcp_servers": ["fs"]})).mcp_servers \
        == ("fs",)


@pytest.mark.parametrize("helpers, message", [
    (["nobody"], 'unknown agent "nobody" (configured: lead)'),
    (["lead"], "an agent cannot be its own helper"),
])
def test_a_helper_the_config_does_not_have_is_refused_at_its_key(tmp_path, helpers, message):
    path = tmp_path / "iota.yaml"
    path.write_text(yaml.safe_dump({"providers": {"p": {"type": "openai", "key": "k"}}, "models": {"m": "p:x"},
                                    "agents": {"lead": {"model": "m", "tools": {"delegate": {"agents": helpers}}}}}))
    with pytest.raises(ConfigError) as refused:
        settings.load(tmp_path, path)
    assert str(refused.value) == f"config {path}: agents.lead.tools.delegate.agents: {message}"


@pytest.mark.parametrize("options, message", [
    ({"max_parallel": 0}, "max_parallel: want a number of helpers from 1 to 16, got 0"),
    ({"max_depth": 3}, "max_depth: want 1 (helpers cannot delegate) or 2 (they can, once), got 3"),
])
def test_a_bound_out_of_range_is_refused(tmp_path, options, message):
    path = tmp_path / "iota.yaml"
    path.write_text(yaml.safe_dump({"providers": {"p": {"type": "openai", "key": "k"}}, "models": {"m": "p:x"},
                                    "agents": {"lead": {"model": "m", "tools": {"delegate": options}}}}))
    with pytest.raises(ConfigError) as refused:
        settings.load(tmp_path, path)
    assert str(refused.value) == f"config {path}: agents.lead.tools.delegate.{message}"
