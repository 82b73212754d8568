"""A bot's tasks end to end: the real `iota` in tmux against the fake model, which plays a model
that creates a three-step task and then does one step a turn, as each nudge asks."""

from __future__ import annotations

import json
import os
import re
import signal
import time

import pytest

from iota import paths
from tests.e2e.conftest import IOTA, READY
from tests.support.fake_model import tool_call
from tests.support.terminal import terminal  # noqa: F401  (the fixture)

BOT = "  coder:\n    mode: bot\n    model: m\n    tools:\n      code:\n"
NUDGE = re.compile(r"Continue with task .* \((\w{26})\): step (\d) of 3")


class TaskModel:
    """Answers from what it is sent: the person's request → create the task; a nudge → mark its
    step succeeded; a tool result → say what was done."""

    def __call__(self, body: dict) -> dict:
        last = body["messages"][-1]
        if last["role"] == "tool":
            if last["content"].startswith("Created"):
                return {"text": "Started: three steps."}
            done = re.findall(r"(\d)\. \[succeeded\]", last["content"])
            return {"text": f"Step {done[-1]} done."}
        nudge = NUDGE.search(last["content"])
        if nudge:
            return {"tool_calls": [tool_call("tasks", {"action": "update_step", "task": nudge[1],
                                                       "step": int(nudge[2]), "status": "succeeded"})]}
        return {"tool_calls": [tool_call("tasks", {"action": "create", "title": "Tidy the docs",
                                                   "steps": ["fix links", "spell check", "rebuild"]})]}


@pytest.fixture
def bot(iota, terminal):
    iota.write_config(BOT)
    iota.model.respond_with(TaskModel())

    def start():
        screen = terminal.start([IOTA, "run", "coder"], cols=120, rows=60, env=iota.env(), cwd=iota.cwd)
        screen.wait_for(READY)
        return screen

    return start


def tasks() -> list[dict]:
    return [json.loads(line) for line in (paths.bots_dir() / "coder" / "tasks.jsonl").read_text().splitlines()]


def settle(model, count: int, seconds: float = 1.0) -> None:
    """The model got `count` requests and no more for `seconds`."""
    deadline = time.monotonic() + 15
    while len(model.requests) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(seconds)
    assert len(model.requests) == count


def test_a_three_step_task_auto_continues_to_done(iota, bot):
    screen = bot()
    screen.type("tidy the docs: fix links, spell check, rebuild")
    screen.send_keys("Enter")
    for reply in ("Started: three steps.", "Step 1 done.", "Step 2 done.", "Step 3 done."):
        screen.wait_for(reply)
    settle(iota.model, 8)  # a turn of two requests each: the person's, then three by itself
    [task] = tasks()
    assert task["status"] == "done" and [s["status"] for s in task["steps"]] == ["succeeded"] * 3
    shown = screen.capture()
    assert "Continue with task" not in shown and "[Open tasks" not in shown  # quiet: the model's only
    assert "◆" not in shown  # no task in progress any more
    assert shown.count("❯ tidy the docs") == 1
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0


def test_after_a_kill_9_the_bot_picks_the_task_up_where_it_left_off(iota, bot):
    screen = bot()
    screen.type("tidy the docs")
    screen.send_keys("Enter")
    screen.wait_for("Step 1 done.")
    screen.wait_for(re.compile(r"◆ Tidy the docs · step [23]/3"))
    pid = int((paths.bots_dir() / "coder" / "lock").read_text().split()[0])
    os.kill(pid, signal.SIGKILL)
    screen.wait_for_exit()
    finished = sum(step["status"] == "succeeded" for step in tasks()[0]["steps"])
    assert finished in (1, 2)
    screen = bot()
    screen.wait_for(re.compile(rf'Picking up task "Tidy the docs" where it left off: step {finished + 1} of 3'))
    screen.wait_for("Step 3 done.")
    assert tasks()[0]["status"] == "done"
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
