"""What an iota killed by `kill -9` leaves behind, removed at the next start.

An iota removes its commands' private /tmp (`iota-tmp-<pid>-…`) and its job logs
(`iota-jobs-<pid>-…`) when it exits, and the sandbox's placeholders when each command ends. One
that is killed outright cannot. So at start iota removes those directories whose pid is dead (a
live iota's stay, whoever runs it; only the caller's own are touched), and the placeholders go
with the start-up probe: it holds every protected path once, and releasing a placeholder nobody
else holds removes it (see placeholders.py). The pids cgroups of root's commands are swept in
cgroups.py the same way.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile

# The prefixes of the directories iota.tools.jobs makes: <prefix><pid>-<random>.
TMP_PREFIX = "iota-tmp-"
JOBS_PREFIX = "iota-jobs-"
NAME = re.compile(rf"^(?:{TMP_PREFIX}|{JOBS_PREFIX})(\d+)-[^/]+$")


def pid_is_dead(pid: int) -> bool:
    """Whether no process has this pid (one of another user's counts as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def remove_dead_directories(directory: str | None = None) -> list[str]:
    """Removes the private /tmp and job directories of iotas that are gone; returns their paths."""
    directory = directory or tempfile.gettempdir()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    removed = []
    for entry in entries:
        match = NAME.match(entry.name)
        if not match or not pid_is_dead(int(match[1])):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != os.geteuid():
                continue
        except OSError:
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(entry.path)
    return removed
