"""`iota sessions …`: filing saved sessions from the command line.

    iota sessions [--all]                      the tree, as `iota list sessions --tree` prints it
    iota sessions rename <id> <title…>         give it a title
    iota sessions archive <id>                 hide it from the lists, the pickers and resume's prefixes
    iota sessions unarchive <id>               show it again
    iota sessions parent <id> <parent-id>      put it under another session in the tree
    iota sessions unparent <id>                move it to the top of the tree

An id is any unique prefix, archived sessions included. A session open in another iota process
is refused, naming the pid that holds it (iota.sessions.manage). A bot's session is left alone:
it keeps the bot's name and stands apart from other agents' trees. Nothing is deleted here: the
chat's `/session` does that, and asks about the sessions under the one deleted.
"""

from __future__ import annotations

import argparse
from datetime import datetime

from iota.errors import EXIT_OK, BotError

ACTIONS = ("rename", "archive", "unarchive", "parent", "unparent")


def add_sessions_parser(commands: argparse._SubParsersAction) -> None:
    sessions = commands.add_parser("sessions", help="show the session tree; rename, archive or move a session")
    sessions.add_argument("--all", action="store_true", help="archived sessions too")
    actions = sessions.add_subparsers(dest="sessions_command", metavar="{" + ",".join(ACTIONS) + "}")
    rename = actions.add_parser("rename", help="give a session a title")
    rename.add_argument("id")
    rename.add_argument("title", nargs="+")
    for name, help in (("archive", "hide a session (its data are kept)"), ("unarchive", "show an archived session again"),
                       ("unparent", "move a session to the top of the tree")):
        actions.add_parser(name, help=help).add_argument("id")
    parent = actions.add_parser("parent", help="put a session under another one")
    parent.add_argument("id")
    parent.add_argument("parent_id")


def sessions_command(args: argparse.Namespace) -> int:
    from iota.bots import bot as bots
    from iota.sessions import manage
    from iota.sessions.listing import list_sessions
    from iota.sessions.listing import SessionInfo
    from iota.sessions.listing import resolve_session
    from iota.text import clean_title
    from iota.sessions.tree import format_session_tree

    action = args.sessions_command
    if action is None:
        print(format_session_tree(list_sessions(include_archived=args.all), datetime.now().astimezone()))
        return EXIT_OK
    bundle = resolve_session(args.id, include_archived=True)
    _refuse_bot_session(bots, bundle.name)
    if action == "rename":
        title = manage.rename(bundle, " ".join(args.title))
        print(f"Renamed session {bundle.name}: {title}")
    elif action in ("archive", "unarchive"):
        manage.archive(bundle, action == "archive")
        print(f"Archived session {bundle.name}: hidden from iota list sessions and the pickers (--all shows it)"
              if action == "archive" else f"Unarchived session {bundle.name}")
    elif action == "parent":
        parent = resolve_session(args.parent_id, include_archived=True)
        _refuse_bot_session(bots, parent.name)
        manage.set_parent(bundle, parent.name)
        title = clean_title(SessionInfo.read(parent).title)
        print(f"Session {bundle.name} is now under {parent.name}" + (f" ({title})" if title else ""))
    else:
        manage.set_parent(bundle, "")
        print(f"Session {bundle.name} is now at the top of the tree")
    return EXIT_OK


def _refuse_bot_session(bots, session_id: str) -> None:
    bot = bots.owning_bot(session_id)
    if bot is not None:
        raise BotError(f"session {session_id} is bot {bot}'s one conversation; it keeps the bot's name and place")
