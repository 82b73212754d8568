"""A box of stacked flow widgets that follows its bottom until the person scrolls away from it.

urwid's ListBox scrolls by moving a focus between selectable rows; a transcript has no focus and
mostly grows at the bottom, often inside its last block (a streaming reply). So this widget keeps
its own position instead:

- following (the default): the view is the last `height` rows, whatever grows;
- scrolled: the view's top is pinned to a row of a block, `(block index, row in block)`, so
  what the person is reading stays put while new text arrives below it. Scrolling back down
  to the end follows again.

Only the blocks in view are rendered, so a long transcript costs no more to draw than a short
one. Blocks that change must be followed by `changed()`, which asks urwid to draw again.
"""

from __future__ import annotations

import urwid

WHEEL_UP, WHEEL_DOWN = 4, 5
WHEEL_ROWS = 3


class Scroller(urwid.Widget):
    _sizing = frozenset([urwid.Sizing.BOX])
    _selectable = False

    def __init__(self) -> None:
        super().__init__()
        self._blocks: list[urwid.Widget] = []
        self._top: tuple[int, int] | None = None  # None: following the bottom
        self._size = (80, 24)  # the last size drawn at, which scrolling measures in

    @property
    def blocks(self) -> list[urwid.Widget]:
        return self._blocks

    @property
    def following(self) -> bool:
        return self._top is None

    def append(self, block: urwid.Widget) -> None:
        self._blocks.append(block)
        self._invalidate()

    def insert(self, index: int, blocks: list[urwid.Widget]) -> None:
        """Put `blocks` before block `index`; a view scrolled below them stays where it is."""
        self._blocks[index:index] = blocks
        if self._top is not None and self._top[0] >= index:
            self._top = (self._top[0] + len(blocks), self._top[1])
        self._invalidate()

    def clear(self) -> None:
        self._blocks.clear()
        self._top = None
        self._invalidate()

    def changed(self) -> None:
        self._invalidate()

    def follow(self) -> None:
        self._top = None
        self._invalidate()

    def scroll_page(self, pages: int) -> None:
        self.scroll(pages * max(1, self._size[1] - 1))

    def scroll(self, rows: int) -> None:
        """Move the view `rows` down (negative: up); reaching the end follows it again."""
        columns, height = self._size
        index, offset = self._top if self._top is not None else self._top_when_following(columns, height)
        offset += rows
        while offset < 0 and index > 0:
            index -= 1
            offset += self._rows_of(index, columns)
        offset = max(offset, 0)
        while index < len(self._blocks) - 1 and offset >= self._rows_of(index, columns):
            offset -= self._rows_of(index, columns)
            index += 1
        self._top = None if self._rows_below(index, offset, columns, height) <= height else (index, offset)
        self._invalidate()

    def _rows_of(self, index: int, columns: int) -> int:
        return self._blocks[index].rows((columns,))

    def _rows_below(self, index: int, offset: int, columns: int, height: int) -> int:
        """Rows from `(index, offset)` to the end, counted no further than past `height`."""
        total = -offset
        for position in range(index, len(self._blocks)):
            total += self._rows_of(position, columns)
            if total > height:
                break
        return total

    def rows_above(self, columns: int, height: int, limit: int) -> int:
        """Rows above the top of the view at this size, counted no further than `limit`."""
        index, rows = self._top if self._top is not None else self._top_when_following(columns, height)
        for position in range(index - 1, -1, -1):
            if rows >= limit:
                break
            rows += self._rows_of(position, columns)
        return rows

    def _top_when_following(self, columns: int, height: int) -> tuple[int, int]:
        total = 0
        for index in range(len(self._blocks) - 1, -1, -1):
            total += self._rows_of(index, columns)
            if total >= height:
                return index, total - height
        return 0, 0

    def render(self, size: tuple[int, int], focus: bool = False) -> urwid.Canvas:
        columns, height = size
        self._size = size
        if self._top is not None:
            canvas = self._render_from(*self._top, columns, height)
            if canvas is not None:
                return canvas
            self._top = None  # the blocks shrank or the width grew: the end is in view again
        return self._render_bottom(columns, height)

    def _render_from(self, index: int, offset: int, columns: int, height: int) -> urwid.Canvas | None:
        canvases, rows = [], 0
        for block in self._blocks[index:]:
            if rows >= offset + height:
                break
            canvas = block.render((columns,))
            canvases.append(canvas)
            rows += canvas.rows()
        if rows < offset + height:
            return None
        combined = urwid.CanvasCombine([(canvas, None, False) for canvas in canvases])
        combined.trim(offset, height)
        return combined

    def _render_bottom(self, columns: int, height: int) -> urwid.Canvas:
        canvases, rows = [], 0
        for block in reversed(self._blocks):
            if rows >= height:
                break
            canvas = block.render((columns,))
            canvases.append(canvas)
            rows += canvas.rows()
        if not canvases:
            return urwid.SolidCanvas(" ", columns, height)
        combined = urwid.CanvasCombine([(canvas, None, False) for canvas in reversed(canvases)])
        if rows < height:
            combined.pad_trim_top_bottom(0, height - rows)
        else:
            combined.trim(rows - height)
        return combined

    def mouse_event(self, size: tuple[int, int], event: str, button: int, col: int, row: int,
                    focus: bool) -> bool:
        if event == "mouse press" and button in (WHEEL_UP, WHEEL_DOWN):
            self.scroll(-WHEEL_ROWS if button == WHEEL_UP else WHEEL_ROWS)
            return True
        return False
