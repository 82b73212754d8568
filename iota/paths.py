"""Where iota keeps its files. Everything hangs off $HOME, so tests point HOME at a tmp dir.

    ~/.iota.yaml                     the user's config (else ~/.iota.yml)
    ~/.iota/sessions/<id>/           chat-mode and bot sessions
    ~/.iota/sessions/projects/<slug>/<id>/   agent-mode sessions, one bucket per project
    ~/.iota/bots/<name>/             a bot's pointer, memory and lock
    ~/.iota/skills/                  the user's skills
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

from iota.errors import IotaError


def home() -> Path:
    value = os.environ.get("HOME")
    if not value:
        raise IotaError("$HOME is not defined")
    return Path(value)


def app_home() -> Path:
    return home() / ".iota"


def sessions_dir() -> Path:
    return app_home() / "sessions"


def project_sessions_dir(project_root: Path) -> Path:
    return sessions_dir() / "projects" / project_slug(project_root)


def project_slug(project_root: Path) -> str:
    """`/work/p1` → `-work-p1`: the cleaned absolute path with every `/` replaced by `-`."""
    return os.path.normpath(os.path.abspath(project_root)).replace("/", "-")


# A name iota makes a directory of under ~/.iota (a bot's, an agent's memory): no `/`, no `..`.
_DIRECTORY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def is_directory_name(name: str) -> bool:
    """Whether `name` may become one directory under ~/.iota: letters, digits, ".", "_" or "-",
    at most 64 characters, starting with a letter or digit."""
    return bool(_DIRECTORY_NAME.fullmatch(name))


def bots_dir() -> Path:
    return app_home() / "bots"


def skills_dir() -> Path:
    return app_home() / "skills"


def user_config_path() -> Path:
    """The user's config file: `~/.iota.yaml`, else `~/.iota.yml` if only that exists."""
    return _yaml_or_yml(home())


def project_config_path(cwd: Path) -> Path:
    """The working directory's config file: `.iota.yaml`, else `.iota.yml` if only that exists."""
    return _yaml_or_yml(cwd)


def _yaml_or_yml(directory: Path) -> Path:
    yaml_path, yml_path = directory / ".iota.yaml", directory / ".iota.yml"
    return yml_path if not yaml_path.exists() and yml_path.exists() else yaml_path


def project_root(cwd: Path) -> Path:
    """The first ancestor of `cwd` holding a `.git` entry (dir, file or dangling link), else `cwd`."""
    cwd = Path(os.path.abspath(cwd))
    for candidate in (cwd, *cwd.parents):
        if os.path.lexists(candidate / ".git"):
            return candidate
    return cwd


def read_regular_file(path: Path | str) -> tuple[bytes, tuple[int, int], str]:
    """The bytes of the regular file at `path`, its (device, inode) and the real path of what was
    opened, all through one open, so a link swapped in after a check is judged by what the open
    reached. OSError for anything but a regular file (opened non-blocking: a FIFO would block)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(fd, "rb") as file:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return file.read(), (status.st_dev, status.st_ino), _opened_path(fd, path, status)


def _opened_path(fd: int, path: Path | str, status: os.stat_result) -> str:
    """The real path of the file open as `fd`: as Linux's /proc gives it; elsewhere `path`
    resolved now, or "" when that is no longer the file that was opened."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        resolved = os.path.realpath(path)
        try:
            now = os.stat(resolved)
        except OSError:
            return ""
        return resolved if (now.st_dev, now.st_ino) == (status.st_dev, status.st_ino) else ""


def is_under(path: str, directory: str) -> bool:
    """Whether the real path `path` is `directory` (a real path) or lies below it."""
    return bool(path) and os.path.commonpath([directory, path]) == directory
