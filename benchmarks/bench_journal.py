"""The journal and the search index on a large bot history: rebuild time, search latency, and the
per-turn cost of keeping the journal.

A synthetic bot history is written into a temporary HOME through the real session writer: turns of
a message, a few tool calls with their results, a reply and `turn_end`, a compaction every 100
turns — by default 100,000 records, which makes about 12,500 turns and a full journal of 5,000
entries. Then:

- the index is rebuilt from the log (`--rebuilds` times; what `iota bots reindex` and a bot's first
  start after losing its journal pay);
- in `--rounds` rounds, interleaved so that the machine's noise falls on every figure alike: each
  search (a rare word, a common one, two words, a phrase, a miss) through `recall` as the model
  calls it (records and journal entries, ranked, with snippets), `iota search` over every session
  (newest first), the journal block attached before a message, and one more turn appended to the
  log and caught up — the per-turn journal cost, which the chat pays beside the lane, after the
  turn is saved.

Figures are min / median / max in milliseconds.

    .venv/bin/python benchmarks/bench_journal.py [--records N] [--rounds N] [--rebuilds N] [--seed N]
"""

from __future__ import annotations

import itertools
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import trio  # noqa: E402

from benchmarks.figures import SPREAD_HEADER, parser, spread  # noqa: E402
from iota.bots.history import search_history  # noqa: E402
from iota.bots.journal import JOURNAL_NAME, Journal, bot_sources  # noqa: E402
from iota.messages import (ASSISTANT, COMPACTION, TOOL, TOOL_STARTED, TURN_END, USER, Message,  # noqa: E402
                           ToolCall, Usage)
from iota.paths import bots_dir, sessions_dir  # noqa: E402
from iota.sessions.bundle import Session  # noqa: E402
from iota.tools.recall import Recall  # noqa: E402

COMMON = ("the test file error python build deploy config fix update check run module function value "
          "user request server cache index parser release branch commit review").split()
TOOLS = (("read_file", "path"), ("edit_file", "path"), ("shell", "command"), ("grep", "pattern"))
QUERIES = {
    "a rare word": "zanzibar",
    "a common word": "error",
    "two words": "deploy cache",
    "a phrase": '"release branch"',
    "a miss": "xylophonist",
}


class Text:
    """Words drawn as a long-tailed vocabulary does: a few very common, most rare."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.vocabulary = COMMON + [f"w{n}x" for n in range(30_000)]
        self.cumulative = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(self.vocabulary))))

    def words(self, n: int) -> str:
        return " ".join(self.rng.choices(self.vocabulary, cum_weights=self.cumulative, k=n))


def write_history(session: Session, records: int, rng: random.Random) -> int:
    """Write turns until `records` records; return the turns written."""
    text = Text(rng)
    written = turns = 0
    while written < records:
        turns += 1
        turn = f"t{turns:07d}"
        batch = [Message(USER, text.words(rng.randint(5, 40)), turn=turn)]
        for n in range(rng.randint(1, 3)):
            name, key = rng.choice(TOOLS)
            call = ToolCall(f"c{turns}-{n}", name, {key: text.words(3)})
            result = text.words(rng.choice((20, 60, 300)))
            if turns == 777:
                result += " the codeword is zanzibar"
            batch += [Message(ASSISTANT, tool_calls=[call], usage=Usage(1000, 20), turn=turn),
                      Message(TOOL_STARTED, tool_call_id=call.id, tool_call_name=name, turn=turn),
                      Message(TOOL, result, tool_call_id=call.id, tool_call_name=name, is_error=rng.random() < 0.1,
                              turn=turn)]
        batch += [Message(ASSISTANT, text.words(rng.randint(20, 120)), usage=Usage(2000, 80), turn=turn),
                  Message(TURN_END, turn=turn)]
        if turns % 100 == 0:
            batch.append(Message(COMPACTION, text.words(300), compacted_through=session.conversation_count + len(
                [m for m in batch if m.role in (USER, ASSISTANT, TOOL)]) - 2, usage=Usage(10, 10)))
        session.append(batch, durable=False, meta=False)
        written += len(batch)
    return turns


def timed(work) -> float:
    start = time.perf_counter()
    work()
    return (time.perf_counter() - start) * 1000


async def timed_async(work) -> float:
    start = time.perf_counter()
    await work()
    return (time.perf_counter() - start) * 1000


def main(argv: list[str] | None = None) -> None:
    options = parser(__doc__)
    options.add_argument("--records", type=int, default=100_000, help="records in the history (default 100000)")
    options.add_argument("--rounds", type=int, default=30, help="rounds of the interleaved measures (default 30)")
    options.add_argument("--rebuilds", type=int, default=1, help="times the index is rebuilt (default 1)")
    options.add_argument("--seed", type=int, default=7, help="the history's random seed")
    args = options.parse_args(argv)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as home:
        os.environ["HOME"] = home
        bot = bots_dir() / "coder"
        bot.mkdir(parents=True)
        session = Session.create(sessions_dir(), provider="fake", model="m", agent="coder")
        (bot / "bot.json").write_text(f'{{"session":"{session.id}"}}\n')
        started = time.perf_counter()
        turns = write_history(session, args.records, rng)
        log = session.dir / "messages.jsonl"
        lines = sum(1 for _ in log.open("rb"))
        print(f"history: {lines:,} records, {turns:,} turns, log {log.stat().st_size / 1e6:.1f} MB "
              f"(written in {time.perf_counter() - started:.1f} s)")

        rebuilds = []
        for _ in range(args.rebuilds):
            for suffix in ("", "-wal", "-shm"):
                Path(f"{bot / JOURNAL_NAME}{suffix}").unlink(missing_ok=True)
            journal = Journal.open(bot, bot_sources(bot))
            rebuilds.append(timed(journal.catch_up) / 1000)
            if len(rebuilds) < args.rebuilds:
                journal.close()
        entries = journal.reader.query(lambda db: db.execute("SELECT count(*) FROM entries").fetchone()[0])
        size = sum(Path(f"{bot / JOURNAL_NAME}{s}").stat().st_size for s in ("", "-wal")
                   if Path(f"{bot / JOURNAL_NAME}{s}").exists())
        print(f"journal: {entries:,} entries; index file {size / 1e6:.1f} MB")
        print(f"rebuild from the log: {min(rebuilds):.1f} s" + (
            f" (min of {len(rebuilds)}; max {max(rebuilds):.1f} s)" if len(rebuilds) > 1 else ""))

        recall = Recall(journal)
        view = [Message(USER, "recent", turn=f"t{turns - n:07d}") for n in range(3)]
        text = Text(rng)
        figures: dict[str, list[float]] = {f"recall search: {name}": [] for name in QUERIES}
        figures["iota search (every session): two words"] = []
        figures["journal block before a message"] = []
        figures["per-turn journal cost (catch-up)"] = []


        async def measure() -> None:
            # As the chat runs them: the tool in a worker thread, under trio.
            for round_ in range(args.rounds):
                for name, query in QUERIES.items():
                    figures[f"recall search: {name}"].append(
                        await timed_async(lambda: recall.run({"action": "search", "query": query})))
                figures["iota search (every session): two words"].append(
                    timed(lambda: search_history(QUERIES["two words"], limit=20)))
                figures["journal block before a message"].append(
                    timed(lambda: journal.context(text.words(15), view)))
                turn = f"b{round_:07d}"
                session.append([Message(USER, text.words(20), turn=turn),
                                Message(ASSISTANT, text.words(60), turn=turn), Message(TURN_END, turn=turn)],
                               durable=False, meta=False)
                figures["per-turn journal cost (catch-up)"].append(timed(journal.catch_up))

        trio.run(measure)
        print(f"\n{'(ms, ' + str(args.rounds) + ' rounds, interleaved)':<40} {SPREAD_HEADER}")
        for name, values in figures.items():
            print(f"{name:<40} {spread(values, digits=1)}")
        journal.close()
        session.close()


if __name__ == "__main__":
    main()
