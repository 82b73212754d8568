"""A chat's parts, put together from the config: the agent, its session (or a bot's one
session, lock and memory), the hooks of its mode, and what the card and the transcript show
first. The interactive run calls this behind its first screen, after asking whether to trust
the project's config file (`settle_project_trust`); benchmarks call it directly.
"""

from __future__ import annotations

import argparse
import os
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable

from actors.commands.registry import COMMANDS, resume_opening
from actors.commands.help import help_command
from actors.bot_work import BotWork, open_bot_work
from actors.helpers import open_helpers_notice
from actors.history import SessionHistory
from actors.compactor import BotCompactor, CompactionOffer
from actors.durables import DurablesSender
from actors.events import Card, Notice, SlashCommands
from actors.journal import JournalKeeper
from actors.lane import Lane
from actors.memory_watcher import MEMORY_HELP, MemoryWatcher
from actors.state_file import StateFileOutlet
from actors.mentions import FileListing, attach_mentions
from actors.modes import card_line, keep_mode, saved_mode, starting_mode
from actors.supervisor import ChatParts
from actors.titler import Titler
from actors.skills_watcher import SkillsWatcher
from actors.upkeep import CANDIDATES_HELP, Upkeep
from iota import __version__
from iota.bots import bot as bots
from iota.config import entries, settings, trust
from iota.chat import ChatSetup, prepare_chat
from iota.config.settings import Config
from iota.sessions.conversation import Conversation, notice
from iota.bots.journal import Journal
from iota.errors import IotaError, SessionError, SessionLocked
from iota.hosts import detect, host_lines
from iota.mcp.servers import servers_for_run
from iota.prompt import agents_files
from iota.memory.agent import agent_memory
from iota.memory.scope import session_name
from iota.memory.provenance import typed_by_person
from iota.messages import Message
from iota.sessions.bundle import Session, lock_bundle
from iota.sessions.listing import list_sessions
from iota.sessions.log import LOG_NAME
from iota.sessions.tree import tree_choices
from iota.bots.candidates import CandidateBook, end_of_log
from iota.tools.recall import Recall
from iota.tools.remember import Remember
from iota.tools.remember_candidates import CandidateActions
from iota.tools.skill_write import SkillTool
from iota.skills import bot_skills_dir
from ui.commands.resumed import resumed_session

# The card's last row in a bot: the keys to start with, as other terminal agents show them.
BOT_HINT = "/help · Ctrl+O output · Ctrl+C stop"

# Asks the person to pick one of the options (None: Esc); the resume picker's way to the face.
# Its optional third argument, one text per option, makes it a list the person filters by typing.
ChooseOne = Callable[..., "int | None"]


def open_chat(args: argparse.Namespace, loaded: Config, cleanup: ExitStack, choose: ChooseOne | None = None,
              config_warnings: list[str] = ()):
    """Everything a chat is made of, its session open and locked; `cleanup` closes what was
    opened. The face is the caller's (the terminal app, or a benchmark's script); `choose` asks
    it to pick the session when `iota resume` names none."""
    cwd = Path.cwd()
    if args.command == "resume":
        session = resumed_session(args, lambda question: _pick_session(choose, question, args.all,
                                                                          check_open=not args.fork))
        agent_name = session.meta.get("agent") or "default"
        agent = loaded.agents.get(agent_name) or entries.AgentConfig(name=agent_name)
    else:
        agent = settings.find_agent(loaded, args.agent)
        session = None
    if session is not None:
        cleanup.callback(session.close)
    setup = prepare_chat(loaded, agent, cwd, model_override=args.model, system_override=args.system,
                         mcp_flags=args.mcp,
                         replay=session.meta if session else None)
    setup.provider()  # a missing API key stops the start, saying what to set
    host = detect(os.environ)
    setup.host_lines = host_lines(host)
    if agent.mode == "bot":
        chat = _open_bot(args, setup, cleanup, loaded)
    else:
        chat = _open_chat(args, setup, session)
    cleanup.callback(chat.close_switched)
    if args.command == "resume" and args.fork:
        chat.opening.append(Notice(f"Forked from session {session.meta.get('parent')}; the original is unchanged."))
    commands = {name: entry for name, entry in COMMANDS.items()
                if not (name == "skills" and setup.mode == "chat") and not (name == "session" and chat.bot)}
    compactor = chat.compactor
    offer = CompactionOffer() if compactor is None else None  # a chat or agent asks before it compacts
    if compactor is not None:
        commands["compact"] = (COMMANDS["compact"][0], compactor.command)
    if chat.watcher.memory is not None:
        commands["memory"] = (MEMORY_HELP, chat.watcher.show)
    work = chat.work
    if work is not None:
        commands.update(work.commands)
    upkeep = chat.upkeep
    if upkeep is not None:
        commands["candidates"] = (CANDIDATES_HELP, upkeep.command)
    skills = SkillsWatcher(setup) if setup.mode in ("agent", "bot") and setup.agent.tools.skills else None
    commands["help"] = (COMMANDS["help"][0], help_command(commands, setup.mode))
    # The permission mode: `--mode`'s (kept with the session), else the one the session was left
    # in; any but `ask` is on the card.
    chosen_mode = getattr(args, "mode", None)
    session_now = chat.conversation.session
    mode = chosen_mode or saved_mode(session_now.meta if session_now is not None else None)
    mode_line = card_line(mode)
    if chosen_mode and session_now is not None:
        try:
            keep_mode(session_now, mode)
        except SessionError as error:
            config_warnings = [*config_warnings, f"--mode {mode} holds for this run only: {error}"]
    card = _card(setup, chat.label, host.name, [*config_warnings, *_log_warnings(chat), *chat.warnings,
                                                *([mode_line] if mode_line else [])], chat.about)

    def show_what_it_shows(lane: Lane) -> None:
        lane.card, lane.history = card, chat.history

    parts = ChatParts(
        setup=setup, conversation=chat.conversation, card=card,
        commands=commands, host=host, write_terminal=_write_terminal, background=_background(setup),
        opening=[SlashCommands(tuple((f"/{name}", help) for name, (help, _) in commands.items())),
                 *chat.opening],
        # The files the message mentions (`@path`) go with it before anything else looks at it.
        before_send=[attach_mentions, *([chat.typed.before_send] if chat.typed else []),
                     *([upkeep.before_send] if upkeep else []), chat.watcher.before_send, *([skills.before_send] if skills else []),
                     compactor.before_send if compactor else offer,
                     *([upkeep.carry_summary] if upkeep else []), *(work.before_send if work else []),
                     *([chat.durables.before_send] if chat.durables else []),
                     *([chat.journal.before_send] if chat.journal else []),
                     *([open_helpers_notice] if setup.mode == "bot" and setup.agent.tools.delegate else [])],
        after_turn=[chat.watcher.after_turn, *([compactor.after_turn] if compactor else []),
                    *(work.after_turn if work else []), *([upkeep.after_turn] if upkeep else [])],
        recover=compactor.recover if compactor else None,
        host_outlets=[StateFileOutlet(bots.bot_dir(setup.agent.name), setup.agent.name, setup.project_root,
                                      host.tmux)] if chat.bot else [],
        on_start=[show_what_it_shows, starting_mode(mode), compactor.check if compactor else offer.offer_at_open,
                  *(work.on_start if work else [])],
        # A session switched to is offered compaction as a resumed one is at start.
        on_switch=[compactor.check if compactor else offer.offer_at_open],
        # The `@` list's file listing runs beside the lane in every chat. A bot's session keeps
        # the bot's name (no title pass); its scheduler, its journal's writer and its upkeep run
        # beside the lane too.
        tasks=[FileListing().run, *([*(work.actors if work else []), *([chat.journal.run] if chat.journal else []),
                                     *([upkeep.run] if upkeep else [])] if chat.bot else [Titler(setup).run])])
    return parts


@dataclass
class _Opened:
    """A chat's conversation, ready to run: what the card says and what is shown first."""

    conversation: Conversation
    label: str                        # `session <id>` | `resumed <id>` | `not saved`
    watcher: MemoryWatcher
    opening: list = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    compactor: BotCompactor | None = None
    typed: _TypedByPerson | None = None   # a bot's: what backs its `[user]` memory lines
    work: BotWork | None = None           # a bot's tasks, schedules and notes
    journal: JournalKeeper | None = None  # a bot's journal, unless `journal: false`
    upkeep: Upkeep | None = None          # a bot's wrapping up after turns (and its candidates)
    history: SessionHistory | None = None  # a resumed conversation's: the pages before the first shown
    about: tuple[str, ...] = ()            # a bot's rows on the card (BotWork.card_rows)
    durables: DurablesSender | None = None  # a bot's durables, by relevance on each message

    @property
    def bot(self) -> bool:
        return self.compactor is not None

    def close_switched(self) -> None:
        """Release the session a `/session` switch left this chat writing."""
        if self.conversation.session is not None:
            self.conversation.session.close()


def _open_chat(args: argparse.Namespace, setup: ChatSetup, session: Session | None) -> _Opened:
    if session is None and not (args.no_save or setup.agent.no_save):
        session = setup.new_session()
    # An agent's own memory (`~/.iota/agents/<name>/memory`), scoped by the session it writes.
    memory = agent_memory(setup.agent.name, setup.project_root, session) if setup.mode == "agent" else None
    watcher = MemoryWatcher(setup, memory)
    warnings = watcher.refresh_memory()
    if session is not None and session.on_disk:
        conversation = Conversation.from_session(session)
        if args.system is None:  # a resumed session replays its own system prompt
            setup.instructions = conversation.instructions
        opening, history = resume_opening(session, conversation)
        return _Opened(conversation, f"resumed {session.id}", watcher, opening, warnings, history=history)
    conversation = Conversation(session=session, instructions=setup.instructions)
    return _Opened(conversation, f"session {session.id}" if session else "not saved", watcher, warnings=warnings)


def _open_bot(args: argparse.Namespace, setup: ChatSetup, cleanup: ExitStack, loaded: Config) -> _Opened:
    """A bot's one conversation: every check before any file is created, then the bot's lock,
    memory and session; notices of the time away and the project change go into the log."""
    bots.check_bot_run(setup.agent.name, headless=False, no_save=args.no_save)
    bots.check_bot(setup.agent, setup.model)
    start = bots.open_bot(setup.agent.name, model=setup.model, project_root=setup.project_root)
    cleanup.callback(start.close)
    memory = bots.bot_memory(start.name, loaded, setup.project_root, session_name(start.session))
    watcher = MemoryWatcher(setup, memory)
    warnings = [*start.warnings, *watcher.refresh_memory()]
    session = start.session
    conversation = Conversation.from_session(session)
    typed = _TypedByPerson(conversation)
    book = CandidateBook(start.dir)
    candidates = CandidateActions(book, memory.main, project=setup.project_root.name,
                                  mark=lambda: end_of_log(session.dir))
    remember = Remember(memory.main, files=memory.files, project=setup.project_root.name, typed_by_person=typed,
                        candidates=candidates)
    # `memory: false`: no writer and no reader of the bot's memory but the files themselves, which
    # are the person's and still go out with every request.
    remembering = setup.agent.memory
    if remembering:
        setup.extra_tools.append(remember)
    skill = SkillTool(bot_skills_dir(start.name), lambda: setup.skills) if setup.agent.tools.skills else None
    if skill is not None:
        setup.extra_tools.append(skill)
    work = open_bot_work(setup, start.dir)
    setup.extra_tools.extend(work.tools)
    warnings += work.warnings
    opening, history = ([], None) if start.created else resume_opening(session, conversation)
    about = work.card_rows(_size(memory.main.path), None if start.created else _last_write(session.dir / LOG_NAME))
    records = [notice(text) for text in start.notices]
    change = bots.system_record_change(session.view.messages, setup.instructions)
    if change is not None:
        records.insert(0, change)
        if not start.created:
            opening.append(Notice(bots.SYSTEM_PROMPT_UPDATED))
    if records:
        conversation.keep(records)
    conversation.instructions = setup.instructions
    opening.extend(Notice(text) for text in start.notices)
    label = f"session {session.id}" if start.created else f"resumed {session.id}"
    compactor = BotCompactor(setup.agent.name, memory, remember if remembering else None, watcher.refresh_memory)
    if not remembering:
        return _Opened(conversation, label, watcher, opening, warnings, compactor, typed, work, history=history,
                       about=about)
    journal = _open_journal(setup, start, cleanup, warnings)
    upkeep = Upkeep(setup, memory, remember, candidates, skill, journal, watcher.refresh_memory)
    return _Opened(conversation, label, watcher, opening, warnings, compactor, typed, work, journal, upkeep, history,
                   about, DurablesSender(book, setup.project_root.name))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _last_write(log: Path) -> datetime | None:
    """When the bot's log was last written: its last activity, read before this start adds to it."""
    try:
        return datetime.fromtimestamp(log.stat().st_mtime).astimezone()
    except OSError:
        return None


def _open_journal(setup: ChatSetup, start: bots.BotStart, cleanup: ExitStack,
                  warnings: list[str]) -> JournalKeeper | None:
    """The bot's journal and its `recall` tool, unless `journal: false`. The file is opened by
    the keeper's first catch-up, in its worker thread: a journal that is locked or cannot be
    written never holds up the start (see actors.journal)."""
    if not setup.agent.journal:
        return None
    try:
        journal = Journal.of_bot(start.dir)
    except IotaError as error:
        warnings.append(f"journal: {error}; this run keeps none")
        return None
    cleanup.callback(journal.close)
    cleanup.callback(journal.finish)  # first: what the last turns wrote is indexed before the run ends
    setup.extra_tools.append(Recall(journal))
    setup.journal = True
    keeper = JournalKeeper(journal)
    setup.on_helper_session = keeper.helper_kept
    return keeper


class _TypedByPerson:
    """What the person typed in this chat, for `remember`'s check of a `[user]` line: their
    messages in the conversation, and the one being sent now, which joins the conversation only
    once its turn is kept. Its `before_send` runs first among the lane's hooks."""

    def __init__(self, conversation: Conversation):
        self.conversation = conversation
        self.sending: Message | None = None

    async def before_send(self, lane: Lane, user: Message) -> None:
        self.sending = user

    def __call__(self) -> list[str]:
        messages = self.conversation.messages
        if self.sending is not None and not any(message is self.sending for message in messages):
            messages = [*messages, self.sending]
        return typed_by_person(messages)


def settle_project_trust(loaded: Config, choose: ChooseOne, load: Callable[[], Config]) -> Config:
    """Ask whether to trust the project's config file when it wants something risky and was never
    decided for its present content; remember the answer and `load` the config again under it.
    Esc decides nothing: the risky entries stay out of this run, and the next start asks again."""
    review = loaded.project_review
    if review is None or not review.pending:
        return loaded
    answer = choose(trust.question(review), trust.ANSWERS)
    if answer is None:
        return loaded
    trust.record(review, (trust.TRUST, trust.IGNORE)[answer])
    return load()


def _pick_session(choose: ChooseOne | None, question: str, include_archived: bool, *, check_open: bool) -> Path:
    """`iota resume` with no id: choose among the saved sessions (not a bot's, archived ones
    only with --all) in their tree, newest first, filtered by typing. One open in another process
    (`check_open`) is not an end: the picker says so and asks again."""
    hidden = bots.bot_session_ids()
    infos = [info for info in list_sessions(include_archived=include_archived) if info.id not in hidden]
    ordered, labels, search = tree_choices(infos, datetime.now().astimezone())
    while True:
        index = choose(question, labels, search) if infos and choose else None
        if index is None:
            raise IotaError("no session to resume")
        try:
            if check_open:
                lock_bundle(ordered[index].dir).release()
            return ordered[index].dir
        except SessionLocked as error:
            question = f"{error} — {question[0].lower()}{question[1:]}"


async def _write_terminal(data: bytes) -> None:
    """The host's escape sequences go straight to the terminal, between urwid's redraws (both
    write from this thread, so neither splits the other)."""
    os.write(1, data)


def _log_warnings(chat: _Opened) -> list[str]:
    """What opening the session's log repaired or skipped (a torn last line, a bad record)."""
    session = chat.conversation.session
    return list(session.view.warnings) if session is not None and session.on_disk else []


def _card(setup: ChatSetup, session_label: str, host: str | None, warnings: list[str],
          about: tuple[str, ...] = ()) -> Card:
    directory = str(setup.project_root if setup.mode in ("agent", "bot") else setup.cwd)
    return Card(version=__version__, mode=setup.mode, session=session_label, host=host, directory=directory,
                warnings=(*setup.warnings, *warnings), agent=setup.agent.name, loaded=_loaded(setup),
                about=about, hint=BOT_HINT if setup.mode == "bot" else "")


def _loaded(setup: ChatSetup) -> tuple[str, ...]:
    """What agent and bot mode loaded: `2 AGENTS.md · 3 skills · MCP: time, docs`."""
    servers = [server.name for server in servers_for_run(setup.config, setup.agent, setup.mcp_flags)]
    if setup.mode == "chat":
        return (f"MCP: {', '.join(servers)}",) if servers else ()
    agents = len(agents_files(setup.project_root, setup.cwd))
    skills = len(setup.skills)
    return (f"{agents} AGENTS.md" if agents else "no AGENTS.md", f"{skills} skill{'s' if skills != 1 else ''}",
            f"MCP: {', '.join(servers)}" if servers else "no MCP servers")


def _background(setup: ChatSetup) -> list:
    """Blocking work for behind the first screen: the Markdown parser the first reply needs, and
    the provider's signing library. (Not the token encoding: the meter loads it only when a
    conversation nears a compaction threshold, see iota.compaction.meter.)"""
    from iota.providers import preloader
    from ui.widgets import markdown

    work = preloader(setup.model.provider.type)
    return [markdown.preload, *([work] if work is not None else [])]
