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
"""

from __future__ import annotations

from typing import Any


def conversation_error(dialect: str | None, body: Any) -> str | None:
    """The message the real API answers a request with when its conversation is malformed (None
    when it is fine): the checks both APIs make on tool calls and their results, and on content."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return None
    # Bedrock and Vertex carry Anthropic's Messages body, and check it the same way.
    return _anthropic_error(messages) if dialect in ("anthropic", "bedrock", "vertex") else _openai_error(messages)


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []


def _anthropic_error(messages: list[dict[str, Any]]) -> str | None:
    for index, message in enumerate(messages):
        role, blocks = message.get("role"), _blocks(message)
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
