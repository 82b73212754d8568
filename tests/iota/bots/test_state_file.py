"""state.json is believed only while its pid holds the bot's lock."""

from __future__ import annotations

import os
import subprocess
import sys

from iota.bots.bot import LOCK_NAME
from iota.bots.state_file import BotState, read_state, remove_state, state_line, write_state
from iota.sessions import locking


def state(pid: int, **extra) -> BotState:
    return BotState("coder", pid, "/p", "working", "2025-06-01T10:00:00+00:00", **extra)


def test_a_state_is_read_while_its_pid_holds_the_lock(tmp_path):
    write_state(tmp_path, state(os.getpid(), task="migrate db", step="2/5"))
    assert read_state(tmp_path) is None   # nobody holds the lock: the file is stale
    held = locking.acquire(tmp_path / LOCK_NAME, lambda pid: "held")
    try:
        assert read_state(tmp_path) == state(os.getpid(), task="migrate db", step="2/5")
    finally:
        held.release()
    assert read_state(tmp_path) is None


def test_a_state_whose_pid_is_not_the_lock_holder_is_stale(tmp_path):
    # The pid was reused: some other live process has it, while a different process holds the lock.
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        write_state(tmp_path, state(other.pid))
        held = locking.acquire(tmp_path / LOCK_NAME, lambda pid: "held")
        try:
            assert read_state(tmp_path) is None
        finally:
            held.release()
    finally:
        other.kill()
        other.wait()


def test_unreadable_or_malformed_files_are_no_state(tmp_path):
    held = locking.acquire(tmp_path / LOCK_NAME, lambda pid: "held")
    try:
        for text in ("", "{", "[]", '{"pid": "1"}', '{"agent": "a", "pid": true}'):
            (tmp_path / "state.json").write_text(text)
            assert read_state(tmp_path) is None
        remove_state(tmp_path)
        remove_state(tmp_path)   # twice is fine
        assert not (tmp_path / "state.json").exists()
    finally:
        held.release()


def test_the_line_iota_bots_shows():
    from datetime import datetime, timezone
    now = datetime(2025, 6, 1, 10, 0, 12, tzinfo=timezone.utc)
    assert state_line(state(1, task="migrate db", step="2/5"), now) == 'working · 12s · task "migrate db" 2/5'
    assert state_line(state(1), now) == "working · 12s"
