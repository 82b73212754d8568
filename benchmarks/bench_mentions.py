"""How fast the composer's `@` list is on a large project: time to the first draw, and per key.

    .venv/bin/python benchmarks/bench_mentions.py [--runs N] [--files 50000]

It makes a tree of --files files (default 50,000: 500 directories of 100, a few levels deep,
names like a source tree's, plus an ignored `build/` the listing must skip) in a temporary
directory, then measures the pieces the chat runs, in process:

    walk           the listing (actors.mentions.listed_paths: /file's walk, .gitignore honoured),
                   in the chat a thread started when `@` is first typed
    index          the face lowering the listing once (ui.widgets.mentions.FileIndex)
    first draw     walk + index + the list for `@` (its rows rendered): what `@` costs the first time
    per key        one key of a query typed after `@` (match + the rows rendered), over queries
                   that match many files, few, and only by their letters in order (`mdlrdr`)

The cases take turns run by run (interleaved); min / median / max in milliseconds.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.figures import SPREAD_HEADER, interleaved, parser, spread  # noqa: E402
from actors.mentions import listed_paths  # noqa: E402
from iota.tools.code.paths import Jail  # noqa: E402
from ui.widgets.mentions import FileIndex, MentionList  # noqa: E402

# Queries typed one key at a time after `@`: common words, a rare file, a fuzzy-only one, none.
QUERIES = ("src/", "module_042", "readme", "mdlrdr", "zzzz")
WORDS = ("core", "util", "model", "reader", "writer", "parser", "view", "store", "net", "test")


def make_tree(root: Path, files: int) -> None:
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "README.md").write_text("# Big project\n")
    per_directory = 100
    for number in range(files // per_directory):
        directory = root / "src" / WORDS[number % len(WORDS)] / f"package_{number:03}"
        directory.mkdir(parents=True)
        for file in range(per_directory):
            (directory / f"module_{file:03}_{WORDS[file % len(WORDS)]}.py").write_text("")
    ignored = root / "build"
    ignored.mkdir()
    for file in range(1000):
        (ignored / f"artefact_{file}.o").write_text("")


def first_draw(jail: Jail) -> tuple[float, float, float, int]:
    start = time.perf_counter()
    paths = listed_paths(jail)
    walked = time.perf_counter()
    mentions = MentionList()
    mentions.set_files(paths)
    indexed = time.perf_counter()
    mentions.follow("@", 1)
    mentions.render((100,))
    drawn = time.perf_counter()
    return walked - start, indexed - walked, drawn - start, len(paths)


def per_key(index: FileIndex, query: str) -> list[float]:
    """The time of each key of `query` typed after `@`."""
    mentions = MentionList()
    mentions._index = index  # the listing already here, as after the first draw
    times = []
    for typed in range(1, len(query) + 1):
        text = "see @" + query[:typed]
        start = time.perf_counter()
        mentions.follow(text, len(text))
        mentions.render((100,))
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    arguments = parser(__doc__)
    arguments.add_argument("--runs", type=int, default=5)
    arguments.add_argument("--files", type=int, default=50_000)
    options = arguments.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="iota-bench-mentions-"))
    try:
        make_tree(directory, options.files)
        jail = Jail(directory)
        figures: dict[str, list[float]] = {}
        listed = 0
        index = FileIndex(listed_paths(jail))
        cases = ("first draw", *QUERIES)
        for _, case in interleaved(cases, options.runs):
            if case == "first draw":
                walk, lowered, drawn, listed = first_draw(jail)
                figures.setdefault("walk", []).append(walk)
                figures.setdefault("index", []).append(lowered)
                figures.setdefault("first draw", []).append(drawn)
            else:
                figures.setdefault(f"per key: {case}", []).extend(per_key(index, case))
        print(f"{listed:,} files listed of {options.files + 2:,} (+1,000 ignored in build/), {options.runs} runs")
        print(f"{'ms':32} {SPREAD_HEADER}")
        for name, values in figures.items():
            print(f"{name:32} {spread(values, 1000, 1)}")
        matches = {query: len(index.rank(query)) for query in QUERIES}
        print("matches kept per query (at most 50):", ", ".join(f"{q} {n}" for q, n in matches.items()))
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
