"""`/clear` and `/new`, and how the face is told the chat goes on in another conversation (also
after `/session` resumes one): a fresh card names it, and its history, if any, comes page by page.
"""

from __future__ import annotations

import dataclasses

from actors.history import SessionHistory
from actors.lane import Lane


def show_session(lane: Lane, label: str, history: SessionHistory | None) -> None:
    """The chat continues in another conversation: a fresh card names it, the transcript starts
    over, and its history (if any) comes page by page."""
    lane.history = history
    if lane.card is not None:
        lane.card = dataclasses.replace(lane.card, session=label, warnings=(), fresh=True)
        lane.emit(lane.card)


async def clear(lane: Lane, argument: str) -> None:
    """`/clear` (and `/new`): a fresh conversation, in a new session when this one is saved; the
    old one stays on disk, to resume."""
    if lane.setup.mode == "bot":
        lane.notice(BOT_HAS_ONE_CONVERSATION.format(bot=lane.setup.agent.name), warning=True)
        return
    conversation = lane.conversation
    old = conversation.session
    kept = old is not None and old.on_disk
    new = lane.setup.new_session() if old is not None else None
    conversation.messages = []
    conversation.session = new
    conversation.system_saved = False
    lane.meter.seed([], None, overhead=lane.request_overhead())
    # What waits in the queue goes on to the new conversation, and leaves the old one's queue.json
    # (which would otherwise show it as not sent when that session is resumed).
    await lane.kept.moved_from(old)
    if old is not None:
        old.close()
    lane.report_session()
    show_session(lane, f"session {new.id}" if new else "not saved", None)
    if kept:
        lane.notice(f"A new conversation; the last one is kept as {old.id} (iota resume {old.id})")
    lane.show_status()


BOT_HAS_ONE_CONVERSATION = ("a bot keeps one conversation that never ends: there is no /clear or /new in bot "
                            "{bot} (/compact makes room in it)")
