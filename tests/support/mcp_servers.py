"""MCP servers for the tests: streamable-HTTP servers built from the SDK's own server classes
(one open, one behind the SDK's own OAuth authorization server), a test "browser" that goes
through a login the way a person's would, and helpers to find the processes a test's stdio
servers left behind.

    with serve_http() as server:          # uvicorn on 127.0.0.1, a free port, in a thread
        server.url                        # http://127.0.0.1:<port>/mcp
        server.headers                    # the headers of every tool call it received

    with serve_http(oauth=True) as server:
        server.oauth                      # the authorization server: clients, tokens, requests

    with serve_http(growing=True) as server:
        # one more tool, `grow(name)`, which adds a tool called `name` and sends the client
        # notifications/tools/list_changed

    FS_SERVER                             # a config entry of a stdio server whose tool
                                          # `append_file(path, text)` writes any file

The servers run in a thread with their own asyncio loop, because uvicorn speaks asyncio and the
tests run under trio; the tests reach them only over loopback HTTP, as iota would.
"""

from __future__ import annotations

import os
import secrets
import sys
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import uvicorn
from mcp.server.auth.provider import (AccessToken, AuthorizationCode, AuthorizationParams, AuthorizeError,
                                      RefreshToken, construct_redirect_uri)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

PNG_BYTES = 12 * 1024
# The person's filesystem server, as a `mcp_servers:` entry in YAML flow style (mcp_fs_server.py).
FS_SERVER = f"{{command: '{sys.executable}', args: ['{Path(__file__).with_name('mcp_fs_server.py')}']}}"


@dataclass
class OAuthServer:
    """An authorization server that says yes to everyone: `/authorize` sends the browser straight
    back with a code. It keeps what the tests look at: the clients registered, the tokens issued
    and what became of them, each token request's grant type, the Authorization headers the MCP
    endpoint was sent."""

    access_seconds: int = 3600
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    access: dict[str, AccessToken] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)
    grants: list[str] = field(default_factory=list)      # each token request's grant type
    authorized: list[AuthorizationParams] = field(default_factory=list)
    revoked: list[str] = field(default_factory=list)
    presented: list[str] = field(default_factory=list)   # every bearer token the MCP endpoint was sent
    refuse: bool = False                                  # /authorize says access_denied
    registration: bool = True                             # dynamic client registration is offered

    def expire_access_tokens(self) -> None:
        """Every access token issued so far stops working, as if its time had run out."""
        for token in self.access.values():
            token.expires_at = int(time.time()) - 1

    # The SDK's OAuthAuthorizationServerProvider protocol.

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info

    def add_client(self, client_id: str, secret: str | None, redirect_uri: str) -> None:
        """A client registered by hand, as an operator does for a server that registers nobody."""
        self.clients[client_id] = OAuthClientInformationFull(
            client_id=client_id, client_secret=secret, redirect_uris=[redirect_uri],
            token_endpoint_auth_method="client_secret_post" if secret else "none",
            grant_types=["authorization_code", "refresh_token"])

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        self.authorized.append(params)
        if self.refuse:
            raise AuthorizeError(error="access_denied", error_description="the person said no")
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300, client_id=client.client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code: str) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(self, client, authorization_code: AuthorizationCode) -> OAuthToken:
        del self.codes[authorization_code.code]
        self.grants.append("authorization_code")
        return self._issue(client.client_id, authorization_code.scopes)

    async def load_refresh_token(self, client, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        del self.refresh[refresh_token.token]  # rotated
        self.grants.append("refresh_token")
        return self._issue(client.client_id, scopes or refresh_token.scopes)

    async def load_access_token(self, token: str) -> AccessToken | None:
        self.presented.append(token)
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.revoked.append(token.token)
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _issue(self, client_id: str, scopes: list[str]) -> OAuthToken:
        access, refresh = f"access-{secrets.token_hex(8)}", f"refresh-{secrets.token_hex(8)}"
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + self.access_seconds)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
        return OAuthToken(access_token=access, expires_in=self.access_seconds, refresh_token=refresh,
                          scope=" ".join(scopes) or None)


@dataclass
class HttpServer:
    url: str = ""
    headers: list[dict[str, str]] = field(default_factory=list)
    oauth: OAuthServer | None = None
    app: MCPServer | None = None


@contextmanager
def serve_http(*, oauth: bool = False, growing: bool = False) -> Iterator[HttpServer]:
    served = HttpServer(oauth=OAuthServer() if oauth else None)
    servers: list[uvicorn.Server] = []
    # The socket is bound first, so the app (an OAuth one names its own URLs) knows its port.
    listener = socket.create_server(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{listener.getsockname()[1]}"
    served.url = f"{base}/mcp"

    def run() -> None:
        # The app is built in the server's own thread: the SDK's anyio primitives bind to the
        # event loop in charge where they are made, and a trio test may be calling this.
        served.app = _echo_app(served, base, growing)
        config = uvicorn.Config(served.app.streamable_http_app(), log_level="warning", timeout_graceful_shutdown=1)
        servers.append(uvicorn.Server(config))
        servers[0].run(sockets=[listener])

    thread = threading.Thread(target=run, name="mcp-http-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not (servers and servers[0].started):
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test MCP server did not start")
        time.sleep(0.01)
    try:
        yield served
    finally:
        servers[0].should_exit = True
        thread.join(timeout=10)
        listener.close()


def _echo_app(served: HttpServer, base: str, growing: bool) -> MCPServer:
    auth = {}
    if served.oauth is not None:
        auth = {"auth_server_provider": served.oauth,
                "auth": AuthSettings(issuer_url=base, resource_server_url=f"{base}/mcp", validate_token_resource=False,
                                     client_registration_options=ClientRegistrationOptions(
                                         enabled=served.oauth.registration),
                                     revocation_options=RevocationOptions(enabled=True))}
    app = MCPServer("echo", log_level="WARNING", **auth)

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

    if growing:
        @app.tool(description="Add a tool of this name (it says its name back) and tell the client the list changed.")
        async def grow(name: str, ctx: Context) -> str:
            app.add_tool(lambda: f"I am {name}", name=name, description=f"Say {name}.")
            await ctx.session.send_tool_list_changed()
            return f"added {name}"

    return app


def follow_login(url: str) -> httpx.Response:
    """What a person's browser does with the authorization URL: open it, and follow the
    authorization server's redirect back to the loopback listener of `iota mcp login`."""
    return httpx.get(url, follow_redirects=True, timeout=30)


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


def children_of(pid: int) -> set[int]:
    """The children of process `pid` (of a reaper: the stdio server it runs)."""
    try:
        return {int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}
    except OSError:
        return set()


def is_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"
