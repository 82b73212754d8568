"""`iota bots reindex <name>`: rebuild a bot's journal and search index from its session logs."""

from __future__ import annotations

import argparse
from pathlib import Path

from iota.errors import EXIT_OK


def add_bots_parser(commands) -> None:
    bots = commands.add_parser("bots", help="what the bots keep")
    actions = bots.add_subparsers(dest="bots_action", required=True)
    reindex = actions.add_parser("reindex", help="rebuild a bot's journal and search index from its logs")
    reindex.add_argument("name", help="the bot's name")
    for parser in (bots, reindex):
        parser.add_argument("-c", "--config", type=Path, default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def bots_command(args: argparse.Namespace) -> int:
    from iota.bots.journal import rebuild_journal

    entries, records, seconds = rebuild_journal(args.name)
    print(f"Rebuilt bot {args.name}'s journal from its logs: {entries} entries, {records} records indexed "
          f"in {seconds:.1f} s")
    return EXIT_OK
