"""The slash commands that name, branch and file sessions, and the tree picker they share.

    /rename <title>            the title of this chat's session
    /fork [title]              go on in a new session under this one, from what the model sees now
    /session archive [id]      hide a session (this chat's without an id); its data are kept
    /session unarchive [id]    show one again (without an id: pick among the archived)
    /session parent <id>       put this chat's session under <id> in the tree
    /session unparent          move it to the top of the tree

Each runs as a lane job like every command (actors.commands.registry). The files are changed by
iota.sessions.manage, which takes each bundle's lock first: a session open in another process
is refused with its pid, and this chat's own session is changed through its own handle. A bot
has one conversation, which keeps the bot's name: `/fork` and `/rename` say so there, and a
bot's session is never offered by a picker nor taken as a parent.
"""

from __future__ import annotations

from datetime import datetime
from functools import partial

import trio

from actors.lane import Lane
from iota.bots import bot as bots
from iota.errors import BotError, IotaError
from iota.messages import SYSTEM, Message
from iota.sessions import manage
from iota.sessions.listing import list_sessions, resolve_session, SessionInfo
from iota.text import clean_title
from iota.sessions.tree import children_of, tree_choices

NOT_SAVED = "This chat is not saved (--no-save); /save keeps it"
SUBCOMMANDS = "/session [archive [id] | unarchive [id] | parent <id> | unparent]"


async def rename(lane: Lane, title: str) -> None:
    """`/rename <title>`."""
    if lane.setup.mode == "bot":
        lane.notice("/rename is not available in a bot: its session keeps the bot's name", warning=True)
        return
    session = lane.conversation.session
    if session is None:
        lane.notice(f"{NOT_SAVED}: /save {title or '<title>'} saves it under that title", warning=True)
        return
    if not title.strip():
        lane.notice("usage: /rename <title>", warning=True)
        return
    stored = await _run(lane, partial(manage.rename, session.dir, title, session))
    if stored is not None:
        lane.notice(f"Renamed session {session.id}: {stored}")


async def fork(lane: Lane, title: str) -> None:
    """`/fork [title]`: a new session under this one whose conversation is what the model sees
    now (the summary and the kept tail after a compaction); the chat goes on in it, and the
    original is left exactly as it was."""
    if lane.setup.mode == "bot":
        lane.notice("/fork is not available in a bot: a bot has one conversation", warning=True)
        return
    conversation = lane.conversation
    current = conversation.session
    if current is None:
        lane.notice(f"{NOT_SAVED}, then /fork branches it", warning=True)
        return
    child = lane.setup.new_session(manage.fork_title(title, _text(current.meta.get("title")), current.id),
                                   parent=current.id)
    system = [Message(SYSTEM, content=conversation.instructions)] if conversation.instructions else []
    try:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(manage.write_fork, child, [*system, *conversation.messages],
                                           conversation.left_out)
    except IotaError as error:
        child.close()
        lane.notice(f"Fork failed: {error}", warning=True)
        return
    await lane.switch_session(child)
    current.close()
    lane.notice(f"Forked session {current.id} as {child.id} ({child.meta.get('title')}); this chat goes on in "
                "the fork, and the original is unchanged.")


async def session_subcommand(lane: Lane, argument: str) -> None:
    """`/session archive|unarchive|parent|unparent …`."""
    word, _, rest = argument.partition(" ")
    target = rest.strip()
    current = lane.conversation.session
    if word == "unarchive" and not target:
        archived = await offered_sessions(lane, archived=True)
        if archived == []:
            lane.notice("No archived sessions.")
        if archived:
            chosen = await pick_session(lane, "Unarchive which session?", archived)
            if chosen is not None:
                await archive_session(lane, chosen.dir, False)
        return
    if word in ("archive", "unarchive"):
        if target:
            bundle = await _resolve(lane, target)
        elif current is not None:
            bundle = current.dir
        else:
            lane.notice(f"{NOT_SAVED}; there is nothing to archive", warning=True)
            return
        if bundle is not None:
            await archive_session(lane, bundle, word == "archive")
        return
    if word in ("parent", "unparent") and current is None:
        lane.notice(f"{NOT_SAVED}; it has no place in the tree yet", warning=True)
        return
    if word == "parent" and target:
        parent = await _resolve(lane, target)
        if parent is not None and await _run(lane, partial(manage.set_parent, current.dir, parent.name, current)):
            title = clean_title(SessionInfo.read(parent).title)
            lane.notice(f"Session {current.id} is now under {parent.name}" + (f" ({title})" if title else ""))
    elif word == "unparent" and not target:
        if await _run(lane, partial(manage.set_parent, current.dir, "", current)):
            lane.notice(f"Session {current.id} is now at the top of the tree")
    else:
        lane.notice(f"usage: {SUBCOMMANDS}", warning=True)


async def archive_session(lane: Lane, bundle, archived: bool) -> None:
    current = lane.conversation.session
    if await _run(lane, partial(manage.archive, bundle, archived, current)):
        this = " (this chat's; the chat goes on in it)" if current is not None and current.id == bundle.name else ""
        lane.notice(f"Archived session {bundle.name}{this}: hidden from iota list sessions and the pickers "
                    "(--all shows it)" if archived else f"Unarchived session {bundle.name}")


async def delete_session(lane: Lane, chosen: SessionInfo) -> None:
    """Delete a picked session, after a yes. One with sessions under it says so; they move up to its
    parent."""
    everything = await trio.to_thread.run_sync(partial(list_sessions, include_archived=True))
    children = children_of(everything, chosen.id)
    where = f"under {chosen.parent}" if chosen.parent and chosen.parent not in {c.id for c in children} else "to the top"
    if children:
        count = f"{len(children)} session{'s' if len(children) != 1 else ''}"
        answer = await lane.ask(f"{clean_title(chosen.title) or chosen.id} has {count} under it — delete it?",
                                (f"Delete it and move them {where}", "Keep it"))
    else:
        answer = await lane.ask(f"Delete session {chosen.id} ({clean_title(chosen.title) or '(untitled)'})? "
                                "It cannot be undone.", ("Delete", "Keep it"))
    if answer != 0:
        return
    moved = await _run(lane, partial(manage.delete_with_children, chosen.dir, lane.conversation.session))
    if moved is not None:
        lane.notice(f"Deleted session {chosen.id}" + (f"; the {len(moved)} under it moved {where}" if moved else ""))


async def pick_session(lane: Lane, question: str, infos: list[SessionInfo]) -> SessionInfo | None:
    """Ask for one of `infos`, drawn as their tree (newest first) and filtered by typing."""
    ordered, labels, search = tree_choices(infos, datetime.now().astimezone())
    index = await lane.ask(question, labels, search=search)
    return ordered[index] if index is not None else None


async def offered_sessions(lane: Lane, *, archived: bool = False) -> list[SessionInfo] | None:
    """The sessions a picker offers: this mode's own, not a bot's, not this chat's; the archived
    ones only (`archived`) or none of them. None (said) when the bots' pointers cannot be read."""
    try:
        return await _candidates(lane, archived=archived)
    except IotaError as error:
        lane.notice(str(error), warning=True)
        return None


async def _candidates(lane: Lane, *, archived: bool) -> list[SessionInfo]:
    current = lane.conversation.session
    hidden = bots.bot_session_ids()
    infos = await trio.to_thread.run_sync(partial(list_sessions, lane.setup.sessions_bucket(),
                                                  include_archived=archived))
    return [info for info in infos if info.id not in hidden and info.archived == archived
            and (current is None or info.id != current.id)]


async def _resolve(lane: Lane, prefix: str):
    """The bundle `prefix` names (archived ones too), or None with the reason said. Not a bot's."""
    def find():
        bundle = resolve_session(prefix, lane.setup.sessions_bucket(), include_archived=True)
        bot = bots.owning_bot(bundle.name)
        if bot is not None:
            raise BotError(f"session {bundle.name} is bot {bot}'s one conversation; it keeps its name and place")
        return bundle

    return await _run(lane, find)


async def _run(lane: Lane, work):
    """Run blocking file work in a thread, shielded (a meta.json write must not be torn); an
    IotaError is shown and gives None. Work that returns None gives True."""
    try:
        with trio.CancelScope(shield=True):
            result = await trio.to_thread.run_sync(work)
    except IotaError as error:
        lane.notice(str(error), warning=True)
        return None
    return True if result is None else result


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
