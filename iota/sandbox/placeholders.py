"""Placeholders: how the sandbox keeps a command from creating a file that does not exist yet.

A read-only bind mount protects a path inside a writable directory: the command can neither
write it nor rename or remove it (a mount point is busy). But a mount needs something to be
mounted on, and most of what the sandbox protects usually does not exist: `./.iota.yaml`, or
`.git/commondir` (which would point git at a config of the command's choosing). The kernel has
no way to refuse one name in a writable directory without a mount point there, so iota puts a
placeholder at such a path just before the command starts, the sandbox binds it read-only, and
iota removes it again when the last command that relies on it has ended. Nothing is left in the
project afterwards; while a command runs the placeholder is visible from outside, and a
`kill -9` of iota leaves it behind. Inside `.git` a placeholder is a file that says what it is
(git does not list what is in `.git`); anywhere else it is an empty directory, which git does not
list either, so a `git add -A` inside the sandbox cannot commit it (and iota's config loader
skips a config that is a directory).

Several commands — of this iota or of another one in the same project — can rely on one
placeholder at once, and removing it under a running sandbox would lift that sandbox's mount
(since Linux 3.18 removing a mount point from another mount namespace detaches the mount). So
every command holds a shared `flock` on each protected path while it runs, and a placeholder is
removed only by whoever can take the exclusive lock, i.e. when nobody holds it any more. A
placeholder is recognised by its content, so a file the person made is never removed; a
directory placeholder by being empty (an empty `.git/hooks` of the person's may go with it).
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

# What a file placeholder says to anyone who opens it; a comment in YAML and in git's config.
NOTICE = (
    b"# A placeholder iota keeps here while a sandboxed command runs, so that the command cannot\n"
    b"# create this file. iota removes it when the command ends.\n"
)

# Taking the shared lock waits only for another process removing the placeholder (microseconds).
LOCK_ATTEMPTS = 50
LOCK_RETRY_SECONDS = 0.01


@dataclass(frozen=True)
class Protected:
    """A path the sandbox binds read-only; created as a placeholder when it does not exist.

    `content` is what a file placeholder holds; None makes the placeholder an empty directory."""

    path: str
    content: bytes | None = NOTICE


@contextmanager
def holding(paths: Sequence[Protected]) -> Iterator[None]:
    """Makes each path exist (a placeholder where it does not) and holds it until the block ends;
    then removes each placeholder nobody else holds. OSError when a path cannot be held: the
    command must not start without its protection."""
    held: list[tuple[Protected, int]] = []
    try:
        for protected in paths:
            held.append((protected, _hold(protected)))
        yield
    finally:
        for protected, fd in reversed(held):
            _release(protected, fd)


def _hold(protected: Protected) -> int:
    """An open descriptor of the path, with a shared lock on it."""
    for _ in range(LOCK_ATTEMPTS):
        fd = _open_or_create(protected)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)  # Someone is removing it right now: try again on what is there next.
            time.sleep(LOCK_RETRY_SECONDS)
            continue
        if _same_file(fd, protected.path):
            return fd
        os.close(fd)  # Removed between our open and our lock: start again.
    raise OSError(errno.EBUSY, "cannot hold a protected path", protected.path)


def _open_or_create(protected: Protected) -> int:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    if protected.content is None:
        try:
            os.mkdir(protected.path, 0o755)
        except FileExistsError:
            pass  # Whatever is there (a file, even) is what the sandbox binds.
        return os.open(protected.path, flags)
    try:
        fd = os.open(protected.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o444)
    except FileExistsError:
        return os.open(protected.path, flags)
    try:
        os.write(fd, protected.content)
    except OSError:
        os.close(fd)
        os.unlink(protected.path)
        raise
    return fd


def _release(protected: Protected, fd: int) -> None:
    """Drops our lock, then removes the placeholder if it is one and nobody else holds it."""
    os.close(fd)
    remove_abandoned(protected)


def remove_abandoned(protected: Protected) -> None:
    """Removes the placeholder at the path if it is one and nobody holds it: one an iota killed
    by `kill -9` left behind, or ours once we let go."""
    try:
        fd = os.open(protected.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if _same_file(fd, protected.path) and _is_placeholder(fd, protected):
            if protected.content is None:
                os.rmdir(protected.path)
            else:
                os.unlink(protected.path)
    except OSError:
        pass  # Held by someone else, changed, or not empty: it stays.
    finally:
        os.close(fd)


def _same_file(fd: int, path: str) -> bool:
    try:
        on_disk = os.lstat(path)
    except OSError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (on_disk.st_dev, on_disk.st_ino)


def _is_placeholder(fd: int, protected: Protected) -> bool:
    if protected.content is None:
        return not os.listdir(fd)
    content = protected.content
    return os.fstat(fd).st_size == len(content) and os.pread(fd, len(content) + 1, 0) == content
