"""The chat tells herdr what it is doing: the real `iota` in tmux, a fake herdr on a Unix socket."""

from __future__ import annotations

import time

from tests.e2e.conftest import IOTA
from tests.support.fake_hosts import FakeHerdr
from tests.support.fake_model import tool_call
from tests.support.terminal import terminal  # noqa: F401  (the fixture)


def wait_until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_herdr_sees_ready_working_blocked_idle_the_session_and_the_release(iota, terminal, tmp_path):
    socket = tmp_path / "herdr.sock"
    herdr = FakeHerdr(socket)
    iota.write_config("  coder:\n    mode: agent\n    model: m\n    tools:\n      code:\n")
    iota.model.reply(tool_calls=[tool_call("write_file", {"path": "a.txt", "content": "x"})])
    iota.model.reply("Written.")
    env = iota.env(HERDR_ENV="1", HERDR_PANE_ID="pane-7", HERDR_SOCKET_PATH=str(socket),
                   CMUX_SURFACE_ID="stale-surface")
    with herdr.serving_in_thread():
        screen = terminal.start([IOTA, "run", "coder"], cols=110, rows=30, env=env, cwd=iota.cwd)
        screen.wait_for("in herdr")
        wait_until(lambda: len(herdr.requests) >= 2)
        screen.type("write it")
        screen.send_keys("Enter")
        screen.wait_for("wants to modify files")
        wait_until(lambda: any(r.params.get("state") == "blocked" for r in herdr.requests))
        screen.send_keys("Enter")
        screen.wait_for("Written.")
        screen.send_keys("C-d")
        assert screen.wait_for_exit() == 0
        wait_until(lambda: herdr.requests[-1].method == "pane.release_agent")
    story = [r.params.get("state", r.method) for r in herdr.requests]
    assert story[0] in ("idle", "pane.report_agent_session")
    assert "pane.report_agent_session" in story
    states = [s for s in story if s in ("idle", "working", "blocked")]
    assert states == ["idle", "working", "blocked", "working", "idle"]
    assert story[-1] == "pane.release_agent"
    seqs = [r.params["seq"] for r in herdr.requests if "seq" in r.params]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert all(r.params["pane_id"] == "pane-7" for r in herdr.requests)
    system = iota.model.requests[0].body["messages"][0]["content"]
    assert "host: herdr\nherdr pane: pane-7\n</environment>" in system


def test_a_headless_run_reports_working_idle_release(iota, tmp_path):
    socket = tmp_path / "herdr.sock"
    herdr = FakeHerdr(socket)
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("hi")
    with herdr.serving_in_thread():
        result = iota("run", "chat", "-m", "hello", HERDR_ENV="1", HERDR_PANE_ID="p", HERDR_SOCKET_PATH=str(socket))
    assert result.returncode == 0 and result.stdout == "hi\n"
    assert [r.params.get("state", r.method) for r in herdr.requests] == ["working", "idle", "pane.release_agent"]
