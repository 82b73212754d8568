"""A streamed reply drawn at the frame rate, however fast its pieces come.

urwid's trio loop draws the screen when trio is about to wait for I/O after some task did work.
A reply that arrives piece by piece over a slow link is then drawn once per piece: each draw parses
the block being written again (ui.widgets.transcript), a cost paid for every piece. A reply that
arrives faster than it is drawn (a fast model, or a local one, and the socket always has more to
read) is the opposite case: trio never has to wait, so nothing is drawn until the whole reply is
in, and then it all appears at once.

So the pieces of a reply (`TextDelta`) do not go to the screen one by one. The `Framer` holds
them and applies what has come once a frame: at most one frame each FRAME_SECONDS, and no more
than DRAW_SHARE of the time spent drawing (a frame that took long to draw — a long block still
being written — waits longer for the next). When no draw came during a frame, trio never waited
for I/O, so the framer draws it itself. Every other event is applied at once, after the pieces
held before it, so the transcript shows everything in the order it happened.

A reply comes in thousands of pieces, and taking each from the channel with a checkpoint of its
own would cost a turn of trio's scheduler (a poll for I/O and its instruments) per piece: what
has already come is taken at once (`arrivals`).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Callable

import trio
import urwid

from actors.events import TextDelta

FRAME_SECONDS = 1 / 60
DRAW_SHARE = 0.1


class FramedLoop(urwid.MainLoop):
    """urwid's main loop, counting the frames it draws and timing the last."""

    frames = 0
    frame_seconds = 0.0

    def draw_screen(self) -> None:
        start = time.perf_counter()
        super().draw_screen()
        self.frame_seconds = time.perf_counter() - start
        self.frames += 1


class Framer:
    """Holds the pieces of a streaming reply and applies them (with `apply`) once a frame."""

    def __init__(self, apply: Callable[[object], None], loop: FramedLoop):
        self._apply = apply
        self._loop = loop
        self._held: list[TextDelta] = []
        self._waiting = trio.Event()  # set while pieces are held

    def hold(self, delta: TextDelta) -> None:
        self._held.append(delta)
        self._waiting.set()

    def flush(self) -> None:
        """Apply the pieces held, as one (and before an event that must come after them)."""
        if self._held:
            held, self._held = self._held, []
            self._apply(held[0] if len(held) == 1 else TextDelta("".join(delta.text for delta in held)))

    async def run(self) -> None:
        """Apply the pieces held once a frame, for as long as the app runs."""
        while True:
            await self._waiting.wait()
            self._waiting = trio.Event()
            frames = self._loop.frames
            self.flush()
            await trio.sleep(max(FRAME_SECONDS, self._loop.frame_seconds / DRAW_SHARE))
            if self._loop.frames == frames and self._loop.screen.started:
                self._loop.draw_screen()  # trio never waited for I/O meanwhile, so urwid did not draw


async def arrivals(events: trio.MemoryReceiveChannel) -> AsyncIterator[object]:
    """Each event from `events` until it is closed: the next one, and then without a checkpoint
    every one already waiting behind it."""
    async for event in events:
        yield event
        while True:
            try:
                event = events.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel):
                break
            yield event
