"""MCP servers in a real run: a stdio server from PyPI (`mcp-server-time`) configured for the
chat, its tools called by the fake model, shown in /tools, and stopped when iota exits."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tests.e2e.conftest import IOTA, READY
from tests.support.fake_model import tool_call
from tests.support.terminal import terminal  # noqa: F401  (the fixture)

SERVER = f"mcp_servers:\n  time: {{command: {sys.executable}, args: [-m, mcp_server_time]}}\n"


def time_servers_of(home: Path) -> list[int]:
    """The pids of running `mcp_server_time` processes started for this HOME."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if b"mcp_server_time" in (proc / "cmdline").read_bytes() and \
                    f"HOME={home}".encode() in (proc / "environ").read_bytes().split(b"\0"):
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def test_headless_run_calls_an_mcp_tool(iota):
    path = iota.write_config("  chat: {model: m}\n")
    path.write_text(path.read_text() + SERVER)
    iota.model.reply(tool_calls=[tool_call("mcp__time__get_current_time", {"timezone": "UTC"})])
    iota.model.reply("It is late.")
    result = iota("run", "chat", "-m", "what time is it?", timeout=60)
    assert (result.returncode, result.stdout) == (0, "It is late.\n"), result.stderr
    first = iota.model.requests[0].body
    assert "mcp__time__get_current_time" in {t["function"]["name"] for t in first["tools"]}
    answer = [m for m in iota.model.requests[1].body["messages"] if m["role"] == "tool"][0]
    assert json.loads(answer["content"])["timezone"] == "UTC"
    assert time_servers_of(iota.home) == []


def test_the_chat_shows_mcp_tools_and_stops_the_server_at_exit(iota, terminal):
    path = iota.write_config("  chat: {model: m}\n")
    path.write_text(path.read_text() + SERVER)
    iota.model.reply(tool_calls=[tool_call("mcp__time__get_current_time", {"timezone": "UTC"})])
    iota.model.reply("Done.")
    screen = terminal.start([IOTA, "run", "chat"], cols=120, rows=40, env=iota.env(), cwd=iota.cwd)
    screen.wait_for(READY)
    screen.wait_for("MCP server time ready", timeout=30)
    assert time_servers_of(iota.home)
    screen.type("/tools")
    screen.send_keys("Enter")
    screen.wait_for("time  ready · 2 tools")
    screen.type("what time is it?")
    screen.send_keys("Enter")
    screen.wait_for("Done.")
    assert "time:get_current_time" in screen.capture()
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    deadline = time.monotonic() + 5
    while time_servers_of(iota.home) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert time_servers_of(iota.home) == []
