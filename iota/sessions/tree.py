"""The session tree: each session under the one it was forked from or put under, and how it reads.

    Sessions:
      k7m2aaaaaaaa  Fix the parser · gpt · 2h ago · 12 msgs · coder
      p9x3bbbbbbbb  ├─ Try the regex way · gpt · 1h ago · 14 msgs · coder
      q2w4cccccccc  │  └─ Regex, with tests · gpt · 5m ago · 20 msgs · coder
      r5t6dddddddd  └─ Keep the hand-written one · gpt · 3h ago · 16 msgs · coder

A session's `parent` in meta.json is the id of the session it sits under; `/fork` sets it, and
`/session parent` / `unparent` (or `iota sessions parent` / `unparent`) move it. The tree is
drawn from the sessions being shown, newest first at every level: a session's place among its
siblings is the latest activity anywhere under it, so the work touched last is at the top
however deep it sits. A session whose parent is not among them — deleted, archived, a bot's, in
another project's bucket — stands at the top. A loop (two processes re-parenting at once, a
hand-edited meta.json) is cut where the walk meets it, so every session is drawn exactly once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from iota.sessions.listing import session_label, SessionInfo
from iota.text import clean_title

BRANCH, LAST_BRANCH, THROUGH, BLANK = "├─ ", "└─ ", "│  ", "   "


@dataclass(frozen=True)
class TreeRow:
    info: SessionInfo
    depth: int
    prefix: str  # the branch lines drawn before the label


def tree_rows(infos: Sequence[SessionInfo]) -> list[TreeRow]:
    """`infos` (newest first, as `list_sessions` gives them) in tree order, each with its branch lines."""
    rank = {info.id: position for position, info in enumerate(infos)}
    children: dict[str, list[SessionInfo]] = {}
    for info in infos:
        if info.parent in rank and info.parent != info.id:
            children.setdefault(info.parent, []).append(info)

    newest: dict[str, int] = {}

    def newest_under(info: SessionInfo, path: frozenset[str]) -> int:
        if info.id not in newest:
            below = [newest_under(child, path | {info.id}) for child in children.get(info.id, ())
                     if child.id not in path]
            newest[info.id] = min([rank[info.id], *below])
        return newest[info.id]

    def ordered(siblings: Sequence[SessionInfo], path: frozenset[str]) -> list[SessionInfo]:
        return sorted(siblings, key=lambda info: newest_under(info, path))

    rows: list[TreeRow] = []
    drawn: set[str] = set()

    def draw(info: SessionInfo, depth: int, lead: str, branch: str) -> None:
        drawn.add(info.id)
        rows.append(TreeRow(info, depth, lead + branch))
        below = [child for child in children.get(info.id, ()) if child.id not in drawn]
        below = ordered(below, frozenset({info.id}))
        deeper = lead + (THROUGH if branch == BRANCH else BLANK if branch else "")
        for position, child in enumerate(below):
            if child.id not in drawn:
                draw(child, depth + 1, deeper, LAST_BRANCH if position == len(below) - 1 else BRANCH)

    roots = [info for info in infos if info.parent not in rank or info.parent == info.id]
    reached = _reachable(roots, children)
    for info in infos:  # a loop has no way down from the top: its newest member stands in for its root
        if info.id not in reached:
            roots.append(info)
            reached |= _reachable([info], children)
    for root in ordered(roots, frozenset()):
        draw(root, 0, "", "")
    return rows


def _reachable(starts: Sequence[SessionInfo], children: dict[str, list[SessionInfo]]) -> set[str]:
    found: set[str] = set()
    frontier = list(starts)
    while frontier:
        info = frontier.pop()
        if info.id not in found:
            found.add(info.id)
            frontier.extend(children.get(info.id, ()))
    return found


def descendants(infos: Sequence[SessionInfo], session_id: str) -> set[str]:
    """The ids of every session under `session_id` (not itself), however deep."""
    found: set[str] = set()
    frontier = [session_id]
    while frontier:
        parent = frontier.pop()
        for info in infos:
            if info.parent == parent and info.id not in found and info.id != session_id:
                found.add(info.id)
                frontier.append(info.id)
    return found


def children_of(infos: Sequence[SessionInfo], session_id: str) -> list[SessionInfo]:
    return [info for info in infos if info.parent == session_id and info.id != session_id]


def tree_label(info: SessionInfo, now: datetime) -> str:
    """A session's row in the tree: `<title> · <model> · <age> · <n> msgs · <agent>[ · archived]`."""
    return session_label(info, now, agent=True)


def tree_choices(infos: Sequence[SessionInfo], now: datetime) -> tuple[list[SessionInfo], tuple[str, ...],
                                                                    tuple[str, ...]]:
    """What a picker offers: the sessions in tree order, each one's row, and the text typing
    filters on (its title and id)."""
    rows = tree_rows(infos)
    return ([row.info for row in rows], tuple(row.prefix + tree_label(row.info, now) for row in rows),
            tuple(f"{clean_title(row.info.title) or '(untitled)'} {row.info.id}" for row in rows))


def format_session_tree(infos: Sequence[SessionInfo], now: datetime) -> str:
    """The text of `iota list sessions --tree`."""
    if not infos:
        return "No saved sessions."
    width = max(len(info.id) for info in infos)
    return "\n".join(["Sessions:", *(f"  {row.info.id.ljust(width)}  {row.prefix}{tree_label(row.info, now)}"
                                     for row in tree_rows(infos))])
