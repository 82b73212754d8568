"""One-writer locks that name their holder.

A lock is an exclusive `flock` on a small file. The process that wins truncates the file and
writes its pid as plain decimal text (no newline); a process that is refused reads the pid
back so its error can say who holds the lock. Two rules keep this simple and safe:

- The lock file is never deleted. Deleting it would let a second process lock a *new* inode
  while the first still holds the old one, and both would believe they are the only writer.
- The kernel drops an flock when the last descriptor of its open file goes away, which
  includes the holder being killed. So a crash never leaves a stale lock, and there is no
  "is that pid still alive?" guessing.

We call `fcntl.flock` directly rather than use the `filelock` package: it cannot record the
holder's pid, and on ENOSYS it silently falls back to a "soft" lock that is no lock at all.
A filesystem that answers ENOLCK, EOPNOTSUPP/ENOTSUP or ENOSYS cannot lock, and we refuse to
write there instead of pretending (`LockingUnsupported`).

The descriptor is opened close-on-exec (Python's default, spelled out here because it
matters): a shell command started by a tool must not inherit it, or the lock would outlive
iota for as long as that command runs.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from iota.errors import LockingUnsupported, SessionError, SessionLocked

# Errors with which flock says "this filesystem cannot lock", as opposed to "someone holds it".
_UNSUPPORTED = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS})

# A pid is a handful of digits; anything longer in the file is not one of ours.
_PID_READ_LIMIT = 32


class HeldLock:
    """A lock this process holds until `release()` (or the end of a `with` block)."""

    def __init__(self, path: Path, fd: int):
        self.path = path
        self._fd: int | None = fd

    def release(self) -> None:
        """Let go of the lock. The file stays; releasing twice is harmless."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> HeldLock:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def acquire(path: Path, refused: Callable[[int | None], str]) -> HeldLock:
    """Take the lock at `path` without waiting, or raise.

    `refused(pid)` builds the message of the `SessionLocked` raised when another process holds
    the lock; `pid` is None when the holder has not written one (it is between taking the lock
    and writing, or it is not an iota process).
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise SessionError(f"cannot open lock file {path}: {exc.strerror}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = _read_pid(fd)
        os.close(fd)
        raise SessionLocked(refused(pid), pid) from None
    except OSError as exc:
        os.close(fd)
        if exc.errno in _UNSUPPORTED:
            raise LockingUnsupported(
                f"file locking is not supported under {path.parent}; iota cannot open or delete a session there"
            ) from exc
        raise SessionError(f"cannot lock {path}: {exc.strerror}") from exc
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
    except OSError as exc:
        HeldLock(path, fd).release()
        raise SessionError(f"cannot write the pid into lock file {path}: {exc.strerror}") from exc
    return HeldLock(path, fd)


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, _PID_READ_LIMIT, 0).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None
