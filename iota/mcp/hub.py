"""The MCP hub: a chat's MCP servers, each kept running in a task of the hub's nursery.

    async with open_mcp(servers, cwd, toolbox, on_event) as hub:
        hub.statuses()          # for /tools: name, state, endpoint, tools
        await hub.wait_settled()  # a headless turn waits until every server is ready or failed

Servers start side by side and the hub never waits for them: the chat's first screen is up
while they connect. A server that becomes ready puts its tools in the toolbox; one that fails,
or later dies, takes them out again, and says so once through `on_event(text, warning)`. A tool
object the model still holds for a dead server answers with an error result. Leaving the hub
cancels its nursery, and each server's transport then stops its server: a stdio server's stdin
is closed, then its process group is terminated and killed (the SDK does this shielded from the
cancellation, so even a chat cut short by Ctrl+C or SIGTERM leaves no process behind).

The SDK costs about two seconds to import. It is imported once, in a worker thread, by the first
server to start, so the event loop — and the terminal app on it — keeps running meanwhile, and a
chat without servers never imports it at all.

How a server's death is seen. The SDK's session does not say when its connection ends; it only
answers pending calls with "connection closed". So the messages from the transport to the session
pass through a relay of ours: when the transport's stream ends (a stdio server's stdout closed,
that is, the process died) the relay ends too, and the server's task moves on to report it. An
HTTP server that goes away is noticed by the call that fails, which returns an error result; the
server's status stays as it was, since the next request may well reach it again.
"""

from __future__ import annotations

import importlib
import logging
import math
import os
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import trio

from iota import __version__
from iota.config.settings import McpServerConfig
from iota.mcp.servers import endpoint, expanded
from iota.mcp.tool import McpTool
from iota.tools.base import Toolbox, ToolError

# A server has this long to start, answer `initialize` and list its tools.
START_SECONDS = 30.0
# The HTTP client's timeouts: connecting, and waiting for a slow tool's answer.
HTTP_CONNECT_SECONDS, HTTP_READ_SECONDS = 30.0, 300.0
STDERR_TAIL_BYTES, REASON_CHARS = 4096, 200

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

    def status(self) -> McpServerStatus:
        return McpServerStatus(self.name, endpoint(self.config), self.state, self.reason,
                               tuple(tool.display_name for tool in self.tools))

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
            trail = _Trail(stderr)
            try:
                with trio.CancelScope(deadline=trio.current_time() + START_SECONDS) as starting:
                    await self._run(server, trail, starting)
                reason = (f"no answer within {START_SECONDS:g}s" if starting.cancelled_caught
                          else "the connection closed" if server.config.url else "the process ended")
            except Exception as error:  # a server's failure is its own, never the chat's
                reason = describe(error)
            except BaseExceptionGroup as group:
                # Errors beside a cancellation come from stopping the server as the hub closes (a
                # request that can no longer connect, say): only the cancellation goes on.
                raise group.split(Exception)[1] from None
            finally:
                self._withdraw(server)
            await trio.lowlevel.checkpoint_if_cancelled()  # a closing hub reports nothing
            self._ended(server, trail.explain(reason))

    async def _run(self, server: _Server, trail: _Trail, starting: trio.CancelScope) -> None:
        config = expanded(server.config, self._cwd)
        await self._load_sdk()
        async with _connect(config, self._cwd, trail) as (session, ended):
            tools = await _list_tools(session)
            starting.deadline = math.inf
            server.session = session
            server.tools = [McpTool(server, listed) for listed in tools]
            for tool in server.tools:
                self._toolbox.add(tool)
            server.state = "ready"
            server.settled.set()
            self._on_event(f"MCP server {server.name} ready: {_tool_count(len(server.tools))}", False)
            await ended.wait()

    def _withdraw(self, server: _Server) -> None:
        for tool in server.tools:
            if self._toolbox.get(tool.name) is tool:
                self._toolbox.remove(tool.name)
        server.tools = []
        server.session = None

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
                await trio.to_thread.run_sync(_import_sdk)
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


def _import_sdk() -> None:
    for module in ("mcp.client.session", "mcp.client.stdio", "mcp.client.streamable_http"):
        importlib.import_module(module)
    # The SDK logs through `logging`; with no handler anywhere Python would print its warnings
    # on stderr, over the terminal app. A handler of its own keeps them off the screen.
    logging.getLogger("mcp").addHandler(logging.NullHandler())


@asynccontextmanager
async def _connect(config: McpServerConfig, cwd: Path, trail: _Trail) -> AsyncIterator[tuple[Any, trio.Event]]:
    """An initialized session with the server, and an event set when its connection ends."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.types import Implementation

    async with _transport(config, cwd, trail) as (read, write), trio.open_nursery() as nursery:
        ended = trio.Event()
        relay_send, relay_receive = anyio.create_memory_object_stream(0)
        nursery.start_soon(_relay, read, relay_send, ended)
        async with ClientSession(relay_receive, write, client_info=Implementation(name="iota", version=__version__)) \
                as session:
            await session.initialize()
            yield session, ended
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def _transport(config: McpServerConfig, cwd: Path, trail: _Trail) -> AsyncIterator[tuple[Any, Any]]:
    if config.url:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        timeout = httpx2.Timeout(HTTP_CONNECT_SECONDS, read=HTTP_READ_SECONDS)
        hooks = {"response": [trail.note_response]}
        async with httpx2.AsyncClient(headers=config.headers, timeout=timeout, event_hooks=hooks) as http, \
                streamable_http_client(config.url, http_client=http) as streams:
            yield streams
    else:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        # The server gets the SDK's short list of inherited variables (PATH, HOME, …) and the
        # entry's `env:` over it, not all of iota's environment (which holds the API keys).
        parameters = StdioServerParameters(command=config.command, args=config.args, env=config.env or None,
                                           cwd=cwd)
        async with stdio_client(parameters, errlog=trail.stderr) as streams:
            yield streams


async def _relay(source: Any, sink: Any, ended: trio.Event) -> None:
    """Pass the transport's messages to the session; set `ended` when the transport's stream ends."""
    import anyio

    try:
        async with sink:
            async for message in source:
                await sink.send(message)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass  # the session stopped listening first: the chat is leaving
    finally:
        ended.set()


async def _list_tools(session: Any) -> list[Any]:
    from mcp.types import PaginatedRequestParams

    tools, cursor = [], None
    while True:
        page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


def _tool_count(count: int) -> str:
    return f"{count} tool{'' if count == 1 else 's'}"


def describe(error: BaseException) -> str:
    """An error from starting or calling a server as a short reason."""
    error = _first_leaf(error)
    if isinstance(error, FileNotFoundError) and error.filename:
        return f"command not found: {error.filename}"
    if isinstance(error, PermissionError) and error.filename:
        return f"cannot run {error.filename}: permission denied"
    text = str(error).strip() or type(error).__name__
    return text[:REASON_CHARS]


def _first_leaf(error: BaseException) -> BaseException:
    """The first error in a (nested) exception group that is not a cancellation."""
    while isinstance(error, BaseExceptionGroup):
        leaves = [leaf for leaf in error.exceptions if not isinstance(leaf, trio.Cancelled)]
        error = (leaves or error.exceptions)[0]
    return error


class _Trail:
    """What a server leaves behind that can say why it stopped: the last line a stdio server wrote
    on stderr (a temporary file, read only once the server has stopped, since the server's writes
    share its offset) and the last HTTP error status an HTTP server answered with (which the SDK
    reports only as "Server returned an error response")."""

    def __init__(self, stderr: IO[bytes]):
        self.stderr = stderr
        self.http_error = ""

    async def note_response(self, response: Any) -> None:
        if response.status_code >= 400:
            self.http_error = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()

    def explain(self, reason: str) -> str:
        """`reason` (what the SDK or iota saw) with the server's own last word on it."""
        if self.http_error:
            return self.http_error  # says more than the SDK's words for it ("Not Found")
        size = self.stderr.seek(0, os.SEEK_END)
        self.stderr.seek(max(0, size - STDERR_TAIL_BYTES))
        lines = [line.strip() for line in self.stderr.read().decode(errors="replace").splitlines() if line.strip()]
        last = lines[-1][:REASON_CHARS] if lines else ""
        return f"{reason} ({last})" if last and last not in reason else reason
