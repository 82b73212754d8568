"""The code tools' jail: where a model's path really leads, and opening it so that the file
checked is the file used.

A path argument is joined to the project root and cleaned, then every symlink in it is resolved:
the real path must lie inside the project's real root, whatever tool asks. `homelink/.bashrc`,
where `homelink` is a link to the home directory (made by a shell command or shipped in a
cloned repository), is refused like `../.bashrc`. Writers also refuse protected paths.

Checking a path and then opening it by name would leave a gap: a command running in the
background could swap a directory for a link to $HOME between the check and the open. So
nothing is opened by its full name. The walk starts from a descriptor of the real root and
opens one component at a time relative to the one before (`dir_fd=`), each with O_NOFOLLOW.
The real path has no links in it, so a link met on the way was swapped in after the check,
and the open fails (ELOOP or ENOTDIR) instead of following it.

Only regular files are read or written. A FIFO would make a plain open wait for a writer
forever, and a device can wait on a terminal, so the type is checked before the open (lstat),
and again after it (fstat, in case of a swap): every open is O_NONBLOCK and O_NOCTTY, so even a
swapped-in FIFO or tty cannot block it or become the controlling terminal.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass

from iota.errors import ToolError
from iota.sandbox.protected import is_protected, protected_paths

DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


@dataclass(frozen=True)
class Target:
    """A path inside the project after its links were resolved."""

    path: str  # absolute and real
    shown: str  # relative to the real root, `.` for the root: how results and approvals name it

    @property
    def parts(self) -> list[str]:
        """The components to open one by one from the root (`["."]` for the root itself)."""
        return self.shown.split(os.sep)


class Jail:
    """The project root the code tools may not leave, and the only way they open files."""

    def __init__(self, root: os.PathLike[str] | str):
        # `root` joins relative arguments and names the root in refusals, as the person gave it;
        # `real_root` is what every resolved path is judged against.
        self.root = os.path.abspath(root)
        self.real_root = os.path.realpath(root)

    def locate(self, arg: str) -> Target:
        """Where the model's `path` argument really leads, or a refusal if that is outside the root.

        The target need not exist (write_file creates it); the links of the part that does are
        resolved."""
        cleaned = arg.strip()
        if not cleaned:
            raise ToolError("missing required argument: path")
        if "\0" in cleaned:
            raise ToolError(f"path contains a NUL byte: {cleaned!r}")
        lexical = os.path.normpath(os.path.join(self.root, cleaned))
        real = os.path.realpath(lexical)
        if not _within(self.real_root, real):
            leads = f" (a symlink leads to {real})" if _within(self.root, lexical) else ""
            raise ToolError(f"path is outside the project root ({self.root}): {arg}{leads}")
        return Target(real, os.path.relpath(real, self.real_root))

    def refuse_protected(self, target: Target) -> None:
        """Refuse a write to a protected path, or to anything inside a `.git` at any depth.

        The shared list (iota.sandbox.protected) is what the sandbox can bind read-only. The code
        tools go further because they can, and never need to write git's own files: besides
        hooks and config, git takes code to run from more places inside a `.git` (`commondir`
        points it at another config, a nested repository has its own config), and a `.git` file
        says where the git directory is."""
        # Case folded, for the filesystems (macOS, Windows shares) where `.GIT` is `.git`.
        inside_git = any(part.casefold() == ".git" for part in target.parts)
        if inside_git or is_protected(target.path, protected_paths(self.real_root)):
            raise ToolError(
                f"{target.shown} is protected: the code tools never write inside .git, "
                "the project's .iota.yaml or ~/.iota — ask the user to change it"
            )

    def open_directory(self, target: Target) -> int:
        """A descriptor of the directory `target`, reached without following any link."""
        return self._descend(target.parts, make=False)

    def make_parents(self, target: Target) -> None:
        """Create the missing directories above `target`, without following any link."""
        os.close(self._descend(target.parts[:-1], make=True))

    def open_file(self, target: Target, flags: int, mode: int = 0o644) -> int:
        """`target` opened with `flags` (a mode, O_CREAT…), refusing a link at any component.

        Without O_CREAT the file must be a regular one: see `open_regular_at`."""
        parent = self._descend(target.parts[:-1], make=False)
        try:
            return open_regular_at(parent, target.parts[-1], flags, mode)
        finally:
            os.close(parent)

    def read(self, target: Target, limit: int) -> tuple[bytes, os.stat_result]:
        """The first `limit` bytes of the regular file `target`, and its stat."""
        fd = self.open_file(target, os.O_RDONLY)
        seen = os.fstat(fd)
        return read_prefix(fd, limit), seen

    def _descend(self, names: list[str], *, make: bool) -> int:
        fd = os.open(self.real_root, DIRECTORY_FLAGS)
        for name in names:
            try:
                if make:
                    try:
                        os.mkdir(name, dir_fd=fd)
                    except FileExistsError:
                        pass  # a directory already, or something the open below refuses
                child = _open_directory_at(fd, name)
            finally:
                os.close(fd)
            fd = child
        return fd


def _open_directory_at(dir_fd: int, name: str) -> int:
    """The directory `name` in `dir_fd`. A link there fails with ELOOP: Linux says ENOTDIR for
    O_DIRECTORY with O_NOFOLLOW, which would tell the model the wrong story."""
    try:
        return os.open(name, DIRECTORY_FLAGS, dir_fd=dir_fd)
    except NotADirectoryError:
        if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP)) from None
        raise


def open_regular_at(dir_fd: int, name: str, flags: int, mode: int = 0o644, *, seen_regular: bool = False) -> int:
    """The regular file `name` in the directory `dir_fd`, opened with `flags`.

    Anything else fails as the kernel fails an open of a socket: OSError ENXIO (EISDIR for a
    directory), and, when an lstat already shows it, without being opened at all. A link fails
    with ELOOP. `seen_regular` says the caller's own scan already saw a regular file there (a
    walk), so only the check after the open is left to do."""
    if not flags & os.O_CREAT and not seen_regular:
        before = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
        if not stat.S_ISREG(before) and not stat.S_ISLNK(before):  # a link is left to the open
            raise _not_regular(before)
    fd = os.open(name, flags | FILE_FLAGS, mode, dir_fd=dir_fd)
    opened = os.fstat(fd).st_mode
    if not stat.S_ISREG(opened):
        os.close(fd)
        raise _not_regular(opened)
    return fd


def _not_regular(mode: int) -> OSError:
    return OSError(errno.EISDIR if stat.S_ISDIR(mode) else errno.ENXIO, "not a regular file")


def read_prefix(fd: int, limit: int) -> bytes:
    """The first `limit` bytes of the file open as `fd`; closes `fd`."""
    with open(fd, "rb") as file:
        return file.read(limit)


def open_failure(verb: str, shown: str, error: OSError) -> ToolError:
    """The one-line refusal for a failed open: `src is a directory`, `pipe is not a regular
    file`, or `cannot read a.txt: No such file or directory`."""
    if error.errno == errno.EISDIR:
        return ToolError(f"{shown} is a directory")
    if error.errno == errno.ENXIO:  # a socket, FIFO or device (see open_regular_at)
        return ToolError(f"{shown} is not a regular file")
    return ToolError(f"cannot {verb} {shown}: {error.strerror}")


def _within(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
