"""Waiting and failing, end to end in tmux: a retry is shown and can be stopped, an overloaded
server gets more patience, a bot's flush and compaction say what they do, a headless run says
what it refused."""

from __future__ import annotations

import re

from tests.e2e.conftest import IOTA
from tests.e2e.test_bot_compaction import BOT, PAST, bot, records, say  # noqa: F401  (the fixture)
from tests.e2e.test_chat import chat  # noqa: F401  (the fixture)
from tests.support.fake_model import Gate, tool_call
from tests.support.terminal import terminal  # noqa: F401  (the fixture under `chat`)


def test_a_retry_is_shown_and_esc_stops_the_wait(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    iota.model.fail(529, retry_after_ms=5000, message="Overloaded")
    screen = chat("run", "chat")
    screen.type("hello")
    screen.send_keys("Enter")
    screen.wait_for("retrying in 5 s (HTTP 529, attempt 2/5)")
    screen.send_keys("Escape")
    screen.wait_for("(interrupted)")
    shown = screen.wait_for(re.compile(r"^m · [^·]*$", re.MULTILINE))  # nothing runs any more
    assert "retrying" not in shown
    assert len(iota.model.requests) == 1  # the wait was given up, not the request sent again


def test_an_overloaded_server_gets_more_patience(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    for _ in range(4):
        iota.model.fail(529, retry_after_ms=10, message="Overloaded")
    iota.model.reply("Finally.")
    screen = chat("run", "chat")
    screen.type("hello")
    screen.send_keys("Enter")
    screen.wait_for("Finally.")
    assert len(iota.model.requests) == 5


def test_the_status_row_says_when_memory_is_saved_and_ctrl_c_on_it_is_explained(iota, bot):
    model = iota.model
    gate = Gate()
    model.reply("One.")
    model.reply("Two.", input_tokens=PAST)
    model.reply("I will save things slowly", pieces=2, gate=gate)    # the flush, held
    model.reply("Summary after an interrupted flush.")
    screen = bot()
    say(screen, "one", "One.")
    say(screen, "two", "Two.")
    screen.wait_for(re.compile(r"· saving memory before compacting · (Waiting for the model|Responding)"))
    gate.release(1)
    screen.wait_for("I will")
    screen.send_keys("C-c")
    screen.wait_for("Memory flush interrupted: what it saved so far is kept; compacting without the rest")
    screen.wait_for("── compacted: ")
    screen.wait_for("Context compacted → ")
    assert [r for r in records() if r["role"] == "compaction"][0]["flush_skipped"] is True


def test_the_status_row_says_compacting_during_the_summary(iota, bot):
    model = iota.model
    gate = Gate()
    model.reply("One.")
    model.reply("Two.", input_tokens=PAST)
    model.reply("Nothing to save.")                                   # the flush
    model.reply("The summary.", gate=gate)                            # the summary, held
    screen = bot()
    say(screen, "one", "One.")
    say(screen, "two", "Two.")
    screen.wait_for(re.compile(r"· Compacting context… · "))
    gate.open()
    screen.wait_for("── compacted: 2 messages summarised ──")


def test_a_headless_run_says_on_stderr_what_it_refused(iota, terminal):
    (iota.cwd / ".git").mkdir()
    iota.write_config("  coder:\n    mode: agent\n    model: m\n    tools:\n      code:\n")
    iota.model.reply(tool_calls=[tool_call("write_file", {"path": "notes.md", "content": "# Notes\n"})])
    iota.model.reply("I could not write it.")
    command = f"{IOTA} run coder -m 'write notes' 2>stderr.txt >/dev/null; cat stderr.txt; echo done"
    screen = terminal.start(["sh", "-c", command], cols=110, rows=40, env=iota.env(), cwd=iota.cwd)
    screen.wait_for("done")
    shown = screen._tmux("capture-pane", "-p", "-S", "-", "-t", "=test:")  # with what scrolled away
    assert "Refused (a -m run cannot ask): write_file notes.md wants to modify files" in shown
    assert "  +# Notes" in shown
    assert not (iota.cwd / "notes.md").exists()
