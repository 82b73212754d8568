"""What the real model APIs refuse in a conversation, with their own words: the fake model server
(tests.support.fake_model) answers such a request with HTTP 400, and tests check a view against it.

Anthropic (Messages): every `tool_use` block needs its `tool_result` in the next message, and
every `tool_result` its `tool_use` in the previous one; content may not be empty (nor may a text
block be); and here two messages of one role in a row are refused as the API once did (iota's
wire merges them, so this only makes sure it keeps doing so). OpenAI (Chat Completions): an
assistant message with `tool_calls` must be followed by a `tool` message for each call before
anything else, a `tool` message must answer such a call, a user or system message may not be
empty and an assistant message needs content or tool calls. Two user messages in a row, and
results in any order, are accepted by both.

Images (a user message's attachments): only a user message may carry one, its type must be one
the APIs take (PNG, JPEG, GIF, WebP), its data valid base64 whose bytes are an image of the type
it claims (Anthropic: `Image does not match the provided media type`), and at most 5 MB
(Anthropic's limit). `image_problem` is that check, which fake_dialects applies to the Responses
API's `input_image` and Gemini's `inlineData` too; `images_in` reads back what a recorded
request carried, in any dialect.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

IMAGE_LIMIT = 5 * 1024 * 1024
# Told apart here by their first bytes, independently of iota's own detection.
_IMAGE_SIGNATURES = {"image/png": (b"\x89PNG\r\n\x1a\n",), "image/jpeg": (b"\xff\xd8\xff",),
                     "image/gif": (b"GIF87a", b"GIF89a"), "image/webp": ()}


def conversation_error(dialect: str | None, body: Any) -> str | None:
    """The message the real API answers a request with when its conversation is malformed (None
    when it is fine): the checks both APIs make on tool calls and their results, and on content."""
    if not isinstance(body, dict):
        # Not a JSON object: a request cut short (the client killed mid-send) or not JSON at all;
        # both APIs answer 400 `invalid_request_error` without reading further.
        return "the request body is not a JSON object"
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    # Bedrock and Vertex carry Anthropic's Messages body, and check it the same way.
    return _anthropic_error(messages) if dialect in ("anthropic", "bedrock", "vertex") else _openai_error(messages)


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []


def image_problem(mime: Any, data: Any) -> str | None:
    """Why an image of type `mime` and base64 `data` would be refused; None when it is fine."""
    if mime not in _IMAGE_SIGNATURES:
        return f"unsupported image type {mime!r}: want image/jpeg, image/png, image/gif or image/webp"
    try:
        raw = base64.b64decode(data, validate=True) if isinstance(data, str) else b""
    except binascii.Error:
        return "invalid base64 data"
    if not raw:
        return "empty image data"
    if len(raw) > IMAGE_LIMIT:
        return f"image exceeds 5 MB maximum: {len(raw)} bytes > {IMAGE_LIMIT} bytes"
    webp = raw[:4] == b"RIFF" and raw[8:12] == b"WEBP"
    matches = webp if mime == "image/webp" else raw.startswith(_IMAGE_SIGNATURES[mime])
    return None if matches else f"Image does not match the provided media type {mime}"


def data_url_parts(url: Any) -> tuple[str | None, str | None]:
    """(mime, base64) of a `data:<mime>;base64,<data>` URL; (None, None) for anything else."""
    if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
        return None, None
    head, _, data = url.partition(";base64,")
    return head[len("data:"):], data


def images_in(dialect: str | None, body: Any) -> list[tuple[str, bytes]]:
    """Every image a recorded request carried, as (mime, bytes), in order, in any dialect."""
    found: list[tuple[str | None, str | None]] = []

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            if node.get("type") == "image" and isinstance(node.get("source"), dict):      # Anthropic
                found.append((node["source"].get("media_type"), node["source"].get("data")))
            elif node.get("type") == "image_url":                                          # Chat Completions
                found.append(data_url_parts((node.get("image_url") or {}).get("url")))
            elif node.get("type") == "input_image":                                        # Responses
                found.append(data_url_parts(node.get("image_url")))
            elif isinstance(node.get("inlineData"), dict):                                 # Gemini
                found.append((node["inlineData"].get("mimeType"), node["inlineData"].get("data")))
            else:
                for value in node.values():
                    walk(value)

    walk(body.get("messages") or body.get("input") or body.get("contents") if isinstance(body, dict) else None)
    return [(mime or "", base64.b64decode(data or "")) for mime, data in found]


def _anthropic_error(messages: list[dict[str, Any]]) -> str | None:
    for index, message in enumerate(messages):
        role, blocks = message.get("role"), _blocks(message)
        for position, block in enumerate(blocks):
            if block.get("type") != "image":
                continue
            where = f"messages.{index}.content.{position}"
            if role != "user":
                return f"{where}: image content blocks are only allowed in user messages"
            source = block.get("source") if isinstance(block.get("source"), dict) else {}
            if source.get("type") != "base64":
                return f"{where}.image.source: Input tag {source.get('type')!r} does not match the expected tags"
            problem = image_problem(source.get("media_type"), source.get("data"))
            if problem:
                return f"{where}.image.source.base64: {problem}"
        final_assistant = role == "assistant" and index == len(messages) - 1
        if not blocks and not final_assistant:
            return (f"messages.{index}: all messages must have non-empty content except for the optional final "
                    "assistant message")
        if any(block.get("type") == "text" and not block.get("text") for block in blocks):
            return "messages: text content blocks must be non-empty"
        if index and messages[index - 1].get("role") == role:
            return f'messages: roles must alternate between "user" and "assistant", but found multiple "{role}" roles in a row'
        previous = _blocks(messages[index - 1]) if index and messages[index - 1].get("role") == "assistant" else []
        called = {block.get("id") for block in previous if block.get("type") == "tool_use"}
        for position, block in enumerate(blocks):
            if block.get("type") == "tool_result" and block.get("tool_use_id") not in called:
                return (f"messages.{index}.content.{position}: unexpected `tool_use_id` found in `tool_result` blocks: "
                        f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding `tool_use` "
                        "block in the previous message.")
        calls = [block.get("id") for block in blocks if block.get("type") == "tool_use"]
        following = _blocks(messages[index + 1]) if index + 1 < len(messages) else []
        answered = {block.get("tool_use_id") for block in following if block.get("type") == "tool_result"}
        missing = [call for call in calls if call not in answered]
        if role == "assistant" and missing and index + 1 < len(messages):
            return (f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                    f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block in "
                    "the next message.")
    return None


def _openai_error(messages: list[dict[str, Any]]) -> str | None:
    waiting: list[str] = []   # the tool calls of the last assistant message not yet answered
    for index, message in enumerate(messages):
        role = message.get("role")
        if waiting and role != "tool":
            return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                    f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(waiting)}")
        if role == "tool":
            if message.get("tool_call_id") not in waiting:
                return ("Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                        "with 'tool_calls'.")
            waiting.remove(message.get("tool_call_id"))
            continue
        calls = message.get("tool_calls") or []
        content = message.get("content")
        if isinstance(content, list):
            problem = _openai_parts_error(index, role, content)
            if problem:
                return problem
        if role in ("user", "system") and content == "":
            return (f"Invalid 'messages[{index}].content': string too short. Expected a string with minimum length "
                    "1, but got an empty string instead.")
        if role == "assistant" and not content and not calls:
            return f"Invalid value for 'messages[{index}].content': expected a string, got null."
        waiting = [call.get("id") for call in calls if isinstance(call, dict)]
    if waiting:
        return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(waiting)}")
    return None


def _openai_parts_error(index: int, role: Any, parts: list[Any]) -> str | None:
    """A Chat Completions content array: text parts with text; `image_url` parts, in a user
    message only, whose URL is a data URL of a valid image."""
    if not parts:
        return f"Invalid 'messages[{index}].content': empty array. Expected an array with minimum length 1."
    for position, part in enumerate(parts):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str) and part["text"]:
            continue
        if kind != "image_url":
            return f"Invalid 'messages[{index}].content[{position}]': expected a text or image_url part with content."
        if role != "user":
            return (f"Image URLs are only allowed for messages with role 'user', but this message with role "
                    f"'{role}' contains an image URL.")
        mime, data = data_url_parts((part.get("image_url") or {}).get("url"))
        problem = image_problem(mime, data) if mime is not None else "Invalid image URL: not a base64 data URL."
        if problem:
            return f"Invalid 'messages[{index}].content[{position}].image_url': {problem}"
    return None
