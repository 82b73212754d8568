"""`iota mcp login <name>` and `iota mcp logout <name>`: the browser round trip that gets an HTTP
server's OAuth tokens, and forgetting them.

Login, step by step (the protocol is the SDK's; see `auth` for the file it ends in):

    1. a listener on 127.0.0.1 — `redirect_port:`, else a free port — whose
       http://127.0.0.1:<port>/callback is the redirect URI
    2. iota connects to the server as a chat would; the server answers 401, and the SDK discovers
       its authorization server and registers iota there (unless the entry names `client_id:`)
    3. the authorization URL is printed, and handed to the browser: `$BROWSER` (a command line,
       the URL appended), else `xdg-open` (`open` on macOS). A browser that cannot be started
       is said so; the printed URL is the way then.
    4. the person logs in; the authorization server sends the browser to the listener with a
       code (or an error, which ends the login); anything else the listener is sent gets a 404.
       Five minutes is the limit.
    5. the code is exchanged for tokens (the SDK checks the state and the PKCE verifier), the
       connection is made with them, and only then is the token file written. A login that
       fails anywhere leaves the file as it was.

Logout removes the file, after asking the authorization server to revoke the refresh token (else
the access token) when it published a revocation endpoint; a failure there is not an error, the
file is gone either way.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import trio

from iota.config.entries import McpServerConfig
from iota.errors import ConfigError, IotaError
from iota.mcp.auth import (CALLBACK_PATH, TokenStore, auth_mode, client_metadata, configured_client, read_record,
                           stored_oauth, token_path)
from iota.mcp.connection import Trail, connect, describe, import_sdk, list_tools
from iota.mcp.servers import expanded

LOGIN_SECONDS = 300.0
REQUEST_HEAD_BYTES = 16 * 1024  # a browser's GET is far smaller; a client that sends more is not one
REVOKE_SECONDS = 10.0

# How the authorization URL reaches the browser: None when it was handed over, else why not.
OpenBrowser = Callable[[str], "str | None"]


class LoginFailed(IotaError):
    pass


@dataclass(frozen=True)
class LoginOutcome:
    path: Path
    expires_in: int | None
    tools: int


async def login(server: McpServerConfig, cwd: Path, say: Callable[[str], None],
                open_browser: OpenBrowser | None = None) -> LoginOutcome:
    """Run the login of the entry `server`; `say` gets the lines for the person."""
    if not server.url:
        raise ConfigError(f'MCP server "{server.name}" is a stdio server; only HTTP servers (url:) log in')
    if auth_mode(server) == "none":
        raise ConfigError(f'MCP server "{server.name}" has auth: none; remove it (or set auth: oauth) to log in')
    server = expanded(server, cwd)
    await trio.to_thread.run_sync(import_sdk)
    port = server.redirect_port or 0
    try:
        listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
    except OSError as error:
        raise LoginFailed(f"cannot listen on 127.0.0.1:{port} for the login's redirect ({error.strerror})") from None
    async with listeners[0] as listener:
        redirect_uri = f"http://127.0.0.1:{listener.socket.getsockname()[1]}{CALLBACK_PATH}"
        store = TokenStore(server, client=configured_client(server, redirect_uri),
                           record=_reusable(server, redirect_uri), autosave=False)
        callback = _Callback(listener, server.name)

        async def show(url: str) -> None:
            say(f"Open this URL to log in:\n  {url}")
            failure = (open_browser or open_in_browser)(url)
            if failure:
                say(f"(the browser could not be started: {failure})")

        oauth = stored_oauth(server, store, client_metadata(server, redirect_uri), show, callback.wait)
        with tempfile.TemporaryFile() as stderr:
            trail = Trail(server, stderr)
            try:
                async with connect(server, cwd, trail, auth=oauth) as (session, _):
                    tools = await list_tools(session)
            except Exception as error:
                raise LoginFailed(f"login to {server.name} failed: {callback.failure or describe(error)}") from None
    if not store.has_tokens():
        raise LoginFailed(f"MCP server {server.name} did not ask to log in (it answered without a token); "
                          "nothing was saved")
    store.metadata = oauth.context.oauth_metadata
    store.save()
    tokens = store.record["tokens"]
    return LoginOutcome(store.path, tokens.get("expires_in"), len(tools))


def logged_in_line(name: str, outcome: LoginOutcome) -> str:
    from iota.tools.shell import go_duration

    lifetime = f"; the token expires in {go_duration(outcome.expires_in)}" if outcome.expires_in else ""
    return f"Logged in to {name}{lifetime} (saved to {outcome.path})"


def _reusable(server: McpServerConfig, redirect_uri: str) -> dict:
    """What of the stored record a new login starts from: the client iota registered as, if it
    was registered for this redirect URI (a fixed `redirect_port:`); never the old tokens."""
    client = TokenStore(server).stored().get("client") or {}
    return {"client": client} if redirect_uri in (client.get("redirect_uris") or []) else {}


class _Callback:
    """The loopback listener: waits for the browser to come back with the code."""

    def __init__(self, listener: trio.SocketListener, name: str):
        self.listener = listener
        self.name = name
        self.failure = ""

    async def wait(self):
        from mcp.client.auth import AuthorizationCodeResult

        with trio.move_on_after(LOGIN_SECONDS):
            while True:
                stream = await self.listener.accept()
                async with stream:
                    query = await self._serve(stream)
                if query is not None:
                    return AuthorizationCodeResult(code=_one(query, "code"), state=_one(query, "state"),
                                                   iss=_one(query, "iss"))
        from iota.tools.shell import go_duration

        self.failure = f"no callback within {go_duration(LOGIN_SECONDS)}"
        raise LoginFailed(self.failure)

    async def _serve(self, stream: trio.SocketStream) -> dict | None:
        """One connection: the query of a request for the callback path, else None (a favicon
        probe, say, gets a 404). A callback with `error=` ends the login."""
        head = b""
        with trio.move_on_after(10):
            while b"\r\n\r\n" not in head and len(head) < REQUEST_HEAD_BYTES:
                chunk = await stream.receive_some(4096)
                if not chunk:
                    break
                head += chunk
        words = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
        target = urlsplit(words[1]) if len(words) == 3 and words[0] == "GET" else None
        if target is None or target.path != CALLBACK_PATH:
            await _respond(stream, "404 Not Found", "Not found.")
            return None
        query = parse_qs(target.query)
        if "error" in query:
            text = ": ".join(part for part in (_one(query, "error"), _one(query, "error_description")) if part)
            await _respond(stream, "400 Bad Request", f"Login failed: {text}")
            self.failure = f"the authorization server refused: {text}"
            raise LoginFailed(self.failure)
        await _respond(stream, "200 OK", f"Logged in to {self.name}. You can close this window.")
        return query


def _one(query: dict, key: str) -> str | None:
    values = query.get(key)
    return values[0] if values else None


async def _respond(stream: trio.SocketStream, status: str, text: str) -> None:
    from html import escape

    body = f"<!doctype html><title>iota</title><p>{escape(text)}</p>".encode()
    head = (f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode()
    try:
        await stream.send_all(head + body)
    except trio.BrokenResourceError:
        pass  # the browser went away; what it was sent does not matter to the login


def open_in_browser(url: str) -> str | None:
    """Start the person's browser on `url`: `$BROWSER` (a command line; the URL is appended),
    else the platform's opener. None once it started, else why it could not be."""
    browser = os.environ.get("BROWSER", "").strip()
    command = shlex.split(browser) if browser else ["open" if sys.platform == "darwin" else "xdg-open"]
    try:
        subprocess.Popen([*command, url], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError as error:
        return f"could not start {command[0]}: {error.strerror}"
    return None


async def logout(name: str, server: McpServerConfig | None) -> str:
    """Forget `name`'s tokens; the line that says what was done."""
    path = token_path(name)
    record = read_record(path)
    if not record:
        return f"Not logged in to {name} (no token file at {path})"
    await _revoke(record, server)
    path.unlink(missing_ok=True)
    return f"Logged out of {name} (removed {path})"


async def _revoke(record: dict, server: McpServerConfig | None) -> None:
    """Ask the authorization server to revoke the grant, when it said where; any failure is
    ignored (the file goes either way)."""
    import httpx

    endpoint = (record.get("metadata") or {}).get("revocation_endpoint")
    tokens = record.get("tokens") or {}
    kind = "refresh_token" if tokens.get("refresh_token") else "access_token"
    client = record.get("client") or {}
    client_id = client.get("client_id") or (server.client_id if server else None)
    secret = client.get("client_secret") or (server.client_secret if server else None)
    if not (endpoint and tokens.get(kind) and client_id):
        return
    form = {"token": tokens[kind], "token_type_hint": kind, "client_id": client_id}
    if secret:
        form["client_secret"] = secret
    try:
        async with httpx.AsyncClient(timeout=REVOKE_SECONDS) as http:
            await http.post(endpoint, data=form)
    except httpx.HTTPError:
        pass
