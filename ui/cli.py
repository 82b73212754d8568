"""The `iota` command: argument parsing, dispatch, and the one place errors become exit codes.

    iota                          run agents.default
    iota run [agent] [-m TEXT]    an interactive chat, or one headless turn with -m
    iota resume [id] [-m TEXT]    reopen a saved session (--fork: in a new child of it; --all: archived too)
    iota list [agents|models|providers|sessions] [--tree] [--all]
    iota sessions [rename|archive|unarchive|parent|unparent]
    iota config [check|path|init]
    iota mcp [add|list|get|remove|login|logout]
    iota search <words> [--agent NAME] [--since 7d]
    iota agents show <name>
    iota bots [new <name>|watch|show <name>|rm <name>|reindex <name>|export <name> [FILE]|import FILE [--name NEW]]
    iota version

An `IotaError` prints `Error: <message>` on stderr and exits 1; an interrupted run exits 130;
argparse's own usage errors exit 2. Imports of anything heavy happen inside the command that
needs it, so `iota version` and the first screen of a chat stay fast.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from iota import __version__
from iota.errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, IotaError
from iota.tools.modes import MODES

COMMANDS = ("run", "resume", "list", "sessions", "config", "mcp", "search", "agents", "bots", "version")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or with `only` set the top level and that one command: argparse
    builds a parser in about a tenth of a millisecond per option (each help text goes through
    gettext), and the whole tree of commands costs 15–20 ms a headless turn does not need."""
    parser = argparse.ArgumentParser(prog="iota", description="A terminal AI agent.")
    parser.add_argument("-V", "--version", action="version", version=f"iota {__version__}")
    parser.add_argument("-c", "--config", type=Path, help="read this config file alone")
    # The usage names every command even when one alone is built (an unknown option after
    # `iota run` is reported with the top level's usage).
    commands = parser.add_subparsers(dest="command", metavar="{" + ",".join(COMMANDS) + "}")

    def wanted(command: str) -> bool:
        return only is None or only == command

    def add_chat_flags(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("-m", "--message", help="send one message headless and print the reply (- reads stdin)")
        sub.add_argument("-M", "--model", help="the model to use, by name or provider:id")
        sub.add_argument("-s", "--system", help="the system prompt for this run")
        sub.add_argument("--mcp", action="append", default=[], help="add an MCP server (command line or URL)")
        sub.add_argument("--no-save", action="store_true", help="start without saving (interactive only)")
        sub.add_argument("--max-turns", type=int, default=0, help="with -m: stop after N model calls (0 = no limit)")
        sub.add_argument("--output-format", choices=("text", "json"), default="text", help="with -m: text or json")
        sub.add_argument("--mode", choices=MODES, help="the permission mode: ask (the config as written), "
                         "auto-edit (file changes without asking) or plan (read-only)")
        sub.add_argument("-c", "--config", type=Path, default=argparse.SUPPRESS, help="read this config file alone")

    if wanted("run"):
        run = commands.add_parser("run", help="start a chat with an agent")
        run.add_argument("agent", nargs="?", default="default")
        add_chat_flags(run)
    if wanted("resume"):
        resume = commands.add_parser("resume", help="reopen a saved session")
        resume.add_argument("id", nargs="?")
        resume.add_argument("--fork", action="store_true",
                            help="continue in a new session under this one, from its context")
        resume.add_argument("--all", action="store_true", help="archived sessions too")
        add_chat_flags(resume)
    if wanted("list"):
        listing = commands.add_parser("list", help="list agents, models, providers or sessions")
        listing.add_argument("what", nargs="?", default="agents",
                             choices=("agents", "models", "providers", "sessions"))
        listing.add_argument("agent", nargs="?", help="with models: the models this agent can use")
        listing.add_argument("--tree", action="store_true",
                             help="with sessions: as a tree, children under their parent")
        listing.add_argument("--all", action="store_true", help="with sessions: archived sessions too")
        listing.add_argument("-c", "--config", type=Path, default=argparse.SUPPRESS)
    if wanted("sessions"):
        from ui.commands.sessions import add_sessions_parser

        add_sessions_parser(commands)
    if wanted("config"):
        config = commands.add_parser("config", help="check, locate or create the config file")
        config.add_argument("action", nargs="?", default="check", choices=("check", "path", "init"))
        config.add_argument("-c", "--config", type=Path, default=argparse.SUPPRESS)
    if wanted("mcp"):
        from ui.commands.mcp import add_mcp_parser

        add_mcp_parser(commands)
    if wanted("search"):
        from ui.commands.search import add_search_parser

        add_search_parser(commands)
    if wanted("agents"):
        from ui.commands.agents import add_agents_parser

        add_agents_parser(commands)
    if wanted("bots"):
        from ui.commands.bots import add_bots_parser

        add_bots_parser(commands)
    if wanted("version"):
        commands.add_parser("version", help="print the version")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        return dispatch(args)
    except IotaError as error:
        print(f"Error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except ImportError as error:
        # A Python built without OpenSSL (or with a broken one) fails deep in an import of trio or
        # httpx; the person needs to know which Python to fix, not where it failed.
        if error.name not in ("ssl", "_ssl"):
            raise
        print(f"Error: this Python ({sys.executable}) cannot load its ssl module ({error}); iota needs it: "
              "install a Python built with OpenSSL", file=sys.stderr)
        return EXIT_ERROR
    except BaseExceptionGroup as group:
        # trio's nurseries wrap what their tasks raise; an error of ours inside is still ours.
        interrupted, rest = group.split(KeyboardInterrupt)
        if interrupted is not None and rest is None:
            return EXIT_INTERRUPTED
        ours, rest = group.split(IotaError)
        if ours is None or rest is not None:
            raise
        print(f"Error: {_first(ours)}", file=sys.stderr)
        return EXIT_ERROR


def parse(argv: list[str]) -> argparse.Namespace:
    """The command line; a bare `iota` with `iota run`'s flags (`iota --no-save`) is `iota run`.
    A command line that starts with its command (`iota run coder -m …`) is read by a parser of
    that command alone, which reads it the same: the top level's options come before the command."""
    parser = build_parser(only=argv[0] if argv and argv[0] in COMMANDS else None)
    args, unknown = parser.parse_known_args(argv)
    if unknown and args.command is None:
        return parser.parse_args(["run", *argv])
    return parser.parse_args(argv)


def _first(group: BaseExceptionGroup) -> BaseException:
    while isinstance(group, BaseExceptionGroup):
        group = group.exceptions[0]
    return group


def dispatch(args: argparse.Namespace) -> int:
    command = args.command or "run"
    if command == "version":
        print(f"iota {__version__}")
        return EXIT_OK
    if command == "config":
        from ui.commands.config import config_command

        return config_command(args)
    if command == "list":
        from ui.commands.listing import list_command

        return list_command(args)
    if command == "mcp":
        from ui.commands.mcp import mcp_command

        return mcp_command(args)
    if command == "search":
        from ui.commands.search import search_command

        return search_command(args)
    if command == "bots":
        from ui.commands.bots import bots_command

        return bots_command(args)
    if command == "agents":
        from ui.commands.agents import agents_command

        return agents_command(args)
    if command == "sessions":
        from ui.commands.sessions import sessions_command

        return sessions_command(args)
    if command == "run" and not hasattr(args, "agent"):
        # A bare `iota`: run agents.default with no flags.
        args = build_parser(only="run").parse_args(["run", *(["-c", str(args.config)] if args.config else [])])
    from ui.commands.run import run_command  # the chat's imports are not paid by `iota list`

    return run_command(args)


if __name__ == "__main__":
    sys.exit(main())
