"""MCP servers in a chat, with real servers: `mcp-server-time` from PyPI over stdio, and a
streamable-HTTP server the tests start with the SDK's own server classes."""

from __future__ import annotations

import contextlib
import dataclasses

import os
import signal
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import mcp_types
import pytest
import trio

from iota.config import settings
from iota.mcp import hub as mcp_hub
from iota.agent import Approvals, Turn, run_turn
from iota.chat import prepare_chat
from iota.config.entries import AgentConfig, McpServerConfig
from iota.errors import ConfigError
from iota.mcp.hub import open_mcp
from iota.mcp.servers import server_from_flag, servers_for_run
from iota.mcp.tool import result_text
from iota.messages import TOOL, USER, Message
from iota.tools.base import Toolbox
from tests.support.fake_model import fake_model, tool_call  # noqa: F401  (the fixture)
from tests.support.mcp_servers import child_pids, children_of, is_alive, serve_http

TIME = McpServerConfig(name="time", command=sys.executable, args=["-m", "mcp_server_time"])


@pytest.fixture(scope="module")
def http_server():
    with serve_http() as server:
        yield server


class Events(list):
    """The hub's notices, as (text, warning)."""

    def __call__(self, text: str, warning: bool) -> None:
        self.append((text, warning))


async def settled(hub) -> None:
    with trio.fail_after(30):
        await hub.wait_settled()


async def until(condition) -> None:
    with trio.fail_after(10):
        while not condition():
            await trio.sleep(0.02)


def test_importing_the_mcp_modules_does_not_import_the_sdk():
    code = ("import sys, iota.chat, iota.mcp.hub, iota.mcp.tool, iota.mcp.servers, iota.mcp.config_file, "
            "iota.mcp.auth, iota.mcp.connection, iota.mcp.login, "
            "ui.commands.mcp, ui.cli; print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parents[3])
    assert out.stdout.strip() == "[]"


async def test_a_stdio_server_from_pypi_lists_its_tools_and_answers(tmp_path, monkeypatch):
    # ${env:…} is expanded when the server starts.
    monkeypatch.setenv("IOTA_TEST_MODULE", "mcp_server_time")
    server = dataclasses.replace(TIME, args=("-m", "${env:IOTA_TEST_MODULE}"))
    toolbox, events = Toolbox(), Events()
    before = child_pids()
    async with open_mcp([server], tmp_path, toolbox, events) as hub:
        assert [status.state for status in hub.statuses()] == ["connecting"]  # the caller is not held up
        await settled(hub)
        [pid] = child_pids() - before
        tool = toolbox.get("mcp__time__get_current_time")
        assert sorted(t.name for t in toolbox) == ["mcp__time__convert_time", "mcp__time__get_current_time"]
        assert "timezone" in tool.spec().parameters["properties"]
        assert tool.spec().parameters["type"] == "object"
        assert tool.description.startswith("Get current time")
        assert tool.approval({"timezone": "UTC"}) is None
        assert tool.target({"timezone": "UTC"}) == '{"timezone": "UTC"}'
        result = await toolbox.call("mcp__time__get_current_time", {"timezone": "Europe/Paris"})
        assert not result.is_error and '"timezone": "Europe/Paris"' in result.content
        refused = await toolbox.call("mcp__time__get_current_time", {"timezone": "Nowhere/Special"})
        assert refused.is_error and "Nowhere/Special" in refused.content
        [status] = hub.statuses()
        assert (status.state, status.summary()) == ("ready", "ready · 2 tools")
        assert status.endpoint == f"{sys.executable} -m '${{env:IOTA_TEST_MODULE}}'"
        assert status.tools == ("time:get_current_time", "time:convert_time")
    assert events == [("MCP server time ready: 2 tools", False)]
    assert not is_alive(pid)
    assert len(toolbox) == 0


async def test_a_streamable_http_server_gets_its_headers_and_its_results_are_read(http_server, tmp_path,
                                                                                   monkeypatch):
    monkeypatch.setenv("IOTA_TEST_TOKEN", "s3cret")
    server = McpServerConfig(name="echo", url=http_server.url,
                             headers={"Authorization": "Bearer ${env:IOTA_TEST_TOKEN}"})
    toolbox, events = Toolbox(), Events()
    async with open_mcp([server], tmp_path, toolbox, events) as hub:
        await settled(hub)
        echoed = await toolbox.call("mcp__echo__echo", {"text": "hello"})
        assert (echoed.content, echoed.is_error) == ("echo: hello", False)
        assert http_server.headers[-1]["authorization"] == "Bearer s3cret"
        picture = await toolbox.call("mcp__echo__picture", {})
        assert picture.content == "a 12 KB picture\n[image: image/png, 12 KB]"
        failed = await toolbox.call("mcp__echo__fail", {"reason": "no such record"})
        assert failed.is_error and "no such record" in failed.content
        long = await toolbox.call("mcp__echo__lines", {"count": 2000})
        assert "line 1\n" in long.content and "1488 lines omitted" in long.content
        assert long.content.endswith("line 2000")
    assert events == [("MCP server echo ready: 4 tools", False)]


async def test_a_server_that_fails_to_start_is_reported_and_the_others_are_unaffected(http_server, tmp_path):
    servers = [
        McpServerConfig(name="missing", command="no-such-mcp-server-anywhere"),
        McpServerConfig(name="crash", command=sys.executable,
                        args=["-c", "import sys; sys.exit('crash: bad settings file')"]),
        McpServerConfig(name="lost", url=http_server.url.replace("/mcp", "/elsewhere")),
        McpServerConfig(name="typo", command="${nope}"),
        McpServerConfig(name="echo", url=http_server.url),
    ]
    toolbox, events = Toolbox(), Events()
    async with open_mcp(servers, tmp_path, toolbox, events) as hub:
        await settled(hub)
        states = {status.name: status.summary() for status in hub.statuses()}
        assert [t.name for t in toolbox] == ["mcp__echo__echo", "mcp__echo__fail", "mcp__echo__picture",
                                             "mcp__echo__lines"]
        assert (await toolbox.call("mcp__echo__echo", {"text": "still here"})).content == "echo: still here"
    assert states["missing"] == "failed: command not found: no-such-mcp-server-anywhere"
    assert states["crash"] == "failed: Connection closed (crash: bad settings file)"
    assert states["lost"] == "failed: HTTP 404 Not Found"
    assert states["typo"].startswith("failed: unknown variable ${nope}")
    assert states["echo"] == "ready · 4 tools"
    warnings = sorted(text for text, warning in events if warning)
    assert warnings[0] == "MCP server crash failed to start: Connection closed (crash: bad settings file)"
    assert warnings[1] == "MCP server lost failed to start: HTTP 404 Not Found"
    assert warnings[2] == "MCP server missing failed to start: command not found: no-such-mcp-server-anywhere"
    assert warnings[3].startswith("MCP server typo failed to start: unknown variable ${nope}")
    assert all("\n" not in text for text, _ in events)


async def test_a_server_that_never_answers_fails_after_the_start_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(mcp_hub, "START_SECONDS", 0.5)
    silent = McpServerConfig(name="silent", command=sys.executable, args=["-c", "import time; time.sleep(60)"])
    toolbox, events = Toolbox(), Events()
    before = child_pids()
    async with open_mcp([silent], tmp_path, toolbox, events) as hub:
        await settled(hub)
        assert hub.statuses()[0].summary() == "failed: no answer within 0.5s"
        assert child_pids() - before == set()  # stopped when it failed, not when the chat ends
    assert events == [("MCP server silent failed to start: no answer within 0.5s", True)]


async def test_a_server_killed_mid_chat_is_reported_its_tools_leave_and_calls_are_errors(tmp_path):
    toolbox, events = Toolbox(), Events()
    before = child_pids()
    async with open_mcp([TIME], tmp_path, toolbox, events) as hub:
        await settled(hub)
        tool = toolbox.get("mcp__time__get_current_time")
        [reaper] = child_pids() - before
        [pid] = children_of(reaper)  # the server itself, which the reaper runs
        os.kill(pid, signal.SIGKILL)
        await until(lambda: hub.statuses()[0].state == "exited")
        assert len(toolbox) == 0
        assert hub.statuses()[0].summary() == "exited: the process ended"
        assert hub.statuses()[0].tools == ()
        # The model may still hold the tool from its last request.
        result = await Toolbox([tool]).call(tool.name, {"timezone": "UTC"})
        assert result.is_error
        assert result.content == ("MCP server time is not running (exited: the process ended); "
                                  "its tools cannot be called")
        assert (await toolbox.call(tool.name, {"timezone": "UTC"})).is_error
    assert events[-1] == ("MCP server time exited: the process ended; its tools were removed", True)


async def test_an_http_server_that_goes_away_fails_the_calls_and_the_chat_still_closes_cleanly(tmp_path):
    with ExitStack() as stack:
        server = stack.enter_context(serve_http())
        toolbox, events = Toolbox(), Events()
        async with open_mcp([McpServerConfig(name="echo", url=server.url)], tmp_path, toolbox, events) as hub:
            await settled(hub)
            await trio.to_thread.run_sync(stack.close)
            result = await toolbox.call("mcp__echo__echo", {"text": "anyone there?"})
            assert result.is_error and result.content.startswith("MCP server echo: ")
    assert events == [("MCP server echo ready: 4 tools", False)]


async def test_no_server_process_outlives_a_cancelled_hub(tmp_path):
    before = child_pids()
    with trio.CancelScope() as scope:
        async with open_mcp([TIME], tmp_path, Toolbox(), Events()) as hub:
            await settled(hub)
            [reaper] = child_pids() - before
            started = {reaper, *children_of(reaper)}
            assert len(started) == 2  # the reaper and the server
            scope.cancel()
            await trio.sleep_forever()
    assert not any(is_alive(pid) for pid in started)
    assert child_pids() - before == set()


async def test_no_server_process_outlives_a_hub_left_while_the_server_is_still_starting(tmp_path):
    before = child_pids()
    events = Events()
    async with open_mcp([TIME], tmp_path, Toolbox(), events) as hub:
        await until(lambda: child_pids() - before)  # spawned, not yet answering
        assert hub.statuses()[0].state == "connecting"
    assert child_pids() - before == set()
    assert events == []  # leaving is not a failure


def test_an_agent_picks_its_servers_and_mcp_flags_add_more():
    loaded = settings.Config(mcp_servers={name: McpServerConfig(name=name, command=name) for name in ("a", "b", "time")})

    def names(agent, flags=()):
        return [server.name for server in servers_for_run(loaded, agent, list(flags))]

    assert names(AgentConfig(name="all")) == ["a", "b", "time"]
    assert names(AgentConfig(name="none", mcp_servers=[])) == []
    assert names(AgentConfig(name="some", mcp_servers=["time", "a"])) == ["time", "a"]
    assert names(AgentConfig(name="none", mcp_servers=[]), ["uvx mcp-server-time", "https://mcp.context7.com/mcp"]) \
        == ["time-2", "context7"]


def test_an_agent_naming_an_undefined_server_fails_the_config_load(tmp_path):
    path = tmp_path / "iota.yaml"
    path.write_text("providers: {oa: {type: openai}}\nagents:\n  default: {model: oa:x, mcp_servers: [nope]}\n"
                    "mcp_servers:\n  time: {command: uvx}\n")
    with pytest.raises(ConfigError, match=r'agents.default.mcp_servers: unknown MCP server "nope" \(configured: time\)'):
        settings.load(tmp_path, path)


@pytest.mark.parametrize(("flag", "name", "command", "args", "url"), [
    ("uvx mcp-server-time --local-timezone UTC", "time", "uvx", ["mcp-server-time", "--local-timezone", "UTC"], None),
    ("npx -y @modelcontextprotocol/server-filesystem /tmp", "filesystem", "npx",
     ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], None),
    (f"{sys.executable} -m mcp_server_time", "time", sys.executable, ["-m", "mcp_server_time"], None),
    ("./bin/my-tools --stdio", "my-tools", "./bin/my-tools", ["--stdio"], None),
    ("'/opt/my server/run' 'a b'", "run", "/opt/my server/run", ["a b"], None),
    ("https://mcp.context7.com/mcp", "context7", None, [], "https://mcp.context7.com/mcp"),
    ("http://127.0.0.1:8000/mcp", "127-0-0-1", None, [], "http://127.0.0.1:8000/mcp"),
    ("http://localhost:3000/mcp", "localhost", None, [], "http://localhost:3000/mcp"),
])
def test_an_mcp_flag_is_named_after_what_it_runs(flag, name, command, args, url):
    server = server_from_flag(flag)
    assert (server.name, server.command, list(server.args), server.url) == (name, command, args, url)


def test_a_bad_mcp_flag_is_one_line():
    with pytest.raises(ConfigError, match=r'^--mcp "uvx \'oops": No closing quotation$'):
        server_from_flag("uvx 'oops")


def test_results_other_than_text_are_summarised():
    result = mcp_types.CallToolResult(content=[
        mcp_types.ResourceLink(name="report", uri="file:///tmp/report.pdf"),
        mcp_types.EmbeddedResource(resource=mcp_types.TextResourceContents(uri="file:///a.txt", text="inline text")),
        mcp_types.EmbeddedResource(resource=mcp_types.BlobResourceContents(
            uri="file:///b.bin", mime_type="application/zip", blob="A" * 4096)),
        mcp_types.AudioContent(data="A" * 400, mime_type="audio/wav"),
    ])
    assert result_text(result) == ("[resource: file:///tmp/report.pdf]\ninline text\n"
                                   "[resource: file:///b.bin, application/zip, 3 KB]\n[audio: audio/wav, 300 bytes]")
    assert result_text(mcp_types.CallToolResult(content=[], structured_content={"n": 1})) == '{\n  "n": 1\n}'
    assert result_text(mcp_types.CallToolResult(content=[])) == "(no output)"


async def test_a_headless_chat_opens_with_its_servers_ready_and_their_warnings_noted(http_server, tmp_path):
    path = tmp_path / "iota.yaml"
    path.write_text("providers: {oa: {type: openai}}\n"
                    "agents:\n  default: {model: oa:x}\n  plain: {model: oa:x, mcp_servers: []}\n"
                    f"mcp_servers:\n  echo: {{url: '{http_server.url}'}}\n  broken: {{command: no-such-mcp-server}}\n")
    loaded = settings.load(tmp_path, path)
    setup = prepare_chat(loaded, loaded.agents["default"], tmp_path, interactive=False)
    async with setup.open_tools() as toolbox:
        assert "mcp__echo__echo" in [tool.name for tool in toolbox]
        assert [status.summary() for status in toolbox.mcp.statuses()] == [
            "ready · 4 tools", "failed: command not found: no-such-mcp-server"]
    assert setup.warnings == ["MCP server broken failed to start: command not found: no-such-mcp-server"]
    plain = prepare_chat(loaded, loaded.agents["plain"], tmp_path, interactive=False)
    async with plain.open_tools() as toolbox:
        assert toolbox.mcp is None and len(toolbox) == 0


async def test_the_model_is_offered_the_servers_tools_and_a_call_reaches_the_server(http_server, fake_model,
                                                                                   tmp_path):
    path = tmp_path / "iota.yaml"
    path.write_text(f"providers: {{fake: {{type: openai, key: k, url: '{fake_model.openai_url}'}}}}\n"
                    f"agents: {{default: {{model: 'fake:m'}}}}\nmcp_servers: {{echo: {{url: '{http_server.url}'}}}}\n")
    loaded = settings.load(tmp_path, path)
    setup = prepare_chat(loaded, loaded.agents["default"], tmp_path, interactive=False)
    fake_model.reply(tool_calls=[tool_call("mcp__echo__echo", {"text": "over the wire"}, id="c1")])
    fake_model.reply("Done.")
    turn = Turn()
    async with setup.open_tools() as toolbox:
        request = setup.request([Message(USER, content="echo something")], toolbox)
        await run_turn(turn, setup.provider(), request, toolbox, Approvals(ask=None))
    await setup.aclose()
    offered = {tool["function"]["name"]: tool["function"] for tool in fake_model.requests[0].body["tools"]}
    assert offered["mcp__echo__echo"]["description"] == "Say the text back."
    assert offered["mcp__echo__echo"]["parameters"]["properties"]["text"]["type"] == "string"
    assert [(m.role, m.content) for m in turn.messages if m.role == TOOL] == [(TOOL, "echo: over the wire")]
    assert turn.reply == "Done."


async def test_an_http_server_that_goes_away_is_reported_and_its_tools_leave(tmp_path):
    toolbox, events = Toolbox(), Events()
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(serve_http())
        config = McpServerConfig(name="gone", url=server.url)
        async with open_mcp([config], tmp_path, toolbox, events) as hub:
            await settled(hub)
            assert toolbox.get("mcp__gone__echo") is not None
            stack.close()  # the server stops
            result = await toolbox.call("mcp__gone__echo", {"text": "hi"})
            assert result.is_error and result.content.startswith("MCP server gone: ")
            await until(lambda: hub.statuses()[0].state == "exited")
            assert toolbox.get("mcp__gone__echo") is None
    assert events[-1][1] is True and events[-1][0].startswith("MCP server gone exited: ")
    assert events[-1][0].endswith("; its tools were removed")


async def test_a_server_that_changes_its_tools_has_them_read_again(tmp_path):
    toolbox, events = Toolbox(), Events()
    with serve_http(growing=True) as server:
        async with open_mcp([McpServerConfig(name="echo", url=server.url)], tmp_path, toolbox, events) as hub:
            await settled(hub)
            assert toolbox.get("mcp__echo__hello") is None
            added = await toolbox.call("mcp__echo__grow", {"name": "hello"})
            assert added.content == "added hello"
            await until(lambda: toolbox.get("mcp__echo__hello") is not None)
            assert (await toolbox.call("mcp__echo__hello", {})).content == "I am hello"
            assert hub.statuses()[0].summary() == "ready · 6 tools"
    assert events[-1] == ("MCP server echo tools changed: 6 tools", False)


async def test_an_http_server_that_dies_is_noticed_by_the_keep_alive_ping_without_a_call(tmp_path, monkeypatch):
    monkeypatch.setattr(mcp_hub, "PING_SECONDS", 0.2)
    monkeypatch.setattr(mcp_hub, "PING_TIMEOUT_SECONDS", 2)
    toolbox, events = Toolbox(), Events()
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(serve_http())
        async with open_mcp([McpServerConfig(name="gone", url=server.url)], tmp_path, toolbox, events) as hub:
            await settled(hub)
            await trio.sleep(0.5)  # a server that answers its pings stays
            assert hub.statuses()[0].state == "ready"
            await trio.to_thread.run_sync(stack.close)  # the server stops; nobody calls it
            await until(lambda: hub.statuses()[0].state == "exited")
            assert toolbox.get("mcp__gone__echo") is None
            assert hub.statuses()[0].reason.startswith("no answer to a keep-alive ping")
    assert events[-1][1] is True
    assert events[-1][0].startswith("MCP server gone exited: no answer to a keep-alive ping")
