"""One-writer locks: the holder's pid is written and named, and a dead holder frees the lock.

Holders that must be *another process* run as a small Python child; flock locks belong to the
open file, so the kernel drops the child's lock the moment it dies.
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from iota.sessions import locking
from iota.errors import LockingUnsupported, SessionError, SessionLocked

REPO = Path(__file__).resolve().parents[3]

# Takes the lock through iota.sessions.locking, so it writes its pid like any iota process.
IOTA_HOLDER = """
import sys
from pathlib import Path
from iota.sessions import locking
lock = locking.acquire(Path(sys.argv[1]), lambda pid: "refused")
print("held", flush=True)
sys.stdin.read()
"""

# Locks the file without writing anything into it, as a foreign program (or an iota process
# caught between taking the lock and writing its pid) would.
SILENT_HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


@contextmanager
def holder(script: str, path: Path) -> Iterator[subprocess.Popen[str]]:
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "held\n"
        yield child
    finally:
        child.kill()
        child.wait()


def session_message(pid: int | None) -> str:
    return f"session abc is open in another iota process (pid {pid})"


def test_the_holder_writes_its_pid_as_bare_decimal(tmp_path):
    path = tmp_path / ".lock"
    with locking.acquire(path, session_message):
        assert path.read_bytes() == str(os.getpid()).encode()
        assert path.stat().st_mode & 0o777 == 0o644 & ~_umask()


def test_an_old_longer_pid_is_overwritten_not_appended_to(tmp_path):
    path = tmp_path / ".lock"
    path.write_text("99999999")
    with locking.acquire(path, session_message):
        assert path.read_text() == str(os.getpid())


def test_another_process_holding_the_lock_is_named_by_pid(tmp_path):
    path = tmp_path / ".lock"
    with holder(IOTA_HOLDER, path) as child:
        with pytest.raises(SessionLocked) as refused:
            locking.acquire(path, session_message)
    assert str(refused.value) == f"session abc is open in another iota process (pid {child.pid})"
    assert refused.value.pid == child.pid


def test_a_holder_that_wrote_no_pid_is_refused_with_none(tmp_path):
    path = tmp_path / ".lock"
    seen = []

    def message(pid: int | None) -> str:
        seen.append(pid)
        return "bot coder is open in another iota process"

    with holder(SILENT_HOLDER, path):
        with pytest.raises(SessionLocked, match="^bot coder is open in another iota process$") as refused:
            locking.acquire(path, message)
    assert seen == [None]
    assert refused.value.pid is None


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    path = tmp_path / ".lock"
    with holder(IOTA_HOLDER, path) as child:
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert path.read_text() == str(child.pid)  # the dead holder's pid is still in the file
        with locking.acquire(path, session_message):
            assert path.read_text() == str(os.getpid())


def test_release_frees_the_lock_and_keeps_the_file(tmp_path):
    path = tmp_path / ".lock"
    lock = locking.acquire(path, session_message)
    with pytest.raises(SessionLocked):
        locking.acquire(path, session_message)  # flock refuses a second open file, even in-process
    lock.release()
    lock.release()  # twice is harmless
    assert path.exists()
    with locking.acquire(path, session_message):
        pass
    with locking.acquire(path, session_message):
        pass


@pytest.mark.parametrize("code", sorted({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS}))
def test_a_filesystem_that_cannot_lock_is_refused(tmp_path, monkeypatch, code):
    def flock(fd, operation):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(fcntl, "flock", flock)
    with pytest.raises(LockingUnsupported) as refused:
        locking.acquire(tmp_path / ".lock", session_message)
    assert str(refused.value) == (
        f"file locking is not supported under {tmp_path}; iota cannot open or delete a session there"
    )


def test_other_lock_failures_are_one_line_session_errors(tmp_path, monkeypatch):
    def flock(fd, operation):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(fcntl, "flock", flock)
    with pytest.raises(SessionError, match=r"^cannot lock .*\.lock: Input/output error$") as refused:
        locking.acquire(tmp_path / ".lock", session_message)
    assert not isinstance(refused.value, LockingUnsupported)


def test_a_lock_file_that_cannot_be_opened_is_a_session_error(tmp_path):
    with pytest.raises(SessionError, match=r"^cannot open lock file .*missing/\.lock: No such file or directory$"):
        locking.acquire(tmp_path / "missing" / ".lock", session_message)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
