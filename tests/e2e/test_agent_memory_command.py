"""An agent's own memory in the chat (tmux): `/memory` in `mode: agent` lists the files and opens
one in $EDITOR, and the memory follows the session as the title pass names it."""

from __future__ import annotations

import re

from iota import paths
from tests.e2e.conftest import IOTA, READY
from tests.e2e.test_sessions import wait_for_meta
from tests.support.terminal import terminal  # noqa: F401  (the fixture)

CODER = "  coder:\n    mode: agent\n    model: m\n"

EDITOR = """\
#!/bin/sh
printf 'EDITOR OPEN %s\\n' "$1"
IFS= read -r line
printf '%s\\n' "$line" >> "$1"
"""


def test_memory_in_agent_mode_follows_the_session_title_and_opens_a_file(iota, terminal, tmp_path):
    editor = tmp_path / "editor.sh"
    editor.write_text(EDITOR)
    editor.chmod(0o755)
    memory = iota.home / ".iota" / "agents" / "coder" / "memory"
    memory.mkdir(parents=True)
    (memory / "FIX.md").write_text("---\ninclude-session: 'fix *'\n---\nRun the login tests.\n")
    (memory / "DOCS.md").write_text("---\nexclude-session: 'fix *'\n---\nDocs use British spelling.\n")
    iota.write_config(CODER)
    iota.model.title("fix the login flow")
    iota.model.reply("First.")
    iota.model.reply("Second.")
    screen = terminal.start([IOTA, "run", "coder"], cols=120, rows=40,
                            env=iota.env(EDITOR=str(editor), VISUAL=""), cwd=iota.cwd)
    started = screen.wait_for(READY)
    session_id = re.search(r"coder · agent · session (\w+)", started).group(1)
    screen.type("hello")
    screen.send_keys("Enter")
    screen.wait_for("First.")
    first = iota.model.requests[0].body["messages"][0]["content"]
    assert "Docs use British spelling." in first and "Run the login tests." not in first  # no title yet
    iota.model.wait_for_title_request()
    wait_for_meta(paths.project_sessions_dir(iota.cwd) / session_id, "title", "fix the login flow")

    screen.type("/memory")
    screen.send_keys("Enter")
    shown = screen.wait_for("Open a memory file in $EDITOR?")
    assert re.search(r"own  memory/DOCS\.md\s+not sent: exclude-session \"fix \*\" matches session \w+ "
                     r"\(\"fix the login flow\"\)", shown), shown
    assert re.search(r"memory/FIX\.md\s+0\.0 / 8 KiB   include-session: fix \*", shown), shown
    assert f"in {memory}" in shown
    assert "summary.md" not in shown          # a bot's running summary has no place in an agent
    options = re.findall(r"(\d)\. (memory/\S+)", shown)
    soul = next(number for number, label in options if label == "memory/SOUL.md")
    screen.send_keys(soul)
    screen.wait_for(f"EDITOR OPEN {memory / 'SOUL.md'}")
    screen.type("Answer in French.")
    screen.send_keys("Enter")
    screen.wait_for(READY)
    assert (memory / "SOUL.md").read_text() == "Answer in French.\n"

    screen.type("again")
    screen.send_keys("Enter")
    screen.wait_for("Second.")
    second = iota.model.requests[1].body["messages"][0]["content"]
    assert "Run the login tests." in second and "Docs use British spelling." not in second
    assert '<memory_file path="memory/SOUL.md">\nAnswer in French.\n</memory_file>' in second
    screen.send_keys("C-d")
    assert screen.wait_for_exit() == 0
