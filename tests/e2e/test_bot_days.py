"""A bot left alone over "days" (issue 30): the moments where it cost the person turns, trust or a
message. The real `iota` in tmux against the fake model; each test fails on the code before its fix."""

from __future__ import annotations

import json
import re


from iota import paths
from tests.e2e.conftest import IOTA, READY
from tests.e2e.test_tasks import settle
from tests.support.fake_model import tool_call
from tests.support.terminal import terminal  # noqa: F401  (the fixture)

BOT = "  coder:\n    mode: bot\n    model: m\n    tools:\n      code:\n"


def start(iota, terminal, *args: str, name: str = "coder"):
    screen = terminal.start([IOTA, "run", name, *args], cols=120, rows=50, env=iota.env(), cwd=iota.cwd)
    screen.wait_for(READY)
    return screen


class IdleTaskModel:
    """Creates a task when asked, then answers every nudge with words and no task update: the
    task never moves."""

    def __call__(self, body: dict) -> dict:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return {"text": "Started."}
        if "Continue with task" in str(last["content"]):
            return {"text": "Thinking about the links."}
        if "tidy" in str(last["content"]):
            return {"tool_calls": [tool_call("tasks", {"action": "create", "title": "Tidy the docs",
                                                       "steps": ["fix links", "spell check"]})]}
        return {"text": "Noted."}


def tasks() -> list[dict]:
    return [json.loads(line) for line in (paths.bots_dir() / "coder" / "tasks.jsonl").read_text().splitlines()]


def test_auto_continue_without_progress_pauses_after_two_and_stays_paused_on_restart(iota, terminal):
    iota.write_config(BOT)
    iota.model.respond_with(IdleTaskModel())
    screen = start(iota, terminal)
    screen.type("tidy the docs")
    screen.send_keys("Enter")
    shown = screen.wait_for(re.compile(r"Task .Tidy the docs. paused: 2 turns by itself made no progress on "
                                       r"step 1 of 2, .fix links."))
    settle(iota.model, 4)  # the person's turn (two requests), then two continuations and no more
    assert "Paused after 10 turns" not in shown
    assert tasks()[0]["paused"]
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0

    screen = start(iota, terminal)  # a restart does not continue it
    screen.wait_for(re.compile(r"Task .Tidy the docs. is paused \(no progress on step 1 of 2"))
    settle(iota.model, 4)
    screen.type("go on please")  # the person says so: resumed, and it goes on by itself again
    screen.send_keys("Enter")
    screen.wait_for(re.compile(r"Task .Tidy the docs. resumed"))
    settle(iota.model, 7)  # their turn, then two more continuations, paused again
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
