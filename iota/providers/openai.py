"""Any OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM, llama.cpp, Ollama), over httpx.

One POST to `{url}/chat/completions` with `stream: true` and `stream_options.include_usage`, read
as `data:` lines until `data: [DONE]`. Tool calls arrive in fragments keyed by `index`: the first
carries the id and the name, the rest pieces of the argument text; Ollama sends a whole call in
one chunk, and its older versions no `index` at all. The usage comes in a last chunk whose
`choices` is empty.

Sending, retrying and the rules for a stream that breaks are shared with the other providers
(see `_http` and `_streaming`).

`finish_reason` is translated into the Anthropic words the rest of iota uses for `stop_reason`:
stop → end_turn, tool_calls → tool_use, length → max_tokens, content_filter → refusal.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from iota.messages import ASSISTANT, TOOL, USER, Message, Usage
from iota.providers._http import HttpProvider
from iota.providers._streaming import ToolCallParts, body_failure, incomplete, stream_failure, unreadable
from iota.providers._wire import WireHistory, dump, json_object
from iota.providers.base import OnText, Reply, Request, Timeouts

DEFAULT_URL = "https://api.openai.com/v1"
KEY_VARIABLE = "OPENAI_API_KEY"

STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens", "content_filter": "refusal"}


class OpenAIProvider(HttpProvider):
    def __init__(self, name: str, api_key: str, base_url: str | None = None, timeouts: Timeouts = Timeouts()):
        super().__init__(name, timeouts)
        # We ask for usage with include_usage; a server that ignores it gives zeros.
        self._endpoint = (base_url or DEFAULT_URL).rstrip("/") + "/chat/completions"
        self._headers = {"content-type": "application/json"} | ({"authorization": f"Bearer {api_key}"} if api_key else {})
        self._history = WireHistory(wire_messages)

    def encode(self, request: Request) -> tuple[str, bytes]:
        system = [dump({"role": "system", "content": request.system})] if request.system else []
        return self._endpoint, json_object(request_fields(request), "messages", system + self._history.encode(request.messages))

    async def headers(self, url: str, body: bytes) -> dict[str, str]:
        return self._headers

    def credentials_hint(self) -> str:
        return f"check {KEY_VARIABLE} or providers.{self.name}.key"

    async def read(self, response: httpx.Response, deliver: OnText) -> Reply:
        reading = _Reading(self.name, deliver)
        try:
            async for line in response.aiter_lines():
                # Blank lines, `: keep-alive` comments and `event:` names carry nothing for us.
                if not line.startswith("data:"):
                    continue
                data = line[len("data:") :].strip()
                if data == "[DONE]":
                    break
                reading.take(json.loads(data))
        except httpx.TransportError as err:
            raise body_failure(self.name, err) from err
        except ValueError as err:
            raise unreadable(self.name, err) from err
        if not reading.finish_reason:
            raise incomplete(self.name)
        return reading.reply()


class _Reading:
    """The state of one streamed reply: text so far, tool calls by index, usage, finish reason."""

    def __init__(self, provider: str, deliver: OnText):
        self._provider = provider
        self._deliver = deliver
        self._text: list[str] = []
        self._calls = ToolCallParts()
        self._usage: dict[str, Any] = {}
        self.finish_reason = ""

    def take(self, chunk: Any) -> None:
        if not isinstance(chunk, dict):
            raise ValueError(f"a chunk that is not an object: {chunk!r}")
        if chunk.get("error"):
            raise stream_failure(self._provider, chunk)
        if isinstance(chunk.get("usage"), dict):
            self._usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                self._text.append(delta["content"])
                self._deliver(delta["content"])
            for fragment in delta.get("tool_calls") or []:
                self._take_call(fragment)
            self.finish_reason = choice.get("finish_reason") or self.finish_reason

    def _take_call(self, fragment: dict[str, Any]) -> None:
        function = fragment.get("function") or {}
        key = fragment.get("index")
        if key is None:  # no index (older Ollama): an id starts a new call, anything else continues one
            key = f"call {fragment.get('id')}" if fragment.get("id") else self._calls.last_key
        if key not in self._calls:
            self._calls.start(key, fragment.get("id") or f"call_{key}", function.get("name") or "")
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # some servers send the arguments as an object
            arguments = json.dumps(arguments)
        if arguments:
            self._calls.add_arguments(key, arguments)

    def reply(self) -> Reply:
        cached = (self._usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        # prompt_tokens counts the cached part too; iota's `input` (like Anthropic's) does not.
        usage = Usage(
            input=(self._usage.get("prompt_tokens") or 0) - cached,
            output=self._usage.get("completion_tokens") or 0,
            cache_read=cached,
            total=self._usage.get("total_tokens") or 0,
        )
        stop_reason = STOP_REASONS.get(self.finish_reason, self.finish_reason)
        return Reply("".join(self._text), self._calls.finish(), usage, stop_reason)


def request_fields(request: Request) -> dict[str, Any]:
    """The body of a Chat Completions request, all but the messages."""
    body: dict[str, Any] = {
        "model": request.model,
        "stream": True,
        "stream_options": {"include_usage": True},
        # OpenAI's current name for the cap; its reasoning models refuse the old `max_tokens`,
        # and servers that do not know it ignore it.
        "max_completion_tokens": request.max_tokens,
    }
    if request.tools:
        body["tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in request.tools
        ]
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.top_p is not None:
        body["top_p"] = request.top_p
    if request.effort:
        body["reasoning_effort"] = request.effort
    return body


def wire_messages(messages: list[Message]) -> list[tuple[int, dict[str, Any]]]:
    """iota's messages as Chat Completions messages, each with the index of the message its group
    starts at: tool calls on the assistant message, each tool result a `tool` message. System and
    compaction records are not conversation and are left out (the system prompt comes from the
    request, first).

    The API wants the results right after the call, so a notice recorded between them is sent
    after the results. An assistant message with tool calls, its results and the notices held
    back meanwhile are one group: they share the group's start index, so the kept wire history
    (`_wire`) never keeps half a group and converts the rest without knowing what it waits for."""
    wire: list[tuple[int, dict[str, Any]]] = []
    waiting: set[str] = set()  # the last tool calls' ids not yet answered
    held: list[dict[str, Any]] = []  # what came between those calls and their results
    group = 0  # the start index of the group being built
    for index, message in enumerate(messages):
        if not waiting:
            group = index
        if message.role == USER and (message.content or message.attachments):  # notices too: user text to the model
            entry = {"role": "user", "content": user_content(message)}
            if waiting:
                held.append(entry)
            else:
                wire.append((group, entry))
        elif message.role == ASSISTANT and (message.content or message.tool_calls):
            entry = {"role": "assistant", "content": message.content or None}
            if message.tool_calls:
                entry["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                    for c in message.tool_calls
                ]
            # Calls left unanswered (a log repaired elsewhere answers them) end their group here.
            wire.extend((group, held_entry) for held_entry in held)
            group, held = index, []
            wire.append((group, entry))
            waiting = {c.id for c in message.tool_calls}
        elif message.role == TOOL:
            wire.append((group, {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}))
            waiting.discard(message.tool_call_id)
            if message.mounted_tools:
                # Tool schemas loaded into the history (a deferred tool, `system-tools` mode): a
                # system message with `tools` and no content, held back, like a notice, until
                # every result of the round is sent.
                held.append({"role": "system", "tools": [_function(tool) for tool in message.mounted_tools]})
            if not waiting:
                wire.extend((group, held_entry) for held_entry in held)
                held = []
    return wire + [(group, entry) for entry in held]


def user_content(message: Message) -> str | list[dict[str, Any]]:
    """A user message's content: its text, or with attachments a list of parts — `text`, and an
    `image_url` part whose URL is the image as a data URL."""
    if not message.attachments:
        return message.content
    from iota.providers._attachments import Image, parts as attachment_parts  # a message with attachments only

    return [{"type": "image_url", "image_url": {"url": part.data_url}} if isinstance(part, Image)
            else {"type": "text", "text": part.text} for part in attachment_parts(message)]


def _function(tool: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": tool.get("name"), "description": tool.get("description"),
                                             "parameters": tool.get("parameters")}}
