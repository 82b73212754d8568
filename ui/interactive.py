"""`iota run <agent>` and `iota resume <id>` in a terminal: put the chat's parts together and
run it under the supervisor with the urwid app as its face.

Everything here is quick (the config is loaded, the session's lock taken, its view read from the
last compaction on); the slow parts — the Anthropic SDK import, the sandbox probe — run behind
the first screen.
"""

from __future__ import annotations

import argparse
import math
import os
from datetime import datetime
from pathlib import Path

import trio

from actors.commands import COMMANDS, resume_opening
from actors.compactor import CompactionOffer
from actors.events import Card, Choose, SlashCommands
from actors.supervisor import ChatParts, run_chat
from iota import __version__, paths
from iota import config as config_module
from iota.chat import ChatSetup, prepare_chat
from iota.config import Config
from iota.conversation import Conversation
from iota.errors import IotaError, NotYetError
from iota.hosts import detect, host_lines
from iota.session import Session, list_sessions, resolve_session, session_label
from ui.app import ChatApp


def run_interactive(args: argparse.Namespace, loaded: Config) -> int:
    cwd = Path.cwd()
    if args.command == "resume":
        session = Session.open(resolve_session(args.id) if args.id else _pick_session())
        agent_name = session.meta.get("agent") or "default"
        agent = loaded.agents.get(agent_name) or config_module.AgentConfig(name=agent_name)
    else:
        agent = config_module.find_agent(loaded, args.agent)
        session = None
    if agent.mode == "bot":
        raise NotYetError(f"bot mode is not built yet: agents.{agent.name} has mode: bot")
    conversation = None
    try:
        setup = prepare_chat(loaded, agent, cwd, model_override=args.model, system_override=args.system,
                             replay=session.meta if session else None)
        host = detect(os.environ)
        setup.host_lines = host_lines(host)
        if session is None and not (args.no_save or agent.no_save):
            session = Session.new(_bucket(setup), **_meta(setup))
        if session is not None and session.on_disk:
            conversation = Conversation.from_session(session)
            opening = resume_opening(session, conversation)
            label = f"resumed {session.id}"
        else:
            conversation = Conversation(session=session, instructions=setup.instructions)
            opening = []
            label = f"session {session.id}" if session else "not saved"
        commands = {name: entry for name, entry in COMMANDS.items() if name != "skills" or setup.mode != "chat"}
        parts = ChatParts(host=host, write_terminal=_write_terminal, setup=setup, conversation=conversation, card=_card(setup, label, host.name), commands=commands,
                          opening=[SlashCommands(tuple((f"/{name}", help) for name, (help, _) in commands.items())),
                                   *opening],
                          background=_background(setup), before_send=CompactionOffer())
        return trio.run(run_chat, parts, ChatApp().run)
    finally:
        if session is not None:
            session.close()
        if conversation is not None and conversation.session is not None:  # after a /session switch
            conversation.session.close()


def _pick_session() -> Path:
    """`iota resume` with no id: choose among the saved sessions, newest first."""
    now = datetime.now().astimezone()
    infos = list_sessions()
    if not infos:
        raise IotaError("no session to resume")
    index = trio.run(_choose_once, "Resume which session?", tuple(session_label(i, now) for i in infos))
    if index is None:
        raise IotaError("no session to resume")
    return infos[index].dir


async def _choose_once(title: str, options: tuple[str, ...]) -> int | None:
    """Show one select in the terminal app and return the answer (None for Esc)."""
    events_send, events_receive = trio.open_memory_channel(math.inf)
    inputs_send, inputs_receive = trio.open_memory_channel(math.inf)
    reply_send, reply_receive = trio.open_memory_channel(1)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ChatApp().run, events_receive, inputs_send)
        events_send.send_nowait(Choose(title, options, reply_send))

        async def leave_on_interrupt() -> None:
            async for _ in inputs_receive:  # Ctrl+C, Ctrl+D: nothing chosen
                reply_send.send_nowait(None)
                return

        nursery.start_soon(leave_on_interrupt)
        answer = await reply_receive.receive()
        nursery.cancel_scope.cancel()
    return answer


async def _write_terminal(data: bytes) -> None:
    """The host's escape sequences go straight to the terminal, between urwid's redraws (both
    write from this thread, so neither splits the other)."""
    os.write(1, data)


def _bucket(setup: ChatSetup) -> Path:
    return paths.project_sessions_dir(setup.project_root) if setup.mode == "agent" else paths.sessions_dir()


def _meta(setup: ChatSetup) -> dict:
    model = setup.model
    return dict(provider=model.provider.name, model=model.id, temperature=model.temperature, top_p=model.top_p,
                context_window=model.context_window, effort=model.effort, cwd=str(setup.project_root),
                agent=setup.agent.name)


def _card(setup: ChatSetup, session_label: str, host: str | None) -> Card:
    directory = str(setup.project_root if setup.mode in ("agent", "bot") else setup.cwd)
    return Card(version=__version__, mode=setup.mode, session=session_label, host=host, directory=directory,
                warnings=tuple(setup.warnings))


def _background(setup: ChatSetup) -> list:
    if setup.model.provider.type != "anthropic":
        return []
    from iota.providers import preload_anthropic

    return [preload_anthropic]
