"""Whole-process time and peak memory of one headless `iota run <agent> -m` turn, per provider.

Runs the real `iota` command against the project's fake model server with an OpenAI-compatible
model and with an Anthropic model, beside `python -c pass` (the interpreter's own floor), the
cases taking turns run by run (interleaved). Prints min / median / max of the wall time, the
peak RSS, and the ratio of Anthropic to OpenAI-compatible.

Peak memory is the maximum resident set size of the measured process alone. It is read with
`getrusage(RUSAGE_CHILDREN)` in a small fresh Python that starts the process and waits for it:
Linux counts into a process's peak the peak of the address space it replaced at `exec`, which
for a child of this script (holding the fake server) is this script's own size — 30 MiB for
`python -c pass`, when the truth is about 10.

    .venv/bin/python benchmarks/bench_headless.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.fake_model import FakeModel  # noqa: E402

IOTA = str(Path(sys.executable).with_name("iota"))

# Run by a fresh `python -S` (about 8 MiB, below any Python process it measures): start the
# command with its output discarded, wait, print the wall seconds and the peak RSS in KiB.
MEASURE = """\
import os, resource, sys, time
start = time.perf_counter()
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ,
                     file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)])
status = os.waitpid(pid, 0)[1]
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, os.waitstatus_to_exitcode(status))
"""


def measure(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """Wall time in seconds and peak RSS in MiB of one run of `argv`."""
    done = subprocess.run([sys.executable, "-S", "-c", MEASURE, *argv], env=env, cwd=cwd, capture_output=True, text=True)
    seconds, peak_kib, code = done.stdout.split()
    if done.returncode != 0 or code != "0":
        raise SystemExit(f"{argv} failed: {done.stderr}")
    return float(seconds), int(peak_kib) / 1024


def spread(values: list[float], unit: str) -> str:
    return f"{min(values):7.3f} {statistics.median(values):7.3f} {max(values):7.3f} {unit}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="See the module docstring for how peak memory is measured.")
    parser.add_argument("--runs", type=int, default=9, help="runs per case (default 9)")
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as home, FakeModel() as model:
        Path(home, ".iota.yaml").write_text(
            "providers:\n"
            f"  oa: {{type: openai, url: '{model.openai_url}', key: k}}\n"
            f"  an: {{type: anthropic, url: '{model.url}', key: k}}\n"
            "models:\n  gpt: oa:fake-gpt\n  claude: an:fake-claude\n"
            "agents:\n  gpt: {model: gpt}\n  claude: {model: claude}\n")
        env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
        env["HOME"] = home
        cases = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "iota run (openai) -m": [IOTA, "run", "gpt", "-m", "hi"],
            "iota run (anthropic) -m": [IOTA, "run", "claude", "-m", "hi"],
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        peaks: dict[str, list[float]] = {name: [] for name in cases}
        for run in range(runs):
            names = list(cases)[run % len(cases):] + list(cases)[: run % len(cases)]
            for name in names:
                if cases[name][0] == IOTA:
                    model.reply("Hello.")
                elapsed, peak = measure(cases[name], env, home)
                times[name].append(elapsed)
                peaks[name].append(peak)
                model.clear_requests()

    print(f"{runs} interleaved runs; min / median / max")
    print(f"{'case':26} {'wall time':>27}   {'peak RSS':>28}")
    for name in cases:
        print(f"{name:26} {spread(times[name], 's')}   {spread(peaks[name], 'MiB')}")
    anthropic, openai = "iota run (anthropic) -m", "iota run (openai) -m"
    print(f"\nanthropic over openai-compatible, median wall time: "
          f"{statistics.median(times[anthropic]) / statistics.median(times[openai]):.2f}x")


if __name__ == "__main__":
    main()
