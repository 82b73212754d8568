"""The notifier against fake hosts that speak the real protocols: a herdr socket, a `cmux`
executable on PATH, and a terminal writer that records every write."""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import pytest
import trio
import trio.testing
from trio_util import RepeatedEvent

from actors import notifier
from actors.notifier import host_reporting, open_host_link
from iota import hosts
from iota.hosts import HerdrPane, Host, PingKind, State
from tests.support.fake_hosts import FakeCmux, FakeHerdr, process_alive

PLAIN = hosts.Terminal()


@pytest.fixture
def socket_dir():
    # AF_UNIX paths are capped near 108 bytes, which a pytest tmp_path can pass.
    directory = Path(tempfile.mkdtemp(prefix="iota-", dir="/tmp"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
async def herdr(nursery, socket_dir):
    fake = FakeHerdr(socket_dir / "herdr.sock")
    await nursery.start(fake.serve)
    return fake


@pytest.fixture
def cmux(tmp_path):
    return FakeCmux(tmp_path / "bin")


@pytest.fixture
def debug_log(caplog):
    caplog.set_level(logging.DEBUG, logger="iota.hosts")
    return caplog


def herdr_host(fake: FakeHerdr) -> Host:
    return hosts.detect({"HERDR_ENV": "1", "HERDR_PANE_ID": "p1", "HERDR_SOCKET_PATH": str(fake.socket_path)})


def cmux_host(fake: FakeCmux) -> Host:
    return hosts.detect({"CMUX_SURFACE_ID": "s1", "PATH": str(fake.directory)})


class Screen:
    """A terminal writer that records each write; `stuck` writes never return."""

    def __init__(self, *, stuck: int = 0) -> None:
        self.writes: list[bytes] = []
        self.times: list[float] = []
        self._stuck = stuck
        self._written = RepeatedEvent()

    async def write(self, data: bytes) -> None:
        if self._stuck:
            self._stuck -= 1
            await trio.sleep_forever()
        self.writes.append(data)
        self.times.append(trio.current_time())
        self._written.set()

    async def wait_for(self, count: int) -> list[bytes]:
        while len(self.writes) < count:
            await self._written.wait()
        return self.writes


@asynccontextmanager
async def running(host: Host, *, notify: bool = True, screen: Screen | None = None):
    """The notifier for `host`, left by closing its link when the block ends."""
    link, receive = open_host_link()
    async with trio.open_nursery() as nursery:
        await nursery.start(partial(notifier.run, receive, host, notify=notify,
                                    write_terminal=screen.write if screen else None))
        yield link
        link.close()


def herdr_story(fake: FakeHerdr) -> list[str]:
    return [request.params.get("state", request.method) for request in fake.requests]


# ---- herdr -----------------------------------------------------------------------------------


async def test_herdr_hears_each_state_the_session_and_the_release(herdr):
    before = time.time_ns()
    async with running(herdr_host(herdr)) as link:
        for count, state in enumerate([State.IDLE, State.BUSY, State.NEEDS_INPUT, State.ERROR], 1):
            link.state(state)
            await herdr.wait_for(count)
        link.session("20261002-abc", Path("/home/u/.iota/sessions/20261002-abc"))
        await herdr.wait_for(5)
    assert herdr_story(herdr) == ["idle", "working", "blocked", "idle", "pane.report_agent_session",
                                  "pane.release_agent"]
    session = herdr.requests[4].params
    assert (session["agent_session_id"], session["agent_session_path"]) == (
        "20261002-abc", "/home/u/.iota/sessions/20261002-abc")
    seqs = [request.params["seq"] for request in herdr.requests]
    assert seqs[0] >= before
    assert all(later > earlier for earlier, later in zip(seqs, seqs[1:]))
    assert all(request.accepted for request in herdr.requests)
    assert {request.params["pane_id"] for request in herdr.requests} == {"p1"}


async def test_a_state_is_sent_only_when_it_changes(herdr):
    async with running(herdr_host(herdr)) as link:
        link.state(State.BUSY)
        await herdr.wait_for(1)
        link.state(State.BUSY)
        link.session("s", "/s")   # arrives after the repeat would have, had it been sent
        await herdr.wait_for(2)
        link.state(State.IDLE)
        link.state(State.IDLE)
    assert herdr_story(herdr) == ["working", "pane.report_agent_session", "idle", "pane.release_agent"]


async def test_a_hung_herdr_delays_neither_the_chat_nor_the_terminal(autojump_clock, herdr, debug_log):
    herdr.hang = True   # accepts, reads, never answers
    screen = Screen()
    async with running(herdr_host(herdr), screen=screen) as link:
        link.state(State.BUSY)
        first = (await herdr.wait_for(1))[0]
        posted = trio.current_time()
        link.state(State.IDLE)   # while herdr sits on the first request
        link.notify(PingKind.TURN_ENDED, "iota: done")
        assert trio.current_time() == posted   # posting never waits
        await screen.wait_for(4)
        assert screen.writes[-2:] == [hosts.progress(State.IDLE, PLAIN), hosts.attention("iota: done", PLAIN)]
        assert screen.times[-1] == posted   # the terminal was not held up
        second = (await herdr.wait_for(2))[1]
        assert second.at - first.at == pytest.approx(notifier.HERDR_SECONDS)   # given up at 0.5 s
        leaving = trio.current_time()
    assert trio.current_time() - leaving <= notifier.EXIT_SECONDS
    assert herdr_story(herdr) == ["working", "idle", "pane.release_agent"]
    assert "herdr pane.report_agent: no reply within 0.5 s" in debug_log.text


async def test_an_absent_herdr_is_a_debug_line(socket_dir, debug_log):
    screen = Screen()
    host = Host(herdr=HerdrPane("p1", str(socket_dir / "nobody.sock")))
    async with running(host, screen=screen) as link:
        link.state(State.BUSY)
        await screen.wait_for(2)   # focus reporting, then the progress
    assert "herdr: FileNotFoundError" in debug_log.text
    assert screen.writes[1:] == [hosts.progress(State.BUSY, PLAIN), hosts.progress(State.IDLE, PLAIN),
                                 hosts.FOCUS_REPORTING_OFF]


async def test_a_herdr_that_hangs_up_is_a_debug_line(herdr, debug_log):
    herdr.hang_up = True
    async with running(herdr_host(herdr)) as link:
        link.state(State.BUSY)
        await herdr.wait_for(1)
    assert herdr_story(herdr) == ["working", "pane.release_agent"]
    assert "herdr pane.report_agent: not a JSON reply" in debug_log.text


async def test_herdr_is_told_over_a_stale_cmux_surface(herdr, cmux):
    host = hosts.detect({"HERDR_ENV": "1", "HERDR_PANE_ID": "p1", "HERDR_SOCKET_PATH": str(herdr.socket_path),
                         "CMUX_SURFACE_ID": "stale", "PATH": str(cmux.directory)})
    async with running(host) as link:
        link.state(State.BUSY)
        await herdr.wait_for(1)
    assert herdr_story(herdr) == ["working", "pane.release_agent"]
    assert cmux.calls == []


async def test_a_cancelled_notifier_still_releases_the_pane(herdr):
    screen = Screen()
    link, receive = open_host_link()
    async with trio.open_nursery() as nursery:
        await nursery.start(partial(notifier.run, receive, herdr_host(herdr), notify=False,
                                    write_terminal=screen.write))
        link.state(State.BUSY)
        await herdr.wait_for(1)
        nursery.cancel_scope.cancel()
    assert herdr_story(herdr) == ["working", "pane.release_agent"]
    assert screen.writes[-1] == hosts.progress(State.IDLE, PLAIN)
    link.state(State.IDLE)   # the notifier has gone: dropped, no error


# ---- cmux ------------------------------------------------------------------------------------


async def test_cmux_runs_each_state_and_clears_at_exit(cmux):
    async with running(cmux_host(cmux)) as link:
        expected: list[list[str]] = []
        for state in [State.BUSY, State.NEEDS_INPUT, State.ERROR, State.IDLE]:
            link.state(state)
            expected += hosts.cmux_commands(state)
            await cmux.wait_for_calls(len(expected), ended=True)
    expected += hosts.cmux_exit_commands()
    assert [call.argv for call in cmux.calls] == expected
    assert ["set-status", "iota", "Needs input", "--icon", "bell.fill"] in expected   # one argument


async def test_a_hanging_cmux_is_killed_at_two_seconds(mock_clock, cmux, debug_log):
    cmux.hold()
    async with running(cmux_host(cmux)) as link:
        link.state(State.BUSY)
        [held] = await cmux.wait_for_calls(1)
        mock_clock.jump(notifier.CMUX_SECONDS - 0.1)
        await trio.testing.wait_all_tasks_blocked()
        assert process_alive(held.pid)
        mock_clock.jump(0.2)
        calls = await cmux.wait_for_calls(2)   # the next command starts once the first is gone
        assert not calls[0].ended and not process_alive(held.pid)
        cmux.release()
    assert [call.argv for call in cmux.calls] == hosts.cmux_commands(State.BUSY) + hosts.cmux_exit_commands()
    assert "cmux set-status iota Running --icon bolt.fill --color #4C8DFF: killed after 2 s" in debug_log.text


async def test_states_that_pile_up_behind_a_slow_cmux_collapse_to_the_newest(cmux):
    cmux.hold()
    async with running(cmux_host(cmux)) as link:
        link.state(State.BUSY)
        await cmux.wait_for_calls(1)
        link.state(State.NEEDS_INPUT)
        link.state(State.ERROR)
        link.state(State.IDLE)
        await trio.testing.wait_all_tasks_blocked()
        cmux.release()
        await cmux.wait_for_calls(4, ended=True)
    assert [call.argv for call in cmux.calls] == (
        hosts.cmux_commands(State.BUSY) + hosts.cmux_commands(State.IDLE) + hosts.cmux_exit_commands())


# ---- the terminal ----------------------------------------------------------------------------


async def test_the_terminal_gets_progress_for_each_state_and_a_reset_at_exit():
    screen = Screen()
    async with running(Host(), screen=screen) as link:
        await screen.wait_for(1)
        for count, state in enumerate([State.BUSY, State.NEEDS_INPUT, State.ERROR, State.IDLE], 2):
            link.state(state)
            await screen.wait_for(count)
    assert screen.writes == [b"\x1b[?1004h", b"\x1b]9;4;3\x07", b"\x1b]9;4;4;100\x07", b"\x1b]9;4;2;100\x07",
                             b"\x1b]9;4;0\x07", b"\x1b]9;4;0\x07", b"\x1b[?1004l"]


async def test_the_ping_waits_for_the_terminal_to_lose_focus():
    screen = Screen()
    async with running(Host(), screen=screen) as link:
        link.notify(PingKind.TURN_ENDED, "before any focus report")   # unknown counts as away
        await screen.wait_for(2)
        link.focus(True)
        link.notify(PingKind.TURN_ENDED, "iota: done")
        link.focus(False)
        link.notify(PingKind.NEEDS_INPUT, "iota wants to run\nls")
        await screen.wait_for(3)
    assert screen.writes == [hosts.FOCUS_REPORTING_ON, b"\x1b]9;before any focus report\x07\x07",
                             b"\x1b]9;iota wants to run ls\x07\x07", hosts.progress(State.IDLE, PLAIN),
                             hosts.FOCUS_REPORTING_OFF]


async def test_notify_false_silences_the_ping_but_not_the_progress():
    screen = Screen()
    async with running(Host(), notify=False, screen=screen) as link:
        link.state(State.NEEDS_INPUT)
        link.notify(PingKind.NEEDS_INPUT, "iota wants to edit a.txt")
        await screen.wait_for(1)
    assert screen.writes == [hosts.progress(State.NEEDS_INPUT, PLAIN), hosts.progress(State.IDLE, PLAIN)]


async def test_tmux_and_kitty_shape_the_bytes():
    screen = Screen()
    terminal = hosts.Terminal(hosts.Dialect.OSC99, tmux=True)
    async with running(Host(terminal=terminal), screen=screen) as link:
        link.state(State.BUSY)
        link.notify(PingKind.TURN_ENDED, "done")
        await screen.wait_for(3)
    assert screen.writes[1:3] == [b"\x1bPtmux;\x1b\x1b]9;4;3\x07\x1b\\",
                                  b"\x1bPtmux;\x1b\x1b]99;;done\x1b\x1b\\\x1b\\\x07"]


async def test_a_stuck_terminal_writer_is_given_up(autojump_clock, debug_log):
    screen = Screen(stuck=1)   # the first write (focus reporting) never returns
    async with running(Host(), screen=screen) as link:
        start = trio.current_time()
        link.state(State.BUSY)
        await screen.wait_for(1)
    assert screen.writes[0] == hosts.progress(State.BUSY, PLAIN)
    assert screen.times[0] - start == pytest.approx(notifier.TERMINAL_SECONDS)
    assert "terminal: a write took over 0.5 s; given up" in debug_log.text


async def test_the_compaction_alarm_is_a_ping_and_the_error_state(herdr):
    screen = Screen()
    async with running(herdr_host(herdr), screen=screen) as link:
        link.state(State.IDLE)
        await herdr.wait_for(1)
        link.notify(PingKind.COMPACTION_ALARM, "bot coder: compaction failing — 529 overloaded")
        await screen.wait_for(4)
        await herdr.wait_for(3)
    assert screen.writes[2:4] == [hosts.progress(State.ERROR, PLAIN),
                                  b"\x1b]9;bot coder: compaction failing \xe2\x80\x94 529 overloaded\x07\x07"]
    assert herdr_story(herdr) == ["idle", "idle", "notification.show", "pane.release_agent"]
    alarm = herdr.requests[2]
    assert alarm.params == {"title": "bot coder", "body": "compaction failing — 529 overloaded", "sound": "request"}
    assert alarm.accepted


# ---- headless --------------------------------------------------------------------------------


async def test_a_headless_run_reports_working_then_idle_then_releases(herdr):
    async with host_reporting(herdr_host(herdr)):
        await herdr.wait_for(1)
    assert herdr_story(herdr) == ["working", "idle", "pane.release_agent"]


def test_a_headless_run_in_a_trio_run_of_its_own(socket_dir):
    herdr = FakeHerdr(socket_dir / "herdr.sock")

    async def headless() -> None:
        async with host_reporting(herdr_host(herdr)):
            while not herdr.requests:   # served from another thread: poll
                await trio.sleep(0.001)

    with herdr.serving_in_thread():
        trio.run(headless)
    assert herdr_story(herdr) == ["working", "idle", "pane.release_agent"]
