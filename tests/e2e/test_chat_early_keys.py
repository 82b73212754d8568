"""The first moments of a chat, end to end in tmux against the fake model: a first frame drawn
before trio and urwid are even imported, and keys typed from the moment `iota` starts landing in
the composer (taking the terminal must not flush what is waiting in it)."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

from tests.e2e.conftest import IOTA, READY
from tests.support.terminal import terminal  # noqa: F401  (the fixture)

PANE = "=test:"
# Put first on PYTHONPATH, this makes `import urwid` wait until the file `release` exists: the
# chat is held where the first frame is all there is.
HOLD_URWID = """\
import os, sys, time


class HoldUrwid:
    def find_spec(self, name, path=None, target=None):
        while name == "urwid" and not os.path.exists({release!r}):
            time.sleep(0.01)
        return None


sys.meta_path.insert(0, HoldUrwid())
"""


def composer_holding(text: str) -> re.Pattern[str]:
    """The composer row holding `text`: its prompt right under the rule that closes the transcript."""
    return re.compile(rf"^─{{10,}}\n❯ ?{re.escape(text)}$", re.MULTILINE)


def held_at_the_first_frame(iota, terminal, tmp_path: Path, typed_first: str = ""):
    """`iota run chat` with urwid's import held (and `typed_first` typed at once); the release
    file, and the terminal once the first frame is up."""
    iota.write_config("  chat: {model: m}\n")
    hold, release = tmp_path / "hold", tmp_path / "release"
    hold.mkdir()
    (hold / "sitecustomize.py").write_text(HOLD_URWID.format(release=str(release)))
    screen = terminal.start([IOTA, "run", "chat"], cols=110, rows=32, env=iota.env(PYTHONPATH=str(hold)),
                            cwd=iota.cwd)
    screen.type(typed_first)
    screen.wait_for(composer_holding(typed_first))
    return release, screen


def iota_pid(screen) -> int:
    shell = screen._tmux("display-message", "-p", "-t", PANE, "#{pane_pid}").strip()
    return int(Path(f"/proc/{shell}/task/{shell}/children").read_text().split()[0])


def alternate_screen_on(screen) -> bool:
    return screen._tmux("display-message", "-p", "-t", PANE, "#{alternate_on}").strip() == "1"


def test_a_word_typed_before_the_first_screen_lands_in_the_composer(iota, terminal):
    iota.write_config("  chat: {model: m}\n")
    screen = terminal.start([IOTA, "run", "chat"], cols=110, rows=32, env=iota.env(), cwd=iota.cwd)
    screen.type("early")
    assert "╭" not in screen.capture(), "typed before urwid's screen (and its card's frame)"
    screen.wait_for(READY)
    screen.wait_for(composer_holding("early"))
    screen.type(" bird")  # and the composer goes on from there
    screen.wait_for(composer_holding("early bird"))
    screen.send_keys("C-u", "C-d")
    assert screen.wait_for_exit() == 0


def test_the_first_frame_comes_before_urwid_and_what_is_typed_on_it_is_kept(iota, terminal, tmp_path):
    # typed before the frame: read and shown in its composer (with urwid still not imported)
    release, screen = held_at_the_first_frame(iota, terminal, tmp_path, typed_first="typed")
    shown = screen.capture()
    assert "ι> iota  v" in shown and "starting…" in shown and alternate_screen_on(screen)
    screen.type(" on the frame")
    screen.wait_for(composer_holding("typed on the frame"))  # the terminal's own echo, in the composer
    release.touch()
    screen.wait_for(READY)
    screen.wait_for(composer_holding("typed on the frame"))
    screen.send_keys("C-u", "C-d")
    assert screen.wait_for_exit() == 0


def test_a_sigterm_on_the_first_frame_gives_the_terminal_back(iota, terminal, tmp_path):
    _, screen = held_at_the_first_frame(iota, terminal, tmp_path)
    os.kill(iota_pid(screen), signal.SIGTERM)
    assert screen.wait_for_exit() == 130  # as an interrupted run, not killed
    assert not alternate_screen_on(screen)
