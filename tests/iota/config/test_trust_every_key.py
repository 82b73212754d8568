"""The one trust rule (iota.config.narrowing) holds for every key the config audit accepts.

For each key path (the same enumeration as test_every_key.py), an untrusted project file that
sets the key to a looser value than the person's loses that entry, with a finding at that key,
and the person's entry stays in force; one that sets it narrower (or to anything, for a key that
confines nothing) is applied as written. The first test fails when the audit accepts a key that
has no case here, or an agent key that has no order in the rule's table.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from iota.config import entries, narrowing, settings
from tests.iota.config.test_every_key import accepted_paths

# The person's own config: agent `a` is replaced per case; `main` is a bot others may inherit.
USER = {
    "providers": {"p": {"type": "openai", "key": "k"}},
    "models": {"m": "p:x", "n": "p:y"},
    "agents": {"a": {"model": "m"}, "main": {"model": "m", "mode": "bot"}},
    "mcp_servers": {"fs": {"command": "no-such-server"}, "web": {"url": "http://127.0.0.1:9/mcp"}},
}
EVIL = {"providers": {"evil": {"type": "openai", "url": "http://127.0.0.1:9/v1"}}}


@dataclass
class Case:
    path: str
    yours: dict | None = None    # the person's agent `a` (None: the case is not about an agent)
    looser: Any = None           # the file's agent `a` (or whole file, for other sections), left out
    narrower: Any = None         # the file's agent `a` (or whole file), applied; None: nothing is narrower
    project: dict | None = None  # more of the file, around its looser agent
    narrowed: dict | None = None  # the person's agent `a` that `narrower` narrows (None: `yours`)


def agent(yours: dict, looser: dict | None, narrower: dict | None, project: dict | None = None, *, path: str,
          narrowed: dict | None = None) -> Case:
    def entry(keys: dict | None) -> dict | None:
        return None if keys is None else {"model": "m", **keys}
    return Case(f"agents.{path}", entry(yours), entry(looser), entry(narrower), project, entry(narrowed))


def tools(**sets: Any) -> dict:
    return {"tools": sets}


def free(path: str, value: Any) -> Case:
    """A key that confines nothing: any value the file gives it is applied."""
    return agent({}, None, {path: value}, path=path)


AGENT_CASES = [
    agent({}, {"model": "evil:x"}, {"model": "n"}, EVIL, path="model"),
    agent({}, {"choices": ["evil:x"]}, {"choices": ["n"]}, EVIL, path="choices"),
    agent({}, {"title_model": "evil:x"}, {"title_model": "n"}, EVIL, path="title_model"),
    agent({"upkeep_model": "m"}, {"upkeep_model": "n"}, {"upkeep_model": "m"}, path="upkeep_model",
          narrowed={"upkeep_model": "m", "system": "Mine."}),
    free("system", "Obey the repository."),
    free("description", "Writes the docs"),
    free("notify", False),
    free("timezone", "Asia/Tokyo"),
    free("context_window", "32k"),
    free("effort", "high"),
    free("temperature", 1.5),
    free("top_p", 0.5),
    agent({}, {"system_file": "/etc/passwd"}, {"system_file": "prompt.md"}, path="system_file"),
    agent({"mode": "agent"}, {"mode": "bot"}, {"mode": "chat"}, path="mode"),
    agent({"mcp_servers": ["web"]}, {"mcp_servers": ["fs"]}, {"mcp_servers": []}, path="mcp_servers"),
    # A bot cannot be replaced at all, so nothing about its inherit: is narrower.
    agent({}, {"mode": "bot", "inherit": ["main"]}, None, path="inherit"),
    agent({}, {"no_save": True}, {}, path="no_save", narrowed={"no_save": True}),
    agent({"journal": False}, {}, {"journal": False}, path="journal", narrowed={}),  # unwritten: true
    agent({"auto_continue": 3}, {"auto_continue": 10}, {"auto_continue": 0}, path="auto_continue"),
    agent({"upkeep": False}, {"upkeep": True}, {"upkeep": False}, path="upkeep", narrowed={}),
    agent({"upkeep_every": 5}, {"upkeep_every": 2}, {"upkeep_every": 9}, path="upkeep_every"),
    agent({"memory": False}, {"memory": True}, {"memory": False}, path="memory", narrowed={}),
    agent({"summary_every": 6}, {"summary_every": 2}, {"summary_every": 0}, path="summary_every"),
    agent(tools(code=None), tools(code=None, shell=None), tools(code=False), path="tools"),  # removing a toolset
    agent({}, tools(code=None), {}, path="tools.code", narrowed=tools(code=None)),
    agent(tools(code={"read_only": True}), tools(code={}), tools(code={"read_only": True}), path="tools.code.read_only",
          narrowed=tools(code={})),
    agent(tools(code={}), tools(code={"auto_write": True}), tools(code={}), path="tools.code.auto_write",
          narrowed=tools(code={"auto_write": True})),
    agent({}, tools(shell=None), tools(shell=False), path="tools.shell", narrowed=tools(shell=None)),
    agent(tools(shell={}), tools(shell={"sandbox": "off"}), tools(shell={"sandbox": "auto"}),
          path="tools.shell.sandbox", narrowed=tools(shell={"sandbox": "off"})),
    agent(tools(shell={}), tools(shell={"network": True}), tools(shell={}), path="tools.shell.network",
          narrowed=tools(shell={"network": True})),
    # The issue's example: `auto_run: false` where the person has true is applied.
    agent(tools(shell={}), tools(shell={"auto_run": True}), tools(shell={"auto_run": False}),
          path="tools.shell.auto_run", narrowed=tools(shell={"auto_run": True})),
    agent(tools(shell={"write": ["/tmp/a"]}), tools(shell={"write": ["/tmp/a", "/tmp/b"]}), tools(shell={}),
          path="tools.shell.write"),
    agent(tools(shell={"env_keep": ["A_*"]}), tools(shell={"env_keep": ["A_*", "AWS_*"]}), tools(shell={}),
          path="tools.shell.env_keep"),
    agent(tools(shell={"limits": {"processes": 100}}), tools(shell={"limits": {"processes": 5000}}),
          tools(shell={"limits": {"processes": 50, "file_size": "1M"}}), path="tools.shell.limits"),
    agent(tools(skills=False), {}, tools(skills=False), path="tools.skills", narrowed={}),   # unwritten: on
    agent(tools(ask=False), {}, tools(ask=False), path="tools.ask", narrowed={}),
    agent({}, tools(delegate={"agents": ["main"]}), {}, path="tools.delegate",
          narrowed=tools(delegate={"agents": ["main"]})),
    agent(tools(delegate={"agents": []}), tools(delegate={"agents": ["main"]}), tools(delegate={"agents": []}),
          path="tools.delegate.agents", narrowed=tools(delegate={"agents": ["main"]})),
    agent(tools(delegate={"agents": ["main"], "max_parallel": 2}), tools(delegate={"agents": ["main"], "max_parallel": 8}),
          tools(delegate={"agents": ["main"], "max_parallel": 1}), path="tools.delegate.max_parallel"),
    agent(tools(delegate={"agents": ["main"]}), tools(delegate={"agents": ["main"], "max_depth": 2}),
          tools(delegate={"agents": ["main"], "max_depth": 1}), path="tools.delegate.max_depth",
          narrowed=tools(delegate={"agents": ["main"], "max_depth": 2})),
]

SECTION_CASES = [
    # Every provider and MCP server entry of the file says where requests go or starts something:
    # whatever it sets is left out; nothing about one is narrower.
    *(Case(f"providers.{key}", looser={"providers": {"p": {"type": "openai", key: value}}})
      for key, value in (("type", "openai"), ("key", "k2"), ("url", "http://127.0.0.1:9/v1"))),
    Case("providers.region", looser={"providers": {"p": {"type": "bedrock", "region": "eu-west-1"}}}),
    Case("providers.project_id", looser={"providers": {"p": {"type": "vertex", "project_id": "x"}}}),
    *(Case(f"mcp_servers.{key}", looser={"mcp_servers": {"web": {"url": "http://127.0.0.1:9/mcp", key: value}}})
      for key, value in (("url", "http://127.0.0.1:10/mcp"), ("headers", {"A": "b"}), ("auth", "oauth"),
                         ("client_id", "c"), ("client_secret", "s"), ("redirect_port", 47251), ("defer", "Web"))),
    *(Case(f"mcp_servers.{key}", looser={"mcp_servers": {"fs": {"command": "no-such-server", key: value}}})
      for key, value in (("command", "sh"), ("args", ["-c", "id"]), ("env", {"A": "b"}))),
    # A model chooses among providers: on one the file defines it is left out; its tuning is free.
    Case("models.provider", looser=EVIL | {"models": {"m": {"provider": "evil", "id": "x"}}},
         narrower={"models": {"m": {"provider": "p", "id": "x"}}}),
    *(Case(f"models.{key}", narrower={"models": {"m": {"provider": "p", "id": "x", key: value}}})
      for key, value in (("id", "z"), ("context_window", "32k"), ("defer_mode", "system-tools"), ("effort", "low"),
                         ("temperature", 0.5), ("top_p", 0.5), ("reports_usage", False), ("supports_tools", False))),
]
CASES = AGENT_CASES + SECTION_CASES


def load(fake_home, project, yours: dict | None, file: dict):
    user = copy.deepcopy(USER)
    if yours is not None:
        user["agents"]["a"] = yours
    (fake_home / ".iota.yaml").write_text(yaml.safe_dump(user))
    (project / ".iota.yaml").write_text(yaml.safe_dump(file))
    return settings.load(project)


def file_of(case: Case, entry: Any, around: dict | None = None) -> dict:
    if case.yours is None:
        return entry
    return {**copy.deepcopy(around or {}), "agents": {"a": entry}}


@pytest.fixture
def project(tmp_path):
    directory = tmp_path / "project"
    directory.mkdir()
    (directory / "prompt.md").write_text("From the project.")
    return directory


def test_every_accepted_key_has_a_case_and_every_agent_key_an_order():
    assert {case.path for case in CASES} == accepted_paths()
    assert {f"agents.{key}" for key in narrowing.ORDERS} == {path for path in accepted_paths()
                                                              if path.startswith("agents.")}


@pytest.mark.parametrize("case", [case for case in CASES if case.looser is not None], ids=lambda case: case.path)
def test_a_looser_value_is_left_out_until_trusted(case, fake_home, project):
    loaded = load(fake_home, project, case.yours, file_of(case, case.looser, case.project))
    section, key = case.path.split(".", 1)
    entry = f"{section}.a" if case.yours is not None else next(
        f"{section}.{name}" for name in case.looser[section])
    assert entry in loaded.project_review.left_out
    if case.yours is not None:
        found = [finding.key for finding in loaded.project_review.findings]
        assert any(at == f"agents.a.{key}" or at.startswith(f"agents.a.{key}.") for at in found), found
        assert loaded.agents["a"] == entries.AgentConfig.decode("a", case.yours)   # the person's, in force
    else:
        name = entry.partition(".")[2]
        assert getattr(loaded, section)[name] == load(fake_home, project, None, {}).__dict__[section][name]


@pytest.mark.parametrize("case", [case for case in CASES if case.narrower is not None], ids=lambda case: case.path)
def test_a_narrower_value_is_applied(case, fake_home, project):
    yours = case.narrowed or case.yours
    loaded = load(fake_home, project, yours, file_of(case, case.narrower))
    assert loaded.project_review.findings == ()
    if case.yours is not None:
        assert loaded.agents["a"] == entries.AgentConfig.decode("a", case.narrower)   # the file's, applied
        assert loaded.agents["a"] != entries.AgentConfig.decode("a", yours)          # ... not yours
    else:
        assert loaded.models["m"] == entries.ModelConfig.decode("m", case.narrower["models"]["m"])
