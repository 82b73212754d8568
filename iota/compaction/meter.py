"""How full the context window is, and when that is full enough to compact.

The meter
---------
What the next request will carry is known exactly only once it has been sent: the provider's
usage then says how many tokens the conversation filled (`Usage.context`). Between two
responses the conversation grows — the user's message, tool results, a notice — and none of
that has been measured yet. So the meter keeps two figures and never confuses them:

    settled   the last response's `Usage.context` (or, without one, a local count)
    pending   a local estimate of every message added since, the one about to be sent included

and `used = settled + pending`. A settle replaces both with the provider's figure, so an
estimate that was off never outlives the next response. A stale count alone would let a turn
that reads a big file sail past the window; counting what was added since is what stops it.

The local count
---------------
Text is counted with the o200k_base encoding, as the Rust iota counts it (see `iota.tokens`:
OpenAI's own count, and the closest one offline for the other providers): the content, the
reasoning, each tool call's name and each argument's key and value, plus 4 tokens of framing per
message. It is an estimate all the same — the framing and the tool definitions are guesses —
compared against thresholds and shown behind `≈`, never billed.

Loading the encoding costs some 60 MB and a third of a second, more than an idle chat holds
without it, so a local count is kept as its texts (`TokenCount`) and counted only when a
threshold needs it. Every o200k token stands for at least one byte, so the texts' UTF-8 length is
an upper bound on their count: `reaches` answers no from that bound alone while it stays below
the threshold, and counts exactly only once it does not — its answer is always the exact
count's. Until texts are counted, the figure shown takes bytes/4 for them; once counted, their
count. A chat far from its thresholds never loads the encoding.

Thresholds
----------
An agent offers to compact at max(80% of the window, window − 16k): a share keeps small windows
safe, the flat reserve stops a 1M window throwing 200k away. A bot compacts by itself and
earlier, because the memory flush turn (and a message typed ahead of it) must still fit: it
keeps 25% of the window or 32k free, whichever is larger, but never more than half the window.
After a declined offer (or an Unchanged compaction, or the failure alarm) the check waits until
usage has grown by another 5% of the window, so nobody is asked again after every message.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from typing import Any

from iota import tokens
from iota.messages import ASSISTANT, USER, Message, Usage
from iota.sessions.log import left_out_note, summary_preamble
from iota.text import context_figure

# The smallest window a bot may run in: below it the memory and the reserve fill the window
# within a few turns.
MIN_BOT_WINDOW = 32_000
NORMAL_PERCENT = 80
NORMAL_RESERVE = 16_000
BOT_PERCENT = 25
BOT_RESERVE = 32_000
SNOOZE_PERCENT = 5
# The framing each message costs beyond its text (role markers and separators).
MESSAGE_FRAMING_TOKENS = 4
# What an attached image is counted as (the Rust iota's figure; the provider's usage corrects it).
IMAGE_TOKENS = 1200


def normal_threshold(window: int) -> int:
    """Where an agent offers to compact: max(80% of the window, window − 16k)."""
    return max(window * NORMAL_PERCENT // 100, window - NORMAL_RESERVE)


def bot_reserve(window: int) -> int:
    """What a bot keeps free for the flush turn: max(25%, 32k), never more than half the window."""
    return min(max(BOT_RESERVE, window * BOT_PERCENT // 100), window // 2)


def bot_threshold(window: int) -> int:
    """Where a bot compacts by itself (200k → 150k, 128k → 96k, 32k → 16k)."""
    return window - bot_reserve(window)


def snoozed(threshold: int, window: int, snoozed_at: int | None) -> int:
    """`threshold`, raised to 5% of the window above `snoozed_at` (the usage when the last offer
    was declined, or the last compaction came to nothing or raised the alarm). None: not snoozed."""
    if snoozed_at is None:
        return threshold
    return max(threshold, snoozed_at + window * SNOOZE_PERCENT // 100)


def fitting_tail(messages: Sequence[Message], left_out: int, budget: int) -> tuple[list[Message], int]:
    """The newest rounds of a conversation opened from its tail (`messages`, without the system
    record; the first carries the loader's note of the `left_out` records before them) that come
    to at most `budget` tokens (bytes/4; the last round at least), the first carrying the note of
    all that is now left out; and how many that is. For a turn that cannot ask to compact first
    (`iota resume <id> -m`): a request the model cannot take is not sent."""
    messages = list(messages)
    note = summary_preamble(left_out_note(left_out))
    if messages and messages[0].content.startswith(note):
        messages[0] = dataclasses.replace(messages[0], content=messages[0].content[len(note):])
    start, used = len(messages), 0
    for index in range(len(messages) - 1, -1, -1):
        used += message_tokens([messages[index]]).estimate
        if used > budget and start < len(messages):
            break
        if messages[index].role == USER and not messages[index].notice:  # a round starts here
            start = index
    if start == len(messages):  # no round start at all: nothing is left out here
        start = 0
    kept, left_out = messages[start:], left_out + start
    if kept and left_out:
        kept[0] = dataclasses.replace(kept[0], content=summary_preamble(left_out_note(left_out)) + kept[0].content)
    return kept, left_out


# -- the local count ------------------------------------------------------------------------------


class TokenCount:
    """A token figure whose texts are counted only when asked: `known` tokens (a provider's figure,
    the framing, images, texts counted already) and the texts not counted yet, with their UTF-8
    length. Counting folds the texts into `known`, so nothing is counted twice."""

    def __init__(self, known: int = 0, texts: Iterable[str] = ()):
        self.known = known
        self.texts = [text for text in texts if text]
        self.bytes = sum(map(tokens.byte_bound, self.texts))

    def add(self, other: TokenCount) -> None:
        """Add `other`'s tokens to these (`other` stays as it was)."""
        self.known += other.known
        self.texts += other.texts
        self.bytes += other.bytes

    @property
    def bound(self) -> int:
        """At least `exact()`, found without the encoding: each text's tokens are at most its bytes."""
        return self.known + self.bytes

    @property
    def estimate(self) -> int:
        """The figure to show: the exact count of what was counted, bytes/4 for the texts not yet."""
        return self.known + -(-self.bytes // 4)

    def exact(self) -> int:
        """The exact count (blocking: the first in a process loads the encoding, see iota.tokens)."""
        if self.texts:
            self.known += sum(tokens.count_each(self.texts))
            self.texts, self.bytes = [], 0
        return self.known


def message_tokens(messages: Iterable[Message]) -> TokenCount:
    """Tokens `messages` add to a request: text, reasoning, tool calls, attachments (an image
    1200, as the Rust iota counts one; a text file its text) and 4 per message of framing."""
    texts: list[str] = []
    framing = 0
    for message in messages:
        framing += MESSAGE_FRAMING_TOKENS
        texts += (message.content, message.reasoning)
        for attachment in message.attachments:
            if attachment.is_image:
                framing += IMAGE_TOKENS
            else:
                texts.append(attachment.text() or "")
        for call in message.tool_calls:
            texts.append(call.name)
            for key, value in call.arguments.items():
                texts += (key, go_value(value))
    return TokenCount(framing, texts)


def go_value(value: Any) -> str:
    """A JSON value as Go's `%v` prints it: strings bare, null as `<nil>`, numbers and booleans as
    JSON does. Lists and objects print as compact JSON (Go's `[a b]`/`map[…]` for nested values
    is not worth a second formatter: nothing bills these characters)."""
    if isinstance(value, str):
        return value
    if value is None:
        return "<nil>"
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# -- the meter -------------------------------------------------------------------------------------


class Meter:
    """How much of `window` the next request will fill: settled + pending (see the module doc)."""

    def __init__(self, window: int):
        self.window = window
        self.settled = TokenCount()
        self.pending = TokenCount()
        # Whether `settled` is the provider's own figure rather than a local count.
        self.measured = False

    @property
    def used(self) -> int:
        """settled + pending, counted exactly (blocking: it may load the encoding). What is shown
        is `shown`, which never counts."""
        return self.settled.exact() + self.pending.exact()

    @property
    def shown(self) -> int:
        """settled + pending as the status shows it: bytes/4 for any text not counted yet."""
        return self.settled.estimate + self.pending.estimate

    @property
    def estimated(self) -> bool:
        """True when any part of `used` is a local count (the status then starts with `≈`)."""
        return not self.measured or self.pending.bound > 0

    def settle(self, usage: Usage | None) -> None:
        """A response arrived: its usage is now the whole figure.

        A response without usage (`None`, or all zeros) measures nothing: the estimate of what was
        added since is folded into the settled figure, which becomes a local count.
        """
        if usage is not None and usage.context:
            self.settled, self.measured = TokenCount(usage.context), True
        else:
            self.settled.add(self.pending)
            self.measured = False
        self.pending = TokenCount()

    def add(self, messages: Iterable[Message]) -> None:
        """Messages joined the conversation since the last response (the user's, tool results, notices)."""
        self.pending.add(message_tokens(messages))

    def reseed(self, messages: Sequence[Message], overhead: TokenCount | None = None) -> None:
        """Start over from a local count of `messages` plus `overhead` (what the request carries beyond
        them: the system prompt, memory, tool definitions). After a compaction the last usage no
        longer describes what will be sent."""
        self.settled, self.pending, self.measured = message_tokens(messages), TokenCount(), False
        if overhead is not None:
            self.settled.add(overhead)

    def seed(self, messages: Sequence[Message], last_usage: Usage | None,
             overhead: TokenCount | None = None) -> None:
        """Start a resumed session from its view (`SessionView.messages` and `.last_usage`).

        With a last usage (the last assistant record's after the last compaction) the meter is that
        figure plus a local count of the messages after that assistant message; without one, a
        local count of everything plus `overhead`.
        """
        if last_usage is None or not last_usage.context:
            self.reseed(messages, overhead)
            return
        after = len(messages)
        while after > 0 and not (messages[after - 1].role == ASSISTANT and messages[after - 1].usage is not None):
            after -= 1
        self.settled, self.measured = TokenCount(last_usage.context), True
        self.pending = message_tokens(messages[after:])

    def reaches(self, threshold: int, adding: Iterable[Message] = ()) -> bool:
        """Whether usage, with `adding` (messages about to be sent, not yet added), is at `threshold`.

        Always the exact count's answer, but counted only when it could be yes: while even the
        byte bound of every uncounted text stays below the threshold, it is no. When it counts it
        blocks, and the first count in a process loads the encoding (a third of a second, with the
        GIL held, so a worker thread would freeze the event loop all the same)."""
        adding_count = message_tokens(adding)
        if self.settled.bound + self.pending.bound + adding_count.bound < threshold:
            return False
        return self.used + adding_count.exact() >= threshold

    def status(self) -> str:
        """`[≈]<used> / <window> (<pct>%)`, e.g. `≈96k / 128k (75%)`, with bytes/4 for what is not counted yet."""
        return context_figure(self.shown, self.window, self.estimated)
