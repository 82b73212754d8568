"""Compaction as lane work: the offer before a send, `/compact`, and the compaction itself.

A chat or agent asks first: when the message about to be sent would take the context past
max(80% of the window, window − 16k), the person is asked `Context … — compact before
sending?` (Compact now / Not now). "Not now" is remembered, and the question comes back only
once the context has grown by another 5% of the window. `/compact [hint]` compacts at once.
A conversation opened from the tail of a never-compacted log (iota.sessions.log), or one already
past the threshold when it opens, is asked at once, before anything is typed (`offer_at_open`);
a bot compacts by itself at open then.

The compaction replaces all but the last turn with a summary: one record is appended to the
log (nothing is deleted from it), and the live view becomes the summary-preambled first kept
message and the rest of the tail. A failed compaction leaves the conversation as it was.
"""

from __future__ import annotations

import dataclasses

import enum
from typing import Callable

import trio

from actors.events import Compaction
from actors.lane import Command, Lane, UserMessage
from iota import tokens
from iota.compaction import summary as compaction
from iota.bots.summary import read_summary
from iota.compaction.meter import TokenCount, message_tokens
from iota.compaction.summary import Compacted
from iota.sessions.conversation import notice
from iota.errors import IotaError
from iota.hosts import PingKind, State
from iota.memory.layers import BotMemory
from iota.messages import SYSTEM, Message
from iota.tools.base import Tool, Toolbox


# The status row during a bot's memory flush, and what Ctrl+C on it leads to.
FLUSH_STATUS = "saving memory before compacting"
FLUSH_INTERRUPTED = "Memory flush interrupted: what it saved so far is kept; compacting without the rest"


class CompactionOffer:
    """The ask-first policy of chat and agent mode, as the lane's `before_send` hook."""

    def __init__(self) -> None:
        self.declined_at: int | None = None

    async def __call__(self, lane: Lane, user: Message) -> None:
        if self._due(lane, [user]):
            await self._ask(lane, compaction.offer_question(lane.meter.status()))

    def offer_at_open(self, lane: Lane) -> None:
        """At start: a conversation opened without part of its log, or already past the
        threshold, is offered compaction at once, as lane work ahead of anything typed."""
        left_out = lane.conversation.left_out if compactable_tail(lane) else 0
        if not left_out and not self._due(lane, []):
            return
        question = compaction.left_out_question(left_out) if left_out else \
            compaction.offer_question(lane.meter.status())
        lane.inbox.put_first(Command("offer compaction", "", lambda lane, _: self._ask(lane, question)))

    def _due(self, lane: Lane, adding: list[Message]) -> bool:
        window = lane.setup.model.context_window
        threshold = compaction.snoozed(compaction.normal_threshold(window), window, self.declined_at)
        return lane.meter.reaches(threshold, adding=adding)

    async def _ask(self, lane: Lane, question: str) -> None:
        answer = await lane.ask(question, (compaction.COMPACT_NOW, compaction.NOT_NOW))
        if answer == 0:
            self.declined_at = None
            await compact_now(lane)
        else:
            self.declined_at = lane.meter.used


async def compact_command(lane: Lane, hint: str) -> None:
    """`/compact [hint]`."""
    await compact_now(lane, hint, manual=True)


def compactable_tail(lane: Lane) -> bool:
    """The conversation was opened from the tail of a log too long to send, and holds more than
    its last round: a compaction has something to summarise (a last round longer than the tail
    has nothing older to go with it)."""
    conversation = lane.conversation
    return bool(conversation.left_out) and compaction.split_for_compaction(conversation.messages) is not None


class Outcome(enum.Enum):
    DONE = "done"
    UNCHANGED = "unchanged"
    FAILED = "failed"


async def compact_now(lane: Lane, hint: str = "", *, manual: bool = False, bot_memory: str | None = None,
                      flush_saved: int = 0, flush_skipped: bool = False, running_summary: str = "",
                      on_summary_text: Callable[[str], None] = lambda _text: None) -> tuple[Outcome, str]:
    """Compact the conversation. Failures are shown, and returned with their one-line reason."""
    conversation = lane.conversation
    lane.set_running(compaction.COMPACTING)
    count = (conversation.session.conversation_count if conversation.session is not None
             else sum(1 for m in conversation.messages if m.role != SYSTEM))
    lane.host.state(State.COMPACTING)  # the pane title and state.json say so; back to working after
    try:
        compacted = await compaction.compact(lane.setup.provider(), lane.setup.model.id, conversation.messages,
                                             count, hint=hint, bot_memory=bot_memory, flush_saved=flush_saved,
                                             flush_skipped=flush_skipped, running_summary=running_summary,
                                             window=lane.setup.model.context_window, on_text=on_summary_text)
    except IotaError as error:  # CompactionFailed, or the provider's own error
        lane.notice(compaction.failed_line(error), warning=True)
        return Outcome.FAILED, str(error)
    finally:
        lane.host.state(State.BUSY)
    if compacted is None:
        if manual:
            lane.notice(compaction.NOTHING_TO_COMPACT)
        return Outcome.UNCHANGED, ""
    await _apply(lane, compacted)
    lane.emit(Compaction(compacted.record.compacted_through or 0, compacted.record.content))
    lane.notice(compaction.compacted_line(lane.meter.status()))
    return Outcome.DONE, ""


async def _apply(lane: Lane, compacted: Compacted) -> None:
    """Append the record (shielded: it must not be torn) and switch to the new live view; the
    lane's `on_compacted` hooks are given what was condensed."""
    conversation = lane.conversation
    split = compaction.split_for_compaction(conversation.messages)
    with trio.CancelScope(shield=True):
        await trio.to_thread.run_sync(conversation.apply_compaction, compacted.record, compacted.messages)
    for condensed in lane.on_compacted:
        condensed(split.middle if split is not None else [])
    # What the next request sends: the summary and the kept tail, and the system prompt (memory
    # and all) and the tools' definitions, as a restart counts them.
    lane.meter.reseed(conversation.messages, overhead=lane.request_overhead())
    lane.show_status()


class BotCompactor:
    """A bot compacts by itself, without asking, and saves its memory first.

    When a turn ends past the bot threshold (the window less max(25%, 32k), at most half of it):

    - nothing waiting → the memory flush goes to the head of the lane: one short turn with only
      `remember`, then the compaction. Anything typed meanwhile waits behind it.
    - a message already waiting → compact before sending it, without the flush
      (`⚠ Compacted without a memory flush`).

    A failed compaction stays owed and is retried before the next message; the second failure
    in a row raises the alarm (`bot <name>: compaction failing — …`, host state error) and
    the next try waits until the context has grown by 5% of the window. Ctrl+C interrupts the
    flush (the compaction still runs, marked flush skipped) or the summary (a failure, retried).
    """

    def __init__(self, bot: str, memory: BotMemory, remember: Tool | None, refresh_memory: Callable[[], list[str]]):
        """`remember` is None for a bot with `memory: false`: it compacts without a flush, and
        without saying so, for there is nothing it could save."""
        self.bot = bot
        self.memory = memory
        self.remember = remember
        self.refresh_memory = refresh_memory
        self.flush_queued = False
        self.owed = False           # a compaction is owed: after its flush, or after a failure
        self.flush_done = False     # the owed compaction follows a flush that finished
        self.flush_saved = 0        # the lines that flush saved
        self.failures = 0           # in a row
        self.snoozed_at: int | None = None

    def threshold(self, lane: Lane) -> int:
        window = lane.setup.model.context_window
        return compaction.snoozed(compaction.bot_threshold(window), window, self.snoozed_at)

    def check(self, lane: Lane) -> None:
        """After a turn (and at start): past the threshold, queue the flush, or owe a compaction
        without one when a message is already waiting."""
        if self.flush_queued or self.owed or not (lane.meter.reaches(self.threshold(lane))
                                                   or compactable_tail(lane)):
            return
        if lane.inbox.has(UserMessage) or self.remember is None:
            self.owed, self.flush_done = True, False
            return
        self.flush_queued = True
        lane.inbox.put_first(Command("flush", "", self._flush))
        lane.show_status()

    async def after_turn(self, lane: Lane) -> None:
        self.check(lane)

    async def before_send(self, lane: Lane, user: Message) -> None:
        due = self.owed and (self.failures < 2 or lane.meter.reaches(self.threshold(lane), adding=[user]))
        if due or lane.meter.reaches(self.threshold(lane), adding=[user]):
            await self._compact(lane, flush_skipped=not self.flush_done, warn=not self.flush_done)

    async def recover(self, lane: Lane) -> None:
        """The provider said the context is too long: there is no room for a flush; compact."""
        await self._compact(lane, flush_skipped=True, warn=True)

    async def command(self, lane: Lane, hint: str) -> None:
        """`/compact [hint]` in a bot: now, without the flush, and without the warning."""
        await self._compact(lane, hint=hint, flush_skipped=True, warn=False, manual=True)

    async def _flush(self, lane: Lane, argument: str) -> None:
        self.flush_queued = False
        lane.notice(compaction.FLUSH_TRANSCRIPT_LINE)
        # For the model alone, like the auto-continue nudge: a resumed chat does not show it.
        request = dataclasses.replace(notice(compaction.flush_notice(self.memory.current().body)), hidden=True)
        # A flush that fails calls nobody back and sets no error state (the seed's "sends no
        # notification"): the compaction runs anyway, and its own failures raise the alarm.
        with lane.labelled(FLUSH_STATUS):
            turn = await lane.run_model_turn(request, Toolbox([self.remember]), quiet=True)
        if turn is not None and turn.interrupted:
            lane.notice(FLUSH_INTERRUPTED, warning=True)
        saved = self.memory.take_notices()
        for line in saved:
            lane.notice(line)
        if saved:
            await lane.keep([notice(line) for line in saved])
        finished = turn is not None and not turn.interrupted
        self.owed, self.flush_done, self.flush_saved = True, finished, len(saved)
        await self._compact(lane, flush_skipped=not finished, warn=not finished)

    async def _compact(self, lane: Lane, *, flush_skipped: bool, warn: bool, hint: str = "",
                       manual: bool = False) -> None:
        writing = trio.Event()  # the model has begun the summary: it writes the rest for seconds
        async with trio.open_nursery() as nursery:
            if count_follows(lane, self.threshold(lane)):
                nursery.start_soon(_load_encoding, writing)
            with lane.interruptible() as scope:
                outcome, reason = await compact_now(lane, hint, manual=manual, bot_memory=self.memory.current().body,
                                                    flush_saved=0 if flush_skipped else self.flush_saved,
                                                    flush_skipped=flush_skipped,
                                                    running_summary=read_summary(self.memory.bot_dir)
                                                    if self.remember is not None else "",
                                                    on_summary_text=lambda _text: writing.set())
            if not writing.is_set():  # no summary came: the next count loads it if it must
                nursery.cancel_scope.cancel()
        if scope.cancelled_caught:
            outcome, reason = Outcome.FAILED, "interrupted"
            lane.notice(compaction.failed_line(reason), warning=True)
        if outcome is Outcome.DONE:
            self.owed = self.flush_done = False
            self.failures, self.flush_saved, self.snoozed_at = 0, 0, None
            for warning in self.refresh_memory():
                lane.notice(warning, warning=True)
            if warn and self.remember is not None:
                lane.notice(compaction.COMPACTED_WITHOUT_FLUSH)
        elif outcome is Outcome.UNCHANGED:
            self.owed = self.flush_done = False
            self.snoozed_at = lane.meter.used
        else:
            self.owed = True
            self.failures += 1
            if self.failures >= 2:
                lane.host.notify(PingKind.COMPACTION_ALARM, compaction.failing_alert(self.bot, reason))
                self.snoozed_at = lane.meter.used


async def _load_encoding(writing: trio.Event) -> None:
    """Load the token encoding once the model is writing the summary. The load holds the GIL for a
    third of a second (iota.tokens), freezing every thread: begun before the request is on its way,
    it would hold that up too; once the model writes, it costs nothing anyone waits for, where the
    check before the next message, right after the compaction, would make the person wait on it."""
    await writing.wait()
    await trio.to_thread.run_sync(tokens.load, abandon_on_cancel=True)


def count_follows(lane: Lane, threshold: int) -> bool:
    """Whether the check before the next message will count tokens exactly after this compaction,
    with the encoding not loaded yet. After a compaction the meter is a local count of the request's
    overhead (system prompt, tools), the summary and the kept turn, and `Meter.reaches` counts
    once their byte bound reaches the threshold: with the overhead and kept turn at half of it
    already, the summary and the next message as good as always take it there (bytes are some
    four times the tokens of prose and JSON)."""
    if tokens.loaded():
        return False
    split = compaction.split_for_compaction(lane.conversation.messages)
    kept = message_tokens(split.tail) if split is not None else TokenCount()
    kept.add(lane.request_overhead())
    return 2 * kept.bound >= threshold
