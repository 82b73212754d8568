"""`inherit:` on a bot entry: the key audit, the bots it reaches in order, and the refusals when the
config is loaded (unknown names, cycles, a bot that is not one) — and a project's config file that
would read the person's bot's memory through it."""

from __future__ import annotations

from pathlib import Path

import pytest

from iota.config import settings
from iota.config.inheritance import inherited_bots
from iota.errors import ConfigError

HEAD = """\
providers:
  p: {type: openai, key: k}
models:
  m: p:x
agents:
"""


def load(home: Path, project: Path, agents: str) -> settings.Config:
    (home / ".iota.yaml").write_text(HEAD + agents)
    return settings.load(project)


@pytest.fixture
def project(tmp_path):
    path = tmp_path / "project"
    path.mkdir()
    return path


def test_inheritance_is_transitive_in_order_each_bot_once(fake_home, project):
    config = load(fake_home, project, """\
  base: {mode: bot, model: m}
  main: {mode: bot, model: m, inherit: [base]}
  docs: {mode: bot, model: m, inherit: [base]}
  reviewer: {mode: bot, model: m, inherit: [main, docs]}
""")
    assert config.agents["reviewer"].inherit == ("main", "docs")
    assert inherited_bots(config.agents, "reviewer") == ("main", "base", "docs")
    assert inherited_bots(config.agents, "base") == ()


@pytest.mark.parametrize("agents, where, message", [
    ("  main: {mode: bot, model: m}\n  reviewer: {mode: bot, model: m, inherit: [mian]}\n",
     "agents.reviewer.inherit", 'unknown bot "mian" (configured bots: main, reviewer)'),
    ("  helper: {model: m}\n  reviewer: {mode: bot, model: m, inherit: [helper]}\n",
     "agents.reviewer.inherit", 'unknown bot "helper" (configured bots: reviewer)'),
    ("  a: {mode: bot, model: m, inherit: [a]}\n", "agents.a.inherit", "inheritance cycle: a → a"),
    ("  a: {mode: bot, model: m, inherit: [b]}\n  b: {mode: bot, model: m, inherit: [c]}\n"
     "  c: {mode: bot, model: m, inherit: [a]}\n", "agents.a.inherit", "inheritance cycle: a → b → c → a"),
    ("  main: {mode: bot, model: m}\n  chat: {model: m, inherit: [main]}\n",
     "agents.chat.inherit", "inherit is for mode: bot, and agents.chat is mode: chat"),
    ("  main: {mode: bot, model: m}\n  reviewer: {mode: bot, model: m, inherit: main}\n",
     "agents.reviewer.inherit", "want a list of text, got 'main'"),
])
def test_a_bad_inherit_is_a_config_error(fake_home, project, agents, where, message):
    with pytest.raises(ConfigError) as caught:
        load(fake_home, project, agents)
    assert str(caught.value) == f"config {fake_home / '.iota.yaml'}: {where}: {message}"


def test_the_key_is_audited_where_it_stands(fake_home, project):
    with pytest.raises(ConfigError) as caught:
        load(fake_home, project, "  main: {mode: bot, model: m, inherits: [x]}\n")
    assert "agents.main.inherits: unknown key (want model, choices," in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        (fake_home / ".iota.yaml").write_text(HEAD.replace("m: p:x", "m: {provider: p, id: x, inherit: [a]}"))
        settings.load(project)
    assert str(caught.value).endswith("models.m.inherit: inherit is a key of an agent, not of a model")


def test_a_project_file_cannot_read_your_bots_memory_until_trusted(fake_home, project):
    (project / ".iota.yaml").write_text("agents:\n  spy: {mode: bot, model: m, inherit: [main]}\n"
                                        "  helper: {mode: bot, model: m}\n")
    config = load(fake_home, project, "  main: {mode: bot, model: m}\n")
    assert "spy" not in config.agents and "helper" not in config.agents   # a new bot is left out too
    assert [finding.describe() for finding in config.project_review.findings] == [
        "agents.spy: mode makes it a bot", "agents.spy: inherit reads the memory of bot main",
        "agents.helper: mode makes it a bot"]


def test_an_inherited_name_that_cannot_be_a_directory_is_refused_at_start(fake_home, project):
    """A name is checked before it becomes a path under ~/.iota/bots: `../notes` would read
    ~/.iota/notes/ into the prompt."""
    from iota.bots.bot import bot_memory
    from iota.errors import BotError
    from iota.paths import app_home

    (app_home() / "notes").mkdir(parents=True)
    (app_home() / "notes" / "MEMORY.md").write_text("not a bot's memory\n")
    config = load(fake_home, project, '  "../notes": {mode: bot, model: m}\n'
                                      '  coder: {mode: bot, model: m, inherit: ["../notes"]}\n')
    with pytest.raises(BotError, match='^bot name "../notes" must be letters, digits'):
        bot_memory("coder", config, project)
