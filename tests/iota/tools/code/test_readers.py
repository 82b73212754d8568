"""The `code` toolset's readers — read_file, glob, grep, list_dir — every cap and message."""

from __future__ import annotations

import os
import socket

import pytest

from iota.tools.code import read as code_read
from iota.tools.code.walk import GitIgnore, glob_regex
from tests.iota.tools.code.helpers import ok, refused, write

MB = 1024 * 1024


# ---- read_file ----


async def test_read_file_numbers_lines_and_drops_line_endings(root, box):
    write(root / "a.txt", "one\ntwo\r\n\tthree")
    assert await ok(box, "read_file", path="a.txt") == "     1\tone\n     2\ttwo\n     3\t\tthree"


async def test_read_file_windows(root, box):
    write(root / "a.txt", "".join(f"l{n}\n" for n in range(1, 6)))
    assert await ok(box, "read_file", path="a.txt", offset=2, limit=2) == (
        "     2\tl2\n     3\tl3\n[showing lines 2-3 of 5]")
    assert await ok(box, "read_file", path="a.txt", offset=4) == "     4\tl4\n     5\tl5\n[showing lines 4-5 of 5]"
    whole = await ok(box, "read_file", path="a.txt")
    assert await ok(box, "read_file", path="a.txt", offset=0, limit=99) == whole
    assert "[showing" not in whole


async def test_an_offset_past_the_end_is_refused_but_counts_as_a_read(root, box):
    write(root / "a.txt", "a\nb\nc\n")
    assert await refused(box, "read_file", path="a.txt", offset=9) == "offset 9 is past the end of a.txt (3 lines)"
    assert (await ok(box, "edit_file", path="a.txt", old_string="b", new_string="B")).startswith("1 replacement(s)")


async def test_an_empty_file(root, box):
    write(root / "e.txt", "")
    assert await ok(box, "read_file", path="e.txt") == "[file is empty]"
    assert await ok(box, "write_file", path="e.txt", content="x") == "wrote 1 B to e.txt (overwritten)"


async def test_binary_files_are_refused(root, box):
    write(root / "bin.dat", b"ab\0cd" + b"x" * 2043)
    assert await refused(box, "read_file", path="bin.dat") == (
        "bin.dat looks like a binary file (2.0 KB); read_file only serves text")
    assert await refused(box, "edit_file", path="bin.dat", old_string="x", new_string="y") == (
        "bin.dat has not been read in this session — read it with read_file before modifying it")
    write(root / "late.txt", b"x" * 8000 + b"\0")
    assert (await ok(box, "read_file", path="late.txt")).startswith("     1\txxx")


async def test_read_file_errors_name_the_shown_path(root, box):
    assert await refused(box, "read_file", path="nope.txt") == "cannot read nope.txt: No such file or directory"


async def test_long_output_is_cut_with_a_footer_that_says_how_to_continue(root, box):
    write(root / "long.txt", "".join(f"{n:04d}" + "x" * 96 + "\n" for n in range(1, 2001)))
    first = await ok(box, "read_file", path="long.txt")
    rows, footer = first.rsplit("\n", 1)
    assert len(rows.encode()) <= 65536
    last = int(rows.rsplit("\n", 1)[1].split("\t")[0])
    assert last == 606  # 606 rows of 108 bytes fit 64 KiB
    assert footer == (f"[output truncated — showing lines 1-{last} of 2000; "
                      f"call read_file with offset={last + 1} to continue]")
    follow = await ok(box, "read_file", path="long.txt", offset=last + 1, limit=2)
    assert follow.startswith(f"   {last + 1}\t{last + 1:04d}x")


async def test_one_line_longer_than_the_cap_is_cut_to_fit(root, box):
    write(root / "wide.txt", "y" * 70000 + "\nnext\n")
    content = await ok(box, "read_file", path="wide.txt", limit=1)
    assert content.startswith("     1\tyyy")
    assert content.endswith("…\n[showing lines 1-1 of 2]")
    assert len(content.split("\n")[0].encode()) == 65535  # the row and its newline fill the cap


async def test_read_file_reads_the_first_20_mb(root, box):
    write(root / "big.txt", ("z" * (MB - 1) + "\n") * 21)
    content = await ok(box, "read_file", path="big.txt", offset=20)
    # Twenty whole lines are in the first 20 MB; the twenty-first is never seen.
    assert content.endswith("…\n[showing lines 20-20 of 20]\n[file is 21.0 MB; only the first 20 MB was read]")


async def test_read_file_serves_regular_files_only(root, box, monkeypatch):
    (root / "src").mkdir()
    os.mkfifo(root / "pipe")
    monkeypatch.chdir(root)  # a socket's path must be short
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind("sock")
        assert await refused(box, "read_file", path="sock") == "sock is not a regular file"
    assert await refused(box, "read_file", path="pipe") == "pipe is not a regular file"
    assert await refused(box, "read_file", path="src") == "src is a directory"


# ---- glob ----




async def test_glob_matches_at_any_depth_newest_first_and_honours_git(tree, box):
    assert (await ok(box, "glob", pattern="*.py")).split("\n") == [
        "lib/secret.py", "src/deep/b.py", "src/a.py", "c.py"]
    assert await ok(box, "glob", pattern="*.log") == "keep.log"


async def test_glob_patterns(tree, box):
    assert await ok(box, "glob", pattern="src/*.py") == "src/a.py"
    assert await ok(box, "glob", pattern="src/**/*.py") == "src/deep/b.py\nsrc/a.py"
    assert await ok(box, "glob", pattern="*.{md,log}") == "keep.log\nREADME.md"
    assert await ok(box, "glob", pattern="[cx].*") == "c.py"
    assert await ok(box, "glob", pattern="*.py", path="src") == "src/deep/b.py\nsrc/a.py"
    # A search pointed into an ignored directory on purpose is honoured.
    assert await ok(box, "glob", pattern="*.py", path="build") == "build/gen.py"


async def test_glob_messages(tree, box):
    assert await ok(box, "glob", pattern="*.rs") == "no files match **/*.rs"
    assert await refused(box, "glob", pattern="[abc") == "invalid glob pattern: **/[abc"
    assert await refused(box, "glob", pattern=" ") == "missing required argument: pattern"
    assert await refused(box, "glob", pattern="*", path="c.py") == "not a directory: c.py"
    assert await refused(box, "glob", pattern="*", path="nope") == "not a directory: nope"


@pytest.mark.parametrize("pattern, matches, misses", [
    ("a?.py", ["ab.py"], ["a.py", "a/.py", "abc.py"]),
    ("[!a]*.py", ["b.py"], ["a.py"]),
    ("[]x].py", ["].py", "x.py"], ["y.py"]),
    ("\\*.py", ["*.py"], ["a.py"]),
    ("src/**", ["src/a", "src/a/b.py"], ["src", "lib/src/a"]),
    ("a/**/b", ["a/b", "a/x/y/b"], ["a/xb", "b"]),
    ("*.{py,md}", ["a.py", "b.md"], ["c.rs", "d/a.py"]),
])
def test_glob_pattern_syntax(pattern, matches, misses):
    regex = glob_regex(pattern)
    assert [path for path in matches + misses if regex.match(path)] == matches


def test_gitignore_rules():
    ignore = GitIgnore("\\#hash\n\\!bang\n# comment\n\ntmp/\n/only-top\nlogs/*.log\n*.bak\n!keep.bak\n")
    ignored = ["#hash", "!bang", "a/#hash", "only-top", "logs/x.log", "x.bak", "deep/y.bak"]
    kept = ["comment", "a/only-top", "logs/deep/x.log", "deep/logs/x.log", "keep.bak", "a/keep.bak"]
    assert [p for p in ignored + kept if ignore.ignores(p, is_dir=False)] == ignored
    assert ignore.ignores("a/tmp", is_dir=True) and not ignore.ignores("a/tmp", is_dir=False)


async def test_glob_shows_the_200_newest(root, box):
    for n in range(205):
        write(root / f"f{n:03d}.txt", "", mtime=10_000 + n)
    lines = (await ok(box, "glob", pattern="*.txt")).split("\n")
    assert lines[:2] == ["f204.txt", "f203.txt"] and lines[199] == "f005.txt"
    assert lines[200:] == ["[showing the 200 newest of 205 matches; narrow the pattern to see the rest]"]


async def test_glob_stops_collecting_at_the_candidate_cap(root, box, monkeypatch):
    monkeypatch.setattr(code_read, "GLOB_CANDIDATES", 3)
    monkeypatch.setattr(code_read, "GLOB_RESULTS", 2)
    for n in range(5):
        write(root / f"f{n}.txt", "", mtime=10_000 + n)
    assert await ok(box, "glob", pattern="*.txt") == (
        "f2.txt\nf1.txt\n[showing the 2 newest of 3 matches; narrow the pattern to see the rest]")


async def test_glob_output_fits_the_cap(root, box):
    deep = root / ("d" * 200) / ("e" * 200)
    for n in range(200):
        write(deep / f"{n:03d}{'f' * 100}.txt", "")
    content = await ok(box, "glob", pattern="*.txt")
    rows, footer = content.rsplit("\n", 1)
    assert len(rows.encode()) <= 65536
    shown = rows.count("\n") + 1
    assert 100 < shown < 200
    assert footer == f"[showing the {shown} newest of 200 matches; narrow the pattern to see the rest]"


async def test_walks_list_links_skip_fifos_and_never_follow_a_link(root, box):
    write(root / "a.txt", "hit\n")
    os.mkfifo(root / "pipe")
    (root / "cycle").symlink_to(".")
    (root / "disk").symlink_to("/")
    (root / "file-link").symlink_to("a.txt")
    assert sorted((await ok(box, "glob", pattern="**")).split("\n")) == ["a.txt", "cycle", "disk", "file-link"]
    # grep reads no file through a link, not even one to a file in the project.
    assert await ok(box, "grep", pattern="hit") == "a.txt:1: hit"
    assert await ok(box, "grep", pattern="hit", path="cycle") == "a.txt:1: hit"
    assert await refused(box, "grep", pattern="hit", path="disk") == (
        f"path is outside the project root ({root}): disk (a symlink leads to /)")


async def test_list_dir_marks_what_is_neither_file_nor_directory(root, box, monkeypatch):
    os.mkfifo(root / "pipe")
    monkeypatch.chdir(root)
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind("sock")
        assert await ok(box, "list_dir") == "pipe (fifo)\nsock (socket)"


async def test_a_gitignore_link_out_of_the_project_is_not_read(tmp_path, root, box):
    write(tmp_path / "outside-rules", "*.txt\n")
    (root / ".gitignore").symlink_to(tmp_path / "outside-rules")
    write(root / "a.txt", "")
    assert await ok(box, "glob", pattern="*.txt") == "a.txt"


# ---- grep ----


async def test_grep_rows_and_context(root, box):
    write(root / "a.py", "alpha\nbeta\ngamma\ndelta\nepsilon\nbeta2\n")
    write(root / "b.txt", "no\nbeta here\n")
    assert await ok(box, "grep", pattern="beta") == "a.py:2: beta\na.py:6: beta2\nb.txt:2: beta here"
    assert await ok(box, "grep", pattern="beta", context=1, include="*.py") == (
        "a.py:1- alpha\na.py:2: beta\na.py:3- gamma\na.py:5- epsilon\na.py:6: beta2")
    # The pattern is not trimmed: a leading space is part of it.
    assert await ok(box, "grep", pattern=" here") == "b.txt:2: beta here"


async def test_grep_context_is_clamped_to_0_to_10(root, box):
    write(root / "a.txt", "".join(("hit" if n == 15 else f"l{n}") + "\n" for n in range(1, 31)))
    wide = (await ok(box, "grep", pattern="hit", context=50)).split("\n")
    assert wide[0] == "a.txt:5- l5" and wide[-1] == "a.txt:25- l25" and len(wide) == 21
    assert await ok(box, "grep", pattern="hit", context=-3) == "a.txt:15: hit"


async def test_grep_include_matches_the_name_or_the_path(root, box):
    write(root / "src" / "a.py", "x\n")
    write(root / "docs" / "a.md", "x\n")
    write(root / "top.py", "x\n")
    assert await ok(box, "grep", pattern="x", include="*.py") == "src/a.py:1: x\ntop.py:1: x"
    assert await ok(box, "grep", pattern="x", include="src/**") == "src/a.py:1: x"
    assert await ok(box, "grep", pattern="x", path="docs") == "docs/a.md:1: x"
    assert await refused(box, "grep", pattern="x", include="[x") == "invalid include pattern: [x"


async def test_grep_skips_binaries_big_files_git_and_ignored_paths(tree, box):
    write(tree / "bin.dat", b"src\0")
    write(tree / "huge.txt", b"src\n" + b"x" * (10 * MB - 3))
    write(tree / "edge.txt", b"src\n" + b"x" * (10 * MB - 4))
    assert await ok(box, "grep", pattern="src|build|secret|x\\.log|hook") == "\n".join([
        ".gitignore:1: # build output", ".gitignore:2: build/", ".gitignore:5: /secret.py",
        "edge.txt:1: src", "lib/secret.py:1: lib/secret.py",
        "src/a.py:1: src/a.py", "src/deep/b.py:1: src/deep/b.py"])


async def test_grep_clips_long_lines(root, box):
    write(root / "x.txt", "y" * 499 + "éz\n")
    assert await ok(box, "grep", pattern="z") == "x.txt:1: " + "y" * 499 + "…"


async def test_grep_stops_after_100_matches(root, box):
    write(root / "a.txt", "hit\n" * 150)
    write(root / "b.txt", "hit\n")
    lines = (await ok(box, "grep", pattern="hit")).split("\n")
    assert len(lines) == 101 and lines[99] == "a.txt:100: hit"
    assert lines[100] == "[stopped after 100 matches; refine the pattern or use include to narrow the search]"


async def test_grep_output_fits_the_cap(root, box):
    write(root / "a.txt", ("w" * 400 + "\n") * 20 + ("hit" + "w" * 400 + "\n" + ("w" * 400 + "\n") * 20) * 50)
    content = await ok(box, "grep", pattern="hit", context=10)
    rows, footer = content.rsplit("\n", 1)
    assert len(rows.encode()) <= 65536
    assert footer == "[stopped after 50 matches; refine the pattern or use include to narrow the search]"


async def test_grep_messages(root, box):
    write(root / "a.txt", "a\n")
    assert await ok(box, "grep", pattern="nothing-here") == "no matches for nothing-here"
    assert (await refused(box, "grep", pattern="(")).startswith("invalid regular expression: ")
    assert await refused(box, "grep", pattern="") == "missing required argument: pattern"


# ---- list_dir ----


async def test_list_dir_rows(tree, box):
    write(tree / "src" / "big.bin", b"\0" * 1229)
    (tree / "dirlink").symlink_to(tree / "src")
    assert await ok(box, "list_dir") == "\n".join([
        f".gitignore ({(tree / '.gitignore').stat().st_size} B)", "README.md (10 B)", "c.py (5 B)",
        f"dirlink ({len(str(tree / 'src'))} B)", "keep.log (9 B)", "lib/", "src/"])
    assert await ok(box, "list_dir", path="src") == "a.py (9 B)\nbig.bin (1.2 KB)\ndeep/"


async def test_list_dir_messages(root, box):
    assert await ok(box, "list_dir") == "[directory is empty]"
    write(root / "a.txt", "")
    assert await refused(box, "list_dir", path="a.txt") == "not a directory: a.txt"


async def test_list_dir_shows_500_entries(root, box):
    for n in range(501):
        write(root / f"f{n:03d}", "")
    lines = (await ok(box, "list_dir")).split("\n")
    assert lines[499] == "f499 (0 B)" and lines[500:] == ["[showing 500 of 501 entries]"]


async def test_list_dir_output_fits_the_cap(root, box):
    for n in range(400):
        write(root / f"{n:03d}{'n' * 200}", "")
    content = await ok(box, "list_dir")
    rows, footer = content.rsplit("\n", 1)
    assert len(rows.encode()) <= 65536
    assert footer == f"[showing {rows.count(chr(10)) + 1} of 400 entries]"
