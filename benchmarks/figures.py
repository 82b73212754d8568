"""What the benchmarks share: their command line, the order their cases take turns in, min /
median / max of a figure, ratios with the issue's goals beside them, and the wall time and peak
memory of one run of a command.

Not a benchmark itself; each `bench_*.py` imports it (the repository root is on their path).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TypeVar

Case = TypeVar("Case")


def parser(doc: str) -> argparse.ArgumentParser:
    """A command line whose `--help` is the benchmark's docstring: what it measures, and how."""
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def interleaved(cases: Sequence[Case], rounds: int) -> Iterator[tuple[int, Case]]:
    """(round, case) for every case in every round, each round starting one case later than the
    last, so that a slow moment of the shared machine falls on every case alike and no case is
    always the first after a pause."""
    for round_ in range(rounds):
        shift = round_ % len(cases)
        for case in [*cases[shift:], *cases[:shift]]:
            yield round_, case


def spread(values: Sequence[float], scale: float = 1.0, digits: int = 3) -> str:
    """min, median and max of `values` times `scale`, in columns; dashes when there are none."""
    if not values:
        return f"{'–':>9} {'–':>9} {'–':>9}"
    picked = (min(values), statistics.median(values), max(values))
    return " ".join(f"{value * scale:9.{digits}f}" for value in picked)


SPREAD_HEADER = f"{'min':>9} {'median':>9} {'max':>9}"


def ratio(label: str, numerator: float, denominator: float, goal: str = "") -> str:
    """One line: `label: 0.93x`, with the issue's goal beside it when there is one."""
    line = f"  {label:52} {numerator / denominator:6.2f}x"
    return f"{line}   (goal {goal})" if goal else line


def iota_command() -> str:
    """The `iota` installed beside this Python (the benchmarks run with the venv's python)."""
    iota = Path(sys.executable).with_name("iota")
    if not iota.exists():
        raise SystemExit(f"no iota beside {sys.executable}: run the benchmark with the python of the venv "
                         "iota is installed in (.venv/bin/python benchmarks/...)")
    return str(iota)


# Run by a fresh `python -S` (about 8 MiB, below any Python process it measures): start the
# command with its output discarded, wait, print the wall seconds, the peak RSS in KiB and the
# exit status. Why a fresh process: Linux carries into a process's peak (ru_maxrss) the peak of
# the address space it replaced at `exec` — for a child of a benchmark holding the fake server,
# the benchmark's own 30 MiB, when `python -c pass` truly peaks at about 10.
_MEASURE = """\
import os, resource, sys, time
start = time.perf_counter()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ,
                     file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
status = os.waitpid(pid, 0)[1]
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
      os.waitstatus_to_exitcode(status))
"""


def run_measured(argv: Sequence[str], env: dict[str, str], cwd: str | Path) -> tuple[float, float]:
    """Wall seconds and peak RSS in MiB of one run of `argv` (an absolute path first). For a command
    that starts others, the peak is that of its largest process, not their sum."""
    done = subprocess.run([sys.executable, "-S", "-c", _MEASURE, *argv], env=env, cwd=cwd,
                          capture_output=True, text=True, check=False)
    fields = done.stdout.split()
    if done.returncode != 0 or len(fields) != 3 or fields[2] != "0":
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.strip() or done.stdout.strip()}")
    return float(fields[0]), int(fields[1]) / 1024


def environment_without_keys(home: str | Path) -> dict[str, str]:
    """This environment with HOME moved to `home` and no provider keys, so nothing can reach a
    real model or read the person's config."""
    env = {key: value for key, value in os.environ.items()
           if not key.endswith("_API_KEY") and key not in ("TMUX", "HERDR_ENV", "CMUX_SURFACE_ID")}
    env["HOME"] = str(home)
    return env
