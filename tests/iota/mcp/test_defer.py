"""Deferred MCP tools (`defer:`), end to end: a real MCP server, the chat's toolbox, the agent
loop and the fake model server in each dialect, which records what iota sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from iota.agent import Approvals, Turn, run_turn
from iota.chat import prepare_chat
from iota.config import settings
from iota.errors import ConfigError
from iota.mcp.defer import DESCRIPTION_BUDGET, SEARCH_FOOT, Deferral, DeferredGroup
from iota.providers.tool_search import search
from iota.messages import ASSISTANT, TOOL, USER, Message
from iota.providers.anthropic import TOOL_SEARCH, wire_messages
from iota.tools.base import Tool, ToolResult, Toolbox
from tests.support.fake_model import fake_model, tool_call  # noqa: F401  (the fixture)
from tests.support.mcp_servers import serve_http

SUMMARY = "Echo text back, print numbered lines, show a picture"


@pytest.fixture(scope="module")
def http_server():
    with serve_http() as server:
        yield server


def write_config(tmp_path: Path, fake_model, server_url: str, kind: str, mode: str | None) -> Path:
    url = fake_model.openai_url if kind == "openai" else fake_model.url
    mode_line = f", defer_mode: {mode}" if mode else ""
    path = tmp_path / "iota.yaml"
    path.write_text(f"providers: {{fake: {{type: {kind}, key: k, url: '{url}'}}}}\n"
                    f"models: {{m: {{provider: fake, id: m{mode_line}}}}}\n"
                    "agents: {default: {model: m}}\n"
                    f"mcp_servers:\n  docs: {{url: '{server_url}', defer: '{SUMMARY}'}}\n")
    return path


async def one_turn(tmp_path, fake_model, server_url, kind, mode=None, text="echo something"):
    loaded = settings.load(tmp_path, write_config(tmp_path, fake_model, server_url, kind, mode))
    setup = prepare_chat(loaded, loaded.agents["default"], tmp_path, interactive=False)
    turn = Turn()
    async with setup.open_tools() as toolbox:
        request = setup.request([Message(USER, content=text)], toolbox)
        with trio.fail_after(30):
            await run_turn(turn, setup.provider(), request, toolbox, Approvals(ask=None))
    await setup.aclose()
    return turn


def tool_names(request, kind) -> list[str]:
    tools = request.body.get("tools") or []
    return [tool["function"]["name"] if kind == "openai" else tool.get("name") for tool in tools]


def tool_results(turn) -> list[str]:
    return [message.content for message in turn.messages if message.role == TOOL]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_normal_mode_sends_only_search_tools_until_a_search_loads_what_it_found(http_server, fake_model,
                                                                                     tmp_path, kind):
    fake_model.reply(tool_calls=[tool_call("search_tools", {"query": "echo text"}, id="s1")])
    fake_model.reply(tool_calls=[tool_call("mcp__docs__echo", {"text": "over the wire"}, id="c1")])
    fake_model.reply("Done.")
    turn = await one_turn(tmp_path, fake_model, http_server.url, kind)
    first, second, third = fake_model.requests
    assert tool_names(first, kind) == ["search_tools"]
    [search_tool] = first.body["tools"]
    description = search_tool["function"]["description"] if kind == "openai" else search_tool["description"]
    assert description == ("Search and load additional tools before first use. Hidden tool groups:\n"
                           f"- docs (4 tools): {SUMMARY}\n" + SEARCH_FOOT)
    # The search loaded the best match, and it is offered from the very next request.
    assert tool_names(second, kind) == ["search_tools", "mcp__docs__echo"]
    assert tool_names(third, kind) == ["search_tools", "mcp__docs__echo"]
    assert tool_results(turn) == ["Loaded 1 tool(s) — available from the next step:\n"
                                  "- mcp__docs__echo — Say the text back.", "echo: over the wire"]
    assert turn.reply == "Done."


async def test_calling_a_hidden_tool_by_name_loads_and_runs_it(http_server, fake_model, tmp_path):
    fake_model.reply(tool_calls=[tool_call("mcp__docs__lines", {"count": 2}, id="c1")])
    fake_model.reply("Done.")
    turn = await one_turn(tmp_path, fake_model, http_server.url, "openai")
    first, second = fake_model.requests
    assert tool_names(first, "openai") == ["search_tools"]
    assert tool_names(second, "openai") == ["search_tools", "mcp__docs__lines"]
    assert tool_results(turn) == ["line 1\nline 2"]


async def test_an_empty_search_lists_the_catalog_and_a_search_that_finds_nothing_says_so(http_server, fake_model,
                                                                                         tmp_path):
    fake_model.reply(tool_calls=[tool_call("search_tools", {"query": ""}, id="s1")])
    fake_model.reply(tool_calls=[tool_call("search_tools", {"query": "weather forecast"}, id="s2")])
    fake_model.reply("Done.")
    turn = await one_turn(tmp_path, fake_model, http_server.url, "openai")
    catalog, nothing = tool_results(turn)
    assert catalog == (f"Hidden tool groups (1 groups, 4 tools):\n\ndocs (4 tools): {SUMMARY}\n"
                       "  mcp__docs__echo — Say the text back.\n"
                       "  mcp__docs__fail — Fail with the reason given.\n"
                       "  mcp__docs__picture — A picture and a caption.\n"
                       "  mcp__docs__lines — Print numbered lines.\n"
                       "\nQuery by capability keywords to load tools, or call a listed tool directly to load and "
                       "run it in one step.")
    assert nothing == (f'No tools matched "weather forecast". Hidden groups:\n- docs (4 tools): {SUMMARY}\n'
                       "Try different keywords, or an empty query to list every tool.")
    assert all(tool_names(request, "openai") == ["search_tools"] for request in fake_model.requests)


async def test_reference_mode_marks_the_hidden_tools_for_anthropics_search_and_replays_its_blocks(
        http_server, fake_model, tmp_path):
    search_blocks = [
        {"type": "server_tool_use", "id": "srvtoolu_01", "name": "tool_search_tool_regex", "input": {"query": "echo"}},
        {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_01",
         "content": {"type": "tool_search_tool_search_result",
                     "tool_references": [{"type": "tool_reference", "tool_name": "mcp__docs__echo"}]}},
    ]
    fake_model.reply("Found it.", server_blocks=search_blocks,
                     tool_calls=[tool_call("mcp__docs__echo", {"text": "hi"}, id="c1")])
    fake_model.reply("Done.")
    turn = await one_turn(tmp_path, fake_model, http_server.url, "anthropic", "reference")
    first, second = fake_model.requests
    tools = first.body["tools"]
    assert tools[0] == TOOL_SEARCH
    assert {tool["name"]: tool.get("defer_loading") for tool in tools[1:]} == {
        "mcp__docs__echo": True, "mcp__docs__fail": True, "mcp__docs__picture": True, "mcp__docs__lines": True}
    assert first.headers["anthropic-beta"] == "advanced-tool-use-2025-11-20"
    assert "search_tools" not in [tool["name"] for tool in tools]
    # The search's blocks come back first in the assistant message, and the call ran.
    assistant = second.body["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][:2] == search_blocks
    assert [block["type"] for block in assistant["content"][2:]] == ["text", "tool_use"]
    assert tool_results(turn) == ["echo: hi"]
    # They are kept with the message in the session log.
    [kept] = [message for message in turn.messages if message.server_blocks]
    assert Message.from_record(json.loads(json.dumps(kept.to_record()))).server_blocks == search_blocks


def test_the_tool_search_blocks_go_only_to_requests_with_deferred_tools():
    """A session with the blocks, sent later without deferred tools (another model, a resume
    elsewhere): the blocks would name a tool the request never gave, so they are left out."""
    blocks = [{"type": "server_tool_use", "id": "srvtoolu_01", "name": "tool_search_tool_regex", "input": {}}]
    messages = [Message(USER, content="hi"), Message(ASSISTANT, content="ok", server_blocks=blocks)]
    assert wire_messages(messages, server_blocks=True)[1][1]["content"][0] == blocks[0]
    assert wire_messages(messages)[1][1]["content"] == [{"type": "text", "text": "ok"}]


async def test_system_tools_mode_keeps_the_tools_array_and_mounts_what_loads_in_the_history(
        http_server, fake_model, tmp_path):
    fake_model.reply(tool_calls=[tool_call("search_tools", {"query": "echo"}, id="s1")])
    fake_model.reply(tool_calls=[tool_call("mcp__docs__echo", {"text": "hi"}, id="c1")])
    fake_model.reply("Done.")
    turn = await one_turn(tmp_path, fake_model, http_server.url, "openai", "system-tools")
    first, second, third = fake_model.requests
    assert tool_names(first, "openai") == tool_names(second, "openai") == tool_names(third, "openai") == \
        ["search_tools"]
    mount = {"role": "system", "tools": [{"type": "function", "function": {
        "name": "mcp__docs__echo", "description": "Say the text back.",
        "parameters": {"type": "object", **_echo_schema(turn)}}}]}
    for request in (second, third):
        roles = [(message["role"], message.get("tool_call_id")) for message in request.body["messages"]]
        assert roles[:4] == [("user", None), ("assistant", None), ("tool", "s1"), ("system", None)]
        assert request.body["messages"][3] == mount
        assert "content" not in request.body["messages"][3]
        assert sum(1 for message in request.body["messages"] if message.get("tools")) == 1  # mounted once
    assert tool_results(turn) == ["Loaded 1 tool(s) — available from the next step:\n"
                                  "- mcp__docs__echo — Say the text back.", "echo: hi"]
    [mounted] = [message for message in turn.messages if message.mounted_tools]
    assert Message.from_record(json.loads(json.dumps(mounted.to_record()))).mounted_tools == mounted.mounted_tools


def _echo_schema(turn) -> dict:
    [mounted] = [message for message in turn.messages if message.mounted_tools]
    parameters = dict(mounted.mounted_tools[0]["parameters"])
    parameters.pop("type")
    return parameters


@pytest.mark.parametrize(("kind", "mode"), [("openai", "reference"), ("anthropic", "tool-search"),
                                            ("anthropic", "system-tools"), ("bedrock", "reference")])
def test_a_defer_mode_the_provider_cannot_speak_is_refused_at_load(tmp_path, kind, mode):
    path = tmp_path / "iota.yaml"
    path.write_text(f"providers: {{p: {{type: {kind}}}}}\nmodels:\n  m: {{provider: p, id: x, defer_mode: {mode}}}\n")
    with pytest.raises(ConfigError) as refused:
        settings.load(tmp_path, path)
    assert str(refused.value) == f'config {path}: models.m: defer_mode "{mode}" does not apply to provider type {kind}'


@pytest.mark.parametrize(("kind", "mode"), [("anthropic", "reference"), ("openai", "system-tools"),
                                            ("openai", "normal"), ("anthropic", "normal"), ("vertex", "normal")])
def test_a_defer_mode_the_provider_speaks_loads(tmp_path, kind, mode):
    path = tmp_path / "iota.yaml"
    path.write_text(f"providers: {{p: {{type: {kind}}}}}\nmodels:\n  m: {{provider: p, id: x, defer_mode: {mode}}}\n")
    assert settings.load(tmp_path, path).models["m"].defer_mode == mode


def test_an_unknown_defer_mode_and_a_blank_defer_are_refused(tmp_path):
    path = tmp_path / "iota.yaml"
    path.write_text("providers: {p: {type: openai}}\nmodels:\n  m: {provider: p, id: x, defer_mode: quantum}\n")
    with pytest.raises(ConfigError, match=r'models\.m\.defer_mode: defer_mode must be one of normal, reference, '
                                          r'tool-search, system-tools, got "quantum"$'):
        settings.load(tmp_path, path)
    for value in ("''", "true", "'  '"):
        path.write_text(f"mcp_servers:\n  docs: {{url: 'http://x/mcp', defer: {value}}}\n")
        with pytest.raises(ConfigError, match=r"mcp_servers\.docs\.defer: want a one-line summary"):
            settings.load(tmp_path, path)


async def test_the_mode_is_built_once_a_chat_and_a_model_switch_keeps_it(http_server, fake_model, tmp_path):
    path = tmp_path / "iota.yaml"
    path.write_text(f"providers:\n  an: {{type: anthropic, key: k, url: '{fake_model.url}'}}\n"
                    f"  oa: {{type: openai, key: k, url: '{fake_model.openai_url}'}}\n"
                    "models:\n  claude: {provider: an, id: c, defer_mode: reference}\n  gpt: {provider: oa, id: g}\n"
                    "agents: {default: {model: claude}}\n"
                    f"mcp_servers:\n  docs: {{url: '{http_server.url}', defer: '{SUMMARY}'}}\n")
    loaded = settings.load(tmp_path, path)
    setup = prepare_chat(loaded, loaded.agents["default"], tmp_path, interactive=False)
    async with setup.open_tools() as toolbox:
        before = [(spec.name, spec.deferred) for spec in toolbox.specs()]
        setup.switch_model("gpt")  # whose own mode would be normal
        assert toolbox.deferral.mode == "reference"
        assert [(spec.name, spec.deferred) for spec in toolbox.specs()] == before
    assert ("mcp__docs__echo", True) in before and "search_tools" not in dict(before)


class _Named(Tool):
    def __init__(self, name: str, description: str, parameters: dict | None = None, server: str = "big"):
        self.name, self.description, self.server = name, description, server
        self.parameters = parameters or {"type": "object", "properties": {}}

    async def run(self, args):
        return ToolResult("ran")


def test_search_scores_names_descriptions_and_parameters_and_loads_the_best_five():
    tools = [_Named(f"mcp__big__issue_{n}", "Work on an issue") for n in range(7)]
    tools.append(_Named("mcp__big__wrap", "Wrap a present",
                        {"type": "object", "properties": {"style": {"type": "object", "properties": {
                            "ribbon": {"type": "string", "description": "giftwrap colour"}}}}}))
    assert [tool.name for tool in search("giftwrap", tools)] == ["mcp__big__wrap"]  # found by a nested option
    assert [tool.name for tool in search("ISSUE", tools)][:2] == ["mcp__big__issue_0", "mcp__big__issue_1"]
    toolbox = Toolbox(tools)
    deferral = Deferral([DeferredGroup("big", "Issues and presents")], "normal", toolbox)
    text = deferral.search("issue")
    assert text.startswith("Loaded 5 tool(s) — available from the next step:\n- mcp__big__issue_0 — Work on an issue")
    assert text.endswith("+2 more matched but were not loaded — refine the query, list everything with an empty "
                         "query, or call a tool by its exact name.")
    assert [spec.name for spec in toolbox.specs()] == ["search_tools", *(f"mcp__big__issue_{n}" for n in range(5))]


def test_the_search_description_stays_within_its_budget():
    groups = [DeferredGroup(f"server{n}", "A long summary of what this server does " * 3) for n in range(20)]
    deferral = Deferral(groups, "normal", Toolbox())
    [spec] = deferral.specs()
    assert len(spec.description.encode()) <= DESCRIPTION_BUDGET
    assert "… +" in spec.description and "more groups — empty query lists all\n" in spec.description
    assert spec.description.endswith(SEARCH_FOOT)
    assert "- server0 (connecting…): A long summary" in spec.description
