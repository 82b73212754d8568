"""The journal, recall, /rewind and `iota search` end to end: the real `iota` (in tmux for the
chat) against the fake model server, with HOME at a tmp dir shared with the test."""

from __future__ import annotations

import json
import re
import shutil
import time

import pytest

from iota import paths
from iota.bots.bot import open_bot
from iota.bots.journal import CONTEXT_HEADER, Journal, bot_sources
from iota.config.settings import Config, resolve_model
from iota.config.entries import AgentConfig, ModelConfig, ProviderConfig
from iota.sessions.bundle import Session
from tests.e2e.conftest import IOTA, READY
from tests.support.fake_model import tool_call
from tests.support.terminal import say, terminal  # noqa: F401  (the fixture)
from tests.support.turns import Call, write_turn

BOT = "  coder:\n    mode: bot\n    model: m\n    tools:\n      code: {auto_write: true}\n"


@pytest.fixture
def bot(iota, terminal):
    iota.write_config(BOT)

    def start():
        screen = terminal.start([IOTA, "run", "coder"], cols=120, rows=40, env=iota.env(), cwd=iota.cwd)
        screen.wait_for(READY)
        return screen

    return start


def bot_log():
    pointer = json.loads((paths.bots_dir() / "coder" / "bot.json").read_text())
    return paths.sessions_dir() / pointer["session"] / "messages.jsonl"


def journal_entries() -> list[str]:
    journal = Journal.open(paths.bots_dir() / "coder", bot_sources(paths.bots_dir() / "coder"))
    try:
        return [stored.entry.asked for stored in journal.entries(order="e.id")]
    finally:
        journal.close()


def wait_until(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.05)


def test_a_bot_recalls_what_a_compaction_took_and_is_given_its_journal_after_a_restart(iota, bot):
    model = iota.model
    model.reply(tool_calls=[tool_call("write_file", {"path": "deploy.md", "content": "token vermilion-42"})])
    model.reply("Saved the deploy notes.")
    model.reply("Second answer.")
    model.reply("They saved deploy notes and asked a second question.")             # the summary
    screen = bot()
    say(screen, "save the deploy notes", "Saved the deploy notes.")
    say(screen, "second question", "Second answer.")
    screen.type("/compact")
    screen.send_keys("Enter")
    screen.wait_for("Context compacted → ")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    assert journal_entries() == ["save the deploy notes", "second question"]

    model.reply(tool_calls=[tool_call("recall", {"action": "search", "query": "vermilion"})])
    model.reply("It was in deploy.md: vermilion-42.")
    screen = bot()
    say(screen, "what was the token we wrote last time?", "It was in deploy.md: vermilion-42.")
    first = model.requests[4].body
    attached = [m["content"] for m in first["messages"] if m["role"] == "user" and
                m["content"].startswith(CONTEXT_HEADER)]
    assert len(attached) == 1 and 'asked: "save the deploy notes"' in attached[0]
    assert "wrote: deploy.md" in attached[0]
    assert "recall" in {tool["function"]["name"] for tool in first["tools"]}
    result = [m["content"] for m in model.requests[5].body["messages"] if m["role"] == "tool"][-1]
    # the word was only in the write_file call, which the compaction took out of the model's view
    assert result.startswith('Matches for "vermilion"') and "your reply" in result
    assert '"content": "token **vermilion**-42"' in result
    wait_until(lambda: len(journal_entries()) == 3)

    found = iota("search", "vermilion")
    assert found.returncode == 0, found.stderr
    assert "coder (bot)" in found.stdout and "iota run coder" in found.stdout
    assert "**vermilion**" in found.stdout


def test_rewind_in_the_terminal_gives_the_message_back_and_the_bot_forgets_the_undone_turn(iota, bot):
    model = iota.model
    model.reply("Did the first.")
    model.reply("Did the second.")
    model.reply("Did it differently.")
    screen = bot()
    say(screen, "do the first thing", "Did the first.")
    say(screen, "do the second thing", "Did the second.")
    wait_until(lambda: len(journal_entries()) == 2)
    screen.type("/rewind")
    screen.send_keys("Enter")
    screen.wait_for("Rewind to before which message? Files are not rolled back.")
    screen.wait_for("1. do the second thing")
    screen.send_keys("1")
    screen.wait_for("Rewound to before “do the second thing”: the message is back to edit; files were not rolled back")
    screen.wait_for(re.compile(r"❯ do the second thing\s*$", re.MULTILINE))
    wait_until(lambda: journal_entries() == ["do the first thing"])
    screen.send_keys("C-u")
    say(screen, "do it differently", "Did it differently.")
    sent = [(m["role"], m["content"]) for m in model.requests[2].body["messages"] if m["role"] != "system"]
    assert sent == [("user", "do the first thing"), ("assistant", "Did the first."), ("user", "do it differently")]
    records = [json.loads(line) for line in bot_log().read_text().splitlines()]
    assert [r["content"] for r in records if r["role"] == "user"] == ["do the first thing", "do the second thing",
                                                                      "do it differently"]  # nothing deleted
    assert [r["role"] for r in records].count("rewind") == 1


def make_bot(name: str, project) -> None:
    entry = AgentConfig(name=name, mode="bot", model="m")
    config = Config(providers={"local": ProviderConfig(name="local", type="openai")},
                    models={"m": ModelConfig(name="m", provider="local", id="m-1")}, agents={name: entry})
    start = open_bot(name, model=resolve_model(config, entry), project_root=project)
    write_turn(start.session, "the bot heard about the quokka plan", reply="quokka plan noted")
    journal = Journal.open(start.dir, bot_sources(start.dir))
    journal.catch_up()
    journal.close()
    start.close()


def test_iota_search_finds_every_kind_of_session_newest_first(iota, tmp_path):
    chat = Session.create(paths.sessions_dir(), provider="fake", model="m", agent="default")
    write_turn(chat, "a chat about the quokka", calls=[Call("shell", {"command": "grep quokka zoo.txt"})])
    chat.close()
    time.sleep(1.1)  # each later session is dated a second later at least
    agent = Session.create(paths.project_sessions_dir(iota.cwd), provider="fake", model="m", agent="helper")
    write_turn(agent, "an agent session on quokka habitats")
    agent.close()
    time.sleep(1.1)
    make_bot("coder", iota.cwd)

    found = iota("search", "quokka")
    assert found.returncode == 0, found.stderr
    heads = [line for line in found.stdout.splitlines() if re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d  ", line)]
    # the bot's message and reply, the agent's message, the chat's call and message: newest first
    assert [line.split()[3] for line in heads] == ["coder", "coder", "helper", "default", "default"]
    assert f"iota resume {chat.id}" in found.stdout and f"iota resume {agent.id}" in found.stdout
    assert "iota run coder" in found.stdout
    assert "a chat about the **quokka**" in found.stdout
    order = [found.stdout.index(marker) for marker in ("iota run coder", f"iota resume {agent.id}",
                                                        f"iota resume {chat.id}")]
    assert order == sorted(order)  # newest first

    only = iota("search", "quokka", "--agent", "helper")
    assert agent.id in only.stdout and chat.id not in only.stdout and "coder" not in only.stdout
    assert iota("search", "quokka", "--since", "1h").stdout.count("iota ") >= 3
    none = iota("search", "wombat")
    assert none.stdout.strip() == 'No matches for "wombat".'
    bad = iota("search", "quokka", "--since", "yesterday")
    assert bad.returncode == 1
    assert bad.stderr.strip() == 'Error: --since wants a time like 30m, 12h, 7d or 2w, or a date (2026-10-01), got "yesterday"'
    # a second search reads only what changed; a deleted chat is gone from it
    shutil.rmtree(paths.sessions_dir() / chat.id)
    assert chat.id not in iota("search", "quokka").stdout


def test_bots_reindex_rebuilds_the_journal_from_the_log(iota):
    make_bot("coder", iota.cwd)
    journal = paths.bots_dir() / "coder" / "journal.sqlite"
    journal.write_bytes(b"garbage")
    done = iota("bots", "reindex", "coder")
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"Rebuilt bot coder's journal from its logs: 1 entries, 2 records indexed in \d+\.\d s\n",
                        done.stdout)
    assert journal_entries() == ["the bot heard about the quokka plan"]
    missing = iota("bots", "reindex", "nobody")
    assert missing.returncode == 1 and missing.stderr.startswith("Error: no bot named nobody: ")


def test_journal_false_keeps_no_journal_and_gives_no_recall_but_the_conversation_resumes(iota, terminal):
    iota.write_config("  coder:\n    mode: bot\n    model: m\n    journal: false\n")
    iota.model.reply("First.")
    iota.model.reply("Second.")

    def start():
        screen = terminal.start([IOTA, "run", "coder"], cols=120, rows=40, env=iota.env(), cwd=iota.cwd)
        screen.wait_for(READY)
        return screen

    screen = start()
    say(screen, "hello", "First.")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    screen = start()
    say(screen, "again", "Second.")
    request = iota.model.requests[1].body
    assert "recall" not in {tool["function"]["name"] for tool in request.get("tools", [])}
    assert "<journal>" not in request["messages"][0]["content"]
    said = [m["content"] for m in request["messages"] if m["role"] == "user"]
    assert "hello" in said and said[-1] == "again"  # the conversation resumed
    assert not (paths.bots_dir() / "coder" / "journal.sqlite").exists()


def test_a_journal_locked_by_another_process_never_ends_the_chat_and_is_said_once(iota, bot):
    # Another process holds the journal's write lock for the whole run: the start is not held
    # up, every reply arrives, the trouble is said once, and once the lock goes the journal
    # catches up with every turn.
    import sqlite3
    screen = bot()
    iota.model.reply("answer 0")
    screen.type("hello 0")
    screen.send_keys("Enter")
    screen.wait_for("answer 0")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    holder = sqlite3.connect(paths.bots_dir() / "coder" / "journal.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        screen = bot()
        assert time.monotonic() - started < 5
        for n in range(1, 5):
            iota.model.reply(f"answer {n}")
            screen.type(f"hello {n}")
            screen.send_keys("Enter")
            screen.wait_for(f"answer {n}")
        screen.wait_for("Journal: ")
        iota.model.reply("answer 5")
        screen.type("hello 5")
        screen.send_keys("Enter")
        screen.wait_for("answer 5")
        assert screen.capture().count("Journal: ") == 1
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    iota.model.reply("answer 6")
    screen.type("hello 6")
    screen.send_keys("Enter")
    screen.wait_for("answer 6")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    assert screen.capture().count("Journal: ") == 1
    assert journal_entries() == [f"hello {n}" for n in range(7)]
