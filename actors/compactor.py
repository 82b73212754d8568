"""Compaction as lane work: the offer before a send, `/compact`, and the compaction itself.

A chat or agent asks first: when the message about to be sent would take the context past
max(80% of the window, window − 16k), the person is asked `Context … — compact before
sending?` (Compact now / Not now). "Not now" is remembered, and the question comes back only
once the context has grown by another 5% of the window. `/compact [hint]` compacts at once.

The compaction replaces all but the last turn with a summary: one record is appended to the
log (nothing is deleted from it), and the live view becomes the summary-preambled first kept
message and the rest of the tail. A failed compaction leaves the conversation as it was.
"""

from __future__ import annotations

import trio

from actors.lane import Lane
from iota import compaction
from iota.compaction import Compacted, CompactionFailed
from iota.errors import IotaError
from iota.messages import SYSTEM, Message


class CompactionOffer:
    """The ask-first policy of chat and agent mode, as the lane's `before_send` hook."""

    def __init__(self) -> None:
        self.declined_at: int | None = None

    async def __call__(self, lane: Lane, user: Message) -> None:
        window = lane.setup.model.context_window
        threshold = compaction.snoozed(compaction.normal_threshold(window), window, self.declined_at)
        if not lane.meter.reaches(threshold, adding=[user]):
            return
        answer = await lane.ask(compaction.offer_question(lane.meter.status()),
                                (compaction.COMPACT_NOW, compaction.NOT_NOW))
        if answer == 0:
            self.declined_at = None
            await compact_now(lane)
        else:
            self.declined_at = lane.meter.used


async def compact_command(lane: Lane, hint: str) -> None:
    """`/compact [hint]`."""
    await compact_now(lane, hint, manual=True)


async def compact_now(lane: Lane, hint: str = "", *, manual: bool = False, bot_memory: str | None = None,
                      flush_saved: int = 0, flush_skipped: bool = False) -> bool:
    """Compact the conversation; True when it was compacted. Failures are shown, not raised."""
    conversation = lane.conversation
    lane.set_running(compaction.COMPACTING)
    count = (conversation.session.conversation_count if conversation.session is not None
             else sum(1 for m in conversation.messages if m.role != SYSTEM))
    try:
        compacted = await compaction.compact(lane.setup.provider(), lane.setup.model.id, conversation.messages,
                                             count, hint=hint, bot_memory=bot_memory, flush_saved=flush_saved,
                                             flush_skipped=flush_skipped)
    except CompactionFailed as error:
        lane.notice(compaction.failed_line(error), warning=True)
        return False
    except IotaError as error:
        lane.notice(compaction.failed_line(error), warning=True)
        return False
    if compacted is None:
        if manual:
            lane.notice(compaction.NOTHING_TO_COMPACT)
        return False
    await _apply(lane, compacted)
    lane.notice(compaction.compacted_line(lane.meter.status()))
    return True


async def _apply(lane: Lane, compacted: Compacted) -> None:
    """Append the record (shielded: it must not be torn) and switch to the new live view."""
    conversation = lane.conversation
    with trio.CancelScope(shield=True):
        await trio.to_thread.run_sync(conversation.apply_compaction, compacted.record, compacted.messages)
    lane.meter.reseed(conversation.messages, overhead=compaction.estimate_messages(
        [Message(SYSTEM, content=lane.setup.system_prompt())]))
    lane.show_status()
