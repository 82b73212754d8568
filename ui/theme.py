"""The palette: one table of what each part of the screen looks like, in colour or without.

The widgets name attributes (`dim`, `mark`, `diff_add`, …) and never colours, so this table is
the only place a colour is chosen. With `NO_COLOR` set (https://no-color.org: present and not
empty) every colour goes and the text attributes stay: faint, bold and standout are not colour,
and the card's frame, the `⚠` and the `❯` markers are text, so the screen reads the same.
"""

from __future__ import annotations

from collections.abc import Mapping

# name → (foreground colour, text attributes). Backgrounds are always the terminal's own.
_LOOK: dict[str, tuple[str, tuple[str, ...]]] = {
    "dim": ("default", ("faint",)),
    "mark": ("dark cyan", ()),
    "mode_chat": ("dark green", ()),
    "mode_agent": ("light blue", ()),
    "mode_bot": ("dark magenta", ()),
    "card_agent": ("default", ("bold",)),
    "user": ("default", ("bold",)),
    "user_mark": ("dark cyan", ("bold",)),
    "tool": ("dark cyan", ()),
    "tool_result": ("default", ("faint",)),
    "tool_error": ("dark red", ()),
    "diff_add": ("dark green", ()),
    "diff_del": ("dark red", ()),
    "diff_hunk": ("dark cyan", ()),
    "notice": ("default", ("faint",)),
    "error": ("dark red", ()),
    "panel_title": ("default", ("bold",)),
    "choice_title": ("default", ("bold",)),
    "choice": ("default", ()),
    "choice_selected": ("dark cyan", ("bold",)),
    "suggestion": ("default", ("faint",)),
    "suggestion_selected": ("dark cyan", ()),
    "composer_mark": ("dark cyan", ("bold",)),
    "rule": ("default", ("faint",)),
    "status": ("default", ("faint",)),
    "status_running": ("brown", ()),
    "tasks": ("default", ("faint",)),
    "tasks_mark": ("dark magenta", ()),
    "hint": ("brown", ("bold",)),
    "queued": ("default", ("faint",)),
    # Markdown in replies (ui.widgets.markdown)
    "md_heading": ("default", ("bold",)),
    "md_strong": ("default", ("bold",)),
    "md_em": ("default", ("italics",)),
    "md_strike": ("default", ("strikethrough",)),
    "md_code": ("dark cyan", ()),
    "md_link": ("light blue", ("underline",)),
    "md_bullet": ("default", ("faint",)),
    "md_quote": ("default", ("italics",)),
    "md_quote_gutter": ("default", ("faint",)),
    # code blocks, by Pygments token type
    "code": ("default", ()),
    "code_comment": ("default", ("faint", "italics")),
    "code_keyword": ("dark magenta", ()),
    "code_name": ("dark blue", ("bold",)),
    "code_builtin": ("dark cyan", ()),
    "code_string": ("dark green", ()),
    "code_number": ("brown", ()),
    "code_operator": ("default", ()),
}


def no_color_requested(environ: Mapping[str, str]) -> bool:
    return bool(environ.get("NO_COLOR"))


def palette(*, no_color: bool) -> list[tuple[str, str, str]]:
    """urwid palette entries `(name, foreground, background)`; foreground is `colour,attr,…`."""
    entries = []
    for name, (colour, attributes) in _LOOK.items():
        foreground = ",".join(("default" if no_color else colour, *attributes))
        entries.append((name, foreground, "default"))
    return entries
