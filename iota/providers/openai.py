"""Any OpenAI-compatible Chat Completions endpoint (OpenAI, vLLM, llama.cpp, Ollama), over httpx.

One POST to `{url}/chat/completions` with `stream: true` and `stream_options.include_usage`, read
as `data:` lines until `data: [DONE]`. Tool calls arrive in fragments keyed by `index`: the first
carries the id and the name, the rest pieces of the argument text; Ollama sends a whole call in
one chunk, and its older versions no `index` at all. The usage comes in a last chunk whose
`choices` is empty.

There is no SDK here, so the retries before a response arrives copy the Anthropic SDK's policy
(408/409/429/5xx and connection failures, twice, honouring `x-should-retry`, `retry-after-ms`
and `retry-after`), a read timeout excepted: that is a stall, never retried. The rules for a
stream that breaks are shared with the Anthropic provider (see `_streaming`).

`finish_reason` is translated into the Anthropic words the rest of iota uses for `stop_reason`:
stop → end_turn, tool_calls → tool_use, length → max_tokens, content_filter → refusal.
"""

from __future__ import annotations

import itertools
import json
import random
from functools import partial
from typing import Any

import httpx
import trio

from iota.errors import ProviderError, ResponseStalled
from iota.messages import ASSISTANT, TOOL, USER, Message, Usage
from iota.providers._streaming import (
    ToolCallParts,
    body_failure,
    http_failure,
    incomplete,
    one_line,
    retry_until_output,
    stream_failure,
    unreachable,
)
from iota.providers.base import CONNECT_SECONDS, STALL_SECONDS, OnText, Reply, Request

DEFAULT_URL = "https://api.openai.com/v1"
KEY_VARIABLE = "OPENAI_API_KEY"

# Retries of a request that got no usable response, as in the Anthropic SDK: twice, waiting
# what the server asks (up to a minute) or else 0.5 s, 1 s, … up to 8 s, less up to a quarter.
HTTP_RETRIES = 2
MAX_RETRY_AFTER = 60.0
FIRST_BACKOFF = 0.5
MAX_BACKOFF = 8.0

STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens", "content_filter": "refusal"}


class OpenAIProvider:
    def __init__(
        self,
        name: str,
        api_key: str,
        base_url: str | None = None,
        *,
        stall_seconds: float = STALL_SECONDS,
        connect_seconds: float = CONNECT_SECONDS,
    ):
        self.name = name
        # We ask for usage with include_usage; a server that ignores it gives zeros.
        self.reports_usage = True
        self._endpoint = (base_url or DEFAULT_URL).rstrip("/") + "/chat/completions"
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # The read timeout is the stall limit: httpx applies it to every read from the socket.
        self._timeout = httpx.Timeout(stall_seconds, connect=connect_seconds)
        self._client: httpx.AsyncClient | None = None

    async def stream(self, request: Request, on_text: OnText) -> Reply:
        return await retry_until_output(partial(self._attempt, request_body(request)), on_text)

    async def aclose(self) -> None:
        """Close the pooled connections. The provider opens a new client if it is used again."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def _attempt(self, body: dict[str, Any], deliver: OnText) -> Reply:
        if self._client is None:
            # Loading the CA bundle costs ~50 ms; a plain-HTTP endpoint (Ollama, llama.cpp, the
            # tests' fake server) never uses it.
            self._client = httpx.AsyncClient(timeout=self._timeout, verify=self._endpoint.startswith("https:"))
        for retries_taken in itertools.count():
            headers: httpx.Headers | None = None
            retry = True
            try:
                async with self._client.stream("POST", self._endpoint, json=body, headers=self._headers) as response:
                    if response.is_success:
                        return await self._read(response, deliver)
                    await response.aread()
                    failure = http_failure(self.name, response.status_code, _body(response), KEY_VARIABLE)
                    headers, retry = response.headers, _should_retry(response)
            # `_read` turns every transport error of the body into another kind, so these are
            # requests that got no response at all.
            except httpx.ReadTimeout:
                raise ResponseStalled() from None  # no byte for the stall limit: never retried
            except httpx.TransportError as err:
                failure = unreachable(self.name, self._endpoint, err, httpx)
            if not retry or retries_taken == HTTP_RETRIES:
                raise failure
            await trio.sleep(retry_delay(headers, retries_taken))

    async def _read(self, response: httpx.Response, deliver: OnText) -> Reply:
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
            raise body_failure(self.name, err, httpx) from err
        except ValueError as err:
            raise ProviderError(f"{self.name}: the stream sent something unreadable ({one_line(str(err))})") from err
        if not reading.finish_reason:
            raise incomplete(self.name)
        return reading.reply()


def _should_retry(response: httpx.Response) -> bool:
    verdict = response.headers.get("x-should-retry")
    if verdict in ("true", "false"):
        return verdict == "true"
    return response.status_code in (408, 409, 429) or response.status_code >= 500


def retry_delay(headers: httpx.Headers | None, retries_taken: int) -> float:
    """How long to wait before retry number `retries_taken + 1`."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            seconds = float(headers.get(name, "")) * scale if headers is not None else 0.0
        except ValueError:
            continue
        if 0 < seconds <= MAX_RETRY_AFTER:
            return seconds
    return min(FIRST_BACKOFF * 2**retries_taken, MAX_BACKOFF) * (1 - 0.25 * random.random())


def _body(response: httpx.Response) -> object:
    try:
        return response.json()
    except ValueError:
        return response.text


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


def request_body(request: Request) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": request.model,
        "messages": wire_messages(request.system, request.messages),
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


def wire_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    """iota's messages as Chat Completions messages: the system prompt first, tool calls on the
    assistant message, each tool result a `tool` message. System and compaction records are not
    conversation and are left out (the system prompt comes from the request). The API wants the
    results right after the call, so a notice recorded between them is sent after the results."""
    wire: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    waiting: set[str] = set()       # the last tool calls' ids not yet answered
    held: list[dict[str, Any]] = []  # what came between those calls and their results
    for message in messages:
        if message.role == USER and message.content:  # notices included: to the model they are user text
            (held if waiting else wire).append({"role": "user", "content": message.content})
        elif message.role == ASSISTANT and (message.content or message.tool_calls):
            entry: dict[str, Any] = {"role": "assistant", "content": message.content or None}
            if message.tool_calls:
                entry["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                    for c in message.tool_calls
                ]
            wire.extend(held)
            wire.append(entry)
            held, waiting = [], {c.id for c in message.tool_calls}
        elif message.role == TOOL:
            wire.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content})
            waiting.discard(message.tool_call_id)
            if not waiting:
                wire.extend(held)
                held = []
    return wire + held
