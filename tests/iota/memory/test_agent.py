"""An agent's own memory on real files (iota.memory.agent): no global or inherited layer, the
session it follows, a hand edit reloading one block, and the session keys in a bot's file."""

from __future__ import annotations

from pathlib import Path

import pytest

from iota.memory.agent import AgentMemory, agent_dir
from iota.memory.layers import BotMemory
from iota.memory.scope import SessionName
from iota.paths import app_home, bots_dir


@pytest.fixture
def project(tmp_path) -> Path:
    path = tmp_path / "work" / "iota"
    path.mkdir(parents=True)
    return path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_session_it_follows_decides_what_goes_out(project):
    write(agent_dir("coder") / "memory" / "FIX.md", "---\ninclude-session: 'fix *'\n---\nRun the login tests.\n")
    write(app_home() / "memory" / "GLOBAL.md", "bots' global memory\n")          # not an agent's layer
    write(agent_dir("coder") / "MEMORY.md", "# not in the directory\n")          # nor is this
    memory = AgentMemory("coder", agent_dir("coder"), project_root=project, session=SessionName("a1", ""))
    assert memory.refresh() == []
    assert memory.prompt() == ""
    assert memory.follow(SessionName("a1", "")) is False
    assert memory.follow(SessionName("a1", "fix the login")) is True
    memory.refresh()
    prompt = memory.prompt()
    assert "Run the login tests." in prompt and "global memory" not in prompt and "not in the directory" not in prompt
    assert memory.take_notices() == []


def test_a_hand_edit_reloads_its_block_alone(project):
    soul = write(agent_dir("coder") / "memory" / "SOUL.md", "Be terse.\n")
    write(agent_dir("coder") / "memory" / "NOTES.md", "make all\n")
    memory = AgentMemory("coder", agent_dir("coder"), project_root=project)
    memory.refresh()
    before = memory.prompt()
    soul.write_text("Be verbose, please.\n")
    reloaded, warnings = memory.reload_changed()
    assert (reloaded, warnings) == (["memory/SOUL.md"], [])
    after = memory.prompt()
    assert "Be verbose, please." in after and after.split("memory/NOTES.md")[1] == before.split("memory/NOTES.md")[1]


def test_a_bots_file_with_session_keys_is_matched_against_its_one_conversation(project):
    write(bots_dir() / "coder" / "memory" / "ONLY.md", "---\ninclude-session: 'k*'\n---\nonly in k sessions\n")
    write(bots_dir() / "coder" / "memory" / "NOT.md", "---\nexclude-session: '*'\n---\nexcluded from sessions\n")
    memory = BotMemory("coder", bots_dir() / "coder", project_root=project, session=SessionName("k2x9"))
    memory.refresh()
    assert "only in k sessions" in memory.prompt() and "excluded from sessions" not in memory.prompt()
    assert "only in k sessions" in memory.fresh().prompt()   # /memory's copy keeps the session
    unsaved = BotMemory("coder", bots_dir() / "coder", project_root=project)
    unsaved.refresh()
    assert "only in k sessions" not in unsaved.prompt() and "excluded from sessions" in unsaved.prompt()
