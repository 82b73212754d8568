"""`iota search <words> [--agent NAME] [--since 7d] [--limit N]`: every saved session, newest match first.

    2026-10-02 14:03  k3m4n5p6q7r8  coder (bot)  record 1234
        …we decided to pin the seed in tests/test_x.py…
        iota run coder

The words are looked for in chats, agents and bots alike (see iota.bots.history); each match
shows where it is, a snippet with the matching words highlighted (bold in a terminal, between
`**` otherwise), and the command that resumes its session.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from datetime import datetime
from pathlib import Path

from iota.errors import EXIT_OK, IotaError

_SPAN = re.compile(r"(\d+)([mhdw])")
_SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
BOLD, PLAIN = ("\x1b[1;33m", "\x1b[0m"), ("**", "**")


def add_search_parser(commands) -> None:
    search = commands.add_parser("search", help="search every saved session, newest match first")
    search.add_argument("words", nargs="+", help='words to find (all of them; "quote" a phrase)')
    search.add_argument("--agent", help="only the sessions of this agent or bot")
    search.add_argument("--since", help="only what is newer than this: 30m, 12h, 7d, 2w, or a date (2026-10-01)")
    search.add_argument("--limit", type=int, default=20, help="how many matches to print (default 20)")
    search.add_argument("-c", "--config", type=Path, default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def search_command(args: argparse.Namespace) -> int:
    from iota.bots.history import search_history
    from iota.sessions.search import format_time

    since = parse_since(args.since, time.time()) if args.since else None
    if args.limit < 1:
        raise IotaError(f"--limit must be at least 1, got {args.limit}")
    query = " ".join(args.words)
    marks = BOLD if sys.stdout.isatty() and not os.environ.get("NO_COLOR") else PLAIN
    history = search_history(query, limit=args.limit, since=since, agent=args.agent, marks=marks)
    for note in history.notes:
        print(f"Warning: {note}", file=sys.stderr)
    if not history.hits:
        print(f'No matches for "{query}".')
        return EXIT_OK
    if history.any_word:
        print(f'No record has every word of "{query}"; these have some of them:\n')
    for found in history.hits:
        hit = found.hit
        who = f"{hit.agent} (bot)" if found.bot else hit.agent or "(no agent)"
        print(f"{format_time(hit.at)}  {hit.session}  {who}  record {hit.position}")
        print(f"    {hit.snippet}")
        print(f"    {found.resume}")
    if history.more:
        print("\nMore matches than shown: add words, --agent, --since or a larger --limit.")
    return EXIT_OK


def parse_since(text: str, now: float) -> int:
    """`7d` → seven days before `now`; `2026-10-01` → that day's start, local time (epoch seconds)."""
    span = _SPAN.fullmatch(text.strip())
    if span:
        return int(now - int(span.group(1)) * _SECONDS[span.group(2)])
    try:
        return int(datetime.fromisoformat(text.strip()).astimezone().timestamp())
    except ValueError:
        raise IotaError(f'--since wants a time like 30m, 12h, 7d or 2w, or a date (2026-10-01), got "{text}"') from None
