"""How soon the chat accepts keys, and how much memory an idle chat holds, measured through tmux.

    .venv/bin/python benchmarks/bench_startup.py [--runs N] [--settle SECONDS] [--show]

Each run starts a fresh tmux server whose one pane runs the real `iota` (an Anthropic model
configured, pointed at the project's fake model server, so nothing leaves 127.0.0.1) and polls
`capture-pane` as fast as tmux answers:

    drawn   from starting the pane until the card (`ι> iota`) and the composer prompt `❯` are
            on the screen
    keys    from the same start until a character typed as soon as the prompt was drawn is
            echoed in the composer: the moment the chat really accepts keys
    peak    VmHWM of the iota process (from /proc/<pid>/status) once the chat has sat idle for
            2 s after that
    settled the same, read once more (first run only) `--settle` seconds after the keys, by which
            time the Anthropic SDK, which loads behind the screen, has surely finished loading

for these cases:

    tmux baseline         `sh -c "printf card+prompt; cat"`: what starting tmux and polling cost alone
    imports floor         python importing what the chat imports before its first screen
                          (`import ui.commands.interactive`), then printing a card and a prompt
    iota run coder        an agent-mode chat (code and shell tools) on a new session
    iota run coder-oa     the same agent on an OpenAI-compatible model: no SDK to load, so the
                          difference from the row above is what the Anthropic SDK costs the screen
    iota resume <id>      the same agent resuming a session of 10,000 records compacted down to 40

The medians of N runs (default 7) are printed, with the fastest and slowest keys beside them.
The cases are interleaved run by run, so a busy moment of the machine hits them alike. HOME is
a temporary directory deleted afterwards.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from iota import paths  # noqa: E402
from iota.messages import Message, ToolCall, Usage  # noqa: E402
from iota.sessions.bundle import Session  # noqa: E402
from tests.support.fake_model import FakeModel  # noqa: E402
from tests.support.terminal import Terminal, Terminals  # noqa: E402

IOTA = str(Path(sys.executable).with_name("iota"))
RECORDS = 10_000
RETAINED = 40
BATCH = 1_000
IDLE_SECONDS = 2.0
TIMEOUT = 30.0
PROSE = "The quick brown fox jumps over the lazy dog while the build runs its tests again. "
CARD = "ι> iota"
PROBE = "q"
# What the chat must import before it can draw anything (ui.commands.interactive brings trio, urwid,
# pydantic and the actors), then a card and a prompt; the terminal itself echoes the key.
FLOOR = ("import ui.commands.interactive, time; print('ι> iota\\n' + '─' * 20); print('❯ ', end='', flush=True); "
         "time.sleep(60)")
# The composer row: the prompt at the start of a line right under a rule (the transcript's own
# `❯ ` marks, in a resumed chat's echo, are not under a rule).
COMPOSER = re.compile(r"^─{10,}\n❯ ?(.*)$", re.MULTILINE)


@dataclass
class Case:
    name: str
    argv: list[str]
    drawn: list[float] = field(default_factory=list)
    keys: list[float] = field(default_factory=list)
    peak_kib: list[int] = field(default_factory=list)      # VmHWM after IDLE_SECONDS idle
    settled_kib: list[int] = field(default_factory=list)   # VmHWM after --settle seconds (first run only)


def composer_text(screen: str) -> str | None:
    """What the composer holds, or None while no composer is drawn."""
    match = COMPOSER.search(screen)
    return match.group(1).rstrip() if match else None


def wait_for(terminal: Terminal, ready, started: float, what: str) -> float:
    """Poll the screen until `ready(screen)`; seconds from `started` to the capture that saw it."""
    while True:
        screen = terminal.capture()
        now = time.perf_counter()
        if ready(screen):
            return now - started
        if now - started > TIMEOUT:
            raise SystemExit(f"{what} did not appear within {TIMEOUT}s; the screen:\n{screen}")


def iota_pid(terminal: Terminal) -> int | None:
    """The iota process: the child of the pane's shell (the terminal wraps the command in `sh -c`)."""
    shell = int(terminal._tmux("display-message", "-p", "-t", "=test:", "#{pane_pid}").strip())
    try:
        children = Path(f"/proc/{shell}/task/{shell}/children").read_text().split()
    except OSError:
        return None
    return int(children[0]) if children else shell


def memory_kib(pid: int) -> tuple[int, int]:
    """(VmHWM, VmRSS) of a process, in KiB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmHWM"].split()[0]), int(fields["VmRSS"].split()[0])


def measure(case: Case, terminals: Terminals, env: dict[str, str], cwd: Path, show: bool,
            settle: float = 0.0) -> None:
    started = time.perf_counter()
    terminal = terminals.start(case.argv, cols=110, rows=32, env=env, cwd=cwd)
    try:
        drawn = wait_for(terminal, lambda s: CARD in s and composer_text(s) is not None, started, "the composer")
        terminal.type(PROBE)
        keys = wait_for(terminal, lambda s: composer_text(s) == PROBE, started, "the typed character")
        case.drawn.append(drawn)
        case.keys.append(keys)
        pid = iota_pid(terminal) if case.argv[0] == IOTA else None
        time.sleep(IDLE_SECONDS)
        if show:
            print(terminal.capture(), file=sys.stderr)
        if pid is not None:
            case.peak_kib.append(memory_kib(pid)[0])
            if settle > IDLE_SECONDS:
                time.sleep(settle - IDLE_SECONDS)
                case.settled_kib.append(memory_kib(pid)[0])
        terminal.send_keys("BSpace", "C-d")
        if case.argv[0] == IOTA:  # the others are simply killed
            status = terminal.wait_for_exit(timeout=TIMEOUT)
            if status != 0:
                raise SystemExit(f"{case.name} exited with {status}; the screen:\n{terminal.capture()}")
    finally:
        terminal.kill()


def build_compacted_session(project: Path) -> str:
    """A session of RECORDS conversation records, compacted so that RETAINED remain in view."""
    meta = dict(provider="an", model="fake-claude", context_window=200_000, cwd=str(project), agent="coder")
    with Session.new(paths.project_sessions_dir(project), **meta) as session:
        session.append([Message("system", "You are a careful coding agent. " * 20)])
        for start in range(0, RECORDS, BATCH):
            session.append([record(i) for i in range(start, min(start + BATCH, RECORDS))])
        through = session.conversation_count - RETAINED
        session.append([Message("compaction", PROSE * 20, compacted_through=through, usage=Usage(12_000, 900))])
        return session.id


def record(i: int) -> Message:
    """Record i of a realistic turn cycle: ask, call a tool, read its result, answer."""
    match i % 4:
        case 0:
            return Message("user", f"request {i}: " + PROSE * 2)
        case 1:
            call = ToolCall(f"call_{i}", "read_file", {"path": f"src/module_{i % 97}.py"})
            return Message("assistant", "Let me look.", tool_calls=[call], usage=Usage(9_000 + i, 40))
        case 2:
            return Message("tool", PROSE * 8, tool_call_id=f"call_{i - 1}", tool_call_name="read_file")
        case _:
            return Message("assistant", PROSE * 4, usage=Usage(9_500 + i, 300))


def report(cases: list[Case], runs: int) -> None:
    def ms(values: list[float], pick=statistics.median) -> str:
        return f"{pick(values) * 1000:.0f}" if values else "–"

    def mib(values: list[int]) -> str:
        return f"{statistics.median(values) / 1024:.1f}" if values else "–"

    print(f"\n{'case':28} {'drawn ms':>9} {'keys ms':>8} {'keys min–max':>13} {'peak MiB':>9} {'settled':>8}")
    for case in cases:
        spread = f"{ms(case.keys, min)}–{ms(case.keys, max)}"
        print(f"{case.name:28} {ms(case.drawn):>9} {ms(case.keys):>8} {spread:>13} {mib(case.peak_kib):>9} "
              f"{mib(case.settled_kib):>8}")
    print(f"\ndrawn, keys: medians of {runs} runs from starting the pane; peak: VmHWM after {IDLE_SECONDS:.0f} s idle "
          "(median); settled: VmHWM later, in the first run only (--settle)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--show", action="store_true", help="print each idle screen to stderr")
    parser.add_argument("--settle", type=float, default=12.0,
                        help="in the first run, also read VmHWM this many seconds after the keys (0: not)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch, FakeModel() as model:
        home = Path(scratch, "home")
        project = Path(scratch, "project")
        home.mkdir()
        project.mkdir()
        (project / ".git").mkdir()
        (home / ".iota.yaml").write_text(
            f"providers:\n  an: {{type: anthropic, url: '{model.url}', key: test-key}}\n"
            f"  oa: {{type: openai, url: '{model.openai_url}', key: test-key}}\n"
            "models:\n  claude: {provider: an, id: fake-claude, context_window: 200k}\n"
            "  gpt: {provider: oa, id: fake-gpt, context_window: 200k}\n"
            "agents:\n  coder:\n    mode: agent\n    model: claude\n    tools:\n      code:\n"
            "      shell: {sandbox: auto}\n"
            "  coder-oa:\n    mode: agent\n    model: gpt\n    tools:\n      code:\n      shell: {sandbox: auto}\n")
        os.environ["HOME"] = str(home)  # iota.paths, for building the session
        session_id = build_compacted_session(project)
        env = {key: value for key, value in os.environ.items()
               if key not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "TMUX", "HERDR_ENV", "CMUX_SURFACE_ID")}
        env["HOME"] = str(home)
        cases = [
            Case("tmux baseline", ["sh", "-c", f"printf '{CARD}\\n{'─' * 20}\\n❯ '; exec cat"]),
            Case("imports floor", [sys.executable, "-c", FLOOR]),
            Case("iota run coder", [IOTA, "run", "coder"]),
            Case("iota run coder-oa (openai)", [IOTA, "run", "coder-oa"]),
            Case(f"iota resume ({RECORDS:,} rec)", [IOTA, "resume", session_id]),
        ]
        terminals = Terminals(Path(scratch))
        for run in range(options.runs):
            for case in cases:  # interleaved, so a slow moment of the machine hits every case alike
                measure(case, terminals, env, project, options.show, options.settle if run == 0 else 0.0)
            print(f"run {run + 1}/{options.runs} done", file=sys.stderr)
        terminals.kill_all()
        report(cases, options.runs)


if __name__ == "__main__":
    main()
