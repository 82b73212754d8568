"""An agent's `auto_continue:` and `timezone:` (a bot's work) and `upkeep:`, `upkeep_every:`,
`upkeep_model:` (its upkeep after turns): defaults, values, one-line refusals."""

from __future__ import annotations

import pytest

from iota.config import entries, settings
from iota.errors import ConfigError

HEAD = "providers:\n  p: {type: openai, key: k}\nmodels:\n  m: p:x\nagents:\n"


def load(fake_home, tmp_path, agent: str) -> entries.AgentConfig:
    (fake_home / ".iota.yaml").write_text(HEAD + agent)
    return settings.load(tmp_path).agents["b"]


def test_defaults_and_values(fake_home, tmp_path):
    assert (load(fake_home, tmp_path, "  b: {model: m, mode: bot}\n").auto_continue,
            load(fake_home, tmp_path, "  b: {model: m, mode: bot}\n").timezone) == (10, None)
    agent = load(fake_home, tmp_path, "  b: {model: m, mode: bot, auto_continue: 0, timezone: America/New_York}\n")
    assert (agent.auto_continue, agent.timezone) == (0, "America/New_York")


def test_upkeep_defaults_and_values(fake_home, tmp_path):
    agent = load(fake_home, tmp_path, "  b: {model: m, mode: bot}\n")
    assert (agent.upkeep, agent.upkeep_every, agent.upkeep_model) == (True, 5, None)
    agent = load(fake_home, tmp_path, "  b: {model: m, mode: bot, upkeep: off, upkeep_every: 12, upkeep_model: m}\n")
    assert (agent.upkeep, agent.upkeep_every, agent.upkeep_model) == (False, 12, "m")


@pytest.mark.parametrize("entry, message", [
    ("upkeep_every: 0", "agents.b.upkeep_every: want a number of turns from 1 to 1000 (upkeep: false turns it off), got 0"),
    ("upkeep_every: true", "agents.b.upkeep_every: want a number of turns from 1 to 1000 (upkeep: false turns it off), got True"),
    ("upkeep: sometimes", 'agents.b.upkeep: want true or false, got "sometimes"'),
    ("upkeep_model: tiny", 'agents.b.upkeep_model: unknown model "tiny" (configured: m)'),
    ("auto_continue: -1", "agents.b.auto_continue: want a number of turns from 0 to 1000 (0 turns it off), got -1"),
    ("auto_continue: yes", "agents.b.auto_continue: want a number of turns from 0 to 1000 (0 turns it off), got True"),
    ("auto_continue: 1e20", "agents.b.auto_continue: want a number of turns from 0 to 1000 (0 turns it off), got '1e20'"),
    ("auto_continue: 100000000000000000000", "agents.b.auto_continue: want a number of turns from 0 to 1000 "
                                            "(0 turns it off), got 100000000000000000000"),
    ("upkeep_every: 1001", "agents.b.upkeep_every: want a number of turns from 1 to 1000 (upkeep: false turns it off), "
                           "got 1001"),
    ("auto_continue: 2.5", "agents.b.auto_continue: want a number of turns from 0 to 1000 (0 turns it off), got 2.5"),
    ("timezone: Europe/Atlantis", 'agents.b.timezone: unknown time zone "Europe/Atlantis" (want an IANA name such '
                                  "as Europe/Berlin)"),
    ("timezne: UTC", "agents.b.timezne: unknown key (want model, choices,"),
])
def test_a_bad_value_fails_the_load_at_its_key(fake_home, tmp_path, entry, message):
    with pytest.raises(ConfigError) as caught:
        load(fake_home, tmp_path, f"  b: {{model: m, mode: bot, {entry}}}\n")
    assert message in str(caught.value) and "\n" not in str(caught.value)
