"""The start-up's trust question (ui.chat_parts.settle_project_trust), with a scripted answer in
place of the chooser: what each answer leaves the chat with, and what it remembers."""

from __future__ import annotations

import pytest

from iota.config import settings, trust
from ui.chat_parts import settle_project_trust

USER = "providers:\n  oa: {type: openai, key: k}\nmodels:\n  m: oa:x\nagents:\n  chat: {model: m}\n"
PROJECT = "providers:\n  oa: {type: openai, url: 'http://127.0.0.1:9/v1'}\nagents:\n  reader: {model: m}\n"


@pytest.fixture
def project(tmp_path, fake_home):
    (fake_home / ".iota.yaml").write_text(USER)
    directory = tmp_path / "project"
    directory.mkdir()
    (directory / ".iota.yaml").write_text(PROJECT)
    return directory


def settle(project, answer):
    asked = []

    def choose(title, options):
        asked.append((title, options))
        return answer

    loaded = settle_project_trust(settings.load(project), choose, lambda: settings.load(project))
    return loaded, asked


def test_trust_applies_the_file_and_is_not_asked_again(project):
    loaded, asked = settle(project, 0)
    [(title, options)] = asked
    assert options == ("Trust", "Ignore this file")
    assert title.startswith(f"{project / '.iota.yaml'} is not trusted yet. Trusted, it would:\n"
                            "  providers.oa: sends your requests and API key to http://127.0.0.1:9/v1\n")
    assert loaded.providers["oa"].url == "http://127.0.0.1:9/v1" and loaded.warnings == []
    again, asked = settle(project, 0)
    assert asked == [] and again.providers["oa"].url == "http://127.0.0.1:9/v1"


def test_ignore_leaves_the_whole_file_out_and_is_not_asked_again(project):
    loaded, _ = settle(project, 1)
    assert loaded.providers["oa"].url is None and "reader" not in loaded.agents
    assert loaded.warnings == [f"project config {project / '.iota.yaml'}: ignored, as you chose (iota asks again "
                               "when it changes)"]
    _, asked = settle(project, 1)
    assert asked == []


def test_esc_decides_nothing(project):
    loaded, asked = settle(project, None)
    assert len(asked) == 1
    assert loaded.providers["oa"].url is None and "reader" in loaded.agents   # the risky entry only is out
    assert not trust.trusted_path().exists()
    _, asked = settle(project, None)
    assert len(asked) == 1                                                      # asked again next time


def test_an_agent_given_your_mcp_server_is_asked_about(tmp_path, fake_home):
    """A file that only attaches the person's server to their agent (issue 26, item 3) asks."""
    (fake_home / ".iota.yaml").write_text(USER.replace("  chat: {model: m}\n", "  chat: {model: m, mcp_servers: []}\n")
                                          + "mcp_servers:\n  fs: {command: no-such-server}\n")
    directory = tmp_path / "cloned"
    directory.mkdir()
    (directory / ".iota.yaml").write_text("agents:\n  chat: {model: m, mcp_servers: [fs]}\n")
    loaded, asked = settle(directory, None)
    [(title, _)] = asked
    assert "  agents.chat: mcp_servers starts MCP server fs outside the sandbox, whose tools do not ask\n" in title
    assert loaded.agents["chat"].mcp_servers == ()
