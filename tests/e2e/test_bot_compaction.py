"""A bot's compaction end to end: the memory flush, the summary, the queued-message path, failures
that reach the host, and Ctrl+C — the real `iota` in tmux against the fake model server.

The bot's window is 32k, so it compacts at 16k; the fake server's usage figures cross that in a
couple of turns.
"""

from __future__ import annotations

import json
import time

import pytest

from iota import paths
from tests.e2e.conftest import IOTA, READY
from tests.support.fake_hosts import FakeHerdr
from tests.support.fake_model import Gate, tool_call
from tests.support.terminal import say, terminal  # noqa: F401  (the fixture)

BOT = "  coder:\n    mode: bot\n    model: m\n    context_window: 32k\n"
PAST = 17_000  # input tokens past the 16k threshold


@pytest.fixture
def bot(iota, terminal):
    iota.write_config(BOT)

    def start(env=None):
        screen = terminal.start([IOTA, "run", "coder"], cols=120, rows=40, env=iota.env(**(env or {})),
                                cwd=iota.cwd)
        screen.wait_for(READY)
        return screen

    return start


def records():
    pointer = json.loads((paths.bots_dir() / "coder" / "bot.json").read_text())
    log = paths.sessions_dir() / pointer["session"] / "messages.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()]


def tool_names(request) -> list[str]:
    return [tool["function"]["name"] for tool in request.body.get("tools", [])]


def last_user_text(request) -> str:
    return request.body["messages"][-1]["content"]


def test_flush_then_summary_then_the_conversation_goes_on(iota, bot):
    model = iota.model
    model.reply("Noted the repo.")
    model.reply("Second answer.", input_tokens=PAST)
    model.reply(tool_calls=[tool_call("remember", {"action": "add", "text": "Repo lives in /srv/proj",
                                                   "source": "user"})])            # the flush
    model.reply("Saved.")
    model.reply("The user works in /srv/proj on port 8421.")                       # the summary
    model.reply("Third answer.")
    screen = bot()
    say(screen, "my repo is /srv/proj and the port is 8421", "Noted the repo.")
    say(screen, "second question", "Second answer.")
    screen.wait_for("Context is nearly full — saving memory before compacting")
    screen.wait_for("Context compacted → ")
    flush = model.requests[2]
    assert tool_names(flush) == ["remember"]
    assert last_user_text(flush).startswith("The conversation is about to be compacted")
    summary = last_user_text(model.requests[4])
    assert summary.startswith("You are compressing a conversation")
    assert "The memory flush just before this compaction saved 1 line." in summary
    assert "--- LONG-TERM MEMORY (already saved separately; do not repeat these) ---" in summary
    assert "Repo lives in /srv/proj" in summary
    assert "User: my repo is /srv/proj and the port is 8421" in summary
    assert "Compacted without a memory flush" not in screen.capture()

    say(screen, "third question", "Third answer.")
    sent = [m for m in model.requests[5].body["messages"] if m["role"] != "system"]
    assert sent[0]["content"].startswith("[Earlier conversation summary]\nThe user works in /srv/proj")
    assert sent[0]["content"].endswith("———\n\nsecond question")
    assert sent[-1]["content"] == "third question"
    # the memory was re-read: the new line is in the system prompt now
    assert "Repo lives in /srv/proj" in model.requests[5].body["messages"][0]["content"]
    kinds = [r["role"] for r in records()]
    assert kinds.count("compaction") == 1 and kinds.count("user") >= 4  # every original record kept


def test_a_message_already_waiting_compacts_without_the_flush(iota, bot):
    model = iota.model
    gate = Gate()
    model.reply("First answer.")
    model.reply("Second answer, long.", input_tokens=PAST, gate=gate)
    model.reply("Summary of the first exchange.")                                  # no flush: the summary
    model.reply("Answer to the waiting message.")
    screen = bot()
    say(screen, "first question", "First answer.")
    screen.type("second question")
    screen.send_keys("Enter")
    gate.release(1)
    screen.wait_for("Second")
    screen.type("waiting message")
    screen.send_keys("Enter")
    screen.wait_for("1 queued")
    gate.open()
    screen.wait_for("Answer to the waiting message.")
    screen.wait_for("⚠ Compacted without a memory flush")
    assert last_user_text(model.requests[2]).startswith("You are compressing a conversation")
    assert "remember" not in tool_names(model.requests[2])
    assert last_user_text(model.requests[3]) == "waiting message"
    marker = [r for r in records() if r["role"] == "compaction"][0]
    assert marker["flush_skipped"] is True


def test_two_failed_summaries_reach_herdr_and_the_terminal(iota, bot, tmp_path):
    socket = tmp_path / "herdr.sock"
    herdr = FakeHerdr(socket)
    model = iota.model
    model.reply("One.")
    model.reply("Two.", input_tokens=PAST)
    model.reply("Nothing new to save.")                                            # the flush
    model.fail(400, message="summary refused")                                     # first failure
    model.fail(400, message="summary refused again")                               # retried before the next send
    model.reply("Three.")
    with herdr.serving_in_thread():
        screen = bot(env={"HERDR_ENV": "1", "HERDR_PANE_ID": "p1", "HERDR_SOCKET_PATH": str(socket)})
        say(screen, "one", "One.")
        say(screen, "two", "Two.")
        screen.wait_for("Compaction failed: ")
        say(screen, "three", "Three.")
        deadline = time.monotonic() + 10
        while not any(r.method == "notification.show" for r in herdr.requests) and time.monotonic() < deadline:
            time.sleep(0.05)
        alarms = [r for r in herdr.requests if r.method == "notification.show"]
        assert len(alarms) == 1
        assert alarms[0].params["title"] == "bot coder"
        assert alarms[0].params["body"].startswith("compaction failing — ")
        assert "summary refused again" in alarms[0].params["body"]
    assert last_user_text(model.requests[4]).startswith("You are compressing a conversation")
    assert last_user_text(model.requests[5]) == "three"


def test_ctrl_c_during_a_slow_flush_still_compacts(iota, bot):
    model = iota.model
    gate = Gate()
    model.reply("One.")
    model.reply("Two.", input_tokens=PAST)
    model.reply("I will save things slowly", gate=gate)                             # the flush, held
    model.reply("Summary after an interrupted flush.")
    screen = bot()
    say(screen, "one", "One.")
    say(screen, "two", "Two.")
    screen.wait_for("Context is nearly full — saving memory before compacting")
    gate.release(1)
    screen.wait_for("I will")
    screen.send_keys("C-c")
    screen.wait_for("⚠ Compacted without a memory flush")
    screen.wait_for("Context compacted → ")
    marker = [r for r in records() if r["role"] == "compaction"][0]
    assert marker["flush_skipped"] is True
    summary = last_user_text(model.requests[3])
    assert summary.startswith("You are compressing a conversation")
    assert summary.split("\n")[0].startswith("You are compressing") and \
        "Nothing was saved to long-term memory this time" in summary


def test_ctrl_c_during_a_slow_summary_fails_and_is_retried_before_the_next_message(iota, bot):
    model = iota.model
    gate = Gate()
    model.reply("One.")
    model.reply("Two.", input_tokens=PAST)
    model.reply("Nothing to save.")                                                # the flush
    model.reply("A summary that never finishes", gate=gate)                        # the summary, held
    model.reply("The retried summary.")
    model.reply("Three.")
    screen = bot()
    say(screen, "one", "One.")
    say(screen, "two", "Two.")
    screen.wait_for("Compacting context")
    model.wait_for_request(4)
    screen.send_keys("C-c")
    screen.wait_for("Compaction failed: interrupted")
    say(screen, "three", "Three.")
    screen.wait_for("Context compacted → ")
    assert last_user_text(model.requests[4]).startswith("You are compressing a conversation")
    assert last_user_text(model.requests[5]) == "three"
    assert "Compacted without a memory flush" not in screen.capture()  # the flush had run


def test_compact_command_in_a_bot(iota, bot):
    model = iota.model
    model.reply("One.")
    model.reply("Two.")
    model.reply("Summary.")
    screen = bot()
    say(screen, "one", "One.")
    say(screen, "two", "Two.")
    screen.type("/compact")
    screen.send_keys("Enter")
    screen.wait_for("Context compacted → ")
    assert "Compacted without a memory flush" not in screen.capture()
    marker = [r for r in records() if r["role"] == "compaction"][0]
    assert marker["flush_skipped"] is True


def test_quitting_mid_flush_owes_the_compaction_at_the_next_start(iota, bot):
    model = iota.model
    gate = Gate()
    model.reply("One.")
    model.reply("Two.", input_tokens=PAST)
    model.reply("slow flush", gate=gate)
    model.hang()                                                                   # the summary, in flight
    screen = bot()
    say(screen, "one", "One.")
    say(screen, "two", "Two.")
    model.wait_for_request(3)
    screen.send_keys("C-c")          # interrupts the flush …
    model.wait_for_request(4)
    screen.send_keys("C-d")          # … and leaves while the summary is asked for
    screen.wait_for_exit()
    before = records()
    assert not any(r["role"] == "compaction" for r in before)
    assert [r["content"] for r in before if r["role"] == "user" and not r.get("notice")] == ["one", "two"]
    model.reply("Saved nothing.")                                                  # the flush, again
    model.reply("Summary at the next start.")
    screen = bot()
    screen.wait_for("Context compacted → ")
    assert any(r["role"] == "compaction" for r in records())
