"""Anthropic's Messages API, through the official `anthropic` SDK.

The SDK is imported on first use, in a worker thread (`trio.to_thread`), because importing it
takes about two seconds: the interactive app starts importing it behind its first screen
(`iota.providers.preload_anthropic`) and `stream` only waits for that import to finish.

`AsyncAnthropic` runs under trio as it is, with no client option needed: its HTTP stack
(`httpx2` over `httpcore2`) picks trio's network backend through sniffio, and its retry sleeps
go through anyio, which has a trio backend. One thing in it assumes asyncio: the client it
builds closes itself in `__del__` by scheduling a task on the running asyncio loop, which under
trio silently does nothing. So the provider closes its client itself (`aclose`), and reads each
stream inside `async with`, which closes the response — and with it the connection — when the
stream ends, fails or is cancelled: the server sees the hang-up at once.

This SDK sends the key as `Authorization: Bearer`, not `x-api-key`, and its `messages.create`
no longer takes `temperature` or `top_p`; configured values go on the wire through `extra_body`.

The SDK retries 408/409/429/5xx (529 included) and connection failures twice, honouring
`retry-after-ms` then `retry-after`; that is kept, except for a read timeout before the
headers, which is a stall and (through a small SDK middleware) not retried. What the SDK does
not retry — an `event: error` inside a 200 stream, a connection dropped mid-body (a raw
`httpx2.RemoteProtocolError`, not an SDK error), a stream that ends without `message_stop`
(which the SDK reports as nothing at all) — goes through `retry_until_output` (see `_streaming`).
"""

from __future__ import annotations

import importlib
from functools import partial
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

KEY_VARIABLE = "ANTHROPIC_API_KEY"


class AnthropicProvider:
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
        self.reports_usage = True
        self._api_key = api_key
        self._base_url = base_url
        self._stall_seconds = stall_seconds
        self._connect_seconds = connect_seconds
        self._client: AsyncAnthropic | None = None

    async def stream(self, request: Request, on_text: OnText) -> Reply:
        client = await self._open_client()
        return await retry_until_output(partial(self._attempt, client, request_params(request)), on_text)

    async def aclose(self) -> None:
        """Close the pooled connections. The provider opens a new client if it is used again."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    async def _open_client(self) -> AsyncAnthropic:
        if self._client is None:
            sdk = await trio.to_thread.run_sync(importlib.import_module, "anthropic")
            import httpx2  # already loaded by the SDK

            # The read timeout is the stall limit: httpx applies it to every read from the
            # socket, so it fires after that long without a single byte, headers or body.
            timeout = httpx2.Timeout(self._stall_seconds, connect=self._connect_seconds)
            if self._client is None:  # another stream may have opened one while we waited
                self._client = sdk.AsyncAnthropic(api_key=self._api_key, base_url=self._base_url, timeout=timeout,
                                                  middleware=[_stalls_are_final])
        return self._client

    async def _attempt(self, client: AsyncAnthropic, params: dict[str, Any], deliver: OnText) -> Reply:
        import anthropic
        import httpx2

        try:
            stream = await client.messages.create(**params, stream=True)
        except anthropic.APIStatusError as err:
            raise http_failure(self.name, err.status_code, err.body, KEY_VARIABLE) from None
        except anthropic.APIConnectionError as err:  # APITimeoutError included; the cause says which
            raise unreachable(self.name, str(client.base_url).rstrip("/"), err.__cause__, httpx2) from err

        reading = _Reading(deliver)
        try:
            async with stream:
                async for event in stream:
                    reading.take(event)
        except anthropic.APIStatusError as err:  # an `event: error` inside the 200 stream
            raise stream_failure(self.name, err.body) from None
        except httpx2.TransportError as err:
            raise body_failure(self.name, err, httpx2) from err
        except ValueError as err:  # a data line that is not JSON
            raise ProviderError(f"{self.name}: the stream sent something unreadable ({one_line(str(err))})") from err
        if not reading.stopped:
            raise incomplete(self.name)
        return reading.reply()


async def _stalls_are_final(request: Any, call_next: Any) -> Any:
    """SDK middleware: a read timeout before the response headers is a stall like any other, and
    a stall is not retried. (The SDK would retry it as a timeout; an error raised here that is
    not one of its own, nor caused by one, reaches the caller as it is.)"""
    import anthropic
    import httpx2

    try:
        return await call_next(request)
    except anthropic.APITimeoutError as err:
        if isinstance(err.__cause__, httpx2.ReadTimeout):
            raise ResponseStalled() from None
        raise


class _Reading:
    """The state of one streamed reply: text so far, tool calls by block index, usage, stop."""

    def __init__(self, deliver: OnText):
        self._deliver = deliver
        self._text: list[str] = []
        self._calls = ToolCallParts()
        self._usage: dict[str, int] = {}
        self._stop_reason = ""
        self.stopped = False

    def take(self, event: Any) -> None:
        kind = event.type
        if kind == "message_start":
            self._take_usage(event.message.usage)
        elif kind == "content_block_start" and event.content_block.type == "tool_use":
            self._calls.start(event.index, event.content_block.id, event.content_block.name)
        elif kind == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                self._text.append(delta.text)
                self._deliver(delta.text)
            elif delta.type == "input_json_delta" and event.index in self._calls:
                self._calls.add_arguments(event.index, delta.partial_json)
        elif kind == "message_delta":
            self._stop_reason = event.delta.stop_reason or self._stop_reason
            self._take_usage(event.usage)
        elif kind == "message_stop":
            self.stopped = True

    def _take_usage(self, usage: Any) -> None:
        # message_start carries every figure; message_delta carries the cumulative output and,
        # on newer servers, the input figures again. A figure left out (None) keeps its value.
        for field in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
            value = getattr(usage, field, None)
            if value is not None:
                self._usage[field] = value

    def reply(self) -> Reply:
        usage = Usage(
            input=self._usage.get("input_tokens", 0),
            output=self._usage.get("output_tokens", 0),
            cache_read=self._usage.get("cache_read_input_tokens", 0),
            cache_write=self._usage.get("cache_creation_input_tokens", 0),
        )
        return Reply("".join(self._text), self._calls.finish(), usage, self._stop_reason)


def request_params(request: Request) -> dict[str, Any]:
    """The keyword arguments of `messages.create` for a request (all but `stream`)."""
    params: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": wire_messages(request.messages),
        # Cache the conversation up to its last block, so the next turn reads the whole prefix
        # from the cache instead of paying for it again.
        "cache_control": {"type": "ephemeral"},
    }
    if request.system:
        params["system"] = request.system
    if request.tools:
        params["tools"] = [
            {"name": tool.name, "description": tool.description, "input_schema": tool.parameters} for tool in request.tools
        ]
    # The SDK no longer has parameters for sampling; a configured value still goes on the wire,
    # and a model that refuses it says so in a 400.
    sampling = {key: value for key, value in (("temperature", request.temperature), ("top_p", request.top_p)) if value is not None}
    if sampling:
        params["extra_body"] = sampling
    if request.effort:
        params["output_config"] = {"effort": request.effort}
    return params


def wire_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """iota's messages as Anthropic's: tool results become `tool_result` blocks of a user message,
    tool calls `tool_use` blocks of the assistant's, and neighbours of one role merge into one
    message (the API wants the roles to alternate). System and compaction records are not
    conversation: the system prompt travels in `system`, a summary in the messages around it."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        role, blocks = _blocks(message)
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    for message in wire:
        # A user message that answers tool calls must lead with the results (the API rejects
        # text before them), which matters when a notice was recorded between call and result.
        message["content"].sort(key=lambda block: block["type"] != "tool_result")
    return wire


def _blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    # Empty text blocks are left out: the API rejects them.
    text = [{"type": "text", "text": message.content}] if message.content else []
    if message.role == USER:  # notices included: to the model a host notice is user text
        return "user", text
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

