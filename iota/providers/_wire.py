"""The conversation in wire form, converted once per message and kept between requests.

Every request carries the whole conversation, and a bot's conversation runs to thousands of
messages. Converting and serialising all of them for every request would make each request cost
more than the one before; instead each provider keeps a `WireHistory`: the JSON of every wire
message it has built, so that the next request — the same conversation plus a few messages at
its end — converts and serialises only those few, and the body is the kept bytes joined.

What invalidates the kept part: the next request's messages are compared with the kept ones by
identity (a list comparison, which costs next to nothing when the objects are the same). From
the first message that is not the same object, everything is converted again: after a
compaction, whose first message is new, that is the whole conversation, once. This relies on a
rule the rest of iota keeps: a message that is part of the conversation is never edited in
place; code that changes one makes a new one (`dataclasses.replace`), as compaction and the
log's repairs do. (A field-by-field check would catch in-place edits too, but it costs as much
as the conversion it saves.)

A wire message is only kept once it is closed: Anthropic and Gemini merge neighbouring messages
of one role, so the last wire message may still grow with the next request's messages; it is
built again each time, from the messages it was made of. A dialect may also make several wire
items of one message (the Responses API: the text, then each tool call); the items of the last
message are built again each time too.
"""

from __future__ import annotations

from typing import Any, Callable

from iota.messages import Message
from iota.sessions.log import json_bytes

# A dialect's conversion: the wire messages (or items) of `messages`, in order, each with the index
# of the message it starts at.
Convert = Callable[[list[Message]], list[tuple[int, dict[str, Any]]]]


def dump(value: Any) -> bytes:
    """JSON as sent on the wire: compact, UTF-8 (lone surrogates escaped, see `json_bytes`)."""
    return json_bytes(value, separators=(",", ":"))


class WireHistory:
    def __init__(self, convert: Convert):
        self._convert = convert
        self._messages: list[Message] = []  # the messages the closed wire messages were made of
        self._closed: list[bytes] = []

    def encode(self, messages: list[Message]) -> list[bytes]:
        """The JSON of each wire message of `messages`, in order."""
        kept = len(self._messages)
        if messages[:kept] != self._messages:  # identical objects compare equal without a look inside
            kept, self._messages, self._closed = 0, [], []
        fresh = self._convert(messages[kept:])
        encoded = [dump(wire) for _, wire in fresh]
        # Only what the last message starts can still change; everything before it is closed.
        last = fresh[-1][0] if fresh else 0
        closing = sum(1 for start, _ in fresh if start < last)
        self._closed += encoded[:closing]
        self._messages = messages[: kept + last]
        return [*self._closed, *encoded[closing:]]


def json_object(fields: dict[str, Any], key: str, items: list[bytes]) -> bytes:
    """The JSON object of `fields` plus `key`, whose value is the array of the JSON `items`."""
    head = dump(fields)
    return b"".join((head[:-1], b"," if fields else b"", dump(key), b":[", b",".join(items), b"]}"))
