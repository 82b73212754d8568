"""The files of the memory directory as documents: USER.md and BRIEF.md take lines like MEMORY.md,
under sections of their own; SOUL.md takes a patch that replaces one section's body and leaves
every other line of the file as it was."""

from __future__ import annotations

import pytest

from iota.memory.document import Add, MemoryRefusal, Patch, Remove, Replace, apply, parse_section
from iota.memory.kinds import BRIEF_MD, MEMORY_MD, SOUL_MD, USER_MD

TODAY = "2026-10-02"

SOUL = """\
---
bot: coder
updated: 2026-09-01
tone: mine
---
# coder persona

## Style
Be thorough.
Explain each step.

## Rules
- Never force-push.
- Ask before deleting files.

## Languages
Reply in English.
"""


def body_of(file: str) -> str:
    return file.split("---\n", 2)[2]


def test_a_patch_replaces_one_section_and_leaves_the_rest_byte_identical():
    applied = apply(SOUL, "coder", Patch("Style", "Be terse.\nAnswer in French.\n"), TODAY, SOUL_MD)
    before, after = body_of(SOUL), body_of(applied.file)
    assert after == before.replace("Be thorough.\nExplain each step.\n", "Be terse.\nAnswer in French.\n")
    # the other sections, byte for byte, and the person's own front matter line
    assert after.split("## Rules", 1)[1] == before.split("## Rules", 1)[1]
    assert after.split("## Style", 1)[0] == before.split("## Style", 1)[0]
    assert applied.file.startswith("---\nbot: coder\nupdated: 2026-10-02\ntone: mine\n---\n")
    assert applied.result == ("saved to memory/SOUL.md ## Style (0.1 / 8 KiB)\n\n"
                              "## Style\nBe terse.\nAnswer in French.")
    assert applied.notice == ("memory: memory/SOUL.md ## Style rewritten: Be terse. / Answer in French. "
                              "(was: Be thorough. / Explain each step.)")


def test_the_last_section_keeps_its_place_and_a_missing_one_is_added_at_the_end():
    last = apply(SOUL, "coder", Patch("Languages", "Reply in Chinese."), TODAY, SOUL_MD)
    assert body_of(last.file) == body_of(SOUL).replace("Reply in English.", "Reply in Chinese.")
    new = apply(SOUL, "coder", Patch("Humour", "Dry, and rare."), TODAY, SOUL_MD)
    assert body_of(new.file) == body_of(SOUL) + "\n## Humour\nDry, and rare.\n"
    assert new.notice == "memory: memory/SOUL.md ## Humour added: Dry, and rare."


def test_the_first_patch_creates_the_file():
    applied = apply(None, "coder", Patch("Style", "Be terse."), TODAY, SOUL_MD)
    assert applied.file == "---\nbot: coder\nupdated: 2026-10-02\n---\n# coder persona\n\n## Style\nBe terse.\n"


def test_an_empty_patch_empties_the_section_and_keeps_its_heading():
    applied = apply(SOUL, "coder", Patch("Rules", ""), TODAY, SOUL_MD)
    assert "## Rules\n\n## Languages" in applied.file
    assert applied.notice.endswith("## Rules rewritten: (empty) (was: - Never force-push. / - Ask before deleting "
                                   "files.)")


@pytest.mark.parametrize("text, message", [
    ("Be terse.\n## Rules\nNone.", 'text is the body of ## Style; its line "## Rules" would start another section '
                                  "— patch each section on its own"),
    ("Be \x1b[31mterse", 'text is the body of ## Style, lines without control characters: got "Be \\x1b[31mterse"'),
    ("Use key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123",
     "that text looks like an API key; secrets do not belong in memory/SOUL.md — it is plain text, sent with every "
     "request and may be committed. Nothing was written. Save where the secret is kept (an environment variable, "
     "a keychain entry), never the secret itself"),
])
def test_a_patch_that_would_break_the_file_or_hold_a_secret_is_refused(text, message):
    with pytest.raises(MemoryRefusal) as caught:
        apply(SOUL, "coder", Patch("Style", text), TODAY, SOUL_MD)
    assert str(caught.value) == message


def test_soul_takes_patches_only_and_the_others_never_take_one():
    with pytest.raises(MemoryRefusal, match='SOUL.md changes a whole section at a time: use action "patch"'):
        apply(SOUL, "coder", Add("x", "user", "Style"), TODAY, SOUL_MD)
    with pytest.raises(MemoryRefusal, match='action "patch" is for SOUL.md; MEMORY.md changes a line at a time'):
        apply(None, "coder", Patch("User", "x"), TODAY, MEMORY_MD)


def test_a_patch_past_the_cap_is_refused_and_one_that_shrinks_always_goes():
    big = SOUL.replace("Explain each step.\n", "Explain each step.\n" + "x" * 8000 + "\n")
    with pytest.raises(MemoryRefusal, match=r"^memory/SOUL.md would be 8.\d KiB, over its 8 KiB cap; nothing was "
                                            r"written. Shorten the section, or another one, first."):
        apply(big, "coder", Patch("Rules", "y" * 300), TODAY, SOUL_MD)
    shrunk = apply(big, "coder", Patch("Style", "Be terse."), TODAY, SOUL_MD)
    assert "x" * 100 not in shrunk.file


def test_a_soul_md_of_another_bot_is_refused():
    with pytest.raises(MemoryRefusal, match='^memory/SOUL.md says it belongs to bot "main"'):
        apply(SOUL.replace("bot: coder", "bot: main"), "coder", Patch("Style", "x"), TODAY, SOUL_MD)


# -- USER.md and BRIEF.md ---------------------------------------------------------------------------

def test_brief_takes_lines_under_its_own_sections_in_their_order():
    goals = apply(None, "coder", Add("Ship the importer by Friday", "user", "Goals"), TODAY, BRIEF_MD)
    assert goals.file == ("---\nbot: coder\nupdated: 2026-10-02\n---\n# coder brief\n\n## Goals\n"
                          "- [user] Ship the importer by Friday (2026-10-02)\n")
    assert goals.notice == "memory: memory/BRIEF.md ## Goals +1 line: [user] Ship the importer by Friday (2026-10-02)"
    decision = apply(goals.file, "coder", Add("Postgres, not SQLite", "user", "Decisions"), TODAY, BRIEF_MD)
    constraint = apply(decision.file, "coder", Add("No new dependencies", "inferred", "Constraints"), TODAY,
                       BRIEF_MD)
    assert body_of(constraint.file).index("## Goals") < body_of(constraint.file).index("## Constraints") < \
        body_of(constraint.file).index("## Decisions")
    assert constraint.result.startswith("saved to memory/BRIEF.md ## Constraints (")


def test_user_md_has_the_same_line_rules():
    current = "---\nbot: coder\n---\n## Profile\n- Works at Acme\n- [inferred] Lives in Lyon (2026-01-01)\n"
    with pytest.raises(MemoryRefusal, match="^that line was written by the user; ask them to change it: - Works"):
        apply(current, "coder", Remove("Acme"), TODAY, USER_MD)
    with pytest.raises(MemoryRefusal, match="^memory/USER.md ## Profile already has that line"):
        apply(current, "coder", Add("lives in Lyon.", "user", "Profile"), TODAY, USER_MD)
    moved = apply(current, "coder", Replace("Lyon", "Lives in Paris", "inferred"), TODAY, USER_MD)
    assert moved.notice == ("memory: memory/USER.md ## Profile ~1 line: [inferred] Lives in Paris (2026-10-02) "
                            "(was: - [inferred] Lives in Lyon (2026-01-01))")
    with pytest.raises(MemoryRefusal, match='no line contains "x": memory/USER.md has no lines yet'):
        apply(None, "coder", Remove("x"), TODAY, USER_MD)


def test_each_file_names_its_own_sections():
    assert parse_section("", USER_MD) == "Profile"
    assert parse_section("## Goals", BRIEF_MD) == "Goals"
    with pytest.raises(MemoryRefusal) as caught:
        parse_section("User", BRIEF_MD)
    assert str(caught.value) == 'section must be "Goals", "Constraints" or "Decisions", got "User"'
    with pytest.raises(MemoryRefusal) as caught:
        parse_section("Project: iota", USER_MD)
    assert str(caught.value) == 'section must be "Profile" or "Preferences", got "Project: iota"'
    assert parse_section(" ## Working style ", SOUL_MD) == "Working style"
    with pytest.raises(MemoryRefusal, match="section is required: the ## heading of the SOUL.md section to replace"):
        parse_section("", SOUL_MD)
