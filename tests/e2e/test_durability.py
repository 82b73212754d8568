"""What a chat leaves behind when it ends badly, end to end: the real `iota` in tmux against the
fake model server. SIGINT from outside saves the turn like SIGTERM; however the chat exits, no
background job (outside the sandbox) or MCP server it started outlives it; a bot turn that fails
after its tools ran keeps them, its memory notice and the failure, and Up offers the message again.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import time

import pytest

from iota import paths
from tests.e2e.conftest import IOTA, READY
from tests.e2e.test_chat import iota_pid, saved_records
from tests.e2e.test_mcp_chat import SERVER, time_servers_of
from tests.support.fake_model import Gate, tool_call
from tests.support.terminal import terminal  # noqa: F401  (the fixture)

TODAY = datetime.date.today().isoformat()


def is_running(pid: int) -> bool:
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigint_from_outside_mid_turn_saves_the_turn_and_exits_130(iota, terminal):
    iota.write_config("  chat: {model: m}\n")
    gate = Gate()
    iota.model.reply("a partial answer that goes on", pieces=3, gate=gate)
    screen = terminal.start([IOTA, "run", "chat"], cols=100, rows=30, env=iota.env(), cwd=iota.cwd)
    screen.wait_for(READY)
    screen.type("go")
    screen.send_keys("Enter")
    gate.release(1)
    screen.wait_for("a partial")
    os.kill(iota_pid(screen), signal.SIGINT)
    assert screen.wait_for_exit() == 130
    _, records = saved_records()
    assert records[0]["content"] == "go"
    assert records[-1]["interrupted"] is True and records[-1]["content"].startswith("a partial")


@pytest.mark.parametrize("leave", ["C-d", signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=["ctrl-d", "SIGINT", "SIGTERM", "SIGHUP"])
def test_no_background_job_or_mcp_server_outlives_the_chat(iota, terminal, leave):
    config = iota.write_config("  coder:\n    mode: agent\n    model: m\n"
                               "    tools:\n      shell: {sandbox: off, auto_run: true}\n")
    config.write_text(config.read_text() + SERVER)
    job_pid = iota.cwd / "job.pid"
    iota.model.reply(tool_calls=[tool_call("shell", {"command": f"echo $$ > {job_pid}; exec sleep 300",
                                                     "background": True})])
    iota.model.reply("Started.")
    screen = terminal.start([IOTA, "run", "coder"], cols=120, rows=40, env=iota.env(), cwd=iota.cwd)
    screen.wait_for(READY)
    screen.wait_for("MCP server time ready", timeout=30)
    screen.type("start the server")
    screen.send_keys("Enter")
    screen.wait_for("Started.")
    deadline = time.monotonic() + 5
    while not job_pid.exists() or not job_pid.read_text().strip():
        assert time.monotonic() < deadline, "the background job never started"
        time.sleep(0.05)
    job = int(job_pid.read_text())
    servers = time_servers_of(iota.home)
    assert is_running(job) and servers
    if leave == "C-d":
        screen.send_keys("C-d")
        assert screen.wait_for_exit() == 0
    else:
        os.kill(iota_pid(screen), leave)
        assert screen.wait_for_exit() == 130
    deadline = time.monotonic() + 5
    while (is_running(job) or any(is_running(pid) for pid in servers)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not is_running(job), "the background job outlived the chat"
    assert not any(is_running(pid) for pid in servers), "the MCP server outlived the chat"


BOT = "  coder:\n    mode: bot\n    model: m\n    tools:\n      code:\n"


def test_a_bot_turn_that_fails_after_remember_keeps_it_and_up_offers_the_message_again(iota, terminal):
    iota.write_config(BOT)
    iota.model.reply("Saving that.", tool_calls=[tool_call("remember", {"action": "add", "text": "Prefers tabs",
                                                                         "source": "user"}, id="m1")])
    iota.model.fail(400, message="the provider gave up")
    iota.model.reply("Yes, tabs.")
    screen = terminal.start([IOTA, "run", "coder"], cols=120, rows=36, env=iota.env(), cwd=iota.cwd)
    screen.wait_for(READY)
    screen.type("I prefer tabs")
    screen.send_keys("Enter")
    screen.wait_for("the provider gave up")
    screen.wait_for(f"memory: MEMORY.md ## User +1 line: [user] Prefers tabs ({TODAY})")
    screen.send_keys("Up")
    screen.wait_for("❯ I prefer tabs")
    screen.send_keys("C-u")
    screen.type("do you remember?")
    screen.send_keys("Enter")
    screen.wait_for("Yes, tabs.")
    sent = [(m["role"], m.get("content") or "") for m in iota.model.requests[-1].body["messages"]
            if m["role"] != "system"]
    assert sent[:3] == [("user", "I prefer tabs"), ("assistant", "Saving that."), ("tool", sent[2][1])]
    assert sent[2][1].startswith("saved to MEMORY.md ## User")
    assert [text for role, text in sent[3:-1]] == [
        "The previous turn ended early with an error: fake: HTTP 400 invalid_request_error: the provider gave up. "
        "Everything it did before the error is above.",
        f"memory: MEMORY.md ## User +1 line: [user] Prefers tabs ({TODAY})"]
    assert sent[-1] == ("user", "do you remember?")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    pointer = json.loads((paths.bots_dir() / "coder" / "bot.json").read_text())
    log = (paths.sessions_dir() / pointer["session"] / "messages.jsonl").read_text()
    assert log.count('"content":"I prefer tabs"') == 1
