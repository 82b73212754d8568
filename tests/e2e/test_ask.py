"""The `ask` toolset end to end: the real `iota` in a real terminal (tmux), against the fake model
server. The model's question is shown inside its turn, the person answers it, and the answer is
the tool result of the next request."""

from __future__ import annotations

import time

from tests.e2e.conftest import IOTA, READY
from tests.support.fake_hosts import FakeHerdr
from tests.support.fake_model import tool_call
from tests.support.terminal import terminal  # noqa: F401  (the fixture)

CHAT = "  chat: {model: m}\n"


def start(iota, terminal, **env: str):
    screen = terminal.start([IOTA, "run", "chat", "--no-save"], cols=100, rows=30, env=iota.env(**env),
                            cwd=iota.cwd)
    screen.wait_for(READY)
    return screen


def send(screen, text: str) -> None:
    screen.type(text)
    screen.send_keys("Enter")


def tool_results_openai(request) -> list[dict]:
    return [m for m in request.body["messages"] if m["role"] == "tool"]


def wait_until(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_confirm_waits_inside_the_turn_shows_needs_input_and_yes_goes_back_as_the_result(iota, terminal,
                                                                                         tmp_path):
    herdr = FakeHerdr(tmp_path / "herdr.sock")
    iota.write_config(CHAT)
    iota.model.reply("Let me check first.", tool_calls=[tool_call("confirm", {"question": "Deploy to staging?"})])
    iota.model.reply("Deploying to staging.")
    with herdr.serving_in_thread():
        screen = start(iota, terminal, HERDR_ENV="1", HERDR_PANE_ID="pane-1",
                       HERDR_SOCKET_PATH=str(herdr.socket_path))
        send(screen, "ship it")
        shown = screen.wait_for("Deploy to staging?\n❯ 1. Yes\n  2. No")
        assert "Other" not in shown
        wait_until(lambda: any(r.params.get("state") == "blocked" for r in herdr.requests))
        assert len(iota.model.requests) == 1  # the turn waits on the answer, not on a new message
        screen.send_keys("Enter")
        shown = screen.wait_for("Deploying to staging.")
        assert "• confirm Deploy to staging?\n  ⎿ yes" in shown
        screen.send_keys("C-d")
        assert screen.wait_for_exit() == 0
    (result,) = tool_results_openai(iota.model.requests[1])
    assert result["content"] == "yes"
    states = [r.params["state"] for r in herdr.requests if "state" in r.params]
    assert states[states.index("blocked"):][:2] == ["blocked", "working"]  # busy again once answered


def test_choose_with_a_single_select_a_multi_select_and_a_typed_other(iota, terminal):
    iota.write_config(CHAT)
    questions = [
        {"question": "Which database?", "options": ["PostgreSQL", "SQLite"]},
        {"question": "Which checks should run?", "options": ["lint", "tests", "bench"], "multi": True},
    ]
    iota.model.reply(tool_calls=[tool_call("choose", {"questions": questions})])
    iota.model.reply("Set up with those.")
    screen = start(iota, terminal)
    send(screen, "set up the service")
    screen.wait_for("(1/2) Which database?\n❯ 1. PostgreSQL\n  2. SQLite\n  3. Other…")
    screen.send_keys("Down", "Enter")
    screen.wait_for("(2/2) Which checks should run?  Space selects · Enter confirms")
    screen.send_keys("Space", "Down", "Down", "Down", "Enter")
    screen.wait_for("❯ 4. Other:")
    screen.type("type checks")
    screen.send_keys("Enter")
    screen.wait_for("Set up with those.")
    (result,) = tool_results_openai(iota.model.requests[1])
    assert result["content"] == "Which database? → SQLite\nWhich checks should run? → lint; typed: type checks"
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0


def test_esc_declines_and_the_model_is_told_with_an_error_result(iota, terminal):
    iota.write_config(CHAT, dialect="anthropic")
    questions = [{"question": "Which name?", "options": ["iota", "kappa"]}]
    iota.model.reply(tool_calls=[tool_call("choose", {"questions": questions})])
    iota.model.reply("Understood, I will pick later.")
    screen = start(iota, terminal)
    send(screen, "name it")
    screen.wait_for("Which name?")
    screen.send_keys("Escape")
    screen.wait_for("Understood, I will pick later.")
    assert "The user declined to answer." in screen.capture()
    blocks = [block for message in iota.model.requests[1].body["messages"] if isinstance(message["content"], list)
              for block in message["content"] if block["type"] == "tool_result"]
    assert [(b["content"], b.get("is_error")) for b in blocks] == [("The user declined to answer.", True)]
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0


def test_a_headless_run_has_no_ask_tools(iota):
    iota.write_config(CHAT)
    iota.model.reply("hi")
    result = iota("run", "chat", "-m", "hello")
    assert result.returncode == 0, result.stderr
    tools = {t["function"]["name"] for t in iota.model.requests[0].body.get("tools", [])}
    assert not tools & {"confirm", "choose"}


def test_ask_false_leaves_the_tools_out_of_an_interactive_chat(iota, terminal):
    iota.write_config("  chat: {model: m, tools: {ask: false}}\n")
    iota.model.reply("hi")
    screen = start(iota, terminal)
    send(screen, "hello")
    screen.wait_for("hi")
    assert "tools" not in iota.model.requests[0].body or not iota.model.requests[0].body["tools"]
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
