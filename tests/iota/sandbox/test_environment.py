"""Which of iota's environment variables a shell command sees, and the `env_keep:` setting that
decides it (the attacks themselves are in tests/security)."""

from __future__ import annotations

import pytest

from iota.config import settings
from iota.errors import ConfigError
from iota.sandbox.environment import EnvironmentPolicy


def test_names_that_look_secret_are_dropped_in_any_case():
    environ = {
        "PATH": "/usr/bin", "HOME": "/home/a", "LANG": "C.UTF-8", "SSH_AUTH_SOCK": "/tmp/ssh/agent",
        "ANTHROPIC_API_KEY": "x", "npm_config__authToken": "x", "aws_secret_access_key": "x",
        "PGPASSWORD": "x", "MYSQL_PASSWD": "x", "GPG_PASSPHRASE": "x", "GOOGLE_APPLICATION_CREDENTIALS": "x",
        "SESSION_COOKIE": "x", "HF_TOKEN": "x",
    }
    assert EnvironmentPolicy().environment(environ) == {
        "PATH": "/usr/bin", "HOME": "/home/a", "LANG": "C.UTF-8", "SSH_AUTH_SOCK": "/tmp/ssh/agent",
    }


def test_urls_with_a_password_are_dropped_and_others_kept():
    environ = {
        "DATABASE_URL": "postgres://app:hunter2@db:5432/app", "HTTPS_PROXY": "http://me:pw@proxy:3128",
        "REDIS_URL": "redis://db:6379", "DOCS": "https://user@example.com/x", "NOTE": "a:b@c",
    }
    assert EnvironmentPolicy().environment(environ) == {
        "REDIS_URL": "redis://db:6379", "DOCS": "https://user@example.com/x", "NOTE": "a:b@c",
    }


def test_env_keep_names_and_patterns_win_and_named_variables_are_secret():
    environ = {"GITHUB_TOKEN": "t", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s", "OPENAI_API_KEY": "o",
               "MY_LLM": "k", "EDITOR": "vi"}
    policy = EnvironmentPolicy(keep=("GITHUB_TOKEN", "AWS_*"), secret=frozenset({"MY_LLM"}))
    assert policy.environment(environ) == {
        "GITHUB_TOKEN": "t", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s", "EDITOR": "vi",
    }


def write_config(home, text: str):
    (home / ".iota.yaml").write_text(text)


def test_env_keep_is_a_shell_option_and_the_config_names_its_secret_variables(fake_home, tmp_path):
    write_config(fake_home, (
        "providers:\n"
        "  p: {type: openai, key: '${env:MY_LLM}', url: 'https://x/${env:MY_URL_KEY}'}\n"
        "  q: {type: anthropic}\n"
        "mcp_servers:\n"
        "  gh: {command: gh-mcp, env: {GH: '${env:GITHUB_PAT}', MODE: '${cwd}'}}\n"
        "  web: {url: 'https://x/mcp', headers: {A: '${env:MCP_AUTH}'}}\n"
        "agents:\n"
        "  coder:\n"
        "    tools:\n"
        "      shell: {env_keep: [GITHUB_TOKEN, 'AWS_*']}\n"
    ))
    config = settings.load(tmp_path)
    assert config.agents["coder"].tools.shell.env_keep == ("GITHUB_TOKEN", "AWS_*")
    assert settings.secret_variables(config) == {"MY_LLM", "MY_URL_KEY", "GITHUB_PAT", "MCP_AUTH"}


@pytest.mark.parametrize("value, message", [
    ("GITHUB_TOKEN", "agents.coder.tools.shell.env_keep: want a list of text, got 'GITHUB_TOKEN'"),
    ("{a: 1}", "agents.coder.tools.shell.env_keep: want a list of text, got {'a': 1}"),
])
def test_env_keep_must_be_a_list(fake_home, tmp_path, value, message):
    write_config(fake_home, f"agents:\n  coder:\n    tools:\n      shell: {{env_keep: {value}}}\n")
    with pytest.raises(ConfigError) as error:
        settings.load(tmp_path)
    assert str(error.value) == f"config {fake_home / '.iota.yaml'}: {message}"


def test_an_unknown_shell_key_names_env_keep(fake_home, tmp_path):
    write_config(fake_home, "agents:\n  coder:\n    tools:\n      shell: {env_kept: [X]}\n")
    with pytest.raises(ConfigError, match=r"unknown key \(want sandbox, network, auto_run, write, env_keep\)$"):
        settings.load(tmp_path)
