"""Anthropic's Messages API, spoken directly over httpx.

One POST to `{url}/v1/messages` with `stream: true`, read as server-sent events, each a named
`event:` line and a `data:` JSON line: `message_start` (the input usage), `content_block_start`
(a text block, or a `tool_use` block with the call's id and name), `content_block_delta`
(`text_delta` text, or an `input_json_delta` piece of a call's argument JSON),
`content_block_stop`, `message_delta` (the stop reason and the output usage so far),
`message_stop`. A `ping` may come anywhere and carries nothing; an `event: error` inside the
200 stream (`overloaded_error`, say) breaks it. A stream that ends without `message_stop` is
incomplete, never a reply.

The request is what the official SDK sends for the same call (its headers — the key as
`Authorization: Bearer`, `anthropic-version` — and its retry policy, see `_http`), without the
SDK: importing it costs about two seconds. Prompt caching asks the API to cache the conversation
up to its last block (`cache_control`), so the next turn reads the whole prefix from the cache.

Deferred tools (iota.mcp.defer, `reference` mode): a tool spec marked `deferred` is sent with
`defer_loading: true`, beside Anthropic's own regex tool search, which finds such tools and
loads their schemas within the response. The search's blocks (`server_tool_use`,
`tool_search_tool_result`) are kept with the assistant message and sent back at its front on
later requests — without them the model would call what it found with guessed arguments — but
only in requests that carry deferred tools: to anyone else they are blocks of a tool it was
never given.

Bedrock and Vertex serve the same API behind their own URLs and credentials (see `cloud`).
"""

from __future__ import annotations

import json
from functools import partial
from typing import TYPE_CHECKING, Any

import httpx

from iota.messages import ASSISTANT, TOOL, USER, Message, Usage
from iota.providers._http import HttpProvider, read_events
from iota.providers._streaming import ToolCallParts, event_object, incomplete, stream_failure
from iota.providers._wire import WireHistory, json_object
from iota.providers.base import OnText, Reply, Request, Timeouts

if TYPE_CHECKING:  # the parts of a message with attachments load with the first one
    from iota.providers._attachments import Image, Text

DEFAULT_URL = "https://api.anthropic.com"
KEY_VARIABLE = "ANTHROPIC_API_KEY"
# The API version the installed SDK (2.x) sends; Bedrock and Vertex take it in the body.
API_VERSION = "2026-10-21"
# Anthropic's server-side tool search, and the beta that deferred tools need.
TOOL_SEARCH = {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}
TOOL_SEARCH_BETA = "advanced-tool-use-2025-11-20"


class MessagesProvider(HttpProvider):
    """The Messages API wherever it is served: the body, and the events read back. Where it goes
    and how it is authenticated is the subclass's (`encode`, `headers`)."""

    def __init__(self, name: str, timeouts: Timeouts):
        super().__init__(name, timeouts)
        # The conversation with the tool search's blocks, for requests with deferred tools, and without.
        self._histories = {True: WireHistory(partial(wire_messages, server_blocks=True)),
                           False: WireHistory(wire_messages)}

    def body(self, fields: dict[str, Any], request: Request) -> bytes:
        """The request's JSON: `fields` and the conversation (converted once per message)."""
        history = self._histories[has_deferred(request)]
        return json_object(fields, "messages", history.encode(request.messages))

    async def read(self, response: httpx.Response, deliver: OnText) -> Reply:
        reading = StreamReading(self.name, deliver)
        await read_events(self.name, response, reading.take)
        return reading.reply()


class AnthropicProvider(MessagesProvider):
    """Anthropic's own endpoint, with an API key."""

    def __init__(self, name: str, api_key: str, base_url: str | None = None, timeouts: Timeouts = Timeouts()):
        super().__init__(name, timeouts)
        self._endpoint = (base_url or DEFAULT_URL).rstrip("/") + "/v1/messages"
        self._headers = {"authorization": f"Bearer {api_key}", "anthropic-version": API_VERSION,
                         "content-type": "application/json", "accept": "application/json"}
        self._beta = False

    def encode(self, request: Request) -> tuple[str, bytes]:
        self._beta = has_deferred(request)  # requests are sent one at a time: `headers` follows
        return self._endpoint, self.body(request_fields(request) | {"stream": True}, request)

    async def headers(self, url: str, body: bytes) -> dict[str, str]:
        return self._headers | {"anthropic-beta": TOOL_SEARCH_BETA} if self._beta else self._headers

    def credentials_hint(self) -> str:
        return f"check {KEY_VARIABLE} or providers.{self.name}.key"


class StreamReading:
    """The state of one streamed reply: text so far, tool calls by block index, usage, stop.
    Fed one event at a time, by name and data, whatever framing brought it."""

    def __init__(self, provider: str, deliver: OnText):
        self._provider = provider
        self._deliver = deliver
        self._text: list[str] = []
        self._calls = ToolCallParts()
        self._server: dict[Any, dict[str, Any]] = {}  # server-tool blocks by index, input JSON as text
        self._usage: dict[str, int] = {}
        self._stop_reason = ""
        self._stopped = False

    def take(self, name: str | None, data: str) -> None:
        # As in the SDK: an event without a name, a ping, or one without data carries nothing.
        if name is None or name == "ping" or not data:
            return
        event = event_object(self._provider, data)
        if name == "error":
            raise stream_failure(self._provider, event)
        if name == "message_start":
            self._take_usage((event.get("message") or {}).get("usage"))
        elif name == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") == "tool_use":
                self._calls.start(event.get("index"), str(block.get("id") or ""), str(block.get("name") or ""))
            elif block.get("type") in SERVER_BLOCKS:
                self._server[event.get("index")] = {**block, "input": ""} if "input" in block else dict(block)
        elif name == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta" and delta.get("text"):
                self._text.append(delta["text"])
                self._deliver(delta["text"])
            elif delta.get("type") == "input_json_delta" and event.get("index") in self._calls:
                self._calls.add_arguments(event["index"], str(delta.get("partial_json") or ""))
            elif delta.get("type") == "input_json_delta" and "input" in self._server.get(event.get("index"), {}):
                self._server[event["index"]]["input"] += str(delta.get("partial_json") or "")
        elif name == "message_delta":
            self._stop_reason = (event.get("delta") or {}).get("stop_reason") or self._stop_reason
            self._take_usage(event.get("usage"))
        elif name == "message_stop":
            self._stopped = True

    def _take_usage(self, usage: Any) -> None:
        # message_start carries every figure; message_delta carries the cumulative output and,
        # on newer servers, the input figures again. A figure left out (or null) keeps its value.
        for field in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
            value = usage.get(field) if isinstance(usage, dict) else None
            if isinstance(value, int):
                self._usage[field] = value

    def reply(self) -> Reply:
        """The reply, once the stream has ended; a stream that ended without `message_stop` is
        incomplete (the SDK would report nothing at all)."""
        if not self._stopped:
            raise incomplete(self._provider)
        usage = Usage(
            input=self._usage.get("input_tokens", 0),
            output=self._usage.get("output_tokens", 0),
            cache_read=self._usage.get("cache_read_input_tokens", 0),
            cache_write=self._usage.get("cache_creation_input_tokens", 0),
        )
        return Reply("".join(self._text), self._calls.finish(), usage, self._stop_reason, self._server_blocks())

    def _server_blocks(self) -> list[dict[str, Any]]:
        blocks = []
        for block in self._server.values():
            if "input" in block:
                try:
                    block["input"] = json.loads(block["input"] or "{}")
                except ValueError:
                    block["input"] = {}
            blocks.append(block)
        return blocks


# The blocks of Anthropic's own server-side tool search, kept and sent back.
SERVER_BLOCKS = ("server_tool_use", "tool_search_tool_result")


def has_deferred(request: Request) -> bool:
    return any(tool.deferred for tool in request.tools)


def request_fields(request: Request) -> dict[str, Any]:
    """The body of a Messages request, all but the conversation and `stream`."""
    fields: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        # Cache the conversation up to its last block, so the next turn reads the whole prefix
        # from the cache instead of paying for it again.
        "cache_control": {"type": "ephemeral"},
    }
    if request.system:
        fields["system"] = request.system
    if request.tools:
        fields["tools"] = [
            {"name": tool.name, "description": tool.description, "input_schema": tool.parameters,
             **({"defer_loading": True} if tool.deferred else {})} for tool in request.tools
        ]
        if has_deferred(request):
            fields["tools"].insert(0, TOOL_SEARCH)
    # A model that refuses a sampling parameter says so in a 400.
    if request.temperature is not None:
        fields["temperature"] = request.temperature
    if request.top_p is not None:
        fields["top_p"] = request.top_p
    if request.effort:
        fields["output_config"] = {"effort": request.effort}
    return fields


def wire_messages(messages: list[Message], server_blocks: bool = False) -> list[tuple[int, dict[str, Any]]]:
    """iota's messages as Anthropic's, each with the index of the message it starts at: tool
    results become `tool_result` blocks of a user message, tool calls `tool_use` blocks of the
    assistant's, and neighbours of one role merge into one message (the API wants the roles to
    alternate). System and compaction records are not conversation: the system prompt travels in
    `system`, a summary in the messages around it. `server_blocks`: an assistant message's tool
    search blocks go first in it. A user message's attachments are blocks before its text: an
    `image` block with a base64 `source` for an image, a text block for a text file."""
    wire: list[tuple[int, dict[str, Any]]] = []
    for index, message in enumerate(messages):
        role, blocks = _blocks(message)
        if server_blocks and message.role == ASSISTANT:
            blocks = [*(block for block in message.server_blocks if block.get("type") in SERVER_BLOCKS), *blocks]
        if not blocks:
            continue
        if wire and wire[-1][1]["role"] == role:
            wire[-1][1]["content"].extend(blocks)
        else:
            wire.append((index, {"role": role, "content": blocks}))
    for _, message in wire:
        # A user message that answers tool calls must lead with the results (the API rejects
        # text before them), which matters when a notice was recorded between call and result.
        message["content"].sort(key=lambda block: block["type"] != "tool_result")
    return wire


def _blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    # Empty text blocks are left out: the API rejects them.
    text = [{"type": "text", "text": message.content}] if message.content else []
    if message.role == USER:  # notices included: to the model a host notice is user text
        if not message.attachments:
            return "user", text
        from iota.providers._attachments import parts as attachment_parts  # a message with attachments only

        return "user", [_user_block(part) for part in attachment_parts(message)]
    if message.role == ASSISTANT:
        calls = [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in message.tool_calls]
        return "assistant", text + calls
    if message.role == TOOL:
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
        if message.content:
            result["content"] = message.content
        if message.is_error:
            result["is_error"] = True
        return "user", [result]
    return "", []


def _user_block(part: Text | Image) -> dict[str, Any]:
    from iota.providers._attachments import Image

    if isinstance(part, Image):
        return {"type": "image", "source": {"type": "base64", "media_type": part.mime, "data": part.base64}}
    return {"type": "text", "text": part.text}
