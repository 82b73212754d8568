"""MEMORY.md on disk: creating it, the `.prev` backup, writes that fail or are refused leaving the
file as it was, the notices, and telling the tool's own writes from a person's edits."""

from __future__ import annotations

import datetime
import os

import pytest

from iota.memory import file as memory_file
from iota.memory.document import MEMORY_CAP, Add, MemoryRefusal, Remove, Replace
from iota.memory.file import MemoryFile, ensure_memory
from tests.iota.memory.test_document import body_of, file_of


DAY = datetime.date(2026, 9, 30)


@pytest.fixture
def memory(tmp_path):
    return MemoryFile("coder", tmp_path / "bots" / "coder")


def test_ensure_memory_creates_the_file_once(tmp_path):
    bot_dir = tmp_path / "bots" / "coder"
    path = ensure_memory(bot_dir, "coder", DAY)
    assert path.read_text() == "---\nbot: coder\nupdated: 2026-09-30\n---\n# coder memory\n\n"
    path.write_text("mine\n")
    ensure_memory(bot_dir, "coder", DAY)
    assert path.read_text() == "mine\n"


def test_the_first_write_creates_the_file_and_nothing_to_back_up(memory):
    memory.write(Add("one", "user", "User"), DAY)
    assert memory.path.read_text().endswith("## User\n- [user] one (2026-09-30)\n")
    assert not memory.prev_path.exists()


def test_each_write_keeps_the_previous_file_as_prev(memory):
    ensure_memory(memory.directory, "coder", DAY)
    before = memory.path.read_bytes()
    memory.write(Add("one", "user", "User"), DAY)
    assert memory.prev_path.read_bytes() == before
    middle = memory.path.read_bytes()
    memory.write(Add("two", "user", "User"), DAY)
    assert memory.prev_path.read_bytes() == middle
    assert oct(os.stat(memory.prev_path).st_mode & 0o777) == oct(0o644 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_refused_write_touches_nothing(memory):
    memory.directory.mkdir(parents=True)
    memory.path.write_text(file_of(MEMORY_CAP - 10, bot="coder"))
    before = memory.path.read_bytes()
    with pytest.raises(MemoryRefusal):
        memory.write(Add("one more line", "user", "User"), DAY)
    assert memory.path.read_bytes() == before
    assert not memory.prev_path.exists()
    assert memory.take_notices() == []


def test_a_failed_write_leaves_the_file_as_it_was(memory, monkeypatch):
    ensure_memory(memory.directory, "coder", DAY)
    before = memory.path.read_bytes()
    real = memory_file.write_atomically

    def failing(path, data):
        if path == memory.path:
            raise PermissionError(13, "Permission denied")
        real(path, data)

    monkeypatch.setattr(memory_file, "write_atomically", failing)
    with pytest.raises(MemoryRefusal) as caught:
        memory.write(Add("one", "user", "User"), DAY)
    assert str(caught.value) == f"cannot write {memory.path}: Permission denied"
    assert memory.path.read_bytes() == before
    assert memory.take_notices() == []


def test_a_failed_backup_stops_the_write(memory, monkeypatch):
    ensure_memory(memory.directory, "coder", DAY)
    before = memory.path.read_bytes()

    def failing(path, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(memory_file, "write_atomically", failing)
    with pytest.raises(MemoryRefusal) as caught:
        memory.write(Add("one", "user", "User"), DAY)
    assert str(caught.value) == f"cannot back up {memory.path}: No space left on device"
    assert memory.path.read_bytes() == before


def test_a_file_that_is_not_utf8_is_refused(memory):
    memory.directory.mkdir(parents=True)
    memory.path.write_bytes(b"\xff\xfe")
    with pytest.raises(MemoryRefusal) as caught:
        memory.write(Add("one", "user", "User"), DAY)
    assert str(caught.value) == f"{memory.path} is not UTF-8 text"


def test_notices_are_taken_once_in_order(memory):
    memory.write(Add("one", "user", "User"), DAY)
    memory.write(Replace("one", "uno", "inferred"), DAY)
    memory.write(Remove("uno"), DAY)
    assert memory.take_notices() == [
        "memory: MEMORY.md ## User +1 line: [user] one (2026-09-30)",
        "memory: MEMORY.md ## User ~1 line: [inferred] uno (2026-09-30) (was: - [user] one (2026-09-30))",
        "memory: MEMORY.md ## User -1 line: [inferred] uno (2026-09-30)",
    ]
    assert memory.take_notices() == []


def _hand_edit(path, text):
    """A person's edit: same inode, new content, and an mtime that surely differs."""
    stamp = os.stat(path)
    path.write_text(text)
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))


def test_the_tools_own_writes_are_not_outside_edits(memory):
    ensure_memory(memory.directory, "coder", DAY)
    memory.snapshot("iota")
    assert not memory.changed_outside()
    memory.write(Add("one", "user", "User"), DAY)
    assert not memory.changed_outside()
    assert memory.last_seen == memory_file.file_stamp(memory.path)


def test_a_hand_edit_is_an_outside_change_until_the_next_snapshot(memory):
    ensure_memory(memory.directory, "coder", DAY)
    memory.snapshot("iota")
    _hand_edit(memory.path, memory.path.read_text() + "- Never rebase\n")
    assert memory.changed_outside()
    assert "- Never rebase" in memory.snapshot("iota").block
    assert not memory.changed_outside()


def test_a_hand_edit_folded_into_a_tool_write_still_counts(memory):
    ensure_memory(memory.directory, "coder", DAY)
    memory.snapshot(None)
    _hand_edit(memory.path, memory.path.read_text() + "- Never rebase\n")
    memory.write(Add("one", "user", "User"), DAY)
    assert memory.changed_outside()
    memory.snapshot(None)
    assert not memory.changed_outside()


def test_a_deleted_or_created_file_is_an_outside_change(memory):
    memory.snapshot(None)
    assert not memory.changed_outside()
    ensure_memory(memory.directory, "coder", DAY)
    assert memory.changed_outside()
    memory.snapshot(None)
    memory.path.unlink()
    assert memory.changed_outside()


def test_current_is_the_body_fresh_cut_and_trimmed(memory):
    memory.directory.mkdir(parents=True)
    memory.path.write_text("---\nbot: coder\n---\n\n# coder memory\n\n## User\n- [user] x (2026-01-01)\n\n")
    current = memory.current()
    assert current.body == "# coder memory\n\n## User\n- [user] x (2026-01-01)"
    assert current.size == len("\n# coder memory\n\n## User\n- [user] x (2026-01-01)\n\n")
    big = file_of(MEMORY_CAP + 500, bot="coder")
    memory.path.write_text(big)
    current = memory.current()
    assert current.size == MEMORY_CAP + 500
    assert len(current.body) <= MEMORY_CAP and body_of(big).startswith(current.body)
    memory.path.write_text("---\nbot: other\n---\nsecret plans\n")
    assert memory.current().body == ""
    memory.path.write_bytes(b"\xff")
    assert memory.current().body == ""
