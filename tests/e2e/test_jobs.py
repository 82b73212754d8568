"""`/jobs` end to end: a background job the model started is listed with its clock and output, its
page opens, the Kill tab stops it and its notice says so; the status row shows it meanwhile."""

from __future__ import annotations

import re

from tests.e2e.conftest import IOTA, READY
from tests.support.fake_model import tool_call
from tests.support.terminal import terminal  # noqa: F401  (the fixture)

SHELL = "  chat:\n    model: m\n    tools:\n      shell: {sandbox: off, auto_run: true}\n"
COMMAND = "echo started; sleep 300"


def test_jobs_lists_pages_and_kills_a_background_job(iota, terminal):
    iota.write_config(SHELL)
    iota.model.reply("Starting it.", tool_calls=[tool_call("shell", {"command": COMMAND, "background": True})])
    iota.model.reply("It runs in the background.")
    iota.model.reply("Noted: it was killed.")
    screen = terminal.start([IOTA, "run", "chat"], cols=120, rows=36, env=iota.env(), cwd=iota.cwd)
    screen.wait_for(READY)
    screen.type("/jobs")
    screen.send_keys("Enter")
    screen.wait_for("No background jobs are running.")
    screen.type("start the server")
    screen.send_keys("Enter")
    screen.wait_for("It runs in the background.")
    screen.wait_for(re.compile(r"· job b1 echo started; sleep 300 (\d+s|<1s)$", re.MULTILINE))

    screen.type("/jobs")
    screen.send_keys("Enter")
    screen.wait_for("Background jobs   [Jobs]  Kill")
    # Read again every second: the job's first line of output shows once it has written it.
    screen.wait_for(re.compile(r"❯ b1  (\d+s|<1s)\s+echo started; sleep 300  │ started"))
    screen.send_keys("Enter")
    page = screen.wait_for("b1 — echo started; sleep 300")
    assert re.search(r"started \d\d:\d\d:\d\d · running", page)
    assert "│ started" in page and "pid " in page
    screen.send_keys("Escape")  # alone: an Esc that arrives with the next key reads as Alt+key
    screen.wait_for("Background jobs   [Jobs]  Kill")
    screen.send_keys("Tab")
    screen.wait_for("❯ [ ] b1")
    screen.send_keys("Space", "Enter")
    screen.wait_for("[background job b1 finished: killed] echo started; sleep 300")
    assert not re.search(r"· job b1", screen.capture())
    screen.type("and now?")
    screen.send_keys("Enter")
    screen.wait_for("Noted: it was killed.")
    notice, message = iota.model.requests[2].body["messages"][-2:]
    assert notice["role"] == "user" and notice["content"].startswith("[background job b1 finished: killed]")
    assert message == {"role": "user", "content": "and now?"}
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
