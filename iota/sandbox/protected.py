"""The paths no tool may write: one list, shared by the shell's sandbox and the code tools.

Each is a place whose content runs code, outside any sandbox, the next time the person uses
git or iota:

    <root>/.git/hooks, <root>/.git/config     git runs hooks, and `core.fsmonitor`, `core.pager`,
                                              `core.hooksPath`… from the config, on every status
    <root>/.git/modules/…/hooks|config        the same for each submodule (nested ones too; a
                                              submodule named `lib/x` lives at modules/lib/x)
    <root>/.iota.yaml, <root>/.iota.yml       the project's config: providers (where the API key
                                              goes), MCP servers (commands iota starts)
    <root>/.agents                            the project's skills: each joins the catalog of
                                              every later request unasked (iota.skills)
    ~/.iota                                   iota's own state: sessions, bots' memory and locks

The sandbox binds each one that exists read-only over the writable root; the code tools refuse
to write at or under any of them (see iota.tools.code.paths, which is stricter still about `.git`).
Reading them is not restricted.

The paths are real (symlinks resolved): a `.git` that is a link to another directory protects
that directory's hooks and config, and the code tools compare them with resolved paths exactly.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from iota import paths
from iota.errors import IotaError


def protected_paths(root: os.PathLike[str] | str) -> tuple[str, ...]:
    """The protected paths of the project at `root`, whether or not they exist yet."""
    real_root = os.path.realpath(root)
    git = os.path.join(real_root, ".git")
    candidates = [os.path.join(git, "hooks"), os.path.join(git, "config")]
    for gitdir in _submodule_gitdirs(git):
        candidates += [os.path.join(gitdir, "hooks"), os.path.join(gitdir, "config")]
    candidates += [os.path.join(real_root, ".iota.yaml"), os.path.join(real_root, ".iota.yml"),
                   os.path.join(real_root, ".agents")]
    try:
        candidates.append(str(paths.app_home()))
    except IotaError:
        pass  # no $HOME, so no ~/.iota to protect
    return tuple(dict.fromkeys(os.path.realpath(path) for path in candidates))


def _submodule_gitdirs(git: str) -> list[str]:
    """Every git directory under `<git>/modules` (one holding a `HEAD`), in name order."""
    found = []
    for directory, subdirs, files in os.walk(os.path.join(git, "modules")):
        subdirs.sort()
        if "HEAD" in files:
            found.append(directory)
            # Inside a git directory only its own `modules` holds more of them.
            subdirs[:] = ["modules"] if "modules" in subdirs else []
    return found


def is_protected(path: str, protected: Iterable[str]) -> bool:
    """Whether the real path `path` is one of `protected` or lies under one.

    Case folded, for the filesystems (macOS, Windows shares) where `.IOTA.yaml` is `.iota.yaml`;
    on the others the cost is refusing a name that merely looks like a protected one."""
    folded = path.casefold()
    for place in protected:
        place = place.casefold()
        if folded == place or folded.startswith(place.rstrip(os.sep) + os.sep):
            return True
    return False
