"""Reading the Messages API's events, whatever framing brought them: server-sent events from
Anthropic and Vertex, AWS event-stream messages from Bedrock."""

from __future__ import annotations

import json

import pytest

from iota.errors import ProviderError
from iota.providers._http import ServerSentEvents
from iota.providers._streaming import StreamBroke
from iota.providers.anthropic import StreamReading
from iota.providers.cloud import _bedrock_event


def events(*lines: str) -> list[tuple[str | None, str]]:
    parser = ServerSentEvents()
    return [event for line in lines if (event := parser.feed(line)) is not None]


def test_server_sent_events_follow_the_format():
    assert events(": a comment", "event: message_start", 'data: {"a":', "data:1}", "id: 7", "", "", "data: x", "") == [
        ("message_start", '{"a":\n1}'), (None, "x")]


def test_events_without_a_name_pings_and_unknown_names_carry_nothing_but_an_error_breaks():
    reading = StreamReading("fake", lambda text: None)
    for name, data in [(None, '{"type": "content_block_delta"}'), ("ping", '{"type": "ping"}'), ("future_event", "{}")]:
        reading.take(name, data)

    with pytest.raises(StreamBroke, match="^fake: the stream failed: overloaded_error: Overloaded$"):
        reading.take("error", '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}')
    with pytest.raises(ProviderError, match=r"^fake: the stream sent something unreadable \(an event that is not an object"):
        reading.take("content_block_delta", "[1]")


def test_bedrock_error_messages_of_either_kind_become_error_events():
    exception = _bedrock_event({":message-type": "exception", ":exception-type": "throttlingException"},
                               b'{"message": "Too many requests"}')
    error = _bedrock_event({":message-type": "error", ":error-code": "InternalFailure", ":error-message": "boom"}, b"")

    assert [(name, json.loads(data)["error"]) for name, data in (exception, error)] == [
        ("error", {"type": "throttlingException", "message": "Too many requests"}),
        ("error", {"type": "InternalFailure", "message": "boom"})]
    assert _bedrock_event({":message-type": "event", ":event-type": "initial-response"}, b"{}") == (None, "")
