"""`iota run <agent>` and `iota resume <id>` in a terminal.

The first screen is drawn before anything heavy is imported: a first frame of plain ANSI
(ui.first_frame, drawn by ui.commands.run before even trio and urwid are imported), then urwid's,
whose card shows what is known (the directory), and the config, the session and the chat's modules load in a worker thread behind
it (asking first whether to trust a project's `.iota.yaml` that wants risky things); then the
card is redrawn with the mode and the session, and the chat runs under the supervisor on the
app's channels. What the first reply needs (the Markdown parser; for Bedrock and Vertex the
signing library) loads behind that again, while the person types. Keys typed before the first
screen are kept (ui.app.ChatTerminal).
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
from contextlib import ExitStack
from functools import partial
from pathlib import Path

import trio

from actors.events import Card, Choose
from iota import __version__
from iota.errors import EXIT_INTERRUPTED
from ui.app import ChatApp
from ui.first_frame import FirstFrame


def run_interactive(args: argparse.Namespace, frame: FirstFrame | None) -> int:
    """The chat, on the terminal `frame` (ui.first_frame) was drawn on."""
    app = ChatApp(typed_ahead=frame.take_over if frame is not None else b"")
    try:
        return trio.run(_draw_then_run, args, app)
    finally:
        if frame is not None:
            frame.close(taken=app.shown)
        # The app's screen is gone: its last screen stays in the terminal, with how to go on.
        sys.stdout.write(app.farewell())
        sys.stdout.flush()


async def _draw_then_run(args: argparse.Namespace, app: ChatApp) -> int:
    events_send, events_receive = trio.open_memory_channel(math.inf)
    inputs_send, inputs_receive = trio.open_memory_channel(math.inf)
    exit_code = EXIT_INTERRUPTED  # what a SIGTERM or SIGHUP leaves, before the chat runs or twice in it
    async with trio.open_nursery() as nursery:
        nursery.start_soon(app.run, events_receive, inputs_send)
        events_send.send_nowait(Card(version=__version__, mode="", session="starting…", host=None,
                                     directory=str(Path.cwd())))
        choose = partial(trio.from_thread.run, _choose_once, events_send)
        with ExitStack() as cleanup:
            # The chat watches the signals once it runs; while it loads, this does: a signal
            # stops the start, and the terminal is given back as always.
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP) as signals:
                async with trio.open_nursery() as loading:
                    loading.start_soon(_cancel_on_signal, signals, nursery.cancel_scope)
                    parts = await trio.to_thread.run_sync(_load, args, cleanup, choose)
                    loading.cancel_scope.cancel()
            from actors.supervisor import ExitStatus, run_chat_on

            exit_status = ExitStatus()
            await run_chat_on(parts, events_send, inputs_receive, nursery.cancel_scope, exit_status)
            exit_code = exit_status.code
        nursery.cancel_scope.cancel()
    return exit_code


async def _cancel_on_signal(signals, everything: trio.CancelScope) -> None:
    async for _ in signals:
        everything.cancel()
        return


async def _choose_once(events: trio.MemorySendChannel, title: str, options: tuple[str, ...],
                       search: tuple[str, ...] = ()) -> int | None:
    reply_send, reply_receive = trio.open_memory_channel(1)
    events.send_nowait(Choose(title, options, reply_send, search=search))
    return await reply_receive.receive()


def _load(args: argparse.Namespace, cleanup: ExitStack, choose):
    """Load the config and open the chat (in a worker thread, behind the first screen). A project
    file not yet trusted is asked about first: until the answer, the load has left out its risky
    entries, so no server of it has started and no provider of it has been contacted."""
    from iota.config import settings
    from ui.chat_parts import open_chat, settle_project_trust

    def load():
        return settings.load(Path.cwd(), args.config)

    loaded = settle_project_trust(load(), choose, load)
    return open_chat(args, loaded, cleanup, choose, config_warnings=loaded.warnings)
