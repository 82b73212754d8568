"""MEMORY.md as people keep it: a symbolic link into a git repository, and a front matter they
opened and did not close yet. Real files and real links in a tmp dir."""

from __future__ import annotations

import datetime
import os

import pytest

from iota.memory.document import Add, MemoryRefusal
from iota.memory.file import MemoryFile, ensure_memory

DAY = datetime.date(2026, 9, 30)


@pytest.fixture
def linked(tmp_path):
    """The bot's MEMORY.md is a link to `notes/coder.md` in a repository of the person's."""
    repo = tmp_path / "repo" / "notes"
    repo.mkdir(parents=True)
    target = repo / "coder.md"
    target.write_text("---\nbot: coder\n---\n# coder memory\n\n## User\n- Never rebase\n")
    memory = MemoryFile("coder", tmp_path / "bots" / "coder")
    memory.directory.mkdir(parents=True)
    memory.path.symlink_to(target)
    return memory, target


def test_a_linked_memory_is_written_through_the_link(linked):
    memory, target = linked
    memory.snapshot("project")
    memory.write(Add("Prefers tabs", "user", "User"), DAY)
    assert os.path.islink(memory.path) and os.readlink(memory.path) == str(target)
    assert "- [user] Prefers tabs (2026-09-30)" in target.read_text()
    assert "- Never rebase" in target.read_text()
    assert sorted(p.name for p in target.parent.iterdir()) == ["coder.md"]  # the temp file was renamed over it
    assert "- Never rebase" in memory.prev_path.read_text() and not os.path.islink(memory.prev_path)
    assert not memory.changed_outside()  # the tool's own write, seen through the link


def test_a_link_to_a_file_not_there_yet_gets_the_file(tmp_path):
    bot_dir = tmp_path / "bots" / "coder"
    bot_dir.mkdir(parents=True)
    target = tmp_path / "repo" / "coder.md"
    target.parent.mkdir()
    (bot_dir / "MEMORY.md").symlink_to(target)
    ensure_memory(bot_dir, "coder", DAY)
    assert os.path.islink(bot_dir / "MEMORY.md")
    assert target.read_text().startswith("---\nbot: coder\n")


UNCLOSED = "---\nbot: coder\nupdated: 2026-09-29\n# coder memory\n\n## User\n- [user] Prefers tabs (2026-09-29)\n"


def test_an_unclosed_front_matter_is_reported_and_never_written_over(tmp_path):
    memory = MemoryFile("coder", tmp_path)
    memory.path.write_text(UNCLOSED)
    with pytest.raises(MemoryRefusal) as refused:
        memory.write(Add("Likes tests", "user", "User"), DAY)
    assert str(refused.value) == (f"{memory.path} opens a front matter with --- on its first line and never closes "
                                  "it; nothing was written — ask the user to add the closing --- line")
    assert memory.path.read_text() == UNCLOSED
    snapshot = memory.snapshot("project")
    assert snapshot.warnings == [f"{memory.path} opens a front matter with --- on its first line and never closes "
                                 "it; add the closing --- line (until then the model is shown the whole file and "
                                 "cannot write to it)"]
    assert "Prefers tabs" in snapshot.block
