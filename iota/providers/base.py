"""The one interface every model provider offers.

A provider takes a `Request` and streams one reply. Text is handed to `on_text` as it arrives
(so a cancelled stream has already delivered what it received); the complete tool calls, the
usage and the stop reason come back in the `Reply` when the stream ends. Every reply carries
usage: a provider that cannot report it says so through `reports_usage` before a bot starts.

Failures are `iota.errors.ProviderError`s. A provider retries on its own only while nothing of
the reply has reached `on_text`; after that a failure is the caller's to report.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Protocol

from iota.messages import Message, ToolCall, Usage

# How long a stream may go without a single byte before it fails as "Response stalled",
# and how long connecting may take. Tests shrink these through `make_provider` (`Timeouts`).
STALL_SECONDS = 300.0
CONNECT_SECONDS = 15.0
# How many times a provider retries a stream that broke after it started, while nothing of it
# was shown (an error event inside a 200 stream, a dropped connection, a stream without its end).
STREAM_RETRIES = 2
# Tool-call arguments that are not a JSON object come back as {RAW_ARGUMENTS_KEY: "<the text>"},
# so the tool runner can tell the model its arguments did not parse.
RAW_ARGUMENTS_KEY = "_raw"


class Timeouts(NamedTuple):
    """How long a provider waits: between two bytes of a response (the stall limit) and for a
    connection. Every provider's constructor takes one; `make_provider` builds it."""

    stall_seconds: float = STALL_SECONDS
    connect_seconds: float = CONNECT_SECONDS


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model is told about it: a name, a description and a JSON schema. `deferred`
    marks a tool the provider's own tool search is to find (iota.mcp.defer, `reference` mode)."""

    name: str
    description: str
    parameters: dict[str, Any]
    deferred: bool = False


@dataclass
class Request:
    model: str
    system: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    max_tokens: int = 16384
    temperature: float | None = None
    top_p: float | None = None
    effort: str | None = None


@dataclass
class Reply:
    text: str
    tool_calls: list[ToolCall]
    usage: Usage
    stop_reason: str
    # Blocks of a provider's own server-side tools (Anthropic's tool search), kept to be sent back.
    server_blocks: list[dict[str, Any]] = field(default_factory=list)


OnText = Callable[[str], None]


class Provider(Protocol):
    name: str  # the provider's name in the config
    reports_usage: bool

    async def stream(self, request: Request, on_text: OnText) -> Reply: ...

    async def aclose(self) -> None:
        """Close the pooled connections (a later stream opens new ones)."""


@dataclass(frozen=True)
class RetryWait:
    """A provider is about to wait before trying a request again: `retrying in 2 s (HTTP 529,
    attempt 2/5)`."""

    seconds: float
    reason: str       # `HTTP 529`, `cannot connect`
    attempt: int      # the attempt about to be made, counting the first
    attempts: int     # the most there will be

    def __str__(self) -> str:
        wait = f"{self.seconds:.0f}" if self.seconds >= 1 else f"{self.seconds:.1f}"
        return f"retrying in {wait} s ({self.reason}, attempt {self.attempt}/{self.attempts})"


# Who hears of each retry wait, in the task that sends the request (a chat shows it on its
# status row); unset, nobody. A context variable, so no provider signature has to carry it.
retry_listener: ContextVar[Callable[[RetryWait], None] | None] = ContextVar("retry_listener", default=None)
