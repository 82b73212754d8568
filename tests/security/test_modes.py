"""Plan mode is read-only whatever the config lets run unasked: a command `auto_run: true` would
run without a question, a tool no one marked read-only, are refused there too, since the person
chose plan mode to see a plan before anything changes. Run headless (`--mode plan`), the same
Approvals as the chat's; the chat's own Shift+Tab path is tests/e2e/test_chat_habits.py."""

from __future__ import annotations

from tests.e2e.conftest import iota  # noqa: F401  (a fixture)
from tests.support.fake_model import fake_model, tool_call  # noqa: F401  (the fixture)

UNASKED_SHELL = ("  coder:\n    mode: agent\n    model: m\n    tools:\n      shell: {sandbox: off, auto_run: true}\n"
                 "      code: {auto_write: true}\n")


def tool_results(iota, request: int) -> list[str]:
    return [m["content"] for m in iota.model.requests[request].body["messages"] if m["role"] == "tool"]


def test_plan_mode_refuses_a_command_auto_run_would_run_unasked(iota):
    (iota.cwd / ".git").mkdir()
    (iota.cwd / "README.md").write_text("# Project\n")
    iota.write_config(UNASKED_SHELL)
    iota.model.reply(tool_calls=[tool_call("shell", {"command": "touch pwned"}, id="s1"),
                                 tool_call("write_file", {"path": "also.md", "content": "x"}, id="w1"),
                                 tool_call("list_dir", {"path": "."}, id="l1")])
    iota.model.reply("A plan.")
    done = iota("run", "coder", "--mode", "plan", "-m", "tidy up")
    assert done.returncode == 0, done.stderr
    assert not (iota.cwd / "pwned").exists() and not (iota.cwd / "also.md").exists()
    shell, write, listing = tool_results(iota, 1)
    assert shell.startswith("shell was not run: the chat is in plan mode")
    assert write.startswith("write_file was not run: the chat is in plan mode")
    assert "README.md" in listing  # a reader still runs: planning needs to look


def test_without_a_mode_the_same_config_runs_them(iota):
    """The control: what plan mode refused is what this config runs unasked."""
    (iota.cwd / ".git").mkdir()
    iota.write_config(UNASKED_SHELL)
    iota.model.reply(tool_calls=[tool_call("shell", {"command": "touch ran"}, id="s1")])
    iota.model.reply("Done.")
    done = iota("run", "coder", "-m", "tidy up")
    assert done.returncode == 0, done.stderr
    assert (iota.cwd / "ran").exists()
