"""MEMORY.md as a document: its three edits, where lines go, the front matter, the caps, and the
duplicate and secret refusals. The file on disk is tested in test_file.py, the prompt block
in test_block.py."""

from __future__ import annotations

import pytest

from iota.memory.document import (
    MEMORY_CAP,
    Add,
    MemoryRefusal,
    Remove,
    Replace,
    apply,
    go_quote,
    kib,
    parse_section,
)

TODAY = "2026-09-30"

EXAMPLE = """\
---
bot: coder
updated: 2026-09-28
---

# coder memory

## User
- [user] Reply in Chinese (2026-09-30)
- Never rebase

## Project: iota
- [inferred] Releases are tagged from main (2026-09-28)

## Open threads
- [user] Waiting on the retention runs (2026-09-30)
"""


def refusal(current, edit, bot="coder", today=TODAY) -> str:
    with pytest.raises(MemoryRefusal) as caught:
        apply(current, bot, edit, today)
    return str(caught.value)


def body_of(file: str) -> str:
    return file.split("---\n", 2)[2]


def file_of(size: int, bot: str = "b") -> str:
    """A file whose body is exactly `size` bytes: a title, `## User` and tagged filler lines."""
    body = "# b memory\n\n## User\n"
    index = 0
    while len(body) + 200 <= size:
        body += f"- [inferred] {index:04} {'x' * 80}\n"
        index += 1
    body += f"- [inferred] {'y' * (size - len(body) - 14)}\n"
    assert len(body) == size
    return f"---\nbot: {bot}\nupdated: 2026-01-01\n---\n{body}"


# -- add ----------------------------------------------------------------------------------------

def test_a_first_add_creates_the_whole_shape():
    applied = apply(None, "coder", Add("prefers tabs", "user", "User"), TODAY)
    assert applied.file == ("---\nbot: coder\nupdated: 2026-09-30\n---\n"
                            "# coder memory\n\n## User\n- [user] prefers tabs (2026-09-30)\n")
    assert applied.old_body == ""
    assert applied.result == ("saved to MEMORY.md ## User (0.1 / 8 KiB)\n\n"
                              "## User\n- [user] prefers tabs (2026-09-30)")
    assert applied.notice == "memory: MEMORY.md ## User +1 line: [user] prefers tabs (2026-09-30)"


def test_add_goes_after_the_sections_last_entry_and_the_tool_writes_tag_and_date():
    applied = apply(EXAMPLE, "coder",
                    Add("- [inferred] use nextest\n  for tests (2026-01-01)", "inferred", "Project: iota", "iota"),
                    "2026-10-01")
    assert ("## Project: iota\n- [inferred] Releases are tagged from main (2026-09-28)\n"
            "- [inferred] use nextest for tests (2026-10-01)\n\n## Open threads\n") in applied.file
    assert applied.file.startswith("---\nbot: coder\nupdated: 2026-10-01\n---\n")
    assert "\n- Never rebase\n" in applied.file
    # The result shows the affected section as it now reads, and only it.
    assert applied.result == ("saved to MEMORY.md ## Project: iota (0.3 / 8 KiB)\n\n## Project: iota\n"
                              "- [inferred] Releases are tagged from main (2026-09-28)\n"
                              "- [inferred] use nextest for tests (2026-10-01)")


def test_add_to_a_section_without_entries_goes_right_under_its_heading():
    current = "---\nbot: b\n---\n## User\nfree text, not an entry\n\n## Open threads\n"
    applied = apply(current, "b", Add("x", "user", "User"), TODAY)
    assert body_of(applied.file) == "## User\n- [user] x (2026-09-30)\nfree text, not an entry\n\n## Open threads\n"


def test_missing_sections_are_created_in_order_and_hand_sections_stay():
    current = "---\nbot: b\n---\n# b memory\n\n## Open threads\n- [user] t (2026-01-01)\n\n## Mine\nfree text\n"
    project = apply(current, "b", Add("p", "user", "Project: iota", "iota"), TODAY)
    user = apply(project.file, "b", Add("u", "user", "User"), TODAY)
    assert body_of(user.file) == (
        "# b memory\n\n## User\n- [user] u (2026-09-30)\n\n## Project: iota\n- [user] p (2026-09-30)\n\n"
        "## Open threads\n- [user] t (2026-01-01)\n\n## Mine\nfree text\n")
    # With no conventional section ranking after it, a new section goes at the end after a blank line.
    only_user = "---\nbot: b\n---\n## User\n- [user] u (2026-01-01)\n\n\n"
    threads = apply(only_user, "b", Add("t", "inferred", "Open threads"), TODAY)
    assert body_of(threads.file) == "## User\n- [user] u (2026-01-01)\n\n## Open threads\n- [inferred] t (2026-09-30)\n"
    # A hand-added section is never the place a new conventional one is put in front of.
    hand_first = "---\nbot: b\n---\n## Mine\nx\n"
    assert body_of(apply(hand_first, "b", Add("u", "user", "User"), TODAY).file) == (
        "## Mine\nx\n\n## User\n- [user] u (2026-09-30)\n")


def test_section_names_are_the_three_conventions():
    assert parse_section("") == "User"
    assert parse_section(" User ") == "User"
    assert parse_section("## Open threads") == "Open threads"
    assert parse_section("Project:  iota ") == "Project: iota"
    for bad, shown in (("Project:", "Project:"), ("Project:   ", "Project:"), ("## Project:", "Project:"),
                       ("Notes", "Notes"), ("user", "user")):
        with pytest.raises(MemoryRefusal) as caught:
            parse_section(bad)
        assert str(caught.value) == f'section must be "User", "Project: <name>" or "Open threads", got "{shown}"'


@pytest.mark.parametrize("bad", ["Project: x\n## User\n- planted", "User\n- planted", "Project: x\ry",
                                 "Project: x\u2028y", "Project: a\x07b"])
def test_a_section_is_one_heading_line(bad):
    with pytest.raises(MemoryRefusal) as caught:
        parse_section(bad)
    assert str(caught.value) == ("section is one heading line, without newlines or control characters: got "
                                 + go_quote(bad))


def test_a_newline_in_text_cannot_plant_a_line():
    applied = apply(EXAMPLE, "coder", Add("x\n## User\n- planted", "inferred", "Open threads"), TODAY)
    assert "\n- [inferred] x ## User - planted (2026-09-30)\n" in applied.new_body
    assert len(applied.new_body.splitlines()) == len(applied.old_body.splitlines()) + 1


@pytest.mark.parametrize("bad", ["x\ry", "x\u2029y", "x\u2028y", "x\x1b[2Jy", "x\x00y", "x\x85y"])
def test_control_characters_in_text_are_refused(bad):
    expected = f"text is one line, without control characters: got {go_quote(bad)}"
    assert refusal(EXAMPLE, Add(bad, "user", "User")) == expected
    assert refusal(EXAMPLE, Replace("Releases", bad, "user")) == expected


def test_a_tab_is_allowed_in_text():
    assert "- [user] a\tb (2026-09-30)" in apply(EXAMPLE, "coder", Add("a\tb", "user", "User"), TODAY).file


def test_text_is_required_and_one_line_is_at_most_500_bytes():
    assert refusal(None, Add(" \n ", "user", "User")) == "text is empty"
    assert refusal(None, Add("- [user] ", "user", "User")) == "text is empty"
    assert refusal(None, Add("a" * 500, "user", "User")) == (
        "a memory line is at most 500 bytes and this one is 522: shorten it to the one fact you need to recall, "
        "or split it into separate lines")
    # `- [user] ` + text + ` (2026-09-30)` is 22 bytes of the tool's own; blanks around the text do not count.
    apply(None, "b", Add(f"\n  {'a' * 478}  \n", "user", "User"), TODAY)
    # Bytes, not characters.
    assert refusal(None, Add("é" * 240, "user", "User")).startswith(
        "a memory line is at most 500 bytes and this one is 502:")


# -- replace and remove -------------------------------------------------------------------------

def test_replace_rewrites_the_one_line_in_place():
    applied = apply(EXAMPLE, "coder", Replace("Releases", "Releases via RELEASING.md", "user", "iota"), TODAY)
    assert ("## Project: iota\n- [user] Releases via RELEASING.md (2026-09-30)\n\n## Open threads") in applied.file
    assert "tagged from main" not in applied.file
    assert applied.result.startswith("saved to MEMORY.md ## Project: iota (")
    assert applied.result.endswith("\n\n## Project: iota\n- [user] Releases via RELEASING.md (2026-09-30)")
    assert applied.notice == ("memory: MEMORY.md ## Project: iota ~1 line: [user] Releases via RELEASING.md "
                              "(2026-09-30) (was: - [inferred] Releases are tagged from main (2026-09-28))")


def test_remove_deletes_the_line_and_shows_its_section():
    applied = apply(EXAMPLE, "coder", Remove("retention"), TODAY)
    assert "retention" not in applied.file
    assert applied.file.endswith("## Open threads\n")
    assert applied.result == "saved to MEMORY.md ## Open threads (0.2 / 8 KiB)\n\n## Open threads"
    assert applied.notice == ("memory: MEMORY.md ## Open threads -1 line: [user] Waiting on the retention runs "
                              "(2026-09-30)")
    # The last line of a section followed by another shows its own section.
    releases = apply(EXAMPLE, "coder", Remove("Releases", "iota"), TODAY)
    assert releases.result.endswith("\n\n## Project: iota")


def test_a_line_before_the_first_section_is_reported_as_the_file():
    current = "---\nbot: b\n---\n- [user] loose (2026-01-01)\n## User\n"
    applied = apply(current, "b", Replace("loose", "tight", "user"), TODAY)
    assert applied.result == "saved to MEMORY.md (0.0 / 8 KiB)\n\n- [user] tight (2026-09-30)"
    assert applied.notice == "memory: MEMORY.md ~1 line: [user] tight (2026-09-30) (was: - [user] loose (2026-01-01))"


@pytest.mark.parametrize("edit", [Replace("nope", "x", "user"), Remove("nope")])
def test_old_that_matches_nothing_lists_every_line(edit):
    assert refusal(EXAMPLE, edit) == (
        'no line contains "nope"; the lines are:\n- [user] Reply in Chinese (2026-09-30)\n- Never rebase\n'
        "- [inferred] Releases are tagged from main (2026-09-28)\n- [user] Waiting on the retention runs (2026-09-30)")


@pytest.mark.parametrize("edit", [Replace("[user]", "x", "user"), Remove("[user]")])
def test_old_that_matches_several_lines_lists_them(edit):
    assert refusal(EXAMPLE, edit) == (
        '"[user]" matches 2 lines; make old long enough to name exactly one:\n'
        "- [user] Reply in Chinese (2026-09-30)\n- [user] Waiting on the retention runs (2026-09-30)")


@pytest.mark.parametrize("edit", [Replace("rebase", "x", "user"), Remove("rebase")])
def test_a_line_without_a_tag_is_the_users(edit):
    assert refusal(EXAMPLE, edit) == "that line was written by the user; ask them to change it: - Never rebase"


def test_old_is_required_and_an_empty_memory_says_so():
    assert refusal(EXAMPLE, Remove("")) == "old is required: a substring of the line to change"
    assert refusal(None, Remove("x")) == 'no line contains "x": MEMORY.md has no lines yet'
    # Headings and free text are not entries.
    assert refusal(EXAMPLE, Remove("coder memory")).startswith('no line contains "coder memory"; the lines are:')


# -- front matter -------------------------------------------------------------------------------

def test_a_file_naming_another_bot_is_refused_whole():
    for edit in (Add("x", "user", "User"), Remove("Releases")):
        assert refusal(EXAMPLE, edit, bot="other") == (
            'MEMORY.md says it belongs to bot "coder" (frontmatter bot:), not "other"; nothing was written — '
            "ask the user to fix the file")


def test_every_write_re_renders_the_front_matter_keeping_hand_lines():
    no_front = apply("# notes\n- Never rebase\n", "b", Add("x", "user", "User"), TODAY)
    assert no_front.file == ("---\nbot: b\nupdated: 2026-09-30\n---\n# notes\n- Never rebase\n\n"
                             "## User\n- [user] x (2026-09-30)\n")
    hand = apply('---\nupdated: 2020-01-01\nbot: "b"\nowner: me\ntags: [a, b]\n---\nbody\n', "b",
                 Add("x", "user", "User"), TODAY)
    assert hand.file.startswith("---\nbot: b\nupdated: 2026-09-30\nowner: me\ntags: [a, b]\n---\nbody\n")
    # An unclosed fence is not front matter: all of it is body, and the caps measure all of it.
    unclosed = apply("---\nbot: other\n", "b", Add("x", "user", "User"), TODAY)
    assert unclosed.file.startswith("---\nbot: b\nupdated: 2026-09-30\n---\n---\nbot: other\n")


# -- the caps -----------------------------------------------------------------------------------

def test_below_the_soft_cap_there_is_no_consolidate_sentence():
    assert "consolidate" not in apply(file_of(4000), "b", Add("z", "user", "User"), TODAY).result


def test_past_the_soft_cap_the_result_asks_for_consolidation():
    # `- [user] z (2026-09-30)` and its newline are 24 bytes.
    applied = apply(file_of(6144 - 24), "b", Add("z", "user", "User"), TODAY)
    assert len(applied.new_body) == 6144
    assert applied.result.startswith("saved to MEMORY.md ## User (6.0 / 8 KiB)\n\n## User\n")
    assert applied.result.endswith(
        "\n\nMEMORY.md is at 75% — consolidate soon (merge related lines with replace, drop stale ones with remove)")
    just_below = apply(file_of(6144 - 25), "b", Add("z", "user", "User"), TODAY)
    assert "consolidate" not in just_below.result


def test_a_write_past_the_hard_cap_is_refused_with_the_whole_file():
    current = file_of(MEMORY_CAP - 10)
    message = refusal(current, Add("one more line", "user", "User"), bot="b")
    assert message == (
        "MEMORY.md would be 8.0 KiB, over its 8 KiB cap; nothing was written. Consolidate first — merge related "
        "lines with replace, drop stale ones with remove — then retry.\n\nMEMORY.md now (8.0 / 8 KiB):\n" + current)
    # Exactly at the cap is allowed.
    assert len(apply(file_of(MEMORY_CAP - 24), "b", Add("z", "user", "User"), TODAY).new_body) == MEMORY_CAP


def test_the_cap_guards_growth_only():
    over = file_of(MEMORY_CAP + 300)
    apply(over, "b", Remove("0001"), TODAY)
    apply(over, "b", Replace("0002", "short", "user"), TODAY)
    assert "over its 8 KiB cap" in refusal(over, Replace("0003", "w" * 200, "user"), bot="b")
    assert "over its 8 KiB cap" in refusal(over, Add("tiny", "user", "User"), bot="b")


def test_kib_has_one_rounded_decimal():
    assert [kib(n) for n in (0, 51, 52, 1024, 6200, 8192)] == ["0.0", "0.0", "0.1", "1.0", "6.1", "8.0"]


# -- beyond the peers: duplicates and secrets ---------------------------------------------------

def test_an_add_that_repeats_a_line_is_refused_naming_it():
    message = refusal(EXAMPLE, Add("reply in  chinese", "inferred", "User"))
    assert message == ("MEMORY.md ## User already has that line: - [user] Reply in Chinese (2026-09-30) — nothing "
                       "was written; to change it, call replace with old set to part of it")
    # A person's line counts too, and a global line counts from any section.
    assert "already has that line: - Never rebase" in refusal(EXAMPLE, Add("never rebase", "user", "Open threads"))
    # Another project's section does not: the same fact can hold for two projects.
    applied = apply(EXAMPLE, "coder", Add("Releases are tagged from main", "user", "Project: web", "web"), TODAY)
    assert "## Project: web\n- [user] Releases are tagged from main (2026-09-30)" in applied.file


@pytest.mark.parametrize("text, kind", [
    ("the key is sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123", "an API key"),
    ("OpenAI: sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234", "an API key"),
    ("gh token ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef1234", "a GitHub token"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "an API key"),  # a shape detect-secrets leaves to entropy
    ("slack bot xoxb-1234567890-abcdefghij", "a Slack token"),
    ("deploy uses AKIAIOSFODNN7EXAMPLE", "an AWS access key"),
    ("-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1", "a private key"),
    ("db password: Xk9#mP2vL8qR4tZ7w", "a password or token"),
    ("secret=a8f7d9e6c5b4a3f2e1d0c9b8a7f6", "a password or token"),  # `token` is no keyword of detect-secrets
    ("postgres://admin:s3cretpass@db.internal:5432/app", "a password in a URL"),
])
def test_a_line_that_looks_like_a_secret_is_refused(text, kind):
    expected = (f"that text looks like {kind}; secrets do not belong in MEMORY.md — it is plain text, sent with "
                "every request and may be committed. Nothing was written. Save where the secret is kept (an "
                "environment variable, a keychain entry), never the secret itself")
    assert refusal(EXAMPLE, Add(text, "user", "User")) == expected
    assert refusal(EXAMPLE, Replace("Releases", text, "user")) == expected


@pytest.mark.parametrize("text", [
    "the token lives in $GITHUB_TOKEN",
    "rotate the API key monthly",
    "api key = $ANTHROPIC_API_KEY_PRODUCTION",
    "Token budget is 150000 for the 200k window",
    "password reset lives in src/auth/reset_password_handler.py",
    "staging password is hunter2 on purpose",
    "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f fixed the token refresh",
    "clone https://github.com/iotash/iota.git",
    "uses the sk-learn style API",
])
def test_ordinary_notes_about_secrets_pass(text):
    apply(EXAMPLE, "coder", Add(text, "inferred", "User"), TODAY)


def test_go_quote_escapes_like_go():
    assert go_quote('a"b\\c') == '"a\\"b\\\\c"'
    assert go_quote("x\ny\tz\r") == '"x\\ny\\tz\\r"'
    assert go_quote("\x07\x1b\x7f") == '"\\a\\x1b\\x7f"'
    assert go_quote("\u2028\u00a0é中") == '"\\u2028\\u00a0é中"'
    assert go_quote("\U000e0001") == '"\\U000e0001"'
