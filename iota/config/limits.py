"""`tools.shell.limits`: what one sandboxed command may use, checked when the config is read.

    tools:
      shell:
        limits: {memory: 8G, file_size: 4G, processes: 2048}

- `memory` is RLIMIT_AS, the address space of each process: a memory bomb gets "Cannot allocate
  memory" (MemoryError, `xmalloc: cannot allocate`) instead of pushing the machine into swap and
  the OOM killer. Default: half the machine's memory.
- `file_size` is RLIMIT_FSIZE, the largest file a command may write: a runaway writer is stopped
  (SIGXFSZ, or "File too large") before it fills the disk. Default: 4 GiB.
- `processes` is RLIMIT_NPROC, counted in the sandbox's own user namespace: a fork bomb gets
  "Resource temporarily unavailable". Default: 2048 (threads count too).

Sizes are bytes, or a number with K, M, G or T (powers of 1024). Each is checked against a range
here, by the key audit, so a typo fails at its key instead of leaving a command without a limit.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

KIB, MIB, GIB, TIB = 1024, 1024**2, 1024**3, 1024**4
UNITS = {"": 1, "K": KIB, "M": MIB, "G": GIB, "T": TIB}
SIZE = re.compile(r"^\s*(\d+)\s*([KMGT]?)(?:i?B)?\s*$", re.IGNORECASE)

# Below these a shell and the tools it starts cannot run at all; above them a limit limits nothing.
RANGES = {
    "memory": (64 * MIB, 1024 * TIB),
    "file_size": (1 * MIB, 1024 * TIB),
    "processes": (16, 4_194_304),  # the kernel's largest pid_max
}
KEYS = tuple(RANGES)

DEFAULT_FILE_SIZE = 4 * GIB
DEFAULT_PROCESSES = 2048


def half_the_memory() -> int:
    """Half the machine's physical memory (4 GiB where it cannot be read)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError):
        return 4 * GIB


class BadValue(ValueError):
    """A value of the wrong type or range; `key` is where it stands inside the entry (here, below
    the shell set: `limits.memory`). Every entry's decoding raises it (iota.config.entries)."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class ShellLimits:
    memory: int  # bytes
    file_size: int  # bytes
    processes: int

    @classmethod
    def default(cls) -> ShellLimits:
        return cls(half_the_memory(), DEFAULT_FILE_SIZE, DEFAULT_PROCESSES)


def decode_limits(raw: Any) -> ShellLimits:
    """The limits a `limits:` mapping sets over the defaults; BadValue at the key, saying what it
    wants, for anything else (`limits.memory`: `want a size from 64M to 1024T, got "lots"`)."""
    limits = ShellLimits.default()
    if raw is None:
        return limits
    if not isinstance(raw, dict):
        raise BadValue("limits", f"want a mapping of {', '.join(KEYS)}")
    values = {}
    for key, value in raw.items():
        if key not in RANGES:
            raise BadValue(f"limits.{key}", f"unknown key (want {', '.join(KEYS)})")
        values[key] = _checked(key, value)
    return ShellLimits(**{**limits.__dict__, **values})


def _checked(key: str, value: Any) -> int:
    low, high = RANGES[key]
    if key == "processes":
        want = f"a whole number from {low} to {high}"
        number = value if isinstance(value, int) and not isinstance(value, bool) else None
    else:
        want = f"a size from {show_size(low)} to {show_size(high)}"
        number = parse_size(value)
    if number is None or not low <= number <= high:
        shown = f'"{value}"' if isinstance(value, str) else repr(value)
        raise BadValue(f"limits.{key}", f"want {want}, got {shown}")
    return number


def parse_size(value: Any) -> int | None:
    """Bytes from 1048576, "1048576", "1M" or "1 MiB"; None for anything else."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str) or not (match := SIZE.match(value)):
        return None
    return int(match[1]) * UNITS[match[2].upper()]


def show_size(size: int) -> str:
    """The largest unit that divides `size` exactly: 4G, 1536M, 100."""
    for unit in ("T", "G", "M", "K"):
        if size % UNITS[unit] == 0:
            return f"{size // UNITS[unit]}{unit}"
    return str(size)
