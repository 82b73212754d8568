"""How soon the chat draws and accepts keys, whether it keeps a key typed at launch, how long its
first turn takes, and how much memory an idle chat holds: measured through tmux.

    .venv/bin/python benchmarks/bench_startup.py [--runs N] [--settle SECONDS] [--show]

Needs tmux. Each run starts a fresh tmux server whose one pane runs the real `iota`, pointed at
the project's fake model server (tests/support/fake_model.py, on 127.0.0.1), and polls
`capture-pane` as fast as tmux answers:

    drawn   from starting the pane until the card (`ι> iota`) and the composer prompt `❯` are
            on the screen (the plain first frame of ui.first_frame, drawn before trio and urwid load)
    urwid   from the same start until urwid's first draw is on the screen: the card in its frame
            (`╭`) with the composer — the real screen, where every key works
    keys    from the same start until a character typed as soon as the prompt was drawn is
            echoed in the composer: the moment the chat really accepts keys
    early   whether a letter typed right after the pane started (long before the first screen)
            is in the composer when that character is echoed: kept or lost
    turn    from Enter (sending the composer's text) until the fake model's reply is on the screen
    idle    VmHWM (peak resident set) of the iota process itself, from /proc/<pid>/status (the
            pane's shell runs it as its child), once the chat has sat idle for 2 s after the keys
    turned  the same once the chat has sat idle for 2 s after its first turn
    settled the same, read once more (first run only) `--settle` seconds after that, to catch
            anything loaded behind the screen

for these cases:

    tmux baseline         `sh -c "printf card+prompt; cat"`: what starting tmux and polling cost alone
    imports floor         python importing what the chat imports before its first screen
                          (`import ui.commands.interactive`), then printing a card and a prompt
    trio+urwid floor      python importing trio and urwid alone, then printing a framed card and a
                          prompt: the floor of urwid's first draw (issue 32's yardstick)
    iota run (anthropic)  an agent-mode chat (code and shell tools) on a new session, Anthropic model
    iota run (openai)     the same agent on an OpenAI-compatible model
    iota resume           the Anthropic agent resuming a session of 10,000 records compacted down to 40

The baseline and the floors are measured for drawn, urwid and keys only. Min / median / max of N runs
(default 7) are printed, then the ratios issue 21 sets goals for. The cases are interleaved run
by run, so a busy moment of the machine hits them alike. HOME is a temporary directory deleted
afterwards.

Peers: issue 21 measured Claude Code's first Anthropic turn at 0.23 s, and iota's first screen at
1.2x Codex native's (goal: 0.7x); Codex and Claude Code are not driven here.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.figures import (SPREAD_HEADER, environment_without_keys, interleaved, iota_command,  # noqa: E402
                                parser, ratio, spread)
from iota import paths  # noqa: E402
from iota.messages import Message, ToolCall, Usage  # noqa: E402
from iota.sessions.bundle import Session  # noqa: E402
from tests.support.fake_model import FakeModel  # noqa: E402
from tests.support.terminal import Terminal, Terminals  # noqa: E402

RECORDS = 10_000
RETAINED = 40
BATCH = 1_000
IDLE_SECONDS = 2.0
TIMEOUT = 30.0
PROSE = "The quick brown fox jumps over the lazy dog while the build runs its tests again. "
CARD = "ι> iota"
EARLY = "e"   # typed right after the pane starts
PROBE = "q"   # typed once the composer is drawn
REPLY = "The fake model answers turn {}."  # numbered: a resumed chat shows the earlier runs' replies
ANTHROPIC, OPENAI, RESUME = "iota run (anthropic)", "iota run (openai)", f"iota resume ({RECORDS:,} records)"
# What the chat must import before it can draw anything (ui.commands.interactive brings trio, urwid,
# pydantic and the actors), then a card and a prompt; the terminal itself echoes the key.
FLOOR = ("import ui.commands.interactive, time; print('╭\\nι> iota\\n' + '─' * 20); print('❯ ', end='', flush=True); "
         "time.sleep(60)")
URWID_FLOOR = ("import trio, urwid, time; print('╭\\nι> iota\\n' + '─' * 20); print('❯ ', end='', flush=True); "
               "time.sleep(60)")
URWID_FLOOR_CASE = "trio+urwid floor"
FRAMED = "╭"  # urwid's card has a frame; the first frame's plain card has none
# The composer row: the prompt at the start of a line right under a rule (the transcript's own
# `❯ ` marks, in a resumed chat's echo, are not under a rule).
COMPOSER = re.compile(r"^─{10,}\n❯ ?(.*)$", re.MULTILINE)


class Replies:
    """The fake model's answers, numbered, so that each run waits for its own reply on the screen."""

    def __init__(self):
        self.sent = 0

    def __call__(self, body: dict) -> dict:
        self.sent += 1
        return {"text": REPLY.format(self.sent)}


@dataclass
class Case:
    name: str
    argv: list[str]
    iota: bool = True     # the floors are measured for drawn and keys only
    drawn: list[float] = field(default_factory=list)
    urwid: list[float] = field(default_factory=list)
    keys: list[float] = field(default_factory=list)
    turn: list[float] = field(default_factory=list)
    early_kept: list[bool] = field(default_factory=list)
    idle_kib: list[float] = field(default_factory=list)      # VmHWM after IDLE_SECONDS idle
    turned_kib: list[float] = field(default_factory=list)    # VmHWM after the first turn and IDLE_SECONDS idle
    settled_kib: list[float] = field(default_factory=list)   # VmHWM --settle seconds later (first run only)


def composer_text(screen: str) -> str | None:
    """What the composer holds, or None while no composer is drawn."""
    match = COMPOSER.search(screen)
    return match.group(1).rstrip() if match else None


def wait_for(terminal: Terminal, ready, started: float, what: str) -> tuple[float, str]:
    """Poll the screen until `ready(screen)`; seconds from `started` to the capture that saw it, and
    that screen."""
    while True:
        screen = terminal.capture()
        now = time.perf_counter()
        if ready(screen):
            return now - started, screen
        if now - started > TIMEOUT:
            raise SystemExit(f"{what} did not appear within {TIMEOUT}s; the screen:\n{screen}")


def first_seen(terminal: Terminal, tests: dict, started: float) -> dict[str, tuple[float, str]]:
    """Poll the screen until each of `tests` (name: ready(screen)) has held once; per name, the
    seconds from `started` to the first capture that saw it, and that screen."""
    seen: dict[str, tuple[float, str]] = {}
    while len(seen) < len(tests):
        screen = terminal.capture()
        now = time.perf_counter()
        seen.update({name: (now - started, screen) for name, ready in tests.items()
                     if name not in seen and ready(screen)})
        if now - started > TIMEOUT:
            raise SystemExit(f"{', '.join(sorted(set(tests) - set(seen)))} did not appear within {TIMEOUT}s; "
                             f"the screen:\n{screen}")
    return seen


def command_pid(terminal: Terminal, argv: list[str]) -> int:
    """The measured process: the child of the pane's shell (the terminal wraps the command in `sh -c`),
    never the shell itself, checked to be running `argv`."""
    shell = terminal.pane_pid()
    children = Path(f"/proc/{shell}/task/{shell}/children").read_text().split()
    if len(children) != 1:
        raise SystemExit(f"expected the pane's shell {shell} to run one process, found {children}")
    command_line = Path(f"/proc/{children[0]}/cmdline").read_bytes().split(b"\0")
    if argv[0].encode() not in command_line:
        raise SystemExit(f"process {children[0]} runs {command_line}, not {argv[0]}")
    return int(children[0])


def peak_kib(pid: int) -> int:
    """VmHWM, the peak resident set size of a process, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise SystemExit(f"no VmHWM for process {pid}")


def measure(case: Case, terminals: Terminals, replies: Replies, env: dict[str, str], cwd: Path, show: bool,
            settle: float = 0.0) -> None:
    started = time.perf_counter()
    terminal = terminals.start(case.argv, cols=110, rows=32, env=env, cwd=cwd)
    try:
        if case.iota:  # the floors' terminals echo it themselves, above the card
            terminal.type(EARLY)
        drawn, _ = wait_for(terminal, lambda s: CARD in s and composer_text(s) is not None, started, "the composer")
        terminal.type(PROBE)
        seen = first_seen(terminal, {"keys": lambda s: (composer_text(s) or "").endswith(PROBE),
                                     "urwid": lambda s: FRAMED in s and composer_text(s) is not None}, started)
        (keys, screen), (urwid, _) = seen["keys"], seen["urwid"]
        case.drawn.append(drawn)
        case.urwid.append(urwid)
        case.keys.append(keys)
        if not case.iota:  # the others are simply killed
            return
        case.early_kept.append(composer_text(screen) == EARLY + PROBE)
        pid = command_pid(terminal, case.argv)
        time.sleep(IDLE_SECONDS)
        case.idle_kib.append(peak_kib(pid))
        entered = time.perf_counter()
        terminal.send_keys("Enter")
        reply = REPLY.format(replies.sent + 1)
        case.turn.append(wait_for(terminal, lambda s: reply in s, entered, "the reply")[0])
        time.sleep(IDLE_SECONDS)
        if show:
            print(terminal.capture(), file=sys.stderr)
        case.turned_kib.append(peak_kib(pid))
        if settle > 0:
            time.sleep(settle)
            case.settled_kib.append(peak_kib(pid))
        terminal.send_keys("C-d")
        status = terminal.wait_for_exit(timeout=TIMEOUT)
        if status != 0:
            raise SystemExit(f"{case.name} exited with {status}; the screen:\n{terminal.capture()}")
    finally:
        terminal.kill()


def build_session(project: Path, records: int = RECORDS, retained: int | None = RETAINED) -> str:
    """The coder agent's session of `records` conversation records, compacted so that `retained`
    remain in view (None: never compacted)."""
    meta = dict(provider="an", model="fake-claude", context_window=200_000, cwd=str(project), agent="coder")
    with Session.new(paths.project_sessions_dir(project), **meta) as session:
        session.append([Message("system", "You are a careful coding agent. " * 20)])
        for start in range(0, records, BATCH):
            session.append([record(i) for i in range(start, min(start + BATCH, records))])
        if retained is not None:
            through = session.conversation_count - retained
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
    figures = (("first screen drawn, ms", "drawn", 1e3, 0), ("urwid's first draw, ms", "urwid", 1e3, 0),
               ("keys accepted, ms", "keys", 1e3, 0),
               ("first turn: Enter to the reply on screen, ms", "turn", 1e3, 0),
               (f"peak memory, {IDLE_SECONDS:.0f} s idle after the keys, MiB", "idle_kib", 1 / 1024, 1),
               (f"peak memory, {IDLE_SECONDS:.0f} s idle after the turn, MiB", "turned_kib", 1 / 1024, 1),
               ("peak memory, --settle s later (first run), MiB", "settled_kib", 1 / 1024, 1))
    print(f"\n{runs} interleaved runs, from starting the pane")
    for title, attribute, scale, digits in figures:
        measured = [case for case in cases if getattr(case, attribute)]
        if measured:
            print(f"\n{title:48} {SPREAD_HEADER}")
        for case in measured:
            print(f"  {case.name:46} {spread(getattr(case, attribute), scale, digits)}")
    print("\nan early key, typed right after the pane started, in the composer when it accepts keys")
    for case in cases:
        if case.iota:
            print(f"  {case.name:46} kept {sum(case.early_kept)} of {len(case.early_kept)}   (goal: all)")

    median = {case.name: {name: statistics.median(values) for name in ("drawn", "urwid", "keys", "turn", "idle_kib",
                                                                       "turned_kib")
                          if (values := getattr(case, name))} for case in cases}
    anthropic, openai, resume = (median[name] for name in (ANTHROPIC, OPENAI, RESUME))
    print("\nratios of the medians")
    print(ratio("anthropic over openai-compatible, first screen", anthropic["drawn"], openai["drawn"]))
    print(ratio("anthropic over openai-compatible, first turn", anthropic["turn"], openai["turn"]))
    print(ratio("resume over a new chat, first screen", resume["drawn"], anthropic["drawn"]))
    floor = median[URWID_FLOOR_CASE]["urwid"]
    for case in (ANTHROPIC, OPENAI, RESUME):
        print(ratio(f"{case}: urwid's first draw over the trio+urwid floor", median[case]["urwid"], floor))
    print(f"  first anthropic turn: {anthropic['turn']:.2f} s   (goal ≤ 0.3 s; Claude Code 0.23 s in issue 21)")
    for case in (ANTHROPIC, OPENAI):
        print(f"  {case} peak memory, idle before / after the first turn: {median[case]['idle_kib'] / 1024:.1f} / "
              f"{median[case]['turned_kib'] / 1024:.1f} MiB   (goal ≤ 50 MiB)")


def main() -> None:
    arguments = parser(__doc__)
    arguments.add_argument("--runs", type=int, default=7, help="runs per case (default 7)")
    arguments.add_argument("--show", action="store_true", help="print each idle screen to stderr")
    arguments.add_argument("--settle", type=float, default=12.0,
                           help="in the first run, also read VmHWM this many seconds after the turn (0: not; default 12)")
    options = arguments.parse_args()
    if shutil.which("tmux") is None:
        raise SystemExit("this benchmark drives the chat through tmux, which is not installed (Debian: apt-get install tmux)")
    iota = iota_command()
    with tempfile.TemporaryDirectory() as scratch, FakeModel() as model:
        replies = Replies()
        model.respond_with(replies)
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
        session_id = build_session(project)
        env = environment_without_keys(home)
        cases = [
            Case("tmux baseline", ["sh", "-c", f"printf '{FRAMED}\\n{CARD}\\n{'─' * 20}\\n❯ '; exec cat"], iota=False),
            Case("imports floor", [sys.executable, "-c", FLOOR], iota=False),
            Case(URWID_FLOOR_CASE, [sys.executable, "-c", URWID_FLOOR], iota=False),
            Case(ANTHROPIC, [iota, "run", "coder"]),
            Case(OPENAI, [iota, "run", "coder-oa"]),
            Case(RESUME, [iota, "resume", session_id]),
        ]
        terminals = Terminals(Path(scratch))
        for run, case in interleaved(cases, options.runs):  # each measure kills its own terminal
            measure(case, terminals, replies, env, project, options.show, options.settle if run == 0 else 0.0)
        model.assert_no_unexpected()
        report(cases, options.runs)


if __name__ == "__main__":
    main()
