"""A bot's notes (iota.bots.notes): files a person can edit, a catalog for the prompt, bodies on demand."""

from __future__ import annotations

import datetime
import os

import pytest

from iota.bots.notes import BODY_LIMIT, NotesLibrary, name_for
from iota.errors import ToolError


@pytest.fixture
def library(tmp_path) -> NotesLibrary:
    return NotesLibrary(tmp_path)


def test_a_note_is_a_markdown_file_with_its_title_and_summary_up_front(library):
    said = library.create("Design brief (v2)", "What the new CI must do", "# Brief\n\nFast and green.")
    path = library.dir / "design-brief-v2.md"
    assert str(path) in said
    assert path.read_text() == ("---\ntitle: Design brief (v2)\nsummary: What the new CI must do\n---\n\n"
                                "# Brief\n\nFast and green.\n")
    assert library.read("design-brief-v2") == path.read_text()


def test_the_catalog_names_each_note_without_its_body(library):
    library.create("Design brief", "What the new CI must do", "SECRET-BODY-WORDS " * 100)
    catalog = library.catalog()
    today = datetime.date.today().isoformat()
    assert f"- design-brief: Design brief — What the new CI must do (updated {today})" in catalog
    assert "SECRET-BODY-WORDS" not in catalog
    assert catalog.startswith("<notes>") and catalog.endswith("</notes>")
    assert NotesLibrary(library.dir.parent / "other").catalog() == ""


def test_a_hand_written_note_needs_no_front_matter(library):
    library.dir.mkdir()
    (library.dir / "report.md").write_text("# Weekly report\n\nAll builds green this week.\n")
    os.utime(library.dir / "report.md", (0, datetime.datetime(2026, 11, 2, 12).timestamp()))
    [note] = library.list()
    assert (note.name, note.title, note.summary, note.updated) == (
        "report", "Weekly report", "All builds green this week.", datetime.date(2026, 11, 2))


def test_update_replaces_or_appends_and_keeps_what_it_is_not_given(library):
    library.create("Requirements", "What we need", "- fast")
    library.update("requirements", append="- green")
    assert library.read("requirements").endswith("- fast\n\n- green\n")
    library.update("requirements", summary="What we must have")
    [note] = library.list()
    assert (note.title, note.summary) == ("Requirements", "What we must have")
    library.update("requirements", body="- nothing")
    assert library.read("requirements").endswith("---\n\n- nothing\n")
    with pytest.raises(ToolError, match="not both"):
        library.update("requirements", body="a", append="b")


@pytest.mark.parametrize("reference", ["../MEMORY", "../../MEMORY", "../tasks", "/etc/passwd", "requirements/../../x", ""])
def test_a_name_never_reaches_outside_the_notes_directory(library, tmp_path, reference):
    (tmp_path / "MEMORY.md").write_text("the bot's memory")
    library.create("Requirements", "", "x")
    with pytest.raises(ToolError):
        library.read(reference)
    with pytest.raises(ToolError):
        library.delete(reference)
    assert (tmp_path / "MEMORY.md").exists()


def test_names_come_from_titles_and_collisions_are_refused(library):
    assert name_for("Ünïcode & Co: Plan!") == "unicode-co-plan"
    library.create("Plan", "", "a")
    with pytest.raises(ToolError, match='a note named "plan" exists already'):
        library.create("PLAN", "", "b")
    with pytest.raises(ToolError, match="no letters or digits"):
        library.create("!!!", "", "b")


def test_a_note_is_bounded_and_delete_removes_the_file(library):
    with pytest.raises(ToolError, match="a note is at most 128 KiB"):
        library.create("Huge", "", "x" * BODY_LIMIT)
    assert library.list() == []
    library.create("Small", "", "x")
    assert library.delete("small") == "Deleted note small."
    assert not (library.dir / "small.md").exists()
