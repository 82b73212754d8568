"""What the sandbox lays over its read-only view of the machine, worked out afresh for every
command (so a repository, a file or a socket that appeared since the last one is covered).

Four kinds of thing:

- Git's files that make git run code. A command may commit (so `.git` stays writable), but
  every git directory of the project's repository — `.git` itself, each submodule's under
  `.git/modules`, each linked worktree's under `.git/worktrees` — is bound onto itself, so it
  cannot be renamed away and replaced by a copy with a hook in it, and inside each the files git
  takes code from are bound read-only: `hooks/` and `config` (hooks, `core.hooksPath`,
  `core.fsmonitor`, aliases, filters, `core.sshCommand`, …), `config.worktree`, `commondir`
  (which would point git at another directory's config and hooks), and `info/` (`exclude` would
  hide a planted file from the person's `git status`, `attributes` name filters, `sparse-checkout`
  takes files out of the checkout). A `.git` that is a file
  (`gitdir: …`, in a worktree or a submodule's checkout) is bound read-only as it is.
- iota's own files: `.iota.yaml`/`.iota.yml` in the project root and in the directory iota was
  started in, and `~/.iota.yaml`/`~/.iota.yml` when the home directory is writable at all; the
  same for `.agents/` (skills there join the catalog unasked).
  `~/.iota` (sessions, bots' locks and memory) is hidden behind an empty read-only directory.
- Other programs' Unix sockets outside what the sandbox hides anyway (`/tmp`, `/run/user`,
  `$XDG_RUNTIME_DIR`): every socket `/proc/net/unix` lists — Docker's, D-Bus's, snapd's, a
  `screen` session's — gets `/dev/null` bound over it, so connecting fails. A socket inside a
  writable path (the project, a `write:` directory) stays: what lives there is the project's.
- Nothing else: reads are not restricted.

A socket that goes away between the scan and bwrap's mount makes that one command fail with
bwrap's error (it cannot create a mount point in a read-only directory); the next one scans again.

Paths that do not exist yet are protected through placeholders (see `placeholders.py`); a
protected path is only mounted when its directory is writable inside the sandbox, since
anything else is read-only already.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from iota.sandbox.placeholders import Protected

# The files and directories inside a git directory that git takes code or a redirection from.
GIT_PROTECTED = (
    Protected("hooks", None),
    Protected("config"),
    Protected("config.worktree"),
    # An empty commondir breaks git; "." names the git directory itself, which changes nothing.
    Protected("commondir", b".\n"),
    # exclude hides files from `git status` and `git add -A`, attributes names filters and diff
    # drivers, sparse-checkout takes files out of the checkout: all of them change what the
    # person sees of the project.
    Protected("info", None),
)
# A linked worktree's git directory takes its hooks and config from the common directory; its
# info/ holds its own sparse-checkout.
WORKTREE_PROTECTED = (Protected("config.worktree"), Protected("commondir", b".\n"), Protected("info", None))

CONFIG_NAMES = (".iota.yaml", ".iota.yml")
# Where skills live beside a project (and in the home directory): a skill there joins the catalog
# of every later request without a question, so a command must not plant one (iota.skills).
AGENTS_DIR = ".agents"
APP_DIR = ".iota"
RUNTIME_DIRS = ("/run/user",)


@dataclass
class Overlay:
    """The mounts one command gets on top of its writable paths, in the order bwrap applies them."""

    self_binds: list[str] = field(default_factory=list)  # directories bound onto themselves
    protected: list[Protected] = field(default_factory=list)  # bound read-only (placeholders if absent)
    hidden: list[Protected] = field(default_factory=list)  # covered by an empty read-only directory
    sockets: list[str] = field(default_factory=list)  # /dev/null bound over each


def overlay(
    root: str, config_dirs: Sequence[str], home: str | None, writable: Sequence[str], hidden: Sequence[str]
) -> Overlay:
    """The mounts for a command whose writable paths are `writable` (existing directories, bound
    after the directories in `hidden` were replaced by empty ones)."""
    writable_real = [os.path.realpath(path) for path in writable]
    hidden_real = [os.path.realpath(path) for path in hidden]

    def writable_here(path: str) -> bool:
        """Whether a command could create or replace `path`: its directory is writable inside."""
        parent = os.path.realpath(os.path.dirname(path))
        return os.path.isdir(parent) and _within(parent, writable_real)

    result = Overlay()
    result.self_binds, result.protected = _repository_of(root, writable_here)
    directories = list(dict.fromkeys([*config_dirs, *([home] if home else [])]))
    if home:
        app_home = os.path.join(home, APP_DIR)
        if os.path.isdir(app_home) or writable_here(app_home):
            result.hidden.append(Protected(app_home, None))
    # Placeholders outside .git are empty directories: git does not list them.
    result.protected += [
        Protected(os.path.join(directory, name), None) for directory in directories
        for name in (*CONFIG_NAMES, AGENTS_DIR) if writable_here(os.path.join(directory, name))
    ]
    result.sockets = [path for path in host_sockets() if not _within(path, writable_real + hidden_real)]
    return result


def _repository_of(root: str, writable_here) -> tuple[list[str], list[Protected]]:
    """The self-binds and protected paths of the project's repository, where it is writable."""
    dotgit = os.path.join(root, ".git")
    if _real_dir(dotgit):
        return _git_dir(dotgit, writable_here, GIT_PROTECTED)
    if not os.path.isfile(dotgit) or os.path.islink(dotgit):
        return [], []
    binds: list[str] = []
    protected = [Protected(dotgit)] if writable_here(dotgit) else []
    git_dir = _pointed_to(dotgit, "gitdir")
    common = _pointed_to(os.path.join(git_dir, "commondir"), None) if git_dir else None
    if git_dir and common and os.path.realpath(common) != os.path.realpath(git_dir):
        # A linked worktree: its own git directory, then the common one, with hooks and config.
        parts = [(git_dir, WORKTREE_PROTECTED), (common, GIT_PROTECTED)]
    else:
        parts = [(git_dir, GIT_PROTECTED)] if git_dir else []  # a submodule's checkout
    for directory, names in parts:
        more_binds, more_protected = _git_dir(directory, writable_here, names)
        binds += more_binds
        protected += more_protected
    return binds, protected


def _git_dir(git_dir: str, writable_here, names: Sequence[Protected]) -> tuple[list[str], list[Protected]]:
    """A git directory bound onto itself with `names` inside it protected; for a whole repository
    (not a linked worktree's directory) also its linked worktrees' and submodules' directories,
    and the `worktrees`/`modules` directories that hold them, so none can be renamed away."""
    if not _real_dir(git_dir) or not writable_here(git_dir):
        return [], []
    binds = [git_dir]
    protected = [Protected(os.path.join(git_dir, item.path), item.content) for item in names]
    if names is not GIT_PROTECTED:
        return binds, protected
    worktrees = os.path.join(git_dir, "worktrees")
    if _real_dir(worktrees):
        binds.append(worktrees)
        for entry in sorted(os.listdir(worktrees)):
            more_binds, more_protected = _git_dir(os.path.join(worktrees, entry), writable_here, WORKTREE_PROTECTED)
            binds += more_binds
            protected += more_protected
    for directory, is_git_dir in _modules(git_dir):
        if is_git_dir:
            more_binds, more_protected = _git_dir(directory, writable_here, GIT_PROTECTED)
            binds += more_binds
            protected += more_protected
        else:
            binds.append(directory)
    return binds, protected


def _modules(git_dir: str) -> Iterator[tuple[str, bool]]:
    """`modules/` and what is below it down to the submodules' git directories: (path, whether it
    is a git directory). A submodule's name may hold slashes, so its directory can lie deeper."""
    modules = os.path.join(git_dir, "modules")
    if not _real_dir(modules):
        return
    yield modules, False
    for current, subdirectories, _ in os.walk(modules):
        subdirectories.sort()
        for name in list(subdirectories):
            path = os.path.join(current, name)
            is_git_dir = os.path.isfile(os.path.join(path, "HEAD"))
            if not os.path.islink(path):
                yield path, is_git_dir
            if is_git_dir or os.path.islink(path):
                subdirectories.remove(name)  # its own modules are its own call's business


def _real_dir(path: str) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)


def _pointed_to(path: str, prefix: str | None) -> str | None:
    """The path a `gitdir: X` file (prefix "gitdir") or a `commondir` file names, made absolute;
    None when there is no such file or it names nothing."""
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            text = file.read(4096).strip()
    except OSError:
        return None
    if prefix is not None:
        if not text.startswith(prefix + ":"):
            return None
        text = text[len(prefix) + 1 :].strip()
    if not text:
        return None
    return os.path.normpath(os.path.join(os.path.dirname(path), text))


def _within(path: str, directories: Sequence[str]) -> bool:
    return any(path == directory or path.startswith(directory.rstrip("/") + "/") for directory in directories)


def host_sockets(table: str = "/proc/net/unix") -> list[str]:
    """The Unix sockets bound to a path in this network namespace (not abstract ones) that exist
    now, as real paths, each once. (The table lists a listening socket again for every accepted
    connection, so paths are collected first and looked at once each.)"""
    try:
        with open(table, encoding="utf-8", errors="replace") as file:
            lines = file.read().splitlines()[1:]
    except OSError:
        return []
    paths = dict.fromkeys(fields[7] for fields in (line.split(None, 7) for line in lines)
                          if len(fields) == 8 and fields[7].startswith("/"))
    found = {}
    for path in paths:
        try:
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                found[os.path.realpath(path)] = None
        except OSError:
            continue
    return list(found)


def runtime_dirs() -> list[str]:
    """The directories of other programs' sockets and session state a command must not see:
    /run/user (every user's runtime directory), then `$XDG_RUNTIME_DIR` wherever it is (inside
    /run/user too: it is then recreated, empty, for programs that expect it to exist)."""
    directories = [path for path in RUNTIME_DIRS if os.path.isdir(path)]
    xdg = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(xdg) and os.path.isdir(xdg) and xdg not in directories:
        directories.append(xdg)
    return directories
