"""OAuth for HTTP MCP servers, against a real OAuth-protected MCP server: the SDK's own
authorization server and MCP server classes on 127.0.0.1 (tests/support/mcp_servers.py), and a
test "browser" that follows the authorization URL over HTTP as a person's browser would."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import trio

from iota.config.entries import McpServerConfig
from iota.errors import ConfigError
from iota.mcp import login as mcp_login
from iota.mcp.auth import login_state, token_path
from iota.mcp.hub import open_mcp
from iota.mcp.login import LoginFailed, logged_in_line, login, logout
from iota.tools.base import Toolbox
from tests.support.mcp_servers import follow_login, serve_http

REPO = Path(__file__).parents[3]


@pytest.fixture
def server():
    with serve_http(oauth=True) as served:
        yield served


def browser(follow=follow_login):
    """A browser that opens the URL in a thread of its own, as a real one runs beside iota."""
    opened = []

    def open_browser(url: str) -> None:
        opened.append(url)
        threading.Thread(target=follow, args=(url,), daemon=True).start()
        return None

    open_browser.opened = opened
    return open_browser


async def log_in(entry: McpServerConfig, tmp_path: Path, open_browser=None) -> tuple[list[str], object]:
    lines: list[str] = []
    with trio.fail_after(30):
        outcome = await login(entry, tmp_path, lines.append, open_browser or browser())
    return lines, outcome


async def chat_with(entry: McpServerConfig, tmp_path: Path) -> tuple[Toolbox, list, list]:
    """Start `entry` as a chat would; the toolbox, the hub's statuses and its events."""
    toolbox, events = Toolbox(), []
    async with open_mcp([entry], tmp_path, toolbox, lambda text, warning: events.append(text)) as hub:
        with trio.fail_after(30):
            await hub.wait_settled()
        statuses = hub.statuses()
        calls = [await toolbox.call(f"mcp__{entry.name}__echo", {"text": "hi"})] if statuses[0].state == "ready" else []
    return calls, [status.summary() for status in statuses], events


async def test_login_registers_iota_runs_the_browser_flow_and_keeps_the_tokens_to_the_owner(server, tmp_path,
                                                                                        fake_home):
    entry = McpServerConfig(name="docs", url=server.url)
    lines, outcome = await log_in(entry, tmp_path)
    assert lines[0].startswith("Open this URL to log in:\n  http://127.0.0.1:")
    assert logged_in_line("docs", outcome) == \
        f"Logged in to docs; the token expires in 1h0m0s (saved to {fake_home}/.iota/mcp/auth/docs.json)"
    # The redirect came back to a loopback listener, with PKCE, and iota registered itself.
    [authorized] = server.oauth.authorized
    assert urlsplit(str(authorized.redirect_uri)).hostname == "127.0.0.1"
    assert urlsplit(str(authorized.redirect_uri)).path == "/callback"
    assert authorized.code_challenge
    [client] = server.oauth.clients.values()
    assert client.client_name == "iota"
    assert server.oauth.grants == ["authorization_code"]
    path = token_path("docs")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["docs.json"]  # no temporary left beside it
    record = json.loads(path.read_text())
    assert record["url"] == server.url
    assert record["tokens"]["access_token"] in server.oauth.access
    assert record["metadata"]["revocation_endpoint"].endswith("/revoke")
    assert login_state(entry) == "logged in"
    # A chat now reaches the server with the token.
    calls, statuses, _ = await chat_with(entry, tmp_path)
    assert statuses == ["ready · 4 tools"]
    assert calls[0].content == "echo: hi"
    assert server.headers[-1]["authorization"] == f"Bearer {record['tokens']['access_token']}"


async def test_an_expired_token_is_refreshed_by_the_chat_and_the_new_one_kept(server, tmp_path):
    entry = McpServerConfig(name="docs", url=server.url)
    await log_in(entry, tmp_path)
    path = token_path("docs")
    old = json.loads(path.read_text())
    # Time passes: the server no longer takes the token, and the file says it has expired.
    server.oauth.expire_access_tokens()
    path.write_text(json.dumps({**old, "expires_at": time.time() - 5}))
    calls, statuses, _ = await chat_with(entry, tmp_path)
    assert statuses == ["ready · 4 tools"]
    assert calls[0].content == "echo: hi"
    assert server.oauth.grants == ["authorization_code", "refresh_token"]
    new = json.loads(path.read_text())
    assert new["tokens"]["access_token"] != old["tokens"]["access_token"]
    assert new["tokens"]["refresh_token"] != old["tokens"]["refresh_token"]  # rotated, and the new one kept
    assert new["expires_at"] > time.time() + 3000
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_logout_revokes_the_grant_and_removes_the_file_and_the_chat_then_asks_for_a_login(server, tmp_path):
    entry = McpServerConfig(name="docs", url=server.url)
    await log_in(entry, tmp_path)
    refresh = json.loads(token_path("docs").read_text())["tokens"]["refresh_token"]
    assert await logout("docs", entry) == f"Logged out of docs (removed {token_path('docs')})"
    assert server.oauth.revoked == [refresh]
    assert not token_path("docs").exists()
    assert login_state(entry) == "not logged in"
    assert await logout("docs", entry) == f"Not logged in to docs (no token file at {token_path('docs')})"
    calls, statuses, events = await chat_with(entry, tmp_path)
    assert statuses == ["failed: not logged in: run iota mcp login docs"]
    assert events == ["MCP server docs failed to start: not logged in: run iota mcp login docs"]


async def test_each_auth_mode_without_a_login(server, tmp_path):
    # auto (the default): reached, and its 401 read as the login it wants.
    _, statuses, _ = await chat_with(McpServerConfig(name="docs", url=server.url), tmp_path)
    assert statuses == ["failed: not logged in: run iota mcp login docs"]
    # none: a 401 is a 401.
    _, statuses, _ = await chat_with(McpServerConfig(name="docs", url=server.url, auth="none"), tmp_path)
    assert statuses == ["failed: HTTP 401 Unauthorized"]
    # oauth: not contacted at all — here, a port where nothing listens is not even tried.
    nowhere = McpServerConfig(name="docs", url="http://127.0.0.1:9/mcp", auth="oauth")
    _, statuses, _ = await chat_with(nowhere, tmp_path)
    assert statuses == ["failed: not logged in: run iota mcp login docs"]
    # An open server needs no login under auto.
    with serve_http() as open_server:
        _, statuses, _ = await chat_with(McpServerConfig(name="open", url=open_server.url), tmp_path)
    assert statuses == ["ready · 4 tools"]
    assert server.oauth.clients == {}  # no chat registered a client: only a login does


async def test_auth_none_never_sends_the_stored_token(server, tmp_path):
    await log_in(McpServerConfig(name="docs", url=server.url), tmp_path)
    server.oauth.presented.clear()  # what the login's own connection sent
    _, statuses, _ = await chat_with(McpServerConfig(name="docs", url=server.url, auth="none"), tmp_path)
    assert statuses == ["failed: HTTP 401 Unauthorized"]
    assert server.oauth.presented == []


async def test_tokens_go_only_to_the_url_they_were_issued_for(server, tmp_path):
    await log_in(McpServerConfig(name="docs", url=server.url), tmp_path)
    token = json.loads(token_path("docs").read_text())["tokens"]["access_token"]
    # The entry now points at another server (an edited or a replaced config): it gets no token.
    with serve_http(oauth=True) as other:
        _, statuses, _ = await chat_with(McpServerConfig(name="docs", url=other.url), tmp_path)
        assert statuses == ["failed: not logged in: run iota mcp login docs"]
        assert token not in other.oauth.presented and other.oauth.presented == []
        assert login_state(McpServerConfig(name="docs", url=other.url)) == "not logged in"


async def test_a_refused_login_says_why_and_keeps_the_earlier_tokens(server, tmp_path):
    entry = McpServerConfig(name="docs", url=server.url)
    await log_in(entry, tmp_path)
    before = token_path("docs").read_bytes()
    server.oauth.refuse = True
    with pytest.raises(LoginFailed, match=r"^login to docs failed: the authorization server refused: "
                                          r"access_denied: the person said no$"):
        await log_in(entry, tmp_path)
    assert token_path("docs").read_bytes() == before
    calls, statuses, _ = await chat_with(entry, tmp_path)
    assert statuses == ["ready · 4 tools"]


async def test_a_callback_with_a_forged_state_is_refused(server, tmp_path):
    """Someone other than the authorization server (a page in the browser, a local process)
    sends the listener a code of their choosing: the state does not match, nothing is saved."""

    def forge(url: str) -> None:
        answer = httpx.get(url, follow_redirects=False, timeout=30)  # the server's redirect, not followed
        redirect = urlsplit(answer.headers["location"])
        query = parse_qs(redirect.query)
        httpx.get(f"{redirect.scheme}://{redirect.netloc}{redirect.path}",
                  params={"code": query["code"][0], "state": "forged"}, timeout=30)

    with pytest.raises(LoginFailed, match="State parameter mismatch"):
        await log_in(McpServerConfig(name="docs", url=server.url), tmp_path, browser(forge))
    assert not token_path("docs").exists()
    assert server.oauth.grants == []


async def test_the_listener_answers_only_the_callback_and_only_on_loopback(server, tmp_path):
    def probe_then_follow(url: str) -> None:
        redirect_uri = parse_qs(urlsplit(url).query)["redirect_uri"][0]
        base = redirect_uri.removesuffix("/callback")
        probes.append(httpx.get(f"{base}/favicon.ico", timeout=30).status_code)
        follow_login(url)

    probes: list[int] = []
    await log_in(McpServerConfig(name="docs", url=server.url), tmp_path, browser(probe_then_follow))
    assert probes == [404]
    assert str(server.oauth.authorized[0].redirect_uri).startswith("http://127.0.0.1:")


async def test_redirect_port_and_a_configured_client(server, tmp_path):
    """A server that registers nobody: the entry names the client its operator registered, with
    the fixed redirect URI that was registered for it."""
    with trio.socket.socket() as probe:
        await probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server.oauth.registration = False
    server.oauth.add_client("iota-by-hand", "s3cret", f"http://127.0.0.1:{port}/callback")
    entry = McpServerConfig(name="docs", url=server.url, client_id="iota-by-hand", client_secret="${env:DOCS_SECRET}",
                            redirect_port=port)
    os.environ["DOCS_SECRET"] = "s3cret"
    try:
        await log_in(entry, tmp_path)
    finally:
        del os.environ["DOCS_SECRET"]
    assert str(server.oauth.authorized[0].redirect_uri) == f"http://127.0.0.1:{port}/callback"
    assert list(server.oauth.clients) == ["iota-by-hand"]  # nothing registered
    record = json.loads(token_path("docs").read_text())
    assert "client" not in record and "s3cret" not in token_path("docs").read_text()  # the secret stays in the config
    os.environ["DOCS_SECRET"] = "s3cret"
    try:
        calls, statuses, _ = await chat_with(entry, tmp_path)
    finally:
        del os.environ["DOCS_SECRET"]
    assert statuses == ["ready · 4 tools"]


async def test_login_refuses_what_cannot_log_in(tmp_path):
    with pytest.raises(ConfigError, match=r'^MCP server "time" is a stdio server; only HTTP servers \(url:\) log in$'):
        await login(McpServerConfig(name="time", command="uvx"), tmp_path, print)
    with pytest.raises(ConfigError, match=r'^MCP server "docs" has auth: none; remove it \(or set auth: oauth\) '
                                          r'to log in$'):
        await login(McpServerConfig(name="docs", url="http://127.0.0.1:9/mcp", auth="none"), tmp_path, print)


async def test_a_login_with_nobody_at_the_browser_gives_up(server, tmp_path, monkeypatch):
    monkeypatch.setattr(mcp_login, "LOGIN_SECONDS", 0.5)
    with pytest.raises(LoginFailed, match=r"^login to docs failed: no callback within 500ms$"):
        await log_in(McpServerConfig(name="docs", url=server.url), tmp_path, lambda url: None)
    assert not token_path("docs").exists()


def test_iota_mcp_login_prints_the_url_when_no_browser_can_be_opened_and_logout_forgets(server, tmp_path,
                                                                                      fake_home):
    """The command, end to end: no browser can be started, so the person opens the printed URL
    (here the test does, reading it off the command's output)."""
    config = tmp_path / "iota.yaml"
    config.write_text(f"mcp_servers:\n  docs: {{url: '{server.url}'}}\n")
    env = {**os.environ, "HOME": str(fake_home), "BROWSER": "no-such-browser-anywhere"}
    command = [sys.executable, "-c", "import sys; from ui.cli import main; sys.exit(main())",
               "mcp", "login", "docs", "-c", str(config)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                               cwd=REPO)
    first = process.stdout.readline()
    url = process.stdout.readline().strip()
    assert first == "Open this URL to log in:\n"
    assert process.stdout.readline() == ("(the browser could not be started: could not start "
                                         "no-such-browser-anywhere: No such file or directory)\n")
    assert follow_login(url).text.endswith("<p>Logged in to docs. You can close this window.</p>")
    out, err = process.communicate(timeout=30)
    assert (process.returncode, err) == (0, "")
    assert out == f"Logged in to docs; the token expires in 1h0m0s (saved to {fake_home}/.iota/mcp/auth/docs.json)\n"
    shown = subprocess.run(command[:3] + ["mcp", "get", "docs", "-c", str(config)], capture_output=True, text=True,
                           env=env, cwd=REPO)
    assert "  login  logged in\n" in shown.stdout + "\n"
    logged_out = subprocess.run(command[:3] + ["mcp", "logout", "docs", "-c", str(config)], capture_output=True,
                                text=True, env=env, cwd=REPO)
    assert logged_out.stdout == f"Logged out of docs (removed {fake_home}/.iota/mcp/auth/docs.json)\n"
    assert not (fake_home / ".iota/mcp/auth/docs.json").exists()


async def test_a_server_whose_name_cannot_name_a_token_file_still_starts_without_oauth(tmp_path):
    with serve_http() as open_server:
        _, statuses, _ = await chat_with(McpServerConfig(name="my.docs", url=open_server.url), tmp_path)
    assert statuses == ["ready · 4 tools"]
    with pytest.raises(ConfigError, match=r'^MCP server "my.docs": OAuth needs a name of letters, digits, - and _'):
        await login(McpServerConfig(name="my.docs", url="http://127.0.0.1:9/mcp"), tmp_path, print)
