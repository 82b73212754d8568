"""Deferred MCP tools in `tool-search` mode on the OpenAI Responses API: the deferred tools are
sent marked `defer_loading` beside a client-executed `tool_search` tool, and the openresponses
provider answers the model's `tool_search_call` itself — a real MCP server, the chat's toolbox,
the agent loop and the fake server's Responses dialect (strict about the search's items)."""

from __future__ import annotations

import json

import pytest
import trio

from iota.agent import Approvals, Turn, run_turn
from iota.chat import prepare_chat
from iota.config import settings
from iota.errors import ProviderError
from iota.messages import ASSISTANT, TOOL, USER, Message
from iota.providers import Request, ToolSpec, make_provider
from iota.providers.openresponses import MAX_SEARCH_ROUNDS, TOOL_SEARCH
from tests.iota.mcp.test_defer import SUMMARY, http_server  # noqa: F401  (the fixture)
from tests.support.fake_model import fake_model, tool_call  # noqa: F401  (the fixture)


def search_call(call_id: str, query: str) -> dict:
    return {"type": "tool_search_call", "execution": "client", "call_id": call_id, "arguments": {"query": query}}


async def one_turn(tmp_path, fake_model, server_url: str) -> Turn:
    path = tmp_path / "iota.yaml"
    path.write_text(f"providers: {{fake: {{type: openresponses, key: k, url: '{fake_model.openai_url}'}}}}\n"
                    "models: {m: {provider: fake, id: m, defer_mode: tool-search}}\n"
                    "agents: {default: {model: m}}\n"
                    f"mcp_servers:\n  docs: {{url: '{server_url}', defer: '{SUMMARY}'}}\n")
    loaded = settings.load(tmp_path, path)
    setup = prepare_chat(loaded, loaded.agents["default"], tmp_path, interactive=False)
    turn = Turn()
    async with setup.open_tools() as toolbox:
        request = setup.request([Message(USER, content="echo something")], toolbox)
        with trio.fail_after(30):
            await run_turn(turn, setup.provider(), request, toolbox, Approvals(ask=None))
    await setup.aclose()
    return turn


async def test_the_provider_answers_the_tool_search_and_the_found_tool_is_called(http_server, fake_model, tmp_path):
    fake_model.reply("", server_blocks=[search_call("ts_1", "echo text")])        # the model searches, and stops
    fake_model.reply("Found it.", tool_calls=[tool_call("mcp__docs__echo", {"text": "hi"}, id="c1")])
    fake_model.reply("Done.")
    turn = await one_turn(tmp_path, fake_model, http_server.url)

    first, answered, last = fake_model.requests
    tools = first.body["tools"]
    assert tools[-1] == TOOL_SEARCH
    assert {tool["name"]: tool.get("defer_loading") for tool in tools[:-1]} == {
        "mcp__docs__echo": True, "mcp__docs__fail": True, "mcp__docs__picture": True, "mcp__docs__lines": True}
    assert "search_tools" not in [tool.get("name") for tool in tools]
    # The answer: the call, then its output with the best matches, whole, at the end of the input.
    call, output = answered.body["input"][-2:]
    assert call == search_call("ts_1", "echo text") | {"status": "completed"}
    assert (output["type"], output["execution"], output["call_id"], output["status"]) == (
        "tool_search_output", "client", "ts_1", "completed")
    assert output["tools"][0]["name"] == "mcp__docs__echo" and output["tools"][0]["defer_loading"] is True
    assert output["tools"][0]["parameters"]["properties"]["text"]
    # Later requests carry the search before the call it led to; the call ran.
    kinds = [item.get("type") or item.get("role") for item in last.body["input"]]
    assert kinds == ["user", "tool_search_call", "tool_search_output", "assistant", "function_call",
                     "function_call_output"]
    assert [m.content for m in turn.messages if m.role == TOOL] == ["echo: hi"]
    [kept] = [message for message in turn.messages if message.server_blocks]
    assert [block["type"] for block in kept.server_blocks] == ["tool_search_call", "tool_search_output"]
    assert Message.from_record(json.loads(json.dumps(kept.to_record()))).server_blocks == kept.server_blocks


DEFERRED = ToolSpec("mcp__gh__create_pr", "Create a pull request.", {"type": "object", "properties": {}}, deferred=True)


async def test_the_search_items_go_only_to_requests_with_deferred_tools(fake_model):
    """A session with the search's items sent without deferred tools (another model's turn, a
    resume elsewhere): the API was given no tool_search tool, so the items are left out."""
    fake_model.reply("ok")
    fake_model.reply("ok")
    blocks = [search_call("ts_1", "pr"), {"type": "tool_search_output", "execution": "client", "call_id": "ts_1",
                                          "status": "completed", "tools": []}]
    messages = [Message(USER, "hi"), Message(ASSISTANT, "ok", server_blocks=blocks), Message(USER, "again")]
    provider = make_provider("fake", "openresponses", "k", fake_model.openai_url)
    await provider.stream(Request("m", "", messages, tools=[DEFERRED]), lambda text: None)
    await provider.stream(Request("m", "", messages), lambda text: None)
    await provider.aclose()
    with_deferred, without = fake_model.requests
    assert [item.get("type") for item in with_deferred.body["input"]][1:3] == ["tool_search_call", "tool_search_output"]
    assert not any(item.get("type", "").startswith("tool_search") for item in without.body["input"])
    assert "tools" not in without.body


async def test_a_model_that_only_ever_searches_is_given_up_on(fake_model):
    for round_ in range(MAX_SEARCH_ROUNDS + 1):
        fake_model.reply("", server_blocks=[search_call(f"ts_{round_}", "anything")])
    provider = make_provider("fake", "openresponses", "k", fake_model.openai_url)
    with pytest.raises(ProviderError, match=f"searched for tools {MAX_SEARCH_ROUNDS} times in one reply"):
        await provider.stream(Request("m", "", [Message(USER, "hi")], tools=[DEFERRED]), lambda text: None)
    await provider.aclose()
    assert len(fake_model.requests) == MAX_SEARCH_ROUNDS + 1
