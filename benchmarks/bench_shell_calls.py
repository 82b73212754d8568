"""Per-call cost of the `shell` tool: `true` run many times through the real ShellTool, in the
bubblewrap sandbox and without it (under the reaper), the two taking turns call by call
(interleaved). Prints min / median / max of the wall time of one call, and the sandbox's cost as
a ratio. The project is a git repository, so the `.git` protections are in every call. Where
bubblewrap cannot run, only the unsandboxed calls are measured, and it says why.

    .venv/bin/python benchmarks/bench_shell_calls.py [calls]

HOME points at a temp dir for the run, as in the tests.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.figures import SPREAD_HEADER, interleaved, parser, ratio, spread  # noqa: E402
from iota.tools.jobs import open_job_table  # noqa: E402
from iota.sandbox.bwrap import Sandbox, probe_sandbox  # noqa: E402
from iota.tools.shell import ShellTool  # noqa: E402


async def measure(root: Path, calls: int) -> dict[str, list[float]]:
    send, _ = trio.open_memory_channel(100)
    async with open_job_table(send) as jobs:
        shells = {"unsandboxed": ShellTool(root=root, jobs=jobs, sandbox=None, auto_run=True)}
        sandbox = await probe_sandbox(root, scratch=jobs.scratch_dir, logs=jobs.log_dir)
        if isinstance(sandbox, Sandbox):
            shells["sandboxed"] = ShellTool(root=root, jobs=jobs, sandbox=sandbox, auto_run=True)
        else:
            print(f"no sandbox here ({sandbox.reason}): the unsandboxed calls alone", file=sys.stderr)
        times: dict[str, list[float]] = {name: [] for name in shells}
        for _, name in interleaved(list(shells), calls):
            start = time.perf_counter()
            result = await shells[name].run({"command": "true"})
            times[name].append(time.perf_counter() - start)
            assert result.content == "[command produced no output]", result.content
        return times


def main() -> None:
    options = parser(__doc__)
    options.add_argument("calls", nargs="?", type=int, default=50, help="calls of each kind (default 50)")
    calls = options.parse_args().calls
    with tempfile.TemporaryDirectory() as home:
        os.environ["HOME"] = home
        root = Path(home) / "project"
        root.mkdir()
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        times = trio.run(measure, root, calls)
    print(f"{calls} interleaved calls of each kind, ms")
    print(f"{'':12} {SPREAD_HEADER}")
    for name, values in times.items():
        print(f"{name:12} {spread(values, 1e3, 1)}")
    if "sandboxed" in times:
        print("\nratio of the medians")
        print(ratio("sandboxed over unsandboxed", statistics.median(times["sandboxed"]),
                    statistics.median(times["unsandboxed"])))


if __name__ == "__main__":
    main()
