"""A reply's Markdown, drawn: headings, emphasis, code, lists, quotes, links, tables, code blocks.

    # Heading              Heading                        bold, without its `#`
    **strong** `code`      strong code                    bold; inline code in its own colour
    - item                 • item                         lists keep their hanging indent
    > quoted               │ quoted                       a dim gutter
    ```python              def f(): …                     highlighted by Pygments, by language,
    def f(): …                                            indented two columns
    | a | b |              a │ b                          columns aligned
    [text](url)            text (url)                     the address is never hidden

markdown-it-py parses (CommonMark, with GFM tables and strikethrough; raw HTML is text), and
`block_widgets` turns the tokens of each top-level block into urwid widgets. A streaming reply
(ui.widgets.transcript) parses only its last block again as text arrives: the blocks before it
cannot change any more. Every piece of text is escaped (ui.widgets.controls) as it is drawn,
also what the parser decoded from an entity such as `&#27;`.

markdown-it-py and Pygments cost ~50 ms and ~30 ms to import, so both are imported on first
use (the app imports markdown-it-py behind its first screen, see `preload`), and a language's
lexer when a code block in it is first drawn.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator

import urwid

from ui.widgets.controls import escape_controls

Markup = list[str | tuple[str, str]]
BULLETS = ("• ", "◦ ", "▪ ")
CODE_INDENT = "  "
QUOTE_GUTTER = "│ "
RULE_COLUMNS = 40
# Pygments token types, most specific first, and the palette attribute each is drawn with.
CODE_STYLES = (("Comment", "code_comment"), ("Keyword", "code_keyword"), ("Name.Function", "code_name"),
               ("Name.Class", "code_name"), ("Name.Builtin", "code_builtin"), ("Literal.String", "code_string"),
               ("Literal.Number", "code_number"), ("Operator", "code_operator"))


def _new_parser():
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


@functools.cache
def parser():
    return _new_parser()


@functools.cache
def block_parser():
    """The parser without its inline pass: where the blocks are, for a third of the cost."""
    blocks = _new_parser()
    blocks.core.ruler.disable("inline")
    return blocks


def preload() -> None:
    """Import the parser (blocking: for a worker thread behind the first screen)."""
    parser()


def parse(text: str, references: dict | None = None) -> list:
    """The tokens of `text`; `references`: link reference definitions made elsewhere in the reply."""
    return parser().parse(text, {"references": dict(references)} if references else None)


def parse_blocks(text: str) -> list:
    """The block tokens of `text`, their inline content not parsed."""
    return block_parser().parse(text)


def references(text: str) -> dict:
    """The link reference definitions of `text`, the first of each label (as a parse keeps them)."""
    env: dict = {}
    block_parser().parse(text, env)
    return env.get("references", {})


def settled_blocks(tokens: list, source: str, ended: bool) -> list[int]:
    """The lines of `source` (the text of `tokens`) where the blocks that no text added to it can
    change begin — the first from line 0 — and last the line where the rest begins; [] while
    no block is settled.

    More text can change only what its last line is, while that line is incomplete (`ended`:
    it is complete). A block begun on a complete line stays begun, and the blocks above it are
    settled. One begun on the incomplete line may not be: `#` is an empty heading that ends the
    paragraph above, `#tag` is more of that paragraph; `2` after an ordered list is a paragraph,
    `2. b` its next item. After a blank line it is, unless the block above is a list (which a
    blank line does not end)."""
    openings = [token for token in tokens if token.level == 0 and token.nesting >= 0 and token.map]
    last_line = math.inf if ended else source.count("\n")
    for position in range(len(openings) - 1, 0, -1):
        line = openings[position].map[0]
        if line >= last_line:
            last_start = source.rfind("\n") + 1
            line_above = source[source.rfind("\n", 0, last_start - 1) + 1:last_start - 1]
            if line_above.strip() or openings[position - 1].type in ("bullet_list_open", "ordered_list_open"):
                continue
        return [0, *(opening.map[0] for opening in openings[1:position + 1])]
    return []


def block_widgets(tokens: list) -> list[urwid.Widget]:
    """One widget per top-level block of `tokens`."""
    from markdown_it.tree import SyntaxTreeNode

    return [_block(node, 0) for node in SyntaxTreeNode(tokens).children]


def stacked(widgets: list[urwid.Widget]) -> urwid.Widget:
    """Blocks one under the other, a blank row between them."""
    if len(widgets) <= 1:
        return widgets[0] if widgets else urwid.Text("")
    rows: list[urwid.Widget] = []
    for widget in widgets:
        rows += [urwid.Divider(), widget] if rows else [widget]
    return urwid.Pile(rows)


class SettledBlock(urwid.Widget):
    """A top-level block of a reply that no more text can change, parsed and laid out when it is
    first drawn or measured: the blocks of a long reply nobody scrolls back to never are."""

    _sizing = frozenset([urwid.Sizing.FLOW])
    _selectable = False

    def __init__(self, source: str, references: dict):
        super().__init__()
        self.source = source
        self._references = references  # the reply's link references (a dict it fills when it ends)
        self._widget: urwid.Widget | None = None

    def forget(self) -> None:
        """Lay the block out afresh when it is next drawn (the reply's link references changed)."""
        self._widget = None
        self._invalidate()

    def _laid_out(self) -> urwid.Widget:
        if self._widget is None:
            self._widget = stacked(block_widgets(parse(self.source, self._references)))
        return self._widget

    def rows(self, size: tuple[int], focus: bool = False) -> int:
        return self._laid_out().rows(size, focus)

    def render(self, size: tuple[int], focus: bool = False) -> urwid.Canvas:
        return self._laid_out().render(size, focus)


def _block(node, depth: int) -> urwid.Widget:
    kind = node.type
    if kind == "paragraph":
        return urwid.Text(inline_markup(node.children[0]) if node.children else "")
    if kind == "heading":
        return urwid.Text(inline_markup(node.children[0], "md_heading") if node.children else "")
    if kind in ("bullet_list", "ordered_list"):
        return _list(node, depth)
    if kind == "blockquote":
        return Gutter(QUOTE_GUTTER, _pile(node.children, depth, "md_quote"), "md_quote_gutter")
    if kind in ("fence", "code_block"):
        code = node.content[:-1] if node.content.endswith("\n") else node.content
        return Gutter(CODE_INDENT, urwid.Text(highlight(code, node.info.strip().split(" ")[0]), wrap="any"))
    if kind == "hr":
        return urwid.Text(("dim", "─" * RULE_COLUMNS), wrap="clip")
    if kind == "table":
        return urwid.Text(_table(node), wrap="any")
    return urwid.Text(escape_controls(node.content))  # html_block and whatever a parser adds


def _pile(children, depth: int, attribute: str | None = None) -> urwid.Widget:
    """Sibling blocks, a blank row between them; in a tight list item (its paragraphs hidden, in
    markdown-it's words) they sit together."""
    tight = any(child.type == "paragraph" and child.hidden for child in children)
    widgets: list[urwid.Widget] = []
    for child in children:
        if widgets and not tight:
            widgets.append(urwid.Divider())
        widgets.append(_block(child, depth))
    pile = urwid.Pile(widgets)
    return urwid.AttrMap(pile, attribute) if attribute else pile


def _list(node, depth: int) -> urwid.Widget:
    ordered = node.type == "ordered_list"
    first = int(node.attrs.get("start", 1)) if ordered else 0
    numbers = [f"{first + n}. " for n in range(len(node.children))]
    width = max(map(len, numbers)) if ordered else 2
    rows = []
    for position, item in enumerate(node.children):
        marker = numbers[position].rjust(width) if ordered else BULLETS[depth % len(BULLETS)]
        rows.append(urwid.Columns([(width, urwid.Text(("md_bullet", marker))), _pile(item.children, depth + 1)]))
    return urwid.Pile(rows)


def inline_markup(node, base: str | None = None) -> Markup:
    """An inline node's children as urwid markup; `base` is the attribute of plain text in it."""
    markup: Markup = []
    for child, attribute in _inline(node.children, base):
        if isinstance(child, str):
            markup.append((attribute, child) if attribute else child)
    return markup or [""]


def _inline(children, attribute: str | None) -> Iterator[tuple[str, str | None]]:
    for child in children:
        kind = child.type
        if kind == "text":
            yield escape_controls(child.content), attribute
        elif kind == "code_inline":
            yield escape_controls(child.content), "md_code"
        elif kind in ("softbreak", "hardbreak"):
            yield "\n", attribute
        elif kind in ("em", "strong", "s"):
            yield from _inline(child.children, attribute if attribute in _STRONGER else _EMPHASIS[kind])
        elif kind == "link":
            href = str(child.attrs.get("href", ""))
            label = "".join(text for text, _ in _inline(child.children, None))
            yield from _inline(child.children, "md_link")
            if href and href != label and f"mailto:{label}" != href:
                yield escape_controls(f" ({href})"), "dim"
        elif kind == "image":
            alt = "".join(text for text, _ in _inline(child.children, None))
            yield escape_controls(f"[image: {alt}] ({child.attrs.get('src', '')})"), "md_link"
        else:  # html_inline and the like are drawn as the text they are
            yield escape_controls(child.content), attribute


_EMPHASIS = {"em": "md_em", "strong": "md_strong", "s": "md_strike"}
_STRONGER = frozenset({"md_heading"})


def _table(node) -> Markup:
    """The rows with their columns aligned and `│` between them, a rule under the header."""
    rows: list[tuple[bool, list[tuple[str, str]]]] = []  # (header, [(text, align)])
    for section in node.children:
        for row in section.children:
            cells = [("".join(text for text, _ in _inline(cell.children[0].children, None)) if cell.children else "",
                      _alignment(cell)) for cell in row.children]
            rows.append((section.type == "thead", cells))
    columns = max((len(cells) for _, cells in rows), default=0)
    widths = [max((urwid.calc_width(cells[c][0], 0, len(cells[c][0])) for _, cells in rows if c < len(cells)),
                  default=0) for c in range(columns)]
    markup: Markup = []
    for header, cells in rows:
        if markup:
            markup.append("\n")
        for column, width in enumerate(widths):
            text, align = cells[column] if column < len(cells) else ("", "left")
            padding = " " * (width - urwid.calc_width(text, 0, len(text)))
            if column:
                markup.append(("dim", " │ "))
            shown = padding + text if align == "right" else text + padding
            markup.append(("md_strong", shown) if header else shown)
        if header:
            markup += ["\n", ("dim", "─┼─".join("─" * width for width in widths))]
    return markup or [""]


def _alignment(cell) -> str:
    return "right" if "right" in str(cell.attrs.get("style", "")) else "left"


def highlight(code: str, language: str) -> Markup:
    """`code` coloured by Pygments' lexer for `language`; plain when there is none."""
    lexer = _lexer(language.lower()) if language else None
    if lexer is None:
        return [("code", escape_controls(code))] if code else [""]
    markup: Markup = []
    for token_type, value in lexer.get_tokens(code):
        markup.append((_code_style(token_type), escape_controls(value)))
    while markup and markup[-1][1].endswith("\n"):  # the lexer ends with a newline of its own
        attribute, text = markup.pop()
        if text.rstrip("\n"):
            markup.append((attribute, text.rstrip("\n")))
    return markup or [""]


@functools.cache
def _lexer(language: str):
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(language, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


def _code_style(token_type) -> str:
    name = str(token_type).removeprefix("Token.")
    for prefix, attribute in CODE_STYLES:
        if name == prefix or name.startswith(prefix + "."):
            return attribute
    return "code"


class Gutter(urwid.Widget):
    """A flow widget drawn beside a gutter (`│ ` on every row, or an indent)."""

    _sizing = frozenset([urwid.Sizing.FLOW])
    _selectable = False

    def __init__(self, gutter: str, body: urwid.Widget, attribute: str = "dim"):
        super().__init__()
        self._gutter = gutter
        self._body = body
        self._attribute = attribute

    def rows(self, size: tuple[int], focus: bool = False) -> int:
        return self._body.rows((self._width(size[0]),))

    def _width(self, columns: int) -> int:
        return max(1, columns - len(self._gutter))

    def render(self, size: tuple[int], focus: bool = False) -> urwid.Canvas:
        width = self._width(size[0])
        body = self._body.render((width,))
        gutter = urwid.Text((self._attribute, "\n".join([self._gutter] * body.rows()))).render((len(self._gutter),))
        return urwid.CanvasJoin([(gutter, None, False, len(self._gutter)), (body, None, False, width)])
