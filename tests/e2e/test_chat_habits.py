"""The habits people bring from Claude Code and Codex, end to end in tmux: a Deny that tells the
model why, `@` file mentions, and permission modes on Shift+Tab."""

from __future__ import annotations

from tests.e2e.test_chat import chat  # noqa: F401  (the fixture)
from tests.e2e.test_chat_tools import tool_result
from tests.support.fake_model import tool_call
from tests.support.terminal import terminal  # noqa: F401  (the fixture under `chat`)

CODE = "  coder:\n    mode: agent\n    model: m\n    tools:\n      code:\n"
# Commands run unsandboxed and asked about: the approval question is what these tests are about.
ASKED_SHELL = "  coder:\n    mode: agent\n    model: m\n    tools:\n      shell: {sandbox: off}\n"


def test_deny_and_say_why_tells_the_model_the_reason_in_the_tool_result(iota, chat):
    (iota.cwd / ".git").mkdir()
    (iota.cwd / "build").mkdir()
    iota.write_config(ASKED_SHELL)
    iota.model.reply(tool_calls=[tool_call("shell", {"command": "rm -rf build"})])
    iota.model.reply("Understood, I will keep the build.")
    screen = chat("run", "coder")
    screen.type("clean up")
    screen.send_keys("Enter")
    shown = screen.wait_for("shell rm -rf build wants to run a command — allow?")
    shown = screen.wait_for("4. Deny and say why")
    # "Allow for this session" says what it covers: this command in this directory, nothing more.
    assert "2. Allow for this session (exactly this command in this directory)" in shown
    screen.send_keys("4")
    screen.wait_for("❯ 4. Deny and say why:")
    screen.type("the build dir holds release artefacts")
    screen.send_keys("Enter")
    shown = screen.wait_for("Understood, I will keep the build.")
    assert tool_result(iota, 1) == "denied by the person: the build dir holds release artefacts"
    assert "Deny and say why: the build dir holds release artefacts" in shown  # the record of the answer
    assert (iota.cwd / "build").is_dir()  # nothing ran


def test_plain_deny_stays_as_it_was(iota, chat):
    (iota.cwd / ".git").mkdir()
    iota.write_config(ASKED_SHELL)
    marker = iota.cwd / "ran"
    iota.model.reply(tool_calls=[tool_call("shell", {"command": f"touch {marker}"})])
    iota.model.reply("Not run.")
    screen = chat("run", "coder")
    screen.type("touch it")
    screen.send_keys("Enter")
    screen.wait_for("4. Deny and say why")
    screen.send_keys("3")
    screen.wait_for("Not run.")
    assert tool_result(iota, 1) == "The user declined this call."
    assert not marker.exists()
