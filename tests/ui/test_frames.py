"""A streamed reply drawn at the frame rate (ui.frames): the pieces of a frame applied as one, a
frame that took long to draw waiting longer for the next, and a reply that never lets trio wait
for I/O drawn while it streams all the same."""

from __future__ import annotations

import trio

from actors.events import TextDelta, TurnEnded
from tests.ui.test_app import pty, start_app  # noqa: F401  (the fixture)
from ui.frames import DRAW_SHARE, FRAME_SECONDS, Framer, arrivals


class Screen:
    """Stands in for the urwid screen: started, or not (handed to another program)."""

    started = True


class Loop:
    """Stands in for `FramedLoop`: counts the frames drawn, each taking `frame_seconds`."""

    def __init__(self, frame_seconds: float = 0.0):
        self.screen = Screen()
        self.frames = 0
        self.frame_seconds = frame_seconds

    def draw_screen(self) -> None:
        self.frames += 1


async def test_the_pieces_that_come_within_a_frame_are_applied_as_one(autojump_clock):
    applied: list[tuple[float, object]] = []
    framer = Framer(lambda event: applied.append((trio.current_time(), event)), Loop())
    async with trio.open_nursery() as nursery:
        nursery.start_soon(framer.run)
        framer.hold(TextDelta("Hello"))
        await trio.sleep(FRAME_SECONDS / 10)  # the first piece is applied at once
        for piece in (",", " world", "!"):     # the rest of the frame waits for the next
            framer.hold(TextDelta(piece))
            await trio.sleep(FRAME_SECONDS / 10)
        await trio.sleep(FRAME_SECONDS)
        nursery.cancel_scope.cancel()
    assert [event for _, event in applied] == [TextDelta("Hello"), TextDelta(", world!")]
    assert applied[1][0] - applied[0][0] >= FRAME_SECONDS


async def test_a_frame_that_took_long_to_draw_makes_the_next_one_wait_longer(autojump_clock):
    applied: list[float] = []
    framer = Framer(lambda event: applied.append(trio.current_time()), Loop(frame_seconds=0.5))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(framer.run)
        framer.hold(TextDelta("a"))
        await trio.sleep(0.01)
        framer.hold(TextDelta("b"))
        await trio.sleep(10)
        nursery.cancel_scope.cancel()
    assert applied[1] - applied[0] >= 0.5 / DRAW_SHARE  # drawing takes no more than its share of the time


async def test_a_frame_nobody_drew_is_drawn_by_the_framer_and_one_urwid_drew_is_not(autojump_clock):
    loop = Loop()
    framer = Framer(lambda event: None, loop)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(framer.run)
        framer.hold(TextDelta("a"))
        await trio.sleep(FRAME_SECONDS * 2)
        assert loop.frames == 1  # urwid drew nothing (trio never waited for I/O): the framer did
        framer.hold(TextDelta("b"))
        await trio.sleep(FRAME_SECONDS / 10)
        loop.draw_screen()  # urwid drew this frame itself
        await trio.sleep(FRAME_SECONDS * 2)
        assert loop.frames == 2
        loop.screen.started = False  # the terminal is another program's: nothing is drawn
        framer.hold(TextDelta("c"))
        await trio.sleep(FRAME_SECONDS * 2)
        assert loop.frames == 2
        nursery.cancel_scope.cancel()


async def test_pieces_held_are_applied_before_what_comes_after_them():
    applied: list[object] = []
    framer = Framer(applied.append, Loop())
    for piece in ("a", "b"):
        framer.hold(TextDelta(piece))
    framer.flush()  # as the app does before any other event
    applied.append(TurnEnded())
    framer.flush()
    assert applied == [TextDelta("ab"), TurnEnded()]


async def test_arrivals_takes_every_event_in_order_until_the_channel_closes():
    send, receive = trio.open_memory_channel[object](100)
    for n in range(5):
        send.send_nowait(n)
    send.close()
    assert [event async for event in arrivals(receive)] == [0, 1, 2, 3, 4]


async def test_a_reply_that_never_lets_trio_wait_is_drawn_while_it_streams(pty):  # noqa: F811
    """urwid draws when trio is about to wait for I/O. A model that sends faster than the chat
    reads keeps the socket always ready, so trio never waits: the reply is drawn all the same."""
    async with trio.open_nursery() as nursery:
        events, _, _ = await start_app(nursery, pty)
        with trio.fail_after(10):
            sent = 0
            while b"word" not in pty.output:
                await events.send(TextDelta(f"word{sent} "))  # never a moment with nothing to do
                sent += 1
        nursery.cancel_scope.cancel()
