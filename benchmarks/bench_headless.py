"""Whole-process time and peak memory of one headless `iota run <agent> -m` turn, per provider.

Runs the real `iota` command against the project's fake model server (tests/support/fake_model.py,
on 127.0.0.1) with an OpenAI-compatible model and with an Anthropic model, beside `python -c pass`
(the interpreter's own floor), `python -c "import httpx"` (the floor of any Python client that
talks HTTP: issue 32's yardstick) and a Python importing only the libraries a turn loads (httpx,
httpcore, trio, yaml: what is left of a turn is iota's own), the cases taking turns run by run
(interleaved). Prints min /
median / max of the wall time and of the peak RSS, then the ratios issues 21 and 32 set goals for:
Anthropic over OpenAI-compatible, each over the `import httpx` floor, and each over the peers.

Peers: Codex and Claude Code are not needed. By default iota is compared with the figures issue 21
measured on the same kind of 2-core machine against the same fake (Codex native `codex exec`:
0.54 s and 148 MiB; `claude -p`: 1.12 s and 300 MiB). To measure a peer here instead, give its
command with --peer NAME=COMMAND (repeatable); `{openai_url}` and `{anthropic_url}` in COMMAND
are replaced by the fake server's addresses, and the peer runs with this environment (its own
login), interleaved with the other cases. For example:

    --peer 'claude -p=env ANTHROPIC_BASE_URL={anthropic_url} claude -p hi'

Peak memory is the maximum resident set size of the measured process alone (of its largest
process, for a command that starts others): `getrusage(RUSAGE_CHILDREN)` read by a fresh small
Python that starts the command and waits for it (see benchmarks/figures.py for why a fresh one).

    .venv/bin/python benchmarks/bench_headless.py [--runs N] [--peer NAME=COMMAND]
"""

from __future__ import annotations

import shlex
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.figures import (SPREAD_HEADER, environment_without_keys, interleaved, iota_command,  # noqa: E402
                                parser, ratio, run_measured, spread)
from tests.support.fake_model import FakeModel  # noqa: E402

OPENAI, ANTHROPIC = "iota run (openai) -m", "iota run (anthropic) -m"
HTTPX_FLOOR = 'python -c "import httpx"'
HTTPX_FLOOR_GOAL = "≤ 2.0x"  # issue 32
LIBRARIES = "import httpx, httpcore, trio, yaml"
LIBRARIES_FLOOR = f'python -c "{LIBRARIES}"'
# Issue 21's side-by-side run (9 interleaved rounds, the same fake): median seconds, peak MiB, the goal.
RECORDED_PEERS = {"Codex native (codex exec)": (0.54, 148, "≤ 1.0x"), "claude -p": (1.12, 300, "≤ 0.5x")}
PEAK_GOAL_MIB = 50


def peer_case(option: str, model: FakeModel) -> tuple[str, list[str]]:
    """NAME=COMMAND from --peer, as (name, argv) with the fake's addresses put in."""
    name, _, command = option.partition("=")
    if not name or not command:
        raise SystemExit(f"--peer wants NAME=COMMAND, not {option!r}")
    argv = shlex.split(command.replace("{openai_url}", model.openai_url).replace("{anthropic_url}", model.url))
    program = shutil.which(argv[0])
    if program is None:
        raise SystemExit(f"--peer {name}: {argv[0]} is not on PATH")
    return name, [program, *argv[1:]]


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--runs", type=int, default=9, help="runs per case (default 9)")
    options.add_argument("--peer", action="append", default=[], metavar="NAME=COMMAND",
                         help="also measure this command, interleaved (see above)")
    args = options.parse_args()
    iota = iota_command()
    with tempfile.TemporaryDirectory() as home, FakeModel() as model:
        model.respond_with(lambda body: {"text": "Hello."})
        Path(home, ".iota.yaml").write_text(
            "providers:\n"
            f"  oa: {{type: openai, url: '{model.openai_url}', key: k}}\n"
            f"  an: {{type: anthropic, url: '{model.url}', key: k}}\n"
            "models:\n  gpt: oa:fake-gpt\n  claude: an:fake-claude\n"
            "agents:\n  gpt: {model: gpt}\n  claude: {model: claude}\n")
        iota_env = environment_without_keys(home)
        cases = {"python -c pass": ([sys.executable, "-c", "pass"], iota_env),
                 HTTPX_FLOOR: ([sys.executable, "-c", "import httpx"], iota_env),
                 LIBRARIES_FLOOR: ([sys.executable, "-c", LIBRARIES], iota_env),
                 OPENAI: ([iota, "run", "gpt", "-m", "hi"], iota_env),
                 ANTHROPIC: ([iota, "run", "claude", "-m", "hi"], iota_env)}
        peers = dict(peer_case(option, model) for option in args.peer)
        cases.update({name: (argv, None) for name, argv in peers.items()})
        times: dict[str, list[float]] = {name: [] for name in cases}
        peaks: dict[str, list[float]] = {name: [] for name in cases}
        for _, name in interleaved(list(cases), args.runs):
            argv, env = cases[name]
            elapsed, peak = run_measured(argv, env, home)
            times[name].append(elapsed)
            peaks[name].append(peak)
            model.clear_requests()
        model.assert_no_unexpected()

    print(f"{args.runs} interleaved runs")
    print(f"{'case':46} {'wall time, s':^29}   {'peak RSS, MiB':^29}")
    print(f"{'':46} {SPREAD_HEADER}   {SPREAD_HEADER}")
    for name in cases:
        print(f"{name:46} {spread(times[name])}   {spread(peaks[name], digits=1)}")

    seconds = {name: statistics.median(values) for name, values in times.items()}
    mib = {name: statistics.median(values) for name, values in peaks.items()}
    print("\nratios of the medians")
    print(ratio("anthropic over openai-compatible, wall time", seconds[ANTHROPIC], seconds[OPENAI], "≤ 1.1x"))
    for case in (OPENAI, ANTHROPIC):
        print(ratio(f"{case} over the import httpx floor", seconds[case], seconds[HTTPX_FLOOR], HTTPX_FLOOR_GOAL))
    print(ratio("the turn's libraries over the import httpx floor", seconds[LIBRARIES_FLOOR],
                seconds[HTTPX_FLOOR]))
    compared = dict(RECORDED_PEERS)
    compared.update({name: (seconds[name], mib[name], "") for name in peers})
    for peer, (peer_seconds, peer_mib, goal) in compared.items():
        where = "measured here" if peer in peers else "issue 21's figure"
        print(f"  over {peer} ({peer_seconds:.2f} s, {peer_mib:.0f} MiB; {where}):")
        for case in (OPENAI, ANTHROPIC):
            print(ratio(f"  {case}, wall time", seconds[case], peer_seconds, goal))
            print(ratio(f"  {case}, peak memory", mib[case], peer_mib))
    for case in (OPENAI, ANTHROPIC):
        print(f"  {case} peak memory: {mib[case]:.1f} MiB   (goal ≤ {PEAK_GOAL_MIB} MiB)")


if __name__ == "__main__":
    main()
