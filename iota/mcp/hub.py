"""The MCP hub: a chat's MCP servers, each kept running in a task of the hub's nursery.

    async with open_mcp(servers, cwd, toolbox, on_event) as hub:
        hub.statuses()          # for /tools: name, state, endpoint, tools
        await hub.wait_settled()  # a headless turn waits until every server is ready or failed

Servers start side by side and the hub never waits for them: the chat's first screen is up
while they connect. A server that becomes ready puts its tools in the toolbox; one that fails,
or later dies, takes them out again, and says so once through `on_event(text, warning)`. A server
that says its tool list changed (`notifications/tools/list_changed`) has it read again, and the
toolbox follows. A tool object the model still holds for a dead server answers with an error
result. Leaving the hub cancels its nursery, and each server's transport then stops its server:
a stdio server's stdin is closed, then its process group is terminated and killed (the SDK does
this shielded from the cancellation, so even a chat cut short by Ctrl+C or SIGTERM leaves no
process behind). A stdio server runs under iota's reaper (`connection`), so one that iota cannot
stop — iota killed with `kill -9`, its terminal gone mid-start — dies with iota all the same.

The SDK costs about two seconds to import. It is imported once, in a worker thread, by the first
server to start, so the event loop — and the terminal app on it — keeps running meanwhile, and a
chat without servers never imports it at all.

How a server's death is seen. A stdio server's stdout closes when its process ends, and that ends
its connection (`connection.connect`). An HTTP server keeps nothing open that would close, so
the hub pings it every PING_SECONDS: one that does not answer within PING_TIMEOUT_SECONDS has
gone, and is reported and its tools removed then — not first at the model's next call to it.
A server that needs a login it does not have fails with `not logged in: run iota mcp login
<name>` (see `auth`).
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from iota.config.entries import McpServerConfig
from iota.mcp.auth import connection_auth
from iota.mcp.connection import Trail, connect, describe, import_sdk, list_tools
from iota.mcp.servers import endpoint, expanded
from iota.mcp.tool import McpTool
from iota.tools.base import Toolbox
from iota.errors import ToolError

# A server has this long to start, answer `initialize` and list its tools.
START_SECONDS = 30.0
# How often an HTTP server is pinged, and how long its answer may take.
PING_SECONDS, PING_TIMEOUT_SECONDS = 30.0, 10.0

EventSink = Callable[[str, bool], None]  # (one-line notice, is it a warning)


@dataclass(frozen=True)
class McpServerStatus:
    """One server as /tools shows it. `state` is connecting, ready, failed or exited; `reason`
    says why it failed or exited; `tools` are the display names (`server:tool`)."""

    name: str
    endpoint: str
    state: str
    reason: str = ""
    tools: tuple[str, ...] = ()

    def summary(self) -> str:
        if self.state == "ready":
            return f"ready · {_tool_count(len(self.tools))}"
        if self.state == "connecting":
            return "connecting…"
        return f"{self.state}: {self.reason}"


class ServerGone(Exception):
    """An HTTP server that stopped answering its keep-alive ping."""


class _Server:
    """One configured server and, while it is ready, its session and tools."""

    def __init__(self, config: McpServerConfig):
        self.config = config
        self.name = config.name
        self.state = "connecting"
        self.reason = ""
        self.tools: list[McpTool] = []
        self.session: Any = None  # the SDK's ClientSession, while ready
        self.settled = trio.Event()  # ready or failed
        self.tools_changed = trio.Event()  # the server said so; the hub reads its list again
        self.pinging = False  # a keep-alive ping is waiting for its answer

    def status(self) -> McpServerStatus:
        return McpServerStatus(self.name, endpoint(self.config), self.state, self.reason,
                               tuple(tool.display_name for tool in self.tools))

    def note(self, notification: Any) -> None:
        """A notification from the server (the SDK's reader calls this: it must not wait)."""
        from mcp.types import ToolListChangedNotification

        if isinstance(notification, ToolListChangedNotification):
            self.tools_changed.set()

    async def call_tool(self, tool: str, args: dict[str, Any]) -> Any:
        if self.session is None:
            raise ToolError(f"MCP server {self.name} is not running ({self.status().summary()}); "
                            "its tools cannot be called")
        try:
            return await self.session.call_tool(tool, args)
        except Exception as error:  # whatever the SDK or the wire raised, the model reads it
            raise ToolError(f"MCP server {self.name}: {describe(error)}") from None


class McpHub:
    def __init__(self, servers: list[McpServerConfig], cwd: Path, toolbox: Toolbox, on_event: EventSink):
        self._servers = [_Server(config) for config in servers]
        self._cwd = cwd
        self._toolbox = toolbox
        self._on_event = on_event
        self._sdk_lock = trio.Lock()
        self._sdk_loaded = False

    def statuses(self) -> list[McpServerStatus]:
        return [server.status() for server in self._servers]

    async def wait_settled(self) -> None:
        """Until no server is still connecting (each start is bounded by START_SECONDS)."""
        for server in self._servers:
            await server.settled.wait()

    async def _serve(self, server: _Server) -> None:
        """Start the server, keep it while it lives, and report how it ended. Cancellation (the
        hub closing) stops it without a report."""
        with tempfile.TemporaryFile() as stderr:
            trail = Trail(server.config, stderr)
            try:
                with trio.CancelScope(deadline=trio.current_time() + START_SECONDS) as starting:
                    await self._run(server, trail, starting)
                reason = (f"no answer within {START_SECONDS:g}s" if starting.cancelled_caught
                          else "the connection closed" if server.config.url else "the process ended")
            except Exception as error:  # a server's failure is its own, never the chat's
                reason = describe(error)
                if server.pinging:  # the connection failed under the ping: the server has gone
                    reason = f"no answer to a keep-alive ping ({reason})"
            except BaseExceptionGroup as group:
                # Errors beside a cancellation come from stopping the server as the hub closes (a
                # request that can no longer connect, say): only the cancellation goes on.
                raise group.split(Exception)[1] from None
            finally:
                self._withdraw(server)
            await trio.lowlevel.checkpoint_if_cancelled()  # a closing hub reports nothing
            self._ended(server, trail.explain(reason))

    async def _run(self, server: _Server, trail: Trail, starting: trio.CancelScope) -> None:
        config = expanded(server.config, self._cwd)
        await self._load_sdk()
        auth = connection_auth(config)
        async with connect(config, self._cwd, trail, auth=auth, on_notice=server.note) as (session, ended):
            listed = await list_tools(session)
            starting.deadline = math.inf
            server.session = session
            self._offer(server, listed)
            server.state = "ready"
            server.settled.set()
            self._on_event(f"MCP server {server.name} ready: {_tool_count(len(server.tools))}", False)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._follow_tool_changes, server, session)
                if config.url:
                    nursery.start_soon(_keep_alive, server, session)
                await ended.wait()
                nursery.cancel_scope.cancel()

    def _offer(self, server: _Server, listed: list[Any]) -> None:
        """Put the server's tools, as listed, in the toolbox in place of the ones it had."""
        self._withdraw_tools(server)
        server.tools = [McpTool(server, tool) for tool in listed]
        for tool in server.tools:
            self._toolbox.add(tool)

    async def _follow_tool_changes(self, server: _Server, session: Any) -> None:
        while True:
            await server.tools_changed.wait()
            server.tools_changed = trio.Event()
            self._offer(server, await list_tools(session))
            self._on_event(f"MCP server {server.name} tools changed: {_tool_count(len(server.tools))}", False)

    def _withdraw(self, server: _Server) -> None:
        self._withdraw_tools(server)
        server.session = None

    def _withdraw_tools(self, server: _Server) -> None:
        for tool in server.tools:
            if self._toolbox.get(tool.name) is tool:
                self._toolbox.remove(tool.name)
        server.tools = []

    def _ended(self, server: _Server, reason: str) -> None:
        if server.state == "ready":
            server.state, server.reason = "exited", reason
            self._on_event(f"MCP server {server.name} exited: {reason}; its tools were removed", True)
        else:
            server.state, server.reason = "failed", reason
            server.settled.set()
            self._on_event(f"MCP server {server.name} failed to start: {reason}", True)

    async def _load_sdk(self) -> None:
        async with self._sdk_lock:
            if not self._sdk_loaded:
                await trio.to_thread.run_sync(import_sdk)
                self._sdk_loaded = True


@asynccontextmanager
async def open_mcp(servers: list[McpServerConfig], cwd: Path, toolbox: Toolbox,
                   on_event: EventSink) -> AsyncIterator[McpHub]:
    """Start `servers` in the background; stop them all when the block is left."""
    hub = McpHub(servers, cwd, toolbox, on_event)
    async with trio.open_nursery() as nursery:
        for server in hub._servers:
            nursery.start_soon(hub._serve, server, name=f"mcp server {server.name}")
        try:
            yield hub
        finally:
            nursery.cancel_scope.cancel()


async def _keep_alive(server: _Server, session: Any) -> None:
    """Ping the server until it does not answer. A ping that fails takes the connection down
    with it (the transport's error ends the session); one that goes unanswered is ServerGone."""
    while True:
        await trio.sleep(PING_SECONDS)
        server.pinging = True
        with trio.move_on_after(PING_TIMEOUT_SECONDS) as waiting:
            await session.send_ping()
        server.pinging = False
        if waiting.cancelled_caught:
            raise ServerGone(f"no answer to a keep-alive ping within {PING_TIMEOUT_SECONDS:g}s")


def _tool_count(count: int) -> str:
    return f"{count} tool{'' if count == 1 else 's'}"
