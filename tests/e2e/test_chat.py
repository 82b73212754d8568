"""The interactive chat end to end: the real `iota` in a real terminal (tmux), against the fake
model server."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path

import pytest

from iota import paths
from tests.e2e.conftest import IOTA, READY
from tests.support.fake_model import Gate, tool_call
from tests.support.logs import conversation_records
from tests.support.terminal import terminal  # noqa: F401  (the fixture)

AGENT = "  coder:\n    mode: agent\n    model: m\n    tools:\n      code:\n      shell: {sandbox: auto}\n"


@pytest.fixture
def chat(iota, terminal):
    """Start `iota run <args>` in a terminal; the card is up when it returns."""

    def start(*args: str, cols: int = 110, rows: int = 32):
        screen = terminal.start([IOTA, *args], cols=cols, rows=rows, env=iota.env(), cwd=iota.cwd)
        screen.wait_for(READY)
        return screen

    start.terminals = terminal
    return start


def saved_records(project=None, timeout: float = 5.0):
    """Every conversation record of the one saved session, the turn bookkeeping left out (waiting
    for it: a turn is saved just after its reply is drawn)."""
    root = paths.project_sessions_dir(project) if project else paths.sessions_dir()
    deadline = time.monotonic() + timeout
    while True:
        bundles = [p for p in root.iterdir() if (p / "meta.json").exists()] if root.exists() else []
        if bundles or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert len(bundles) == 1, bundles
    lines = (bundles[0] / "messages.jsonl").read_text().splitlines()
    return bundles[0], conversation_records([json.loads(line) for line in lines])


def test_send_a_message_and_see_the_reply(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("Hello from the fake model.")
    screen = chat("run", "chat")
    screen.wait_for(re.compile(r"chat · session [0-9a-z]{12}"))
    screen.type("hi there")
    screen.send_keys("Enter")
    screen.wait_for("Hello from the fake model.")
    assert "hi there" in screen.capture()
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    _, records = saved_records()
    assert [(r["role"], r.get("content")) for r in records] == [
        ("user", "hi there"), ("assistant", "Hello from the fake model.")]


def test_ctrl_c_keeps_a_slow_reply_as_interrupted_and_the_chat_stays_open(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    gate = Gate()
    iota.model.reply("first part of a long answer", pieces=3, gate=gate)
    iota.model.reply("still here")
    screen = chat("run", "chat")
    screen.type("tell me a story")
    screen.send_keys("Enter")
    gate.release(1)
    screen.wait_for("first")
    screen.send_keys("C-c")
    screen.wait_for("interrupted")
    assert iota.model.requests[0].wait_done()
    assert iota.model.requests[0].disconnected
    screen.type("are you there?")
    screen.send_keys("Enter")
    screen.wait_for("still here")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    _, records = saved_records()
    interrupted = records[1]
    assert interrupted["role"] == "assistant" and interrupted["interrupted"] is True
    assert interrupted["content"].startswith("first")
    # the next request carried the partial reply
    sent = iota.model.requests[1].body["messages"]
    assert any(m["role"] == "assistant" and m["content"].startswith("first") for m in sent)


def test_ctrl_c_cancels_a_long_shell_command(iota, chat):
    (iota.cwd / ".git").mkdir()
    iota.write_config("  coder:\n    mode: agent\n    model: m\n    tools:\n      shell: {sandbox: auto}\n")
    iota.model.reply(tool_calls=[tool_call("shell", {"command": "echo started; sleep 300"})])
    screen = chat("run", "coder")
    screen.type("run it")
    screen.send_keys("Enter")
    screen.wait_for("shell")
    screen.wait_for(re.compile(r"shell echo started; sleep 300 · \d+s|Running|shell"))
    screen.send_keys("C-c")
    screen.wait_for("interrupted")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    _, records = saved_records(iota.cwd)
    assert records[-1]["role"] == "tool" and records[-1]["is_error"] is True


@pytest.mark.parametrize("choice, written", [("Enter", True), ("Escape", False)])
def test_approve_or_deny_a_write(iota, chat, choice, written):
    iota.write_config("  coder:\n    mode: agent\n    model: m\n    tools:\n      code:\n")
    iota.model.reply(tool_calls=[tool_call("write_file", {"path": "notes.md", "content": "# Notes\n"})])
    iota.model.reply("Finished.")
    screen = chat("run", "coder")
    screen.type("write notes")
    screen.send_keys("Enter")
    screen.wait_for("write_file notes.md wants to modify files — allow?")
    screen.send_keys(choice)
    screen.wait_for("Finished.")
    assert (iota.cwd / "notes.md").exists() is written
    tool_result = [m for m in iota.model.requests[1].body["messages"] if m["role"] == "tool"][0]
    if not written:
        assert tool_result["content"] == "The user declined this call."


def test_a_message_sent_while_a_reply_streams_is_queued(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    gate = Gate()
    iota.model.reply("one two three", pieces=3, gate=gate)
    iota.model.reply("the second answer")
    screen = chat("run", "chat")
    screen.type("first question")
    screen.send_keys("Enter")
    gate.release(1)
    screen.wait_for("one")
    screen.type("second question")
    screen.send_keys("Enter")
    screen.wait_for("1 queued")
    gate.open()
    screen.wait_for("the second answer")
    sent = iota.model.requests[1].body["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"] == ["first question", "second question"]


def test_ctrl_c_twice_at_an_idle_prompt_leaves_with_130(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    screen = chat("run", "chat")
    screen.send_keys("C-c")
    screen.wait_for("Press Ctrl+C again to exit")
    screen.send_keys("C-c")
    assert screen.wait_for_exit() == 130


def test_quit_command_leaves_with_0(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    screen = chat("run", "chat", "--no-save")
    screen.wait_for("not saved · /save keeps it")
    screen.type("/quit")
    screen.send_keys("Enter")
    assert screen.wait_for_exit() == 0
    assert not paths.sessions_dir().exists()


def test_resume_shows_the_history_and_continues_the_session(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("Nice to meet you, Ana.")
    screen = chat("run", "chat")
    screen.type("my name is Ana")
    screen.send_keys("Enter")
    screen.wait_for("Nice to meet you, Ana.")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    bundle, _ = saved_records()

    iota.model.reply("You are Ana.")
    screen = chat("resume", bundle.name[:6])
    screen.wait_for(f"resumed {bundle.name}")
    screen.wait_for(f"Resumed session {bundle.name} (2 messages)")
    assert "my name is Ana" in screen.capture() and "Nice to meet you, Ana." in screen.capture()
    screen.type("who am I?")
    screen.send_keys("Enter")
    screen.wait_for("You are Ana.")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    sent = iota.model.requests[1].body["messages"]
    assert [m["content"] for m in sent if m["role"] != "system"] == [
        "my name is Ana", "Nice to meet you, Ana.", "who am I?"]
    _, records = saved_records()
    assert len(records) == 4


def test_a_second_process_on_the_same_session_is_refused(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("ok")
    screen = chat("run", "chat")
    screen.type("hello")
    screen.send_keys("Enter")
    screen.wait_for("ok")
    bundle, _ = saved_records()
    result = iota("resume", bundle.name)
    # without a terminal the refusal comes first; the lock is what a second terminal would hit
    second = iota("resume", bundle.name, "-m", "again")
    assert second.returncode == 1
    pid = (bundle / ".lock").read_text()
    assert second.stderr == f"Error: session {bundle.name} is open in another iota process (pid {pid})\n"
    assert result.returncode == 1


def test_past_the_threshold_the_chat_offers_to_compact_first(iota, chat):
    iota.write_config("  chat: {model: m}\n")  # a 200k window: the offer comes at 184k
    iota.model.reply("First answer about /srv/app/config.toml.")
    iota.model.reply("Second answer.", input_tokens=190_000)
    iota.model.reply("Earlier: the user asked about /srv/app/config.toml.")  # the summary
    iota.model.reply("Third answer.")
    screen = chat("run", "chat")
    for text, answer in (("first question about /srv/app/config.toml", "First answer"),
                         ("second question", "Second answer.")):
        screen.type(text)
        screen.send_keys("Enter")
        screen.wait_for(answer)
    screen.type("third question")
    screen.send_keys("Enter")
    screen.wait_for("— compact before sending?")
    screen.send_keys("Enter")  # Compact now
    screen.wait_for("Third answer.")
    screen.wait_for("Context compacted → ")
    summary_request = iota.model.requests[2].body
    assert "tools" not in summary_request or not summary_request["tools"]
    text = summary_request["messages"][-1]["content"]
    assert text.startswith("You are compressing a conversation")
    assert "User: first question about /srv/app/config.toml" in text and "second question" not in text
    sent = [m for m in iota.model.requests[3].body["messages"] if m["role"] != "system"]
    assert sent[0]["content"].startswith("[Earlier conversation summary]\nEarlier: the user asked about")
    assert sent[0]["content"].endswith("———\n\nsecond question")
    assert [m["content"] for m in sent[1:]] == ["Second answer.", "third question"]
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    _, records = saved_records()
    marker = [r for r in records if r["role"] == "compaction"]
    assert len(marker) == 1 and marker[0]["compacted_through"] == 2


def test_not_now_sends_without_compacting(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("One.", input_tokens=190_000)
    iota.model.reply("Two.")
    screen = chat("run", "chat")
    screen.type("first")
    screen.send_keys("Enter")
    screen.wait_for("One.")
    screen.type("second")
    screen.send_keys("Enter")
    screen.wait_for("— compact before sending?")
    screen.send_keys("Down", "Enter")  # Not now
    screen.wait_for("Two.")
    assert len(iota.model.requests) == 2


def test_compact_command(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("A.")
    iota.model.reply("B.")
    screen = chat("run", "chat")
    screen.type("/compact")
    screen.send_keys("Enter")
    screen.wait_for("Nothing to compact yet.")
    for text, answer in (("one", "A."), ("two", "B.")):
        screen.type(text)
        screen.send_keys("Enter")
        screen.wait_for(answer)
    iota.model.reply("They said one.")
    screen.type("/compact keep the numbers")
    screen.send_keys("Enter")
    screen.wait_for("Context compacted → ")
    request = iota.model.requests[2].body["messages"][-1]["content"]
    assert "Extra guidance from the user — emphasize this: keep the numbers" in request


def make_chat_session(title: str, user: str, reply: str):
    from iota.messages import ASSISTANT, USER, Message
    from iota.sessions.bundle import Session

    with Session.create(paths.sessions_dir(), provider="fake", model="fake-model", agent="chat", title=title) as s:
        s.append([Message(USER, content=user), Message(ASSISTANT, content=reply)])
        return s.id


def age(session_id: str, hours: int) -> None:
    """Make a session look last used `hours` ago."""
    from datetime import datetime, timedelta

    from iota.sessions.bundle import read_meta, render_meta, write_atomically

    bundle = paths.sessions_dir() / session_id
    meta = read_meta(bundle)
    meta["updated_at"] = (datetime.now().astimezone() - timedelta(hours=hours)).replace(microsecond=0).isoformat()
    write_atomically(bundle / "meta.json", render_meta(meta))


def test_resume_without_an_id_opens_a_picker(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    age(make_chat_session("Older", "old question", "old answer"), 5)
    newest = make_chat_session("Newest", "new question", "new answer")
    screen = terminal_start(iota, chat, "resume")
    screen.wait_for("Resume which session?")
    screen.wait_for("Newest · fake-model")
    screen.send_keys("Enter")
    screen.wait_for(f"resumed {newest}")
    screen.wait_for("new answer")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0


def test_resume_picker_cancelled(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    make_chat_session("Only", "q", "a")
    screen = terminal_start(iota, chat, "resume")
    screen.wait_for("Resume which session?")
    screen.send_keys("Escape")
    assert screen.wait_for_exit() == 1


def terminal_start(iota, chat, *args):
    """Start iota without waiting for the card (a picker comes first)."""
    return chat.terminals.start([IOTA, *args], cols=110, rows=32, env=iota.env(), cwd=iota.cwd)


def test_session_command_resumes_and_deletes(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    first = make_chat_session("First", "first question", "first answer")
    second = make_chat_session("Second", "second question", "second answer")
    iota.model.reply("continuing")
    screen = chat("run", "chat")
    screen.type("/session")
    screen.send_keys("Enter")
    screen.wait_for("Resume")
    screen.send_keys("Down", "Enter")  # Delete
    screen.wait_for("Delete which session?")
    screen.send_keys("Enter")
    asked = re.search(r"Delete session ([0-9a-z]{12}) \((First|Second)\)\? It cannot be undone.",
                      screen.wait_for("It cannot be undone."))
    assert (paths.sessions_dir() / asked.group(1)).exists()  # nothing is deleted before the yes
    screen.send_keys("Enter")  # Delete
    deleted = re.search(r"Deleted session ([0-9a-z]{12})", screen.wait_for("Deleted session")).group(1)
    assert deleted == asked.group(1)
    assert deleted in (first, second)
    assert not (paths.sessions_dir() / deleted).exists()
    kept, words = (second, "second") if deleted == first else (first, "first")
    screen.type("/session")
    screen.send_keys("Enter")
    screen.wait_for("Resume")
    screen.send_keys("Enter")
    screen.wait_for("Resume which session?")
    screen.send_keys("Enter")
    screen.wait_for(f"Resumed session {kept} (2 messages)")
    screen.type("go on")
    screen.send_keys("Enter")
    screen.wait_for("continuing")
    sent = [m["content"] for m in iota.model.requests[0].body["messages"] if m["role"] != "system"]
    assert sent == [f"{words} question", f"{words} answer", "go on"]


def test_model_command_changes_model_and_window_for_this_process(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    (iota.home / ".iota.yaml").write_text((iota.home / ".iota.yaml").read_text().replace(
        "models:\n", "models:\n  other: {provider: fake, id: other-model}\n"))
    iota.model.reply("from other")
    screen = chat("run", "chat")
    screen.type("/model")
    screen.send_keys("Enter")
    screen.wait_for("Change what?")
    screen.send_keys("Down", "Enter")      # Context window
    screen.wait_for("❯ 1. 32k")            # its own list (the first one names "Context window" too)
    screen.send_keys("Enter")              # 32k
    screen.wait_for("Model: m (32k window) — for this process")
    screen.type("/model other")
    screen.send_keys("Enter")
    # A window set by hand stays when the new model's config names none (iota.config.params).
    screen.wait_for("Model: other (32k window) — for this process")
    screen.type("hi")
    screen.send_keys("Enter")
    screen.wait_for("from other")
    assert iota.model.requests[0].body["model"] == "other-model"
    assert "other" not in (iota.home / ".iota.yaml").read_text().split("agents:")[1]  # the config is unchanged


def test_a_torn_log_is_repaired_on_resume_and_the_card_says_so(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    session_id = make_chat_session("Torn", "question", "answer")
    log = paths.sessions_dir() / session_id / "messages.jsonl"
    with open(log, "a") as file:
        file.write('{"role":"user","content":"half a rec')
    iota.model.reply("fine")
    screen = chat("resume", session_id)
    screen.wait_for("messages.jsonl")
    assert "torn" in screen.capture() or "cut" in screen.capture()
    screen.type("next")
    screen.send_keys("Enter")
    screen.wait_for("fine")
    screen.send_keys("C-d")  # the turn is saved just after its reply is drawn: leave, then read
    assert screen.wait_for_exit() == 0
    lines = log.read_text().splitlines()
    assert all(json.loads(line) for line in lines)  # nothing glued onto the torn stub
    assert [r["content"] for r in conversation_records([json.loads(line) for line in lines])] == [
        "question", "answer", "next", "fine"]


def test_without_a_key_the_chat_says_what_to_set(iota, chat):
    (iota.home / ".iota.yaml").write_text(
        "providers:\n  openai: {type: openai}\nmodels:\n  m: openai:x\nagents:\n  chat: {model: m}\n")
    screen = chat.terminals.start([IOTA, "run", "chat"], cols=120, rows=10, env=iota.env(), cwd=iota.cwd)
    screen.wait_for("Error: API key is required: set OPENAI_API_KEY or providers.openai.key in your config")
    assert screen.wait_for_exit() == 1
    assert not paths.sessions_dir().exists()


def iota_pid(screen) -> int:
    """The pid of the `iota` the pane runs (the pane's own process is the shell around it)."""
    shell = int(screen._tmux("display-message", "-p", "-t", "=test:", "#{pane_pid}").strip())
    for task in Path(f"/proc/{shell}/task").iterdir():
        children = (task / "children").read_text().split()
        if children:
            return int(children[0])
    raise AssertionError("no iota process under the pane")


def test_sigterm_while_the_chat_is_still_starting_restores_the_terminal(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    make_chat_session("Only", "q", "a")
    screen = terminal_start(iota, chat, "resume")
    screen.wait_for("Resume which session?")  # the picker is part of the start
    os.kill(iota_pid(screen), signal.SIGTERM)
    assert screen.wait_for_exit() == 130
    assert "Resume which session?" not in screen.capture()  # the app's screen is gone


def test_sigterm_in_a_running_chat_saves_the_turn_and_exits_130(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    gate = Gate()
    iota.model.reply("a partial answer that goes on", pieces=3, gate=gate)
    screen = chat("run", "chat")
    screen.type("go")
    screen.send_keys("Enter")
    gate.release(1)
    screen.wait_for("a partial")
    os.kill(iota_pid(screen), signal.SIGTERM)
    assert screen.wait_for_exit() == 130
    _, records = saved_records()
    assert records[-1]["interrupted"] is True and records[-1]["content"].startswith("a partial")


def test_an_agents_md_edit_reaches_the_next_request_with_a_notice(iota, chat):
    (iota.cwd / ".git").mkdir()
    (iota.cwd / "AGENTS.md").write_text("Use tabs.\n")
    iota.write_config("  coder:\n    mode: agent\n    model: m\n")
    iota.model.reply("Answer one.")
    iota.model.reply("Answer two.")
    screen = chat("run", "coder")
    screen.type("first")
    screen.send_keys("Enter")
    screen.wait_for("Answer one.")
    (iota.cwd / "AGENTS.md").write_text("Use spaces, four of them.\n")
    screen.type("second")
    screen.send_keys("Enter")
    screen.wait_for("AGENTS.md reloaded")
    screen.wait_for("Answer two.")
    first, second = (r.body["messages"][0]["content"] for r in iota.model.requests)
    assert first.endswith("Use tabs.") and second.endswith("Use spaces, four of them.")
