"""The conversation kept in wire form between requests: converted once, and never stale."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from iota.messages import Message, ToolCall
from iota.providers import anthropic, gemini, openai, openresponses
from iota.providers._wire import WireHistory
from tests.support import fake_dialects

DIALECTS = {"anthropic": anthropic.wire_messages, "openai": openai.wire_messages,
            "openresponses": openresponses.wire_items, "gemini": gemini.wire_contents}


def fresh(convert, messages: list[Message]) -> list:
    """What converting the whole conversation from scratch gives."""
    return [wire for _, wire in convert(messages)]


def kept(history: WireHistory, messages: list[Message]) -> list:
    return [json.loads(item) for item in history.encode(messages)]


def random_turns(rng: random.Random, count: int) -> list[Message]:
    """A conversation's worth of messages of every kind, in an order a session may hold them."""
    messages = []
    for n in range(count):
        kind = rng.choice(["user", "notice", "assistant", "calls", "system", "empty"])
        if kind == "calls":
            calls = [ToolCall(f"call_{n}_{i}", "read", {"path": f"f{n}"}) for i in range(rng.randint(1, 2))]
            messages.append(Message("assistant", rng.choice(["", "Looking."]), tool_calls=calls))
            for call in calls:
                if rng.random() < 0.3:
                    messages.append(Message("user", "a notice between call and result", notice=True))
                messages.append(Message("tool", f"result {n}", tool_call_id=call.id, is_error=rng.random() < 0.2))
        elif kind == "system":
            messages.append(Message("compaction", "a summary", compacted_through=1))
        else:
            messages.append(Message("assistant" if kind == "assistant" else "user", "" if kind == "empty" else f"text {n}",
                                    notice=kind == "notice"))
    return messages


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_growing_conversation_encodes_as_a_fresh_conversion_would(dialect):
    convert = DIALECTS[dialect]
    rng = random.Random(21)
    history = WireHistory(convert)
    messages: list[Message] = []
    for _ in range(60):
        messages = messages + random_turns(rng, rng.randint(1, 4))
        assert kept(history, messages) == fresh(convert, messages)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_requests_cut_anywhere_encode_as_a_fresh_conversion_would(dialect):
    # A request may come while a group is open: tool calls whose results are not all there, with
    # a notice recorded in between, which OpenAI's wire moves after the results once they come.
    convert = DIALECTS[dialect]
    rng = random.Random(7)
    everything = random_turns(rng, 300)
    history = WireHistory(convert)
    end = 0
    while end < len(everything):
        end = min(len(everything), end + rng.randint(1, 3))
        messages = everything[:end]
        assert kept(history, messages) == fresh(convert, messages), end


@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_request_converts_only_the_messages_at_its_end(dialect):
    converted: list[int] = []

    def counting(messages):
        converted.append(len(messages))
        return DIALECTS[dialect](messages)

    history = WireHistory(counting)
    messages = random_turns(random.Random(1), 400)
    history.encode(messages)
    for n in range(20):
        messages = messages + [Message("user", f"question {n}"), Message("assistant", f"answer {n}")]
        history.encode(messages)

    # After the first request, each converts the messages of the last wire message of the one
    # before (which may still have grown: a run of one role) and the two new ones.
    assert converted[0] == len(messages) - 40 and converted[1] < 20
    assert converted[2:] == [3] * 19


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_replaced_message_or_a_compaction_is_converted_again(dialect):
    convert = DIALECTS[dialect]
    history = WireHistory(convert)
    messages = random_turns(random.Random(2), 200) + [Message("user", "the end")]
    history.encode(messages)

    edited = list(messages)
    edited[5] = dataclasses.replace(messages[5], role="user", content="a corrected message")
    assert kept(history, edited) == fresh(convert, edited)

    compacted = [Message("user", "Summary of the conversation so far"), *messages[150:]]
    assert kept(history, compacted) == fresh(convert, compacted)
    # and back to a conversation that shares only a prefix of the one before
    assert kept(history, messages[:100]) == fresh(convert, messages[:100])


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_last_message_of_several_wire_items_is_built_again_not_kept_twice(dialect):
    # The Responses API makes an item of the text and one of each call: none of them is closed
    # while their message is the last.
    convert = DIALECTS[dialect]
    history = WireHistory(convert)
    calls = [ToolCall("call_1", "read", {"path": "a"}), ToolCall("call_2", "ls", {})]
    messages = [Message("user", "look"), Message("assistant", "Looking.", tool_calls=calls)]
    assert kept(history, messages) == fresh(convert, messages)

    messages = messages + [Message("tool", "a", tool_call_id="call_1"), Message("tool", ".", tool_call_id="call_2")]
    assert kept(history, messages) == fresh(convert, messages)


@pytest.mark.parametrize("dialect, key", [("openresponses", "input"), ("gemini", "contents")])
def test_any_conversation_is_one_the_api_accepts(dialect, key):
    # Notices between calls and results, runs of one role, empty messages: what the real API
    # refuses, the fake server refuses too (tests.support.fake_dialects).
    rng = random.Random(7)
    for _ in range(200):
        messages = [Message("user", "start"), *random_turns(rng, rng.randint(1, 12))]
        body = {key: fresh(DIALECTS[dialect], messages)}
        assert fake_dialects.conversation_error(dialect, body) is None, (messages, body)


@pytest.mark.parametrize("dialect", ["anthropic", "openai"])
def test_the_fake_rejects_a_body_cut_short_as_the_real_apis_do(dialect):
    # A client killed while it sends leaves the server half a body: not JSON, answered with a 400.
    from tests.support.api_rules import conversation_error

    whole = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    assert conversation_error(dialect, json.loads(whole)) is None
    assert conversation_error(dialect, whole[: len(whole) // 2]) == "the request body is not a JSON object"
