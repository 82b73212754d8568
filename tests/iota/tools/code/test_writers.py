"""The `code` toolset's writers — edit_file, write_file — their refusals and what their approvals show."""

from __future__ import annotations

import os
import stat


from iota.tools.code import write as code_write
from tests.iota.tools.code.helpers import ok, refused, write

MB = 1024 * 1024


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


# ---- what the writers' approvals show ----




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
