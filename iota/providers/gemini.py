"""Google's Gemini API (`type: gemini`), over httpx.

One POST to `{url}/v1beta/models/{model}:streamGenerateContent?alt=sse` with the key in
`x-goog-api-key`, read as server-sent events without names: each `data:` line is a
GenerateContentResponse chunk —

    {"candidates": [{"content": {"role": "model", "parts": [{"text": "…"}, {"functionCall":
      {"name", "args", "id"?}, "thoughtSignature"?: "…"}]}, "finishReason"?: "STOP"}],
     "usageMetadata": {"promptTokenCount", "cachedContentTokenCount", "candidatesTokenCount",
                       "thoughtsTokenCount", "totalTokenCount"}}

Text comes in pieces; a function call comes whole, in one part, its arguments an object. The
chunk with a `finishReason` ends the reply (usage comes with every chunk: the last one counts);
a prompt blocked outright ends it with `promptFeedback.blockReason` and no candidates. A stream
that ends without either is incomplete, never a reply. An error inside the 200 stream is a chunk
`{"error": {"code", "message", "status"}}`. Parts marked `thought` are the model's thinking,
which is not asked for and not shown.

Thought signatures: a thinking model (Gemini 2.5, 3) signs the first function call of a reply,
and Gemini 3 refuses a conversation that replays the calls of the current turn without their
signatures. iota's messages have no place for them, so the provider keeps the signatures it
received, by call id, and puts each back on its call; a call it has none for (a resumed session,
another provider's call after `/model`) gets the placeholder Google documents for calls that
did not come from the model. Gemini gives calls no id of its own (its newer models may): a call
without one gets a random `call_…`, and its result names the call and the function.

Sending, retrying and the rules for a stream that breaks are shared with the other providers
(see `_http` and `_streaming`).
"""

from __future__ import annotations

import itertools
import json
import secrets
from typing import Any, Mapping
from urllib.parse import quote

import httpx

from iota.errors import ProviderError, ProviderRejected
from iota.messages import ASSISTANT, TOOL, USER, Message, Usage
from iota.providers._http import HttpProvider, read_events, response_body
from iota.providers._streaming import ToolCallParts, event_object, incomplete, stream_failure
from iota.providers._wire import WireHistory, json_object
from iota.providers.base import OnText, Reply, Request, Timeouts

DEFAULT_URL = "https://generativelanguage.googleapis.com"
KEY_VARIABLE = "GOOGLE_API_KEY"
API_VERSION = "v1beta"
# Google's documented stand-in for a function call's thought signature that was not kept.
PLACEHOLDER_SIGNATURE = "skip_thought_signature_validator"
# How many signatures a provider keeps: only the current turn's are checked, and a bot's
# conversation may run to thousands of calls. Older calls fall back to the placeholder.
KEPT_SIGNATURES = 1024

# finishReason in the words the rest of iota uses for `stop_reason` (the others, lower-cased).
STOP_REASONS = {"STOP": "end_turn", "MAX_TOKENS": "max_tokens", "SAFETY": "refusal", "RECITATION": "refusal",
                "BLOCKLIST": "refusal", "PROHIBITED_CONTENT": "refusal", "SPII": "refusal", "IMAGE_SAFETY": "refusal"}


class GeminiProvider(HttpProvider):
    def __init__(self, name: str, api_key: str, base_url: str | None = None, timeouts: Timeouts = Timeouts()):
        super().__init__(name, timeouts)
        self._base_url = (base_url or DEFAULT_URL).rstrip("/")
        self._headers = {"content-type": "application/json", "accept": "text/event-stream"} | (
            {"x-goog-api-key": api_key} if api_key else {})
        self._signatures: dict[str, str] = {}
        self._history = WireHistory(lambda messages: wire_contents(messages, self._signatures))

    def encode(self, request: Request) -> tuple[str, bytes]:
        model = request.model if request.model.startswith(("models/", "tunedModels/")) else f"models/{request.model}"
        url = f"{self._base_url}/{API_VERSION}/{quote(model, safe='/')}:streamGenerateContent?alt=sse"
        return url, json_object(request_fields(request), "contents", self._history.encode(request.messages))

    async def headers(self, url: str, body: bytes) -> dict[str, str]:
        return self._headers

    def credentials_hint(self) -> str:
        return f"check {KEY_VARIABLE} or providers.{self.name}.key"

    def rejected(self, response: httpx.Response) -> ProviderError:
        # Gemini refuses a bad key with a 400 (INVALID_ARGUMENT, reason API_KEY_INVALID), not a 401.
        failure = super().rejected(response)
        if "API_KEY_INVALID" in _error_reasons(response_body(response)):
            return ProviderRejected(f"{failure} ({self.credentials_hint()})", response.status_code)
        return failure

    async def read(self, response: httpx.Response, deliver: OnText) -> Reply:
        reading = _Reading(self.name, deliver)
        await read_events(self.name, response, lambda name, data: reading.take(data))  # the data says what it is
        reply = reading.reply()
        self._keep_signatures(reading.signatures)
        return reply

    def _keep_signatures(self, signatures: dict[str, str]) -> None:
        self._signatures.update(signatures)
        for call_id in list(itertools.islice(self._signatures, max(0, len(self._signatures) - KEPT_SIGNATURES))):
            del self._signatures[call_id]


def _error_reasons(body: object) -> list[str]:
    """The `reason`s of a Google error's details (`{"error": {…, "details": [{"reason": …}]}}`)."""
    error = body.get("error") if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    return [str(d.get("reason")) for d in details if isinstance(d, dict)] if isinstance(details, list) else []


class _Reading:
    """The state of one streamed reply: text so far, function calls, their signatures, usage, the end."""

    def __init__(self, provider: str, deliver: OnText):
        self._provider = provider
        self._deliver = deliver
        self._text: list[str] = []
        self._calls = ToolCallParts()
        self._usage: dict[str, Any] = {}
        self.signatures: dict[str, str] = {}
        self._finish = ""

    def take(self, data: str) -> None:
        if not data:
            return
        chunk = event_object(self._provider, data)
        if chunk.get("error"):
            raise stream_failure(self._provider, chunk)
        if isinstance(chunk.get("usageMetadata"), dict):
            self._usage = chunk["usageMetadata"]
        blocked = (chunk.get("promptFeedback") or {}).get("blockReason")
        if blocked:
            self._finish = "SAFETY"
        for candidate in (chunk.get("candidates") or [])[:1]:
            for part in (candidate.get("content") or {}).get("parts") or []:
                self._take_part(part)
            self._finish = candidate.get("finishReason") or self._finish

    def _take_part(self, part: dict[str, Any]) -> None:
        if part.get("thought"):
            return
        if part.get("text"):
            self._text.append(part["text"])
            self._deliver(part["text"])
        call = part.get("functionCall")
        if isinstance(call, dict):
            # Ids must stay unique across the conversation, a resumed one too: a random one.
            call_id = str(call.get("id") or f"call_{secrets.token_hex(8)}")
            self._calls.start(call_id, call_id, str(call.get("name") or ""))
            arguments = call.get("args")
            if arguments is not None:
                self._calls.add_arguments(call_id, arguments if isinstance(arguments, str) else json.dumps(arguments))
            if part.get("thoughtSignature"):
                self.signatures[call_id] = str(part["thoughtSignature"])

    def reply(self) -> Reply:
        if not self._finish:
            raise incomplete(self._provider)
        cached = self._usage.get("cachedContentTokenCount") or 0
        # promptTokenCount counts the cached part too; iota's `input` (like Anthropic's) does not.
        # The thinking is output the model was paid for, so it counts as output.
        usage = Usage(
            input=(self._usage.get("promptTokenCount") or 0) - cached,
            output=(self._usage.get("candidatesTokenCount") or 0) + (self._usage.get("thoughtsTokenCount") or 0),
            cache_read=cached,
            total=self._usage.get("totalTokenCount") or 0,
        )
        calls = self._calls.finish()
        stop_reason = "tool_use" if calls and self._finish == "STOP" else STOP_REASONS.get(self._finish, self._finish.lower())
        return Reply("".join(self._text), calls, usage, stop_reason)


def request_fields(request: Request) -> dict[str, Any]:
    """The body of a generateContent request, all but the contents."""
    config: dict[str, Any] = {"maxOutputTokens": request.max_tokens}
    if request.temperature is not None:
        config["temperature"] = request.temperature
    if request.top_p is not None:
        config["topP"] = request.top_p
    if request.effort:
        config["thinkingConfig"] = {"thinkingLevel": request.effort.upper()}
    fields: dict[str, Any] = {"generationConfig": config}
    if request.system:
        fields["systemInstruction"] = {"parts": [{"text": request.system}]}
    if request.tools:
        # parametersJsonSchema takes JSON Schema as it is; `parameters` wants Google's OpenAPI
        # subset and refuses what MCP servers' schemas often carry (additionalProperties, $schema).
        fields["tools"] = [{"functionDeclarations": [
            {"name": tool.name, "description": tool.description, "parametersJsonSchema": tool.parameters}
            for tool in request.tools]}]
    return fields


def wire_contents(messages: list[Message], signatures: Mapping[str, str] = {}) -> list[tuple[int, dict[str, Any]]]:
    """iota's messages as Gemini contents, each with the index of the message it starts at: tool
    calls become `functionCall` parts of the model's content (the first with its thought
    signature), results `functionResponse` parts of a user content, and neighbours of one role
    merge into one content (function responses first: they must answer the calls right before
    them). A user message's attachments are parts before its text: `inlineData` for an image.
    System and compaction records are not conversation."""
    wire: list[tuple[int, dict[str, Any]]] = []
    for index, message in enumerate(messages):
        role, parts = _parts(message, signatures)
        if not parts:
            continue
        if wire and wire[-1][1]["role"] == role:
            wire[-1][1]["parts"].extend(parts)
        else:
            wire.append((index, {"role": role, "parts": parts}))
    for _, content in wire:
        content["parts"].sort(key=lambda part: "functionResponse" not in part)
    return wire


def _parts(message: Message, signatures: Mapping[str, str]) -> tuple[str, list[dict[str, Any]]]:
    # Empty text parts are left out: the API rejects a part without data.
    text = [{"text": message.content}] if message.content else []
    if message.role == USER:  # notices included: to the model a host notice is user text
        if not message.attachments:
            return "user", text
        from iota.providers._attachments import Image, parts as attachment_parts  # a message with attachments only

        return "user", [{"inlineData": {"mimeType": part.mime, "data": part.base64}} if isinstance(part, Image)
                        else {"text": part.text} for part in attachment_parts(message)]
    if message.role == ASSISTANT:
        calls = []
        for n, call in enumerate(message.tool_calls):
            part: dict[str, Any] = {"functionCall": {"id": call.id, "name": call.name, "args": call.arguments}}
            signature = signatures.get(call.id) or (PLACEHOLDER_SIGNATURE if n == 0 else None)
            if signature:
                part["thoughtSignature"] = signature
            calls.append(part)
        return "model", text + calls
    if message.role == TOOL:
        result = {"error" if message.is_error else "output": message.content}
        return "user", [{"functionResponse": {"id": message.tool_call_id, "name": message.tool_call_name,
                                              "response": result}}]
    return "", []
