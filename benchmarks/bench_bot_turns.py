"""A bot conversation of many turns through several compactions, against the fake model server.

Runs the real chat (supervisor, lane, compactor, session writes) in-process with a scripted face
instead of the terminal app: it sends a message, waits until the chat is idle again (the turn,
and any memory flush and compaction after it), and sends the next. Every 100th turn reports a
context past the bot's threshold, so the bot flushes and compacts. The harness time of a turn is
its wall time less the time spent inside the provider (the model's share); it should stay flat
as the log grows: it prints min / median / max over the first, middle and last 100 turns, and the
last over the first; and over the turns that compacted (the turn, the flush and the summary, less
the model's time) and the turns right after them. The fake takes `--summary-seconds` to write
each summary, as a model takes seconds: what the harness does meanwhile in other threads costs
the turn nothing, and the wall time of a compaction turn and the next (the model's included)
shows it. At the end it times opening the bot again (reading the session view). The
turns are one conversation in order, so there are no cases to interleave.

    .venv/bin/python benchmarks/bench_bot_turns.py [turns]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from actors.events import Leave, Status, Submit, TurnEnded  # noqa: E402
from actors.supervisor import run_chat  # noqa: E402
from benchmarks.figures import SPREAD_HEADER, parser, ratio, spread  # noqa: E402
from iota.config import settings as config  # noqa: E402
from tests.support.fake_model import FakeModel  # noqa: E402
from ui.cli import build_parser  # noqa: E402
from ui.chat_parts import open_chat  # noqa: E402

EVERY = 100       # a compaction every this many turns
PAST = 17_000     # past the 16k threshold of a 32k window


class TimedProvider:
    """The real provider, with the time spent in it added up."""

    def __init__(self, provider):
        self.provider = provider
        self.name = provider.name
        self.reports_usage = provider.reports_usage
        self.seconds = 0.0

    async def stream(self, request, on_text):
        start = time.perf_counter()
        try:
            return await self.provider.stream(request, on_text)
        finally:
            self.seconds += time.perf_counter() - start

    async def aclose(self):
        await self.provider.aclose()


def script(model: FakeModel, turns: int, summary_seconds: float) -> None:
    for turn in range(1, turns + 1):
        model.reply(f"Answer {turn}: noted.", input_tokens=PAST if turn % EVERY == 0 else 1_500, pieces=2)
        if turn % EVERY == 0:
            model.reply("Nothing new to remember.", pieces=1)                        # the memory flush
            model.reply(f"Summary up to turn {turn}: the user counts.", pieces=1,    # the summary
                        drip=summary_seconds / 2)  # before its one piece and before its end


async def drive(parts, timed: TimedProvider, turns: int, harness: list[float], wall: list[float]):
    async def face(events: trio.MemoryReceiveChannel, inputs: trio.MemorySendChannel) -> None:
        for _turn in range(1, turns + 1):
            model_before, start = timed.seconds, time.perf_counter()
            await inputs.send(Submit("please keep going with the story"))
            ended = False
            async for event in events:
                ended = ended or isinstance(event, TurnEnded)
                if ended and isinstance(event, Status) and not event.running and not event.queued:
                    break
            wall.append(time.perf_counter() - start)
            harness.append(wall[-1] - (timed.seconds - model_before))
        await inputs.send(Leave(0))
        async for _ in events:  # keep draining until the chat closes
            pass

    await run_chat(parts, face)


def main() -> None:
    options = parser(__doc__)
    options.add_argument("turns", nargs="?", type=int, default=2000, help="turns of the conversation (default 2000)")
    options.add_argument("--summary-seconds", type=float, default=0.5,
                         help="how long the fake takes to write each summary (default 0.5)")
    parsed = options.parse_args()
    turns = parsed.turns
    with tempfile.TemporaryDirectory() as home, FakeModel() as model:
        os.environ["HOME"] = home
        project = Path(home, "project")
        project.mkdir()
        os.chdir(project)
        Path(home, ".iota.yaml").write_text(
            f"providers:\n  fake: {{type: openai, url: '{model.openai_url}', key: k}}\n"
            "models:\n  m: {provider: fake, id: fake, context_window: 32k}\n"
            "agents:\n  coder: {mode: bot, model: m}\n")
        script(model, turns, parsed.summary_seconds)
        args = build_parser().parse_args(["run", "coder"])
        harness: list[float] = []
        wall: list[float] = []
        with ExitStack() as cleanup:
            parts = open_chat(args, config.load(project), cleanup)
            parts.write_terminal = None
            timed = TimedProvider(parts.setup.provider())
            parts.setup._provider = timed
            started = time.perf_counter()
            trio.run(drive, parts, timed, turns, harness, wall)
            total = time.perf_counter() - started
        log = next(Path(home, ".iota", "sessions").glob("*/messages.jsonl"))
        compactions = log.read_text().count('"role":"compaction"')
        print(f"{turns} turns in {total:.1f} s, {compactions} compactions, log {log.stat().st_size / 1e6:.1f} MB, "
              f"{sum(1 for _ in log.open())} records")
        print(f"\nharness ms a turn\n{'turns':>13} {SPREAD_HEADER}")
        starts = sorted({0, max(turns // 2 - 50, 0), max(turns - 100, 0)})
        for first in starts:
            window = harness[first:first + 100]
            print(f"{first + 1:>6}-{first + len(window):<6} {spread(window, 1e3, 1)}")
        print(ratio("the last 100 turns over the first 100, median", statistics.median(harness[starts[-1]:]),
                    statistics.median(harness[:100]), "≤ 1.15x"))
        compacting, after = harness[EVERY - 1::EVERY], harness[EVERY::EVERY]
        if compacting:
            print(f"{'compactions':>13} {spread(compacting, 1e3, 1)}   ({len(compacting)} turns: the turn, flush, summary)")
            print(f"{'after them':>13} {spread(after, 1e3, 1)}   (the next turn)")
            pairs = [a + b for a, b in zip(wall[EVERY - 1::EVERY], wall[EVERY::EVERY])]
            print(f"{'wall':>13} {spread(pairs, 1e3, 1)}   (a compaction turn and the next, the model's time included)")
        opens = []
        for _ in range(5):
            start = time.perf_counter()
            with ExitStack() as cleanup:
                open_chat(args, config.load(project), cleanup)
            opens.append(time.perf_counter() - start)
        print(f"\nopening the bot again (config, lock, session view, memory), 5 times, ms\n{'':13} {SPREAD_HEADER}\n"
              f"{'':13} {spread(opens, 1e3, 1)}")
        model.assert_no_unexpected()


if __name__ == "__main__":
    main()
