"""The process limit where RLIMIT_NPROC does not hold: an iota run by root.

The kernel exempts the root user from RLIMIT_NPROC, and a user namespace does not change that:
the sandbox maps root to itself, and the exemption is decided on the user outside (kuid 0). So
for root every sandboxed command runs in a `pids` cgroup of its own, whose `pids.max` is the
`processes` limit: the command's shell is moved into it before it becomes bwrap, so everything
the command starts is counted, and a fork bomb gets "Resource temporarily unavailable" as it
would from the rlimit. Inside the sandbox the cgroup files are read-only (the whole root is) and
no capability is left to move a process out.

The cgroup lives beside this process's own: in the cgroup v1 `pids` hierarchy, or in cgroup v2
where this process's cgroup hands the `pids` controller to its children (or is the root, where it
can be turned on). It is named `iota-<pid>-<n>` and removed when the command has ended; those of
an iota killed by `kill -9` are removed at the next start (`remove_dead_cgroups`). Where no such
cgroup can be made (a container with /sys/fs/cgroup read-only) root's commands are not limited
in processes, and the start-up card says so.
"""

from __future__ import annotations

import itertools
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager

from iota.sandbox.leftovers import pid_is_dead

PREFIX = "iota-"
NAME = re.compile(r"^iota-(\d+)-\d+$")
_numbers = itertools.count(1)
# A command's processes are gone when bwrap has exited, but the kernel may take a moment to let
# go of the cgroup.
REMOVE_ATTEMPTS = 20
REMOVE_RETRY_SECONDS = 0.01


def needed() -> bool:
    """Whether the process limit needs a cgroup: only root is exempt from RLIMIT_NPROC."""
    return os.geteuid() == 0


def pids_parent(mountinfo: str = "/proc/self/mountinfo", cgroups: str = "/proc/self/cgroup") -> str | None:
    """The directory where this process can make `pids` cgroups, or None."""
    try:
        with open(mountinfo, encoding="utf-8") as file:
            mounts = [line.split() for line in file]
        with open(cgroups, encoding="utf-8") as file:
            memberships = [line.rstrip("\n").split(":", 2) for line in file]
    except OSError:
        return None
    v1 = [mount[4] for mount in mounts if _fstype(mount) == "cgroup" and "pids" in mount[-1].split(",")]
    v2 = [mount[4] for mount in mounts if _fstype(mount) == "cgroup2"]
    for _, controllers, path in memberships:
        if "pids" in controllers.split(",") and v1:
            parent = os.path.join(v1[0], path.lstrip("/"))
            if os.access(parent, os.W_OK):
                return parent
    for _, controllers, path in memberships:
        if controllers == "":
            for mount in v2:
                parent = os.path.join(mount, path.lstrip("/"))
                if _hands_pids_down(parent, is_root=path == "/"):
                    return parent
    return None


def _fstype(mount: list[str]) -> str:
    return mount[mount.index("-") + 1] if "-" in mount else ""


def _hands_pids_down(parent: str, *, is_root: bool) -> bool:
    control = os.path.join(parent, "cgroup.subtree_control")
    try:
        if "pids" in open(control, encoding="utf-8").read().split():
            return os.access(parent, os.W_OK)
        if is_root and "pids" in open(os.path.join(parent, "cgroup.controllers"), encoding="utf-8").read().split():
            with open(control, "w", encoding="utf-8") as file:
                file.write("+pids")
            return True
    except OSError:
        pass
    return False


def new_name(parent: str) -> str:
    """The path of this process's next cgroup under `parent` (not created yet)."""
    return os.path.join(parent, f"{PREFIX}{os.getpid()}-{next(_numbers)}")


@contextmanager
def pids_cgroup(path: str, processes: int) -> Iterator[None]:
    """The cgroup at `path`, with at most `processes` processes, while the block runs; OSError
    when it cannot be made (the command must not start without its limit)."""
    os.mkdir(path, 0o755)
    try:
        with open(os.path.join(path, "pids.max"), "w", encoding="utf-8") as file:
            file.write(str(processes))
        yield
    finally:
        remove(path)


def remove(path: str) -> None:
    for _ in range(REMOVE_ATTEMPTS):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(REMOVE_RETRY_SECONDS)


def joining(path: str, argv: list[str]) -> list[str]:
    """`argv` started by a shell that first moves itself into the cgroup at `path`."""
    return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', os.path.join(path, "cgroup.procs"), *argv]


def remove_dead_cgroups(parent: str) -> None:
    """Removes the cgroups of iotas that are gone (killed by `kill -9`, say)."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        match = NAME.match(name)
        if match and pid_is_dead(int(match[1])):
            remove(os.path.join(parent, name))
