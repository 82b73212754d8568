"""The Responses API and Gemini from the config to the wire: a real `iota run -m` whose model
reads a file, and what `iota list providers` and a missing key say."""

from __future__ import annotations

import subprocess

import pytest

from tests.e2e.conftest import IOTA
from tests.support.fake_model import tool_call

CONFIG = """\
providers:
  resp: {{type: openresponses, url: '{url}/v1', key: test-key}}
  gem: {{type: gemini, url: '{url}'{key}}}
models:
  r: {{provider: resp, id: gpt-test}}
  g: {{provider: gem, id: gemini-test}}
agents:
  default: {{model: r, tools: {{code: {{}}}}}}
"""


def run(iota, *args: str, **env: str) -> subprocess.CompletedProcess:
    """`iota` without the machine's own GOOGLE_API_KEY (the fixture leaves it in), plus `env`."""
    environment = {name: value for name, value in iota.env().items() if name != "GOOGLE_API_KEY"} | env
    return subprocess.run([IOTA, *args], cwd=iota.cwd, env=environment, capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("model, reads", [("r", lambda body: body["input"][-1]),
                                          ("g", lambda body: body["contents"][-1]["parts"][0])])
def test_a_headless_turn_with_a_tool_call(iota, fake_model, model, reads):
    (iota.home / ".iota.yaml").write_text(CONFIG.format(url=fake_model.url, key=", key: test-key"))
    (iota.cwd / "notes.txt").write_text("colour: red\n")
    fake_model.reply("Reading.", tool_calls=[tool_call("read_file", {"path": "notes.txt"})])
    fake_model.reply("It says red.")

    result = run(iota, "run", "-M", model, "-m", "what colour?")

    assert (result.returncode, result.stdout) == (0, "It says red.\n"), result.stderr
    first, second = fake_model.requests
    assert first.dialect == second.dialect == {"r": "openresponses", "g": "gemini"}[model]
    assert "colour: red" in str(reads(second.body))


def test_list_providers_names_each_key_variable_and_a_missing_google_key_is_refused(iota, fake_model):
    (iota.home / ".iota.yaml").write_text(CONFIG.format(url=fake_model.url, key=""))

    listed = run(iota, "list", "providers", OPENAI_API_KEY="sk-env")
    refused = run(iota, "run", "-M", "g", "-m", "hi")

    assert listed.stdout == (f"Providers:\n  resp  openresponses · {fake_model.url}/v1 · key from $OPENAI_API_KEY\n"
                             f"  gem   gemini · {fake_model.url} · no key: set GOOGLE_API_KEY\n")
    assert (refused.returncode, refused.stderr) == (
        1, "Error: API key is required: set GOOGLE_API_KEY or providers.gem.key in your config\n")
    assert fake_model.requests == []
