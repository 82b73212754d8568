"""The OpenAI-compatible provider: its request as the fake server receives it, and the chunk
shapes and retry waits the fake server does not produce."""

from __future__ import annotations

import json

import httpx
import pytest

from iota.errors import ProviderRejected
from iota.messages import Message
from iota.providers import Request, _http, openai
from iota.providers._streaming import StreamBroke
from tests.iota.providers.test_anthropic import READ, conversation
from tests.support.fake_model import tool_call


@pytest.mark.parametrize("dialect", ["openai"])
async def test_the_request_carries_system_tools_and_the_converted_conversation(fake_model, open_provider):
    fake_model.reply("ok")
    request = Request("gpt-test", "Be brief.", conversation(), tools=[READ], max_tokens=1000, temperature=0.2, effort="high")

    await open_provider().stream(request, lambda text: None)

    (sent,) = fake_model.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer test-key"
    body = sent.body
    assert body["model"] == "gpt-test" and body["max_completion_tokens"] == 1000
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["tools"] == [{"type": "function", "function": {"name": "read", "description": "Read a file.",
                                                               "parameters": READ.parameters}}]
    assert body["temperature"] == 0.2 and body["reasoning_effort"] == "high"
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Read a.txt please"},
        {"role": "assistant", "content": "Reading.", "tool_calls": [
            {"id": "toolu_1", "type": "function", "function": {"name": "read", "arguments": '{"path": "a.txt"}'}},
            {"id": "toolu_2", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
        ]},
        # the API wants the results right after their calls: a notice recorded between them follows them
        {"role": "tool", "tool_call_id": "toolu_1", "content": "hello"},
        {"role": "tool", "tool_call_id": "toolu_2", "content": "no such dir"},
        {"role": "user", "content": "Resumed after 3 hours (last activity 2026-09-29 18:04)"},
        {"role": "assistant", "content": "a.txt says hello."},
        {"role": "user", "content": "thanks"},
    ]


@pytest.mark.parametrize("dialect", ["openai"])
async def test_a_tool_call_round_trips_through_the_next_request(fake_model, open_provider):
    fake_model.reply(tool_calls=[tool_call("read", {"path": "a.txt"})], fragments=6)
    fake_model.reply("It says hi.")
    provider = open_provider()
    messages = [Message("user", "what is in a.txt?")]

    first = await provider.stream(Request("gpt-test", "", messages), lambda text: None)
    (call,) = first.tool_calls
    messages += [Message("assistant", first.text, tool_calls=first.tool_calls),
                 Message("tool", "hi", tool_call_id=call.id, tool_call_name=call.name)]
    await provider.stream(Request("gpt-test", "", messages), lambda text: None)

    sent = fake_model.requests[1].body["messages"]
    assert sent == [
        {"role": "user", "content": "what is in a.txt?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": "read", "arguments": '{"path": "a.txt"}'}}]},
        {"role": "tool", "tool_call_id": call.id, "content": "hi"},
    ]


def read_chunks(*chunks: dict) -> openai._Reading:
    reading = openai._Reading("fake", lambda text: None)
    for chunk in chunks:
        reading.take(chunk)
    return reading


def call_delta(**fragment) -> dict:
    return {"choices": [{"index": 0, "delta": {"tool_calls": [fragment]}, "finish_reason": None}]}


def finish(reason: str) -> dict:
    return {"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}


def test_parallel_calls_interleaved_by_index_are_told_apart():
    reading = read_chunks(
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "a", "function": {"name": "read", "arguments": '{"pa'}},
            {"index": 1, "id": "b", "function": {"name": "ls", "arguments": ""}}]}, "finish_reason": None}]},
        call_delta(index=1, function={"arguments": '{"dir": "."}'}),
        call_delta(index=0, function={"arguments": 'th": "x"}'}),
        finish("tool_calls"),
    )

    calls = reading.reply().tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [("a", "read", {"path": "x"}), ("b", "ls", {"dir": "."})]


def test_calls_without_an_index_start_at_each_id_as_older_ollama_sends_them():
    reading = read_chunks(
        call_delta(id="a", function={"name": "read", "arguments": {"path": "x"}}),
        call_delta(id="b", function={"name": "ls", "arguments": "{}"}),
        finish("tool_calls"),
    )

    assert [(c.id, c.arguments) for c in reading.reply().tool_calls] == [("a", {"path": "x"}), ("b", {})]


def test_an_error_chunk_breaks_the_stream():
    with pytest.raises(StreamBroke) as caught:
        read_chunks({"error": {"message": "Internal error", "type": "server_error", "code": None}})

    assert isinstance(caught.value.error, ProviderRejected)
    assert str(caught.value.error) == "fake: the stream failed: server_error: Internal error"


def test_usage_may_come_without_cached_tokens_and_the_finish_is_translated():
    reading = read_chunks(finish("content_filter"), {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}})

    reply = reading.reply()
    assert (reply.usage.input, reply.usage.output, reply.usage.total, reply.stop_reason) == (7, 2, 9, "refusal")


@pytest.mark.parametrize(
    "headers, expected",
    [({"retry-after-ms": "250"}, 0.25), ({"retry-after": "2"}, 2.0), ({"retry-after-ms": "x", "retry-after": "1.5"}, 1.5)],
)
def test_the_wait_before_a_retry_is_what_the_server_asks(headers, expected):
    assert _http.retry_delay(httpx.Headers(headers), 0) == expected


@pytest.mark.parametrize("headers", [None, {"retry-after": "3600"}, {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}])
def test_without_a_usable_ask_the_wait_backs_off(headers):
    wait = _http.retry_delay(httpx.Headers(headers) if headers else None, 2)

    assert 0.75 * 4 * _http.FIRST_BACKOFF <= wait <= 4 * _http.FIRST_BACKOFF


def test_a_chunk_that_is_not_an_object_is_unreadable():
    with pytest.raises(ValueError):
        read_chunks(json.loads("[1]"))
