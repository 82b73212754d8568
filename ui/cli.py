"""The `iota` command: argument parsing, dispatch, and the one place errors become exit codes.

    iota                          run agents.default
    iota run [agent] [-m TEXT]    an interactive chat, or one headless turn with -m
    iota resume [id] [-m TEXT]    reopen a saved session
    iota list [agents|models|providers|sessions]
    iota config [check|path|init]
    iota mcp [add|list|get|remove]
    iota version

An `IotaError` prints `Error: <message>` on stderr and exits 1; an interrupted run exits 130;
argparse's own usage errors exit 2. Imports of anything heavy happen inside the command that
needs it, so `iota version` and the first screen of a chat stay fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from iota import __version__, paths
from iota.errors import IotaError
from ui.mcp_command import add_mcp_parser

EXIT_OK, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="iota", description="A terminal AI agent.")
    parser.add_argument("-V", "--version", action="version", version=f"iota {__version__}")
    parser.add_argument("-c", "--config", type=Path, help="read this config file alone")
    commands = parser.add_subparsers(dest="command")

    def add_chat_flags(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("-m", "--message", help="send one message headless and print the reply (- reads stdin)")
        sub.add_argument("-M", "--model", help="the model to use, by name or provider:id")
        sub.add_argument("-s", "--system", help="the system prompt for this run")
        sub.add_argument("--mcp", action="append", default=[], help="add an MCP server (command line or URL)")
        sub.add_argument("--no-save", action="store_true", help="start without saving (interactive only)")
        sub.add_argument("--max-turns", type=int, default=0, help="with -m: stop after N model calls (0 = no limit)")
        sub.add_argument("--output-format", choices=("text", "json"), default="text", help="with -m: text or json")
        sub.add_argument("-c", "--config", type=Path, default=argparse.SUPPRESS, help="read this config file alone")

    run = commands.add_parser("run", help="start a chat with an agent")
    run.add_argument("agent", nargs="?", default="default")
    add_chat_flags(run)
    resume = commands.add_parser("resume", help="reopen a saved session")
    resume.add_argument("id", nargs="?")
    add_chat_flags(resume)

    listing = commands.add_parser("list", help="list agents, models, providers or sessions")
    listing.add_argument("what", nargs="?", default="agents", choices=("agents", "models", "providers", "sessions"))
    listing.add_argument("agent", nargs="?", help="with models: the models this agent can use")
    listing.add_argument("-c", "--config", type=Path, default=argparse.SUPPRESS)

    config = commands.add_parser("config", help="check, locate or create the config file")
    config.add_argument("action", nargs="?", default="check", choices=("check", "path", "init"))
    config.add_argument("-c", "--config", type=Path, default=argparse.SUPPRESS)

    add_mcp_parser(commands)
    commands.add_parser("version", help="print the version")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return dispatch(args)
    except IotaError as error:
        print(f"Error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
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
        return config_command(args)
    if command == "list":
        return list_command(args)
    if command == "mcp":
        from ui.mcp_command import mcp_command

        return mcp_command(args)
    if command == "run" and not hasattr(args, "agent"):
        # A bare `iota`: run agents.default with no flags.
        args = build_parser().parse_args(["run", *(["-c", str(args.config)] if args.config else [])])
    from ui.run import run_command  # the chat's imports are not paid by `iota list`

    return run_command(args)


def load_config(args: argparse.Namespace, *, write_starter: bool = False):
    """Load the config a run would use; the first run with no config anywhere gets the starter."""
    from iota import config, starter

    cwd = Path.cwd()
    if write_starter and args.config is None:
        user_file = paths.user_config_path()
        if not user_file.exists() and not paths.project_config_path(cwd).exists():
            print(starter.write_starter(user_file), file=sys.stderr)
    loaded = config.load(cwd, args.config)
    for warning in loaded.warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    return loaded


def config_command(args: argparse.Namespace) -> int:
    from iota import starter

    if args.action == "init":
        print(starter.write_starter(args.config or paths.user_config_path()))
        return EXIT_OK
    if args.action == "path":
        if args.config is not None:
            print(os.path.abspath(args.config))
            return EXIT_OK
        cwd = Path.cwd()
        print(paths.user_config_path())
        project = paths.project_config_path(cwd)
        if project.exists():
            print(project)
        return EXIT_OK
    loaded = load_config(args)
    if args.config is not None:
        print(f"config: {loaded.explicit_file} (given with -c; the only scope)")
    else:
        print(f"user config: {loaded.user_file or '(absent)'}")
        print(f"project config: {loaded.project_file or '(absent)'}")
    print(loaded.counts())
    return EXIT_OK


def list_command(args: argparse.Namespace) -> int:
    if args.what == "sessions":
        from datetime import datetime

        from iota import session

        print(session.format_session_list(session.list_sessions(), datetime.now().astimezone()))
        return EXIT_OK
    loaded = load_config(args)
    print(render_listing(loaded, args.what, args.agent))
    return EXIT_OK


def render_listing(loaded, what: str, agent_name: str | None = None) -> str:
    from iota import config
    from iota.text import format_size

    rows: list[tuple[str, str]] = []
    if what == "agents":
        title = "Agents:"
        for name, agent in loaded.agents.items():
            details = [agent.mode, agent.model or "(no model)"]
            if agent.description:
                details.append(agent.description)
            rows.append((name, " · ".join(details)))
    elif what == "models":
        title = "Models:"
        names = list(loaded.models)
        if agent_name is not None:
            agent = config.find_agent(loaded, agent_name)
            names = [name for name in dict.fromkeys([agent.model, *agent.choices]) if name]
            title = f"Models for {agent_name}:"
        for name in names:
            model = config.resolve_model(loaded, loaded.agents.get(agent_name) or config.AgentConfig(name="-"), name)
            rows.append((name, f"{model.provider.name}:{model.id} · {format_size(model.context_window)} window"))
    else:
        title = "Providers:"
        for name, provider in loaded.providers.items():
            variable = config.ENV_KEYS[provider.type]
            key = f"key from ${variable}" if os.environ.get(variable) else "key in config" if provider.key else (
                f"no key: set {variable}")
            rows.append((name, " · ".join([provider.type, provider.url or "default url", key])))
    if not rows:
        return f"{title}\n  (none)"
    width = max(len(name) for name, _ in rows)
    return "\n".join([title, *(f"  {name.ljust(width)}  {details}" for name, details in rows)])


if __name__ == "__main__":
    sys.exit(main())
