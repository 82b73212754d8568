"""Model providers: one streaming interface (`base.Provider`) over the wire protocols iota speaks.

    provider = make_provider("work", "anthropic", key, url)
    reply = await provider.stream(Request(model, system, messages, tools), on_text=print)

Every provider speaks its protocol over httpx, with the same sending, retry and stall code
(`_http`, `_streaming`): `anthropic` is Anthropic's Messages API, `openai` any OpenAI-compatible
Chat Completions endpoint, `openresponses` OpenAI's Responses API, `gemini` Google's Gemini API,
and `bedrock` and `vertex` the Messages API on Amazon Bedrock and
Google Vertex AI, signed with the cloud's own credentials (`cloud`; botocore and google-auth,
the `bedrock` and `vertex` extras, load on their first request). All stream text to `on_text`,
return the tool calls, usage and stop reason in the `Reply`, and fail with
`iota.errors.ProviderError`s (see `_streaming` for which failures are retried and when).

Tool-call arguments come back as a dict. Arguments that are not a JSON object are not an
error here: the dict is `{RAW_ARGUMENTS_KEY: "<the text as sent>"}`, so the tool runner can
answer the model that its arguments did not parse.

A provider keeps a pool of connections between requests, and the conversation it last sent in
wire form (`_wire`), so a request costs about the same at the ten-thousandth message as at the
tenth. `await provider.aclose()` closes the pool (not part of the `Provider` protocol).
"""

from __future__ import annotations

import importlib
import sys
from typing import Callable

from iota.errors import ConfigError
from iota.providers.base import CONNECT_SECONDS, RAW_ARGUMENTS_KEY, STALL_SECONDS, Provider, Reply, Request, Timeouts, ToolSpec

# httpx's package imports its own command-line tool (`httpx._main`), which imports click and
# pygments when they are installed (the mcp package installs click): about 10 ms of every start,
# a third of httpx's import, for a tool iota never runs. A None in sys.modules makes that one
# import fail, and httpx falls back to a stub `main` of its own (its `except ImportError`). Every
# httpx import in iota is under this package, so this runs first; the `httpx` command is
# untouched (another process).
if "httpx" not in sys.modules:
    sys.modules.setdefault("httpx._main", None)  # type: ignore[assignment]

PROVIDER_TYPES = ("anthropic", "openai", "openresponses", "gemini", "bedrock", "vertex")


def make_provider(
    name: str,
    type: str,
    api_key: str,
    base_url: str | None,
    *,
    region: str | None = None,
    project_id: str | None = None,
    stall_seconds: float = STALL_SECONDS,
    connect_seconds: float = CONNECT_SECONDS,
) -> Provider:
    """The provider called `name` in the config, of the given type, talking to `base_url`
    (None: the vendor's own endpoint). `api_key` is for anthropic, openai, openresponses and
    gemini; `region` for
    bedrock (else the AWS environment's) and vertex, `project_id` for vertex (else the Google
    credentials'). Each provider's module is imported here, on first use: importing this
    package (which every `iota.providers.base` import does) costs nothing."""
    timeouts = Timeouts(stall_seconds, connect_seconds)
    if type == "anthropic":
        from iota.providers.anthropic import AnthropicProvider

        return AnthropicProvider(name, api_key, base_url, timeouts)
    if type == "openai":
        from iota.providers.openai import OpenAIProvider

        return OpenAIProvider(name, api_key, base_url, timeouts)
    if type == "openresponses":
        from iota.providers.openresponses import OpenResponsesProvider

        return OpenResponsesProvider(name, api_key, base_url, timeouts)
    if type == "gemini":
        from iota.providers.gemini import GeminiProvider

        return GeminiProvider(name, api_key, base_url, timeouts)
    if type == "bedrock":
        from iota.providers.cloud import BedrockProvider

        return BedrockProvider(name, base_url, region=region, timeouts=timeouts)
    if type == "vertex":
        from iota.providers.cloud import VertexProvider

        return VertexProvider(name, base_url, region=region, project_id=project_id, timeouts=timeouts)
    raise ConfigError(f"providers.{name}.type: unknown provider type {type!r} (want {', '.join(PROVIDER_TYPES)})")


def preloader(type: str) -> Callable[[], None] | None:
    """What imports the libraries a provider of this type loads on its first request —
    botocore for bedrock, google-auth for vertex; None for the others — so an app can run it
    behind its first screen (it blocks: meant for `trio.to_thread.run_sync`). A library that is
    missing is left for the first request to report."""
    module = {"bedrock": "botocore.session", "vertex": "google.auth.transport.requests"}.get(type)
    if module is None:
        return None

    def preload() -> None:
        try:
            importlib.import_module(module)
        except ImportError:
            pass

    return preload


__all__ = ["RAW_ARGUMENTS_KEY", "Provider", "Reply", "Request", "ToolSpec", "make_provider", "preloader"]
