from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from iota.config import entries, settings
from iota.config import starter
from iota.errors import ConfigError, MissingAPIKey

BASE = """\
providers:
  oa: {type: openai}
  an: {type: anthropic, key: sk-from-config}
models:
  gpt: oa:gpt-5.2
  claude: {provider: an, id: claude-x, context_window: 200k, temperature: 0.5}
agents:
  default: {model: gpt}
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def project(tmp_path):
    directory = tmp_path / "project"
    directory.mkdir()
    return directory


def load_user(fake_home, project, text):
    path = write(fake_home / ".iota.yaml", text)
    return path, settings.load(project)


def test_user_tier_then_project_tier_merged_by_whole_entry(fake_home, project):
    write(fake_home / ".iota.yaml", BASE + "  coder: {model: gpt, description: from user, mode: agent}\n")
    write(project / ".iota.yaml", "agents:\n  coder: {model: claude}\n")
    loaded = settings.load(project)
    assert loaded.user_file == fake_home / ".iota.yaml"
    assert loaded.project_file == project / ".iota.yaml"
    coder = loaded.agents["coder"]
    # whole entry replaced: the user's description and mode do not leak through
    assert (coder.model, coder.description, coder.mode) == ("claude", None, "chat")
    assert list(loaded.agents) == ["default", "coder"]
    assert set(loaded.models) == {"gpt", "claude"}


def test_yml_is_read_when_yaml_is_absent(fake_home, project):
    write(fake_home / ".iota.yml", BASE)
    assert settings.load(project).user_file == fake_home / ".iota.yml"


def test_explicit_file_is_read_alone(fake_home, project, tmp_path):
    write(fake_home / ".iota.yaml", BASE)
    write(project / ".iota.yaml", "agents:\n  other: {model: gpt}\n")
    explicit = write(tmp_path / "only.yaml", "providers:\n  p: {type: openai}\n")
    loaded = settings.load(project, explicit)
    assert loaded.files == [explicit]
    assert list(loaded.providers) == ["p"] and loaded.agents == {}


def test_explicit_file_missing(project, tmp_path):
    with pytest.raises(ConfigError, match=r"^config .*nope.yaml: no such file$"):
        settings.load(project, tmp_path / "nope.yaml")


@pytest.mark.parametrize("text, message", [
    ("colors: {}\n", "colors: unknown top-level key (want providers:, models:, agents:, mcp_servers:)"),
    (BASE + "  coder: {modle: gpt}\n", "agents.coder.modle: unknown key (want model, choices, system,"),
    (BASE + "  coder: {model: gpt, url: http://x}\n", "agents.coder.url: url is a key of a provider or an MCP server, not of an agent"),
    (BASE + "  coder: {model: gpt, workspace: true}\n",
     "agents.coder.workspace: unknown key (workspace: true became mode: agent)"),
    (BASE + "  coder: {model: gpt, tools: {browser: {}}}\n",
     "agents.coder.tools.browser: unknown toolset (want shell, code, skills, ask, delegate)"),
    (BASE + "  coder: {model: gpt, tools: {code: {auto_writes: true}}}\n",
     "agents.coder.tools.code.auto_writes: unknown key (want read_only, auto_write)"),
    (BASE + "  coder: {model: gpt, no_save: maybe}\n", 'agents.coder.no_save: want true or false, got "maybe"'),
    (BASE + "  coder: {model: gpt, mode: bot, journal: later}\n", 'agents.coder.journal: want true or false, got "later"'),
    (BASE + "  coder: {model: gpt, tools: {shell: {auto_run: 1}}}\n",
     "agents.coder.tools.shell.auto_run: want true or false, got 1"),
    ("providers:\n  g: {type: palm}\n",
     'providers.g.type: unknown provider type "palm" (supported: anthropic, openai, openresponses, gemini, bedrock, vertex)'),
    ("providers:\n  aws: {type: bedrock, key: k}\n",
     "providers.aws.key: key is for anthropic, openai, openresponses and gemini providers, not bedrock"),
    ("providers:\n  oa: {type: openai, region: us-east-1}\n",
     "providers.oa.region: region is for bedrock and vertex providers, not openai"),
    ("providers:\n  aws: {type: bedrock, project_id: p}\n", "providers.aws.project_id: project_id is for vertex providers, not bedrock"),
    (BASE + "  coder: {model: gpt, tools: {code: {read_only: true, auto_write: true}}}\n",
     "agents.coder.tools.code: read_only and auto_write contradict each other: "
     "auto_write approves writes the set does not offer"),
    (BASE + "  coder: {model: gpt, tools: {shell: {sandbox: always}}}\n",
     'agents.coder.tools.shell.sandbox: sandbox must be "auto" or "off", got "always"'),
    (BASE + "  coder: {model: nothing}\n", 'agents.coder.model: unknown model "nothing" (configured: gpt, claude)'),
    (BASE + "  coder: {model: gpt, title_model: tiny}\n",
     'agents.coder.title_model: unknown model "tiny" (configured: gpt, claude)'),
    (BASE + "  coder: {model: gpt, titel_model: gpt}\n", "agents.coder.titel_model: unknown key"),
    (BASE.replace("oa:gpt-5.2", "zz:gpt-5.2"), 'models.gpt.provider: unknown provider "zz" (configured: oa, an)'),
    (BASE + "  coder: {model: gpt, context_window: huge}\n",
     'agents.coder.context_window: want a size from 1 to 100m tokens, like 200k or 1m, got "huge"'),
    (BASE + "  coder: {model: gpt, context_window: 1e23}\n",
     'agents.coder.context_window: want a size from 1 to 100m tokens, like 200k or 1m, got "1e23"'),
    (BASE + "  coder: {model: gpt, context_window: 100000000000000000000000}\n",
     "agents.coder.context_window: want a size from 1 to 100m tokens, like 200k or 1m, got 100000000000000000000000"),
    (BASE + "  coder: {model: gpt, context_window: 1.0e+23}\n",
     "agents.coder.context_window: want a size from 1 to 100m tokens, like 200k or 1m, got 1e+23"),
    (BASE + "  coder: {model: gpt, context_window: 101m}\n",
     'agents.coder.context_window: want a size from 1 to 100m tokens, like 200k or 1m, got "101m"'),
    ("mcp_servers:\n  x: {command: 42}\n", "mcp_servers.x.command: want the program to run, as text, got 42"),
    (BASE + "  coder: {model: gpt, effort: extreme}\n",
     'agents.coder.effort: effort must be one of minimal, low, medium, high, got "extreme"'),
    (BASE + "  coder: {model: gpt, mcp_servers: [nope]}\n",
     'agents.coder.mcp_servers: unknown MCP server "nope" (configured: none)'),
    ("models:\n  bad: justaname\n", 'models.bad: want provider:id or a mapping, got "justaname"'),
])
def test_the_audit_names_file_and_coordinate(fake_home, project, text, message):
    path = write(fake_home / ".iota.yaml", text)
    with pytest.raises(ConfigError) as caught:
        settings.load(project)
    assert str(caught.value).startswith(f"config {path}: {message}")
    assert "\n" not in str(caught.value)


def test_yaml_11_booleans_are_accepted(fake_home, project):
    _, loaded = load_user(fake_home, project, BASE + "  coder: {model: gpt, no_save: yes, notify: off}\n")
    assert loaded.agents["coder"].no_save is True and loaded.agents["coder"].notify is False


def test_a_bot_keeps_a_journal_unless_journal_false(fake_home, project):
    _, loaded = load_user(fake_home, project, BASE + "  coder: {model: gpt, mode: bot}\n"
                                                     "  quiet: {model: gpt, mode: bot, journal: false}\n")
    assert loaded.agents["coder"].journal is True and loaded.agents["quiet"].journal is False


@pytest.mark.parametrize("text", ["agents: [unclosed\n", "key: : :\n  - x\n"])
def test_a_file_that_is_not_yaml_is_skipped_with_a_warning(fake_home, project, text):
    write(fake_home / ".iota.yaml", BASE)
    bad = write(project / ".iota.yaml", text)
    loaded = settings.load(project)
    assert loaded.project_file is None and list(loaded.agents) == ["default"]
    assert len(loaded.warnings) == 1 and loaded.warnings[0].startswith(f"config {bad}: not valid YAML")


def test_an_unreadable_file_is_skipped_with_a_warning(fake_home, project):
    write(fake_home / ".iota.yaml", BASE)
    (project / ".iota.yaml").mkdir()  # a directory cannot be read as a file
    loaded = settings.load(project)
    assert loaded.warnings and "cannot be read" in loaded.warnings[0] and "skipped" in loaded.warnings[0]


def test_toolsets_presence_enables_false_disables(fake_home, project):
    _, loaded = load_user(fake_home, project, BASE + (
        "  coder:\n    model: gpt\n    tools:\n      code:\n      shell: {auto_run: true, write: [~/x]}\n"
        "      ask: false\n"))
    tools = loaded.agents["coder"].tools
    assert tools.code is not None and tools.code.auto_write is False
    assert tools.shell.auto_run is True and tools.shell.sandbox == "auto" and tools.shell.write == ("~/x",)
    assert tools.ask is False and tools.skills is True
    assert tools.named == ("code", "shell")
    assert loaded.agents["default"].tools.code is None and loaded.agents["default"].tools.named == ()
    _, loaded = load_user(fake_home, project, BASE + "  coder: {model: gpt, tools: {code: false}}\n")
    assert loaded.agents["coder"].tools.code is None


@pytest.mark.parametrize("text, size", [("200k", 200_000), ("1m", 1_000_000), ("1.5m", 1_500_000),
                                        ("1b", 10**9), (32000, 32000), ("8.2k", 8200)])
def test_sizes(text, size):
    assert entries.parse_size(text) == size


def test_format_size():
    from iota.text import format_size

    assert [format_size(n) for n in (8200, 128_000, 1_500_000, 999)] == ["8.2k", "128k", "1.5m", "999"]


def test_layered_parameters_agent_over_model_over_default(fake_home, project):
    _, loaded = load_user(fake_home, project, BASE + (
        "  a: {model: claude}\n  b: {model: claude, context_window: 64k, temperature: 0.1, effort: high}\n"))
    a = settings.resolve_model(loaded, loaded.agents["a"])
    b = settings.resolve_model(loaded, loaded.agents["b"])
    default = settings.resolve_model(loaded, loaded.agents["default"])
    assert (a.context_window, a.temperature, a.window_source) == (200_000, 0.5, "model")
    assert (b.context_window, b.temperature, b.effort, b.window_source) == (64_000, 0.1, "high", "agent")
    assert (default.context_window, default.window_source) == (128_000, "default")
    direct = settings.resolve_model(loaded, loaded.agents["default"], "an:claude-y")
    assert (direct.provider.name, direct.id) == ("an", "claude-y")


def test_unknown_agent_and_no_model(fake_home, project):
    _, loaded = load_user(fake_home, project, BASE + "  bare:\n")
    with pytest.raises(ConfigError, match='^unknown agent "x"\n  configured agents: default, bare$'):
        settings.find_agent(loaded, "x")
    with pytest.raises(ConfigError, match=re.escape("no model chosen: set agents.bare.model or pass -M")):
        settings.resolve_model(loaded, loaded.agents["bare"])


def test_api_key_environment_wins_then_config_then_error(fake_home, project, monkeypatch):
    _, loaded = load_user(fake_home, project, BASE)
    assert settings.api_key(loaded.providers["an"], project) == "sk-from-config"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env")
    assert settings.api_key(loaded.providers["an"], project) == "sk-env"
    with pytest.raises(MissingAPIKey, match=re.escape(
            "API key is required: set OPENAI_API_KEY or providers.oa.key in your config")):
        settings.api_key(loaded.providers["oa"], project)
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    _, loaded = load_user(fake_home, project, "providers:\n  an: {type: anthropic}\n")
    with pytest.raises(MissingAPIKey, match=re.escape(
            "API key is required: set ANTHROPIC_API_KEY or providers.an.key in your config")):
        settings.api_key(loaded.providers["an"], project)


def test_openresponses_takes_the_openai_key_and_gemini_the_google_key(fake_home, project, monkeypatch):
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    _, loaded = load_user(fake_home, project, "providers:\n  resp: {type: openresponses}\n  gem: {type: gemini}\n")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    assert settings.api_key(loaded.providers["resp"], project) == "sk-openai"
    with pytest.raises(MissingAPIKey, match=re.escape(
            "API key is required: set GOOGLE_API_KEY or providers.gem.key in your config")):
        settings.api_key(loaded.providers["gem"], project)
    monkeypatch.setenv("GOOGLE_API_KEY", "g-key")
    assert settings.api_key(loaded.providers["gem"], project) == "g-key"


def test_bedrock_and_vertex_take_a_region_and_a_project_and_need_no_key(fake_home, project):
    _, loaded = load_user(fake_home, project, "providers:\n  aws: {type: bedrock, region: eu-west-3}\n"
                                              "  gcp: {type: vertex, region: us-east5, project_id: my-project}\n")
    aws, gcp = loaded.providers["aws"], loaded.providers["gcp"]

    assert (aws.type, aws.region, gcp.type, gcp.region, gcp.project_id) == ("bedrock", "eu-west-3", "vertex", "us-east5",
                                                                             "my-project")
    assert settings.api_key(aws, project) == "" and settings.api_key(gcp, project) == ""


def test_expansion(fake_home, project, monkeypatch):
    monkeypatch.setenv("MY_KEY", "secret")
    _, loaded = load_user(fake_home, project, (
        "providers:\n  oa: {type: openai, key: '${env:MY_KEY}', url: 'http://h/${cwd}${/}x'}\n"))
    provider = loaded.providers["oa"]
    assert settings.api_key(provider, project) == "secret"
    assert settings.base_url(provider, project) == f"http://h/{project}{os.sep}x"
    assert settings.expand("${userHome}|${appHome}|${workspaceFolder}", project) == (
        f"{fake_home}|{fake_home / '.iota'}|{project}")
    with pytest.raises(ConfigError, match="unknown variable"):
        settings.expand("${nope}", project)


def test_starter_loads_runs_and_refuses_to_overwrite(fake_home, project):
    path = fake_home / ".iota.yaml"
    message = starter.write_starter(path)
    assert message == (f"Wrote {path} (a starter config: openai + gpt-5.2; edit it, or set OPENAI_API_KEY and go)")
    loaded = settings.load(project)
    assert {"default", "coder"} <= set(loaded.agents)
    assert settings.resolve_model(loaded, loaded.agents["default"]).provider.type == "openai"
    before = path.read_text()
    with pytest.raises(ConfigError, match="already exists"):
        starter.write_starter(path)
    assert path.read_text() == before


def test_starter_prefers_anthropic_when_only_its_key_is_set(fake_home, project, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk")
    assert "anthropic + claude" in starter.write_starter(fake_home / ".iota.yaml")
    loaded = settings.load(project)
    assert settings.resolve_model(loaded, loaded.agents["default"]).provider.type == "anthropic"


def test_starter_bot_entry_uncomments_into_a_bot(fake_home, project):
    text = starter.starter_text()
    assert "  # helper:\n  #   mode: bot" in text
    uncommented = re.sub(r"^  # (  |helper)", lambda m: "  " + m.group(1), text, flags=re.M)
    write(fake_home / ".iota.yaml", uncommented)
    bot = settings.load(project).agents["helper"]
    assert bot.mode == "bot"
    assert bot.tools.code.auto_write is True
    assert (bot.tools.shell.sandbox, bot.tools.shell.auto_run) == ("auto", True)


def test_sandbox_off_unquoted_is_yaml_false_and_still_means_off(fake_home, project):
    _, loaded = load_user(fake_home, project, BASE + "  coder: {model: gpt, tools: {shell: {sandbox: off}}}\n")
    assert loaded.agents["coder"].tools.shell.sandbox == "off"


def test_title_model_names_the_model_of_the_title_pass(fake_home, project):
    _, loaded = load_user(fake_home, project, BASE + "  coder: {model: claude, title_model: gpt}\n"
                                                     "  direct: {model: claude, title_model: 'an:claude-haiku'}\n")
    assert loaded.agents["coder"].title_model == "gpt"
    assert loaded.agents["direct"].title_model == "an:claude-haiku"
    assert loaded.agents["default"].title_model is None  # the title pass asks the chat's own model
