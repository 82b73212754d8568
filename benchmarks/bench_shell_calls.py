"""Per-call cost of the `shell` tool: `true` run many times through the real ShellTool, in the
bubblewrap sandbox and without it (under the reaper), with the min and median wall time of one
call. The project is a git repository, so the `.git` protections are in every call.

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

from iota.tools.jobs import open_job_table  # noqa: E402
from iota.tools.sandbox import Sandbox, probe_sandbox  # noqa: E402
from iota.tools.shell import ShellTool  # noqa: E402


async def measure(root: Path, calls: int, sandboxed: bool) -> list[float]:
    send, _ = trio.open_memory_channel(100)
    async with open_job_table(send) as jobs:
        sandbox = None
        if sandboxed:
            sandbox = await probe_sandbox(root, scratch=jobs.scratch_dir, logs=jobs.log_dir)
            if not isinstance(sandbox, Sandbox):
                raise SystemExit(f"no sandbox here: {sandbox.reason}")
        shell = ShellTool(root=root, jobs=jobs, sandbox=sandbox, auto_run=True)
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            result = await shell.run({"command": "true"})
            times.append(time.perf_counter() - start)
            assert result.content == "[command produced no output]", result.content
        return times


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    with tempfile.TemporaryDirectory() as home:
        os.environ["HOME"] = home
        root = Path(home) / "project"
        root.mkdir()
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        for sandboxed in (True, False):
            times = trio.run(measure, root, calls, sandboxed)
            label = "sandboxed" if sandboxed else "unsandboxed"
            print(f"{label:12} {calls} calls: min {min(times) * 1000:.1f} ms, "
                  f"median {statistics.median(times) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
