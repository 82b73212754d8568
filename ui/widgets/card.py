"""The start-up card (reference §2.11): the mark and version, the mode row, the directory.

    ╭───────────────────────────────────╮
    │ ι> iota  v0.1.0                   │
    │ coder · bot · session 01hq3z8a9b2c│
    │ ~/src/app                         │
    │ 2 AGENTS.md · 3 skills · MCP: time│
    ╰───────────────────────────────────╯
    ⚠ skill "x" skipped: no description

The mode row names the agent first (unless its name is its mode's), so two bots side by side
are told apart; the last row, in agent and bot mode, says what the mode loaded.

The frame hugs the widest row with one blank on either side. It needs four columns beside the
widest row that is never cut (the mark row and the mode row); narrower, the three rows stand
bare. The directory is the one row that is cut — in the middle, both ends kept — to the columns
it may have, so it never wraps: the width less the frame's four, or the whole width bare.

`card_lines` is pure and returns styled segments, so a test can assert the rows exactly;
`CardWidget` lays them out again whenever the terminal's width changes.
"""

from __future__ import annotations


import urwid

from actors.events import Card
from iota.text import tilde

Segment = tuple[str | None, str]  # (palette attribute or None for plain, text)
Line = list[Segment]

MARK = "ι> iota"
MARK_GAP = "  "
SEPARATOR = " · "
NOT_SAVED = "not saved"
SAVE_HINT = "/save keeps it"
FRAME_COLUMNS = 4  # "│ " and " │"


def columns_of(text: str) -> int:
    """The display columns `text` takes (wide characters count two)."""
    return urwid.calc_width(text, 0, len(text))


def text_of(line: Line) -> str:
    return "".join(text for _, text in line)


def truncate_middle(text: str, columns: int) -> str:
    """`text` cut to `columns` by taking out its middle, marked `…`; the head gets the smaller half."""
    if columns_of(text) <= columns:
        return text
    if columns <= 1:
        return "…"
    room = columns - 1
    head = _take_columns(text, room // 2)
    tail = _take_columns(text[::-1], room - room // 2)[::-1]
    return f"{head}…{tail}"


def _take_columns(text: str, columns: int) -> str:
    taken, used = [], 0
    for char in text:
        used += columns_of(char)
        if used > columns:
            break
        taken.append(char)
    return "".join(taken)


def mode_line(card: Card) -> Line:
    """`coder · agent · session <id>`, `agent · not saved · /save keeps it · in herdr`: each ` · ` dim."""
    # No mode yet on the card drawn before the chat is loaded: it says only `starting…`.
    segments: list[Segment] = [("card_agent", card.agent)] if card.agent and card.agent != card.mode else []
    if card.mode:
        segments.append((f"mode_{card.mode}", card.mode))
    if card.session == NOT_SAVED:
        segments += [(None, NOT_SAVED), (None, SAVE_HINT)]
    elif card.session:
        segments.append((None, card.session))
    if card.host:
        segments.append((None, f"in {card.host}"))
    line: Line = []
    for segment in segments:
        if line:
            line.append(("dim", SEPARATOR))
        line.append(segment)
    return line


def card_lines(card: Card, width: int, home: str | None) -> list[Line]:
    """The card's rows at `width` columns, framed when they fit, then its warnings."""
    mark: Line = [("mark", MARK), (None, MARK_GAP), ("dim", f"v{card.version}")]
    mode = mode_line(card)
    uncut = max(columns_of(text_of(mark)), columns_of(text_of(mode)))
    framed = width >= uncut + FRAME_COLUMNS
    directory_columns = width - FRAME_COLUMNS if framed else width
    directory: Line = [(None, truncate_middle(tilde(card.directory, home), directory_columns))]
    rows = [mark, mode, directory]
    if card.loaded:
        rows.append([("dim", truncate_middle(SEPARATOR.join(card.loaded), directory_columns))])
    rows += [[(None, truncate_middle(about, directory_columns))] for about in card.about]
    if card.hint:
        rows.append([("dim", truncate_middle(card.hint, directory_columns))])
    warnings: list[Line] = [[("dim", f"⚠ {warning}")] for warning in card.warnings]
    if not framed:
        return rows + warnings
    inner = max(columns_of(text_of(row)) for row in rows)
    edge = "─" * (inner + 2)
    framed_rows: list[Line] = [[("dim", f"╭{edge}╮")]]
    for row in rows:
        padding = " " * (inner - columns_of(text_of(row)))
        framed_rows.append([("dim", "│"), (None, " "), *row, (None, padding + " "), ("dim", "│")])
    framed_rows.append([("dim", f"╰{edge}╯")])
    return framed_rows + warnings


def markup_of(lines: list[Line]) -> list[str | tuple[str, str]]:
    """urwid text markup for `lines`, one row each."""
    markup: list[str | tuple[str, str]] = []
    for number, line in enumerate(lines):
        if number:
            markup.append("\n")
        markup.extend(text if attribute is None else (attribute, text) for attribute, text in line)
    return markup


class CardWidget(urwid.Widget):
    """The card as a flow widget: its rows depend on the width, so they are built per width."""

    _sizing = frozenset([urwid.Sizing.FLOW])
    _selectable = False

    def __init__(self, card: Card, home: str | None):
        super().__init__()
        self._card = card
        self._home = home
        self._laid_out: tuple[int, urwid.Text] | None = None

    def replace(self, card: Card) -> None:
        self._card = card
        self._laid_out = None
        self._invalidate()

    def _text_for(self, columns: int) -> urwid.Text:
        if self._laid_out is None or self._laid_out[0] != columns:
            self._laid_out = (columns, urwid.Text(markup_of(card_lines(self._card, columns, self._home))))
        return self._laid_out[1]

    def rows(self, size: tuple[int], focus: bool = False) -> int:
        return self._text_for(size[0]).rows(size, focus)

    def render(self, size: tuple[int], focus: bool = False) -> urwid.Canvas:
        return self._text_for(size[0]).render(size, focus)
