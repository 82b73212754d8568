"""What seeing bots at a glance costs: the state file and the tmux pane per turn, and an idle
`iota bots watch`.

1. Per turn. A turn changes the chat's state twice (working, then idle). Each change goes to the
   notifier's outlets; this measures the real outlets doing that, in-process under trio, on a
   private tmux server: the state file (read the bot's tasks and schedules, write state.json,
   rename), the tmux pane (OSC 2 title written to /dev/null, one `tmux set-option` call for both
   options), and beside them the terminal's OSC 9;4 progress that every chat already sends.
   Figures are wall time and CPU (this process's and its children's: the tmux client) per turn,
   the cases interleaved.

2. `iota bots watch` idle, with ten running bots: ten bot directories, each with a state.json and
   a lock held (by one helper process, whose pid the files name, so each reads as live); the
   watch runs in a private tmux server and its CPU (utime + stime from /proc) is read over a
   window of seconds once the ten rows are on screen.

    .venv/bin/python benchmarks/bench_bot_glance.py [--turns N] [--rounds N] [--seconds S]
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.figures import SPREAD_HEADER, environment_without_keys, interleaved, iota_command, parser, spread  # noqa: E402

BOTS = 10
HOLD_LOCKS = """\
import fcntl, os, sys, time
for path in sys.argv[1:]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.ftruncate(fd, 0); os.write(fd, str(os.getpid()).encode())
print("held", flush=True)
time.sleep(3600)
"""


def per_turn(turns: int, rounds: int, work: Path, socket: Path) -> None:
    from actors.notifier import SetState, _TerminalOutlet, _TmuxOutlet
    from actors.state_file import StateFileOutlet
    from iota.bots.tasks import TaskBook
    from iota.hosts import State, Terminal, TmuxPane

    bot = work / "bot"
    bot.mkdir()
    tasks = TaskBook(bot)
    tasks.create("migrate db", ["dump", "convert", "load", "check", "switch"])
    pane_id = subprocess.run(["tmux", "-S", str(socket), "display-message", "-p", "#{pane_id}"],
                             capture_output=True, text=True, check=True).stdout.strip()
    devnull = os.open(os.devnull, os.O_WRONLY)

    async def write(data: bytes) -> None:
        os.write(devnull, data)

    cases = {
        "terminal progress (already sent)": lambda: _TerminalOutlet(Terminal(), write, notify=False),
        "state.json": lambda: StateFileOutlet(bot, "bench", work, None),
        "tmux title + options": lambda: _TmuxOutlet(TmuxPane(pane_id, str(socket)), write, "bench"),
    }
    results: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in cases}

    async def measure(make) -> tuple[float, float]:
        outlet = make()
        await outlet.flush()   # the tmux outlet's first item reads the title it will restore
        usage = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        for _ in range(turns):
            outlet.post(SetState(State.BUSY))
            await outlet.flush()
            outlet.post(SetState(State.IDLE))
            await outlet.flush()
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = sum(a.ru_utime + a.ru_stime - b.ru_utime - b.ru_stime for a, b in zip(after, usage))
        return wall / turns, cpu / turns

    for _, name in interleaved(list(cases), rounds):
        wall, cpu = trio.run(measure, cases[name])
        results[name][0].append(wall)
        results[name][1].append(cpu)
    print(f"Per turn (two state changes), {turns} turns a round, {rounds} rounds; milliseconds")
    for label, column in (("wall", 0), ("CPU (with the tmux client)", 1)):
        print(f"  {label:36} {SPREAD_HEADER}")
        for name, figures in results.items():
            print(f"    {name:34} {spread(figures[column], 1000)}")


def watch_idle(rounds: int, seconds: float, work: Path) -> None:
    home = work / "home"
    bots = home / ".iota" / "bots"
    locks = []
    for n in range(BOTS):
        directory = bots / f"bot{n}"
        directory.mkdir(parents=True)
        locks.append(str(directory / "lock"))
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCKS, *locks], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        now = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
        for n in range(BOTS):
            (bots / f"bot{n}" / "state.json").write_text(json.dumps(
                {"agent": f"bot{n}", "pid": holder.pid, "project": str(work), "state": "idle", "since": now,
                 "task": "migrate db", "step": "2/5", "next_schedule": None, "last_activity": None,
                 "tmux_pane": None, "tmux_socket": None}))
        env = environment_without_keys(home)
        figures = []
        for round_ in range(rounds):
            server = f"bench-watch-{os.getpid()}-{round_}"
            tmux = ["tmux", "-L", server, "-f", os.devnull]
            subprocess.run([*tmux, "new-session", "-d", "-x", "120", "-y", "30", iota_command(), "bots", "watch"],
                           env=env, cwd=work, check=True)
            try:
                deadline = time.monotonic() + 30
                while f"bot{BOTS - 1} " not in subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True,
                                                              text=True).stdout:
                    assert time.monotonic() < deadline, "the watch never showed the ten bots"
                    time.sleep(0.1)
                pid = int(subprocess.run([*tmux, "display-message", "-p", "#{pane_pid}"], capture_output=True,
                                         text=True).stdout)
                time.sleep(1.0)   # past the first redraws
                before = _cpu_seconds(pid)
                time.sleep(seconds)
                figures.append((_cpu_seconds(pid) - before) / seconds)
            finally:
                subprocess.run([*tmux, "kill-server"], capture_output=True)
        print(f"\n`iota bots watch` idle with {BOTS} running bots, CPU over {seconds:.0f} s, {rounds} rounds; "
              "percent of one core")
        print(f"  {'':36} {SPREAD_HEADER}")
        print(f"  {'watch':36} {spread(figures, 100)}")
    finally:
        holder.kill()
        holder.wait()


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--turns", type=int, default=50, help="turns a round (default 50)")
    options.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    options.add_argument("--seconds", type=float, default=10.0, help="the watch's measured window (default 10)")
    args = options.parse_args()
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is needed (Debian: apt-get install tmux)")
    with tempfile.TemporaryDirectory(prefix="iota-bench-glance-") as scratch:
        work = Path(scratch)
        os.environ["HOME"] = str(work)
        socket = work / "tmux.sock"
        subprocess.run(["tmux", "-S", str(socket), "-f", os.devnull, "new-session", "-d", "sleep 3600"], check=True)
        try:
            per_turn(args.turns, args.rounds, work, socket)
        finally:
            subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True)
        watch_idle(args.rounds, args.seconds, work)


if __name__ == "__main__":
    main()
