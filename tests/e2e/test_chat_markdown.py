"""Replies drawn as Markdown, end to end in tmux: headings without their `#`, emphasis, lists,
quotes, links, tables and code blocks highlighted by language."""

from __future__ import annotations

import re

from tests.e2e.test_chat import chat  # noqa: F401  (the fixture)
from tests.support.fake_model import Gate
from tests.support.terminal import terminal  # noqa: F401  (the fixture under `chat`)

REPLY = """# Release notes

The build is **green** again and `make test` passes; see [the log](https://ci.example/run/42).

- fixed the flaky test
- sped up the cache
  - by half

> Ship it on Friday.

```python
def greet(name):
    return "hello " + name  # a comment
```

| check | minutes |
|-------|--------:|
| lint | 1 |
| tests | 12 |
"""


def style_at(screen, text: str) -> set[int]:
    """The SGR attributes in force where `text` starts on the screen (1 bold, 3 italic, 3x a
    colour…). tmux's capture-pane -e writes only what changes, so the codes are replayed."""
    styled = screen._tmux("capture-pane", "-p", "-e", "-t", "=test:")
    state: set[int] = set()
    position = 0
    for match in re.finditer(r"\x1b\[([0-9;]*)m", styled):
        if styled.find(text, position, match.start()) >= 0:
            return state
        for code in (int(c) if c else 0 for c in match.group(1).split(";")):
            if code == 0:
                state.clear()
            elif code in (22, 23, 24, 39):  # the ends of bold/faint, italic, underline, a colour
                state -= {22: {1, 2}, 23: {3}, 24: {4}, 39: set(range(30, 38)) | set(range(90, 98))}[code]
            elif 30 <= code <= 37 or 90 <= code <= 97:
                state = {c for c in state if not (30 <= c <= 37 or 90 <= c <= 97)} | {code}
            else:
                state.add(code)
        position = match.end()
    assert text in styled[position:], f"{text!r} is not on the screen"
    return state


def coloured(state: set[int]) -> bool:
    return any(30 <= c <= 37 or 90 <= c <= 97 for c in state)


def test_a_reply_is_drawn_as_markdown(iota, chat):
    iota.write_config("  chat: {model: m}\n")
    iota.model.reply(REPLY)
    screen = chat("run", "chat", cols=100, rows=45)
    screen.type("what changed?")
    screen.send_keys("Enter")
    shown = screen.wait_for("tests │      12")
    assert re.search(r"^Release notes$", shown, re.MULTILINE)  # the heading, without its #
    assert "# Release" not in shown and "**" not in shown and "`make" not in shown
    assert "The build is green again and make test passes; see the log (https://ci.example/run/42)." in shown
    assert "• fixed the flaky test\n• sped up the cache\n  ◦ by half" in shown
    assert "│ Ship it on Friday." in shown
    assert '  def greet(name):\n      return "hello " + name  # a comment' in shown  # no fences
    assert "check │ minutes\n──────┼────────\nlint  │       1" in shown
    assert 1 in style_at(screen, "Release notes")  # the heading is bold
    assert 1 in style_at(screen, "green") and 1 not in style_at(screen, " again and ")
    assert coloured(style_at(screen, "make test"))  # inline code
    keyword, string = style_at(screen, "def"), style_at(screen, '"hello "')
    assert coloured(keyword) and coloured(string) and keyword != string  # highlighted by language


def test_a_streaming_reply_settles_block_by_block(iota, chat):
    """While a reply streams, what is complete is drawn as Markdown at once; the code block that
    is still open is drawn as code, and closes into the same code when its fence arrives."""
    iota.write_config("  chat: {model: m}\n")
    gate = Gate()
    iota.model.reply("## Plan\n\nFirst *this*.\n\n```sh\nmake build\nmake test\n```\nDone.", pieces=4, gate=gate)
    screen = chat("run", "chat")
    screen.type("plan?")
    screen.send_keys("Enter")
    gate.release(2)
    shown = screen.wait_for("First this.")
    assert re.search(r"^Plan$", shown, re.MULTILINE)
    gate.open()
    shown = screen.wait_for("Done.")
    assert "  make build\n  make test\n\nDone." in shown and "```" not in shown
