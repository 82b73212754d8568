"""`iota run <agent>` and `iota resume <id>` in a terminal: put the chat's parts together and
run it under the supervisor with the urwid app as its face.

Everything here is quick (the config is loaded, the session's lock taken, its view read from the
last compaction on); the slow parts — the Anthropic SDK import, the sandbox probe — run behind
the first screen.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import trio

from actors.commands import COMMANDS
from actors.compactor import CompactionOffer
from actors.events import Card, Notice, SlashCommands, TextDelta, TurnEnded, UserEcho
from actors.supervisor import ChatParts, run_chat
from iota import __version__, paths
from iota import config as config_module
from iota.chat import ChatSetup, prepare_chat
from iota.config import Config
from iota.conversation import Conversation
from iota.errors import NotYetError
from iota.messages import ASSISTANT, USER
from iota.session import Session, repair_tail, resolve_session
from ui.app import ChatApp

ECHOED_ROUNDS = 3


def run_interactive(args: argparse.Namespace, loaded: Config) -> int:
    cwd = Path.cwd()
    if args.command == "resume":
        if not args.id:
            raise NotYetError("the session picker is not built yet: name the session, e.g. "
                              "`iota resume <id>` (ids are in `iota list sessions`)")
        session = Session.open(resolve_session(args.id))
        agent_name = session.meta.get("agent") or "default"
        agent = loaded.agents.get(agent_name) or config_module.AgentConfig(name=agent_name)
    else:
        agent = config_module.find_agent(loaded, args.agent)
        session = None
    if agent.mode == "bot":
        raise NotYetError(f"bot mode is not built yet: agents.{agent.name} has mode: bot")
    try:
        setup = prepare_chat(loaded, agent, cwd, model_override=args.model, system_override=args.system,
                             replay=session.meta if session else None)
        if session is None and not (args.no_save or agent.no_save):
            session = Session.new(_bucket(setup), **_meta(setup))
        if session is not None and session.on_disk:
            conversation = Conversation.from_session(session)
            opening = _resume_opening(session, conversation)
            label = f"resumed {session.id}"
        else:
            conversation = Conversation(session=session, instructions=setup.instructions)
            opening = []
            label = f"session {session.id}" if session else "not saved"
        commands = {name: entry for name, entry in COMMANDS.items() if name != "skills" or setup.mode != "chat"}
        parts = ChatParts(setup=setup, conversation=conversation, card=_card(setup, label), commands=commands,
                          opening=[SlashCommands(tuple((f"/{name}", help) for name, (help, _) in commands.items())),
                                   *opening],
                          background=_background(setup), before_send=CompactionOffer())
        return trio.run(run_chat, parts, ChatApp().run)
    finally:
        if session is not None:
            session.close()


def _bucket(setup: ChatSetup) -> Path:
    return paths.project_sessions_dir(setup.project_root) if setup.mode == "agent" else paths.sessions_dir()


def _meta(setup: ChatSetup) -> dict:
    model = setup.model
    return dict(provider=model.provider.name, model=model.id, temperature=model.temperature, top_p=model.top_p,
                context_window=model.context_window, effort=model.effort, cwd=str(setup.project_root),
                agent=setup.agent.name)


def _card(setup: ChatSetup, session_label: str) -> Card:
    directory = str(setup.project_root if setup.mode in ("agent", "bot") else setup.cwd)
    return Card(version=__version__, mode=setup.mode, session=session_label, host=None, directory=directory,
                warnings=tuple(setup.warnings))


def _background(setup: ChatSetup) -> list:
    if setup.model.provider.type != "anthropic":
        return []
    from iota.providers import preload_anthropic

    return [preload_anthropic]


def _resume_opening(session: Session, conversation: Conversation) -> list:
    """What a resumed chat shows first: the repair of an interrupted tail, the last rounds, and
    `Resumed session <id> (<n> messages)`."""
    repaired = repair_tail(conversation.messages)
    if repaired:
        conversation.keep(repaired)
    events: list = []
    messages = conversation.messages
    starts = [i for i, m in enumerate(messages) if m.role == USER and not m.notice]
    for index in starts[-ECHOED_ROUNDS:]:
        events.append(UserEcho(messages[index].content))
        end = next((i for i in starts if i > index), len(messages))
        for message in messages[index + 1:end]:
            if message.role == ASSISTANT and message.content:
                events.append(TextDelta(message.content))
        events.append(TurnEnded(interrupted=any(m.interrupted for m in messages[index + 1:end])))
    events.append(Notice(f"Resumed session {session.id} ({session.meta.get('message_count', 0)} messages)"))
    if repaired:
        events.append(Notice(f"{len(repaired)} tool call(s) left unanswered by the last run were answered as "
                             "interrupted"))
    return events
