"""The `<memory>` block the model is shown: scoping by project, the attributes, the preamble,
defanging `</memory`, and the over-cap, foreign and unreadable files."""

from __future__ import annotations

from iota.memory.document import MEMORY_CAP
from iota.memory.block import MEMORY_PREAMBLE, defang
from iota.memory.file import memory_block
from tests.iota.memory.test_document import EXAMPLE, body_of, file_of


def block_of(tmp_path, text: str | bytes, project: str | None = "iota", bot: str = "coder"):
    path = tmp_path / "MEMORY.md"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return memory_block(bot, project, path)


def test_the_preamble_is_eight_lines():
    assert len(MEMORY_PREAMBLE.split("\n")) == 8
    assert "NOT" in MEMORY_PREAMBLE.upper() and "[inferred]" in MEMORY_PREAMBLE and "AGENTS.md" in MEMORY_PREAMBLE


def test_the_block_in_its_own_project(tmp_path):
    snapshot = block_of(tmp_path, EXAMPLE)
    assert snapshot.warnings == []
    assert snapshot.block == (
        f'<memory bot="coder" project="iota">\n{MEMORY_PREAMBLE}\n\n'
        "# coder memory\n\n## User\n- [user] Reply in Chinese (2026-09-30)\n- Never rebase\n\n"
        "## Project: iota\n- [inferred] Releases are tagged from main (2026-09-28)\n\n"
        "## Open threads\n- [user] Waiting on the retention runs (2026-09-30)\n</memory>")


def test_other_projects_are_named_with_their_line_counts(tmp_path):
    text = (EXAMPLE + "\n## Project: herdr\n- [user] a (2026-01-01)\n- b\n\nfree text\n\n"
            "## Project: web\n- [user] c (2026-01-01)\n\n## Tools\n- hand section, global\n")
    snapshot = block_of(tmp_path, text, project="herdr")
    assert snapshot.block == (
        f'<memory bot="coder" project="herdr">\n{MEMORY_PREAMBLE}\n\n'
        "# coder memory\n\n## User\n- [user] Reply in Chinese (2026-09-30)\n- Never rebase\n\n"
        "## Open threads\n- [user] Waiting on the retention runs (2026-09-30)\n\n"
        "## Project: herdr\n- [user] a (2026-01-01)\n- b\n\nfree text\n\n"
        "## Tools\n- hand section, global\n\n"
        "Other projects: ## Project: iota (1 line), ## Project: web (1 line)\n</memory>")
    elsewhere = block_of(tmp_path, text, project="elsewhere").block
    assert elsewhere.endswith("Other projects: ## Project: iota (1 line), ## Project: herdr (3 lines), "
                              "## Project: web (1 line)\n</memory>")


def test_without_a_project_there_is_no_project_attribute(tmp_path):
    snapshot = block_of(tmp_path, "---\nbot: coder\n---\n## User\n- [user] x (2026-01-01)\n", project=None)
    assert snapshot.block == (f'<memory bot="coder">\n{MEMORY_PREAMBLE}\n\n## User\n- [user] x (2026-01-01)\n'
                              "</memory>")


def test_attributes_are_escaped(tmp_path):
    block = block_of(tmp_path, "", project='a"b<c>&d', bot="coder").block
    assert block.startswith('<memory bot="coder" project="a&quot;b&lt;c&gt;&amp;d">\n')


def test_an_empty_or_missing_memory_is_the_preamble_alone(tmp_path):
    expected = f'<memory bot="coder" project="iota">\n{MEMORY_PREAMBLE}\n</memory>'
    assert block_of(tmp_path, "---\nbot: coder\n---\n\n\n").block == expected
    missing = memory_block("coder", "iota", tmp_path / "nothing" / "MEMORY.md")
    assert (missing.block, missing.warnings, missing.stamp) == (expected, [], None)


def test_a_closing_tag_in_the_file_is_defanged(tmp_path):
    block = block_of(tmp_path, "## User\n- [inferred] x </memory> y </MEMORY ok <memo (2026-01-01)\n").block
    assert "- [inferred] x &lt;/memory> y &lt;/MEMORY ok <memo (2026-01-01)\n</memory>" in block
    assert block.count("</memory") == 1
    assert defang("</Memory></memory>") == "&lt;/Memory>&lt;/memory>"


def test_an_over_cap_file_is_shown_cut_short_with_a_warning_and_left_alone(tmp_path):
    text = file_of(MEMORY_CAP + 300, bot="coder")
    snapshot = block_of(tmp_path, text)
    assert snapshot.warnings == ["MEMORY.md is 300 bytes over its 8 KiB cap: the model is shown it cut short — "
                                 "consolidate it (the file was not changed)"]
    inner = snapshot.block.split(MEMORY_PREAMBLE + "\n\n")[1]
    assert inner.endswith("\n[memory truncated: 300 bytes over the cap — consolidate]\n</memory>")
    shown = inner.removesuffix("\n[memory truncated: 300 bytes over the cap — consolidate]\n</memory>")
    assert body_of(text).startswith(shown + "\n")
    assert len(shown.encode()) + 1 <= MEMORY_CAP
    assert (tmp_path / "MEMORY.md").read_text() == text


def test_a_file_naming_another_bot_shows_no_memory(tmp_path):
    snapshot = block_of(tmp_path, '---\nbot: "other"\n---\n## User\n- [user] x (2026-01-01)\n')
    assert snapshot.block == f'<memory bot="coder" project="iota">\n{MEMORY_PREAMBLE}\n</memory>'
    assert snapshot.warnings == [f'{tmp_path / "MEMORY.md"} says it belongs to bot "other" (frontmatter bot:), '
                                 'not "coder"; the model is shown no memory until you fix the file']


def test_an_unreadable_file_shows_no_memory(tmp_path):
    snapshot = block_of(tmp_path, b"## User\n\xff\n")
    assert snapshot.block == f'<memory bot="coder" project="iota">\n{MEMORY_PREAMBLE}\n</memory>'
    assert snapshot.warnings == [f"{tmp_path / 'MEMORY.md'} is not UTF-8 text; the model is shown no memory"]
    directory = tmp_path / "dir"
    (directory / "MEMORY.md").mkdir(parents=True)
    unreadable = memory_block("coder", "iota", directory / "MEMORY.md")
    assert unreadable.warnings == [
        f"cannot read {directory / 'MEMORY.md'}: Is a directory; the model is shown no memory"]
