"""One headless turn: `iota run <agent> -m "…"` and `iota resume <id> -m "…"`.

The reply goes to stdout and nothing else does; notes go to stderr. A plain `-m` run saves
nothing. A resumed session gets the new turn appended, in one batch, only when the turn
succeeded. Tools that need approval are refused with a result the model reads (there is no
one to ask), and stderr says what was refused, in full; background jobs are killed when the run
ends.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import sys
from contextlib import AbstractAsyncContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from iota.config import entries, settings
from iota.agent import Approvals, Turn, run_turn
from iota.chat import ChatSetup, prepare_chat
from iota.errors import EXIT_OK, SessionError
from iota.hosts import Host, detect, host_lines
from iota.messages import SYSTEM, USER, Message
from iota.tools.base import ApprovalRequest
from iota.tools.modes import ASK, PLAN, PLAN_NOTICE
from ui.widgets.controls import escape_controls

if TYPE_CHECKING:
    from iota.sessions.bundle import Session


def run_headless(args: argparse.Namespace, loaded: settings.Config, message: str) -> int:
    cwd = Path.cwd()
    bundle = None
    if args.command == "resume":
        from ui.commands.resumed import resumed_session  # a plain -m run saves nothing: none of this is needed for it

        bundle = resumed_session(args)
        if args.fork:
            print(f"Forked session {bundle.meta.get('parent')} as {bundle.id}", file=sys.stderr)
        for warning in bundle.view.warnings:
            print(f"Warning: {warning}", file=sys.stderr)
        agent_name = bundle.meta.get("agent") or "default"
    else:
        agent_name = args.agent
    try:
        agent = settings.find_agent(loaded, agent_name) if args.command == "run" else (
            loaded.agents.get(agent_name) or entries.AgentConfig(name=agent_name, model=None))
        setup = prepare_chat(loaded, agent, cwd, model_override=args.model, system_override=args.system,
                             mcp_flags=args.mcp,
                             replay=bundle.meta if bundle else None, interactive=False)
        setup.host_lines = host_lines(detect(os.environ))
        # An agent's own memory, scoped by the session resumed (none: a plain -m run). Its
        # modules load only for an agent that has one.
        if setup.mode == "agent":
            from iota.memory.agent import agent_memory

            memory = agent_memory(agent.name, setup.project_root, bundle)
            if memory is not None:
                for warning in memory.refresh():
                    print(f"Warning: {warning}", file=sys.stderr)
                setup.memory_block = memory.prompt()
        setup.provider()  # a missing key is reported before anything starts
        history = [m for m in bundle.view.messages if m.role != SYSTEM] if bundle else []
        stored = [m.content for m in bundle.view.messages if m.role == SYSTEM] if bundle else []
        if stored and args.system is None:  # a resumed session replays its own system prompt
            setup.instructions = stored[-1]
        if bundle is not None:
            print(f"Resumed session {bundle.id} ({bundle.meta.get('message_count', 0)} messages)", file=sys.stderr)
        if bundle is not None and bundle.view.left_out:
            history = _what_fits(bundle, history, setup.model.context_window)
        mode = args.mode or ASK  # what this command line chose; a saved session's mode is the chat's
        if mode == PLAN:  # the model is told it is planning, as a chat's notice tells it
            history = [*history, Message(USER, content=PLAN_NOTICE, notice=True)]
        gc.freeze()  # the start-up's objects (ui.commands.run): the collector, back on, skips them
        gc.enable()
        turn = trio.run(_one_turn, setup, history, message, args.max_turns, mode)
        if bundle is not None:
            try:
                bundle.append([Message(USER, content=message), *turn.messages])
                if not bundle.meta.get("title"):  # a -m run makes no title pass: the opening words name it
                    from iota.titles import fallback_title

                    bundle.update_meta(touch=False, title=fallback_title([*history, Message(USER, content=message)]))
            except SessionError as error:
                print(f"Warning: the turn was not saved: {error}", file=sys.stderr)
    finally:
        if bundle is not None:
            bundle.close()
    _print_reply(args, setup, turn, bundle)
    return EXIT_OK


def _what_fits(bundle: Session, history: list[Message], window: int) -> list[Message]:
    """A session opened from the tail of a log too long to send: a headless turn cannot ask to
    compact, so it sends the newest rounds that fit the model's window, and says so."""
    from iota.compaction.meter import fitting_tail, normal_threshold

    history, left_out = fitting_tail(history, bundle.view.left_out, normal_threshold(window))
    print(f"Warning: session {bundle.id} was never compacted and is too long to send: {left_out:,} earlier "
          f"messages were not sent (`iota resume {bundle.id}` offers to compact it)", file=sys.stderr)
    return history


async def _one_turn(setup: ChatSetup, history: list[Message], message: str, max_turns: int, mode: str) -> Turn:
    """The turn, under a watch for SIGINT, SIGTERM and SIGHUP: each cancels it, so everything it
    opened closes as on any cancellation (bounded: no cleanup waits on a server that never
    answers), and the run then ends as interrupted (exit 130)."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        async with trio.open_nursery() as nursery:
            stopped = trio.Event()

            async def stop_on_a_signal() -> None:
                async for _ in signals:
                    stopped.set()
                    nursery.cancel_scope.cancel()
                    return

            nursery.start_soon(stop_on_a_signal)
            turn = await _the_turn(setup, history, message, max_turns, mode)
            nursery.cancel_scope.cancel()
    if stopped.is_set():
        raise KeyboardInterrupt
    return turn


async def _the_turn(setup: ChatSetup, history: list[Message], message: str, max_turns: int, mode: str) -> Turn:
    turn = Turn()
    async with _host_reporting(detect(os.environ)), setup.open_tools() as toolbox:
        for warning in setup.warnings:  # a sandbox that is unavailable, an MCP server that failed
            print(f"Warning: {warning}", file=sys.stderr)
        request = setup.request(history + [Message(USER, content=message)], toolbox)
        try:
            approvals = Approvals(ask=None, on_refused=_note_refusal, mode=mode)
            await run_turn(turn, setup.provider(), request, toolbox, approvals,
                           max_turns=max_turns)
        finally:
            await setup.aclose()
    return turn


def _host_reporting(host: Host) -> AbstractAsyncContextManager[object]:
    """herdr's pane or cmux's row shows the run working. A headless run tells the terminal (and
    so tmux) nothing, so in neither host there is nothing to tell, and the notifier is not even
    imported."""
    if host.name is None:
        return nullcontext()
    from actors.notifier import host_reporting

    return host_reporting(host)


def _note_refusal(request: ApprovalRequest) -> None:
    """What a gated call asked for, whole and escaped: the person reads it after the run."""
    print(f"Refused (a -m run cannot ask): {escape_controls(request.question)}", file=sys.stderr)
    for line in escape_controls(request.detail).splitlines():
        print(f"  {line}", file=sys.stderr)


def _print_reply(args: argparse.Namespace, setup: ChatSetup, turn: Turn, bundle) -> None:
    if args.output_format == "json":
        usage = turn.messages[-1].usage if turn.messages and turn.messages[-1].usage else None
        print(json.dumps({
            "reply": turn.reply,
            "model": setup.model.name,
            "session": bundle.id if bundle is not None else None,
            "model_calls": turn.model_calls,
            "usage": usage.to_record() if usage else None,
        }, ensure_ascii=False))
    else:
        print(turn.reply)
