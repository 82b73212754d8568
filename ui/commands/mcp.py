"""`iota mcp …`: the MCP servers of the config, from the command line.

    iota mcp add <name> -- <command…> [--env NAME=VALUE]     a stdio server
    iota mcp add <name> --url <url> [--header NAME=VALUE]    a streamable-HTTP server
    iota mcp list                                            the servers a run would see
    iota mcp get <name>                                      one server, every key
    iota mcp remove <name>
    iota mcp login <name>                                    OAuth in the browser (iota.mcp.login)
    iota mcp logout <name>                                   forget the server's tokens

`add` and `remove` change the user config file (or the file given with -c), and only its
`mcp_servers:` block (iota.mcp.config_file). `list`, `get` and `login` read what a run would
load: the user file with the project file over it, or the -c file alone. The changes apply from
the next chat. Everything heavy is imported inside the command that runs.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from iota import paths
from iota.errors import EXIT_OK, ConfigError


def add_mcp_parser(commands: argparse._SubParsersAction) -> None:
    mcp = commands.add_parser("mcp", help="add, list, show or remove MCP servers; log in to one with OAuth")
    actions = mcp.add_subparsers(dest="mcp_command", required=True, metavar="{add,list,get,remove,login,logout}")
    add = actions.add_parser("add", help="add a server: NAME -- COMMAND… or NAME --url URL",
                             usage="iota mcp add NAME -- COMMAND [ARG…] | iota mcp add NAME --url URL")
    add.add_argument("name")
    # argparse cannot take options between a positional and a `--` that ends them, so what
    # follows the name is taken whole and split at `--` here (see _split_after_name).
    add.add_argument("after_name", nargs=argparse.REMAINDER, metavar="… -- COMMAND",
                     help="the command that runs a stdio server, after --")
    _add_server_options(add)
    actions.add_parser("list", help="list the configured servers")
    get = actions.add_parser("get", help="show one server")
    get.add_argument("name")
    remove = actions.add_parser("remove", help="remove a server")
    remove.add_argument("name")
    login = actions.add_parser("login", help="log in to an HTTP server with OAuth (opens the browser)")
    login.add_argument("name")
    logout = actions.add_parser("logout", help="forget an HTTP server's OAuth tokens")
    logout.add_argument("name")
    for action in (actions.choices["list"], get, remove, login, logout):
        action.add_argument("-c", "--config", type=Path, default=argparse.SUPPRESS, help="read this config file alone")


def _add_server_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="the endpoint of a streamable-HTTP server")
    parser.add_argument("--header", action="append", default=[], metavar="NAME=VALUE",
                        help="an HTTP header (repeatable)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable for a stdio server (repeatable)")
    parser.add_argument("-c", "--config", type=Path, default=argparse.SUPPRESS, help="read this config file alone")


def _split_after_name(args: argparse.Namespace) -> list[str]:
    """The server's command line; the options among what followed the name go into `args`.
    `NAME [options] -- COMMAND…`, or `NAME COMMAND…` when the command starts with no dash."""
    words = args.after_name
    if "--" in words:
        options, command = words[: words.index("--")], words[words.index("--") + 1:]
    elif words and not words[0].startswith("-"):
        options, command = [], words
    else:
        options, command = words, []
    more = argparse.ArgumentParser(prog="iota mcp add", add_help=False)
    _add_server_options(more)
    more.parse_args(options, namespace=args)
    return command


def mcp_command(args: argparse.Namespace) -> int:
    if args.mcp_command == "add":
        return _add(args)
    if args.mcp_command == "remove":
        return _remove(args)
    from ui.commands.shared import load_config

    if args.mcp_command in ("login", "logout"):
        return _login(args, load_config(args))

    loaded = load_config(args)
    print(render_list(loaded) if args.mcp_command == "list" else render_server(loaded, args.name))
    return EXIT_OK


def _add(args: argparse.Namespace) -> int:
    from iota.config import entries, starter
    from iota.mcp.config_file import add_server
    from iota.mcp.servers import endpoint

    command = _split_after_name(args)
    entry = server_entry(command, args.url, args.header, args.env)
    path = Path(args.config) if args.config is not None else paths.user_config_path()
    if not path.exists():
        print(starter.write_starter(path), file=sys.stderr)
    add_server(path, args.name, entry)
    kind = "HTTP" if args.url else "stdio"
    shown = endpoint(entries.McpServerConfig(name=args.name, **entry))
    print(f"Added MCP server {args.name} to {path} ({kind}: {shown}); it starts with the next chat")
    return EXIT_OK


def _remove(args: argparse.Namespace) -> int:
    from iota.mcp.config_file import remove_server

    path = Path(args.config) if args.config is not None else paths.user_config_path()
    remove_server(path, args.name)
    print(f"Removed MCP server {args.name} from {path}")
    return EXIT_OK


def _login(args: argparse.Namespace, loaded) -> int:
    import trio

    from iota.mcp import login
    from iota.mcp.servers import expanded

    server = loaded.mcp_servers.get(args.name)
    cwd = Path.cwd()
    if args.mcp_command == "logout":
        # The tokens can be forgotten after the entry is gone; its client secret, if any, helps
        # the authorization server revoke them.
        print(trio.run(login.logout, args.name, expanded(server, cwd) if server else None))
        return EXIT_OK
    if server is None:
        configured = ", ".join(loaded.mcp_servers) or "none"
        raise ConfigError(f'unknown MCP server "{args.name}" (configured: {configured})')
    outcome = trio.run(login.login, server, cwd, lambda line: print(line, flush=True))
    print(login.logged_in_line(args.name, outcome))
    return EXIT_OK


def server_entry(command: list[str], url: str | None, headers: list[str], env: list[str]) -> dict:
    """The config entry `iota mcp add` writes, from its flags."""
    if command and url:
        raise ConfigError("iota mcp add takes a command after -- or --url, not both")
    if not command and not url:
        raise ConfigError("iota mcp add needs a command or a URL: `iota mcp add NAME -- COMMAND…` "
                          "or `iota mcp add NAME --url URL`")
    if url:
        if env:
            raise ConfigError("--env is for stdio servers; an HTTP server takes --header")
        entry: dict = {"url": url}
        if headers:
            entry["headers"] = _pairs("--header", headers)
        return entry
    if headers:
        raise ConfigError("--header is for HTTP servers; a stdio server takes --env")
    entry = {"command": command[0]}
    if command[1:]:
        entry["args"] = command[1:]
    if env:
        entry["env"] = _pairs("--env", env)
    return entry


def _pairs(flag: str, values: list[str]) -> dict[str, str]:
    pairs = {}
    for value in values:
        name, sep, rest = value.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f'{flag} wants NAME=VALUE, got "{value}"')
        pairs[name.strip()] = rest
    return pairs


def render_list(loaded) -> str:
    from iota.mcp.servers import endpoint

    servers = loaded.mcp_servers
    if not servers:
        return "MCP servers:\n  (none: add one with `iota mcp add NAME -- COMMAND…` or `iota mcp add NAME --url URL`)"
    width = max(len(name) for name in servers)
    rows = [f"  {name.ljust(width)}  {'http' if server.url else 'stdio'} · {endpoint(server)}"
            for name, server in servers.items()]
    return "\n".join(["MCP servers:", *rows])


def render_server(loaded, name: str) -> str:
    from iota.mcp.auth import auth_mode, login_state
    from iota.mcp.servers import expanded

    server = loaded.mcp_servers.get(name)
    if server is None:
        configured = ", ".join(loaded.mcp_servers) or "none"
        raise ConfigError(f'unknown MCP server "{name}" (configured: {configured})')
    rows = [("type", "http" if server.url else "stdio")]
    if server.url:
        rows.append(("url", server.url))
        rows.extend((f"header {key}", value) for key, value in server.headers.items())
    else:
        rows.append(("command", server.command or ""))
        if server.args:
            rows.append(("args", shlex.join(server.args)))
        rows.extend((f"env {key}", value) for key, value in server.env.items())
    for key in ("auth", "client_id", "redirect_port", "defer"):
        if getattr(server, key) is not None:
            rows.append((key, str(getattr(server, key))))
    if server.url and auth_mode(server) != "none":
        try:
            state = login_state(expanded(server, Path.cwd()))
        except ConfigError:  # a variable the URL names is unset: no login can be for it
            state = "not logged in"
        if state != "not logged in" or auth_mode(server) == "oauth":  # said when it matters
            rows.append(("login", state))
    rows.append(("from", str(loaded.sources.get(f"mcp_servers.{name}", "?"))))
    width = max(len(key) for key, _ in rows)
    return "\n".join([name, *(f"  {key.ljust(width)}  {value}" for key, value in rows)])
