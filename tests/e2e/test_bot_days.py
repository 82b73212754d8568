"""A bot left alone over "days" (issue 30): the moments where it cost the person turns, trust or a
message. The real `iota` in tmux against the fake model; each test fails on the code before its fix."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime


from iota import paths
from tests.e2e.conftest import IOTA, READY
from tests.e2e.test_tasks import settle
from tests.e2e.test_chat import chat, saved_records  # noqa: F401  (the fixture)
from tests.e2e.test_chat_start import SHELL_PROMPT, run, shell
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


# -- 2. the meter after a compaction -----------------------------------------------------------------

FIGURE = re.compile(r"^m · (≈?)([\d.]+)(k?) / 200k", re.MULTILINE)


def meter(screen) -> float:
    sign, number, unit = FIGURE.search(screen.wait_for(FIGURE)).groups()
    return float(number) * (1000 if unit else 1)


def test_the_meter_after_compact_counts_what_the_next_request_sends(iota, terminal):
    iota.write_config(BOT)
    (paths.bots_dir() / "coder").mkdir(parents=True, exist_ok=True)
    (paths.bots_dir() / "coder" / "MEMORY.md").write_text("# Memory\n\n" + "- the user likes green tea\n" * 40)
    for reply in ("One.", "Two.", "Summary of one and two."):
        iota.model.reply(reply)
    screen = start(iota, terminal)
    empty = meter(screen)  # the system prompt, the tools and the memory, before anything is said
    for text, answer in (("one", "One."), ("two", "Two.")):
        screen.type(text)
        screen.send_keys("Enter")
        screen.wait_for(answer)
    screen.type("/compact")
    screen.send_keys("Enter")
    screen.wait_for("Context compacted → ")
    compacted = meter(screen)
    assert compacted >= empty, screen.capture()
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    screen = start(iota, terminal)  # a restart counts the same request: the same figure
    assert meter(screen) == compacted
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0


# -- 3. refusals before questions -----------------------------------------------------------------

AGENT = "  coder:\n    mode: agent\n    model: m\n    tools:\n      code:\n"


def test_an_edit_of_a_file_not_read_is_refused_without_asking(iota, chat):
    (iota.cwd / ".git").mkdir()
    (iota.cwd / "app.py").write_text("greeting = 'hello'\n")
    iota.write_config(AGENT)
    iota.model.reply(tool_calls=[tool_call("edit_file", {"path": "app.py", "old_string": "'hello'",
                                                         "new_string": "'goodbye'"})])
    iota.model.reply(tool_calls=[tool_call("write_file", {"path": "app.py", "content": "x = 1\n"})])
    iota.model.reply("I will read it first.")
    screen = chat("run", "coder")
    screen.type("say goodbye")
    screen.send_keys("Enter")
    shown = screen.wait_for("I will read it first.")
    assert "wants to modify files" not in shown
    assert "app.py has not been read in this session" in shown
    results = [m for m in iota.model.requests[2].body["messages"] if m["role"] == "tool"]
    assert [r["content"] for r in results] == [
        "app.py has not been read in this session — read it with read_file before modifying it"] * 2
    assert (iota.cwd / "app.py").read_text() == "greeting = 'hello'\n"


# -- 4. /save, then leave ----------------------------------------------------------------------------


def test_save_then_leave_says_how_to_continue(iota, chat, tmp_path):
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("Tea is ready.")
    screen = shell(iota, chat, tmp_path)
    run(screen, f"{IOTA} run chat --no-save")
    screen.wait_for("not saved · /save keeps it")
    run(screen, "make tea")
    screen.wait_for("Tea is ready.")
    run(screen, "/save")
    screen.wait_for("Session saved: ")
    screen.send_keys("C-d")
    shown = screen.wait_for(re.compile(rf"Continue with: iota resume [0-9a-z]{{12}}\n{re.escape(SHELL_PROMPT)}"))
    assert "This chat was not saved." not in shown
    bundle, _ = saved_records()
    assert f"iota resume {bundle.name}" in shown


# -- 5. schedules: the approved time, and a label on the reply --------------------------------------


def test_a_schedule_stores_the_time_approved_and_its_reply_is_labelled(iota, terminal):
    iota.write_config(BOT)
    iota.model.reply(tool_calls=[tool_call("schedule", {"action": "create", "title": "Stretch",
                                                        "prompt": "Remind me to stretch.",
                                                        "timetable": "once in 4 seconds"})])
    iota.model.reply("I will remind you.")
    iota.model.reply("Time to stretch!")
    screen = start(iota, terminal)
    screen.type("remind me to stretch")
    screen.send_keys("Enter")
    asked = screen.wait_for('schedule wants to create "Stretch"')
    approved = re.search(r"timetable: once (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)", asked)[1]
    # The person takes their time: the wall clock moves on by two whole seconds before the yes.
    later = int(time.time()) + 2
    while time.time() < later:
        time.sleep(0.05)
    screen.send_keys("Enter")
    screen.wait_for("I will remind you.")
    [stored] = [json.loads(line) for line in (paths.bots_dir() / "coder" / "schedules.jsonl").read_text().splitlines()]
    assert datetime.fromisoformat(stored["next_run"]).strftime("%Y-%m-%d %H:%M:%S") == approved
    shown = screen.wait_for("Time to stretch!", timeout=15)
    assert re.search(r"⏰ Stretch\n(.*\n)*.*Time to stretch!", shown), shown
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    screen = start(iota, terminal)  # the bot reopened shows its history with the label
    shown = screen.wait_for("Time to stretch!")
    assert re.search(r"⏰ Stretch\n(.*\n)*.*Time to stretch!", shown), shown
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0


# -- 6. resume draws what the live chat drew -------------------------------------------------------

SMALL_BOT = "  coder:\n    mode: bot\n    model: m\n    context_window: 32k\n"
PAST = 17_000  # input tokens past a 32k bot's threshold: the flush, then the compaction
CALL_ROW = re.compile(r"^.*• tasks.*$", re.MULTILINE)


def test_a_reopened_bot_draws_tool_calls_as_live_and_hides_the_flush_prompt(iota, terminal):
    iota.write_config(SMALL_BOT)
    iota.model.reply("Hello.")
    iota.model.reply(tool_calls=[tool_call("tasks", {"action": "create", "title": "Tidy the docs",
                                                     "steps": ["fix links"], "status": "backlog"})])
    iota.model.reply("Parked it.", input_tokens=PAST)
    iota.model.reply("Nothing to save.")  # the memory flush
    iota.model.reply("Summary: a task was parked.")
    screen = start(iota, terminal)
    screen.type("hello")
    screen.send_keys("Enter")
    screen.wait_for("Hello.")
    screen.type("park a task")
    screen.send_keys("Enter")
    live = screen.wait_for("Parked it.")
    screen.wait_for("Context compacted → ", timeout=30)
    [live_row] = CALL_ROW.findall(live)
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    screen = start(iota, terminal)
    shown = screen.wait_for("Parked it.")
    assert CALL_ROW.findall(shown) == [live_row], shown
    assert '{"action"' not in shown
    assert "The conversation is about to be compacted" not in shown
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0


# -- 7. /help lists what works where it is typed -----------------------------------------------------

REFUSED_IN_A_BOT = ("/clear", "/new", "/save", "/rename", "/fork")


def test_help_in_a_bot_lists_only_what_a_bot_does_and_agent_help_mentions_bots(iota, terminal):
    iota.write_config(BOT + AGENT.replace("coder", "helper"))
    screen = start(iota, terminal)
    screen.type("/help")
    screen.send_keys("Enter")
    shown = screen.wait_for("/tasks")
    listed = re.findall(r"^\s*│?\s*(/\w+)\s", shown, re.MULTILINE)
    assert "/help" in listed and "/compact" in listed
    assert not set(REFUSED_IN_A_BOT) & set(listed), listed
    screen.type("/clear")  # typed all the same, it still says why not
    screen.send_keys("Enter")
    screen.wait_for("a bot keeps one conversation that never ends")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    screen = start(iota, terminal, name="helper")
    screen.type("/help")
    screen.send_keys("Enter")
    shown = screen.wait_for("Bots: an agent with `mode: bot`")
    assert "/clear" in shown and "/save" in shown
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0


# -- 8. the start card of a bot --------------------------------------------------------------------


def test_a_bots_card_says_its_memory_task_schedule_and_last_activity_with_a_hint(iota, terminal):
    from datetime import timezone

    from iota.bots.schedules import ScheduleBook
    from iota.bots.tasks import TaskBook

    iota.write_config(BOT)
    iota.model.reply("Hello.")
    screen = start(iota, terminal)
    card = screen.capture()
    assert "/help · Ctrl+O output · Ctrl+C stop" in card
    assert "no open task · no schedule" in card and "last activity none yet" in card
    screen.type("hello")
    screen.send_keys("Enter")
    screen.wait_for("Hello.")
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    bot_dir = paths.bots_dir() / "coder"
    tasks_book = TaskBook(bot_dir)
    tasks_book.create("Tidy the docs", ["fix links", "spell check"], "in_progress")
    [task] = tasks_book.load()
    tasks_book.update_step(task.id, 1, "blocked", note="which links?")  # nothing runs by itself
    schedules = ScheduleBook(bot_dir, timezone.utc)
    schedules.create(schedules.plan("Stretch", "Remind me to stretch.", "daily 09:00", "UTC"))
    memory = (bot_dir / "MEMORY.md").stat().st_size
    screen = start(iota, terminal)
    card = screen.capture()
    size = f"{memory} B" if memory < 1024 else f"{memory / 1024:.1f} KB"
    assert re.search(rf"│ memory {re.escape(size)} · task Tidy the docs · step 1/2 blocked · fix links · "
                     r"next ⏰ Stretch \w{3} \d{4}-\d\d-\d\d 09:00", card), card
    assert re.search(r"│ last activity \d{4}-\d\d-\d\d \d\d:\d\d", card), card
    assert "│ /help · Ctrl+O output · Ctrl+C stop" in card
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0


# -- 9. small ones ---------------------------------------------------------------------------------


def test_the_retry_wait_counts_down(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    iota.model.fail(529, retry_after_ms=4000, message="Overloaded")
    iota.model.reply("Here now.")
    screen = chat("run", "chat")
    screen.type("hello")
    screen.send_keys("Enter")
    first = screen.wait_for("retrying in 4 s (HTTP 529, attempt 2/5)")
    later = screen.wait_for("retrying in 2 s (HTTP 529, attempt 2/5)")
    assert "retrying in 4 s" not in later
    assert re.search(r"retrying in 4 s \(HTTP 529, attempt 2/5\)$", first, re.MULTILINE)  # no clock counting up
    screen.wait_for("Here now.")


def test_iota_search_wording_and_marks(iota, chat, tmp_path):
    from iota.bots.bot import open_bot
    from iota.bots.journal import Journal, bot_sources
    from iota.config.settings import AgentConfig, Config, ModelConfig, ProviderConfig, resolve_model
    from iota.sessions.bundle import Session
    from tests.support.turns import write_turn

    chat_session = Session.create(paths.sessions_dir(), provider="fake", model="m", agent="default")
    write_turn(chat_session, "is the light green yet", reply="Use **tabs**, not spaces.")
    chat_session.close()
    entry = AgentConfig(name="coder", mode="bot", model="m")
    config = Config(providers={"local": ProviderConfig(name="local", type="openai")},
                    models={"m": ModelConfig(name="m", provider="local", id="m-1")}, agents={"coder": entry})
    bot_start = open_bot("coder", model=resolve_model(config, entry), project_root=iota.cwd)
    write_turn(bot_start.session, "I drink green tea in the morning", reply="Noted: green tea.")
    journal = Journal.open(bot_start.dir, bot_sources(bot_start.dir))
    journal.catch_up()
    journal.close()
    bot_start.close()

    screen = shell(iota, chat, tmp_path, cols=120, rows=40)

    def search(*words: str) -> str:
        run(screen, "clear")
        screen.wait_for(re.compile(rf"\A{re.escape(SHELL_PROMPT)}\s*\Z"))
        run(screen, f"NO_COLOR=1 {IOTA} search {' '.join(words)}")
        return screen.wait_for(re.compile(rf"iota (resume|run) .*\n{re.escape(SHELL_PROMPT)}"))

    shown = search("green", "tea")
    assert "**green** **tea**" in shown, shown
    assert "has every word" not in shown, shown  # a record has both: no "these have some of them"
    assert "is the light" not in shown, shown  # the records with only one word are left out
    shown = search("tabs")
    assert "Use **tabs**, not spaces." in shown and "****" not in shown, shown


def test_esc_on_send_as_a_message_clears_the_composer(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply("Fine.")
    screen = chat("run", "chat")
    screen.type("/wat now")
    screen.send_keys("Enter")
    screen.wait_for("/wat is not a command — send it as a message?")
    screen.send_keys("Escape")
    screen.wait_for(re.compile(r"^❯ *$", re.MULTILINE))  # the composer is empty again
    screen.type("/status")  # the next command is typed alone, not appended to the old text
    shown = screen.wait_for(re.compile(r"^❯ /status *$", re.MULTILINE))
    assert "/wat now/status" not in shown


# -- 10. keys typed before the chat is drawn ---------------------------------------------------------


def test_keys_typed_on_the_first_frame_are_edited_there_and_enter_sends(iota, terminal, tmp_path):
    from tests.e2e.test_chat_early_keys import alternate_screen_on, composer_holding, held_at_the_first_frame

    release, screen = held_at_the_first_frame(iota, terminal, tmp_path, typed_first="helo")
    iota.model.reply("Hi there.")
    screen.send_keys("BSpace")
    screen.type("lo wrold")
    screen.send_keys("BSpace", "BSpace", "BSpace", "BSpace")
    screen.type("orld")
    screen.send_keys("Up", "Left")  # no `^[[A` echoed: keys that do not edit the line are let go
    shown = screen.wait_for(composer_holding("hello world"))
    assert "^[" not in shown and alternate_screen_on(screen)
    screen.send_keys("Enter")  # sent once the chat is up, not a new line in the composer
    screen.wait_for(composer_holding(""))
    release.touch()
    shown = screen.wait_for("Hi there.")
    assert "❯ hello world" in shown
    assert iota.model.requests[0].body["messages"][-1]["content"] == "hello world"
    screen.wait_for(composer_holding(""))
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0


def test_ctrl_c_on_the_first_frame_stops_iota_and_gives_the_terminal_back(iota, terminal, tmp_path):
    from tests.e2e.test_chat_early_keys import alternate_screen_on, held_at_the_first_frame

    _, screen = held_at_the_first_frame(iota, terminal, tmp_path, typed_first="oops")
    screen.send_keys("C-c")
    assert screen.wait_for_exit() == 130
    assert not alternate_screen_on(screen)


def test_a_paste_on_the_first_frame_is_still_one_paste(iota, terminal, tmp_path):
    from tests.e2e.test_chat_early_keys import PANE, composer_holding, held_at_the_first_frame

    release, screen = held_at_the_first_frame(iota, terminal, tmp_path, typed_first="Why?")
    screen.type(" ")
    iota.model.reply("Read the log.")
    pasted = "".join(f"log line {n}\n" for n in range(1, 301))
    (tmp_path / "paste.txt").write_text(pasted)
    screen._tmux("load-buffer", "-b", "log", str(tmp_path / "paste.txt"))
    screen._tmux("paste-buffer", "-p", "-b", "log", "-t", PANE)
    screen.type(" Thanks.")
    screen.wait_for(composer_holding("Why? [Pasted text +300 lines] Thanks."))  # as the chat will show it
    release.touch()
    screen.wait_for("❯ Why? [Pasted text #1 +300 lines] Thanks.")
    screen.send_keys("Enter")
    screen.wait_for("Read the log.")
    sent = [m["content"] for m in iota.model.requests[0].body["messages"] if m["role"] == "user"]
    assert sent == [f"Why? {pasted} Thanks."]
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
