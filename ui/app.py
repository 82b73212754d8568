"""The terminal app: urwid on trio, inside the caller's nursery, between two channels.

    app = ChatApp()
    await app.run(events, inputs)    # returns when `events` is closed or the caller cancels

`run` starts the screen, then runs four things side by side until the events channel closes:

    events ──► the event pump ──► ChatLayout.apply ──► (urwid redraws when trio next idles)
    keys ──► ChatTerminal (a paste as one key) ──► urwid (TrioEventLoop) ──► ChatLayout
         ──► on_input / on_answer ──► the outbox
    the outbox ──► the deliverer ──► `inputs` (Submit, Interrupt, …) or a Choose's or Ask's `reply`
    the status ticker: once a second, while the status row shows a timer, read the clock again
    (and a hint such as `Press Ctrl+C again to exit` is taken away when its time is up)

Key handlers run synchronously inside urwid, and a channel send may have to wait, so they only
drop what they send into an unbounded outbox; one task sends it on, in order. urwid's trio loop
redraws the screen whenever trio is about to wait for I/O after some task did work, so nothing
here calls draw_screen: applying an event is enough. The pieces of a streaming reply are the
exception: they are applied once a frame, and drawn then even when trio never waits (ui.frames).

The terminal is restored however `run` ends (the events closing, a cancel, an exception, a
KeyboardInterrupt): `MainLoop.start()` is a context manager that stops the screen on the way out.
Ctrl+Z is the terminal's SIGTSTP, which urwid's screen turns into "restore the terminal, stop,
and redraw everything on `fg`". Once the screen is gone, `farewell()` is what to leave in the
terminal: the last screen of the conversation and how to continue it.

No heavy imports here or in the widgets: the first screen must not wait for the model SDK.
"""

from __future__ import annotations

import dataclasses
import math
import os
import signal
import termios
from collections.abc import Callable
from contextlib import suppress

import trio
import urwid
from urwid.display import escape

from actors.events import Ask, Card, Choose, Hint, RunInTerminal, SessionSaved, Status, TextDelta
from iota.sandbox.reaper import raise_unless_runnable, reaper_argv
from ui import theme
from ui.first_frame import take_typed_ahead
from ui.frames import FramedLoop, Framer, arrivals
from ui.paste import InputGatherer, marked_pieces
from ui.widgets.composer import Paste
from ui.widgets.layout import ChatLayout

LINE_FEED = 0x0A
# What a terminal with the kitty keyboard protocol sends for Ctrl+J; urwid reads it as "ctrl j".
CTRL_J_REPORT = tuple(b"\x1b[106;5u")
# modifyOtherKeys level 1: keys that have no legacy encoding of their own, like Shift+Enter and
# Ctrl+Enter, are reported with their modifiers; every other key is sent as before.
REPORT_MODIFIED_KEYS = escape.set_modify_other_keys(1)
RESET_MODIFIED_KEYS = escape.set_modify_other_keys(None)
# The mouse as a chat needs it: presses and the wheel (1000), in SGR form (1006), but not the
# motion of a held button (1002), so that a terminal that lets a drag select text while the
# program listens to clicks can do so.
MOUSE_ON = escape.PrivateMode.MOUSE_REPORTING.enable_seq + escape.PrivateMode.MOUSE_SGR_MODE.enable_seq
MOUSE_OFF = escape.PrivateMode.MOUSE_SGR_MODE.disable_seq + escape.PrivateMode.MOUSE_REPORTING.disable_seq


class ChatTerminal(urwid.display.raw.Screen):
    """urwid's raw screen, with the terminal set the way a chat needs it.

    - Ctrl+C must reach the app as a key (the actors decide whether it cancels the running job
      or leaves), so it stops being the terminal's interrupt character.
    - Enter and Ctrl+J must differ. Both arrive as a line feed while the terminal translates CR
      to LF on input (ICRNL), and urwid reads both CR and LF as "enter"; so ICRNL goes off and
      a line feed, which only Ctrl+J now sends, is handed to urwid as the kitty report of Ctrl+J.
    - Ctrl+S / Ctrl+Q must not freeze the screen, so output flow control (IXON) goes off.
    - Shift+Enter is asked for through modifyOtherKeys, which terminals that lack it ignore.
    - Bracketed paste is turned on without asking the terminal first (urwid would wait for an
      answer to a mode query that tmux 3.3 never gives), and a paste — marked, or keys that came
      together with a newline inside (ui.paste) — reaches the layout as one `Paste` key.
    - Keys typed before the start (right after `iota` was launched, while it was loading) are
      read before urwid takes the terminal, which would flush them, and handed to it first.

    Ctrl+Z stays the suspend character. Every setting is undone by urwid's own stop, which puts
    back the terminal attributes it saved before this start.
    """

    def __init__(self, *args: object, typed_ahead: bytes | Callable[[], bytes] = b"", **kwargs: object) -> None:
        """`typed_ahead`: keys read before this screen existed, handed to urwid first — or the
        first frame's `take_over`, called as the screen starts (ui.first_frame)."""
        kwargs.setdefault("bracketed_paste_mode", True)
        super().__init__(*args, **kwargs)
        self._gatherer = InputGatherer()
        self._gather_alarm = None
        self._typed_ahead = b"" if callable(typed_ahead) else typed_ahead
        self._take_over = typed_ahead if callable(typed_ahead) else None

    def _start(self, *args: object, **kwargs: object) -> None:
        fd = self._input_fileno()
        took_over = self._take_over is not None
        if took_over:  # the first frame stops reading keys, and hands them over
            self._typed_ahead += self._take_over()
            self._take_over = None
        # urwid's start switches the terminal to cbreak mode the way `tty.setcbreak` does by
        # default, flushing what was typed and not yet read: the keys typed since `iota` was
        # launched. They are read first, and handed to urwid once it reads keys (hook_event_loop).
        late = take_typed_ahead(fd) if fd is not None and os.isatty(fd) else b""
        if took_over:
            # Typed after the first frame gave the terminal back its own modes, whose ICRNL turns
            # Enter into a line feed (which urwid reads as Ctrl+J, a new line): an Enter there
            # sends, as it did on the first frame a moment before.
            late = late.replace(b"\n", b"\r")
        self._typed_ahead += late
        super()._start(*args, **kwargs)
        if fd is not None and os.isatty(fd):
            attributes = termios.tcgetattr(fd)
            attributes[0] &= ~(termios.ICRNL | termios.IXON)
            attributes[6][termios.VINTR] = bytes([os.fpathconf(fd, "PC_VDISABLE")])
            termios.tcsetattr(fd, termios.TCSANOW, attributes)
        self.write(REPORT_MODIFIED_KEYS)
        self.flush()

    def _stop(self) -> None:
        self.write(RESET_MODIFIED_KEYS)
        super()._stop()

    def hook_event_loop(self, event_loop, callback) -> None:
        """urwid's own, then the keys typed before the start, as if they had just been read."""
        super().hook_event_loop(event_loop, callback)
        typed, self._typed_ahead = self._typed_ahead, b""
        if typed:
            event_loop.alarm(0, lambda: self._deliver_typed_ahead(event_loop, callback, typed))

    def _deliver_typed_ahead(self, event_loop, callback, typed: bytes) -> None:
        """The keys typed before urwid read any, as they were typed: every Enter sends, and only a
        marked paste is a paste. Keys read live that come together with a line break inside are
        taken for an unmarked paste (ui.paste); typed ahead, they come together only because
        nobody read them yet, and the first frame already told a paste from typing."""
        for kind, piece in marked_pieces(typed):
            if kind == "paste":
                callback([Paste(piece)], [])
            else:
                super().parse_input(event_loop, callback, self._keys(piece))

    def _mouse_tracking(self, enable: bool) -> None:
        """urwid's own, with the modes above instead of urwid's (which add 1002)."""
        if enable and self.modes.mouse_reporting is False:
            self._mouse_tracking_enabled = False
            return
        self.write(MOUSE_ON if enable else MOUSE_OFF)
        self._mouse_tracking_enabled = enable

    def parse_input(self, event_loop, callback, codes, wait_for_more=True):
        """Keys as urwid parses them, but a paste as one `Paste` key (see ui.paste). urwid's own
        second call, for the rest of an escape sequence that never came, is passed straight on."""
        if event_loop is None or callback is None or not wait_for_more or any(code > 0xFF for code in codes):
            return super().parse_input(event_loop, callback, self._keys(codes), wait_for_more)
        if self._gather_alarm is not None:
            event_loop.remove_alarm(self._gather_alarm)
            self._gather_alarm = None
        wait = self._gatherer.feed(bytes(codes))
        if wait is not None:
            self._gather_alarm = event_loop.alarm(wait, lambda: self._deliver(event_loop, callback))
            return None
        self._deliver(event_loop, callback)
        return None

    def _deliver(self, event_loop, callback) -> None:
        self._gather_alarm = None
        keys_passed = False
        for kind, piece in self._gatherer.take():
            if kind == "paste":
                callback([Paste(piece)], [])
            else:
                super().parse_input(event_loop, callback, self._keys(piece))
                keys_passed = True
        if not keys_passed:  # urwid's parse also reports a resize (after Ctrl+Z and fg, say)
            super().parse_input(event_loop, callback, [])

    @staticmethod
    def _keys(codes) -> list[int]:
        """A line feed, which only Ctrl+J sends now, as the kitty report of Ctrl+J."""
        keys = []
        for code in codes:
            keys.extend(CTRL_J_REPORT if code == LINE_FEED else (code,))
        return keys


class ChatApp:
    """The chat's face. Construct it, then `await run(events, inputs)` inside a trio run.

    `home` is the directory the card writes as `~` (default: $HOME); `no_color` defaults to
    whether NO_COLOR is set; `screen` is the urwid screen to draw on (default: the terminal on
    stdin/stdout — tests pass one on a pseudo-terminal); `typed_ahead`, keys read from that
    terminal before (by ui.first_frame), which reach the composer first.
    """

    def __init__(self, *, home: str | None = None, no_color: bool | None = None,
                 screen: urwid.display.raw.Screen | None = None,
                 typed_ahead: bytes | Callable[[], bytes] = b""):
        self._no_color = theme.no_color_requested(os.environ) if no_color is None else no_color
        self._screen = screen
        self._typed_ahead = typed_ahead
        # (where to, message): None means the `inputs` channel `run` is given.
        self._outbox_send, self._outbox_receive = trio.open_memory_channel[
            tuple[trio.MemorySendChannel | None, object]](math.inf)
        self._status_changed = trio.Event()
        self._main_loop: urwid.MainLoop | None = None   # while `run` runs
        self.layout = ChatLayout(home=os.environ.get("HOME") if home is None else home,
                                 clock=trio.current_time, on_input=self._send_input,
                                 on_answer=self._send_answer)
        self._card: Card | None = None  # the last card shown: which conversation this is

    @property
    def shown(self) -> bool:
        """Whether the app's screen came up (urwid took the terminal over, and gave it back)."""
        return self._main_loop is not None

    def _send_input(self, message: object) -> None:
        self._outbox_send.send_nowait((None, message))

    def _send_answer(self, prompt: Choose | Ask, answer: object) -> None:
        self._outbox_send.send_nowait((prompt.reply, answer))

    async def run(self, events: trio.MemoryReceiveChannel, inputs: trio.MemorySendChannel,
                  task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Draw `events` and send what the person does to `inputs` (or to a Choose's `reply`),
        until `events` is closed or the caller's scope is cancelled. `inputs` is left open.
        Started (for `nursery.start`) once the screen is up and its input is being read."""
        event_loop = urwid.TrioEventLoop()
        main_loop = FramedLoop(self.layout, theme.palette(no_color=self._no_color),
                               screen=self._screen or ChatTerminal(typed_ahead=self._typed_ahead),
                               event_loop=event_loop, handle_mouse=True)
        with main_loop.start():
            self._main_loop = main_loop
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._drive_urwid, event_loop, nursery.cancel_scope)
                nursery.start_soon(self._deliver, inputs)
                nursery.start_soon(self._tick_status)
                task_status.started()
                await self._pump(events, nursery)
                nursery.cancel_scope.cancel()

    async def _drive_urwid(self, event_loop: urwid.TrioEventLoop, cancel_scope: trio.CancelScope) -> None:
        await event_loop.run_async()
        cancel_scope.cancel()  # urwid stopped of its own accord: there is no screen to serve

    async def _pump(self, events: trio.MemoryReceiveChannel, nursery: trio.Nursery) -> None:
        framer = Framer(self.layout.apply, self._main_loop)
        nursery.start_soon(framer.run)
        async for event in arrivals(events):
            if isinstance(event, TextDelta):
                framer.hold(event)
                continue
            framer.flush()
            if isinstance(event, RunInTerminal):
                await self._hand_over(event)
                continue
            if isinstance(event, SessionSaved):  # nothing to draw: the farewell names the session
                if self._card is not None:
                    self._card = dataclasses.replace(self._card, session=f"session {event.session_id}")
                continue
            self.layout.apply(event)
            if isinstance(event, Status):
                self._status_changed.set()
                self._status_changed = trio.Event()
            elif isinstance(event, Hint):
                nursery.start_soon(self._clear_hint, event)
            elif isinstance(event, Card) and event.mode:
                self._card = event
        framer.flush()  # the last screen (see `farewell`) shows the whole reply

    async def _clear_hint(self, hint: Hint) -> None:
        await trio.sleep(hint.seconds)
        self.layout.status_row.clear_hint(hint.text)

    def farewell(self) -> str:
        """What to leave in the terminal once the app's screen is gone: the last screen of the
        conversation (as plain text) and how to continue it. "" when no chat was shown."""
        card = self._card
        if card is None:
            return ""
        rows = [row.rstrip() for row in self.layout.last_transcript_rows()]
        while rows and not rows[0]:
            rows.pop(0)
        while rows and not rows[-1]:
            rows.pop()
        if card.mode == "bot":
            how = f"Continue with: iota run {card.agent}"
        elif card.session.startswith(("session ", "resumed ")):
            how = f"Continue with: iota resume {card.session.split()[-1]}"
        else:
            how = "This chat was not saved."
        return "\n".join([*rows, "", how]) + "\n"

    async def _hand_over(self, event: RunInTerminal) -> None:
        """Give the terminal to `event`'s program until it exits, then draw everything again.
        urwid's `paused()` stops the screen (the terminal's own modes back, keys no longer read),
        and the events that arrive meanwhile wait in the channel. Ctrl+C belongs to the program
        while it runs: the signal the terminal sends the whole foreground group is not the chat's."""
        previous = signal.signal(signal.SIGINT, _ignore_signal)  # not SIG_IGN: the program would inherit that
        try:
            with self._main_loop.paused():
                try:
                    # Under the reaper, so that the program dies with iota (a `kill -9` of it
                    # would leave an editor fighting the shell for the terminal); it is spawned
                    # through the reaper, so whether the program can run is asked first.
                    raise_unless_runnable(event.argv[0], os.environ.get("PATH", os.defpath), os.getcwd())
                    argv = reaper_argv(list(event.argv), foreground=True)
                    process = await trio.run_process(argv, check=False, stdin=None)
                    outcome: int | str = process.returncode
                except OSError as error:
                    outcome = error.strerror or str(error)
        finally:
            signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)
        with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            event.reply.send_nowait(outcome)

    async def _deliver(self, inputs: trio.MemorySendChannel) -> None:
        async for destination, message in self._outbox_receive:
            # A receiver that has gone (the chat is ending, or the job that asked was cancelled)
            # needs nothing more from this face.
            with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await (destination or inputs).send(message)

    async def _tick_status(self) -> None:
        """Redraw the status row's timer on each whole second of it while it shows one."""
        status_row = self.layout.status_row
        while True:
            changed = self._status_changed
            started = status_row.timer_started
            if started is None:
                await changed.wait()
                continue
            with trio.move_on_after(1 - (trio.current_time() - started) % 1):
                await changed.wait()
            status_row.refresh()


def _ignore_signal(signum: int, frame: object) -> None:
    """A handler that does nothing: unlike SIG_IGN, a program started meanwhile gets the default."""
