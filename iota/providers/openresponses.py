"""OpenAI's Responses API (`type: openresponses`), over httpx.

One POST to `{url}/responses` with `stream: true`, read as server-sent events, each a named
`event:` line and a `data:` JSON line whose `type` repeats the name:

    response.created, response.in_progress          the response began (nothing for us)
    response.output_item.added                      an output item began: a message, a reasoning
                                                    item, or a `function_call` with its `call_id`
                                                    and `name` (and empty `arguments`)
    response.output_text.delta                      a piece of the reply's text
    response.refusal.delta                          a piece of a refusal, shown as text
    response.function_call_arguments.delta          a piece of a call's argument JSON, by `item_id`
    response.output_item.done                       the item complete; a call's `arguments` whole
    response.completed                              the end, with `response.usage`
    response.incomplete                             the end, cut short: `incomplete_details.reason`
                                                    is `max_output_tokens` or `content_filter`
    response.failed, error                          the request failed inside the 200 stream

A stream that ends without one of the three ends is incomplete, never a reply. The rest
(`response.content_part.*`, `*.done` echoes, reasoning summaries) carries nothing we keep.

Deferred tools (iota.mcp.defer, `tool-search` mode): a tool spec marked `deferred` is sent with
`defer_loading: true` (the model sees its name and description, not its schema), beside a
`tool_search` tool of `execution: "client"`. When the model wants such a tool it answers with a
`tool_search_call` item (its `call_id` and `{"query": …}`) and stops; this provider answers it —
the best matches of iota's own search (`iota.providers.tool_search.search`) as the `tools` of a
`tool_search_output` item with the same `call_id` — and asks again, the call and its output at
the end of the input, until the model answers with text or function calls (at most
MAX_SEARCH_ROUNDS searches in one reply). The searches and their outputs are the reply's
`server_blocks`: kept with the assistant message and sent again before its text and calls on
later requests — the tools they loaded stay loaded — but only in requests that carry deferred
tools, since an API that was given no `tool_search` tool refuses its items.

The conversation goes in `input` as the Rust iota sends it: user and assistant text as role
messages, each tool call a `function_call` item (its `call_id`, not the item id: a call replayed
with its `fc_` id would also need the reasoning item that came with it) and each result a
`function_call_output`, in the order Chat Completions wants them (results right after their
calls). A user message's attachments are content parts before its text: `input_text`, and
`input_image` with the image as a data URL. Reasoning items are not kept, so a reasoning model starts each request
from the conversation alone. The system prompt is `instructions`.

Sending, retrying and the rules for a stream that breaks are shared with the other providers
(see `_http` and `_streaming`).
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import httpx

from iota.errors import ProviderError
from iota.messages import Message, Usage
from iota.providers import openai
from iota.providers._http import HttpProvider, read_events
from iota.providers._streaming import ToolCallParts, event_object, incomplete, retry_until_output, stream_failure
from iota.providers._wire import WireHistory, dump, json_object
from iota.providers.base import OnText, Reply, Request, Timeouts, ToolSpec
from iota.providers.tool_search import SEARCH_TOP_K, search

# Why a response ended early, in the words the rest of iota uses for `stop_reason`.
INCOMPLETE_REASONS = {"max_output_tokens": "max_tokens", "content_filter": "refusal"}
# The tool search iota answers itself, sent beside the deferred tools.
TOOL_SEARCH = {
    "type": "tool_search", "execution": "client",
    "description": ("Search the deferred tools and load the ones you need before first use. Query by capability "
                    'keywords (e.g. "create pull request"); the best matches load and stay available.'),
    "parameters": {"type": "object", "properties": {"query": {
        "type": "string", "description": "Capability keywords."}}, "required": ["query"], "additionalProperties": False},
}
# The items of the tool search, kept with the assistant message and sent again.
SEARCH_ITEMS = ("tool_search_call", "tool_search_output")
MAX_SEARCH_ROUNDS = 8


class OpenResponsesProvider(HttpProvider):
    def __init__(self, name: str, api_key: str, base_url: str | None = None, timeouts: Timeouts = Timeouts()):
        super().__init__(name, timeouts)
        self._endpoint = (base_url or openai.DEFAULT_URL).rstrip("/") + "/responses"
        self._headers = {"content-type": "application/json", "accept": "text/event-stream"} | (
            {"authorization": f"Bearer {api_key}"} if api_key else {})
        # The conversation with the tool searches' items, for requests with deferred tools, and without.
        self._histories = {True: WireHistory(partial(wire_items, server_blocks=True)), False: WireHistory(wire_items)}

    def encode(self, request: Request, extra: list[dict[str, Any]] = ()) -> tuple[str, bytes]:
        """The URL and body; `extra` is what this reply has said and been answered so far (its
        tool searches and their outputs), at the end of the input."""
        items = self._histories[has_deferred(request)].encode(request.messages) + [dump(item) for item in extra]
        return self._endpoint, json_object(request_fields(request), "input", items)

    async def stream(self, request: Request, on_text: OnText) -> Reply:
        """One reply, asking again after each tool search the model makes, with its answer."""
        answered: list[dict[str, Any]] = []  # the reply's tool searches and their outputs so far
        text = ""
        while True:
            said = [{"role": "assistant", "content": text}] if text else []
            url, body = self.encode(request, answered + said)
            reply = await retry_until_output(partial(self._attempt, url, body), on_text)
            text += reply.text
            searches = [item for item in reply.server_blocks if item.get("type") == "tool_search_call"]
            if searches and len(answered) // 2 + len(searches) > MAX_SEARCH_ROUNDS:
                raise ProviderError(f"{self.name}: the model searched for tools {MAX_SEARCH_ROUNDS} times in one reply "
                                    "without going on; giving up")
            for call in searches:
                answered += [call, search_output(call, request.tools)]
            if not searches or reply.tool_calls:  # a call made beside the search goes on as any other
                return Reply(text, reply.tool_calls, reply.usage, reply.stop_reason, answered)

    async def headers(self, url: str, body: bytes) -> dict[str, str]:
        return self._headers

    def credentials_hint(self) -> str:
        return f"check {openai.KEY_VARIABLE} or providers.{self.name}.key"

    async def read(self, response: httpx.Response, deliver: OnText) -> Reply:
        reading = _Reading(self.name, deliver)
        await read_events(self.name, response, lambda name, data: reading.take(data))  # the data says what it is
        return reading.reply()


class _Reading:
    """The state of one streamed response: text so far, function calls by item, usage, the end.
    Events are told apart by their `type` (the SSE name repeats it)."""

    def __init__(self, provider: str, deliver: OnText):
        self._provider = provider
        self._deliver = deliver
        self._text: list[str] = []
        self._calls = ToolCallParts()
        self._usage: dict[str, Any] = {}
        self._refused = False
        self._searches: list[dict[str, Any]] = []  # the model's tool_search_call items, for the provider to answer
        self.stop_reason = ""  # set by the event that ends the response

    def take(self, data: str) -> None:
        if not data:
            return
        event = event_object(self._provider, data)
        kind = event.get("type")
        if kind == "error":  # {"type": "error", "code", "message", "param"}
            raise stream_failure(self._provider, {"error": event})
        if kind == "response.failed":
            raise stream_failure(self._provider, {"error": (event.get("response") or {}).get("error") or {}})
        if kind in ("response.output_text.delta", "response.refusal.delta") and event.get("delta"):
            self._refused = self._refused or kind == "response.refusal.delta"
            self._text.append(event["delta"])
            self._deliver(event["delta"])
        elif kind in ("response.output_item.added", "response.output_item.done"):
            self._take_item(event.get("item") or {}, done=kind.endswith("done"))
        elif kind == "response.function_call_arguments.delta" and event.get("item_id") in self._calls:
            self._calls.add_arguments(event["item_id"], str(event.get("delta") or ""))
        elif kind in ("response.completed", "response.incomplete"):
            response = event.get("response") or {}
            self._usage = response.get("usage") or {}
            reason = (response.get("incomplete_details") or {}).get("reason") or ""
            self.stop_reason = INCOMPLETE_REASONS.get(reason, reason) or (
                "refusal" if self._refused else "tool_use" if self._calls else "end_turn")

    def _take_item(self, item: dict[str, Any], done: bool) -> None:
        if item.get("type") == "tool_search_call" and done and item.get("execution") == "client":
            # Kept as it is replayed: by its call_id, without the item id.
            self._searches.append({key: item[key] for key in ("type", "execution", "call_id", "status", "arguments")
                                   if key in item})
            return
        if item.get("type") != "function_call":
            return
        key = item.get("id") or item.get("call_id")
        if key not in self._calls:  # a server may skip `added` and send the call whole
            self._calls.start(key, str(item.get("call_id") or key or ""), str(item.get("name") or ""))
        arguments = item.get("arguments")
        if done and isinstance(arguments, str) and arguments:
            self._calls.set_arguments(key, arguments)  # the whole text wins over the pieces

    def reply(self) -> Reply:
        if not self.stop_reason:
            raise incomplete(self._provider)
        cached = (self._usage.get("input_tokens_details") or {}).get("cached_tokens") or 0
        # input_tokens counts the cached part too; iota's `input` (like Anthropic's) does not.
        usage = Usage(
            input=(self._usage.get("input_tokens") or 0) - cached,
            output=self._usage.get("output_tokens") or 0,
            cache_read=cached,
            total=self._usage.get("total_tokens") or 0,
        )
        return Reply("".join(self._text), self._calls.finish(), usage, self.stop_reason, self._searches)


def has_deferred(request: Request) -> bool:
    return any(tool.deferred for tool in request.tools)


def search_output(call: dict[str, Any], tools: list[ToolSpec]) -> dict[str, Any]:
    """The answer to a `tool_search_call`: the deferred tools that match its query, best first
    (as many as `search_tools` loads), each with its whole schema."""

    arguments = call.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            arguments = {}
    query = arguments.get("query") if isinstance(arguments, dict) else None
    found = search(query, [tool for tool in tools if tool.deferred]) if isinstance(query, str) else []
    return {"type": "tool_search_output", "execution": "client", "call_id": call.get("call_id"), "status": "completed",
            "tools": [_function(tool) for tool in found[:SEARCH_TOP_K]]}


def _function(tool: ToolSpec) -> dict[str, Any]:
    return {"type": "function", "name": tool.name, "description": tool.description, "parameters": tool.parameters,
            "strict": False, **({"defer_loading": True} if tool.deferred else {})}


def request_fields(request: Request) -> dict[str, Any]:
    """The body of a Responses request, all but the input."""
    fields: dict[str, Any] = {"model": request.model, "stream": True, "max_output_tokens": request.max_tokens}
    if request.system:
        fields["instructions"] = request.system
    if request.tools:
        fields["tools"] = [_function(tool) for tool in request.tools]
        if has_deferred(request):
            fields["tools"].append(TOOL_SEARCH)
    if request.temperature is not None:
        fields["temperature"] = request.temperature
    if request.top_p is not None:
        fields["top_p"] = request.top_p
    if request.effort:
        fields["reasoning"] = {"effort": request.effort}
    return fields


def wire_items(messages: list[Message], server_blocks: bool = False) -> list[tuple[int, dict[str, Any]]]:
    """iota's messages as Responses input items, each with the index its group starts at: the
    Chat Completions messages (`openai.wire_messages`, which also puts a notice recorded between
    calls and results after the results), each made into items — text as a role message, each
    tool call a `function_call` item after the assistant's text, each result a
    `function_call_output`. `server_blocks`: an assistant message's tool searches and their
    outputs go first in it (an assistant entry starts at its own message's index)."""
    wire = []
    for start, message in openai.wire_messages(messages):
        if server_blocks and message["role"] == "assistant":
            wire += [(start, block) for block in messages[start].server_blocks if block.get("type") in SEARCH_ITEMS]
        wire += [(start, item) for item in _items(message)]
    return wire


def _items(message: dict[str, Any]) -> list[dict[str, Any]]:
    if message["role"] == "tool":
        return [{"type": "function_call_output", "call_id": message["tool_call_id"], "output": message["content"]}]
    content = message.get("content")
    if isinstance(content, list):  # a user message with attachments
        content = [{"type": "input_image", "image_url": part["image_url"]["url"]} if part["type"] == "image_url"
                   else {"type": "input_text", "text": part["text"]} for part in content]
    text = [{"role": message["role"], "content": content}] if content else []
    return text + [{"type": "function_call", "call_id": call["id"], "name": call["function"]["name"],
                    "arguments": call["function"]["arguments"]} for call in message.get("tool_calls", ())]
