"""Replies as Markdown (ui.widgets.markdown, and the transcript's streaming reply): what each
block looks like, that nothing the model sends can hide itself, and that a reply streamed in
pieces ends as it would whole."""

from __future__ import annotations

import pytest

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
    monkeypatch.setattr(markdown, "parse", lambda text: parsed.append(text) or real_parse(text))
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
