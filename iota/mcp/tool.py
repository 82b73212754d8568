"""One tool of an MCP server, as the model and the transcript see it.

The model calls it `mcp__<server>__<tool>` and is given the server's description and input
schema; the transcript shows it as `server:tool`. It asks for no approval: configuring a server
is the decision to trust it. What it returns is read like a shell command's output — text joined,
anything else summarised in one bracketed line, the whole capped like shell output — and a
result the server marks `isError`, or a server that is gone, is an error result.

The SDK's result types are read by their fields, so this module needs no import of the SDK.
"""

from __future__ import annotations

import json
import re
from typing import Any, Protocol

from iota.tools.base import Tool, ToolResult
from iota.tools.jobs import cap_text

MAX_NAME = 64  # what the providers accept for a tool name
TARGET_ARGS = 60  # how much of the arguments the transcript header shows


class McpConnection(Protocol):
    """The live server a tool calls through (the hub's side of one server)."""

    name: str

    async def call_tool(self, tool: str, args: dict[str, Any]) -> Any:
        """The server's CallToolResult; ToolError when the server is not running."""


def tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, in the characters and length the providers accept."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", f"mcp__{server}__{tool}")[:MAX_NAME]


class McpTool(Tool):
    def __init__(self, connection: McpConnection, listed: Any):
        """`listed` is the server's description of the tool (an SDK `Tool`)."""
        self.connection = connection
        self.server = connection.name
        self.remote_name: str = listed.name
        self.name = tool_name(connection.name, listed.name)
        self.display_name = f"{connection.name}:{listed.name}"
        self.description = listed.description or listed.title or ""
        self.parameters = {"type": "object", **(listed.input_schema or {})}
        # A server that says a tool only reads may have its calls run beside one another.
        self.parallel = bool(listed.annotations and listed.annotations.read_only_hint)
        self.read_only = self.parallel  # the server says it changes nothing; plan mode lets it run

    def target(self, args: dict[str, Any]) -> str:
        shown = json.dumps(args, ensure_ascii=False) if args else ""
        if len(shown) > TARGET_ARGS:
            shown = shown[: TARGET_ARGS - 1] + "…"
        return shown

    async def run(self, args: dict[str, Any]) -> ToolResult:
        result = await self.connection.call_tool(self.remote_name, args)
        return ToolResult(cap_text(result_text(result)), is_error=bool(result.is_error))


def result_text(result: Any) -> str:
    """A CallToolResult as one text: text blocks as they are, other blocks summarised, structured
    content as JSON when there is nothing else."""
    parts = [_block_text(block) for block in result.content]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=2))
    return "\n".join(parts) or "(no output)"


def _block_text(block: Any) -> str:
    kind = block.type
    if kind == "text":
        return block.text
    if kind in ("image", "audio"):
        return f"[{kind}: {block.mime_type}, {_size(_decoded_length(block.data))}]"
    if kind == "resource_link":
        return f"[resource: {block.uri}]"
    if kind == "resource":
        resource = block.resource
        if getattr(resource, "text", None) is not None:
            return resource.text
        mime = f"{resource.mime_type}, " if resource.mime_type else ""
        return f"[resource: {resource.uri}, {mime}{_size(_decoded_length(resource.blob))}]"
    return f"[{kind} content]"


def _decoded_length(data: str) -> int:
    """The size of what base64 `data` encodes, without decoding it."""
    data = data.rstrip("=")
    return len(data) * 3 // 4


def _size(length: int) -> str:
    if length < 1024:
        return f"{length} bytes"
    if length < 1024 * 1024:
        return f"{round(length / 1024)} KB"
    return f"{length / (1024 * 1024):.1f} MB"
