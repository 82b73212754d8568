"""`iota run` and `iota resume`: check the flags, then hand over to a headless turn or the chat.

The flag rules live here, in one place, because they are the same for both commands:

    -m with --no-save                 flag --no-save is not supported in headless mode
    --no-save with iota resume        --no-save cannot be combined with iota resume
    iota resume -m without an id      iota resume needs a session id with -m (the picker is interactive)
    no -m and no terminal             interactive mode requires a terminal; use -m/--message for piped input
    -m or --no-save on a bot          refused (iota.bots.bot.check_bot_run), as is an entry that cannot be a bot
    a chat without -m, confined       refused: an iota a sandboxed iota started runs headless (iota.sandbox.confinement)

In a terminal, errors that need no config (a resume id that matches nothing, a session or a bot
open in another process) are said before any screen; then a first frame of plain ANSI is drawn
(ui.first_frame) and the chat's modules are imported behind it (ui.commands.interactive).

`iota resume --fork <id>` and `--all`: see ui.commands.resumed.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from functools import partial
from pathlib import Path

from iota import __version__
from iota.errors import IotaError


def run_command(args: argparse.Namespace) -> int:
    from ui.commands.shared import load_config

    resuming = args.command == "resume"
    if args.message is not None:
        if args.no_save:
            raise IotaError("flag --no-save is not supported in headless mode")
        if resuming and not args.id:
            raise IotaError("iota resume needs a session id with -m (the picker is interactive): "
                            "try `iota list sessions`")
        message = sys.stdin.read() if args.message == "-" else args.message
        if not message.strip():
            raise IotaError("--message must not be empty")
        # The start-up allocates some 100,000 objects (modules, classes, the config) and leaves
        # almost no cyclic garbage: the collector's ~70 passes over them cost ~12 ms of a ~250 ms
        # turn. It is off until everything is imported, then what was loaded is frozen (never
        # scanned again) and it is back on for the turn (ui.commands.headless).
        gc.disable()
        try:
            config = load_config(args, write_starter=True)
            if not resuming:
                _check_bot_flags(args, config)
            from ui.commands.headless import run_headless

            return run_headless(args, config, message)
        finally:
            gc.enable()
    if resuming and args.no_save:
        raise IotaError("--no-save cannot be combined with iota resume")
    from iota.sandbox.confinement import HEADLESS_ONLY, Confinement  # a -m turn loads it with the config

    confinement = Confinement.from_environment(os.environ)
    if confinement is not None:  # started by a sandboxed iota's command: there is nobody to ask
        raise confinement.refuse(HEADLESS_ONLY)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        # Say first what is wrong with the config or the bot, then that a terminal is needed.
        config = load_config(args, write_starter=True)
        if not resuming:
            _check_bot_flags(args, config)
        raise IotaError("interactive mode requires a terminal; use -m/--message for piped input")
    # In a terminal nothing heavy is imported before the first screen: the config is loaded,
    # and a bot checked (iota.bots.bot.check_bot_run / check_bot), behind it. Even trio and
    # urwid load behind a first frame of plain ANSI (ui.first_frame).
    _write_starter_if_first_run(args)
    _refuse_before_the_screen(args)
    from ui.first_frame import FirstFrame  # the terminal's side of the chat: a -m turn has none

    frame = FirstFrame.draw(__version__)
    try:
        from ui.commands.interactive import run_interactive

        return run_interactive(args, frame)
    finally:
        if frame is not None:
            frame.close(taken=False)  # if the chat did not get as far as closing it


def _write_starter_if_first_run(args: argparse.Namespace) -> None:
    """The first run with no config anywhere writes the starter, and says so before the screen
    is taken over."""
    from iota import paths
    from iota.config import starter

    if args.config is None and not paths.user_config_path().exists() and \
            not paths.project_config_path(Path.cwd()).exists():
        print(starter.write_starter(paths.user_config_path()), file=sys.stderr)


def _refuse_before_the_screen(args: argparse.Namespace) -> None:
    """Errors that need no config are raised before the screen is taken, so they are printed
    without the chat flashing up first: a resume id that matches no session (or several), a
    session open in another process, a bot another process runs. Each only looks; the real
    checks run again when the chat opens."""
    from iota import paths
    from iota.sessions import locking

    if args.command == "resume" and args.id:
        from iota.sessions.bundle import lock_bundle
        from iota.sessions.listing import resolve_session

        bundle = resolve_session(args.id, include_archived=args.all)
        if not args.fork:  # a fork only reads the session it starts from
            lock_bundle(bundle).release()
    elif args.command == "run":
        lock = paths.bots_dir() / args.agent / "lock"
        if lock.is_file():
            locking.acquire(lock, partial(_bot_refusal, args.agent)).release()


def _bot_refusal(bot: str, pid: int | None) -> str:
    from iota.bots.bot import lock_refusal  # imported only to say no: it is not light

    return lock_refusal(bot, pid)


def _check_bot_flags(args: argparse.Namespace, config) -> None:
    """A bot refuses -m and --no-save, and an entry that cannot be a bot is refused, before
    anything else happens (and before any file of the bot's is created)."""
    from iota.config import settings

    agent = settings.find_agent(config, args.agent)
    if agent.mode != "bot":
        return
    from iota.bots import bot as bots
    bots.check_bot_run(agent.name, headless=args.message is not None, no_save=args.no_save)
    bots.check_bot(agent, settings.resolve_model(config, agent, args.model))

