"""The conversation's vocabulary: messages, tool calls and token usage.

A `Message` is both what the providers are sent and one record of a session's
`messages.jsonl`. `to_record` writes the record's keys in the order the Rust iota uses
(role, content, reasoning, tool_calls, tool_call_id, tool_call_name, is_error, interrupted,
notice, compacted_through, usage, then the later keys) and leaves out every empty, false or
zero value, so the log stays small and diffable.

The later keys are `system_cleared`, `flush_skipped`, `turn` (the id of the turn a record
was written in), the deferred tools' `server_blocks` and `mounted_tools` (iota.mcp.defer),
`hidden`: a message iota wrote for the model that the person did not type and is not shown — a
schedule's trigger, the auto-continue nudge, the open tasks sent with a turn, the journal
entries attached to a message. The model is sent it like any other; the transcript, a resume's
echo and search leave it out. Then `outcome`: how a turn ended (on its `turn_end`), and
`rewound_to` (on a `rewind`), and `attachments`: the files a user message carries (`/file`), as
the Rust iota writes them, `[{filename, mime, data_ref: "sha256:<hex>"}]`
(iota.attachments). Three roles are the log's own bookkeeping, never sent to a model (see
iota.sessions.log): `partial` (streamed reply text, flushed as it arrives), `tool_started` (a
tool call is about to run) and `turn_end` (the turn is over; its `outcome` is `failed`,
`cancelled` (the person stopped it) or `interrupted` (iota stopped: a signal, a quit, a crash),
and absent when it finished). A `rewind` record undoes the records from byte `rewound_to` of the
log up to itself: the conversation goes on from just before them (iota.sessions.log). The writer
stamps `turn_end`, `compaction` and `rewind` records with `at`, the time it wrote them
(iota.sessions.bundle); a `Message` does not carry it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from iota.attachments import Attachment

SYSTEM, USER, ASSISTANT, TOOL, COMPACTION = "system", "user", "assistant", "tool", "compaction"
PARTIAL, TOOL_STARTED, TURN_END = "partial", "tool_started", "turn_end"
REWIND = "rewind"
ROLES = (SYSTEM, USER, ASSISTANT, TOOL, COMPACTION, PARTIAL, TOOL_STARTED, TURN_END, REWIND)
# How a turn ended, as its `turn_end` record says (a finished turn says nothing).
FINISHED, FAILED, CANCELLED, INTERRUPTED = "finished", "failed", "cancelled", "interrupted"
# What the log says for a tool call the person cancelled, and the notice a failed turn leaves
# for the next request (iota.agent writes them; the journal recognises them when it reads a turn).
CANCELLED_RESULT = "[command cancelled]"
FAILED_NOTICE = "The previous turn ended early with an error: {error}. Everything it did before the error is above."


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]

    def to_record(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments or {}}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> ToolCall:
        arguments = record.get("arguments") or {}
        if not isinstance(arguments, dict):
            arguments = {}
        return cls(str(record.get("id", "")), str(record.get("name", "")), arguments)


@dataclass(frozen=True)
class Usage:
    """Token counts of one model response. `total` is the provider's own total when it gave one."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total: int = 0

    @property
    def context(self) -> int:
        """How much of the window the conversation now fills."""
        return self.total or (self.input + self.output + self.cache_read + self.cache_write)

    def to_record(self) -> dict[str, int]:
        record = {"in": self.input, "out": self.output}
        for key, value in (("cache_read", self.cache_read), ("cache_write", self.cache_write), ("total", self.total)):
            if value:
                record[key] = value
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Usage:
        def number(key: str) -> int:
            value = record.get(key, 0)
            return value if isinstance(value, int) else 0

        return cls(number("in"), number("out"), number("cache_read"), number("cache_write"), number("total"))


@dataclass
class Message:
    role: str
    content: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str = ""
    tool_call_name: str = ""
    is_error: bool = False
    interrupted: bool = False
    notice: bool = False
    compacted_through: int | None = None
    usage: Usage | None = None
    system_cleared: bool = False
    flush_skipped: bool = False
    turn: str = ""
    # Deferred tools (iota.mcp.defer): an assistant message's blocks of Anthropic's own tool search,
    # sent back at its front; on a tool result, the schemas it loaded, mounted after it in the
    # history (as {"name", "description", "parameters"}) for a provider whose tools array stays fixed.
    server_blocks: list[dict[str, Any]] = field(default_factory=list)
    mounted_tools: list[dict[str, Any]] = field(default_factory=list)
    hidden: bool = False
    outcome: str = ""                 # turn_end: failed | cancelled | interrupted ("" finished)
    rewound_to: int | None = None     # rewind: the byte offset of the first record undone
    attachments: list[Attachment] = field(default_factory=list)
    # On a tool result: what the transcript showed the call acting on (`Tool.target`), so a
    # resumed chat draws the call exactly as the live one did. Never sent to a model.
    target: str = ""

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"role": self.role}
        if self.content:
            record["content"] = self.content
        if self.reasoning:
            record["reasoning"] = self.reasoning
        if self.tool_calls:
            record["tool_calls"] = [call.to_record() for call in self.tool_calls]
        for key in ("tool_call_id", "tool_call_name", "target", "is_error", "interrupted", "notice"):
            value = getattr(self, key)
            if value:
                record[key] = value
        if self.compacted_through is not None:
            record["compacted_through"] = self.compacted_through
        if self.usage is not None:
            record["usage"] = self.usage.to_record()
        if self.system_cleared:
            record["system_cleared"] = True
        if self.flush_skipped:
            record["flush_skipped"] = True
        if self.turn:
            record["turn"] = self.turn
        if self.server_blocks:
            record["server_blocks"] = self.server_blocks
        if self.mounted_tools:
            record["mounted_tools"] = self.mounted_tools
        if self.hidden:
            record["hidden"] = True
        if self.outcome:
            record["outcome"] = self.outcome
        if self.rewound_to is not None:
            record["rewound_to"] = self.rewound_to
        if self.attachments:
            record["attachments"] = [attachment.to_record() for attachment in self.attachments]
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Message:
        """Read a log record. Unknown keys are ignored; wrong types fall back to empty values."""

        def text(key: str) -> str:
            value = record.get(key, "")
            return value if isinstance(value, str) else ""

        def flag(key: str) -> bool:
            return record.get(key) is True

        def objects(key: str) -> list[dict[str, Any]]:
            value = record.get(key)
            return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []

        calls = record.get("tool_calls") or []
        through = record.get("compacted_through")
        rewound_to = record.get("rewound_to")
        usage = record.get("usage")
        return cls(
            role=text("role"),
            content=text("content"),
            reasoning=text("reasoning"),
            tool_calls=[ToolCall.from_record(c) for c in calls if isinstance(c, dict)],
            tool_call_id=text("tool_call_id"),
            tool_call_name=text("tool_call_name"),
            target=text("target"),
            is_error=flag("is_error"),
            interrupted=flag("interrupted"),
            notice=flag("notice"),
            compacted_through=through if isinstance(through, int) and not isinstance(through, bool) else None,
            usage=Usage.from_record(usage) if isinstance(usage, dict) else None,
            system_cleared=flag("system_cleared"),
            flush_skipped=flag("flush_skipped"),
            turn=text("turn"),
            server_blocks=objects("server_blocks"),
            mounted_tools=objects("mounted_tools"),
            hidden=flag("hidden"),
            outcome=text("outcome"),
            rewound_to=rewound_to if type(rewound_to) is int else None,
            attachments=[a for a in map(Attachment.from_record, objects("attachments")) if a is not None],
        )
