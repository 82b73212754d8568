"""How figures and titles read, wherever they are shown: sizes in tokens, timers, the context
figure, and a title as one line of printable text (iota.titles says why); and JSON as UTF-8
bytes, however odd the strings it holds (`json_bytes`: the session log's and the wire's).

Nothing heavy imported: the terminal app uses these before anything heavy is loaded.
"""

from __future__ import annotations

import os
import unicodedata
from typing import Any


def json_bytes(value: Any, **options: Any) -> bytes:
    """`value` as UTF-8 JSON, whatever strings it holds.

    Lone surrogates (undecodable bytes in a tool's output or a pasted title) cannot be UTF-8;
    written as `\\udcxx` escapes the JSON is still valid and reads back to the same string.
    """
    import json  # here, not above: the chat's widgets use this module before its first draw

    try:
        return json.dumps(value, ensure_ascii=False, **options).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, **options).encode("ascii")


# The longest title kept (Rust iota's cap).
TITLE_CAP = 80


def format_size(tokens: int) -> str:
    """842 → `842`, 8200 → `8.2k`, 128000 → `128k`, 1500000 → `1.5m`."""
    for unit, scale in (("m", 10**6), ("k", 10**3)):
        if tokens >= scale:
            return f"{tokens / scale:.1f}".removesuffix(".0") + unit
    return str(tokens)


def format_elapsed(seconds: float) -> str:
    """`<1s`, `42s`, `1m 12s`, `2h 5m`: how timers read."""
    whole = int(seconds)
    if whole < 1:
        return "<1s"
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60}s"
    return f"{whole // 3600}h {whole % 3600 // 60}m"


def context_figure(used: int, window: int, estimated: bool) -> str:
    """`[≈]<used> / <window> (<pct>%)`, e.g. `≈96k / 128k (75%)`; `≈` marks a local estimate."""
    percent = used * 100 // window if window > 0 else 0
    return f"{'≈' if estimated else ''}{format_size(used)} / {format_size(window)} ({percent}%)"


def clean_title(text: str, cap: int = TITLE_CAP) -> str:
    """`text` as a title: one line, no control or format characters, single spaces, at most `cap`."""
    return one_line(text)[:cap].rstrip()


def one_line(text: str) -> str:
    kept = []
    for character in text:
        category = unicodedata.category(character)
        if character in "\n\r\t\v\f" or category in ("Zl", "Zp"):
            kept.append(" ")
        elif category not in ("Cc", "Cf", "Cs", "Co", "Cn"):
            kept.append(character)
    return " ".join("".join(kept).split())


def tilde(directory: str, home: str | None) -> str:
    """`directory` with a leading `home` written `~`, by whole components (`/home/me2` is not under `/home/me`)."""
    if not home:
        return directory
    home = home.rstrip(os.sep) or os.sep
    if directory == home:
        return "~"
    if directory.startswith(home + os.sep):
        return "~" + directory[len(home):]
    return directory
