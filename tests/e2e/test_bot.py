"""Bot mode end to end: the real `iota` in tmux against the fake model server."""

from __future__ import annotations

import datetime
import json
import re

import pytest

from iota import paths
from tests.e2e.conftest import IOTA, READY
from tests.support.fake_model import tool_call
from tests.support.terminal import terminal  # noqa: F401  (the fixture)

BOT = "  coder:\n    mode: bot\n    model: m\n    tools:\n      code:\n"
TODAY = datetime.date.today().isoformat()


@pytest.fixture
def bot(iota, terminal):
    """Start `iota run coder` in `cwd` (default: the project); the card is up when it returns."""
    iota.write_config(BOT)

    def start(*args: str, cwd=None):
        screen = terminal.start([IOTA, "run", "coder", *args], cols=120, rows=36, env=iota.env(),
                                cwd=cwd or iota.cwd)
        screen.wait_for(READY)
        return screen

    start.terminals = terminal
    return start


def bot_session_dir():
    pointer = json.loads((paths.bots_dir() / "coder" / "bot.json").read_text())
    return paths.sessions_dir() / pointer["session"]


def records():
    return [json.loads(line) for line in (bot_session_dir() / "messages.jsonl").read_text().splitlines()]


def system_prompt(request) -> str:
    return request.body["messages"][0]["content"]


def test_first_start_remember_quit_and_come_back(iota, bot):
    screen = bot()
    screen.wait_for(re.compile(r"bot · session [0-9a-z]{12}"))
    session_dir = bot_session_dir()
    assert (session_dir / "meta.json").exists()
    assert session_dir.name in iota("list", "sessions").stdout
    memory = paths.bots_dir() / "coder" / "MEMORY.md"
    assert memory.read_text().startswith(f"---\nbot: coder\nupdated: {TODAY}\n---\n")

    iota.model.reply(tool_calls=[tool_call("remember", {"action": "add", "text": "Prefers tabs over spaces",
                                                         "source": "user"})])
    iota.model.reply("Noted: tabs.")
    screen.type("I prefer tabs over spaces")
    screen.send_keys("Enter")
    screen.wait_for("Noted: tabs.")
    line = f"- [user] Prefers tabs over spaces ({TODAY})"
    screen.wait_for(f"memory: MEMORY.md ## User +1 line: [user] Prefers tabs over spaces ({TODAY})")
    assert line in memory.read_text()
    assert (paths.bots_dir() / "coder" / "MEMORY.md.prev").exists()
    # the bot's tools: remember, needing no approval, and no approval prompt was shown
    assert "remember" in {t["function"]["name"] for t in iota.model.requests[0].body["tools"]}
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    saved = records()
    assert any(r.get("notice") and r["content"].startswith("memory: MEMORY.md ## User +1 line") for r in saved)

    iota.model.reply("Welcome back.")
    screen = bot()
    screen.wait_for(f"bot · resumed {session_dir.name}")
    screen.wait_for("I prefer tabs over spaces")
    screen.type("hello again")
    screen.send_keys("Enter")
    screen.wait_for("Welcome back.")
    request = iota.model.requests[-1]
    prompt = system_prompt(request)
    assert '<memory bot="coder" project="project">' in prompt and line in prompt
    sent = [m for m in request.body["messages"] if m["role"] != "system"]
    assert sent[0]["content"] == "I prefer tabs over spaces"
    assert sent[-1]["content"] == "hello again"


def test_a_hand_edit_reaches_the_next_request(iota, bot):
    iota.model.reply("Answer one.")
    iota.model.reply("Answer two.")
    screen = bot()
    screen.type("first")
    screen.send_keys("Enter")
    screen.wait_for("Answer one.")
    memory = paths.bots_dir() / "coder" / "MEMORY.md"
    memory.write_text(memory.read_text() + "\n## User\n- Never rebase\n")
    screen.type("second")
    screen.send_keys("Enter")
    screen.wait_for("MEMORY.md reloaded")
    screen.wait_for("Answer two.")
    assert "- Never rebase" in system_prompt(iota.model.requests[1])
    assert "- Never rebase" not in system_prompt(iota.model.requests[0])


def test_another_project_gets_the_notice_and_a_scoped_memory(iota, bot, tmp_path):
    screen = bot()
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    memory = paths.bots_dir() / "coder" / "MEMORY.md"
    memory.write_text(memory.read_text() + "\n## Project: project\n- [inferred] Uses pytest (2026-11-01)\n"
                                           "- [inferred] CI runs on main (2026-11-01)\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    iota.model.reply("hi")
    screen = bot(cwd=elsewhere)
    screen.wait_for(re.compile(rf"Resumed in a different project: {re.escape(str(iota.cwd))} →\s+"
                               rf"{re.escape(str(elsewhere))}"))
    screen.type("hello")
    screen.send_keys("Enter")
    screen.wait_for("hi")
    prompt = system_prompt(iota.model.requests[0])
    assert "Uses pytest" not in prompt
    assert "Other projects: ## Project: project (2 lines)" in prompt
    notices = [m["content"] for m in iota.model.requests[0].body["messages"] if m["role"] == "user"]
    assert f"Resumed in a different project: {iota.cwd} → {elsewhere}" in notices
    meta = json.loads((bot_session_dir() / "meta.json").read_text())
    assert meta["cwd"] == str(elsewhere)


def test_a_second_process_is_refused_with_the_first_ones_pid(iota, bot):
    first = bot()
    pid = (paths.bots_dir() / "coder" / "lock").read_text()
    second = bot.terminals.start([IOTA, "run", "coder"], cols=120, rows=10, env=iota.env(), cwd=iota.cwd)
    second.wait_for(f"Error: bot coder is open in another iota process (pid {pid})")
    assert second.wait_for_exit() == 1
    first.send_keys("C-d")
    assert first.wait_for_exit() == 0


def test_session_is_not_a_command_in_a_bot(iota, bot):
    iota.model.reply("That is not a command here.")
    screen = bot()
    screen.type("/session")
    screen.send_keys("Enter")
    screen.wait_for("/session is not a command — send it as a message?")  # an unknown /word asks first
    screen.send_keys("Enter")  # Send it as a message
    screen.wait_for("That is not a command here.")
    assert iota.model.requests[0].body["messages"][-1]["content"] == "/session"


@pytest.mark.parametrize("agents, args, message", [
    (BOT, ["-m", "hi"], "bot agents are interactive-only for now; run iota run coder"),
    (BOT, ["--no-save"], "--no-save contradicts mode: bot"),
    (BOT.replace("mode: bot", "mode: bot\n    no_save: true"), [], "agents.coder: no_save contradicts mode: bot"),
    (BOT.replace("model: m", "model: m\n    context_window: 8.2k"), [],
     'bot "coder" needs a context window of at least 32k, this one is 8.2k (context_window: in its config)'),
])
def test_refusals_create_nothing(iota, agents, args, message):
    iota.write_config(agents)
    result = iota("run", "coder", *args)
    assert (result.returncode, result.stderr) == (1, f"Error: {message}\n")
    assert not paths.app_home().exists()


def test_a_model_that_cannot_report_usage_is_refused(iota):
    (iota.home / ".iota.yaml").write_text(
        f"providers:\n  fake: {{type: openai, url: '{iota.model.openai_url}', key: k}}\n"
        "models:\n  m: {provider: fake, id: x, reports_usage: false}\n" + "agents:\n" + BOT)
    result = iota("run", "coder")
    assert result.stderr == 'Error: bot "coder" needs a chat model that reports token usage and supports tools\n'
    assert not paths.app_home().exists()


def test_resume_of_a_bot_session_is_refused(iota, bot):
    screen = bot()
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    session_id = bot_session_dir().name
    result = iota("resume", session_id, "-m", "hi")
    assert result.stderr == f"Error: session {session_id} belongs to bot coder; run iota run coder\n"


def test_pickers_hide_the_bots_session(iota, bot):
    screen = bot()
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    iota.write_config(BOT + "  chat: {model: m}\n")
    result = iota("list", "sessions")
    assert bot_session_dir().name in result.stdout  # the list shows it
    picker = bot.terminals.start([IOTA, "resume"], cols=100, rows=10, env=iota.env(), cwd=iota.cwd)
    picker.wait_for("Error: no session to resume")
    assert picker.wait_for_exit() == 1


@pytest.mark.parametrize("damage", ["rm", "garbage", '{"session": 42}'])
def test_a_lost_or_damaged_bot_json_resumes_the_newest_session_with_a_notice(iota, bot, damage):
    iota.model.reply("Noted.")
    screen = bot()
    screen.type("the seed is 17")
    screen.send_keys("Enter")
    screen.wait_for("Noted.")
    session_dir = bot_session_dir()
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    pointer = paths.bots_dir() / "coder" / "bot.json"
    if damage == "rm":
        pointer.unlink()
    else:
        pointer.write_text(damage)
    screen = bot()
    screen.wait_for(f"bot · resumed {session_dir.name}")
    why = "was missing" if damage == "rm" else "was not valid JSON" if damage == "garbage" else "held no session id"
    screen.wait_for(f"bot coder: bot.json {why}; resumed its newest session {session_dir.name}")
    screen.wait_for("the seed is 17")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    assert bot_session_dir() == session_dir
