"""Seeing a bot's memory end to end: `/memory` in the chat, with its editor key handing the terminal
to $EDITOR and taking it back, and `iota bots`, `iota bots show`, `iota bots rm`."""

from __future__ import annotations

import json
import re

import pytest

from iota import paths
from tests.e2e.conftest import IOTA, READY
from tests.support.terminal import terminal  # noqa: F401  (the fixture)

BOTS = "  main:\n    mode: bot\n    model: m\n  coder:\n    mode: bot\n    model: m\n"

# An editor that shows it has the terminal, reads one line typed at it (so the keys must reach it,
# not the chat), adds the line to the file and exits.
EDITOR = """\
#!/bin/sh
printf 'EDITOR OPEN %s\\n' "$1"
IFS= read -r line
printf '## Style\\n%s\\n' "$line" >> "$1"
"""


def own(name: str):
    return paths.bots_dir() / "coder" / name


def start_bot(iota, terminal, **env: str):
    iota.write_config(BOTS)
    screen = terminal.start([IOTA, "run", "coder"], cols=120, rows=40, env=iota.env(**env), cwd=iota.cwd)
    screen.wait_for(READY)
    return screen


def test_memory_lists_the_files_and_opens_one_in_the_editor(iota, terminal, tmp_path):
    editor = tmp_path / "editor.sh"
    editor.write_text(EDITOR)
    editor.chmod(0o755)
    own("memory").mkdir(parents=True)
    own("memory/CLIENT.md").write_text("---\nexclude-project: [project]\n---\nThe other client's notes.\n")
    iota.model.reply("Bonjour.")
    screen = start_bot(iota, terminal, EDITOR=str(editor), VISUAL="")
    screen.type("/memory")
    screen.send_keys("Enter")
    shown = screen.wait_for("Open a memory file in $EDITOR?")
    assert 'own  memory/CLIENT.md  not sent: exclude-project "project" matches project' in shown
    assert re.search(r"^\s*MEMORY\.md\s+0\.0 / 8 KiB$", shown, re.MULTILINE)
    assert "in all 0.0 / 24 KiB" in shown
    assert "3. memory/SOUL.md (new)" in shown
    screen.send_keys("3")
    handed = screen.wait_for(f"EDITOR OPEN {own('memory/SOUL.md')}")
    assert not READY.search(handed)          # the chat let go of the screen
    screen.type("Answer in French.")
    screen.send_keys("Enter")
    screen.wait_for(READY)                    # and took it back, redrawn
    assert own("memory/SOUL.md").read_text() == "## Style\nAnswer in French.\n"
    screen.type("hi")
    screen.send_keys("Enter")
    screen.wait_for("Bonjour.")
    screen.wait_for("memory/SOUL.md reloaded")
    system = iota.model.requests[0].body["messages"][0]["content"]
    assert '<memory_file path="memory/SOUL.md">\n## Style\nAnswer in French.\n</memory_file>' in system
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0


def test_ctrl_c_in_the_editor_is_the_editors_not_the_chats(iota, terminal, tmp_path):
    editor = tmp_path / "editor.sh"
    editor.write_text(EDITOR)
    editor.chmod(0o755)
    iota.model.reply("Still here.")
    screen = start_bot(iota, terminal, EDITOR=str(editor), VISUAL="")
    screen.type("/memory")
    screen.send_keys("Enter")
    screen.wait_for("Open a memory file in $EDITOR?")
    screen.send_keys("2")
    screen.wait_for("EDITOR OPEN")
    screen.send_keys("C-c")          # the terminal's interrupt goes to its whole foreground group
    screen.wait_for("the editor was stopped by SIGINT")
    screen.type("hi")
    screen.send_keys("Enter")
    screen.wait_for("Still here.")


def test_an_editor_that_cannot_start_is_a_warning_and_the_chat_goes_on(iota, terminal):
    iota.model.reply("Still here.")
    screen = start_bot(iota, terminal, EDITOR="/nonexistent/editor --wait", VISUAL="")
    screen.type("/memory")
    screen.send_keys("Enter")
    screen.wait_for("Open a memory file in $EDITOR?")
    screen.send_keys("1")
    screen.wait_for("cannot start the editor (/nonexistent/editor --wait): No such file or directory; set $EDITOR")
    screen.type("hi")
    screen.send_keys("Enter")
    screen.wait_for("Still here.")


def lock_pid() -> str:
    return own("lock").read_text()


def test_iota_bots_list_show_and_rm(iota, terminal):
    iota.model.reply("hello")
    screen = start_bot(iota, terminal)
    screen.type("hi")
    screen.send_keys("Enter")
    screen.wait_for("hello")
    own("memory").mkdir()
    own("memory/SOUL.md").write_text("## Style\nBe terse.\n")
    session = json.loads(own("bot.json").read_text())["session"]
    pid = lock_pid()

    listed = iota("bots")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0] == "Bots:"
    assert re.fullmatch(r"  main   m · not run yet", lines[1])
    assert re.fullmatch(rf"  coder  idle · \d+s · pid {pid} · m · 2 msgs \(\d+ B\) · memory 74 B",
                        lines[2]), lines[2]

    shown = iota("bots", "show", "coder").stdout
    assert f"  session    {session} · 2 msgs (" in shown
    assert re.search(rf"^  running    pid {pid} · idle · \d+s$", shown, re.MULTILINE), shown
    assert "  files      MEMORY.md, bot.json, journal.sqlite, lock, memory/SOUL.md, state.json\n" in shown
    assert f"Memory in {iota.cwd}:\n  own  memory/SOUL.md  0.0 / 8 KiB\n       MEMORY.md       0.0 / 8 KiB\n" in shown

    refused = iota("bots", "rm", "coder", "-y")
    assert (refused.returncode, refused.stderr) == (
        1, f"Error: bot coder is open in another iota process (pid {pid}); close it first\n")
    assert own("MEMORY.md").exists()
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    assert "running" not in iota("bots").stdout

    kept = iota("bots", "rm", "coder", input="n\n")
    assert kept.stdout == (f"Remove bot coder? This deletes {own('')} (its memory, pointer and lock); its session "
                           f"{session} is kept (--sessions deletes it too). [y/N] Nothing was removed.\n")
    assert own("MEMORY.md").exists()
    removed = iota("bots", "rm", "coder", input="y\n")
    assert removed.stdout.endswith(f"[y/N] Removed bot coder ({own('')}); its session {session} is kept. A config "
                                   "entry named coder starts a new bot at its next run.\n")
    assert not own("").exists() and (paths.sessions_dir() / session / "meta.json").exists()


def test_rm_with_sessions_deletes_the_conversation_too(iota, terminal):
    screen = start_bot(iota, terminal)
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
    session = json.loads(own("bot.json").read_text())["session"]
    result = iota("bots", "rm", "coder", "--sessions", "-y")
    assert result.stdout == (f"Removed bot coder ({own('')}) and its session {session}. A config entry named coder "
                             "starts a new bot at its next run.\n")
    assert not own("").exists() and not (paths.sessions_dir() / session).exists()


@pytest.mark.parametrize("args, message", [
    (["bots", "show", "nobody"], 'unknown bot "nobody" (bots: main, coder)'),
    (["bots", "rm", "main", "-y"], "bot main has no directory ({bots}/main does not exist); nothing to remove"),
    (["bots", "rm", "../x", "-y"], 'bot name "../x" must be letters, digits, ".", "_" or "-", at most 64 characters, '
                                   "starting with a letter or digit"),
])
def test_bots_refusals(iota, args, message):
    iota.write_config(BOTS)
    result = iota(*args)
    assert (result.returncode, result.stderr) == (1, f"Error: {message.format(bots=paths.bots_dir())}\n")
