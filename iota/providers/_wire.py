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
built again each time, from the messages it was made of. (The Responses API makes several items
of one message — its text, then each call — which share the message's index, and so stay open
together.)
"""

from __future__ import annotations

from typing import Any, Callable

from iota.messages import Message
from iota.text import json_bytes

# A dialect's conversion: the wire messages of `messages`, each with the index of the message it
# starts at (never decreasing; wire messages that must be converted together share one).
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
        # Every wire message that starts where the last one does stays open: the last can grow
        # (Anthropic merges neighbours of one role), and a group that starts there may still be
        # reordered (OpenAI sends notices after the tool results they came between).
        open_from = next((i for i, (start, _) in enumerate(fresh) if start == fresh[-1][0]), 0) if fresh else 0
        if open_from:
            self._closed += encoded[:open_from]
            self._messages = messages[: kept + fresh[-1][0]]
        return [*self._closed, *encoded[open_from:]]


def json_object(fields: dict[str, Any], key: str, items: list[bytes]) -> bytes:
    """The JSON object of `fields` plus `key`, whose value is the array of the JSON `items`."""
    head = dump(fields)
    return b"".join((head[:-1], b"," if fields else b"", dump(key), b":[", b",".join(items), b"]}"))
