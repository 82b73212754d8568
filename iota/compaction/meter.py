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
Text is estimated at a token per 4 bytes (see `iota.tokens`, the Rust iota's estimate when it has
no tokenizer): the content, the reasoning, each tool call's name and each argument's key and
value, plus 4 tokens of framing per message. It is compared against thresholds and shown behind
`≈`, never billed, and the next response's usage replaces it.

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

import json
from collections.abc import Iterable, Sequence
from typing import Any

from iota import tokens
from iota.messages import ASSISTANT, Message, Usage
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


# -- the local count ------------------------------------------------------------------------------


def estimate_messages(messages: Iterable[Message]) -> int:
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
    return framing + tokens.estimate(texts)


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
        self.settled = 0
        self.pending = 0
        # Whether `settled` is the provider's own figure rather than a local count.
        self.measured = False

    @property
    def used(self) -> int:
        return self.settled + self.pending

    @property
    def estimated(self) -> bool:
        """True when any part of `used` is a local count (the status then starts with `≈`)."""
        return not self.measured or self.pending > 0

    def settle(self, usage: Usage | None) -> None:
        """A response arrived: its usage is now the whole figure.

        A response without usage (`None`, or all zeros) measures nothing: the estimate of what was
        added since is folded into the settled figure, which becomes a local count.
        """
        if usage is not None and usage.context:
            self.settled, self.measured = usage.context, True
        else:
            self.settled, self.measured = self.settled + self.pending, False
        self.pending = 0

    def add(self, messages: Iterable[Message]) -> None:
        """Messages joined the conversation since the last response (the user's, tool results, notices)."""
        self.pending += estimate_messages(messages)

    def reseed(self, messages: Sequence[Message], overhead: int = 0) -> None:
        """Start over from a local count of `messages` plus `overhead` (what the request carries beyond
        them: the system prompt, memory, tool definitions). After a compaction the last usage no
        longer describes what will be sent."""
        self.settled, self.pending, self.measured = estimate_messages(messages) + overhead, 0, False

    def seed(self, messages: Sequence[Message], last_usage: Usage | None, overhead: int = 0) -> None:
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
        self.settled, self.measured = last_usage.context, True
        self.pending = estimate_messages(messages[after:])

    def reaches(self, threshold: int, adding: Iterable[Message] = ()) -> bool:
        """Whether usage, with `adding` (messages about to be sent, not yet added), is at `threshold`."""
        return self.used + estimate_messages(adding) >= threshold

    def status(self) -> str:
        """`[≈]<used> / <window> (<pct>%)`, e.g. `≈96k / 128k (75%)`."""
        return context_figure(self.used, self.window, self.estimated)
