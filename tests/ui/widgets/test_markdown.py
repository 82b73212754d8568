"""Replies as Markdown (ui.widgets.markdown, and the transcript's streaming reply): what each
block looks like, that nothing the model sends can hide itself, and that a reply streamed in
pieces ends as it would whole."""

from __future__ import annotations

import random

import pytest
import urwid

from tests.ui.widgets.test_widgets import attributes_of, rendered
from ui.widgets import markdown
from ui.widgets.transcript import Transcript


def drawn(text: str, cols: int = 60) -> list[str]:
    transcript = Transcript(None)
    transcript.add_delta(text)
    transcript.end_turn(False)
    rows = rendered(transcript, cols, 60)
    while rows and not rows[-1]:
        rows.pop()
    return rows


def test_headings_emphasis_and_inline_code_lose_their_marks():
    assert drawn("## Status\n\nAll **good**, see `make test` and *the log*.") == [
        "Status", "", "All good, see make test and the log."]


def test_a_link_keeps_its_address_in_sight():
    assert drawn("See [the docs](https://example.com/a) or <https://example.com/b>.", cols=100) == [
        "See the docs (https://example.com/a) or https://example.com/b."]


def test_lists_quotes_rules_and_tables():
    assert drawn("- one\n- two\n  - nested\n\n3. three\n4. four\n\n> quoted\n\n---\n\n| a | bb |\n|---|---:|\n"
                 "| 1 | 2 |") == [
        "• one", "• two", "  ◦ nested", "", "3. three", "4. four", "", "│ quoted", "", "─" * 40, "",
        "a │ bb", "──┼───", "1 │  2"]


def test_a_code_block_is_indented_highlighted_and_keeps_its_blank_lines():
    text = "```python\nimport os\n\nprint(os.sep)  # where\n```"
    assert drawn(text) == ["  import os", "", "  print(os.sep)  # where"]
    transcript = Transcript(None)
    transcript.add_delta(text)
    transcript.end_turn(False)
    row = attributes_of(transcript, 40, 3)[0]
    assert ("code_keyword", "import") in row


@pytest.mark.parametrize("text, shown", [
    ("safe&#x202E;txt.exe", "safe\\u202etxt.exe"),                # an entity the parser decodes
    ("red &#27;[31m alert", "red \ufffd[31m alert"),               # one it decodes as U+FFFD
    ("raw \x1b]0;title\x07 bell", "raw \\x1b]0;title\\x07 bell"),  # the characters themselves
    ("`code \x1b[8m hidden`", "code \\x1b[8m hidden"),
    ("back\rwards", "back\\rwards"),
    ("\u202eevil", "\\u202eevil"),
])
def test_nothing_the_model_sends_is_drawn_unescaped(text, shown):
    assert drawn(text) == [shown]


def test_a_code_block_escapes_what_it_holds():
    assert drawn("```sh\necho \x1b[2J\n```") == ["  echo \\x1b[2J"]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 50])
def test_a_reply_streamed_in_pieces_ends_as_it_would_whole(size):
    text = ("# Title\n\nA paragraph\nthat goes on.\n\n- a\n- b\n\n```py\nx = 1\n\ny = 2\n```\n\n"
            "> quote\n\n| h | i |\n|---|---|\n| 1 | 2 |\n\nThe end.")
    transcript = Transcript(None)
    for start in range(0, len(text), size):
        transcript.add_delta(text[start:start + size])
        rendered(transcript, 60, 40)  # drawn between pieces, as the app does
    transcript.end_turn(False)
    assert rendered(transcript, 60, 40) == rendered(whole(text), 60, 40)


def whole(text: str) -> Transcript:
    transcript = Transcript(None)
    transcript.add_delta(text)
    transcript.end_turn(False)
    return transcript


def test_settled_blocks_become_blocks_of_the_transcript_and_only_the_last_is_parsed_again(monkeypatch):
    transcript = Transcript(None)
    transcript.add_delta("First paragraph.\n\nSecond paragraph.\n\nThird, still being")
    rendered(transcript, 40, 10)
    parsed: list[str] = []
    real_parse = markdown.parse
    monkeypatch.setattr(markdown, "parse", lambda text, *rest: parsed.append(text) or real_parse(text, *rest))
    transcript.add_delta(" written")
    rendered(transcript, 40, 10)
    assert parsed == ["Third, still being written"]
    assert rendered(transcript, 40, 10)[:5] == ["First paragraph.", "", "Second paragraph.", "",
                                                 "Third, still being written"]


def test_an_interrupted_code_block_says_so_under_it():
    transcript = Transcript(None)
    transcript.add_delta("```sh\nmake")
    transcript.end_turn(True)
    assert rendered(transcript, 40, 3)[:2] == ["  make", "(interrupted)"]


# Replies whose blocks are easy to settle too early: a line that ends the block above only once it
# is complete (`#`, `2`, `***`, `-`), lists a blank line does not end, fences and indented code
# with blank lines inside, setext headings, lazy quote lines, tables, and link references defined
# after the links that use them.
TRICKY_REPLIES = [
    "A paragraph\n#tag is not a heading\n# but this is\n\nNext\n***bold*** text\n***\n\nEnd",
    "1. one\n\n2. two, the same list\n\n3) another list\n\n20 is a number\n\n- a\n\n  still a\n\n- b\n* c",
    "Para\n---\n\nPara\n===\n\n---\n\n```\nfenced\n\n\nwith blanks\n```\n\n    indented\n\n    code\n\ntext",
    "> quoted\nlazy line\n\n> another\n\n| a | b |\n|---|--:|\n| 1 | 2 |\nrow\n\nafter [x] and [y][]\n\n"
    "[x]: https://example.com/x\n[y]: <https://example.com/y> \"title\"\n\n[x]",
    "Text with `code` and **bold *nested*** and ~~gone~~\n\n```python\ndef f():\n    return 1\n```\n"
    "- item\n  ```sh\n  ls\n  ```\n- [link](https://example.com)\n\n<b>raw</b> &amp; &#x202E;end",
]


@pytest.mark.parametrize("reply", TRICKY_REPLIES, ids=["line-ends", "lists", "code", "references", "inline"])
@pytest.mark.parametrize("seed", range(12))
def test_a_reply_streamed_in_random_pieces_and_drawn_at_random_ends_as_it_would_whole(reply, seed):
    chance = random.Random(seed)
    transcript = Transcript(None)
    position = 0
    while position < len(reply):
        size = chance.choice([1, 1, 2, 3, 5, 8, 40])
        transcript.add_delta(reply[position:position + size])
        position += size
        if chance.random() < 0.5:
            rendered(transcript, 50, 20)  # a draw between pieces, as the app does at its frame rate
    transcript.end_turn(False)
    blocks = markdown.block_widgets(markdown.parse(reply))  # the whole reply at once, a blank row between blocks
    at_once = urwid.Pile([row for block in blocks for row in (urwid.Divider(), block)][1:])
    rows = at_once.rows((50,))
    assert runs(attributes_of(transcript, 50, rows)) == runs(attributes_of(at_once, 50))


def runs(rows: list[list[tuple[str | None, str]]]) -> list[list[tuple[str | None, str]]]:
    """Each row as runs of one attribute, however the canvases that drew it were cut."""
    merged_rows = []
    for row in rows:
        merged: list[tuple[str | None, str]] = []
        for attribute, text in row:
            if merged and merged[-1][0] == attribute:
                merged[-1] = (attribute, merged[-1][1] + text)
            else:
                merged.append((attribute, text))
        merged_rows.append(merged)
    return merged_rows


def test_the_blocks_of_a_long_reply_are_laid_out_only_once_they_come_into_sight(monkeypatch):
    highlighted: list[str] = []
    real_highlight = markdown.highlight
    monkeypatch.setattr(markdown, "highlight", lambda code, language: highlighted.append(code)
                        or real_highlight(code, language))
    transcript = Transcript(None)
    transcript.add_delta("".join(f"Step {n}:\n\n```sh\necho {n}\n```\n\n" for n in range(100)))  # a backlog, in one go
    assert rendered(transcript, 40, 6) == ["", "  echo 98", "", "Step 99:", "", "  echo 99"]
    assert sorted(highlighted) == ["echo 98", "echo 99"]  # the blocks above the view are not laid out yet
    transcript.end_turn(False)
    transcript.scroller.scroll_page(-2)  # scrolling up lays out what comes into sight
    assert rendered(transcript, 40, 6) == ["", "Step 96:", "", "  echo 96", "", "Step 97:"]
    assert sorted(highlighted) == ["echo 96", "echo 97", "echo 98", "echo 99"]
