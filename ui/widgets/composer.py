"""The composer, where the person writes, and the slash-command suggestion row above it.

Enter sends; Ctrl+J inserts a newline, and so do Alt+Enter, Shift+Enter and Ctrl+Enter where
the terminal reports them as keys of their own (see `ui.app.ChatTerminal`). A paste arrives as
one `Paste` key and lands at once: a short one as its text, a long one (more than
`PASTE_INLINE_LINES` lines or `PASTE_INLINE_CHARS` characters) as a placeholder such as
`[Pasted text #1 +300 lines]`, which is replaced by the pasted text when the message is sent.
Up and Down on a one-line composer recall what was sent before; a message whose turn failed is
offered first (`offer_again`). Tab completes a slash command from the suggestion row, cycling
through the matches on each press. The usual line-editing keys work: Ctrl+A / Ctrl+E to the
start / end of the line, Ctrl+U / Ctrl+K delete to it, Ctrl+W deletes the word before the
cursor, Ctrl+D the character under it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import urwid

from ui.paste import paste_size

NEWLINE_KEYS = frozenset({"ctrl j", "meta enter", "shift enter", "ctrl enter"})
KEY_ALIASES = {"ctrl a": "home", "ctrl e": "end", "ctrl d": "delete"}
PASTE_INLINE_LINES = 3
PASTE_INLINE_CHARS = 800
PLACEHOLDER = re.compile(r"\[Pasted text #\d+ [^\]]*\]")


class Paste(str):
    """A paste, delivered as one key: it reads `paste`, and its text is `.text`."""

    text: str

    def __new__(cls, text: str) -> Paste:
        key = super().__new__(cls, "paste")
        key.text = text
        return key


def placeholder(number: int, text: str) -> str:
    return f"[Pasted text #{number} {paste_size(text)}]"


class SlashSuggestions(urwid.WidgetWrap):
    """`/save  /session  /skills  /status   Save this session` for a composer reading `/s`.

    It shows while the composer's text is one word starting with `/` that some command starts
    with. Tab's cycle starts from the text as typed, so repeated presses walk the matches.
    """

    def __init__(self) -> None:
        self._commands: list[tuple[str, str]] = []
        self._matches: list[tuple[str, str]] = []
        self._chosen: int | None = None
        self._text = urwid.Text("", wrap=urwid.WrapMode.ELLIPSIS)
        super().__init__(self._text)

    @property
    def showing(self) -> bool:
        return bool(self._matches)

    def set_commands(self, commands: tuple[tuple[str, str], ...]) -> None:
        self._commands = [("/" + name.lstrip("/"), help_text) for name, help_text in commands]

    def matching(self, word: str) -> list[str]:
        """The commands `word` names: itself if it is one, else those it is the start of."""
        names = [name for name, _ in self._commands]
        return [word] if word in names else [name for name in names if name.startswith(word)]

    def follow(self, text: str) -> None:
        """The composer's text changed (not by completing): match it afresh."""
        typed = text.startswith("/") and not any(char.isspace() for char in text)
        self._matches = [command for command in self._commands if typed and command[0].startswith(text)]
        self._chosen = None
        self._redraw()

    def next_completion(self) -> str | None:
        if not self._matches:
            return None
        self._chosen = 0 if self._chosen is None else (self._chosen + 1) % len(self._matches)
        self._redraw()
        return self._matches[self._chosen][0]

    def _redraw(self) -> None:
        markup: list[str | tuple[str, str]] = []
        for position, (name, _) in enumerate(self._matches):
            if markup:
                markup.append("  ")
            markup.append(("suggestion_selected" if position == self._chosen else "suggestion", name))
        if self._matches:
            markup.append(("dim", f"   {self._matches[self._chosen or 0][1]}"))
        self._text.set_text(markup)


class Composer(urwid.Edit):
    """The text being written. It has no caption: the `❯` beside it is the layout's, so that
    every line of a long message starts in the same column."""

    def __init__(self, on_submit: Callable[[str], bool | None], suggestions: SlashSuggestions):
        super().__init__(multiline=True)
        self._on_submit = on_submit  # returns False to keep the text (it was not sent)
        self._suggestions = suggestions
        self._pasting = False
        self._completing = False
        self._history: list[str] = []
        self._recalled: int | None = None  # index into _history while Up/Down walk it
        self._pastes: dict[str, str] = {}  # placeholder → the text it stands for
        urwid.connect_signal(self, "postchange", self._text_changed)

    def _text_changed(self, _widget: urwid.Edit, _old_text: str) -> None:
        if not self._completing:
            self._suggestions.follow(self.edit_text)

    def _replace_text(self, text: str) -> None:
        self.set_edit_text(text)
        self.set_edit_pos(len(text))

    def paste(self, text: str) -> None:
        """A paste, in one piece: its text, or a placeholder for a long one."""
        if text.count("\n") >= PASTE_INLINE_LINES or len(text) > PASTE_INLINE_CHARS:
            shown = placeholder(len(self._pastes) + 1, text)
            self._pastes[shown] = text
            text = shown
        self.insert_text(text)

    def expanded(self, text: str) -> str:
        """`text` with each paste placeholder replaced by what was pasted."""
        return PLACEHOLDER.sub(lambda match: self._pastes.get(match.group(0), match.group(0)), text)

    def set_draft(self, text: str) -> None:
        """Put `text` in the composer to be edited (a message taken back from the queue)."""
        self._recalled = None
        self._replace_text(text)

    def clear_draft(self) -> None:
        """Ctrl+C on a draft: it goes, but Up brings it back."""
        if self.edit_text.strip():
            self._history.append(self.edit_text)
        self._recalled = None
        self._replace_text("")

    def keypress(self, size: tuple[int], key: str) -> str | None:
        if key in ("begin paste", "end paste"):
            self._pasting = key == "begin paste"
            return None
        if key == "enter" and not self._pasting:
            self._submit()
            return None
        if key == "enter" or key in NEWLINE_KEYS:
            self.insert_text("\n")
            return None
        if key == "tab":
            self._complete()
            return None
        if key in ("up", "down") and "\n" not in self.edit_text:
            self._recall(-1 if key == "up" else 1)
            return None
        if key in ("ctrl u", "ctrl k", "ctrl w"):
            self._delete(*self._span_to_delete(key))
            return None
        return super().keypress(size, KEY_ALIASES.get(key, key))

    def _span_to_delete(self, key: str) -> tuple[int, int]:
        text, cursor = self.edit_text, self.edit_pos
        if key == "ctrl u":
            return text.rfind("\n", 0, cursor) + 1, cursor
        if key == "ctrl k":
            line_end = text.find("\n", cursor)
            return cursor, len(text) if line_end == -1 else line_end
        start = len(text[:cursor].rstrip())
        while start > 0 and not text[start - 1].isspace():
            start -= 1
        return start, cursor

    def _delete(self, start: int, end: int) -> None:
        self.set_edit_text(self.edit_text[:start] + self.edit_text[end:])
        self.set_edit_pos(start)

    def _submit(self) -> None:
        text = self.edit_text
        if not text.strip():
            return
        if self._on_submit(self.expanded(text)) is False:
            return
        self._history.append(text)
        self._recalled = None
        self._replace_text("")

    def offer_again(self, text: str) -> None:
        """Make `text` (a message whose turn failed) the first thing Up recalls."""
        if text in self._history:
            self._history.remove(text)
        self._history.append(text)
        self._recalled = None

    def _complete(self) -> None:
        completion = self._suggestions.next_completion()
        if completion is None:
            return
        self._completing = True
        try:
            self._replace_text(completion)
        finally:
            self._completing = False

    def _recall(self, step: int) -> None:
        if not self._history or (self._recalled is None and step > 0):
            return
        position = len(self._history) - 1 if self._recalled is None else self._recalled + step
        if position >= len(self._history):
            self._recalled = None
            self._replace_text("")
            return
        self._recalled = max(position, 0)
        self._replace_text(self._history[self._recalled])
