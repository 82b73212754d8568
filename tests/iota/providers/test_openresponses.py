"""The Responses API provider: its request as the fake server receives it, and the event shapes
the fake server does not produce."""

from __future__ import annotations

import json

import pytest

from iota.errors import ContextTooLong, ProviderError, ProviderRejected
from iota.messages import Message
from iota.providers import Request, openresponses
from iota.providers._streaming import StreamBroke
from tests.iota.providers.test_anthropic import READ, conversation
from tests.support.fake_model import tool_call


@pytest.mark.parametrize("dialect", ["openresponses"])
async def test_the_request_carries_instructions_tools_and_the_conversation_as_items(fake_model, open_provider):
    fake_model.reply("ok")
    request = Request("gpt-test", "Be brief.", conversation(), tools=[READ], max_tokens=1000, temperature=0.2,
                      top_p=0.9, effort="high")

    await open_provider().stream(request, lambda text: None)

    (sent,) = fake_model.requests
    assert sent.path == "/v1/responses"
    assert sent.headers["authorization"] == "Bearer test-key"
    body = sent.body
    assert (body["model"], body["stream"], body["max_output_tokens"], body["instructions"]) == (
        "gpt-test", True, 1000, "Be brief.")
    assert body["tools"] == [{"type": "function", "name": "read", "description": "Read a file.",
                              "parameters": READ.parameters, "strict": False}]
    assert (body["temperature"], body["top_p"], body["reasoning"]) == (0.2, 0.9, {"effort": "high"})
    assert body["input"] == [
        {"role": "user", "content": "Read a.txt please"},
        {"role": "assistant", "content": "Reading."},
        {"type": "function_call", "call_id": "toolu_1", "name": "read", "arguments": '{"path": "a.txt"}'},
        {"type": "function_call", "call_id": "toolu_2", "name": "ls", "arguments": "{}"},
        # The results right after their calls, and the notice recorded between them after them.
        {"type": "function_call_output", "call_id": "toolu_1", "output": "hello"},
        {"type": "function_call_output", "call_id": "toolu_2", "output": "no such dir"},
        {"role": "user", "content": "Resumed after 3 hours (last activity 2026-09-29 18:04)"},
        {"role": "assistant", "content": "a.txt says hello."},
        {"role": "user", "content": "thanks"},
    ]


@pytest.mark.parametrize("dialect", ["openresponses"])
async def test_a_call_round_trips_by_its_call_id_not_its_item_id(fake_model, open_provider):
    fake_model.reply("Looking.", tool_calls=[tool_call("read", {"path": "a.txt"})], fragments=6)
    fake_model.reply("It says hi.")
    provider = open_provider()
    messages = [Message("user", "what is in a.txt?")]

    first = await provider.stream(Request("gpt-test", "", messages), lambda text: None)
    (call,) = first.tool_calls
    messages += [Message("assistant", first.text, tool_calls=first.tool_calls),
                 Message("tool", "hi", tool_call_id=call.id, tool_call_name=call.name)]
    second = await provider.stream(Request("gpt-test", "", messages), lambda text: None)

    assert call.id.startswith("call_") and second.text == "It says hi."
    assert "instructions" not in fake_model.requests[1].body
    assert fake_model.requests[1].body["input"] == [
        {"role": "user", "content": "what is in a.txt?"},
        {"role": "assistant", "content": "Looking."},
        {"type": "function_call", "call_id": call.id, "name": "read", "arguments": '{"path": "a.txt"}'},
        {"type": "function_call_output", "call_id": call.id, "output": "hi"},
    ]


def read_events(*events: dict) -> openresponses._Reading:
    reading = openresponses._Reading("fake", lambda text: None)
    for event in events:
        reading.take(json.dumps(event))
    return reading


def added(item_id: str, call_id: str, name: str) -> dict:
    return {"type": "response.output_item.added", "output_index": 0,
            "item": {"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": ""}}


def delta(item_id: str, piece: str) -> dict:
    return {"type": "response.function_call_arguments.delta", "item_id": item_id, "output_index": 0, "delta": piece}


def completed(**response) -> dict:
    return {"type": "response.completed", "response": {"status": "completed", **response}}


def test_interleaved_argument_pieces_are_told_apart_by_item_without_a_done_item():
    reading = read_events(added("fc_1", "call_a", "read"), added("fc_2", "call_b", "ls"),
                          delta("fc_2", '{"dir"'), delta("fc_1", '{"path": '), delta("fc_2", ': "."}'),
                          delta("fc_1", '"x"}'), completed())

    reply = reading.reply()
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [("call_a", "read", {"path": "x"}),
                                                                        ("call_b", "ls", {"dir": "."})]
    assert reply.stop_reason == "tool_use"


def test_a_call_sent_whole_in_its_done_item_is_taken():
    done = {"type": "response.output_item.done",
            "item": {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "read", "arguments": '{"p": 1}'}}

    reply = read_events(done, completed()).reply()

    assert [(c.id, c.arguments) for c in reply.tool_calls] == [("call_a", {"p": 1})]


def test_usage_comes_from_the_completed_response_with_the_cached_part_apart():
    usage = {"input_tokens": 2100, "input_tokens_details": {"cached_tokens": 800}, "output_tokens": 34,
             "output_tokens_details": {"reasoning_tokens": 20}, "total_tokens": 2134}

    reply = read_events(completed(usage=usage)).reply()

    assert (reply.usage.input, reply.usage.cache_read, reply.usage.output, reply.usage.context) == (1300, 800, 34, 2134)


def test_a_refusal_is_text_and_says_so():
    reply = read_events({"type": "response.refusal.delta", "delta": "I can't help with that."}, completed()).reply()

    assert (reply.text, reply.stop_reason) == ("I can't help with that.", "refusal")


@pytest.mark.parametrize("event, message", [
    ({"type": "error", "code": "server_error", "message": "Something broke", "param": None},
     "fake: the stream failed: server_error: Something broke"),
    ({"type": "response.failed", "response": {"status": "failed", "error": {"code": "rate_limit_exceeded",
                                                                              "message": "Slow down"}}},
     "fake: the stream failed: rate_limit_exceeded: Slow down"),
])
def test_a_failure_inside_the_stream_breaks_it(event, message):
    with pytest.raises(StreamBroke) as caught:
        read_events(event)

    assert isinstance(caught.value.error, ProviderRejected) and str(caught.value.error) == message


def test_a_failed_response_that_does_not_fit_is_context_too_long_and_not_retried():
    failed = {"type": "response.failed", "response": {"status": "failed", "error": {
        "code": "context_length_exceeded", "message": "Your input exceeds the context window of this model."}}}

    with pytest.raises(ContextTooLong):
        read_events(failed)


def test_events_that_carry_nothing_are_skipped_and_garbage_is_unreadable():
    reading = read_events({"type": "response.created", "response": {}}, {"type": "response.reasoning_summary_text.delta",
                                                                          "delta": "thinking"}, {"type": "future.event"})
    with pytest.raises(ProviderError, match=r"^fake: the stream sent something unreadable"):
        reading.take("[1]")
    reading.take(json.dumps(completed()))
    assert reading.reply().text == ""  # the reasoning summary is not the reply


def test_a_stream_without_its_end_is_incomplete():
    with pytest.raises(StreamBroke, match="^fake: the reply ended before it was complete$"):
        read_events({"type": "response.output_text.delta", "delta": "cut"}).reply()
