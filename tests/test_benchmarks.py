"""Every benchmark starts from a plain install: its `--help` works in an interpreter where pytest
cannot be imported (the test extras are not installed), so a benchmark, or a test helper it uses,
that imports pytest again fails here. No timings are measured or asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = sorted((REPO / "benchmarks").glob("bench_*.py"))

# `import pytest` raises ImportError once sys.modules maps it to None; then the script runs as
# `python benchmarks/bench_x.py --help` would run it.
WITHOUT_PYTEST = """\
import runpy, sys
sys.modules["pytest"] = None
script = sys.argv[1]
sys.argv = [script, "--help"]
runpy.run_path(script, run_name="__main__")
"""


def test_there_are_benchmarks():
    assert len(BENCHMARKS) >= 8


@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda path: path.name)
def test_benchmark_help_runs_without_pytest(script: Path, tmp_path: Path):
    done = subprocess.run([sys.executable, "-c", WITHOUT_PYTEST, str(script)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {script.name}"), done.stdout
    assert "--help" in done.stdout
