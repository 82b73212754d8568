"""Slash commands: each one a job on the lane, so it runs after what is queued before it and
Ctrl+C cancels it like a turn. `/quit` is the input actor's, since leaving must not queue.

    COMMANDS = {name: (one-line help, async body(lane, argument))}

`/help` lists the chat's own table, so the chat gives it its commands (`help_command`).
"""

from __future__ import annotations

import base64
import dataclasses
import html
import json
import os
from pathlib import Path

import trio

from actors.compactor import compact_command
from actors.commands.debug import DEBUG_HELP, debug
from actors.commands.edit import EDIT_HELP, edit_message
from actors.commands.file import FILE_HELP, attach_file
from actors.commands.agents import AGENTS_HELP, agents_command
from actors.commands.jobs import JOBS_HELP, show_jobs
from actors.modes import MODE_HELP, mode_command
from actors.commands.model_tabs import choose_top_p, show_system, stamp_model, top_p_label
from actors.commands.skill import show_skills
from actors.events import ComposerText, Notice, Panel, SessionSaved, TurnEnded
from actors.commands.conversation import clear, show_session
from actors.commands.help import help_command
from actors.history import SessionHistory
from actors.lane import Lane
from actors.commands.tools import show_tools
from iota import __version__
from iota.config import params
from iota.config.entries import EFFORTS
from iota.errors import IotaError
from iota.messages import ASSISTANT, SYSTEM, TOOL, USER, Message
from iota.sessions.conversation import Conversation
from iota.text import format_size
from iota import attachments
from iota.attachments import describe
from iota.sessions.bundle import Session
from actors.commands.session import (archive_session, delete_session, fork, offered_sessions, pick_session, rename,
                                     session_subcommand)


async def show_status(lane: Lane, argument: str) -> None:
    setup, conversation = lane.setup, lane.conversation
    session = conversation.session
    model = setup.model
    rows = [
        ("Model", f"{model.name} ({model.provider.name}:{model.id})"),
        ("Context", f"{format_size(lane.context_used)} / "
                    f"{format_size(model.context_window)}"),
        ("Project", str(setup.project_root)),
        ("Tools", ", ".join(tool.name for tool in lane.toolbox) or "(none)"),
        ("Version", __version__),
        ("Mode", setup.mode),
        ("Session", session.id if session else "not saved · /save keeps it"),
        ("Title", (session.meta.get("title") if session else None) or "(untitled)"),
        *(row() for row in lane.status_rows),
    ]
    width = max(len(name) for name, _ in rows)
    lane.emit(Panel("Status", "\n".join(f"{name.ljust(width)}  {value}" for name, value in rows)))


async def save(lane: Lane, title: str) -> None:
    conversation = lane.conversation
    if conversation.session is not None:
        lane.notice(f"Session already saving ({conversation.session.id}).")
        return
    try:
        session = lane.setup.new_session(title or None)
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(conversation.save_as, session)
    except IotaError as error:
        lane.notice(f"Save failed: {error}", warning=True)
        return
    lane.notice(f"Session saved: {session.id} — auto-saving from now on.")
    lane.report_session()
    lane.emit(SessionSaved(session.id))


async def export(lane: Lane, argument: str) -> None:
    """The whole log (every message record; compaction markers and the turn bookkeeping skipped)
    as HTML, or Markdown for `.md`. Without a name it goes outside the project: ~/Downloads if
    there is one, else the session's bundle directory (else the home directory). Never
    overwrites a file."""
    session = lane.conversation.session
    messages = _full_log(session) if session is not None and session.on_disk else lane.conversation.messages
    path = Path(os.path.expanduser(argument)) if argument else \
        export_directory(session) / f"iota-{session.id if session else 'chat'}.html"
    if not path.is_absolute():
        path = lane.setup.cwd / path
    text = render_markdown(messages) if path.suffix.lower() == ".md" else render_html(messages)
    try:
        with open(path, "x", encoding="utf-8") as file:
            file.write(text)
    except FileExistsError:
        lane.notice(f"{path} already exists; /export never overwrites — name another file", warning=True)
        return
    except OSError as error:
        lane.notice(f"Export failed: {error.strerror or error}", warning=True)
        return
    lane.notice(f"Exported {len(messages)} messages to {path}")


def export_directory(session: Session | None) -> Path:
    downloads = Path.home() / "Downloads"
    if downloads.is_dir():
        return downloads
    if session is not None and session.on_disk:
        return session.dir
    return Path.home()


# What /model can change, and the values it offers; every change lasts for this process only.
WINDOWS = (32_000, 64_000, 128_000, 200_000, 400_000, 1_000_000)
TEMPERATURES = (0.0, 0.2, 0.5, 0.7, 1.0)


async def choose_model(lane: Lane, argument: str) -> None:
    """`/model [name]`: the model, its context window, effort, temperature or top_p, for the rest
    of this process (the config is not changed), or the System tab (actors.commands.model_tabs)."""
    setup = lane.setup
    if argument:
        await _switch_model(lane, argument)
        return
    model = setup.model
    aspect = await lane.ask("Change what?", (
        f"Model ({model.name})", f"Context window ({format_size(model.context_window)})",
        f"Effort ({model.effort or 'default'})",
        f"Temperature ({'default' if model.temperature is None else model.temperature})",
        f"Top P ({top_p_label(model.top_p)})", "System prompt"))
    if aspect == 0:
        names = list(setup.config.models)
        index = await lane.ask(f"Model (now {model.name})", tuple(names))
        if index is not None:
            await _switch_model(lane, names[index])
    elif aspect == 1:
        index = await lane.ask("Context window", tuple(format_size(w) for w in WINDOWS))
        if index is not None:
            await _tune(lane, context_window=WINDOWS[index])
    elif aspect == 2:
        index = await lane.ask("Effort", EFFORTS)
        if index is not None:
            await _tune(lane, effort=EFFORTS[index])
    elif aspect == 3:
        index = await lane.ask("Temperature", tuple(str(t) for t in TEMPERATURES))
        if index is not None:
            await _tune(lane, temperature=TEMPERATURES[index])
    elif aspect == 4:
        top_p = await choose_top_p(lane)
        if top_p is not False:
            await _tune(lane, top_p=top_p)
    elif aspect == 5:
        await show_system(lane)


async def _switch_model(lane: Lane, name: str) -> None:
    try:
        lane.setup.switch_model(name)
    except IotaError as error:
        lane.notice(str(error), warning=True)
        return
    await _announce_model(lane)


async def _tune(lane: Lane, **changes) -> None:
    window = {"window_source": "agent"} if "context_window" in changes else {}
    lane.setup.model = dataclasses.replace(params.set_by_hand(lane.setup.model, **changes), **window)
    await _announce_model(lane)


async def _announce_model(lane: Lane) -> None:
    model = lane.setup.model
    details = [f"{format_size(model.context_window)} window"]
    if model.effort:
        details.append(f"effort {model.effort}")
    if model.temperature is not None:
        details.append(f"temperature {model.temperature}")
    if model.top_p is not None:
        details.append(f"top_p {model.top_p}")
    lane.notice(f"Model: {model.name} ({', '.join(details)}) — for this process")
    lane.show_status()
    await stamp_model(lane)


def resume_opening(session: Session, conversation: Conversation) -> tuple[list, SessionHistory]:
    """What a resumed chat shows first — the newest page of its history (older ones follow as
    the person scrolls up) and `Resumed session <id> (<n> messages)` — and the history the later
    pages come from. A last round that got no reply ends the page as failed, so the composer
    offers its message again (Up). What iota wrote for the model alone (hidden: a schedule's
    trigger, the auto-continue nudge) is not shown."""
    history = SessionHistory(session.dir)
    page = history.first_page()
    messages = conversation.messages
    starts = [i for i, m in enumerate(messages) if m.role == USER and not m.notice]
    last = starts[-1] if starts else None
    if last is not None and not messages[last].hidden and \
            not any(m.role == ASSISTANT and m.content and not m.interrupted for m in messages[last + 1:]):
        page = dataclasses.replace(page, events=(*page.events, TurnEnded(failed=True)))
    return [page, Notice(f"Resumed session {session.id} ({session.meta.get('message_count', 0)} messages)")], history


async def sessions(lane: Lane, argument: str) -> None:
    """`/session`: resume another saved session here, delete, archive or unarchive one, picked
    from the session tree (typing filters it); `/session archive|unarchive|parent|unparent …`
    (actors.commands.session). The one this chat is writing is not offered, nor a bot's."""
    if argument:
        await session_subcommand(lane, argument)
        return
    action = await lane.ask("Session", SESSION_ACTIONS)
    if action is None:
        return
    verb = SESSION_ACTIONS[action]
    current = lane.conversation.session
    candidates = await offered_sessions(lane, archived=verb == "Unarchive")
    if candidates is None:
        return
    if not candidates:
        lane.notice("No archived sessions." if verb == "Unarchive" else "No other saved sessions.")
        return
    chosen = await pick_session(lane, f"{verb} which session?", candidates)
    if chosen is None:
        return
    if verb in ("Archive", "Unarchive"):
        await archive_session(lane, chosen.dir, verb == "Archive")
        return
    if verb == "Delete":
        await delete_session(lane, chosen)
        return
    try:
        opened = await trio.to_thread.run_sync(Session.open, chosen.dir)
    except IotaError as error:
        lane.notice(str(error), warning=True)
        return
    await lane.switch_session(opened)
    if current is not None:
        current.close()
    opening, history = await trio.to_thread.run_sync(resume_opening, opened, lane.conversation)
    show_session(lane, f"resumed {opened.id}", history)
    for warning in opened.view.warnings:  # what opening it repaired
        lane.notice(warning, warning=True)
    for event in opening:
        lane.emit(event)


SESSION_ACTIONS = ("Resume", "Delete", "Archive", "Unarchive")


REWIND_TITLE = "Rewind to before which message? Files are not rolled back."
# The person's latest messages the picker offers, newest first.
REWIND_CHOICES = 9


async def rewind(lane: Lane, argument: str) -> None:
    """`/rewind`: pick one of your earlier messages; the conversation goes on from just before it
    (the log records the rewind and keeps everything), and the message comes back in the composer."""
    conversation = lane.conversation
    try:
        points = await trio.to_thread.run_sync(conversation.rewind_points)
    except IotaError as error:
        lane.notice(str(error), warning=True)
        return
    if not points:
        lane.notice("Nothing to rewind yet.")
        return
    offered = points[::-1][:REWIND_CHOICES]
    index = await lane.ask(REWIND_TITLE, tuple(_one_line(point.text) for point in offered))
    if index is None:
        return
    chosen = offered[index]
    try:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(conversation.rewind, chosen)
    except IotaError as error:
        lane.notice(f"Rewind failed: {error}", warning=True)
        return
    session = conversation.session
    lane.meter.seed(conversation.messages, session.view.last_usage if session is not None and session.on_disk else None)
    lane.show_status()
    for hook in lane.after_rewind:
        await hook(lane)
    lane.notice(f"Rewound to before “{_one_line(chosen.text)}”: the message is back to edit; files were not rolled back")
    lane.emit(ComposerText(chosen.text))


def _one_line(text: str, limit: int = 70) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _full_log(session: Session) -> list[Message]:
    messages = []
    with open(session.dir / "messages.jsonl", encoding="utf-8", errors="replace") as log:
        for line in log:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and record.get("role") in (SYSTEM, USER, ASSISTANT, TOOL):
                messages.append(Message.from_record(record))
    return attachments.bind(messages, session.dir)


_SPEAKERS = {USER: "You", ASSISTANT: "Assistant", TOOL: "Tool", SYSTEM: "System"}


def _speaker(message: Message) -> str:
    if message.hidden:  # a schedule's trigger, the auto-continue nudge, the open tasks
        return "iota, to the model"
    if message.notice:
        return "Notice"
    if message.role == TOOL:
        return f"Tool {message.tool_call_name}"
    return _SPEAKERS.get(message.role, message.role)


def _body(message: Message) -> str:
    calls = "".join(f"\n→ {call.name}({json.dumps(call.arguments, ensure_ascii=False)})"
                    for call in message.tool_calls)
    mark = " (interrupted)" if message.interrupted else ""
    files = "".join(f"\n📎 {describe(attachment)}" for attachment in message.attachments)
    return f"{message.content}{mark}{calls}{files}".strip()


def render_markdown(messages: list[Message]) -> str:
    parts = ["# iota conversation\n"]
    for message in messages:
        parts.append(f"## {_speaker(message)}\n\n{_body(message)}\n")
    return "\n".join(parts)


def render_html(messages: list[Message]) -> str:
    rows = "\n".join(f'<section class="{html.escape(m.role)}"><h2>{html.escape(_speaker(m))}</h2>'
                     f"<pre>{html.escape(_body(m))}</pre>{_images_html(m)}</section>" for m in messages)
    return ("<!doctype html>\n<meta charset=\"utf-8\">\n<title>iota conversation</title>\n"
            "<style>body{font-family:sans-serif;max-width:60em;margin:auto}pre{white-space:pre-wrap}"
            ".user h2{color:#06c}.tool{color:#555}</style>\n" + rows + "\n")


def _images_html(message: Message) -> str:
    """A message's attached images, inline, so the exported page stands on its own."""
    images = []
    for attachment in message.attachments:
        data = attachment.read() if attachment.is_image else None
        if data is not None:
            images.append(f'<img alt="{html.escape(attachment.filename)}" style="max-width:100%" '
                          f'src="data:{attachment.mime};base64,{base64.b64encode(data).decode()}">')
    return "".join(images)


COMMANDS = {
    "help": ("every command and key", None),  # set below: it lists this table
    "clear": ("start a new conversation (the last one is kept)", clear),
    "new": ("start a new conversation, like /clear", clear),
    "model": ("the model, context window, effort, temperature, top_p or system prompt, for this process",
              choose_model),
    "status": ("show the model, context, session and tools", show_status),
    "save": ("start saving this chat: /save [title]", save),
    "compact": ("summarise the older conversation now: /compact [hint]", compact_command),
    "session": ("resume, delete, archive or move a saved session: /session [archive|unarchive|parent|unparent]",
                sessions),
    "rename": ("give this session a title: /rename <title>", rename),
    "fork": ("go on in a new session under this one, from what the model sees now: /fork [title]", fork),
    "rewind": ("go back to before one of your messages (files are not rolled back)", rewind),
    "export": ("write the conversation to a file: /export [file.html|file.md]", export),
    "tools": ("list the tools the model can call", show_tools),
    "skills": ("list the skills of this project, or run one: /skills [name [instructions]]", show_skills),
    "file": (FILE_HELP, attach_file),
    "debug": (DEBUG_HELP, debug),
    "jobs": (JOBS_HELP, show_jobs),
    "agents": (AGENTS_HELP, agents_command),
    "edit": (EDIT_HELP, edit_message),
    "mode": (MODE_HELP, mode_command),
    "quit": ("leave iota", None),
}
COMMANDS["help"] = (COMMANDS["help"][0], help_command(COMMANDS))
