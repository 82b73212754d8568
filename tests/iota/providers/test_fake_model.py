"""The fake model server on its own, driven from plain threads with a blocking client, the way an
end-to-end test's subprocess would reach it."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.support.fake_model import FakeModel, tool_call


def sse_events(text: str) -> list[tuple[str | None, str]]:
    events = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines.get("event"), lines["data"]))
    return events


def test_the_anthropic_dialect_is_named_events_in_the_documented_order(fake_model):
    fake_model.reply("Hi there", pieces=2, tool_calls=[tool_call("read", {"path": "a"}, id="toolu_x")], fragments=2,
                     input_tokens=70, cache_read_tokens=20, cache_write_tokens=10, output_tokens=9)

    response = httpx.post(fake_model.url + "/v1/messages", json={"model": "m", "messages": []})

    events = sse_events(response.text)
    assert [name for name, _ in events] == [
        "message_start", "ping",
        "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
        "message_delta", "message_stop",
    ]
    data = [json.loads(raw) for _, raw in events]
    assert data[0]["message"]["usage"] == {"input_tokens": 70, "cache_creation_input_tokens": 10,
                                           "cache_read_input_tokens": 20, "output_tokens": 1}
    assert data[6]["content_block"] == {"type": "tool_use", "id": "toolu_x", "name": "read", "input": {}}
    assert "".join(d["delta"]["partial_json"] for d in data[7:9]) == '{"path": "a"}'
    assert data[10]["delta"]["stop_reason"] == "tool_use" and data[10]["usage"] == {"output_tokens": 9}


def test_the_openai_dialect_is_data_chunks_then_usage_then_done(fake_model):
    fake_model.reply("Hi", pieces=1, input_tokens=70, cache_read_tokens=20, output_tokens=9)

    response = httpx.post(fake_model.openai_url + "/chat/completions", json={"model": "m", "messages": []})

    lines = [line for line in response.text.split("\n") if line]
    assert all(line.startswith("data: ") for line in lines) and lines[-1] == "data: [DONE]"
    chunks = [json.loads(line[len("data: "):]) for line in lines[:-1]]
    assert [c["choices"][0]["delta"] for c in chunks[:2]] == [{"role": "assistant", "content": ""}, {"content": "Hi"}]
    assert chunks[2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[3]["choices"] == [] and chunks[3]["usage"] == {
        "prompt_tokens": 90, "completion_tokens": 9, "total_tokens": 99, "prompt_tokens_details": {"cached_tokens": 20}}


def test_a_scripted_failure_has_the_dialects_error_shape_and_retry_header(fake_model):
    fake_model.fail(429, retry_after_ms=250)

    response = httpx.post(fake_model.url + "/v1/messages", json={})

    assert response.status_code == 429 and response.headers["retry-after-ms"] == "250"
    assert response.json() == {"type": "error", "error": {"type": "rate_limit_error", "message": "fake model: scripted HTTP 429"}}


def test_an_unscripted_request_is_answered_500_and_fails_the_test():
    with FakeModel() as model:
        response = httpx.post(model.openai_url + "/chat/completions", json={"model": "m"})

        assert response.status_code == 500 and response.headers["x-should-retry"] == "false"
        assert model.requests[0].body == {"model": "m"}
        with pytest.raises(AssertionError, match=r"nothing was scripted for: \['POST /v1/chat/completions'\]"):
            model.assert_no_unexpected()


def test_a_dropped_connection_is_an_incomplete_chunked_body(fake_model):
    fake_model.reply("abcdef", pieces=3, drop_after=1)

    with pytest.raises(httpx.RemoteProtocolError):
        httpx.post(fake_model.url + "/v1/messages", json={})
    assert fake_model.requests[0].wait_done() and not fake_model.requests[0].disconnected


def test_the_responses_dialect_is_named_events_in_the_documented_order(fake_model):
    fake_model.reply("Hi there", pieces=2, tool_calls=[tool_call("read", {"path": "a"}, id="call_x")], fragments=2,
                     input_tokens=70, cache_read_tokens=20, output_tokens=9)

    response = httpx.post(fake_model.openai_url + "/responses", json={"model": "m", "input": []})

    events = sse_events(response.text)
    assert [name for name, _ in events] == [
        "response.created", "response.in_progress",
        "response.output_item.added", "response.content_part.added", "response.output_text.delta",
        "response.output_text.delta", "response.output_text.done", "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
        "response.function_call_arguments.done", "response.output_item.done",
        "response.completed",
    ]
    data = [json.loads(raw) for _, raw in events]
    assert [d["type"] for d in data] == [name for name, _ in events]
    assert [d["sequence_number"] for d in data] == list(range(len(data)))
    call = data[9]["item"]
    assert (call["type"], call["call_id"], call["name"], call["arguments"]) == ("function_call", "call_x", "read", "")
    assert {d["item_id"] for d in data[10:12]} == {call["id"]}
    assert "".join(d["delta"] for d in data[10:12]) == '{"path": "a"}' == data[13]["item"]["arguments"]
    assert data[14]["response"]["usage"] == {"input_tokens": 90, "input_tokens_details": {"cached_tokens": 20},
                                             "output_tokens": 9, "output_tokens_details": {"reasoning_tokens": 0},
                                             "total_tokens": 99}


def test_the_gemini_dialect_is_data_chunks_ending_with_a_finish_reason(fake_model):
    fake_model.reply("Hi there", pieces=2, tool_calls=[tool_call("read", {"path": "a"}), tool_call("ls")],
                     input_tokens=70, cache_read_tokens=20, output_tokens=9, stop_reason="max_tokens")

    response = httpx.post(fake_model.url + "/v1beta/models/m:streamGenerateContent?alt=sse", json={"contents": []})

    assert response.headers["content-type"] == "text/event-stream"
    chunks = [json.loads(data) for name, data in sse_events(response.text.replace("\r\n", "\n"))]
    parts = [chunk["candidates"][0]["content"]["parts"] for chunk in chunks]
    assert parts[:2] == [[{"text": "Hi t"}], [{"text": "here"}]]
    assert parts[2][0]["functionCall"] == {"name": "read", "args": {"path": "a"}} and parts[2][0]["thoughtSignature"]
    assert parts[3] == [{"functionCall": {"name": "ls", "args": {}}}]  # only a reply's first call is signed
    assert [c["candidates"][0].get("finishReason") for c in chunks] == [None, None, None, None, "MAX_TOKENS"]
    assert {k: v for k, v in chunks[-1]["usageMetadata"].items() if k != "promptTokensDetails"} == {
        "promptTokenCount": 90, "candidatesTokenCount": 9, "totalTokenCount": 99, "cachedContentTokenCount": 20}


def test_a_gemini_failure_is_googles_error_shape(fake_model):
    fake_model.fail(429, retry_after_ms=250)
    fake_model.context_too_long()

    throttled = httpx.post(fake_model.url + "/v1beta/models/m:streamGenerateContent?alt=sse", json={})
    too_long = httpx.post(fake_model.url + "/v1beta/models/m:streamGenerateContent?alt=sse", json={})

    assert throttled.status_code == 429 and throttled.headers["retry-after-ms"] == "250"
    assert throttled.json() == {"error": {"code": 429, "message": "fake model: scripted HTTP 429",
                                          "status": "RESOURCE_EXHAUSTED"}}
    assert too_long.status_code == 400 and too_long.json()["error"]["status"] == "INVALID_ARGUMENT"


@pytest.mark.parametrize("path, body, status, message", [
    ("/v1/responses", {"input": [{"role": "user", "content": "hi"},
                                 {"type": "function_call", "call_id": "call_1", "name": "ls", "arguments": "{}"}]},
     None, "No tool output found for function call call_1."),
    ("/v1/responses", {"input": [{"type": "function_call_output", "call_id": "call_9", "output": "x"}]},
     None, "No tool call found for function call output with call_id call_9."),
    ("/v1beta/models/m:streamGenerateContent?alt=sse",
     {"contents": [{"role": "user", "parts": [{"text": "hi"}]},
                   {"role": "model", "parts": [{"functionCall": {"name": "a"}}, {"functionCall": {"name": "b"}}]},
                   {"role": "user", "parts": [{"functionResponse": {"name": "a", "response": {}}}]}]},
     "INVALID_ARGUMENT", "Please ensure that the number of function response parts is equal to the number of "
                         "function call parts of the function call turn."),
    ("/v1beta/models/m:streamGenerateContent?alt=sse", {"contents": [{"role": "user", "parts": [{"text": ""}]}]},
     "INVALID_ARGUMENT", "* GenerateContentRequest.contents[0].parts: contents.parts must not be empty, and each "
                         "part must have one initialized field of data"),
], ids=["responses-unanswered", "responses-stray-output", "gemini-responses-missing", "gemini-empty-part"])
def test_a_conversation_the_real_api_refuses_is_refused_in_its_words(path, body, status, message):
    with FakeModel() as model:
        model.reply("never sent")
        response = httpx.post(model.url + path, json=body)

        error = response.json()["error"]
        assert (response.status_code, error["message"], error.get("status")) == (400, message, status)
        assert model.pending == 1 and [why for _, why in model.rejected] == [message]


def test_a_request_whose_client_went_away_mid_body_is_neither_served_nor_judged(fake_model):
    # What a kill -9 of iota while it sends leaves the server: a content-length it never reaches.
    import socket
    import time
    from urllib.parse import urlsplit

    address = urlsplit(fake_model.url)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    with socket.create_connection((address.hostname, address.port)) as connection:
        connection.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           b"Content-Length: %d\r\n\r\n" % len(body) + body[: len(body) // 2])
    deadline = time.monotonic() + 10
    while fake_model.cut_short == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fake_model.cut_short == 1
    assert fake_model.requests == [] and fake_model.rejected == []
