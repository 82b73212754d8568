"""MCP servers for the tests: a streamable-HTTP server built from the SDK's own server classes,
and helpers to find the processes a test's stdio servers left behind.

    with serve_http() as server:          # uvicorn on 127.0.0.1, a free port, in a thread
        server.url                        # http://127.0.0.1:<port>/mcp
        server.headers                    # the headers of every tool call it received

The server runs in a thread with its own asyncio loop, because uvicorn speaks asyncio and the
tests run under trio; the tests reach it only over loopback HTTP, as iota would.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

PNG_BYTES = 12 * 1024


@dataclass
class HttpServer:
    url: str = ""
    headers: list[dict[str, str]] = field(default_factory=list)


@contextmanager
def serve_http() -> Iterator[HttpServer]:
    served = HttpServer()
    servers: list[uvicorn.Server] = []

    def run() -> None:
        # The app is built in the server's own thread: the SDK's anyio primitives bind to the
        # event loop in charge where they are made, and a trio test may be calling this.
        config = uvicorn.Config(_echo_app(served).streamable_http_app(), host="127.0.0.1", port=0,
                                log_level="warning", timeout_graceful_shutdown=1)
        servers.append(uvicorn.Server(config))
        servers[0].run()

    thread = threading.Thread(target=run, name="mcp-http-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not (servers and servers[0].started):
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test MCP server did not start")
        time.sleep(0.01)
    port = servers[0].servers[0].sockets[0].getsockname()[1]
    served.url = f"http://127.0.0.1:{port}/mcp"
    try:
        yield served
    finally:
        servers[0].should_exit = True
        thread.join(timeout=10)


def _echo_app(served: HttpServer) -> MCPServer:
    app = MCPServer("echo", log_level="WARNING")

    @app.tool(description="Say the text back.")
    def echo(text: str, ctx: Context) -> str:
        served.headers.append(dict(ctx.headers or {}))
        return f"echo: {text}"

    @app.tool(description="Fail with the reason given.")
    def fail(reason: str) -> str:
        raise ToolError(reason)

    @app.tool(description="A picture and a caption.")
    def picture() -> list:
        return ["a 12 KB picture", Image(data=b"\x89PNG" + bytes(PNG_BYTES - 4), format="png")]

    @app.tool(description="Print numbered lines.")
    def lines(count: int) -> str:
        return "\n".join(f"line {n}" for n in range(1, count + 1))

    return app


def child_pids() -> set[int]:
    """The live (not zombie) children of this process, read from /proc."""
    children = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces; the fields after it are fixed.
        state, parent = stat.rpartition(")")[2].split()[:2]
        if int(parent) == os.getpid() and state != "Z":
            children.add(int(entry.name))
    return children


def is_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"
