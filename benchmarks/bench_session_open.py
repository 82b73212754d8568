"""How long it takes to open a session and load its live view, by log length.

    python benchmarks/bench_session_open.py [--runs N]

For logs of 100, 10,000 and 100,000 records it times `Session.open` (lock, torn-tail check,
view load) and `close`, as `iota resume` and a bot's start do:

    plain          never compacted: the whole log is the view
    compacted      compacted near the end down to ~50 messages; loads from meta.json's checkpoint
    no checkpoint  the same log with the checkpoint removed (as written by a program that does not
                   keep one): a full scan, the fallback

Runs with HOME pointed at a temporary directory that is deleted afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from iota.messages import Message, ToolCall, Usage  # noqa: E402
from iota.paths import sessions_dir  # noqa: E402
from iota.sessions.bundle import Session  # noqa: E402

SIZES = (100, 10_000, 100_000)
RETAINED = 50
BATCH = 1_000
PROSE = "The quick brown fox jumps over the lazy dog while the build runs its tests again. "


def conversation(count: int) -> list[Message]:
    """`count` records cycling through a realistic turn: ask, call a tool, read its result, answer."""
    messages = []
    for i in range(count):
        match i % 4:
            case 0:
                messages.append(Message("user", f"request {i}: " + PROSE * 2))
            case 1:
                call = ToolCall(f"call_{i}", "read", {"path": f"src/module_{i % 97}.py"})
                messages.append(Message("assistant", "Let me look.", tool_calls=[call], usage=Usage(9_000 + i, 40)))
            case 2:
                messages.append(Message("tool", PROSE * 8, tool_call_id=f"call_{i - 1}", tool_call_name="read"))
            case 3:
                messages.append(Message("assistant", PROSE * 4, usage=Usage(9_500 + i, 300)))
    return messages


def build(records: int, compacted: bool) -> Path:
    with Session.new(sessions_dir(), provider="anthropic", model="bench") as session:
        session.append([Message("system", "You are a helpful assistant. " * 40)])
        body = conversation(records - 1)
        for start in range(0, len(body), BATCH):
            session.append(body[start : start + BATCH])
        if compacted:
            through = session.conversation_count - RETAINED
            session.append([Message("compaction", PROSE * 20, compacted_through=through, usage=Usage(12_000, 900))])
        return session.dir


def without_checkpoint(bundle: Path) -> Path:
    copy = bundle.with_name(bundle.name[:-1] + "x")
    shutil.copytree(bundle, copy)
    meta = json.loads((copy / "meta.json").read_text())
    del meta["view_index"]
    (copy / "meta.json").write_text(json.dumps(meta, indent=2))
    return copy


def time_open(bundle: Path, runs: int) -> tuple[float, int]:
    """Median seconds to open and close the session, and the length of the view it loaded."""
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        session = Session.open(bundle)
        timings.append(time.perf_counter() - started)
        loaded = len(session.view.messages)
        session.close()
    return statistics.median(timings), loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed opens per log (the median is shown)")
    runs = parser.parse_args().runs

    home = tempfile.mkdtemp(prefix="iota-bench-")
    os.environ["HOME"] = home
    try:
        print(f"Session.open + close, median of {runs} runs\n")
        print(f"{'records':>8}  {'log size':>9}  {'plain':>20}  {'compacted':>20}  {'no checkpoint':>20}")
        for records in SIZES:
            plain = build(records, compacted=False)
            compacted = build(records, compacted=True)
            cells = []
            for bundle in (plain, compacted, without_checkpoint(compacted)):
                seconds, loaded = time_open(bundle, runs)
                cells.append(f"{seconds * 1000:.2f} ms ({loaded})")
            size = (plain / "messages.jsonl").stat().st_size / 1e6
            print(f"{records:>8,}  {size:>6.1f} MB  " + "  ".join(f"{cell:>20}" for cell in cells))
        print("\n(n) is the number of messages in the loaded view.")
    finally:
        shutil.rmtree(home)


if __name__ == "__main__":
    main()
