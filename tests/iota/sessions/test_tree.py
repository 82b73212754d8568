"""The session tree: children under their parent, newest first at every level, loops cut."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from iota.sessions.listing import SessionInfo
from iota.sessions.tree import descendants, format_session_tree, tree_choices, tree_rows

NOW = datetime(2026, 8, 31, 12, 0, 0, tzinfo=timezone.utc)


def info(name: str, minutes_ago: int, parent: str = "", title: str = "", archived: bool = False) -> SessionInfo:
    stamp = (NOW - timedelta(minutes=minutes_ago)).isoformat()
    return SessionInfo(name, Path(name), title or name.title(), "gpt", stamp, 2, "coder", parent, archived)


def newest_first(*infos: SessionInfo) -> list[SessionInfo]:
    return sorted(infos, key=lambda i: i.updated_at, reverse=True)


def drawn(infos) -> list[str]:
    return [row.prefix + row.info.id for row in tree_rows(infos)]


def test_children_sit_under_their_parent_and_the_latest_work_comes_first():
    infos = newest_first(
        info("garden", 300), info("beds", 200, parent="garden"), info("raised", 5, parent="beds"),
        info("paths", 100, parent="garden"), info("shelves", 60), info("tomatoes", 250, parent="garden"))
    # garden holds the newest work (raised, 5m ago) so it leads, although shelves was touched after it.
    assert drawn(infos) == ["garden", "├─ beds", "│  └─ raised", "├─ paths", "└─ tomatoes", "shelves"]


def test_a_session_whose_parent_is_not_shown_stands_at_the_top():
    infos = newest_first(info("orphan", 10, parent="deleted0000"), info("other", 20))
    assert drawn(infos) == ["orphan", "other"]


def test_a_loop_is_cut_and_every_session_is_drawn_once():
    infos = newest_first(info("a", 10, parent="b"), info("b", 20, parent="a"), info("c", 30, parent="c"),
                         info("d", 40, parent="a"))
    rows = drawn(infos)
    assert sorted(row.split(" ")[-1] for row in rows) == ["a", "b", "c", "d"]
    assert rows[0] == "a" and "c" in rows


def test_descendants_reach_every_level_and_survive_a_loop():
    infos = [info("a", 1), info("b", 2, parent="a"), info("c", 3, parent="b"), info("x", 4, parent="y"),
             info("y", 5, parent="x")]
    assert descendants(infos, "a") == {"b", "c"}
    assert descendants(infos, "c") == set()
    assert descendants(infos, "x") == {"y"}


def test_the_printed_tree_and_the_pickers_rows():
    infos = newest_first(info("k7m2aaaaaaaa", 120, title="Fix the parser"),
                         info("p9x3bbbbbbbb", 60, parent="k7m2aaaaaaaa", title="Try regex", archived=True))
    assert format_session_tree(infos, NOW) == "\n".join([
        "Sessions:",
        "  k7m2aaaaaaaa  Fix the parser · gpt · 2h ago · 2 msgs · coder",
        "  p9x3bbbbbbbb  └─ Try regex · gpt · 1h ago · 2 msgs · coder · archived",
    ])
    ordered, labels, search = tree_choices(infos, NOW)
    assert [i.id for i in ordered] == ["k7m2aaaaaaaa", "p9x3bbbbbbbb"]
    assert labels[1] == "└─ Try regex · gpt · 1h ago · 2 msgs · coder · archived"
    assert search == ("Fix the parser k7m2aaaaaaaa", "Try regex p9x3bbbbbbbb")
    assert format_session_tree([], NOW) == "No saved sessions."
