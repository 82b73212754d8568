"""One connection to an MCP server: the transport (a stdio process, or streamable HTTP with its
headers and, when it has them, OAuth tokens), an initialized session over it, and what can be
learnt of why it ended.

    async with connect(server, cwd, trail, auth=…, on_notice=…) as (session, ended):
        await list_tools(session)
        await ended.wait()        # the transport's stream ended: the server is gone

How a server's death is seen. The SDK's session does not say when its connection ends; it only
answers pending calls with "connection closed". So the messages from the transport to the session
pass through a relay of ours: when the transport's stream ends (a stdio server's stdout closed,
that is, the process died) the relay ends too, and `ended` is set. An HTTP server has no stream
that must stay open, so the hub pings it (see `hub`).

The SDK costs about two seconds to import: everything here imports it inside the function that
needs it, and the hub loads it in a worker thread first (`import_sdk`).
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Any

import trio

from iota import __version__
from iota.config.entries import McpServerConfig
from iota.mcp.auth import auth_mode, not_logged_in
from iota.sandbox.reaper import raise_unless_runnable, reaper_argv

# The HTTP client's timeouts: connecting, and waiting for a slow tool's answer.
HTTP_CONNECT_SECONDS, HTTP_READ_SECONDS = 30.0, 300.0
STDERR_TAIL_BYTES, REASON_CHARS = 4096, 200

# What a session hands on from the server: a notification the SDK parsed (tools/list_changed…).
Notice = Callable[[Any], None]


def import_sdk() -> None:
    """Import the parts of the SDK a connection uses (it blocks: run it in a thread)."""
    for module in ("mcp.client.session", "mcp.client.stdio", "mcp.client.streamable_http", "mcp.client.auth"):
        importlib.import_module(module)
    # The SDK logs through `logging`; with no handler anywhere Python would print its warnings
    # on stderr, over the terminal app. A handler of its own keeps them off the screen.
    logging.getLogger("mcp").addHandler(logging.NullHandler())


@asynccontextmanager
async def connect(server: McpServerConfig, cwd: Path, trail: Trail, *, auth: Any = None,
                  on_notice: Notice | None = None) -> AsyncIterator[tuple[Any, trio.Event]]:
    """An initialized session with `server` (expanded), and an event set when its connection
    ends. `on_notice` gets the server's notifications; it must not wait on the session."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.types import Implementation

    async def handle(message: Any) -> None:
        if on_notice is not None and not isinstance(message, Exception):
            on_notice(message)

    async with _transport(server, cwd, trail, auth) as (read, write), trio.open_nursery() as nursery:
        ended = trio.Event()
        relay_send, relay_receive = anyio.create_memory_object_stream(0)
        nursery.start_soon(_relay, read, relay_send, ended)
        async with ClientSession(relay_receive, write, message_handler=handle,
                                 client_info=Implementation(name="iota", version=__version__)) as session:
            await session.initialize()
            yield session, ended
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def _transport(server: McpServerConfig, cwd: Path, trail: Trail, auth: Any) -> AsyncIterator[tuple[Any, Any]]:
    if server.url:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        timeout = httpx2.Timeout(HTTP_CONNECT_SECONDS, read=HTTP_READ_SECONDS)
        hooks = {"response": [trail.note_response]}
        async with httpx2.AsyncClient(headers=server.headers, timeout=timeout, event_hooks=hooks, auth=auth) as http, \
                streamable_http_client(server.url, http_client=http) as streams:
            yield streams
    else:
        from mcp.client.stdio import stdio_client

        async with stdio_client(_under_reaper(stdio_parameters(server, cwd)), errlog=trail.stderr) as streams:
            yield streams


def stdio_parameters(server: McpServerConfig, cwd: Path) -> Any:
    """How a stdio server (expanded) is started. It gets the SDK's short list of inherited
    variables (PATH, HOME, …) and the entry's `env:` over it, not all of iota's environment
    (which holds the API keys)."""
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(command=server.command, args=list(server.args), env=server.env or None, cwd=cwd)


def _under_reaper(parameters: Any) -> Any:
    """`parameters` with the server run under the reaper, so that it and whatever it starts die
    with iota however iota ends (`kill -9`, the terminal closed under it), not only when the SDK
    stops it. A command that cannot be run raises here, as the spawn itself would have, since
    under the reaper the spawn of the reaper always succeeds."""
    from mcp.client.stdio import get_default_environment

    env = get_default_environment() | (parameters.env or {})
    raise_unless_runnable(parameters.command, env.get("PATH", os.defpath), Path(parameters.cwd or "."))
    argv = reaper_argv([parameters.command, *parameters.args])
    return parameters.model_copy(update={"command": argv[0], "args": argv[1:]})


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


async def list_tools(session: Any) -> list[Any]:
    from mcp.types import PaginatedRequestParams

    tools, cursor = [], None
    while True:
        page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


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


class Trail:
    """What a server leaves behind that can say why it stopped: the last line a stdio server wrote
    on stderr (a temporary file, read only once the server has stopped, since the server's writes
    share its offset), the last HTTP error status an HTTP server answered with (which the SDK
    reports only as "Server returned an error response"), and whether it asked for a login."""

    def __init__(self, server: McpServerConfig, stderr: IO[bytes]):
        self.server = server
        self.stderr = stderr
        self.http_error = ""
        self.asked_to_log_in = False

    async def note_response(self, response: Any) -> None:
        if response.status_code >= 400:
            self.http_error = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
        if response.status_code == 401:
            self.asked_to_log_in = True

    def explain(self, reason: str) -> str:
        """`reason` (what the SDK or iota saw) with the server's own last word on it."""
        if self.asked_to_log_in and auth_mode(self.server) != "none":
            return not_logged_in(self.server.name)
        if self.http_error:
            return self.http_error  # says more than the SDK's words for it ("Not Found")
        size = self.stderr.seek(0, os.SEEK_END)
        self.stderr.seek(max(0, size - STDERR_TAIL_BYTES))
        lines = [line.strip() for line in self.stderr.read().decode(errors="replace").splitlines() if line.strip()]
        last = lines[-1][:REASON_CHARS] if lines else ""
        return f"{reason} ({last})" if last and last not in reason else reason
