"""Resuming a long conversation in the real chat, through tmux: how long until it is on the screen,
how much memory it takes, and how long its first turn is.

    .venv/bin/python benchmarks/bench_long_resume.py [--runs N] [--records 100000]

Two sessions of --records records (default 100,000: about 29 MB of log) of a realistic turn cycle
(ask, call a tool, its result, answer), resumed with `iota resume <id>` by the Anthropic agent
(200k window) against the fake model:

    compacted        compacted near the end, 40 records kept
    never compacted  the same conversation without the compaction

For each it measures: the pane's start to `Resumed session …` on the screen (`opened`); the peak
resident memory of the iota process (VmHWM) after 2 s idle; and a first turn, Enter to the reply
on the screen. A never-compacted session past 4 MiB asks at open whether to compact; the
benchmark answers "Not now" first (older iota does not ask), so the turn measures sending what
was loaded. The cases are interleaved run by run; min / median / max are printed. HOME is a
temporary directory deleted afterwards. Needs tmux.

To compare with older code, run this script with that code first on PYTHONPATH: the sessions are
built and resumed by the code under test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_startup import build_session, command_pid, peak_kib, wait_for  # noqa: E402
from benchmarks.figures import (SPREAD_HEADER, environment_without_keys, interleaved, iota_command,  # noqa: E402
                                parser, ratio, spread)
from iota import paths  # noqa: E402
from tests.support.fake_model import FakeModel  # noqa: E402
from tests.support.terminal import Terminals  # noqa: E402

IDLE_SECONDS = 2.0
TIMEOUT = 30.0
QUESTION = "compact now?"


@dataclass
class Case:
    name: str
    session_id: str
    opened: list[float] = field(default_factory=list)
    idle_kib: list[float] = field(default_factory=list)
    turn: list[float] = field(default_factory=list)


def measure(case: Case, terminals: Terminals, iota: str, env: dict[str, str], cwd: Path, turn: int) -> None:
    started = time.perf_counter()
    argv = [iota, "resume", case.session_id]
    terminal = terminals.start(argv, cols=110, rows=32, env=env, cwd=cwd)
    try:
        opened, _ = wait_for(terminal, lambda s: "Resumed session" in s, started, "the resumed session")
        case.opened.append(opened)
        time.sleep(IDLE_SECONDS)
        pid = command_pid(terminal, argv)
        case.idle_kib.append(peak_kib(pid))
        if QUESTION in " ".join(terminal.capture().split()):
            terminal.send_keys("Down", "Enter")  # Not now
            wait_for(terminal, lambda s: QUESTION not in " ".join(s.split()), time.perf_counter(), "the answer")
        terminal.type(f"question {turn}")
        entered = time.perf_counter()
        terminal.send_keys("Enter")
        case.turn.append(wait_for(terminal, lambda s: f"answer {turn}." in s, entered, "the reply")[0])
        terminal.send_keys("C-d")
        status = terminal.wait_for_exit(timeout=TIMEOUT)
        if status != 0:
            raise SystemExit(f"{case.name} exited with {status}; the screen:\n{terminal.capture()}")
    finally:
        terminal.kill()


def _asked(body: dict) -> str:
    found = re.findall(r"question (\d+)", json.dumps(body["messages"][-1]["content"]))
    return found[-1] if found else "0"


def main() -> None:
    arguments = parser(__doc__)
    arguments.add_argument("--runs", type=int, default=5, help="runs per case (default 5)")
    arguments.add_argument("--records", type=int, default=100_000, help="records per session (default 100000)")
    options = arguments.parse_args()
    if shutil.which("tmux") is None:
        raise SystemExit("this benchmark drives the chat through tmux, which is not installed (Debian: apt-get install tmux)")
    iota = iota_command()
    with tempfile.TemporaryDirectory() as scratch, FakeModel() as model:
        # The reply names the question it answers (a title request, say, gets "answer 0.").
        model.respond_with(lambda body: {"text": f"answer {_asked(body)}."})
        home, project = Path(scratch, "home"), Path(scratch, "project")
        home.mkdir()
        (project / ".git").mkdir(parents=True)
        (home / ".iota.yaml").write_text(
            f"providers:\n  an: {{type: anthropic, url: '{model.url}', key: test-key}}\n"
            "models:\n  claude: {provider: an, id: fake-claude, context_window: 200k}\n"
            "agents:\n  coder:\n    mode: agent\n    model: claude\n    tools:\n      code:\n")
        os.environ["HOME"] = str(home)  # iota.paths, for building the sessions
        cases = [Case("compacted", build_session(project, options.records)),
                 Case("never compacted", build_session(project, options.records, retained=None))]
        log_bytes = (paths.project_sessions_dir(project) / cases[0].session_id / "messages.jsonl").stat().st_size
        env = environment_without_keys(home)
        terminals = Terminals(Path(scratch))
        for turn, (_, case) in enumerate(interleaved(cases, options.runs), start=1):
            measure(case, terminals, iota, env, project, turn)
        print(f"iota resume of {options.records:,} records ({log_bytes / 1e6:.1f} MB of log), "
              f"{options.runs} interleaved runs\n")
        for title, attribute, scale, digits in (("opened: Resumed session on screen, s", "opened", 1, 3),
                                                (f"peak memory after {IDLE_SECONDS:.0f} s idle, MiB", "idle_kib",
                                                 1 / 1024, 1),
                                                ("first turn: Enter to the reply on screen, s", "turn", 1, 3)):
            print(f"{title:44} {SPREAD_HEADER}")
            for case in cases:
                print(f"  {case.name:42} {spread(getattr(case, attribute), scale, digits)}")
        print("\nratios of the medians, never compacted over compacted")
        for label, attribute in (("opened", "opened"), ("peak memory", "idle_kib"), ("first turn", "turn")):
            never, compacted = (statistics.median(getattr(case, attribute)) for case in (cases[1], cases[0]))
            print(ratio(label, never, compacted))


if __name__ == "__main__":
    main()
