"""`iota bots new <name> [--model M] [--tools code,shell|none] [--unattended ask|confined|full] [-y]`:
make a bot without an editor (iota.bots.creation). Each question not answered by a flag is asked
on the terminal, with the default in brackets (Enter takes it); `-y` takes the defaults for the
rest. A wrong answer is said in one line and asked again; a name any agent has is refused before
anything is asked.

    Model for scout (gpt, claude) [gpt]:
    Toolsets:
      code   read, search and change the project's files
      shell  run commands, confined to the project by the sandbox
    Toolsets (code, shell, or none) [code,shell]:
    How unattended:
      ask       edits wait for your yes; …
      confined  edits land without a yes; … (the default)
      full      nothing waits for a yes, …
    How unattended [confined]:
    Added bot scout to ~/.iota.yaml (model gpt; code, shell; confined). Start it: iota run scout
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from iota.text import tilde
from iota.errors import EXIT_ERROR, EXIT_OK, BotError


def add_new_parser(actions: argparse._SubParsersAction) -> None:
    new = actions.add_parser("new", help="make a bot: its model, toolsets and how unattended (asks, or takes flags)")
    new.add_argument("name")
    new.add_argument("--model", help="one of the configured models (iota list models)")
    new.add_argument("--tools", help="toolsets: code,shell (the default), code, shell, or none")
    new.add_argument("--unattended", help="ask, confined (the default) or full")
    new.add_argument("-y", "--yes", action="store_true", help="take the defaults for what no flag answers")


def new_bot(loaded, args: argparse.Namespace) -> int:
    from iota import paths
    from iota.bots import creation

    config_path = Path(args.config) if getattr(args, "config", None) is not None else paths.user_config_path()
    creation.check_free(args.name, loaded, config_path)
    choices = creation.model_choices(loaded)
    if not choices:
        raise BotError(f"no models are configured; add one under models: in {config_path}")
    try:
        model = _answer(args.model, args.yes, choices[0], lambda value: creation.parse_model(value, loaded),
                        f"Model for {args.name} ({', '.join(choices)})")
        toolsets = _answer(args.tools, args.yes, ",".join(creation.DEFAULT_TOOLSETS), creation.parse_toolsets,
                           "Toolsets (code, shell, or none)", _table(creation.TOOLSETS, "Toolsets:"))
        unattended = creation.DEFAULT_UNATTENDED
        if toolsets:
            unattended = _answer(args.unattended, args.yes, creation.DEFAULT_UNATTENDED, creation.parse_unattended,
                                 "How unattended", _table(creation.UNATTENDED, "How unattended:",
                                                          default=creation.DEFAULT_UNATTENDED))
    except EOFError:
        print("\nNothing was made.")
        return EXIT_ERROR
    bot = creation.NewBot(args.name, model, toolsets, unattended)
    creation.add_bot(bot, config_path, Path.cwd())
    tools = ", ".join(toolsets) if toolsets else "no toolsets"
    how = f"; {unattended}" if toolsets else ""
    print(f"Added bot {bot.name} to {tilde(str(config_path), str(Path.home()))} (model {model}; {tools}{how}). "
          f"Start it: iota run {bot.name}")
    return EXIT_OK


def _answer(given: str | None, take_default: bool, default: str, parse: Callable[[str], object],
            question: str, explanation: str = ""):
    """The flag's value (parsed; a bad one is an error), else the default with -y, else asked until
    an answer parses (Enter takes the default)."""
    if given is not None:
        return parse(given)
    if take_default:
        return parse(default)
    if explanation:
        print(explanation)
    while True:
        print(f"{question} [{default}]: ", end="", flush=True)
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        try:
            return parse(line.strip() or default)
        except BotError as error:
            print(f"  {error}")


def _table(rows: dict[str, str], title: str, default: str | None = None) -> str:
    width = max(len(name) for name in rows)
    return "\n".join([title, *(f"  {name.ljust(width)}  {text}" + (" (the default)" if name == default else "")
                               for name, text in rows.items())])


