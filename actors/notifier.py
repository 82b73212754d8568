"""The notifier: tells the host what the chat is doing, off the chat loop.

    chat ── HostLink.state / notify / session / focus ──► (unbounded channel) ──► notifier
    notifier ──► herdr outlet     JSON lines on the pane's socket, each exchange ≤ 0.5 s
             ──► cmux outlet      `cmux …` commands, each ≤ 2 s, killed past that
             ──► terminal outlet  OSC 9;4 progress and the attention ping, each write bounded
             ──► tmux outlet      the pane's title (OSC 2) and its @iota_* options, ≤ 2 s each
             ──► extra outlets    the caller's: a bot's state.json (actors/state_file.py)

    link, receive = open_host_link()
    await nursery.start(partial(notifier.run, receive, host, notify=agent.notify,
                                write_terminal=write_to_tty))
    link.state(State.IDLE)                           # the chat is ready: herdr hears at once
    link.notify(PingKind.COMPACTION_ALARM, f"bot {name}: compaction failing — {error}")
    link.close()                                     # or cancel the actor: either way it leaves

The chat never waits on a host. `HostLink` only does `send_nowait` on an unbounded channel, and
the notifier's own loop never awaits either: it deduplicates states (one is sent only when it
changes, the first always) and drops each message into the outlets' mailboxes. Each outlet has a
task of its own that empties its mailbox, so a hung herdr socket does not hold up the terminal's
progress, nor a wedged `cmux` the herdr report.

A mailbox keeps the newest item per slot. While a slow host is busy with one state, the states
posted meanwhile replace each other, and only the newest is sent after it: a stale `Running`
never lands after `Idle`. The slots come out in the order they were last posted, so a session
report and a state keep their order, and the goodbye (herdr's release, cmux's clear, the
terminal's reset) comes last.

A slow, missing or broken host never changes the chat: each failure is one debug line on the
`iota.hosts` logger and nothing else.

Leaving — the channel closed, or the actor cancelled — posts each outlet's goodbye and sends what
is left, shielded from the cancellation and bounded by EXIT_SECONDS.
"""

from __future__ import annotations

import itertools
import logging
import math
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import trio
from trio_util import RepeatedEvent

from iota import hosts
from iota.hosts import Host, PingKind, State
from iota.sandbox.reaper import reaper_argv

logger = logging.getLogger("iota.hosts")

HERDR_SECONDS = 0.5      # one request on herdr's socket, connect to reply
CMUX_SECONDS = 2.0       # one `cmux` command, then it is killed
TMUX_SECONDS = 2.0       # one `tmux` command, then it is killed
TERMINAL_SECONDS = 0.5   # one write to the terminal
# Leaving: finishing what is being sent, then the goodbyes. A wedged host costs the exit at most
# this long, twice (once for the send in flight, once for the goodbye).
EXIT_SECONDS = 3.0
_REPLY_LIMIT = 64 * 1024

WriteTerminal = Callable[[bytes], Awaitable[object]]

# ---- the messages ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SetState:
    state: State


@dataclass(frozen=True)
class Ping:
    """Call the person back: an approval waits, a turn ended, the compaction alarm."""

    kind: PingKind
    text: str


@dataclass(frozen=True)
class ReportSession:
    """The session the chat writes into: at start, after /save, after a session switch."""

    session_id: str
    path: str   # the bundle directory


@dataclass(frozen=True)
class Focus:
    """The terminal reported focus in (`ESC [ I`) or out (`ESC [ O`)."""

    focused: bool


Message = SetState | Ping | ReportSession | Focus


class HostLink:
    """What the chat holds. Each method posts one message and returns at once; it never waits on
    a host. Once the notifier has gone, messages are dropped with a debug line."""

    def __init__(self, send: trio.MemorySendChannel):
        self._send = send

    def state(self, state: State) -> None:
        self._post(SetState(state))

    def notify(self, kind: PingKind, text: str) -> None:
        """Ping the person. The compaction alarm also puts the chat in the error state."""
        if kind is PingKind.COMPACTION_ALARM:
            self._post(SetState(State.ERROR))
        self._post(Ping(kind, text))

    def session(self, session_id: str, path: str | Path) -> None:
        self._post(ReportSession(session_id, str(path)))

    def focus(self, focused: bool) -> None:
        self._post(Focus(focused))

    def close(self) -> None:
        """No more messages: the notifier sends what it has, says goodbye and returns."""
        self._send.close()

    def _post(self, message: Message) -> None:
        try:
            self._send.send_nowait(message)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            logger.debug("notifier gone; dropped %r", message)


def open_host_link() -> tuple[HostLink, trio.MemoryReceiveChannel]:
    """The chat's link and the notifier's end of it. Unbounded, so posting never blocks; the
    notifier's loop never awaits a host, so the channel does not pile up."""
    send, receive = trio.open_memory_channel(math.inf)
    return HostLink(send), receive


# ---- the actor -------------------------------------------------------------------------------


async def run(receive: trio.MemoryReceiveChannel, host: Host, *, notify: bool,
              write_terminal: WriteTerminal | None, agent: str = "iota", extra: Sequence[Outlet] = (),
              task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """Tell `host` what the chat does until `receive` closes or this is cancelled, then leave.

    `notify` is the agent's `notify:`: false silences the attention ping (and focus reporting,
    which only serves it), never the progress. Without `write_terminal` (a headless run, whose
    stdout is the reply) the terminal is told nothing, and neither is tmux (the title is the
    terminal's). `agent` names the chat in the tmux pane; `extra` outlets hear every message too."""
    outlets: list[Outlet] = []
    if host.herdr is not None:
        outlets.append(_HerdrOutlet(host.herdr))
    if host.cmux is not None:
        outlets.append(_CmuxOutlet(host.cmux))
    if write_terminal is not None:
        outlets.append(_TerminalOutlet(host.terminal, write_terminal, notify=notify))
        if host.tmux is not None:
            outlets.append(_TmuxOutlet(host.tmux, write_terminal, agent))
    outlets.extend(extra)
    try:
        async with trio.open_nursery() as nursery:
            for outlet in outlets:
                nursery.start_soon(outlet.deliver)
            task_status.started()
            shown: State | None = None
            async for message in receive:
                if isinstance(message, SetState):
                    if message.state is shown:
                        continue
                    shown = message.state
                for outlet in outlets:
                    outlet.post(message)
            # The chat is done: each outlet finishes the item in flight, sends what waits, then
            # its goodbye, and its task returns.
            for outlet in outlets:
                outlet.finish()
            nursery.cancel_scope.deadline = trio.current_time() + EXIT_SECONDS
    finally:
        # Cancelled (or past the exit bound): whatever the deliveries left, goodbyes included.
        with trio.move_on_after(EXIT_SECONDS, shield=True):
            async with trio.open_nursery() as nursery:
                for outlet in outlets:
                    outlet.finish()
                    nursery.start_soon(outlet.flush)


@asynccontextmanager
async def host_reporting(host: Host) -> AsyncIterator[HostLink]:
    """For a headless `-m` run: the host shows working while the body runs, then idle, then the
    pane is released (herdr) or the row cleared (cmux). The terminal is told nothing: stdout
    carries the reply."""
    link, receive = open_host_link()
    async with trio.open_nursery() as nursery:
        await nursery.start(partial(run, receive, host, notify=False, write_terminal=None))
        link.state(State.BUSY)
        try:
            yield link
        finally:
            link.state(State.IDLE)
            link.close()


# ---- the outlets -----------------------------------------------------------------------------


class _Mailbox:
    """Newest-wins slots: posting to a slot replaces what waits there, and slots come out in the
    order they were last posted. Once closed and empty, `take` returns None."""

    def __init__(self) -> None:
        self._slots: dict[str, object] = {}
        self._posted = RepeatedEvent()
        self.closed = False

    def post(self, slot: str, item: object) -> None:
        self._slots.pop(slot, None)
        self._slots[slot] = item
        self._posted.set()

    def close(self) -> None:
        self.closed = True
        self._posted.set()

    def take_nowait(self) -> object | None:
        if not self._slots:
            return None
        return self._slots.pop(next(iter(self._slots)))

    async def take(self) -> object | None:
        while not self._slots and not self.closed:
            await self._posted.wait()
        return self.take_nowait()


class Outlet:
    """One host's side of the notifier: what it makes of each message, and how it sends an item.
    `_send` is bounded and never raises (but for cancellation): a failure is a debug line."""

    name = ""

    def __init__(self) -> None:
        self._mailbox = _Mailbox()

    def post(self, message: Message) -> None:
        raise NotImplementedError

    def _goodbye(self) -> list[tuple[str, object]]:
        """The (slot, item) pairs that leave the host as it was before iota."""
        raise NotImplementedError

    async def _send(self, item) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        if not self._mailbox.closed:
            for slot, item in self._goodbye():
                self._mailbox.post(slot, item)
            self._mailbox.close()

    async def deliver(self) -> None:
        """Send items as they come, until finished and empty."""
        while (item := await self._mailbox.take()) is not None:
            await self._guarded_send(item)

    async def flush(self) -> None:
        """Send what waits now, without waiting for more."""
        while (item := self._mailbox.take_nowait()) is not None:
            await self._guarded_send(item)

    async def _guarded_send(self, item) -> None:
        try:
            await self._send(item)
        except Exception as error:   # a host's failure must never reach the chat
            logger.debug("%s: %s: %s", self.name, type(error).__name__, error)


class _HerdrOutlet(Outlet):
    name = "herdr"

    def __init__(self, pane: hosts.HerdrPane) -> None:
        super().__init__()
        self._pane = pane
        # Numbered when sent, so that coalescing never skips a number backwards.
        self._seq = itertools.count(time.time_ns())

    def post(self, message: Message) -> None:
        if isinstance(message, SetState):
            self._mailbox.post("state", partial(hosts.herdr_state_report, self._pane, message.state))
        elif isinstance(message, ReportSession):
            self._mailbox.post("session", partial(hosts.herdr_session_report, self._pane,
                                                  message.session_id, message.path))
        elif isinstance(message, Ping) and message.kind is PingKind.COMPACTION_ALARM:
            self._mailbox.post("alarm", partial(hosts.herdr_notification, message.text))

    def _goodbye(self) -> list[tuple[str, object]]:
        return [("release", partial(hosts.herdr_release, self._pane))]

    async def _send(self, build: Callable[..., dict]) -> None:
        request = build(seq=next(self._seq))
        method = request["method"]
        with trio.move_on_after(HERDR_SECONDS) as bound:
            reply = await _exchange(self._pane.socket_path, hosts.herdr_line(request))
        if bound.cancelled_caught:
            logger.debug("herdr %s: no reply within %.1f s", method, HERDR_SECONDS)
        elif (error := hosts.herdr_reply_error(reply)) is not None:
            logger.debug("herdr %s: %s", method, error)


async def _exchange(socket_path: str, line: bytes) -> bytes:
    """One request line out, one reply line back, on a connection of its own."""
    stream = await trio.open_unix_socket(socket_path)
    async with stream:
        await stream.send_all(line)
        reply = b""
        while b"\n" not in reply and len(reply) < _REPLY_LIMIT:
            chunk = await stream.receive_some()
            if not chunk:
                break
            reply += chunk
    return reply.split(b"\n", 1)[0]


class _CmuxOutlet(Outlet):
    name = "cmux"

    def __init__(self, surface: hosts.CmuxSurface) -> None:
        super().__init__()
        self._executable = surface.executable

    def post(self, message: Message) -> None:
        if isinstance(message, SetState):
            self._mailbox.post("state", hosts.cmux_commands(message.state))

    def _goodbye(self) -> list[tuple[str, object]]:
        # In the state's slot: a state still waiting is not worth showing on the way out.
        return [("state", hosts.cmux_exit_commands())]

    async def _send(self, commands: list[list[str]]) -> None:
        for argv in commands:
            await self._run(argv)

    async def _run(self, argv: list[str]) -> None:
        await run_bounded([self._executable, *argv], CMUX_SECONDS)


async def run_bounded(argv: list[str], seconds: float) -> str | None:
    """Run a host's command, killed past `seconds`; its output, or None (and a debug line) when it
    failed or took too long."""
    with trio.move_on_after(seconds) as bound:
        # Under the reaper: a host command that hangs would otherwise outlive a killed iota.
        done = await trio.run_process(reaper_argv(argv), check=False, capture_stdout=True,
                                      stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL, deliver_cancel=_kill)
    if bound.cancelled_caught:
        logger.debug("%s: killed after %.0f s", " ".join(argv), seconds)
        return None
    if done.returncode != 0:
        logger.debug("%s: exit status %d", " ".join(argv), done.returncode)
        return None
    return done.stdout.decode("utf-8", "replace")


async def _kill(process: trio.Process) -> None:
    # SIGTERM to the reaper, which SIGKILLs the command at once: no grace period, since a wedged
    # status command has nothing to save. (A SIGKILL would end the reaper alone.)
    process.terminate()


class _TerminalOutlet(Outlet):
    name = "terminal"

    def __init__(self, terminal: hosts.Terminal, write: WriteTerminal, *, notify: bool) -> None:
        super().__init__()
        self._terminal = terminal
        self._write = write
        self._notify = notify
        # Until the terminal says otherwise the person may be elsewhere: a ping they did not need
        # costs less than an approval nobody sees (tmux, by default, reports no focus at all).
        self._focused = False
        if notify:
            self._mailbox.post("focus reporting", hosts.FOCUS_REPORTING_ON)

    def post(self, message: Message) -> None:
        if isinstance(message, SetState):
            self._mailbox.post("progress", hosts.progress(message.state, self._terminal))
        elif isinstance(message, Ping):
            if self._notify and not self._focused:
                self._mailbox.post("ping", hosts.attention(message.text, self._terminal))
        elif isinstance(message, Focus):
            self._focused = message.focused

    def _goodbye(self) -> list[tuple[str, object]]:
        goodbye: list[tuple[str, object]] = [("progress", hosts.progress(State.IDLE, self._terminal))]
        if self._notify:
            goodbye.append(("focus reporting", hosts.FOCUS_REPORTING_OFF))
        return goodbye

    async def _send(self, data: bytes) -> None:
        with trio.move_on_after(TERMINAL_SECONDS) as bound:
            await self._write(data)
        if bound.cancelled_caught:
            logger.debug("terminal: a write took over %.1f s; given up", TERMINAL_SECONDS)


class _TmuxOutlet(Outlet):
    """The pane's title (written to the terminal, which is tmux's pane) and its options (set
    through the tmux command line). The title the pane had before is read first and put back at
    exit, and the options are unset: the pane is left as iota found it."""

    name = "tmux"

    def __init__(self, pane: hosts.TmuxPane, write: WriteTerminal, agent: str) -> None:
        super().__init__()
        self._pane = pane
        self._write = write
        self._agent = agent
        self._previous_title: str | None = None
        self._mailbox.post("remember", self._remember_title)

    def post(self, message: Message) -> None:
        if isinstance(message, SetState):
            self._mailbox.post("state", partial(self._show, message.state))

    def _goodbye(self) -> list[tuple[str, object]]:
        return [("state", self._restore)]

    async def _send(self, action: Callable[[], Awaitable[None]]) -> None:
        await action()

    async def _remember_title(self) -> None:
        shown = await run_bounded(hosts.tmux_title_query(self._pane), TMUX_SECONDS)
        if shown is not None:
            self._previous_title = shown.rstrip("\n")

    async def _show(self, state: State) -> None:
        await self._write_bounded(hosts.title_sequence(hosts.pane_title(self._agent, state)))
        await run_bounded(hosts.tmux_set_options(self._pane, self._agent, state), TMUX_SECONDS)

    async def _restore(self) -> None:
        if self._previous_title is not None:
            await self._write_bounded(hosts.title_sequence(self._previous_title))
        await run_bounded(hosts.tmux_unset_options(self._pane), TMUX_SECONDS)

    async def _write_bounded(self, data: bytes) -> None:
        with trio.move_on_after(TERMINAL_SECONDS):
            await self._write(data)
