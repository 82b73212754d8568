"""The habits people bring from Claude Code and Codex, end to end in tmux: a Deny that tells the
model why, `@` file mentions, and permission modes on Shift+Tab."""

from __future__ import annotations

import os

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


def sent_user_content(iota, request: int):
    """The last user message of request `request`, as the fake model got it."""
    return [m for m in iota.model.requests[request].body["messages"] if m["role"] == "user"][-1]["content"]


def test_at_opens_the_project_list_tab_completes_and_the_request_carries_the_file(iota, chat):
    (iota.cwd / ".git").mkdir()
    (iota.cwd / "README.md").write_text("# Demo\nThe readme's second line.\n")
    (iota.cwd / "src").mkdir()
    (iota.cwd / "src" / "read_config.py").write_text("print('config')\n")
    (iota.cwd / "build").mkdir()
    (iota.cwd / "build" / "READ_ME_TOO.md").write_text("ignored\n")
    (iota.cwd / ".gitignore").write_text("build/\n")
    iota.write_config(CODE)
    iota.model.reply("Read it.")
    screen = chat("run", "coder")
    screen.type("summarise @READ")
    shown = screen.wait_for("❯ README.md")
    assert "src/read_config.py" in shown  # the name matches first, then the path
    assert "READ_ME_TOO" not in shown  # .gitignore is respected
    screen.send_keys("Tab")
    screen.wait_for("❯ summarise @README.md")
    screen.type("please")
    screen.send_keys("Enter")
    shown = screen.wait_for("Read it.")
    assert "@README.md (2 lines)" in shown
    content = sent_user_content(iota, 0)
    text = content if isinstance(content, str) else " ".join(part.get("text", "") for part in content)
    assert "summarise @README.md please" in text
    assert "The readme's second line." in text  # the file's content went with the message


def test_an_at_word_naming_no_file_is_sent_as_typed(iota, chat):
    (iota.cwd / ".git").mkdir()
    iota.write_config(CODE)
    iota.model.reply("Hi Alice.")
    screen = chat("run", "coder")
    screen.type("ask @alice")
    screen.wait_for("no file matches @alice")
    screen.send_keys("Enter")
    screen.wait_for("Hi Alice.")
    assert sent_user_content(iota, 0) == "ask @alice"


SECRET = "AKIA-the-secret-key-material"


def test_in_the_chat_a_link_out_is_not_attached_and_the_request_does_not_carry_it(iota, chat):
    (iota.cwd / ".git").mkdir()
    outside = iota.home / "credentials"
    outside.write_text(SECRET + "\n")
    os.symlink(outside, iota.cwd / "notes.md")
    iota.write_config(CODE)
    iota.model.reply("Nothing attached.")
    screen = chat("run", "coder")
    screen.type("read @notes.md")
    screen.wait_for("no file matches @notes.md")  # the list offers no link
    screen.send_keys("Enter")
    shown = screen.wait_for("Nothing attached.")
    assert "@notes.md not attached: path is outside the project root" in shown
    assert sent_user_content(iota, 0) == "read @notes.md"
    assert SECRET not in str(iota.model.requests[0].body)
