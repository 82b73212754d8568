"""What every provider does over HTTP: one pooled httpx client, a request sent and retried.

A provider is an `HttpProvider` that says three things: where a request goes and what its body
is (`encode`, called once per request: the body is JSON bytes, built once and sent as they are,
retries included), which headers go with it (`headers`, called for every attempt, so a signature
or a token can be fresh), and how a successful response is read into a `Reply` (`read`).

The retries before a response arrives follow the Anthropic SDK's policy: HTTP 408, 409, 429 and
≥500 and connection failures are tried again twice, unless the server's `x-should-retry` header
says otherwise; the pause is what the server asks in `retry-after-ms`, else `retry-after`
(seconds), up to a minute, else 0.5 s, 1 s, … up to 8 s, less up to a quarter. An overloaded
server (HTTP 529) gets more patience: four retries, 2 s, 4 s, 8 s, 16 s apart — about 30 s
before giving up. Each wait is told to whoever listens (`base.retry_listener`: the chat's
status row), and is cancelled like anything else (Esc, Ctrl+C). One exception: a read timeout,
even before the headers, is a stall, never retried (see `_streaming` for the stall and for a
stream that breaks after it started).
"""

from __future__ import annotations

import itertools
import random
from functools import partial
from typing import Callable

import httpx
import trio

from iota.errors import ProviderError, ResponseStalled
from iota.providers._streaming import body_failure, http_failure, retry_until_output, unreachable
from iota.providers.base import OnText, Reply, Request, RetryWait, Timeouts, retry_listener

HTTP_RETRIES = 2
OVERLOADED = 529
OVERLOADED_RETRIES = 4
MAX_RETRY_AFTER = 60.0
FIRST_BACKOFF = 0.5
FIRST_OVERLOADED_BACKOFF = 2.0
MAX_BACKOFF = 8.0


class HttpProvider:
    """The HTTP half of a provider; subclasses add the wire protocol (see the module docstring)."""

    def __init__(self, name: str, timeouts: Timeouts):
        self.name = name
        self.reports_usage = True
        # The read timeout is the stall limit: httpx applies it to every read from the socket,
        # so it fires after that long without a single byte, headers or body.
        self._timeout = httpx.Timeout(timeouts.stall_seconds, connect=timeouts.connect_seconds)
        self._client: httpx.AsyncClient | None = None

    # --- what a subclass says ------------------------------------------------------------------

    def encode(self, request: Request) -> tuple[str, bytes]:
        """The URL the request goes to and its JSON body."""
        raise NotImplementedError

    async def headers(self, url: str, body: bytes) -> dict[str, str]:
        raise NotImplementedError

    async def read(self, response: httpx.Response, deliver: OnText) -> Reply:
        raise NotImplementedError

    def rejected(self, response: httpx.Response) -> ProviderError:
        """The error for an HTTP error status (read in full) that is not retried."""
        return http_failure(self.name, response.status_code, response_body(response), self.credentials_hint())

    def credentials_hint(self) -> str:
        """What to check when the server refuses the credentials (HTTP 401 or 403)."""
        raise NotImplementedError

    # --- what every provider does --------------------------------------------------------------

    async def stream(self, request: Request, on_text: OnText) -> Reply:
        url, body = self.encode(request)
        return await retry_until_output(partial(self._attempt, url, body), on_text)

    async def aclose(self) -> None:
        """Close the pooled connections. The provider opens a new client if it is used again."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def _attempt(self, url: str, body: bytes, deliver: OnText) -> Reply:
        """One request and its HTTP retries; `read` turns every transport error of the body into
        another kind, so a transport error here is a request that got no response at all."""
        if self._client is None:
            # Loading the CA bundle costs ~50 ms; a plain-HTTP endpoint (Ollama, llama.cpp, the
            # tests' fake server) never uses it.
            self._client = httpx.AsyncClient(timeout=self._timeout, verify=url.startswith("https:"))
        for retries_taken in itertools.count():
            retry_headers: httpx.Headers | None = None
            retry = True
            status = None
            try:
                headers = await self.headers(url, body)
                async with self._client.stream("POST", url, content=body, headers=headers) as response:
                    if response.is_success:
                        return await self.read(response, deliver)
                    await response.aread()
                    failure = self.rejected(response)
                    retry_headers, retry, status = response.headers, should_retry(response), response.status_code
            except httpx.ReadTimeout:
                raise ResponseStalled() from None  # no byte for the stall limit: never retried
            except httpx.TransportError as err:
                failure = unreachable(self.name, url, err)
            retries = OVERLOADED_RETRIES if status == OVERLOADED else HTTP_RETRIES
            if not retry or retries_taken >= retries:
                raise failure
            delay = retry_delay(retry_headers, retries_taken, overloaded=status == OVERLOADED)
            listener = retry_listener.get()
            if listener is not None:
                reason = f"HTTP {status}" if status is not None else "cannot connect"
                listener(RetryWait(delay, reason, retries_taken + 2, retries + 1))
            await trio.sleep(delay)


def should_retry(response: httpx.Response) -> bool:
    verdict = response.headers.get("x-should-retry")
    if verdict in ("true", "false"):
        return verdict == "true"
    return response.status_code in (408, 409, 429) or response.status_code >= 500


def retry_delay(headers: httpx.Headers | None, retries_taken: int, *, overloaded: bool = False) -> float:
    """How long to wait before retry number `retries_taken + 1`."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            seconds = float(headers.get(name, "")) * scale if headers is not None else 0.0
        except ValueError:
            continue
        if 0 < seconds <= MAX_RETRY_AFTER:
            return seconds
    if overloaded:
        return FIRST_OVERLOADED_BACKOFF * 2**retries_taken
    return min(FIRST_BACKOFF * 2**retries_taken, MAX_BACKOFF) * (1 - 0.25 * random.random())


def response_body(response: httpx.Response) -> object:
    """An error response's body: its JSON, or its text when it is not JSON."""
    try:
        return response.json()
    except ValueError:
        return response.text


async def read_events(provider: str, response: httpx.Response, take: Callable[[str | None, str], None]) -> None:
    """Hand each server-sent event of a streaming response to `take(name, data)`, as it arrives. A
    transport error while the body streams becomes a dropped connection or a stall (`body_failure`)."""
    events = ServerSentEvents()
    try:
        async for line in response.aiter_lines():
            event = events.feed(line)
            if event is not None:
                take(*event)
    except httpx.TransportError as err:
        raise body_failure(provider, err) from err


class ServerSentEvents:
    """Server-sent events, fed line by line: `feed` returns (event name or None, data) when a
    blank line ends an event. Comments (`:` lines), `id:` and `retry:` carry nothing for us; an
    event cut off by the end of the stream is dropped, as the format says."""

    def __init__(self) -> None:
        self._name: str | None = None
        self._data: list[str] = []

    def feed(self, line: str) -> tuple[str | None, str] | None:
        if not line:
            if self._name is None and not self._data:
                return None
            event = (self._name, "\n".join(self._data))
            self._name, self._data = None, []
            return event
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            self._name = value
        elif field == "data":
            self._data.append(value)
        return None
