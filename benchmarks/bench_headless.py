"""Whole-process time and peak memory of one headless `iota run <agent> -m` turn.

Runs the real `iota` command against the project's fake model server, once with an
OpenAI-compatible model and once with an Anthropic model, beside `python -c pass` and
`python -c "import anthropic"` measured the same way, and prints the median and peak RSS.

    .venv/bin/python benchmarks/bench_headless.py [runs]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.fake_model import FakeModel  # noqa: E402

IOTA = str(Path(sys.executable).with_name("iota"))


def measure(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, int]:
    """Wall time in seconds and peak RSS in MiB of one run of `argv`."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{argv} failed: {process.stderr.read().decode()}")
    return elapsed, usage.ru_maxrss // 1024


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    with tempfile.TemporaryDirectory() as home, FakeModel() as model:
        Path(home, ".iota.yaml").write_text(
            "providers:\n"
            f"  oa: {{type: openai, url: '{model.openai_url}', key: k}}\n"
            f"  an: {{type: anthropic, url: '{model.url}', key: k}}\n"
            "models:\n  gpt: oa:fake-gpt\n  claude: an:fake-claude\n"
            "agents:\n  gpt: {model: gpt}\n  claude: {model: claude}\n")
        env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
        env["HOME"] = home
        cases = [
            ("python -c pass", [sys.executable, "-c", "pass"]),
            ("python -c 'import anthropic'", [sys.executable, "-c", "import anthropic"]),
            ("iota run (openai) -m", [IOTA, "run", "gpt", "-m", "hi"]),
            ("iota run (anthropic) -m", [IOTA, "run", "claude", "-m", "hi"]),
        ]
        print(f"{'case':32} {'median s':>9} {'min s':>7} {'peak MiB':>9}   ({runs} runs)")
        for name, argv in cases:
            times, peaks = [], []
            for _ in range(runs):
                if argv[0] == IOTA:
                    model.reply("Hello.")
                elapsed, peak = measure(argv, env, home)
                times.append(elapsed)
                peaks.append(peak)
            print(f"{name:32} {statistics.median(times):9.3f} {min(times):7.3f} {max(peaks):9d}")


if __name__ == "__main__":
    main()
