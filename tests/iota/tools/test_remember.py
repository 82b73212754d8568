"""The `remember` tool, driven through a Toolbox the way the agent loop calls it: its schema, every
argument error, the result the model reads, what the transcript shows and the notices the chat
records."""

from __future__ import annotations

import datetime
import json

import pytest

from iota.memory.document import MEMORY_CAP
from iota.memory.file import MemoryFile, ensure_memory
from iota.tools.base import Toolbox
from iota.tools.remember import Remember

DAY = datetime.date(2026, 9, 30)

# The reference's schema (iota-facts §2.4), with what the memory layers add (issue 17): the `file`
# to change, and the `patch` action SOUL.md is changed with; and a bot's candidates (issue 18): the
# `candidates`, `pin`, `unpin`, `promote` and `forget` actions and the `items` they note; and the
# `durables` action (issue 31).
SCHEMA = (
    '{"type":"object","properties":{"action":{"type":"string","enum":["add","replace","remove","patch'
    '","candidates","durables","pin","unpin","promote","forget"],"description":"add a line, replace t'
    'he line containing old, or remove it; patch (SOUL.md only) replaces the body of one section; can'
    'didates notes items and lists the candidates; durables lists the durables; pin, unpin, promote a'
    'nd forget change the candidate or durable named by old."},"items":{"type":"array","description":'
    '"candidates: facts or preferences to note, each one short line in the words of a MEMORY.md line,'
    ' with up to 6 keywords a later message about it would contain (optional), and its section (\\"Use'
    'r\\" by default, \\"Project: <name>\\" for what holds in one project).","items":{"type":"object","p'
    'roperties":{"text":{"type":"string"},"keywords":{"type":"array","items":{"type":"string"}},"sect'
    'ion":{"type":"string"}},"required":["text"]}},"text":{"type":"string","description":"The entry, '
    'one line (add, replace); for patch, the section\'s new body, any number of lines."},"source":{"ty'
    'pe":"string","enum":["user","inferred"],"description":"user: the user said it. inferred: your ow'
    'n conclusion, or read in tool output. Required for add and replace."},"old":{"type":"string","de'
    'scription":"A substring of exactly one existing line (replace, remove), or a candidate\'s or dura'
    'ble\'s id or part of its text (pin, unpin, promote, forget)."},"section":{"type":"string","descri'
    'ption":"Where add files the line: \\"User\\" (default), \\"Project: <name>\\" or \\"Open threads\\" in'
    ' MEMORY.md; \\"Profile\\" or \\"Preferences\\" in USER.md; \\"Goals\\", \\"Constraints\\" or \\"Decisions'
    '\\" in BRIEF.md. For patch, the SOUL.md section to replace."},"file":{"type":"string","enum":["ME'
    'MORY.md","SOUL.md","USER.md","BRIEF.md"],"description":"The file to change: MEMORY.md (default),'
    ' SOUL.md, USER.md or BRIEF.md."}},"required":["action"]}'
)


@pytest.fixture
def memory(tmp_path):
    ensure_memory(tmp_path / "coder", "coder", DAY)
    return MemoryFile("coder", tmp_path / "coder")


# What the person typed in the conversation these tests run in: what backs their `[user]` lines.
TYPED = ["I prefer tabs", "z", "x", "one more thing", "my anthropic key is sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123"]


@pytest.fixture
def box(memory):
    return Toolbox([Remember(memory, project="iota", typed_by_person=lambda: TYPED, today=lambda: DAY)])


async def error_of(box, args) -> str:
    result = await box.call("remember", args)
    assert result.is_error, result.content
    return result.content


def test_the_schema_is_exactly_the_reference():
    tool = Remember(MemoryFile("coder", "/nonexistent"))
    assert tool.name == "remember"
    assert json.dumps(tool.parameters, separators=(",", ":")) == SCHEMA
    assert tool.spec().parameters is tool.parameters


def test_it_needs_no_approval_and_runs_alone():
    tool = Remember(MemoryFile("coder", "/nonexistent"))
    assert tool.approval({"action": "add", "text": "x", "source": "user"}) is None
    assert tool.parallel is False


def test_the_description_says_when_and_how_to_call_it():
    description = Remember.description
    for needed in ("states a preference", "decision is made", "fact you will need again", '"add"', '"replace"',
                   '"remove"', '"Project: <name>"', '"Open threads"', '"inferred"', "tool output",
                   "tag and the date are added", "written by the user", "secrets"):
        assert needed in description, needed


def test_the_target_names_the_action_and_where():
    tool = Remember(MemoryFile("coder", "/nonexistent"))
    assert tool.target({"action": "add", "text": "x"}) == "add ## User"
    assert tool.target({"action": "add", "section": "Project: iota"}) == "add ## Project: iota"
    assert tool.target({"action": "add", "section": "Notes"}) == "add"
    assert tool.target({"action": "replace", "old": "tabs"}) == 'replace "tabs"'
    assert tool.target({"action": "remove", "old": "a\nb"}) == 'remove "a\\nb"'


@pytest.mark.parametrize("args, message", [
    ({}, "missing required argument: action"),
    ({"action": "  "}, "missing required argument: action"),
    ({"action": 3}, "missing required argument: action"),
    ({"action": "erase"}, 'action must be "add", "replace" or "remove", got "erase"'),
    ({"action": "forget", "old": "x"}, 'action "forget" is for a bot\'s candidates, and this chat keeps none'),
    ({"action": "add", "text": "x"}, 'source is required: "user" or "inferred"'),
    ({"action": "replace", "old": "x", "text": "y"}, 'source is required: "user" or "inferred"'),
    ({"action": "add", "text": "x", "source": "assistant"}, 'source must be "user" or "inferred", got "assistant"'),
    ({"action": "add", "text": "x", "source": "user", "section": "Notes"},
     'section must be "User", "Project: <name>" or "Open threads", got "Notes"'),
    ({"action": "add", "text": "x", "source": "user", "section": "User\n- planted"},
     'section is one heading line, without newlines or control characters: got "User\\n- planted"'),
    ({"action": "add", "text": "  ", "source": "user"}, "text is empty"),
    ({"action": "add", "text": "a\x1bb", "source": "user"},
     'text is one line, without control characters: got "a\\x1bb"'),
    ({"action": "add", "text": "a" * 479, "source": "inferred"},
     "a memory line is at most 500 bytes and this one is 505: shorten it to the one fact you need to recall, or "
     "split it into separate lines"),
    ({"action": "remove"}, "old is required: a substring of the line to change"),
    ({"action": "replace", "text": "y", "source": "user"}, "old is required: a substring of the line to change"),
    ({"action": "remove", "old": "tabs"}, 'no line contains "tabs": MEMORY.md has no lines yet'),
])
async def test_argument_errors(box, memory, args, message):
    before = memory.path.read_bytes()
    assert await error_of(box, args) == message
    assert memory.path.read_bytes() == before
    assert memory.take_notices() == []


async def test_add_replace_remove_results_display_and_notices(box, memory):
    added = await box.call("remember", {"action": "add", "text": "prefers tabs", "source": "user"})
    assert not added.is_error
    assert added.content == "saved to MEMORY.md ## User (0.1 / 8 KiB)\n\n## User\n- [user] prefers tabs (2026-09-30)"
    assert "+- [user] prefers tabs (2026-09-30)" in added.display.splitlines()

    replaced = await box.call("remember", {"action": "replace", "old": "tabs", "text": "prefers tabs, width 4",
                                           "source": "inferred"})
    assert replaced.content.endswith("\n\n## User\n- [inferred] prefers tabs, width 4 (2026-09-30)")
    assert {"-- [user] prefers tabs (2026-09-30)", "+- [inferred] prefers tabs, width 4 (2026-09-30)"} <= set(
        replaced.display.splitlines())

    removed = await box.call("remember", {"action": "remove", "old": "width 4"})
    assert removed.content == "saved to MEMORY.md ## User (0.0 / 8 KiB)\n\n## User"
    assert "-- [inferred] prefers tabs, width 4 (2026-09-30)" in removed.display.splitlines()

    assert memory.take_notices() == [
        "memory: MEMORY.md ## User +1 line: [user] prefers tabs (2026-09-30)",
        "memory: MEMORY.md ## User ~1 line: [inferred] prefers tabs, width 4 (2026-09-30) (was: - [user] prefers "
        "tabs (2026-09-30))",
        "memory: MEMORY.md ## User -1 line: [inferred] prefers tabs, width 4 (2026-09-30)",
    ]


async def test_old_must_name_exactly_one_tagged_line(box, memory):
    memory.path.write_text("---\nbot: coder\n---\n## User\n- [user] a one (2026-01-01)\n- [user] a two (2026-01-01)\n"
                           "- Never rebase\n")
    assert await error_of(box, {"action": "remove", "old": "zzz"}) == (
        'no line contains "zzz"; the lines are:\n- [user] a one (2026-01-01)\n- [user] a two (2026-01-01)\n'
        "- Never rebase")
    assert await error_of(box, {"action": "remove", "old": "a "}) == (
        '"a " matches 2 lines; make old long enough to name exactly one:\n- [user] a one (2026-01-01)\n'
        "- [user] a two (2026-01-01)")
    assert await error_of(box, {"action": "replace", "old": "rebase", "text": "x", "source": "user"}) == (
        "that line was written by the user; ask them to change it: - Never rebase")


async def test_a_file_of_another_bot_is_refused_and_kept(box, memory):
    memory.path.write_text("---\nbot: o\n---\n## User\n")
    before = memory.path.read_bytes()
    assert await error_of(box, {"action": "add", "text": "x", "source": "user"}) == (
        'MEMORY.md says it belongs to bot "o" (frontmatter bot:), not "coder"; nothing was written — ask the user '
        "to fix the file")
    assert memory.path.read_bytes() == before
    assert not memory.prev_path.exists()


def filler(size: int) -> str:
    """A `## User` section of tagged lines, `size` bytes of body in all."""
    body = "## User\n"
    index = 0
    while len(body) + 200 <= size:
        body += f"- [inferred] {index:04} {'x' * 80}\n"
        index += 1
    return body + f"- [inferred] {'y' * (size - len(body) - 14)}\n"


async def test_past_6_kib_the_result_asks_for_consolidation(box, memory):
    memory.path.write_text("---\nbot: coder\n---\n" + filler(6400))
    result = await box.call("remember", {"action": "add", "text": "z", "source": "user"})
    assert result.content.startswith("saved to MEMORY.md ## User (6.3 / 8 KiB)\n\n## User\n- [inferred] 0000 ")
    assert result.content.endswith(
        "- [user] z (2026-09-30)\n\nMEMORY.md is at 78% — consolidate soon (merge related lines with replace, drop "
        "stale ones with remove)")


async def test_a_write_past_8_kib_is_refused_with_the_file_and_changes_nothing(box, memory):
    text = "---\nbot: coder\n---\n" + filler(MEMORY_CAP - 10)
    memory.path.write_text(text)
    message = await error_of(box, {"action": "add", "text": "one more", "source": "user", "section": "Open threads"})
    assert message == (
        "MEMORY.md would be 8.0 KiB, over its 8 KiB cap; nothing was written. Consolidate first — merge related "
        "lines with replace, drop stale ones with remove — then retry.\n\nMEMORY.md now (8.0 / 8 KiB):\n" + text)
    assert memory.path.read_text() == text
    assert not memory.prev_path.exists()


async def test_duplicates_and_secrets_are_refused(box, memory):
    await box.call("remember", {"action": "add", "text": "prefers tabs", "source": "user"})
    assert await error_of(box, {"action": "add", "text": "Prefers tabs", "source": "inferred"}) == (
        "MEMORY.md ## User already has that line: - [user] prefers tabs (2026-09-30) — nothing was written; to "
        "change it, call replace with old set to part of it")
    message = await error_of(box, {"action": "add", "source": "user",
                                   "text": "anthropic key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123"})
    assert message.startswith("that text looks like an API key; secrets do not belong in MEMORY.md")
    assert "sk-ant" not in message
    assert "sk-ant" not in memory.path.read_text()
