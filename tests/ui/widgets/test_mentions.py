"""The `@` list: which word it follows, how it ranks the project's files, what it completes to."""

from __future__ import annotations

from ui.widgets.mentions import ROWS, FileIndex, MentionList, mention_at

FILES = ["README.md", "docs/readme-old.md", "src/app.py", "src/read_config.py", "tests/test_app.py"]


def test_the_word_at_the_cursor_is_a_mention_only_after_a_space_or_at_the_start():
    assert mention_at("see @REA", 8) == (4, 8, "REA")
    assert mention_at("@src/a", 6) == (0, 6, "src/a")
    assert mention_at("mail me@example.com", 19) is None
    assert mention_at("see @REA and", 12) is None  # the cursor is past it
    assert mention_at("see @REAxx", 8) == (4, 10, "REA")  # the word runs to its end


def test_the_name_first_then_the_path_then_the_letters_in_order():
    index = FileIndex(FILES)
    assert index.rank("read") == ["README.md", "docs/readme-old.md", "src/read_config.py"]
    assert index.rank("config") == ["src/read_config.py"]
    assert index.rank("src/") == ["src/app.py", "src/read_config.py"]
    assert index.rank("tapp") == ["tests/test_app.py"]  # t…a…p…p, in order
    assert index.rank("") == FILES
    assert index.rank("zzz") == []


def test_at_most_a_screenful_is_drawn_and_tab_completes_the_selected_path():
    paths = [f"pkg/module_{n:03}.py" for n in range(300)]
    mentions = MentionList()
    mentions.set_files(paths)
    mentions.follow("edit @module", 12)
    rows = mentions.render((60,)).text
    assert len(rows) == ROWS + 1  # the rows, and the line saying how many more
    mentions.move(1)
    assert mentions.completion("edit @module now") == ("edit @pkg/module_001.py now", 24)


def test_esc_hides_the_list_until_the_word_changes():
    mentions = MentionList()
    mentions.set_files(FILES)
    mentions.follow("@READ", 5)
    mentions.hide()
    mentions.follow("@READ", 5)
    assert not mentions.showing
    mentions.follow("@READM", 6)
    assert mentions.showing and mentions.matches == ["README.md", "docs/readme-old.md"]
