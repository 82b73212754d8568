"""A bot's running summary and `memory: false`, end to end in a real terminal: the summary refreshed
after the second typed turn and shown by `/memory`; a bot with memory off offering no memory tool,
keeping no journal, and still resuming its conversation."""

from __future__ import annotations

import json
import re

from iota import paths
from tests.e2e.conftest import IOTA, READY
from tests.support.terminal import terminal  # noqa: F401  (the fixture)

ANSWER = ("## Goals\n- Ship the parser by Friday\n## Preferences\n- Short replies\n## Decisions\n- Use lark\n"
          "## Open questions\n- Which Python?\n## Next steps\n- Write the grammar\n")


def bot_dir():
    return paths.bots_dir() / "coder"


def say(screen, text: str, reply: str) -> None:
    screen.type(text)
    screen.send_keys("Enter")
    screen.wait_for(reply)


def test_the_summary_is_refreshed_on_the_throttle_and_shown_by_memory(iota, terminal):
    iota.write_config("  coder:\n    mode: bot\n    model: m\n    upkeep_every: 50\n    summary_every: 2\n")
    iota.model.reply("First answer.")
    iota.model.reply("Second answer.")
    iota.model.upkeep(ANSWER)
    screen = terminal.start([IOTA, "run", "coder"], cols=120, rows=50, env=iota.env(), cwd=iota.cwd)
    screen.wait_for(READY)
    say(screen, "the parser ships friday", "First answer.")
    say(screen, "use lark for it", "Second answer.")
    screen.wait_for("summary: summary.md refreshed")
    assert "Ship the parser by Friday" in (bot_dir() / "summary.md").read_text()
    [refresh] = iota.model.upkeep_requests
    assert "tools" not in refresh.body and "use lark for it" in refresh.body["messages"][-1]["content"]
    screen.type("/memory")
    screen.send_keys("Enter")
    shown = screen.wait_for("Open a memory file in $EDITOR?")
    assert "summary.md (the running summary" in shown and "- Ship the parser by Friday" in shown
    screen.send_keys("Escape")
    screen.wait_for(re.compile(r"\A(?![\s\S]*Open a memory file)"))   # the pick is gone
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0


def test_memory_false_offers_no_memory_tool_keeps_no_journal_and_resumes(iota, terminal):
    iota.write_config("  coder:\n    mode: bot\n    model: m\n    memory: false\n")
    bot_dir().mkdir(parents=True)
    (bot_dir() / "MEMORY.md").write_text("---\nbot: coder\n---\n# coder memory\n## User\n- Likes green tea\n")
    iota.model.reply("Noted.")
    screen = terminal.start([IOTA, "run", "coder"], cols=120, rows=40, env=iota.env(), cwd=iota.cwd)
    screen.wait_for(READY)
    say(screen, "remember that I use zsh", "Noted.")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0

    iota.model.reply("Still here.")
    screen = terminal.start([IOTA, "run", "coder"], cols=120, rows=40, env=iota.env(), cwd=iota.cwd)
    screen.wait_for(READY)
    say(screen, "are you there?", "Still here.")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0

    first, second = iota.model.requests
    for request in (first, second):
        names = [tool["function"]["name"] for tool in request.body.get("tools") or []]
        assert "remember" not in names and "recall" not in names
        assert "Likes green tea" in request.body["messages"][0]["content"]
    assert "remember that I use zsh" in json.dumps(second.body["messages"])   # resumed
    assert iota.model.upkeep_requests == []
    assert not (bot_dir() / "journal.sqlite").exists()
    assert "zsh" not in (bot_dir() / "MEMORY.md").read_text()
