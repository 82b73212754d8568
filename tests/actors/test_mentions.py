"""What a sent message's `@path` mentions come to: the files, read as `/file` reads them."""

from __future__ import annotations

from actors.mentions import listed_paths, mention_line, mentioned_paths, read_mentions
from iota.tools.code.paths import Jail
from tests.support.images import png


def test_mentions_are_found_once_each_and_not_in_addresses(tmp_path):
    text = "compare @a.py with (@b.py), then @a.py; mail x@y.org"
    assert mentioned_paths(text) == ["a.py", "b.py),", "a.py;"]
    (tmp_path / "a.py").write_text("a\n")
    (tmp_path / "b.py").write_text("b\n")
    assert [m.named for m in read_mentions(Jail(tmp_path), str(tmp_path), text)] == ["a.py", "b.py"]


def test_a_text_file_an_image_and_words_that_name_nothing(tmp_path):
    (tmp_path / "notes.md").write_text("one\ntwo\nthree\n")
    (tmp_path / "shot.png").write_bytes(png())
    (tmp_path / "src").mkdir()
    found = read_mentions(Jail(tmp_path), str(tmp_path), "see @notes.md, @shot.png and @src and @alice")
    assert [mention_line(m) for m in found] == ["@notes.md (3 lines)", "@shot.png (image/png)"]
    assert found[1].attachment.is_image


def test_a_binary_file_is_left_with_a_reason(tmp_path):
    (tmp_path / "blob.bin").write_bytes(b"\0\1\2")
    (found,) = read_mentions(Jail(tmp_path), str(tmp_path), "@blob.bin")
    assert mention_line(found) == "@blob.bin not attached: blob.bin is neither text nor a PNG, JPEG, GIF or WebP image"


def test_a_mention_from_a_subdirectory_names_the_root_path_first(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("x = 1\n")
    (found,) = read_mentions(Jail(tmp_path), str(tmp_path / "pkg"), "@pkg/mod.py")
    assert found.attachment is not None and found.attachment.filename == "pkg/mod.py"


def test_the_list_is_the_pickers_walk_without_paths_a_mention_cannot_name(tmp_path):
    (tmp_path / ".gitignore").write_text("*.log\n")
    (tmp_path / "a.py").write_text("")
    (tmp_path / "b.log").write_text("")
    (tmp_path / "with space.md").write_text("")
    assert listed_paths(Jail(tmp_path)) == [".gitignore", "a.py"]
