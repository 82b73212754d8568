"""Bytes of a bot's learned memory sent per request: durables by relevance against MEMORY.md growth.

A bot that has run for months has noted and promoted thousands of facts. Before issue 31 each
promoted candidate became a MEMORY.md `[inferred]` line, and MEMORY.md goes whole with every
request, up to its 8 KiB cap (past which promotions were refused, so the newest facts were lost).
Now each becomes a durable in durables.jsonl, and before each message only the pinned ones, those
the message is about and the most brought up ride on it: at most 16 entries and 2 KiB
(iota.bots.durables), and none already carried by an earlier notice still in the view.

For stores of 100, 500 and 2,000 (or the sizes given) durables — realistic one-line facts with two
or three keywords, 8 pinned (the most `remember` lets be), hits spread as a long tail — the script sends 200 messages (a
third about one of the facts, the rest about nothing stored), and prints per message:

- durables: the bytes of the `[durables]` notice a message gets on its own (min / median / max),
  how many entries, and the time to choose them (the store read from disk and the full-text test
  included); then, in one conversation of those 200 messages with no compaction, the new bytes a
  message adds (what the view already carries is not repeated) and all the notices in the view at
  the end — what the last request carries;
- MEMORY.md then: the bytes of the same facts as MEMORY.md lines, sent whole with every request —
  uncapped (what the store holds), and as the 8 KiB cap made it (with how many facts fit).

These are counts, the same on every run, except the time (a median of the 200).

    .venv/bin/python benchmarks/bench_durables.py [--sizes 100,500,2000]
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.figures import parser  # noqa: E402
from iota.bots.candidates import DURABLE, CandidateBook, Entry  # noqa: E402
from iota.bots.durables import PINS_CAP, chosen, durables_block, durables_text, sent_in  # noqa: E402
from iota.memory.document import MEMORY_CAP, make_line  # noqa: E402

SUBJECTS = ["billing service", "checkout test", "staging deploy", "release notes", "payments retry",
            "on-call runbook", "database migration", "CI cache", "search index", "auth tokens", "feature flags",
            "mobile build", "docs site", "metrics dashboard", "load balancer", "queue worker"]
VERBS = ["is owned by", "is reviewed on Fridays by", "must be announced to", "was rewritten last spring by",
         "is paged to", "needs a sign-off from"]
TEAMS = ["the platform team", "Dana", "the payments group", "Kenji", "the SRE rotation", "Amara", "the web team"]


def facts(count: int, rng: random.Random) -> list[Entry]:
    entries = []
    for n in range(count):
        subject, verb, team = rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(TEAMS)
        code = f"unit{n}"
        text = f"The {subject} ({code}) {verb} {team}"
        hits = int(rng.paretovariate(1.5)) - 1   # most never brought up again, a few often
        entries.append(Entry(f"d{n}", text, DURABLE, keywords=[code, subject.split()[0]], hits=hits,
                             pinned=n % max(1, count // PINS_CAP) == 0 and n // max(1, count // PINS_CAP) < PINS_CAP,
                             created=1_700_000_000 + n * 3600))
    return entries


def messages(entries: list[Entry], rng: random.Random, count: int = 200) -> list[str]:
    said = []
    for n in range(count):
        if n % 3 == 0:
            entry = rng.choice(entries)
            said.append(f"Can you check the {entry.keywords[1]} work for {entry.keywords[0]} before the release?")
        else:
            said.append(f"Let us refactor the parser module and run the test suite again (step {n}).")
    return said


def memory_md_bytes(entries: list[Entry]) -> tuple[int, int, int]:
    """(bytes uncapped, bytes under the 8 KiB cap, facts that fit under it)."""
    sizes = [len(make_line(entry.text, "inferred", "2026-01-01").encode()) + 1 for entry in entries]
    fit, used = 0, 0
    for size in sizes:
        if used + size > MEMORY_CAP:
            break
        used, fit = used + size, fit + 1
    return sum(sizes), used, fit


def measure(size: int) -> None:
    rng = random.Random(size)
    entries = facts(size, rng)
    with tempfile.TemporaryDirectory() as directory:
        book = CandidateBook(Path(directory))
        book.save(entries)
        sent, counts, times, view, new = [], [], [], [], []
        for text in messages(entries, rng):
            # In a conversation: what an earlier notice in the view carries is not sent again.
            fresh = durables_text(chosen(book.load(), text, project="project", already=sent_in(view)))
            if fresh:
                view.append(durables_block(fresh))
            new.append(len((fresh or "").encode()))
            started = time.perf_counter()
            picked = chosen(book.load(), text, project="project")
            times.append(time.perf_counter() - started)
            block = durables_text(picked) or ""
            sent.append(len(block.encode()))
            counts.append(len(picked))
    in_view = sum(len(block.content.encode()) for block in view)
    whole, capped, fit = memory_md_bytes(entries)
    print(f"{size:>5} durables  per message: {min(sent)} / {int(statistics.median(sent))} / {max(sent)} B "
          f"(min / median / max), {min(counts)}–{max(counts)} entries, chosen in "
          f"{statistics.median(times) * 1000:.1f} ms (median)")
    print(f"{'':>5}            in one conversation of {len(new)} messages (no compaction): "
          f"{int(statistics.mean(new))} B new per message (mean), {in_view:,} B of notices in the view "
          f"at the end")
    print(f"{'':>5}            as MEMORY.md lines: {whole:,} B with every request uncapped; "
          f"{capped:,} B at the 8 KiB cap, holding {fit} of the {size} facts")


def main() -> None:
    arguments = parser(__doc__)
    arguments.add_argument("--sizes", default="100,500,2000", help="store sizes, comma-separated")
    sizes = [int(size) for size in arguments.parse_args().sizes.split(",")]
    for size in sizes:
        measure(size)


if __name__ == "__main__":
    main()
