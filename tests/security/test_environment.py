"""Secrets under names no word list catches, read with `env` through the real shell tool, sandboxed
and not (`sandbox: off`): commands get an allow-list of the environment (iota/sandbox/environment.py)."""

from __future__ import annotations

import pytest

from iota.sandbox.environment import EnvironmentPolicy
from tests.security.test_sandbox_escapes import real_shell, repo  # noqa: F401  (a fixture)

GITHUB_PAT = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"

# Each one passed the old name-based filter: no KEY, SECRET, TOKEN or PASSWORD in the name, and no
# password in a URL.
MISSED = {
    "GH_PAT": GITHUB_PAT,
    "SENTRY_DSN": "https://5f2d3c0e8a1b4c9d@o0.ingest.sentry.io/42",
    "MY_SERVICE_AUTH": "Bearer svc-auth-7Hq2Lm9Xp",
    "PG_DSN": "host=db.internal port=5432 user=app password=pg-hunter2 dbname=app",
    "GIT_REMOTE_URL": "https://ghp_9A8b7C6d5E4f3G2h1I0jKlMnOpQrStUvWxYz@github.com/acme/app.git",
    "STRIPE_SK": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "MYSQL_PWD": "mysql-hunter2",
    "CI_JOB_JWT": "eyJhbGciOiJSUzI1NiJ9.eyJwcm9qZWN0X2lkIjoiNDIifQ.c2lnbmF0dXJlLW9mLXRoZS1qb2I",
    "DOCKER_AUTH_CONFIG": '{"auths":{"registry.acme.io":{"auth":"Y2k6ZG9ja2VyLWh1bnRlcjI="}}}',
    "NPM_CONFIG__AUTH": "bnBtOm5wbS1odW50ZXIy",
}


def leaked(output: str) -> list[str]:
    return [name for name, value in MISSED.items() if value in output or f"{name}=" in output]


@pytest.mark.parametrize("sandboxed", [True, False])
async def test_secrets_under_names_the_word_list_misses_are_not_seen(repo, monkeypatch, sandboxed):  # noqa: F811
    for name, value in MISSED.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LANG", "C.UTF-8")
    async with real_shell(repo, sandboxed=sandboxed) as shell:
        result = await shell.run({"command": "env"})
    assert "LANG=C.UTF-8" in result.content and "HOME=" in result.content
    assert leaked(result.content) == []


@pytest.mark.parametrize("sandboxed", [True, False])
async def test_env_keep_naming_one_exactly_passes_it_and_a_pattern_does_not(repo, monkeypatch, sandboxed):  # noqa: F811
    monkeypatch.setenv("GH_PAT", GITHUB_PAT)
    monkeypatch.setenv("GH_HOST", "github.acme.io")
    command = {"command": 'echo "[$GH_PAT] [$GH_HOST]"'}
    async with real_shell(repo, sandboxed=sandboxed, environment=EnvironmentPolicy(keep=("GH_PAT",))) as shell:
        assert (await shell.run(command)).content == f"[{GITHUB_PAT}] []\n"
    async with real_shell(repo, sandboxed=sandboxed, environment=EnvironmentPolicy(keep=("GH_*",))) as shell:
        assert (await shell.run(command)).content == "[] [github.acme.io]\n"


async def test_a_secret_looking_value_under_a_harmless_name_is_withheld_from_a_pattern(repo, monkeypatch):  # noqa: F811
    monkeypatch.setenv("GH_REMOTE", MISSED["GIT_REMOTE_URL"])
    monkeypatch.setenv("GH_CI", MISSED["CI_JOB_JWT"])
    async with real_shell(repo, environment=EnvironmentPolicy(keep=("GH_*",))) as shell:
        result = await shell.run({"command": "env"})
    assert "GH_REMOTE" not in result.content and "GH_CI" not in result.content


async def test_what_a_pattern_would_have_passed_is_named_once_on_the_start_up_card(fake_home, repo, monkeypatch):  # noqa: F811
    from iota.chat import prepare_chat
    from iota.config import settings

    (fake_home / ".iota.yaml").write_text(
        "providers:\n  p: {type: openai, url: 'http://127.0.0.1:9/v1', key: none}\nmodels:\n  m: p:m\n"
        "agents:\n  a:\n    model: m\n    tools:\n      shell: {sandbox: 'off', env_keep: ['GH_*']}\n")
    monkeypatch.setenv("GH_PAT", GITHUB_PAT)
    monkeypatch.setenv("GH_CI", MISSED["CI_JOB_JWT"])
    monkeypatch.setenv("STRIPE_SK", MISSED["STRIPE_SK"])  # not in the allow-list at all: nothing to say
    loaded = settings.load(repo)
    setup = prepare_chat(loaded, loaded.agents["a"], repo, interactive=False)
    async with setup.open_tools():
        pass
    withheld = [line for line in setup.warnings if "withheld" in line]
    assert withheld == ["shell: withheld from commands as secret: GH_CI (a JSON web token), GH_PAT (its name says "
                        "secret); name one exactly in env_keep to pass it"]
