"""Where iota keeps its files. Everything hangs off $HOME, so tests point HOME at a tmp dir.

    ~/.iota.yaml                     the user's config (else ~/.iota.yml)
    ~/.iota/sessions/<id>/           chat-mode and bot sessions
    ~/.iota/sessions/projects/<slug>/<id>/   agent-mode sessions, one bucket per project
    ~/.iota/bots/<name>/             a bot's pointer, memory and lock
    ~/.iota/skills/                  the user's skills
"""

from __future__ import annotations

import os
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
