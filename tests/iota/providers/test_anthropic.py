"""The Anthropic provider's request, as the fake server receives it from the SDK."""

from __future__ import annotations

import pytest

from iota.messages import Message, ToolCall
from iota.providers import Request, ToolSpec
from tests.support.fake_model import tool_call

pytestmark = pytest.mark.parametrize("dialect", ["anthropic"])

READ = ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})


def conversation() -> list[Message]:
    return [
        Message("system", "an old system record"),
        Message("user", "Read a.txt please"),
        Message("assistant", "Reading.", tool_calls=[ToolCall("toolu_1", "read", {"path": "a.txt"}), ToolCall("toolu_2", "ls", {})]),
        Message("user", "Resumed after 3 hours (last activity 2026-09-29 18:04)", notice=True),
        Message("tool", "hello", tool_call_id="toolu_1", tool_call_name="read"),
        Message("tool", "no such dir", tool_call_id="toolu_2", tool_call_name="ls", is_error=True),
        Message("assistant", "a.txt says hello."),
        Message("compaction", "a summary", compacted_through=2),
        Message("user", "thanks"),
        Message("user", ""),
    ]


async def test_the_request_carries_system_tools_and_the_converted_conversation(fake_model, open_provider):
    fake_model.reply("ok")
    request = Request("claude-test", "Be brief.", conversation(), tools=[READ], max_tokens=1000, temperature=0.2, effort="high")

    await open_provider().stream(request, lambda text: None)

    (sent,) = fake_model.requests
    assert sent.path == "/v1/messages"
    assert sent.headers["authorization"] == "Bearer test-key"  # SDK 2.x sends the key this way, not as x-api-key
    assert "anthropic-version" in sent.headers
    body = sent.body
    assert body["model"] == "claude-test" and body["max_tokens"] == 1000 and body["stream"] is True
    assert body["system"] == "Be brief."
    assert body["tools"] == [{"name": "read", "description": "Read a file.", "input_schema": READ.parameters}]
    assert body["temperature"] == 0.2 and body["output_config"] == {"effort": "high"}
    assert body["cache_control"] == {"type": "ephemeral"}
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Read a.txt please"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.txt"}},
            {"type": "tool_use", "id": "toolu_2", "name": "ls", "input": {}},
        ]},
        # The results lead their user message, and the notice recorded before them follows.
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "hello"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "no such dir", "is_error": True},
            {"type": "text", "text": "Resumed after 3 hours (last activity 2026-09-29 18:04)"},
        ]},
        {"role": "assistant", "content": [{"type": "text", "text": "a.txt says hello."}]},
        {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
    ]


async def test_a_tool_call_round_trips_through_the_next_request(fake_model, open_provider):
    fake_model.reply("Looking.", tool_calls=[tool_call("read", {"path": "a.txt"})], fragments=6)
    fake_model.reply("It says hi.")
    provider = open_provider()
    messages = [Message("user", "what is in a.txt?")]

    first = await provider.stream(Request("claude-test", "", messages), lambda text: None)
    (call,) = first.tool_calls
    messages += [Message("assistant", first.text, tool_calls=first.tool_calls),
                 Message("tool", "hi", tool_call_id=call.id, tool_call_name=call.name)]
    await provider.stream(Request("claude-test", "", messages), lambda text: None)

    sent = fake_model.requests[1].body
    assert "system" not in sent
    assert sent["messages"][1:] == [
        {"role": "assistant", "content": [{"type": "text", "text": "Looking."},
                                          {"type": "tool_use", "id": call.id, "name": "read", "input": {"path": "a.txt"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "hi"}]},
    ]
