"""Which session `iota resume` continues, for the chat and for `-m` alike.

    iota resume <id>            that session (any unique prefix of its id), open and locked
    iota resume                 the one picked (interactive only)
    iota resume --fork <id>     a new session under it, starting from its visible context; the
                                original is only read, so it stays byte-identical
    --all                       the id, or the picker, may name an archived session

A bot's session is refused: only its bot writes it, and its one conversation is not forked.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from iota.bots import bot as bots
from iota.errors import BotError, IotaError
from iota.sessions.bundle import Session
from iota.sessions.listing import resolve_session
from iota.sessions.manage import fork_bundle


def resumed_session(args: argparse.Namespace, pick: Callable[[str], Path] | None = None) -> Session:
    """The session `iota resume` continues, open and locked: the one named (`pick(question)`
    chooses when none is), or with `--fork` a new session under it holding its visible context."""
    if args.id:
        bundle = resolve_session(args.id, include_archived=args.all)
    elif pick is not None:
        bundle = pick("Fork which session?" if args.fork else "Resume which session?")
    else:
        raise IotaError("no session to resume")
    if not args.fork:
        bots.check_not_bot_session(bundle.name)
        return Session.open(bundle)
    bot = bots.owning_bot(bundle.name)
    if bot is not None:
        raise BotError(f"session {bundle.name} is bot {bot}'s one conversation; a bot's session cannot be forked")
    return fork_bundle(bundle)
