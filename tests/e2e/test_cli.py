"""The `iota` command's own subcommands: version, config, list."""

from __future__ import annotations

import re

from iota import __version__, paths
from iota.messages import USER, Message
from iota.sessions.bundle import Session


def test_version(iota):
    for args in (["version"], ["--version"], ["-V"]):
        result = iota(*args)
        assert (result.returncode, result.stdout) == (0, f"iota {__version__}\n")


def test_unknown_flag_is_a_usage_error(iota):
    assert iota("run", "--frobnicate").returncode == 2


def test_first_run_writes_the_starter_and_says_so(iota):
    result = iota("run", "-m", "hi")
    path = iota.home / ".iota.yaml"
    assert path.exists()
    lines = result.stderr.splitlines()
    assert lines[0] == f"Wrote {path} (a starter config: openai + gpt-5.2; edit it, or set OPENAI_API_KEY and go)"
    assert lines[1] == "Error: API key is required: set OPENAI_API_KEY or providers.openai.key in your config"
    assert result.returncode == 1
    # the second run finds the file and says nothing about it
    assert "Wrote" not in iota("run", "-m", "hi").stderr


def test_bare_iota_runs_the_default_agent(iota):
    iota.write_config("  default: {model: m}\n")
    result = iota()
    assert result.stderr == "Error: interactive mode requires a terminal; use -m/--message for piped input\n"


def test_config_init_refuses_an_existing_file(iota):
    result = iota("config", "init")
    path = iota.home / ".iota.yaml"
    assert result.returncode == 0 and path.exists() and result.stdout.startswith(f"Wrote {path}")
    again = iota("config", "init")
    assert again.returncode == 1 and again.stderr == f"Error: {path} already exists; edit it, or remove it first\n"


def test_config_check_prints_files_and_counts(iota):
    iota.write_config("  default: {model: m}\n  coder: {model: m}\n")
    (iota.cwd / ".iota.yaml").write_text("agents:\n  local: {model: m}\n")
    result = iota("config", "check")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (f"user config: {iota.home / '.iota.yaml'}\n"
                             f"project config: {iota.cwd / '.iota.yaml'}\n"
                             "OK: 1 provider(s), 1 model(s), 3 agent(s), 0 mcp server(s)\n")
    alone = iota.cwd / "alone.yaml"
    alone.write_text("providers:\n  p: {type: openai}\n")
    explicit = iota("-c", str(alone), "config", "check")
    assert explicit.stdout == (f"config: {alone} (given with -c; the only scope)\n"
                               "OK: 1 provider(s), 0 model(s), 0 agent(s), 0 mcp server(s)\n")


def test_config_check_fails_on_a_bad_key(iota):
    path = iota.write_config("  default: {model: m, temprature: 1}\n")
    result = iota("config", "check")
    assert result.returncode == 1
    assert result.stderr.startswith(f"Error: config {path}: agents.default.temprature: unknown key (want ")


def test_config_check_warns_about_a_file_that_is_not_yaml(iota):
    iota.write_config("  default: {model: m}\n")
    (iota.cwd / ".iota.yaml").write_text("agents: [unclosed\n")
    result = iota("config", "check")
    assert result.returncode == 0
    assert re.match(r"Warning: config .*\.iota\.yaml: not valid YAML at line \d+; skipped\n", result.stderr)


def test_config_path(iota):
    assert iota("config", "path").stdout == f"{iota.home / '.iota.yaml'}\n"


def test_list_agents_models_providers(iota):
    iota.write_config("  default: {model: m, description: Talks}\n  coder: {model: m, mode: agent, choices: [m]}\n")
    assert iota("list", "agents").stdout == "Agents:\n  default  chat · m · Talks\n  coder    agent · m\n"
    assert iota("list", "models").stdout == "Models:\n  m  fake:fake-model · 200k window\n"
    assert iota("list", "models", "coder").stdout == "Models for coder:\n  m  fake:fake-model · 200k window\n"
    assert iota("list", "providers").stdout == f"Providers:\n  fake  openai · {iota.model.openai_url} · key in config\n"


def test_list_sessions(iota):
    assert iota("list", "sessions").stdout == "No saved sessions.\n"
    with Session.create(paths.sessions_dir(), provider="fake", model="fake-model", title="Plans") as saved:
        saved.append([Message(USER, content="hello")])
    assert iota("list", "sessions").stdout == f"Sessions:\n  {saved.id}  Plans · fake-model · just now · 1 msgs\n"


def test_bad_values_fail_config_check_with_their_range_or_type(iota):
    # Each alone, so that each is seen: the check stops at the first bad value.
    for entry, message in [
        ("models:\n  big: {provider: fake, id: x, context_window: 1e23}\n",
         'models.big.context_window: want a size from 1 to 100m tokens, like 200k or 1m, got "1e23"'),
        ("agents:\n  coder: {model: m, auto_continue: 1e20}\n",
         "agents.coder.auto_continue: want a number of turns from 0 to 1000 (0 turns it off), got '1e20'"),
        ("mcp_servers:\n  x: {command: 42}\n", "mcp_servers.x.command: want the program to run, as text, got 42"),
    ]:
        (iota.home / ".iota.yaml").write_text(
            "providers:\n  fake: {type: openai, url: 'http://127.0.0.1:9', key: k}\n" + entry)
        result = iota("config", "check")
        assert result.returncode == 1
        assert result.stderr.strip().endswith(message) and result.stderr.count("\n") == 1


def test_a_python_whose_ssl_module_cannot_load_gets_one_line(iota, tmp_path):
    poison = tmp_path / "poison"
    poison.mkdir()
    # A sitecustomize runs at the interpreter's start: with None in sys.modules, `import ssl`
    # fails as it does in a Python built without OpenSSL.
    (poison / "sitecustomize.py").write_text("import sys\nsys.modules['ssl'] = None\n")
    iota.write_config("  coder:\n    model: m\n")
    result = iota("run", "coder", "-m", "hi", PYTHONPATH=str(poison))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1
    assert result.stderr.startswith("Error: this Python (") and "cannot load its ssl module" in result.stderr
