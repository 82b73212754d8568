"""The Gemini provider: its request as the fake server receives it, thought signatures carried
from one request to the next, and the chunk shapes the fake server does not produce."""

from __future__ import annotations

import json

import pytest

from iota.errors import ContextTooLong, ProviderError, ProviderRejected
from iota.messages import Message, ToolCall
from iota.providers import Request, gemini
from iota.providers._streaming import StreamBroke
from tests.iota.providers.test_anthropic import READ, conversation
from tests.support.fake_dialects import signature_of
from tests.support.fake_model import tool_call

gemini_only = pytest.mark.parametrize("dialect", ["gemini"])


@gemini_only
async def test_the_request_carries_the_key_system_tools_and_merged_contents(fake_model, open_provider):
    fake_model.reply("ok")
    request = Request("gemini-test", "Be brief.", conversation(), tools=[READ], max_tokens=1000, temperature=0.2,
                      top_p=0.9, effort="low")

    await open_provider().stream(request, lambda text: None)

    (sent,) = fake_model.requests
    assert sent.path == "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
    assert sent.headers["x-goog-api-key"] == "test-key" and "authorization" not in sent.headers
    body = sent.body
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["generationConfig"] == {"maxOutputTokens": 1000, "temperature": 0.2, "topP": 0.9,
                                        "thinkingConfig": {"thinkingLevel": "LOW"}}
    assert body["tools"] == [{"functionDeclarations": [{"name": "read", "description": "Read a file.",
                                                        "parametersJsonSchema": READ.parameters}]}]
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "Read a.txt please"}]},
        # Calls from another provider (or an earlier process) carry the documented placeholder.
        {"role": "model", "parts": [
            {"text": "Reading."},
            {"functionCall": {"id": "toolu_1", "name": "read", "args": {"path": "a.txt"}},
             "thoughtSignature": "skip_thought_signature_validator"},
            {"functionCall": {"id": "toolu_2", "name": "ls", "args": {}}},
        ]},
        # The responses lead their user content, and the notice recorded before them follows.
        {"role": "user", "parts": [
            {"functionResponse": {"id": "toolu_1", "name": "read", "response": {"output": "hello"}}},
            {"functionResponse": {"id": "toolu_2", "name": "ls", "response": {"error": "no such dir"}}},
            {"text": "Resumed after 3 hours (last activity 2026-09-29 18:04)"},
        ]},
        {"role": "model", "parts": [{"text": "a.txt says hello."}]},
        {"role": "user", "parts": [{"text": "thanks"}]},
    ]


@gemini_only
async def test_a_call_goes_back_with_its_thought_signature_and_an_id_of_its_own(fake_model, open_provider):
    fake_model.reply("Looking.", tool_calls=[tool_call("read", {"path": "a.txt"}), tool_call("ls", {"dir": "."})])
    fake_model.reply("It says hi.")
    provider = open_provider()
    messages = [Message("user", "what is in a.txt?")]

    first = await provider.stream(Request("gemini-test", "", messages), lambda text: None)
    read, ls = first.tool_calls
    messages += [Message("assistant", first.text, tool_calls=first.tool_calls),
                 Message("tool", "hi", tool_call_id=read.id, tool_call_name="read"),
                 Message("tool", "a.txt", tool_call_id=ls.id, tool_call_name="ls")]
    await provider.stream(Request("gemini-test", "", messages), lambda text: None)

    # Gemini sent no ids: each call got one, unique (a resumed conversation holds earlier ones).
    assert read.id.startswith("call_") and ls.id.startswith("call_") and read.id != ls.id
    response_id = "gemini_0001"  # the fake's first reply
    assert fake_model.requests[1].body["contents"][1:] == [
        {"role": "model", "parts": [
            {"text": "Looking."},
            {"functionCall": {"id": read.id, "name": "read", "args": {"path": "a.txt"}},
             "thoughtSignature": signature_of(response_id)},
            {"functionCall": {"id": ls.id, "name": "ls", "args": {"dir": "."}}},
        ]},
        {"role": "user", "parts": [
            {"functionResponse": {"id": read.id, "name": "read", "response": {"output": "hi"}}},
            {"functionResponse": {"id": ls.id, "name": "ls", "response": {"output": "a.txt"}}},
        ]},
    ]


@gemini_only
async def test_a_model_path_is_taken_as_it_is(fake_model, open_provider):
    fake_model.reply("ok")

    await open_provider().stream(Request("tunedModels/mine-123", "", [Message("user", "hi")]), lambda text: None)

    assert fake_model.requests[0].path == "/v1beta/tunedModels/mine-123:streamGenerateContent?alt=sse"


def read_chunks(*chunks: dict) -> gemini._Reading:
    reading = gemini._Reading("fake", lambda text: None)
    for chunk in chunks:
        reading.take(json.dumps(chunk))
    return reading


def candidate(*parts: dict, finish: str | None = None) -> dict:
    return {"candidates": [{"content": {"role": "model", "parts": list(parts)}} | ({"finishReason": finish} if finish else {})]}


def test_thoughts_are_not_the_reply_and_thinking_counts_as_output():
    usage = {"promptTokenCount": 2100, "cachedContentTokenCount": 800, "candidatesTokenCount": 34,
             "thoughtsTokenCount": 100, "totalTokenCount": 2234}
    reading = read_chunks(candidate({"text": "Let me think", "thought": True}), candidate({"text": "Hi"}),
                          candidate({"text": "."}, finish="STOP") | {"usageMetadata": usage})

    reply = reading.reply()
    assert (reply.text, reply.stop_reason) == ("Hi.", "end_turn")
    assert (reply.usage.input, reply.usage.cache_read, reply.usage.output, reply.usage.context) == (1300, 800, 134, 2234)


@pytest.mark.parametrize("finish, stop_reason", [("MAX_TOKENS", "max_tokens"), ("SAFETY", "refusal"),
                                                 ("MALFORMED_FUNCTION_CALL", "malformed_function_call")])
def test_finish_reasons_are_translated(finish, stop_reason):
    assert read_chunks(candidate({"text": "x"}, finish=finish)).reply().stop_reason == stop_reason


def test_a_blocked_prompt_ends_the_reply_as_a_refusal():
    reply = read_chunks({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
                         "usageMetadata": {"promptTokenCount": 12, "totalTokenCount": 12}}).reply()

    assert (reply.text, reply.stop_reason, reply.usage.context) == ("", "refusal", 12)


def test_an_error_chunk_breaks_the_stream_and_one_without_a_finish_is_incomplete():
    with pytest.raises(StreamBroke) as caught:
        read_chunks({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}})
    assert str(caught.value.error) == "fake: the stream failed: UNAVAILABLE: The model is overloaded."

    with pytest.raises(StreamBroke, match="^fake: the reply ended before it was complete$"):
        read_chunks(candidate({"text": "cut"})).reply()


@pytest.mark.parametrize("data, reason", [("[1]", "an event that is not an object"), ("{cut", "Expecting property name")])
def test_a_chunk_that_is_not_a_json_object_is_unreadable(data, reason):
    with pytest.raises(ProviderError, match=rf"^fake: the stream sent something unreadable \({reason}"):
        gemini._Reading("fake", lambda text: None).take(data)


@gemini_only
async def test_a_bad_key_refused_with_a_400_says_what_to_check(fake_model, open_provider):
    fake_model.fail(400, message="API key not valid. Please pass a valid API key.")  # as Gemini refuses one
    fake_model.fail(400, message="Invalid JSON payload received.")

    for hint in (True, False):
        with pytest.raises(ProviderRejected) as caught:
            await open_provider().stream(Request("gemini-test", "", [Message("user", "hi")]), lambda text: None)
        assert caught.value.status == 400
        assert str(caught.value).endswith("(check GOOGLE_API_KEY or providers.fake.key)") == hint


def test_signatures_kept_are_bounded_and_the_oldest_go_first():
    provider = gemini.GeminiProvider("fake", "key")
    provider._keep_signatures({f"call_{n}": f"s{n}" for n in range(gemini.KEPT_SIGNATURES + 5)})

    assert len(provider._signatures) == gemini.KEPT_SIGNATURES and "call_4" not in provider._signatures
    contents = gemini.wire_contents([Message("assistant", "", tool_calls=[ToolCall("call_5", "ls", {})])],
                                    provider._signatures)
    assert contents[0][1]["parts"][0]["thoughtSignature"] == "s5"


def test_a_context_too_long_error_is_recognised_in_googles_words():
    from iota.providers._streaming import http_failure

    body = {"error": {"code": 400, "status": "INVALID_ARGUMENT",
                      "message": "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)."}}
    assert isinstance(http_failure("fake", 400, body, ""), ContextTooLong)
