"""What the providers share: retrying a broken stream, naming failures, assembling tool calls.

A model reply can fail at three moments, and each has its own rule:

* Before a response arrives (connection refused, a retryable HTTP status such as 429 or 529):
  the HTTP layer retries, honouring `retry-after-ms` / `retry-after` (see `_http`, which copies
  the Anthropic SDK's policy for every provider).
* While the body streams, in a way a fresh request may fix (an error event inside a 200 stream,
  a dropped connection, a stream that ends without its stop event): the provider raises
  `StreamBroke`, and `retry_until_output` sends the request again, at most STREAM_RETRIES times,
  but only while nothing has reached `on_text`. Once the user has seen part of a reply, a second
  attempt would show a different reply under it, so the failure is the caller's to report.
* A stall (no byte for the stall limit) is `ResponseStalled` at once and never retried: waiting
  another five minutes on a server that stopped talking helps nobody. The stall limit is the HTTP
  client's read timeout, which counts bytes (pings included), not events, from the moment the
  request is sent: a server that never answers the headers stalls too.
"""

from __future__ import annotations

import itertools
import json
from typing import Any, Awaitable, Callable

import httpx
import trio

from iota.errors import ContextTooLong, ProviderError, ProviderRejected, ResponseStalled
from iota.messages import ToolCall
from iota.providers.base import RAW_ARGUMENTS_KEY, STREAM_RETRIES, OnText, Reply


# The pause before a broken stream is tried again: STREAM_RETRY_DELAY, then twice that.
STREAM_RETRY_DELAY = 0.5

# Markers of "the request does not fit the window", per server family: Anthropic's message (an
# invalid request; on Bedrock a ValidationException), OpenAI's and vLLM's code, llama.cpp's type,
# Gemini's message (an INVALID_ARGUMENT: "The input token count (…) exceeds the maximum number of
# tokens allowed (…).").
_CONTEXT_MARKERS = ("context_length_exceeded", "exceed_context_size_error")
_ANTHROPIC_CONTEXT_PREFIX = "prompt is too long"
_INVALID_REQUEST_TYPES = ("invalid_request_error", "ValidationException")
_GEMINI_CONTEXT_TEXT = "exceeds the maximum number of tokens"


class StreamBroke(Exception):
    """A reply broke off in a way a new request may fix. `error` is what the caller gets if it is
    not retried. Internal to the providers: it never leaves `Provider.stream`."""

    def __init__(self, error: ProviderError):
        super().__init__(str(error))
        self.error = error


async def retry_until_output(attempt: Callable[[OnText], Awaitable[Reply]], on_text: OnText) -> Reply:
    """Run `attempt(deliver)` and retry it on `StreamBroke` while `deliver` has passed nothing on."""
    delivered = False

    def deliver(text: str) -> None:
        nonlocal delivered
        if text:
            delivered = True
            on_text(text)

    for retries_taken in itertools.count():
        try:
            return await attempt(deliver)
        except StreamBroke as broke:
            if delivered or retries_taken == STREAM_RETRIES:
                raise broke.error from broke.__cause__
        await trio.sleep(STREAM_RETRY_DELAY * 2**retries_taken)


def parse_arguments(raw: str) -> dict[str, Any]:
    """A tool call's arguments as a dict: empty means none, anything but a JSON object is kept raw."""
    if not raw.strip():
        return {}
    try:
        arguments = json.loads(raw)
    except ValueError:
        return {RAW_ARGUMENTS_KEY: raw}
    return arguments if isinstance(arguments, dict) else {RAW_ARGUMENTS_KEY: raw}


class ToolCallParts:
    """Tool calls as they stream in: started with an id and a name, then argument text in pieces.

    Calls are keyed by whatever the wire uses to tell them apart (Anthropic's content block
    index, OpenAI's `tool_calls[].index`, a Responses item id) and come out in the order they
    started.
    """

    def __init__(self) -> None:
        self._calls: dict[Any, tuple[str, str, list[str]]] = {}
        self._last_key: Any = None

    def __contains__(self, key: Any) -> bool:
        return key in self._calls

    @property
    def last_key(self) -> Any:
        return self._last_key

    def start(self, key: Any, id: str, name: str) -> None:
        self._calls[key] = (id, name, [])
        self._last_key = key

    def add_arguments(self, key: Any, piece: str) -> None:
        self._calls[key][2].append(piece)

    def set_arguments(self, key: Any, text: str) -> None:
        """The call's whole argument text, in place of the pieces so far."""
        self._calls[key][2][:] = [text]

    def __bool__(self) -> bool:
        return bool(self._calls)

    def finish(self) -> list[ToolCall]:
        return [ToolCall(id, name, parse_arguments("".join(pieces))) for id, name, pieces in self._calls.values()]


def error_detail(body: object) -> tuple[str, str]:
    """The (kind, message) of an error body in either dialect.

    Anthropic: `{"type": "error", "error": {"type", "message"}}`; OpenAI and friends:
    `{"error": {"message", "type", "code"}}`; llama.cpp puts its kind in `type` and a number in
    `code`; Google (Gemini, and Vertex's own errors) a number in `code` and its kind in `status`.
    A body that is not JSON is its own message.
    """
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        code, kind = error.get("code"), error.get("type") or error.get("status")
        kind = code if isinstance(code, str) and code else kind
        return (str(kind) if kind else "error"), str(error.get("message") or "")
    if isinstance(error, str):
        return "error", error
    return "error", body.strip() if isinstance(body, str) else ""


def is_context_too_long(body: object) -> bool:
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return False
    message = str(error.get("message") or "")
    return error.get("code") in _CONTEXT_MARKERS or error.get("type") in _CONTEXT_MARKERS or (
        error.get("type") in _INVALID_REQUEST_TYPES and message.startswith(_ANTHROPIC_CONTEXT_PREFIX)
    ) or (error.get("status") == "INVALID_ARGUMENT" and _GEMINI_CONTEXT_TEXT in message)


def one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def http_failure(provider: str, status: int, body: object, credentials_hint: str) -> ProviderError:
    """The error for an HTTP error status that will not be (or no longer is) retried; a refusal of
    the credentials (401, 403) says what to check."""
    kind, message = error_detail(body)
    if status == 400 and is_context_too_long(body):
        return ContextTooLong(f"{provider}: the conversation is too long for the model ({one_line(message)})")
    text = f"{provider}: HTTP {status} {kind}" + (f": {one_line(message)}" if message else "")
    if status in (401, 403):
        text += f" ({credentials_hint})"
    return ProviderRejected(text, status)


def stream_failure(provider: str, body: object) -> ProviderError | StreamBroke:
    """The outcome of an error event inside a 200 stream: retryable unless the request cannot fit."""
    kind, message = error_detail(body)
    if is_context_too_long(body):
        return ContextTooLong(f"{provider}: the conversation is too long for the model ({one_line(message)})")
    return StreamBroke(ProviderRejected(f"{provider}: the stream failed: {kind}" + (f": {one_line(message)}" if message else "")))


def body_failure(provider: str, err: httpx.TransportError) -> ProviderError | StreamBroke:
    """The outcome of a transport error while the body streams."""
    if isinstance(err, httpx.TimeoutException):
        return ResponseStalled()
    return StreamBroke(ProviderError(f"{provider}: the connection dropped in the middle of the reply ({one_line(str(err)) or type(err).__name__})"))


def unreachable(provider: str, url: str, err: httpx.TransportError) -> ProviderError:
    """The error for a request that could not be sent, after the HTTP layer's retries."""
    reason = "connecting timed out" if isinstance(err, httpx.TimeoutException) else one_line(str(err))
    return ProviderError(f"{provider}: cannot reach {url}" + (f" ({reason})" if reason else ""))


def unreadable(provider: str, err: Exception) -> ProviderError:
    """The error for stream data that is not what the protocol says (not JSON, a damaged frame)."""
    return ProviderError(f"{provider}: the stream sent something unreadable ({one_line(str(err))})")


def event_object(provider: str, data: str) -> dict[str, Any]:
    """A server-sent event's data as the JSON object every protocol here sends; anything else is `unreadable`."""
    try:
        event = json.loads(data)
        if not isinstance(event, dict):
            raise ValueError(f"an event that is not an object: {data[:100]!r}")
    except ValueError as err:
        raise unreadable(provider, err) from err
    return event


def incomplete(provider: str) -> StreamBroke:
    return StreamBroke(ProviderError(f"{provider}: the reply ended before it was complete"))
