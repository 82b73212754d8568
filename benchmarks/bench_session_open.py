"""How long it takes to open a session and load its live view, by log length.

    .venv/bin/python benchmarks/bench_session_open.py [--runs N] [--sizes 100,10000,100000]

For logs of 100, 10,000 and 100,000 records (--sizes) it times `Session.open` (lock, torn-tail check,
view load, repair) and `close`, as `iota resume` and a bot's start do:

    plain          never compacted: the view is the whole log, or its last 4 MiB (TAIL_BYTES) when
                   it is longer, opened from a round there with the rest left out
    compacted      compacted near the end down to ~50 messages; loads from where the offset index
                   (messages.idx) says the view begins
    no index       the same log without its index (as written by a program that does not keep
                   one): the open reads the whole log once to rebuild it; a fresh copy each run
    unfinished     the plain log ending in a turn killed mid-way (its user message, a reply asking
                   for a tool that had started, streamed text, no `turn_end`): the open closes it
                   and appends the closing records
    compacted, unfinished   the same, after the compacted log

Every record is written with a turn id, as the chat writes them. An open that repairs changes the
bundle, so each timed open of an unfinished log opens a fresh copy (the copy is not timed). The
five cases of a log length take turns run by run (interleaved); min / median / max are printed,
then how much longer the longest log takes to open than the shortest (a compacted log should not).
Peak memory is what Python allocated during one more open of each case, untimed (tracemalloc).

Runs with HOME pointed at a temporary directory that is deleted afterwards.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.figures import SPREAD_HEADER, interleaved, parser, ratio, spread  # noqa: E402
from iota.messages import PARTIAL, TOOL_STARTED, TURN_END, Message, ToolCall, Usage  # noqa: E402
from iota.paths import sessions_dir  # noqa: E402
from iota.sessions.bundle import Session, new_turn_id  # noqa: E402

SIZES = (100, 10_000, 100_000)
RETAINED = 50
BATCH = 1_000
PROSE = "The quick brown fox jumps over the lazy dog while the build runs its tests again. "


def conversation(count: int) -> list[Message]:
    """`count` records cycling through a realistic turn: ask, call a tool, read its result, answer,
    as the chat writes them: each with its turn's id, the tool's start marked, the turn ended (the
    few records short of a whole turn are notices, which belong to no turn)."""
    whole = count - count % 6
    messages = [Message("user", f"background job {i} finished: exit 0", notice=True) for i in range(count - whole)]
    turn = ""
    for i in range(whole):
        match i % 6:
            case 0:
                turn = new_turn_id()
                messages.append(Message("user", f"request {i}: " + PROSE * 2, turn=turn))
            case 1:
                call = ToolCall(f"call_{i}", "read", {"path": f"src/module_{i % 97}.py"})
                messages.append(Message("assistant", "Let me look.", tool_calls=[call], usage=Usage(9_000 + i, 40),
                                        turn=turn))
            case 2:
                messages.append(Message(TOOL_STARTED, tool_call_id=f"call_{i - 1}", tool_call_name="read", turn=turn))
            case 3:
                messages.append(Message("tool", PROSE * 8, tool_call_id=f"call_{i - 2}", tool_call_name="read",
                                        turn=turn))
            case 4:
                messages.append(Message("assistant", PROSE * 4, usage=Usage(9_500 + i, 300), turn=turn))
            case 5:
                messages.append(Message(TURN_END, turn=turn))
    return messages


def unfinished_turn() -> list[Message]:
    """A turn killed mid-way: the user's message, a reply asking for a tool that had started, then
    the next reply streaming."""
    turn = new_turn_id()
    call = ToolCall("call_killed", "shell", {"command": "make test"})
    return [Message("user", "run the tests", turn=turn),
            Message("assistant", "Running them.", tool_calls=[call], usage=Usage(9_000, 40), turn=turn),
            Message(TOOL_STARTED, tool_call_id="call_killed", tool_call_name="shell", turn=turn),
            Message("tool", PROSE * 8, tool_call_id="call_killed", tool_call_name="shell", turn=turn),
            Message(TOOL_STARTED, tool_call_id="call_next", tool_call_name="shell", turn=turn),
            Message(PARTIAL, "The tests pass except ", turn=turn), Message(PARTIAL, PROSE, turn=turn)]


def build(records: int, compacted: bool, unfinished: bool = False) -> Path:
    with Session.new(sessions_dir(), provider="anthropic", model="bench") as session:
        session.append([Message("system", "You are a helpful assistant. " * 40)])
        body = conversation(records - 1)
        for start in range(0, len(body), BATCH):
            session.append(body[start : start + BATCH])
        if compacted:
            through = session.conversation_count - RETAINED
            session.append([Message("compaction", PROSE * 20, compacted_through=through, usage=Usage(12_000, 900))])
        if unfinished:
            session.append(unfinished_turn(), meta=False)
        return session.dir


def sibling(bundle: Path, mark: str) -> Path:
    """A bundle beside `bundle` whose id differs in its last character (`mark`, or the next letter
    when the id already ends in it: the copy must never be the original)."""
    return bundle.with_name(bundle.name[:-1] + (mark if bundle.name[-1] != mark else chr(ord(mark) + 1)))


def without_index(bundle: Path) -> Path:
    """A copy of `bundle` without what tells the loader where the view begins: messages.idx, and
    meta.json's `view_index` (where iota kept it before messages.idx, so this runs on older code)."""
    copy = sibling(bundle, "x")
    shutil.copytree(bundle, copy)
    (copy / "messages.idx").unlink(missing_ok=True)
    meta = json.loads((copy / "meta.json").read_text())
    meta.pop("view_index", None)
    (copy / "meta.json").write_text(json.dumps(meta, indent=2))
    return copy


def open_once(bundle: Path, fresh: bool, closes: bool) -> tuple[float, int]:
    """Seconds to open the session, and the length of the view it loaded; `fresh`: the open gets
    an untouched copy of the bundle (the open changes it), whose making is not timed; `closes`:
    the open must close an unfinished turn."""
    opened = bundle
    if fresh:
        opened = sibling(bundle, "c")
        shutil.rmtree(opened, ignore_errors=True)
        shutil.copytree(bundle, opened)
        os.sync()  # the copy's pages are not left for the timed open's fsync to write
    started = time.perf_counter()
    session = Session.open(opened)
    seconds = time.perf_counter() - started
    loaded = len(session.view.messages)
    session.close()
    assert not closes or session.view.closing, "the unfinished turn was not closed"
    return seconds, loaded


def peak_mib(bundle: Path, fresh: bool, closes: bool) -> float:
    """What Python allocated at the most during one open, in MiB."""
    gc.collect()
    tracemalloc.start()
    try:
        open_once(bundle, fresh, closes)
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def main() -> None:
    options = parser(__doc__)
    options.add_argument("--runs", type=int, default=7, help="timed opens per log (default 7)")
    options.add_argument("--sizes", default=",".join(map(str, SIZES)),
                         help=f"log lengths in records, comma-separated (default {','.join(map(str, SIZES))})")
    args = options.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]

    home = tempfile.mkdtemp(prefix="iota-bench-")
    os.environ["HOME"] = home
    try:
        print(f"Session.open + close, {args.runs} interleaved runs, ms\n")
        print(f"{'records':>8}  {'log size':>9}  {'case':22} {SPREAD_HEADER}  {'view':>6}  peak MiB")
        medians: dict[tuple[str, int], float] = {}
        for records in sizes:
            compacted = build(records, compacted=True)
            # name: (bundle, a fresh copy each open, the open closes a turn)
            cases = {"plain": (build(records, compacted=False), False, False),
                     "compacted": (compacted, False, False),
                     "no index": (without_index(compacted), True, False),
                     "unfinished": (build(records, compacted=False, unfinished=True), True, True),
                     "compacted, unfinished": (build(records, compacted=True, unfinished=True), True, True)}
            timings: dict[str, list[float]] = {name: [] for name in cases}
            views: dict[str, int] = {}
            for _, name in interleaved(list(cases), args.runs):
                seconds, views[name] = open_once(*cases[name])
                timings[name].append(seconds)
            size = (cases["plain"][0] / "messages.jsonl").stat().st_size / 1e6
            for name, values in timings.items():
                medians[name, records] = statistics.median(values)
                print(f"{records:>8,}  {size:>6.1f} MB  {name:22} {spread(values, 1e3, 2)}  {views[name]:>6}"
                      f"  {peak_mib(*cases[name]):8.1f}")
        print("\nview: the number of messages in the loaded view")
        if len(sizes) > 1:
            print(f"\nratios of the medians, {max(sizes):,} over {min(sizes):,} records")
            for name in cases:
                print(ratio(name, medians[name, max(sizes)], medians[name, min(sizes)]))
    finally:
        shutil.rmtree(home)


if __name__ == "__main__":
    main()
