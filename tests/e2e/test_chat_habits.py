"""The habits people bring from Claude Code and Codex, end to end in tmux: a Deny that tells the
model why, `@` file mentions, and permission modes on Shift+Tab."""

from __future__ import annotations

import json
import os
import re

from tests.e2e.test_chat import chat, saved_records  # noqa: F401  (the fixture)
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


# ---- permission modes ------------------------------------------------------------------------

PLAN_REFUSAL = "write_file was not run: the chat is in plan mode"


def test_shift_tab_cycles_the_modes_on_the_status_row(iota, chat):
    (iota.cwd / ".git").mkdir()
    iota.write_config(CODE)
    screen = chat("run", "coder")
    screen.send_keys("BTab")
    screen.wait_for("mode: auto-edit — file changes land without asking")  # the hint, for a moment
    screen.wait_for(" · mode: auto-edit")  # then the status row, for as long as it lasts
    screen.send_keys("BTab")
    screen.wait_for(" · mode: plan")
    screen.send_keys("BTab")
    screen.wait_for("mode: ask — the agent's config as written")
    shown = screen.wait_for(re.compile(r"≈[\d.]+k / 200k \(\d+%\)\s*$", re.MULTILINE))
    assert " · mode: " not in shown.splitlines()[-1]


def test_in_plan_mode_a_write_is_refused_without_a_question_and_the_model_is_told(iota, chat):
    (iota.cwd / ".git").mkdir()
    iota.write_config(CODE)
    iota.model.reply(tool_calls=[tool_call("write_file", {"path": "notes.md", "content": "# Notes\n"})])
    iota.model.reply("Here is the plan instead.")
    screen = chat("run", "coder")
    screen.send_keys("BTab")
    screen.send_keys("BTab")
    screen.wait_for(" · mode: plan")
    screen.type("write the notes")
    screen.send_keys("Enter")
    shown = screen.wait_for("Here is the plan instead.")
    assert "wants to modify files" not in shown
    assert not (iota.cwd / "notes.md").exists()
    assert tool_result(iota, 1).startswith(PLAN_REFUSAL)
    sent = [m["content"] for m in iota.model.requests[0].body["messages"] if m["role"] == "user"]
    assert any("switched this chat to plan mode" in text for text in sent)  # told before the message
    assert sent[-1] == "write the notes"


def test_in_auto_edit_mode_a_write_lands_without_a_question(iota, chat):
    (iota.cwd / ".git").mkdir()
    iota.write_config(CODE)
    iota.model.reply(tool_calls=[tool_call("write_file", {"path": "notes.md", "content": "# Notes\n"})])
    iota.model.reply("Written.")
    screen = chat("run", "coder")
    screen.send_keys("BTab")
    screen.wait_for(" · mode: auto-edit")
    screen.type("write the notes")
    screen.send_keys("Enter")
    shown = screen.wait_for("Written.")
    assert "wants to modify files" not in shown
    assert (iota.cwd / "notes.md").read_text() == "# Notes\n"


def test_slash_mode_sets_it_the_session_keeps_it_and_the_resume_card_says_so(iota, chat):
    (iota.cwd / ".git").mkdir()
    iota.write_config(CODE)
    iota.model.reply("Hello.")
    screen = chat("run", "coder")
    screen.type("/mode")
    screen.send_keys("Enter")
    screen.wait_for("❯ ask        the agent's config as written")
    screen.type("/mode plan")
    screen.send_keys("Enter")
    screen.wait_for(" · mode: plan")
    screen.type("hi")
    screen.send_keys("Enter")
    screen.wait_for("Hello.")
    bundle, _ = saved_records(iota.cwd)
    meta = json.loads((bundle / "meta.json").read_text())
    assert meta["permission_mode"] == "plan"
    screen.send_keys("C-d")
    screen.wait_for_exit()
    resumed = chat("resume", bundle.name)
    shown = resumed.wait_for(" · mode: plan")
    assert "mode plan: read-only: no file changes, no commands; the model plans" in shown


def test_a_headless_run_takes_mode(iota):
    (iota.cwd / ".git").mkdir()
    iota.write_config(CODE)
    iota.model.reply(tool_calls=[tool_call("write_file", {"path": "a.md", "content": "a\n"})])
    iota.model.reply("Planned.")
    done = iota("run", "coder", "--mode", "plan", "-m", "write a")
    assert done.returncode == 0, done.stderr
    assert not (iota.cwd / "a.md").exists()
    assert tool_result(iota, 1).startswith("write_file was not run: the chat is in plan mode")
    iota.model.reply(tool_calls=[tool_call("write_file", {"path": "a.md", "content": "a\n"})])
    iota.model.reply("Written.")
    done = iota("run", "coder", "--mode", "auto-edit", "-m", "write a")
    assert done.returncode == 0, done.stderr
    assert (iota.cwd / "a.md").read_text() == "a\n"
