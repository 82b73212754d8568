"""Tool calls and their output, end to end in tmux: the command in full, the first lines of what
the model read with its exit code, Ctrl+O for all of it, and edits as coloured diffs."""

from __future__ import annotations

import re

from tests.e2e.test_chat import chat  # noqa: F401  (the fixture)
from tests.e2e.test_chat_markdown import coloured, style_at
from tests.support.fake_model import tool_call
from tests.support.terminal import terminal  # noqa: F401  (the fixture under `chat`)

# Commands run unsandboxed and unasked here: these tests are about what the screen shows.
SHELL = "  coder:\n    mode: agent\n    model: m\n    tools:\n      shell: {sandbox: off, auto_run: true}\n"


def tool_result(iota, request: int) -> str:
    """What the model was sent back for the last tool call before request `request`."""
    return [m for m in iota.model.requests[request].body["messages"] if m["role"] == "tool"][-1]["content"]


def test_a_failing_command_shows_its_error_and_exit_code_as_the_model_read_them(iota, chat):
    (iota.cwd / ".git").mkdir()
    iota.write_config(SHELL)
    iota.model.reply(tool_calls=[tool_call("shell", {"command": "echo start; ls /nonexistent; exit 3"})])
    iota.model.reply("It failed.")
    screen = chat("run", "coder")
    screen.type("run it")
    screen.send_keys("Enter")
    shown = screen.wait_for("It failed.")
    assert "• shell echo start; ls /nonexistent; exit 3\n  ⎿ start\n    ls: cannot access '/nonexistent'" in shown
    assert "    [exit code 3]" in shown
    sent = tool_result(iota, 1)
    assert sent.startswith("start\nls: cannot access '/nonexistent'") and sent.endswith("[exit code 3]")
    for line in sent.splitlines():  # every line the model read is on the screen
        assert line in shown


def test_a_long_command_is_shown_whole_and_ctrl_o_shows_all_of_its_output(iota, chat):
    (iota.cwd / ".git").mkdir()
    iota.write_config(SHELL)
    command = ("for i in $(seq 1 30); do echo output line $i; done; "
               "echo the last line of a command that is much longer than the header can show")
    iota.model.reply(tool_calls=[tool_call("shell", {"command": command})])
    iota.model.reply("Thirty lines.")
    screen = chat("run", "coder", cols=110, rows=50)
    screen.type("count")
    screen.send_keys("Enter")
    shown = screen.wait_for("Thirty lines.")
    joined = " ".join(row.removeprefix("  │ ").strip() for row in shown.splitlines() if row.startswith("  │ "))
    assert joined == command  # wrapped under the header, every character of it
    assert "    output line 4\n    … +27 lines (ctrl+o to expand)" in shown and "output line 5" not in shown
    screen.send_keys("C-o")
    shown = screen.wait_for("output line 30")
    assert "    output line 29\n    output line 30\n    the last line of a command" in shown
    screen.send_keys("C-o")
    screen.wait_for("… +27 lines (ctrl+o to expand)")


def test_after_esc_the_screen_shows_what_the_model_got(iota, chat):
    (iota.cwd / ".git").mkdir()
    iota.write_config(SHELL)
    iota.model.reply(tool_calls=[tool_call("shell", {"command": "echo started; sleep 300"})])
    iota.model.reply("Stopped.")
    screen = chat("run", "coder")
    screen.type("run it")
    screen.send_keys("Enter")
    screen.wait_for(re.compile(r"shell echo started; sleep 300 · [1-9]\d*s"))
    screen.send_keys("Escape")
    shown = screen.wait_for("Stopped.")
    sent = tool_result(iota, 1)
    assert sent.endswith("[command cancelled]")
    result = shown[shown.index("  ⎿ "):shown.index("Stopped.")]
    assert [line.strip() for line in result.replace("⎿", "").splitlines() if line.strip()] == \
        [line for line in sent.splitlines() if line]


def test_an_edit_shows_its_coloured_diff_before_the_approval_and_after(iota, chat):
    (iota.cwd / ".git").mkdir()
    (iota.cwd / "app.py").write_text("greeting = 'hello'\nprint(greeting)\n")
    iota.write_config("  coder:\n    mode: agent\n    model: m\n    tools:\n      code:\n")
    iota.model.reply(tool_calls=[tool_call("read_file", {"path": "app.py"})])
    iota.model.reply(tool_calls=[tool_call("edit_file", {"path": "app.py", "old_string": "'hello'",
                                                         "new_string": "'goodbye'"})])
    iota.model.reply("Edited.")
    screen = chat("run", "coder")
    screen.type("say goodbye")
    screen.send_keys("Enter")
    screen.wait_for("edit_file app.py wants to modify files — allow?")
    shown = screen.wait_for("│ +greeting = 'goodbye'")
    assert "│ -greeting = 'hello'" in shown
    deleted, added = style_at(screen, "-greeting = 'hello'"), style_at(screen, "+greeting = 'goodbye'")
    assert coloured(deleted) and coloured(added) and deleted != added
    screen.send_keys("Enter")  # Allow once
    screen.wait_for("Edited.")
    assert (iota.cwd / "app.py").read_text() == "greeting = 'goodbye'\nprint(greeting)\n"
