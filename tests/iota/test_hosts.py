"""Detection, the host lines, and the exact requests, commands and bytes each host is sent."""

from __future__ import annotations

import json
import os
import pty
import select
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iota import hosts
from iota.hosts import CmuxSurface, Dialect, HerdrPane, Host, State, Terminal

REPO = Path(__file__).resolve().parents[2]
HERDR_ENV = {"HERDR_ENV": "1", "HERDR_PANE_ID": "w1:t2:p3", "HERDR_SOCKET_PATH": "/run/herdr.sock"}
PLAIN = Terminal()
TMUX = Terminal(tmux=True)
KITTY = Terminal(Dialect.OSC99)


@pytest.fixture
def cmux_on_path(tmp_path):
    directory = tmp_path / "bin"
    directory.mkdir()
    executable = directory / "cmux"
    executable.write_text("#!/bin/sh\n")
    executable.chmod(0o755)
    return str(directory), str(executable)


# ---- detection -------------------------------------------------------------------------------


def test_herdr_needs_all_three_variables():
    host = hosts.detect({**HERDR_ENV, "HERDR_WORKSPACE_ID": "w1", "HERDR_TAB_ID": "w1:t2"})
    assert host.name == "herdr"
    assert host.herdr == HerdrPane("w1:t2:p3", "/run/herdr.sock", "w1", "w1:t2")
    for missing in HERDR_ENV:
        assert hosts.detect({k: v for k, v in HERDR_ENV.items() if k != missing}).name is None
    assert hosts.detect({**HERDR_ENV, "HERDR_ENV": "0"}).name is None
    assert hosts.detect({**HERDR_ENV, "HERDR_PANE_ID": ""}).name is None


def test_herdr_wins_over_a_stale_cmux_surface(cmux_on_path):
    path, _ = cmux_on_path
    host = hosts.detect({**HERDR_ENV, "CMUX_SURFACE_ID": "stale", "PATH": path})
    assert host.name == "herdr"
    assert host.cmux is None


def test_cmux_needs_its_surface_and_its_cli(cmux_on_path):
    path, executable = cmux_on_path
    host = hosts.detect({"CMUX_SURFACE_ID": "s-42", "PATH": path})
    assert host.name == "cmux"
    assert host.cmux == CmuxSurface("s-42", executable)
    assert hosts.detect({"CMUX_SURFACE_ID": "s-42", "PATH": "/nonexistent"}).name is None
    assert hosts.detect({"PATH": path}).name is None


def test_the_terminal_is_always_there_with_its_dialect():
    assert hosts.detect({}) == Host(terminal=PLAIN)
    assert hosts.detect({"TERM": "xterm-kitty"}).terminal == KITTY
    assert hosts.detect({"KITTY_WINDOW_ID": "3"}).terminal == KITTY
    assert hosts.detect({"TMUX": "/tmp/tmux-1/default,1,0"}).terminal == TMUX
    assert hosts.detect({"KITTY_WINDOW_ID": "3", "TMUX": "x"}).terminal == Terminal(Dialect.OSC99, tmux=True)
    # herdr's own emulator reads OSC 9, whatever window herdr itself was started from.
    assert hosts.detect({**HERDR_ENV, "KITTY_WINDOW_ID": "3"}).terminal == PLAIN


def test_osc_777_where_the_terminal_reads_only_that():
    vte = Terminal(Dialect.OSC777)
    assert hosts.detect({"VTE_VERSION": "7600", "TERM": "xterm-256color"}).terminal == vte
    assert hosts.detect({"TERM": "foot"}).terminal == vte
    assert hosts.detect({"TERM": "foot-extra"}).terminal == vte
    assert hosts.detect({"TERM": "rxvt-unicode-256color"}).terminal == vte
    # VTE_VERSION is inherited into tmux, whose TERM says nothing of the terminal outside it.
    assert hosts.detect({"VTE_VERSION": "7600", "TERM": "tmux-256color", "TMUX": "x"}).terminal == Terminal(
        Dialect.OSC777, tmux=True)
    # Terminals that read OSC 9 as well say who they are; kitty wins for kitty; hosts read OSC 9.
    assert hosts.detect({"TERM": "foot", "TERM_PROGRAM": "WezTerm"}).terminal == PLAIN
    assert hosts.detect({"VTE_VERSION": "7600", "TERM_PROGRAM": "ghostty"}).terminal == PLAIN
    assert hosts.detect({"VTE_VERSION": "7600", "KITTY_WINDOW_ID": "3"}).terminal == KITTY
    assert hosts.detect({**HERDR_ENV, "VTE_VERSION": "7600"}).terminal == PLAIN


def test_osc_777_bytes_carry_a_title_and_a_body():
    vte = Terminal(Dialect.OSC777)
    assert hosts.attention("iota: the tests pass", vte) == b"\x1b]777;notify;iota;the tests pass\x07\x07"
    assert hosts.attention("bot coder: compaction failing — 529; try later", vte) == (
        "\x1b]777;notify;bot coder;compaction failing — 529; try later\x07\x07".encode())
    assert hosts.attention("no title here", vte) == b"\x1b]777;notify;iota;no title here\x07\x07"
    # Nothing in the text can end the sequence early or add a field to the title.
    assert hosts.attention("a;b: x\x07\x1b]9;evil", vte) == b"\x1b]777;notify;a,b;x]9;evil\x07\x07"
    assert hosts.attention("iota: done", Terminal(Dialect.OSC777, tmux=True)) == (
        b"\x1bPtmux;\x1b\x1b]777;notify;iota;done\x07\x1b\\\x07")


def test_host_lines():
    assert hosts.host_lines(hosts.detect(HERDR_ENV)) == ["host: herdr", "herdr pane: w1:t2:p3"]
    assert hosts.host_lines(hosts.detect({**HERDR_ENV, "HERDR_WORKSPACE_ID": "w1", "HERDR_TAB_ID": "w1:t2"})) == [
        "host: herdr", "herdr pane: w1:t2:p3", "herdr workspace: w1", "herdr tab: w1:t2"]
    assert hosts.host_lines(Host(cmux=CmuxSurface("s-42", "/bin/cmux"))) == ["host: cmux", "cmux surface: s-42"]
    assert hosts.host_lines(Host()) == []


# ---- herdr -----------------------------------------------------------------------------------

PANE = HerdrPane("p3", "/run/herdr.sock")


def test_herdr_requests():
    assert [hosts.herdr_lifecycle(s) for s in State] == ["idle", "working", "working", "blocked", "idle"]
    assert json.loads(hosts.herdr_line(hosts.herdr_state_report(PANE, State.NEEDS_INPUT, seq=7))) == {
        "id": "iota:7", "method": "pane.report_agent",
        "params": {"pane_id": "p3", "source": "iota", "agent": "iota", "state": "blocked", "seq": 7}}
    assert hosts.herdr_session_report(PANE, "abc", "/home/u/.iota/sessions/abc", seq=8)["params"] == {
        "pane_id": "p3", "source": "iota", "agent": "iota", "agent_session_id": "abc",
        "agent_session_path": "/home/u/.iota/sessions/abc", "seq": 8}
    assert hosts.herdr_release(PANE, seq=9) == {
        "id": "iota:9", "method": "pane.release_agent",
        "params": {"pane_id": "p3", "source": "iota", "agent": "iota", "seq": 9}}
    line = hosts.herdr_line(hosts.herdr_release(PANE, seq=9))
    assert line.endswith(b"\n") and line.count(b"\n") == 1


def test_herdr_replies():
    assert hosts.herdr_reply_error(b'{"id": "iota:1", "result": {}}') is None
    assert hosts.herdr_reply_error(b'{"id": "iota:1", "error": {"code": "x", "message": "no pane"}}') == "x: no pane"
    assert "not a JSON reply" in hosts.herdr_reply_error(b"")
    assert "neither" in hosts.herdr_reply_error(b"{}")


# ---- cmux ------------------------------------------------------------------------------------


def test_cmux_commands():
    assert hosts.cmux_commands(State.BUSY) == [
        ["set-status", "iota", "Running", "--icon", "bolt.fill", "--color", "#4C8DFF"],
        ["workspace", "loading", "on", "--id", "iota"]]
    assert hosts.cmux_commands(State.NEEDS_INPUT) == [
        ["workspace", "loading", "off", "--id", "iota"],
        ["set-status", "iota", "Needs input", "--icon", "bell.fill"]]
    assert hosts.cmux_commands(State.ERROR) == [
        ["workspace", "loading", "off", "--id", "iota"],
        ["set-status", "iota", "Failed", "--icon", "exclamationmark.triangle.fill", "--color", "#FF3B30"]]
    assert hosts.cmux_commands(State.IDLE) == [
        ["workspace", "loading", "off", "--id", "iota"],
        ["set-status", "iota", "Idle", "--icon", "pause.circle.fill", "--color", "#8E8E93"]]
    assert hosts.cmux_exit_commands() == [["workspace", "loading", "off", "--id", "iota"], ["clear-status", "iota"]]


# ---- the terminal ----------------------------------------------------------------------------


def test_progress_bytes():
    assert hosts.progress(State.BUSY, PLAIN) == b"\x1b]9;4;3\x07"
    assert hosts.progress(State.NEEDS_INPUT, PLAIN) == b"\x1b]9;4;4;100\x07"
    assert hosts.progress(State.ERROR, PLAIN) == b"\x1b]9;4;2;100\x07"
    assert hosts.progress(State.IDLE, PLAIN) == b"\x1b]9;4;0\x07"
    assert hosts.progress(State.BUSY, KITTY) == b"\x1b]9;4;3\x07"   # the dialect is only for pings


def test_attention_bytes():
    assert hosts.attention("iota: approval needed", PLAIN) == b"\x1b]9;iota: approval needed\x07\x07"
    assert hosts.attention("done", KITTY) == b"\x1b]99;;done\x1b\\\x07"
    assert hosts.attention("café", PLAIN) == "\x1b]9;café\x07\x07".encode()


def test_tmux_wrapping_doubles_every_escape():
    assert hosts.progress(State.BUSY, TMUX) == b"\x1bPtmux;\x1b\x1b]9;4;3\x07\x1b\\"
    # The ringing BEL stays outside: tmux rings a plain BEL itself.
    assert hosts.attention("done", TMUX) == b"\x1bPtmux;\x1b\x1b]9;done\x07\x1b\\\x07"
    assert hosts.attention("done", Terminal(Dialect.OSC99, tmux=True)) == (
        b"\x1bPtmux;\x1b\x1b]99;;done\x1b\x1b\\\x1b\\\x07")


@pytest.mark.parametrize("text, clean", [
    ("plain", "plain"),
    ("two\nlines\r\nand\ttab", "two lines  and tab"),
    ("esc\x1b]9;4;3\x07aped", "esc]9;4;3aped"),
    ("st\x9cend", "stend"),
    ("nul\x00 del\x7f c1\x85", "nul del c1"),
    ("4; things to fix", " 4; things to fix"),
    ("9;x", " 9;x"),
    ("4 things; fine", "4 things; fine"),
    ("fix 4; now", "fix 4; now"),
    ("\x1b4;hidden", " 4;hidden"),   # checked after cleaning, so a dropped ESC hides nothing
    ("bot coder: compaction failing — 529 overloaded", "bot coder: compaction failing — 529 overloaded"),
])
def test_sanitize(text, clean):
    assert hosts.sanitize(text) == clean


def test_focus_sequences():
    assert hosts.FOCUS_REPORTING_ON == b"\x1b[?1004h"
    assert hosts.FOCUS_REPORTING_OFF == b"\x1b[?1004l"
    assert (hosts.FOCUS_IN, hosts.FOCUS_OUT) == (b"\x1b[I", b"\x1b[O")


# ---- through a real tmux ---------------------------------------------------------------------


def _tmux_at_least(major: int, minor: int) -> bool:
    tmux = shutil.which("tmux")
    if tmux is None:
        return False
    version = subprocess.run([tmux, "-V"], capture_output=True, text=True).stdout.split()[-1]
    digits = "".join(c for c in version if c.isdigit() or c == ".").split(".")
    return (int(digits[0]), int(digits[1] or 0)) >= (major, minor)


@pytest.mark.skipif(not _tmux_at_least(3, 3), reason="needs tmux ≥ 3.3 (allow-passthrough)")
def test_a_wrapped_sequence_passes_through_tmux(tmp_path):
    """A program in a tmux pane writes the wrapped sequences; the terminal tmux draws on (a pty
    we read) receives them unwrapped."""
    config = tmp_path / "tmux.conf"
    config.write_text("set -g allow-passthrough on\nset -g status off\n")
    inner = ("import os, time; from iota import hosts; t = hosts.Terminal(tmux=True); "
             "os.write(1, hosts.progress(hosts.State.BUSY, t) + hosts.attention('done', t)); time.sleep(30)")
    server = f"iota-test-{os.getpid()}"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "TERM": "xterm-256color",
           "PYTHONPATH": str(REPO), "TMUX_TMPDIR": str(tmp_path)}
    command = ["tmux", "-L", server, "-f", str(config), "new-session", "-x", "80", "-y", "24",
               shlex.join([sys.executable, "-c", inner])]
    leader, follower = pty.openpty()
    client = subprocess.Popen(command, stdin=follower, stdout=follower, stderr=follower, env=env,
                              start_new_session=True)
    os.close(follower)
    seen = b""
    try:
        deadline = time.monotonic() + 10
        while b"\x1b]9;done\x07" not in seen and time.monotonic() < deadline:
            if select.select([leader], [], [], 0.1)[0]:
                try:
                    seen += os.read(leader, 65536)
                except OSError:
                    break
    finally:
        subprocess.run(["tmux", "-L", server, "kill-server"], env=env, capture_output=True)
        client.kill()
        client.wait()
        os.close(leader)
    assert b"\x1b]9;4;3\x07" in seen
    assert b"\x1b]9;done\x07" in seen
    assert b"tmux;" not in seen


# ---- tmux ------------------------------------------------------------------------------------


def test_tmux_is_detected_from_its_own_variables_beside_any_other_host():
    tmux = {"TMUX": "/tmp/tmux-0/default,123,0", "TMUX_PANE": "%4"}
    assert hosts.detect(tmux).tmux == hosts.TmuxPane("%4", "/tmp/tmux-0/default")
    assert hosts.detect({**HERDR_ENV, **tmux}).tmux is not None
    assert hosts.detect({"TMUX": "/tmp/tmux-0/default,123,0"}).tmux is None   # no pane: not ours to name
    assert hosts.detect({"TMUX_PANE": "%4"}).tmux is None
    assert hosts.detect({**tmux, "TMUX": ""}).tmux is None


def test_the_pane_title_and_options_name_the_agent_and_its_state():
    pane = hosts.TmuxPane("%4", "/s")
    assert [hosts.pane_title("coder", s) for s in State] == [
        "ι coder · idle", "ι coder · working", "ι coder · compacting", "ι coder · waiting for you", "ι coder · failing"]
    # A title cannot end its own sequence early, whatever the agent is called.
    assert hosts.title_sequence("ι a\x07\x1b]2;b · idle") == "\x1b]2;ι a]2;b · idle\x07".encode()
    assert hosts.tmux_set_options(pane, "coder", State.NEEDS_INPUT) == [
        "tmux", "-S", "/s", "set-option", "-p", "-t", "%4", "@iota_agent", "coder", ";",
        "set-option", "-p", "-t", "%4", "@iota_state", "waiting for you"]
