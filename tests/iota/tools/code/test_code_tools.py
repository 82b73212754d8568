"""The `code` toolset: the set, the jail and the read-before-write ledger, driven through a Toolbox
the way the agent loop calls them (the readers: test_readers.py; the writers: test_writers.py)."""

from __future__ import annotations

import threading
import time

import pytest
import trio

from iota.config.audit import READ_ONLY_AUTO_WRITE
from iota.tools.base import Toolbox, ToolResult
from iota.tools.code import read as code_read, shared as code_set, write as code_write
from iota.tools.code.toolset import code_tools
from tests.iota.tools.code.helpers import ok, refused, write

MB = 1024 * 1024


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
