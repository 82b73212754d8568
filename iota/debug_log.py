"""`/debug`: a record of every round trip to the model, for finding out what a chat sent and got.

While it is on, each request the chat's provider makes (a turn's, a flush's, a compaction's; not
the background title pass's, nor MCP traffic) leaves one JSON line in the session bundle's
`debug.jsonl` (mode 0600), and the last few are kept for `/debug` to show:

    {"time": "2026-10-05T14:02:11+02:00", "provider": "work", "model": "claude-x",
     "request": {"messages": 12, "bytes": 5123, "system_bytes": 2210, "tools": 6, "attachments": 1,
                 "max_tokens": 16384, "temperature": 0.3},
     "response": {"seconds": 2.41, "stop_reason": "tool_use", "text_bytes": 88,
                  "tool_calls": [{"name": "read_file", "arguments_bytes": 21}],
                  "usage": {"in": 5012, "out": 61}}}

Metadata only: sizes, counts, names, timings, usage — never what was said (the messages, the
system prompt, the reply, a tool's arguments), and never a key. The provider's request headers
never reach this module; an error's text, which a server may fill with what it was sent (an API
key echoed back in a 401), has every secret the chat knows replaced by `[redacted]` before it is
kept. A chat that is not saved has no bundle: its round trips are kept in memory only.
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

import trio

from iota.providers.base import OnText, Provider, Reply, Request

DEBUG_LOG_NAME = "debug.jsonl"
KEPT = 20  # round trips `/debug` shows
REDACTED = "[redacted]"


@dataclass
class DebugLog:
    """Whether the chat records its round trips, where to, and the last few."""

    on: bool = False
    recent: deque = field(default_factory=lambda: deque(maxlen=KEPT))
    # The bundle directory to write into now (None: not saved), asked at every record: /save and
    # /session change it.
    bundle: Callable[[], Path | None] = lambda: None
    secrets: tuple[str, ...] = ()
    write_error: str = ""  # why the last record could not be written, "" when it was

    def start(self, bundle: Callable[[], Path | None], secrets: tuple[str, ...]) -> None:
        self.on, self.bundle, self.secrets = True, bundle, tuple(secret for secret in secrets if secret)

    def stop(self) -> None:
        self.on = False

    @property
    def path(self) -> Path | None:
        bundle = self.bundle()
        return bundle / DEBUG_LOG_NAME if bundle is not None else None

    def wrap(self, provider: Provider) -> Provider:
        """`provider`, recording each round trip while this log is on."""
        return _Recording(provider, self)

    async def record(self, entry: dict[str, Any]) -> None:
        """Keep `entry`, and append it to the bundle's log; a write that fails is noted for
        `/debug` to show, never raised: recording must not break the chat it watches."""
        self.recent.append(entry)
        path = self.path
        if path is None:
            return
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        try:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(_append, path, line)
        except OSError as error:
            self.write_error = f"{path}: {error.strerror or error}"
        else:
            self.write_error = ""

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text


class _Recording:
    """A provider that tells the debug log of each request it passes on."""

    def __init__(self, provider: Provider, log: DebugLog):
        self._provider = provider
        self._log = log
        self.name = provider.name
        self.reports_usage = provider.reports_usage

    async def stream(self, request: Request, on_text: OnText) -> Reply:
        if not self._log.on:
            return await self._provider.stream(request, on_text)
        started = time.monotonic()
        entry = {"time": datetime.now().astimezone().replace(microsecond=0).isoformat(), "provider": self.name,
                 "model": request.model, "request": request_facts(request)}
        try:
            reply = await self._provider.stream(request, on_text)
        except BaseException as error:
            entry["error"] = self._log.redact(f"{type(error).__name__}: {error}")
            entry["seconds"] = round(time.monotonic() - started, 3)
            with trio.CancelScope(shield=True):
                await self._log.record(entry)
            raise
        entry["response"] = {"seconds": round(time.monotonic() - started, 3), **reply_facts(reply)}
        await self._log.record(entry)
        return reply

    async def aclose(self) -> None:
        await self._provider.aclose()


def request_facts(request: Request) -> dict[str, Any]:
    """What a request was made of, in sizes and counts."""
    size = sum(len(message.content.encode()) + len(message.reasoning.encode())
               + sum(len(json.dumps(call.arguments).encode()) for call in message.tool_calls)
               for message in request.messages)
    facts: dict[str, Any] = {"messages": len(request.messages), "bytes": size,
                             "system_bytes": len(request.system.encode()), "tools": len(request.tools),
                             "attachments": sum(len(message.attachments) for message in request.messages),
                             "max_tokens": request.max_tokens}
    for key in ("temperature", "top_p", "effort"):
        if getattr(request, key) is not None:
            facts[key] = getattr(request, key)
    return facts


def reply_facts(reply: Reply) -> dict[str, Any]:
    """What came back, in sizes and names."""
    return {"stop_reason": reply.stop_reason, "text_bytes": len(reply.text.encode()),
            "tool_calls": [{"name": call.name, "arguments_bytes": len(json.dumps(call.arguments).encode())}
                           for call in reply.tool_calls],
            "usage": reply.usage.to_record()}


def summary_line(entry: dict[str, Any]) -> str:
    """One round trip in a line: `14:02:11  claude-x  12 msgs, 5.1 KB → tool_use, 88 B, 1 call  in 5012 out 61  2.4s`."""
    when = entry.get("time", "")[11:19]
    asked = entry.get("request", {})
    head = f"{when}  {entry.get('model')}  {asked.get('messages')} msgs, {asked.get('bytes', 0) / 1024:.1f} KB"
    if "error" in entry:
        return f"{head} → {entry['error']}  {entry.get('seconds', 0):.1f}s"
    got = entry.get("response", {})
    usage = got.get("usage", {})
    calls = len(got.get("tool_calls", []))
    return (f"{head} → {got.get('stop_reason')}, {got.get('text_bytes')} B, {calls} call{'s' if calls != 1 else ''}"
            f"  in {usage.get('in', 0)} out {usage.get('out', 0)}  {got.get('seconds', 0):.1f}s")


def _append(path: Path, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
