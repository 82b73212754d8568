"""What `/jobs` shows of the background jobs: one page per job, read fresh each second.

    b3  1m 12s  cargo test  │ test result: ok. 42 passed
    ─ the page: the command in full, when it started and for how long it has run (or how it
      finished), the pid, the output file, and the file's last twenty lines

The output is read from the job's log file (iota.tools.jobs), its last TAIL_BYTES at most, so a
job that writes gigabytes costs the page as much as one that writes a line. What a command
printed is shown, not obeyed: the face draws it with its control characters escaped.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from iota.text import format_elapsed
from iota.tools.jobs import JobInfo

TAIL_LINES = 20
TAIL_BYTES = 64 * 1024


@dataclass(frozen=True)
class JobPage:
    id: str
    name: str          # the command as headers name it: its first line, at most 64 characters
    command: str       # the whole command
    pid: int
    log_path: str
    started_at: str    # local time, HH:MM:SS
    elapsed: str       # `1m 12s`
    tail: tuple[str, ...]  # the output's last lines

    @property
    def last_line(self) -> str:
        return self.tail[-1] if self.tail else ""


def job_pages(jobs: list[JobInfo], now: float | None = None) -> tuple[JobPage, ...]:
    """A page for each job, oldest first. Blocking I/O (each log's tail)."""
    now = time.monotonic() if now is None else now
    wall = time.time() - now
    return tuple(JobPage(job.id, job.name, job.command, job.pid, str(job.log_path),
                         time.strftime("%H:%M:%S", time.localtime(wall + job.started)),
                         format_elapsed(now - job.started), tuple(tail_lines(job.log_path)))
                 for job in jobs)


def tail_lines(path: Path | str, count: int = TAIL_LINES) -> list[str]:
    """The last `count` non-blank lines of the file (of its last TAIL_BYTES), [] when it cannot be read."""
    try:
        with open(path, "rb") as log:
            size = os.fstat(log.fileno()).st_size
            log.seek(max(0, size - TAIL_BYTES))
            data = log.read(TAIL_BYTES)
    except OSError:
        return []
    lines = data.decode("utf-8", errors="replace").splitlines()
    if size > TAIL_BYTES and lines:
        lines = lines[1:]  # the first line was cut at the window's edge
    return [line for line in lines if line.strip()][-count:]
