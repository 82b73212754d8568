"""Model providers: one streaming interface (`base.Provider`) over two wire protocols.

    provider = make_provider("work", "anthropic", key, url)
    reply = await provider.stream(Request(model, system, messages, tools), on_text=print)

`anthropic` goes through the official SDK, `openai` through httpx to any OpenAI-compatible
Chat Completions endpoint. Both stream text to `on_text`, return the tool calls, usage and stop
reason in the `Reply`, and fail with `iota.errors.ProviderError`s (see `_streaming` for which
failures are retried and when).

Tool-call arguments come back as a dict. Arguments that are not a JSON object are not an
error here: the dict is `{RAW_ARGUMENTS_KEY: "<the text as sent>"}`, so the tool runner can
answer the model that its arguments did not parse.

A provider keeps a pool of connections between requests; `await provider.aclose()` closes it
(both providers have it; it is not part of the `Provider` protocol).

Importing this package does not import the `anthropic` SDK (it takes about two seconds):
the Anthropic provider imports it in a worker thread on its first request, and an app can
start that import early with `await trio.to_thread.run_sync(preload_anthropic)`.
"""

from __future__ import annotations

from iota.errors import ConfigError
from iota.providers.base import CONNECT_SECONDS, RAW_ARGUMENTS_KEY, STALL_SECONDS, Provider, Reply, Request, ToolSpec

PROVIDER_TYPES = ("anthropic", "openai")


def make_provider(
    name: str,
    type: str,
    api_key: str,
    base_url: str | None,
    *,
    stall_seconds: float = STALL_SECONDS,
    connect_seconds: float = CONNECT_SECONDS,
) -> Provider:
    """The provider called `name` in the config, of the given type, talking to `base_url`
    (None: the vendor's own endpoint). Each provider's module is imported here, on first use:
    importing this package (which every `iota.providers.base` import does) costs nothing."""
    if type == "anthropic":
        from iota.providers.anthropic import AnthropicProvider

        return AnthropicProvider(name, api_key, base_url, stall_seconds=stall_seconds, connect_seconds=connect_seconds)
    if type == "openai":
        from iota.providers.openai import OpenAIProvider

        return OpenAIProvider(name, api_key, base_url, stall_seconds=stall_seconds, connect_seconds=connect_seconds)
    raise ConfigError(f"providers.{name}.type: unknown provider type {type!r} (want {' or '.join(PROVIDER_TYPES)})")


def preload_anthropic() -> None:
    """Import the Anthropic SDK; blocking, so meant for `trio.to_thread.run_sync`."""
    import anthropic  # noqa: F401


__all__ = ["RAW_ARGUMENTS_KEY", "Provider", "Reply", "Request", "ToolSpec", "make_provider", "preload_anthropic"]
