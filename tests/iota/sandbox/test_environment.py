"""Which of iota's environment variables a shell command sees, and the `env_keep:` setting that
decides it (the attacks themselves are in tests/security)."""

from __future__ import annotations

import pytest

from iota.config import settings
from iota.errors import ConfigError
from iota.sandbox.environment import EnvironmentPolicy


def test_only_the_core_set_passes_without_env_keep():
    environ = {
        "PATH": "/usr/bin", "HOME": "/home/a", "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm", "EDITOR": "vi",
        "JAVA_HOME": "/usr/lib/jvm/17", "VIRTUAL_ENV": "/p/.venv", "GIT_AUTHOR_NAME": "A",
        "SSH_AUTH_SOCK": "/tmp/ssh/agent", "HARMLESS": "x", "GIT_SSH_COMMAND": "ssh -i k", "HTTPS_PROXY": "http://p:3128",
        "ANTHROPIC_API_KEY": "x", "npm_config__authToken": "x", "GH_PAT": "x",
    }
    assert EnvironmentPolicy().environment(environ) == {
        "PATH": "/usr/bin", "HOME": "/home/a", "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm", "EDITOR": "vi",
        "JAVA_HOME": "/usr/lib/jvm/17", "VIRTUAL_ENV": "/p/.venv", "GIT_AUTHOR_NAME": "A",
    }


def test_a_core_path_through_the_nix_store_is_not_mistaken_for_a_key():
    path = "/nix/store/0c3z1q9xkfdwn0rjrl1nw1iyh7cdgbn8-bash-5.2-p15/bin:/usr/bin"
    assert EnvironmentPolicy().environment({"PATH": path}) == {"PATH": path}


KEPT_BY_PATTERN = {
    "APP_GH_PAT": "x",                                                    # the name: PAT
    "APP_SENTRY_DSN": "https://abc123def456@o0.ingest.sentry.io/0",      # a URL's user part
    "APP_PG": "host=db password=hunter2 user=app",                        # password=
    "APP_REMOTE": "https://ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com/o/r",
    "APP_DOCKER": '{"auths":{"r.example.com":{"auth":"dXNlcjpwYXNzd29yZA=="}}}',
    "APP_STRIPE": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",                     # detect-secrets
    "APP_GITHUB": "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "APP_CI": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
}


def test_a_variable_kept_by_a_pattern_is_withheld_when_it_looks_secret():
    environ = {**KEPT_BY_PATTERN, "APP_MODE": "production", "APP_URL": "https://example.com/x"}
    policy = EnvironmentPolicy(keep=("APP_*",))
    assert policy.environment(environ) == {"APP_MODE": "production", "APP_URL": "https://example.com/x"}
    assert [name for name, _ in policy.withheld(environ)] == sorted(KEPT_BY_PATTERN)


def test_a_name_written_out_in_env_keep_passes_whatever_it_holds():
    policy = EnvironmentPolicy(keep=(*KEPT_BY_PATTERN, "MY_LLM"), secret=frozenset({"MY_LLM"}))
    environ = {**KEPT_BY_PATTERN, "MY_LLM": "k"}
    assert policy.environment(environ) == environ
    assert policy.withheld(environ) == [] and policy.notice(environ) is None


def test_the_config_s_secret_variables_and_secret_names_are_withheld_even_by_a_pattern():
    environ = {"GITHUB_TOKEN": "t", "AWS_REGION": "eu-west-1", "AWS_SECRET_ACCESS_KEY": "s", "MY_LLM": "k",
               "EDITOR": "vi"}
    policy = EnvironmentPolicy(keep=("GITHUB_TOKEN", "AWS_*", "MY_*"), secret=frozenset({"MY_LLM"}))
    assert policy.environment(environ) == {"GITHUB_TOKEN": "t", "AWS_REGION": "eu-west-1", "EDITOR": "vi"}
    assert policy.notice(environ) == (
        "shell: withheld from commands as secret: AWS_SECRET_ACCESS_KEY (its name says secret), "
        "MY_LLM (the config hands it to a provider or server); name one exactly in env_keep to pass it")


def test_a_core_value_with_a_password_is_withheld():
    environ = {"PAGER": "less", "EDITOR": "https://me:pw@example.com/edit"}
    assert EnvironmentPolicy().environment(environ) == {"PAGER": "less"}


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
    with pytest.raises(ConfigError, match=r"unknown key \(want sandbox, network, auto_run, write, env_keep, limits\)$"):
        settings.load(tmp_path)
