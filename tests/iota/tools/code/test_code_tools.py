"""The `code` toolset: the jail, the read-before-write ledger, and every cap and message of the
six tools, driven through a Toolbox the way the agent loop calls them."""

from __future__ import annotations

import os
import socket
import stat
import threading
import time

import pytest
import trio

from iota.tools.code import read as code_read, shared as code_set, write as code_write
from iota.tools.base import Toolbox, ToolResult
from iota.config.audit import READ_ONLY_AUTO_WRITE
from iota.tools.code.toolset import code_tools
from iota.tools.code.walk import GitIgnore, glob_regex

MB = 1024 * 1024


@pytest.fixture
def root(tmp_path):
    project = tmp_path / "proj"
    project.mkdir()
    return project


@pytest.fixture
def box(root):
    return Toolbox(code_tools(root))


def write(path, content: str | bytes, mtime: int | None = None):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content)
    else:
        path.write_bytes(content)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


async def ok(box, name, **args) -> str:
    result = await box.call(name, args)
    assert not result.is_error, result.content
    return result.content


async def refused(box, name, **args) -> str:
    result = await box.call(name, args)
    assert result.is_error, result.content
    return result.content


# ---- the set ----


def test_tools_come_in_order_and_read_only_leaves_out_the_writers(root):
    assert [t.name for t in code_tools(root)] == [
        "glob", "grep", "list_dir", "read_file", "edit_file", "write_file"]
    assert [t.name for t in code_tools(root, read_only=True)] == ["glob", "grep", "list_dir", "read_file"]


def test_readers_run_in_parallel_and_writers_alone(root):
    assert {t.name: t.parallel for t in code_tools(root)} == {
        "glob": True, "grep": True, "list_dir": True, "read_file": True,
        "edit_file": False, "write_file": False}


def test_schemas_name_their_arguments(root):
    schemas = {t.name: t.spec().parameters for t in code_tools(root)}
    assert {name: list(s["properties"]) for name, s in schemas.items()} == {
        "glob": ["pattern", "path"],
        "grep": ["pattern", "path", "include", "context"],
        "list_dir": ["path"],
        "read_file": ["path", "offset", "limit"],
        "edit_file": ["path", "old_string", "new_string", "replace_all"],
        "write_file": ["path", "content"],
    }
    assert {name: s.get("required", []) for name, s in schemas.items()} == {
        "glob": ["pattern"], "grep": ["pattern"], "list_dir": [], "read_file": ["path"],
        "edit_file": ["path", "old_string", "new_string"], "write_file": ["path", "content"],
    }
    assert all(t.description for t in code_tools(root))


def test_writers_ask_with_a_label_unless_auto_write(root):
    asking = {t.name: t for t in code_tools(root)}
    assert asking["edit_file"].approval({"path": "src/../src/a.py"}) == "edit_file src/a.py"
    assert asking["write_file"].approval({"path": str(root / "b.txt")}) == "write_file b.txt"
    assert asking["read_file"].approval({"path": "a.py"}) is None
    # Refused by the jail before anything is touched, so there is nothing to ask about.
    assert asking["edit_file"].approval({"path": "../a.py"}) is None
    trusting = {t.name: t for t in code_tools(root, auto_write=True)}
    assert trusting["edit_file"].approval({"path": "a.py"}) is None
    assert trusting["write_file"].approval({"path": "a.py"}) is None


def test_targets_name_the_path_or_the_pattern(root):
    tools = {t.name: t for t in code_tools(root)}
    assert tools["read_file"].target({"path": "./a/../b.py"}) == "b.py"
    assert tools["list_dir"].target({}) == "."
    assert tools["glob"].target({"pattern": "*.py"}) == "*.py"
    assert tools["grep"].target({"pattern": "def "}) == "def "


def test_the_contradiction_message_is_exported():
    assert READ_ONLY_AUTO_WRITE == (
        "read_only and auto_write contradict each other: auto_write approves writes the set does not offer")


def test_caps_are_the_reference_values():
    assert code_set.MAX_OUTPUT == 65536
    assert code_set.MAX_FILE_BYTES == 20 * MB
    assert code_set.BINARY_SNIFF == 8000
    assert (code_read.GLOB_RESULTS, code_read.GLOB_CANDIDATES) == (200, 10_000)
    assert (code_read.GREP_MATCHES, code_read.GREP_MAX_FILE_BYTES) == (100, 10 * MB)
    assert (code_read.GREP_LINE_BYTES, code_read.GREP_MAX_CONTEXT, code_read.DIR_ENTRIES) == (500, 10, 500)


def test_byte_counts():
    assert [code_set.byte_count(n) for n in (0, 1023, 1024, 1229, MB, 3_565_158)] == [
        "0 B", "1023 B", "1.0 KB", "1.2 KB", "1.0 MB", "3.4 MB"]


async def test_readers_work_off_the_event_loop_thread(root, box, monkeypatch):
    threads = []
    original = code_read.ReadFile.call

    def spy(self, args):
        threads.append(threading.current_thread())
        return original(self, args)

    monkeypatch.setattr(code_read.ReadFile, "call", spy)
    write(root / "a.txt", "a\n")
    await ok(box, "read_file", path="a.txt")
    assert threads and threads[0] is not threading.main_thread()


async def test_a_cancelled_reader_is_abandoned_but_a_cancelled_writer_is_waited_for(box, monkeypatch):
    finished = []

    def slow(self, args):
        time.sleep(0.5 if self.parallel else 0.1)
        finished.append(self.name)
        return ToolResult("done")

    monkeypatch.setattr(code_read.ReadFile, "call", slow)
    monkeypatch.setattr(code_write.EditFile, "call", slow)
    with trio.move_on_after(0.05):
        await box.call("read_file", {"path": "a.txt"})
    assert finished == []  # back at once, the thread left to finish unseen
    with trio.move_on_after(0.05):
        await box.call("edit_file", {"path": "a.txt"})
    assert finished == ["edit_file"]  # a write is never left half done behind the turn


async def test_arguments_of_the_wrong_type_are_read_leniently(root, box):
    write(root / "a.txt", "x\ny\nx\n")
    assert await ok(box, "read_file", path="a.txt", offset="2", limit=1.0) == "     2\ty\n[showing lines 2-2 of 3]"
    assert await ok(box, "read_file", path="a.txt", offset=True) == await ok(box, "read_file", path="a.txt")
    assert (await ok(box, "edit_file", path="a.txt", old_string="x", new_string="z", replace_all="true")).startswith(
        "2 replacement(s)")


# ---- the jail ----


async def test_relative_paths_are_joined_to_the_root_and_cleaned(root, box):
    write(root / "a" / "c.txt", "hello\n")
    assert await ok(box, "read_file", path=" a/b/../c.txt ") == "     1\thello"
    assert await ok(box, "read_file", path=str(root / "a" / "c.txt")) == "     1\thello"


@pytest.mark.parametrize("arg", ["../x.txt", "a/../../x.txt", "/etc/passwd", "..", "../proj2/x.txt"])
async def test_paths_outside_the_root_are_refused(root, box, arg):
    for name, args in [("read_file", {}), ("write_file", {"content": "x"}), ("list_dir", {}),
                       ("edit_file", {"old_string": "a", "new_string": "b"}), ("glob", {"pattern": "*"}),
                       ("grep", {"pattern": "x"})]:
        message = await refused(box, name, path=arg, **args)
        assert message == f"path is outside the project root ({root}): {arg}", name
    assert not (root.parent / "x.txt").exists()
    assert not (root.parent / "proj2").exists()


@pytest.mark.parametrize("name", ["read_file", "edit_file", "write_file"])
async def test_an_empty_path_is_a_missing_argument(box, name):
    for arg in ("", "   "):
        args = {"path": arg, "old_string": "a", "new_string": "b", "content": "x"}
        assert await refused(box, name, **args) == "missing required argument: path"
    assert await refused(box, "read_file") == "missing required argument: path"


async def test_paths_are_judged_after_resolving_symlinks(tmp_path, root, box):
    elsewhere = write(tmp_path / "elsewhere" / "f.txt", "outside\n")
    (root / "link").symlink_to(elsewhere.parent)
    # Lexically inside the root, but the link leads out: refused, and the message says why.
    assert await refused(box, "read_file", path="link/f.txt") == (
        f"path is outside the project root ({root}): link/f.txt (a symlink leads to {elsewhere})")
    # A link that stays inside is followed, and the real file is what results name.
    write(root / "src" / "a.txt", "a\n")
    (root / "alias.txt").symlink_to("src/a.txt")
    assert await ok(box, "read_file", path="alias.txt") == "     1\ta"
    assert code_tools(root)[3].target({"path": "alias.txt"}) == "src/a.txt"
    # A root reached through a link is that root: its own paths and the real ones both lead in.
    (tmp_path / "alias").symlink_to(root)
    aliased = Toolbox(code_tools(tmp_path / "alias"))
    assert await ok(aliased, "read_file", path=str(tmp_path / "alias" / "src" / "a.txt")) == "     1\ta"
    assert await ok(aliased, "read_file", path=str(root / "src" / "a.txt")) == "     1\ta"
    message = await refused(aliased, "read_file", path="../elsewhere/f.txt")
    assert message == f"path is outside the project root ({tmp_path / 'alias'}): ../elsewhere/f.txt"


async def test_a_write_through_a_link_inside_the_root_lands_on_the_real_file(root, box):
    write(root / "src" / "a.txt", "one\n")
    (root / "alias.txt").symlink_to("src/a.txt")
    (root / "planned.txt").symlink_to("src/new/b.txt")  # dangling: the real target is created
    await ok(box, "read_file", path="alias.txt")
    # One ledger entry for the real file, whichever name read it.
    assert await ok(box, "edit_file", path="src/a.txt", old_string="one", new_string="two") == (
        "1 replacement(s) in src/a.txt\n\n     1\ttwo")
    assert await ok(box, "write_file", path="planned.txt", content="b") == "wrote 1 B to src/new/b.txt (created)"
    assert (root / "alias.txt").is_symlink() and (root / "src" / "new" / "b.txt").read_text() == "b"


async def test_a_cycle_of_links_in_a_path_is_a_clear_error(root, box):
    (root / "loop").symlink_to("loop")
    assert await refused(box, "read_file", path="loop/x") == "cannot read loop/x: Too many levels of symbolic links"
    assert await refused(box, "write_file", path="loop/x", content="x") == (
        "cannot write loop/x: Too many levels of symbolic links")


async def test_a_nul_byte_in_a_path_is_refused_not_a_crash(root, box):
    assert await refused(box, "read_file", path="a\0b") == "path contains a NUL byte: 'a\\x00b'"
    assert code_tools(root)[5].approval({"path": "a\0b", "content": "x"}) is None


@pytest.mark.parametrize("path", [".git/config", ".git/hooks/pre-commit", ".git/commondir", ".git",
                                  "vendor/lib/.git/config", ".GIT/config", ".iota.yaml", ".iota.yml"])
async def test_writers_refuse_protected_paths_but_readers_serve_them(root, box, path):
    if path != ".git":
        write(root / path, "[core]\n")
        await ok(box, "read_file", path=path)
    message = f"{path} is protected: the code tools never write inside .git, the project's .iota.yaml or ~/.iota " \
              "— ask the user to change it"
    assert await refused(box, "write_file", path=path, content="x") == message
    assert await refused(box, "edit_file", path=path, old_string="core", new_string="x") == message
    assert code_tools(root)[5].approval({"path": path, "content": "x"}) is None


async def test_a_link_to_a_protected_path_is_refused_by_its_real_name(root, box):
    write(root / ".git" / "config", "[core]\n")
    (root / "settings.ini").symlink_to(".git/config")
    assert (await refused(box, "write_file", path="settings.ini", content="x")).startswith(".git/config is protected")


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


# ---- the ledger ----


async def test_edit_file_needs_a_read_first(root, box):
    write(root / "a.txt", "a\n")
    assert await refused(box, "edit_file", path="a.txt", old_string="a", new_string="b") == (
        "a.txt has not been read in this session — read it with read_file before modifying it")
    assert (root / "a.txt").read_text() == "a\n"


async def test_write_file_over_an_existing_file_needs_a_read_first(root, box):
    write(root / "src" / "a.txt", "a\n")
    assert await refused(box, "write_file", path="src/a.txt", content="b") == (
        "src/a.txt has not been read in this session — read it with read_file before modifying it")
    assert (root / "src" / "a.txt").read_text() == "a\n"


@pytest.mark.parametrize("name, args", [("edit_file", {"old_string": "a", "new_string": "b"}),
                                        ("write_file", {"content": "b"})])
async def test_a_file_changed_after_the_read_must_be_read_again(root, box, name, args):
    path = write(root / "a.txt", "a\n", mtime=1_000_000)
    await ok(box, "read_file", path="a.txt")
    write(path, "a\n", mtime=1_000_001)
    assert await refused(box, name, path="a.txt", **args) == (
        "a.txt changed on disk after it was read — read it again before modifying it")
    await ok(box, "read_file", path="a.txt")
    await ok(box, name, path="a.txt", **args)


async def test_a_write_restamps_the_ledger(root, box):
    await ok(box, "write_file", path="a.txt", content="one\n")
    await ok(box, "edit_file", path="a.txt", old_string="one", new_string="two")
    await ok(box, "edit_file", path="a.txt", old_string="two", new_string="three")
    await ok(box, "write_file", path="a.txt", content="four\n")
    assert (root / "a.txt").read_text() == "four\n"


async def test_each_toolset_keeps_its_own_ledger(root, box):
    write(root / "a.txt", "a\n")
    await ok(box, "read_file", path="a.txt")
    other = Toolbox(code_tools(root))
    assert (await refused(other, "edit_file", path="a.txt", old_string="a", new_string="b")).endswith(
        "has not been read in this session — read it with read_file before modifying it")


# ---- edit_file ----


async def test_edit_file_replaces_and_shows_the_lines_around_the_change(root, box):
    write(root / "a.txt", "".join(f"line{n}\n" for n in range(1, 11)))
    await ok(box, "read_file", path="a.txt")
    result = await box.call("edit_file", {"path": "a.txt", "old_string": "line5\n", "new_string": "LINE5\n"})
    assert result.content == "1 replacement(s) in a.txt\n\n" + "\n".join(
        f"{n:>6}\t{'LINE5' if n == 5 else f'line{n}'}" for n in range(2, 9))
    assert (root / "a.txt").read_text().splitlines()[4] == "LINE5"
    # The person sees a diff; the model does not.
    assert result.display.startswith("--- a/a.txt\n+++ b/a.txt\n@@")
    assert "\n-line5\n+LINE5\n" in result.display


async def test_the_snippet_stops_at_the_ends_of_the_file(root, box):
    write(root / "a.txt", "a\nb\nc\nd\ne\nf\n")
    await ok(box, "read_file", path="a.txt")
    assert await ok(box, "edit_file", path="a.txt", old_string="a", new_string="A") == (
        "1 replacement(s) in a.txt\n\n     1\tA\n     2\tb\n     3\tc\n     4\td")


async def test_edit_file_refusals(root, box):
    write(root / "a.txt", "x = 1\nx = 1\n")
    await ok(box, "read_file", path="a.txt")
    assert await refused(box, "edit_file", path="a.txt", old_string="", new_string="y") == (
        "old_string must not be empty (use write_file to create or replace a whole file)")
    assert await refused(box, "edit_file", path="a.txt", old_string="x", new_string="x") == (
        "old_string and new_string are identical")
    assert await refused(box, "edit_file", path="a.txt", old_string="x  = 1", new_string="y") == (
        "old_string not found in a.txt — it must match the file content exactly, whitespace included; "
        "read the file again if unsure")
    assert await refused(box, "edit_file", path="a.txt", old_string="x = 1", new_string="y = 2") == (
        "old_string appears 2 times in a.txt; extend it with surrounding context to make it unique, "
        "or set replace_all")
    assert (root / "a.txt").read_text() == "x = 1\nx = 1\n"
    assert (await ok(box, "edit_file", path="a.txt", old_string="x = 1", new_string="y = 2",
                     replace_all=True)).startswith("2 replacement(s) in a.txt\n\n     1\ty = 2\n     2\ty = 2")
    assert (root / "a.txt").read_text() == "y = 2\ny = 2\n"


async def test_edit_file_works_on_bytes(root, box):
    path = write(root / "latin.txt", b"caf\xe9\nname = 1\n")
    await ok(box, "read_file", path="latin.txt")
    await ok(box, "edit_file", path="latin.txt", old_string="name = 1", new_string="name = 2")
    assert path.read_bytes() == b"caf\xe9\nname = 2\n"


async def test_edit_file_keeps_the_mode(root, box):
    path = write(root / "run.sh", "echo a\n")
    path.chmod(0o750)
    await ok(box, "read_file", path="run.sh")
    await ok(box, "edit_file", path="run.sh", old_string="a", new_string="b")
    assert stat.S_IMODE(path.stat().st_mode) == 0o750


async def test_edit_file_refuses_files_over_20_mb(root, box):
    write(root / "big.txt", ("z" * (MB - 1) + "\n") * 21)
    await ok(box, "read_file", path="big.txt", limit=1)
    assert await refused(box, "edit_file", path="big.txt", old_string="z", new_string="y") == (
        "big.txt is too large to edit (21.0 MB)")


# ---- write_file ----


async def test_write_file_creates_a_file_and_its_parents_with_mode_0644(root, box):
    old = os.umask(0)
    try:
        result = await box.call("write_file", {"path": "new/dir/a.txt", "content": "hello"})
    finally:
        os.umask(old)
    assert result.content == "wrote 5 B to new/dir/a.txt (created)"
    assert (root / "new" / "dir" / "a.txt").read_text() == "hello"
    assert stat.S_IMODE((root / "new" / "dir" / "a.txt").stat().st_mode) == 0o644
    assert result.display.startswith("--- a/new/dir/a.txt\n+++ b/new/dir/a.txt\n") and "+hello" in result.display


async def test_write_file_overwrites_a_file_it_has_read(root, box):
    write(root / "a.txt", "old\n")
    await ok(box, "read_file", path="a.txt")
    result = await box.call("write_file", {"path": "a.txt", "content": "n" * 1229})
    assert result.content == "wrote 1.2 KB to a.txt (overwritten)"
    assert "-old" in result.display
    assert (root / "a.txt").read_text() == "n" * 1229


async def test_write_file_refusals(root, box):
    (root / "src").mkdir()
    os.mkfifo(root / "pipe")
    assert await refused(box, "write_file", path="src", content="x") == "src is a directory"
    assert await refused(box, "write_file", path="pipe", content="x") == "pipe is not a regular file"
    assert await refused(box, "write_file", path="a.txt") == "missing required argument: content"
    assert await ok(box, "write_file", path="empty.txt", content="") == "wrote 0 B to empty.txt (created)"
    assert await refused(box, "write_file", path="empty.txt/x", content="") == (
        "cannot write empty.txt/x: Not a directory")
    assert await refused(box, "edit_file", path="nope.txt", old_string="a", new_string="b") == (
        "cannot edit nope.txt: No such file or directory")


# ---- glob ----


@pytest.fixture
def tree(root):
    """Files with distinct ages (newest last here), a .git and a .gitignore."""
    write(root / ".gitignore", "# build output\nbuild/\n*.log\n!keep.log\n/secret.py\n", mtime=100)
    for age, rel in enumerate(["c.py", "src/a.py", "src/deep/b.py", "README.md", "keep.log", "x.log",
                               "secret.py", "lib/secret.py", "build/gen.py", ".git/hook.py"]):
        write(root / rel, f"{rel}\n", mtime=1000 + age)
    return root


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


# ---- what the writers' approvals show ----


@pytest.fixture
def writers(root):
    tools = {tool.name: tool for tool in code_tools(root)}
    return tools["edit_file"], tools["write_file"]


def test_edit_file_approval_shows_the_diff_or_why_there_is_none(root, writers):
    edit, _ = writers
    write(root / "a.txt", "x = 1\nx = 1\n")
    assert edit.approval_detail({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 2", "replace_all": True}) == (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-x = 1\n-x = 1\n+x = 2\n+x = 2")
    assert edit.approval_detail({"path": "a.txt", "old_string": "x = 1", "new_string": "y"}) == (
        "[nothing to show: old_string appears 2 times in a.txt; extend it with surrounding context to make it "
        "unique, or set replace_all]")
    assert edit.approval_detail({"path": "nope.txt", "old_string": "a", "new_string": "b"}) == (
        "[nothing to show: cannot edit nope.txt: No such file or directory]")
    # Refused without asking, so there is nothing to detail.
    assert edit.approval_detail({"path": "../a.txt", "old_string": "a", "new_string": "b"}) == ""
    assert edit.approval_detail({"path": ".git/config", "old_string": "a", "new_string": "b"}) == ""


def test_write_file_approval_shows_the_diff_against_the_real_file(root, writers):
    _, write_file = writers
    write(root / "src" / "a.txt", "old\n")
    (root / "a-link").symlink_to("src/a.txt")
    assert write_file.approval_detail({"path": "a-link", "content": "new\n"}) == (
        "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1 +1 @@\n-old\n+new")
    assert write_file.approval_detail({"path": "src/a.txt", "content": "old\n"}) == "[no change]"
    assert write_file.approval_detail({"path": "empty.txt", "content": ""}) == "[a new, empty file]"
    assert write_file.approval_detail({"path": "x.txt"}) == "[nothing to show: missing required argument: content]"


def test_write_file_approval_over_a_file_too_big_to_diff_shows_the_new_content(root, writers, monkeypatch):
    _, write_file = writers
    monkeypatch.setattr(code_write, "MAX_FILE_BYTES", 8)
    write(root / "big.txt", "0123456789\n")
    assert write_file.approval_detail({"path": "big.txt", "content": "small\n"}) == (
        "[big.txt is over 0 MB: its whole content is replaced by]\n--- a/big.txt\n+++ b/big.txt\n@@ -0,0 +1 @@\n+small")


async def test_a_long_diff_is_cut_with_a_footer_that_counts_the_rest(root, box, writers):
    content = "".join(f"line {n:05d} " + "x" * 90 + "\n" for n in range(2000))
    detail = writers[1].approval_detail({"path": "long.txt", "content": content})
    shown, footer = detail.rsplit("\n", 1)
    assert len(shown.encode()) <= 65536
    assert footer == f"[diff cut here: {2003 - (shown.count(chr(10)) + 1)} more lines not shown]"
    result = await box.call("write_file", {"path": "long.txt", "content": content})
    assert result.display == detail


def test_diffs_escape_what_a_terminal_would_not_show(root, writers):
    label = writers[1].approval({"path": "a\x1b[2K.txt", "content": ""})
    assert label == "write_file a\\x1b[2K.txt"
    detail = writers[1].approval_detail({"path": "b.txt", "content": "ok\u202e)lave(\r\ntab\tstays\n"})
    assert detail.endswith("+ok\\u202e)lave(\n+tab\tstays")
